"""The compatibility graph of `envsolve graph`: versioned nodes and typed edges built from the
matrices (``requires``, ``supports``, ``bundles``, ``compiled-for``, ...), as a networkx graph,
and its DOT and JSON text. networkx is imported here only, so no other command pays for it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import networkx as nx

    from .data import Build
    from .provider import Provider

__all__ = ["edges", "neighbourhood", "node_id", "nodes", "to_dot", "to_json", "to_nx"]

Edge = tuple[str, str, str]  # (from, to, type)


def node_id(kind: str, *parts: str) -> str:
    """Stable node identifiers, e.g. ``build:torch==2.7.1+cu128`` or ``arch:sm_90``."""
    return f"{kind}:{' '.join(parts)}"


def nodes(p: Provider) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node with its attributes, in a deterministic order."""
    m = p.m
    for info in sorted(m.archs, key=lambda x: x.name):
        yield node_id("arch", info.name), {"kind": "arch", "vendor": info.vendor,
                                           "family": info.family, "source": info.source}
    for g in sorted(m.gpus, key=lambda g: g.name):
        yield node_id("gpu", g.name), {"kind": "gpu", "vendor": g.vendor, "source": g.source}
    for t in m.toolkits:
        yield node_id("cuda", t.version.raw), {"kind": "cuda", "driver_min": t.driver_min.raw,
                                               "source": t.source}
    for br in m.branches:
        yield node_id("driver", f"R{br.branch}"), {"kind": "driver", "cuda_max": br.cuda_max.raw,
                                                   "source": br.source}
    for c in m.cudnn:
        yield node_id("cudnn", f"{c.version.raw} cu{c.cuda_major}"), {"kind": "cudnn",
                                                                      "source": c.source}
    for r in m.rocm:
        yield node_id("rocm", r.version.raw), {"kind": "rocm", "source": r.source}
    for rel in sorted(m.releases, key=lambda r: (r.package, r.version)):
        yield node_id("release", f"{rel.package}=={rel.raw}"), {
            "kind": "release", "python": list(rel.python), "source": rel.source}
    for b in sorted(m.builds, key=lambda b: (b.package, b.version, b.variant)):
        yield _build_id(b), {"kind": "build", "variant": b.variant, "default": b.default,
                             "accelerator": b.accelerator, "source": b.source,
                             "confidence": b.confidence}

def edges(p: Provider) -> Iterator[Edge]:
    """Every typed edge, in a deterministic order."""
    m = p.m
    for g in sorted(m.gpus, key=lambda g: g.name):
        yield node_id("gpu", g.name), node_id("arch", g.arch), "is-arch"
    for t in m.toolkits:
        for a in t.archs:
            yield node_id("cuda", t.version.raw), node_id("arch", a), "supports"
        yield node_id("cuda", t.version.raw), node_id("driver", f"R{t.driver_min.major}"), "requires"
    for br in m.branches:
        for info in m.archs:
            if info.vendor == "nvidia" and info.family not in br.unsupported_families:
                yield node_id("driver", f"R{br.branch}"), node_id("arch", info.name), "supports"
    for c in m.cudnn:
        for a in c.archs:
            yield node_id("cudnn", f"{c.version.raw} cu{c.cuda_major}"), node_id("arch", a), "supports"
    for r in m.rocm:
        for a in r.gfx:
            yield node_id("rocm", r.version.raw), node_id("arch", a), "supports"
    for b in sorted(m.builds, key=lambda b: (b.package, b.version, b.variant)):
        bid = _build_id(b)
        yield bid, node_id("release", f"{b.package}=={b.raw}"), "build-of"
        for a in (*b.archs, *b.gfx):
            yield bid, node_id("arch", a), "compiled-for"
        for a in b.ptx:
            yield bid, node_id("arch", a), "ptx-for"
        if b.cuda is not None:
            ts = p.toolkits(b.cuda)
            if ts:
                yield bid, node_id("cuda", ts[0].version.raw), "requires"
        rocm = p.rocm_row(b.rocm) if b.rocm is not None else None
        if rocm is not None:
            yield bid, node_id("rocm", rocm.version.raw), "requires"
        if b.cudnn and b.cuda is not None:
            row = p.cudnn_row(b.cudnn, b.cuda.major)
            if row:
                yield bid, node_id("cudnn", f"{row.version.raw} cu{row.cuda_major}"), "bundles"
    for rel in sorted(m.releases, key=lambda r: (r.package, r.version)):
        for name, version in rel.companions:
            rid = node_id("release", f"{rel.package}=={rel.raw}")
            yield rid, node_id("package", f"{name}=={version}"), "pairs-with"

def to_nx(p: Provider) -> nx.MultiDiGraph:
    """The networkx graph of :func:`nodes` and :func:`edges` (the only place networkx is used)."""
    import networkx as nx

    g: nx.MultiDiGraph = nx.MultiDiGraph()
    g.add_nodes_from(nodes(p))
    for u, v, kind in edges(p):
        g.add_edge(u, v, key=kind, kind=kind)
    return g


def _build_id(b: Build) -> str:
    return node_id("build", f"{b.package}=={b.raw}+{b.variant}")



def neighbourhood(g: nx.MultiDiGraph, around: str, depth: int) -> nx.MultiDiGraph:
    """The nodes within ``depth`` hops (either direction) of every node naming ``around``."""
    needle = around.lower()
    seeds = [n for n in g.nodes if needle in n.lower()]
    keep: set[str] = set(seeds)
    frontier = set(seeds)
    for _ in range(max(depth, 0)):
        nxt: set[str] = set()
        for n in frontier:
            nxt.update(g.successors(n))
            nxt.update(g.predecessors(n))
        frontier = nxt - keep
        keep |= nxt
    return g.subgraph(keep).copy()


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_dot(g: nx.MultiDiGraph) -> str:
    """Graphviz text, nodes and edges sorted so the same graph gives the same bytes."""
    lines = ["digraph envsolve {", "  rankdir=LR;"]
    for n in sorted(g.nodes):
        lines.append(f"  {_q(n)} [kind={_q(str(g.nodes[n].get('kind', '')))}];")
    for u, v, k in sorted(g.edges(keys=True)):
        lines.append(f"  {_q(u)} -> {_q(v)} [label={_q(k)}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_json(g: nx.MultiDiGraph) -> str:
    """``{"nodes": [...], "edges": [...]}``, sorted."""
    nodes = [{"id": n, **g.nodes[n]} for n in sorted(g.nodes)]
    edges = [{"from": u, "to": v, "type": k} for u, v, k in sorted(g.edges(keys=True))]
    return json.dumps({"nodes": nodes, "edges": edges}, indent=1, sort_keys=True) + "\n"
