"""The smoke test's copy of the kernels rule (templates/smoke_test.py runs inside an image without
envsolve) says what envsolve.domain.kernels says, over every arch x GPU pair the data can produce
(NVIDIA's arch lists, and Intel's AOT target lists of the XPU builds)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import msgspec.structs
import pytest

from envsolve.data import Build
from envsolve.domain import kernels
from envsolve.provider import Provider
from envsolve.versions import Arch, parse_arch

TEMPLATE = Path(__file__).resolve().parent.parent / "templates" / "smoke_test.py"


def _smoke(expected: dict[str, Any]) -> ModuleType:
    """The smoke-test template as a module, with ``expected`` as the lock's facts."""
    text = TEMPLATE.read_text(encoding="utf-8").replace('"__ENVSOLVE_EXPECTED__"', repr(json.dumps(expected)), 1)
    module = ModuleType("smoke_test_template")
    exec(compile(text, str(TEMPLATE), "exec"), module.__dict__)
    return module


def _entries(provider: Provider) -> list[str]:
    """Every entry an arch list can hold for the data's builds: each SASS and PTX arch of every
    build, as SASS (``sm_``) and as PTX (``compute_``), plain and with each suffix (``a``, ``f``)."""
    archs = {parse_arch(a) for b in provider.m.builds for a in (*b.archs, *b.ptx)}
    return sorted(f"{kind}_{a.major}{a.minor}{suffix}" for a in archs if a.vendor == "nvidia"
                  for kind in ("sm", "compute") for suffix in ("", "a", "f"))


def _gpus(provider: Provider) -> list[Arch]:
    """Every NVIDIA GPU arch of matrices/gpus.toml."""
    return [parse_arch(a.name) for a in provider.m.archs if a.vendor == "nvidia"]


def _as_build(template: Build, entries: list[str]) -> Build:
    """A build whose arch list is ``entries`` (torch's form: ``sm_`` is SASS, ``compute_`` PTX)."""
    return msgspec.structs.replace(template, archs=tuple(e for e in entries if e.startswith("sm_")),
                               ptx=tuple(e for e in entries if e.startswith("compute_")), gfx=())


def test_every_arch_gpu_pair_gets_the_same_answer_from_both_copies(real_graph: Provider) -> None:
    smoke = _smoke({})
    template = real_graph.m.builds[0]
    entries, gpus = _entries(real_graph), _gpus(real_graph)
    assert {"sm_100a", "sm_120a", "compute_90a", "sm_90f"} <= set(entries) and len(gpus) >= 20
    differ = [(e, g.name) for e in entries for g in gpus
              if smoke._kernels([e], g.major, g.minor) != kernels(_as_build(template, [e]), g)]
    assert differ == []


def test_every_build_of_the_data_gets_the_same_answer_on_every_gpu(real_graph: Provider) -> None:
    smoke = _smoke({})
    lists = {(*b.archs, *(f"compute_{parse_arch(p).major}{parse_arch(p).minor}" for p in b.ptx))
             for b in real_graph.m.builds if b.archs or b.ptx}
    template = real_graph.m.builds[0]
    differ = [(e, g.name) for e in sorted(lists) for g in _gpus(real_graph)
              if smoke._kernels(list(e), g.major, g.minor) != kernels(_as_build(template, list(e)), g)]
    assert differ == []


def test_every_xpu_build_gets_the_same_answer_on_every_intel_gpu(real_graph: Provider) -> None:
    """The smoke test's copy of the Intel rule (an AOT target, else SPIR-V JIT) against domain.kernels,
    for each XPU build as published on each platform (Windows' AOT lists differ) and each Intel arch."""
    smoke = _smoke({})
    intel = [parse_arch(a.name) for a in real_graph.m.archs if a.vendor == "intel"]
    xpu = [real_graph.for_platform(b, p) for b in real_graph.m.builds if b.accelerator == "xpu"
           for p in ("linux/amd64", "windows/amd64") if real_graph.on_platform(b, p)]
    assert len(intel) >= 10 and any(b.xpu != xpu[0].xpu for b in xpu)
    differ = [(b.raw, b.xpu, g.name) for b in xpu for g in intel if smoke._xpu_kernels(list(b.xpu), g.name) != kernels(b, g)]
    assert differ == []


def _fake_torch(arch_list: list[str], capability: tuple[int, int]) -> SimpleNamespace:
    props = SimpleNamespace(name="NVIDIA GB300", total_memory=1 << 30)
    cuda = SimpleNamespace(is_available=lambda: True, get_arch_list=lambda: arch_list, device_count=lambda: 1,
                           get_device_properties=lambda i: props, get_device_capability=lambda i: capability)
    return SimpleNamespace(cuda=cuda, version=SimpleNamespace(cuda="12.8", hip=None),
                           backends=SimpleNamespace(cudnn=SimpleNamespace(is_available=lambda: False)))


@pytest.mark.parametrize(("arch_list", "capability", "served"), [
    (["sm_100a"], (10, 3), False),  # arch-specific SASS runs on exactly 10.0
    (["sm_100a"], (10, 0), True),
    (["sm_120a"], (12, 1), False),
    (["sm_100f"], (10, 3), True),  # family-specific SASS runs on the family
    (["compute_90a"], (10, 0), False),  # arch-specific PTX is never JIT-compiled for another GPU
    (["sm_90", "compute_90"], (12, 0), True),  # plain PTX is
])
def test_the_smoke_test_checks_a_gpu_against_the_arch_list_by_the_rule(
        arch_list: list[str], capability: tuple[int, int], served: bool) -> None:
    smoke = _smoke({"accelerator": "cuda", "cuda": "12.8", "packages": []})
    torch = _fake_torch(arch_list, capability)
    smoke._module = lambda name: torch if name == "torch" else None
    report = smoke.Report()
    smoke.torch_accelerator(report)
    check = next(i for i in report.items if i["check"] == "GPU 0 kernels")
    assert check["status"] == ("pass" if served else "fail"), check["detail"]
