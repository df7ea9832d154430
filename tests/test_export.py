import json

from envsolve.export import edges as graph_edges
from envsolve.export import neighbourhood, to_dot, to_json, to_nx
from envsolve.provider import Provider


def test_typed_edges_connect_builds_archs_cuda_and_drivers(fixture_graph: Provider) -> None:
    edges = set(graph_edges(fixture_graph))
    assert ("build:torch==2.7.1+cu128", "arch:sm_120", "compiled-for") in edges
    assert ("build:torch==2.7.1+cu128", "arch:sm_120", "ptx-for") in edges
    assert ("build:torch==2.7.1+cu128", "cuda:12.8.0", "requires") in edges
    assert ("cuda:12.8.0", "arch:sm_120", "supports") in edges
    assert ("driver:R590", "arch:sm_60", "supports") not in edges  # R590 dropped Pascal
    assert ("driver:R570", "arch:sm_60", "supports") in edges
    assert ("gpu:RTX 5090", "arch:sm_120", "is-arch") in edges


def test_networkx_graph_and_exports_are_deterministic(fixture_graph: Provider) -> None:
    g = to_nx(fixture_graph)
    assert g.nodes["build:torch==2.7.1+cu126"]["default"] is True
    sub = neighbourhood(g, "RTX 5090", 1)
    assert set(sub.nodes) == {"gpu:RTX 5090", "arch:sm_120"}
    assert to_dot(sub) == to_dot(neighbourhood(g, "RTX 5090", 1))
    data = json.loads(to_json(sub))
    assert [n["id"] for n in data["nodes"]] == ["arch:sm_120", "gpu:RTX 5090"]


def test_gpu_lookup_by_nvidia_smi_name_and_near_misses(fixture_graph: Provider) -> None:
    assert fixture_graph.gpu("NVIDIA A100-SXM4-80GB").name == "A100"  # type: ignore[union-attr]
    assert fixture_graph.gpu("geforce rtx 4090").name == "RTX 4090"  # type: ignore[union-attr]
    assert fixture_graph.gpu("A1000") is None
    # the vendor's prefix on a row's own name, as NVIDIA's CUDA GPUs pages write it
    assert fixture_graph.gpu("NVIDIA H100").name == "H100"  # type: ignore[union-attr]
    assert fixture_graph.gpu("Tesla P100").name == "P100"  # type: ignore[union-attr]
    assert fixture_graph.gpu("NVIDIA Z100") is None
    assert fixture_graph.gpu_suggestions("A1000") == ["A100"]


def test_real_graph_exports(real_graph: Provider) -> None:
    g = to_nx(real_graph)
    assert g.number_of_nodes() > 500 and g.number_of_edges() > g.number_of_nodes()
    assert ("build:torch==2.7.1+cu128", "arch:sm_120") in {(u, v) for u, v in g.edges()}
