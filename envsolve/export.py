"""Graph export: DOT and JSON text of the compatibility graph or a neighbourhood of it."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["neighbourhood", "to_dot", "to_json"]


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
