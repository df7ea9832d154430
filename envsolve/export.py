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

    from .data import Build, Cudnn, DriverBranch, Extension, Matrices, Release
    from .provider import Provider

__all__ = ["edges", "neighbourhood", "node_id", "nodes", "to_dot", "to_json", "to_nx"]

Edge = tuple[str, str, str]  # (from, to, type)


def node_id(kind: str, *parts: str) -> str:
    """Stable node identifiers, e.g. ``build:torch==2.7.1+cu128`` or ``arch:sm_90``."""
    return f"{kind}:{' '.join(parts)}"


def nodes(provider: Provider) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node with its attributes, in a deterministic order."""
    yield from _hardware_nodes(provider)
    yield from _library_nodes(provider)
    for rel in _releases(provider):
        yield _release_id(rel), {"kind": "release", "python": list(rel.python), "source": rel.source}
    for b in _builds(provider):
        yield _build_id(b), {"kind": "build", "variant": b.variant, "default": b.default,
                             "accelerator": b.accelerator, "source": b.source,
                             "confidence": b.confidence}
    for x in provider.m.extensions:
        yield _extension_id(x), {"kind": "extension", "newest": x.newest, "install": x.install, "torch": x.torch,
                                 "cuda": x.cuda, "source": x.source, "confidence": x.confidence}


def _hardware_nodes(provider: Provider) -> Iterator[tuple[str, dict[str, Any]]]:
    """Archs, GPU models, CUDA toolkits and driver branches."""
    m = provider.m
    for info in sorted(m.archs, key=lambda x: x.name):
        yield node_id("arch", info.name), {"kind": "arch", "vendor": info.vendor,
                                           "family": info.family, "source": info.source}
    for gpu in sorted(m.gpus, key=lambda gpu: gpu.name):
        yield node_id("gpu", gpu.name), {"kind": "gpu", "vendor": gpu.vendor, "source": gpu.source}
    for t in m.toolkits:
        yield node_id("cuda", t.version.raw), {"kind": "cuda", "driver_min": t.driver_min.raw,
                                               "source": t.source}
    for br in m.branches:
        yield node_id("driver", f"R{br.branch}"), {"kind": "driver", "cuda_max": br.cuda_max.raw,
                                                   "source": br.source}


def _library_nodes(provider: Provider) -> Iterator[tuple[str, dict[str, Any]]]:
    """cuDNN and ROCm releases."""
    for c in provider.m.cudnn:
        yield _cudnn_id(c), {"kind": "cudnn", "source": c.source}
    for r in provider.m.rocm:
        yield node_id("rocm", r.version.raw), {"kind": "rocm", "source": r.source}


def edges(provider: Provider) -> Iterator[Edge]:
    """Every typed edge, in a deterministic order."""
    yield from _hardware_edges(provider)
    yield from _library_edges(provider)
    for b in _builds(provider):
        yield from _build_edges(provider, b)
    for rel in _releases(provider):
        for name, version in rel.companions:
            yield _release_id(rel), node_id("package", f"{name}=={version}"), "pairs-with"
    for x in provider.m.extensions:
        yield from _extension_edges(provider, x)


def _extension_edges(provider: Provider, x: Extension) -> Iterator[Edge]:
    """An extension package's rows to the archs it has code for and the torch releases it works with."""
    xid = _extension_id(x)
    yield from ((xid, node_id("arch", a), "compiled-for") for a in x.archs)
    yield from ((xid, node_id("arch", a), "ptx-for") for a in x.ptx)
    if x.torch:
        from packaging.specifiers import SpecifierSet

        torch = SpecifierSet(x.torch)
        yield from ((xid, _release_id(r), "works-with") for r in provider.releases("torch")
                    if torch.contains(r.version, prereleases=True))


def _extension_id(x: Extension) -> str:
    return node_id("extension", f"{x.package}{x.versions}")


def _hardware_edges(provider: Provider) -> Iterator[Edge]:
    """GPUs to their arch; CUDA toolkits to the archs they target and the driver they need; driver
    branches to the NVIDIA archs they still support."""
    m = provider.m
    for gpu in sorted(m.gpus, key=lambda gpu: gpu.name):
        yield node_id("gpu", gpu.name), node_id("arch", gpu.arch), "is-arch"
    for t in m.toolkits:
        cuda = node_id("cuda", t.version.raw)
        yield from ((cuda, node_id("arch", a), "supports") for a in t.archs)
        yield cuda, node_id("driver", f"R{t.driver_min.major}"), "requires"
    for br in m.branches:
        yield from ((node_id("driver", f"R{br.branch}"), node_id("arch", a), "supports") for a in _supported(m, br))


def _supported(m: Matrices, branch: DriverBranch) -> list[str]:
    """The NVIDIA archs a driver branch still supports (those of the families it has not dropped)."""
    return [info.name for info in m.archs if info.vendor == "nvidia" and info.family not in branch.unsupported_families]


def _library_edges(provider: Provider) -> Iterator[Edge]:
    """cuDNN and ROCm releases to the archs they support."""
    for c in provider.m.cudnn:
        yield from ((_cudnn_id(c), node_id("arch", a), "supports") for a in c.archs)
    for r in provider.m.rocm:
        yield from ((node_id("rocm", r.version.raw), node_id("arch", a), "supports") for a in r.gfx)


def _build_edges(provider: Provider, b: Build) -> Iterator[Edge]:
    """A build to its release, the archs it carries SASS/code objects and PTX for, and the CUDA,
    ROCm and cuDNN rows it needs."""
    bid = _build_id(b)
    yield bid, node_id("release", f"{b.package}=={b.raw}"), "build-of"
    yield from ((bid, node_id("arch", a), "compiled-for") for a in (*b.archs, *b.gfx))
    yield from ((bid, node_id("arch", a), "ptx-for") for a in b.ptx)
    yield from ((bid, target, kind) for target, kind in _needs(provider, b))


def _needs(provider: Provider, b: Build) -> Iterator[tuple[str, str]]:
    """The CUDA toolkit, ROCm release and cuDNN row a build needs, those the data has."""
    if b.cuda is not None:
        yield from ((node_id("cuda", t.version.raw), "requires") for t in provider.toolkits(b.cuda)[:1])
    rocm = provider.rocm_row(b.rocm) if b.rocm is not None else None
    if rocm is not None:
        yield node_id("rocm", rocm.version.raw), "requires"
    cudnn = _bundled_cudnn(provider, b)
    if cudnn is not None:
        yield _cudnn_id(cudnn), "bundles"


def _bundled_cudnn(provider: Provider, b: Build) -> Cudnn | None:
    """The support-matrix row of the cuDNN a build bundles, when the data has it."""
    if not b.cudnn or b.cuda is None:
        return None
    return provider.cudnn_row(b.cudnn, b.cuda.major)


def _releases(provider: Provider) -> list[Release]:
    return sorted(provider.m.releases, key=lambda r: (r.package, r.version))


def _builds(provider: Provider) -> list[Build]:
    return sorted(provider.m.builds, key=lambda b: (b.package, b.version, b.variant))


def _release_id(rel: Release) -> str:
    return node_id("release", f"{rel.package}=={rel.raw}")


def _cudnn_id(c: Cudnn) -> str:
    return node_id("cudnn", f"{c.version.raw} cu{c.cuda_major}")


def to_nx(provider: Provider) -> nx.MultiDiGraph:
    """The networkx graph of :func:`nodes` and :func:`edges` (the only place networkx is used)."""
    import networkx as nx

    g: nx.MultiDiGraph = nx.MultiDiGraph()
    g.add_nodes_from(nodes(provider))
    for u, v, kind in edges(provider):
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
