"""``envsolve lock --host``: a spec's default target made from this host's facts (its GPUs, driver,
vendor, platform and, on a Jetson, its JetPack), keeping the ``[hardware]`` pins that fit."""

from __future__ import annotations

from typing import Literal

import msgspec
import msgspec.structs

from ..domain import APPLE_PLATFORM, JETSON_PLATFORM, AppleAccelerator, Platform, Vendor
from ..errors import SpecError
from ..provider import Provider
from ..spec import GpuReq, ProjectSpec, SectionParser, Target
from ..versions import Dotted, parse_driver
from .facts import GpuInfo, HostFacts, host_platform, model_of

__all__ = ["for_host"]

# the vendors whose GPUs a host can serve
_HOST_VENDOR: dict[str, Vendor] = {"nvidia": "nvidia", "amd": "amd", "intel": "intel", "apple": "apple"}
# the vendors whose GPUs are solved for without their names (every XPU build JIT-compiles SPIR-V for an
# Intel GPU; Apple silicon has one GPU stack): one the data lacks is left out, with a warning
_UNNAMED_OK = ("intel", "apple")


def for_host(spec: ProjectSpec, facts: HostFacts, provider: Provider) -> tuple[ProjectSpec, list[str]]:
    """``spec`` with its default target describing this host (GPUs, driver, vendor); a CUDA or
    ROCm pin of ``[hardware]`` is kept when it fits the host's vendor. A GPU the data does not
    know is taken by the architecture the tools reported (with a warning, returned beside the
    spec); one with neither is an error naming where it came from, with a "did you mean"."""
    gpus, warnings = _host_gpus(facts, provider)
    base = spec.targets[0]
    jetson = facts.platform == "jetson"
    if jetson and not gpus:  # a Jetson lists no GPU (no nvidia-smi): the spec's Jetson modules stand
        gpus = [g for g in base.gpus if provider.is_jetson(g.name)]
    vendor = _host_vendor(facts, gpus, jetson)
    jetpack, warning = _host_jetpack(facts, gpus, base, provider) if jetson and gpus else (None, "")
    platform, why = _host_platform(facts, gpus, jetson, base)
    cuda, rocm, rocm_driver = _kept_pins(base, vendor, jetson)
    accelerator = _kept_accelerator(base, platform, vendor)
    if accelerator == "cpu":  # the spec chose the Mac's CPU: its GPU is left out, as the spec's own target leaves it
        vendor, gpus = "cpu", []
    host = Target(name=base.name, vendor=vendor, gpus=tuple(gpus), driver=_host_driver(facts, vendor, jetson),
                  cuda=cuda, rocm=rocm, rocm_driver=rocm_driver, platform=platform, jetpack=jetpack,
                  wsl=facts.wsl, platform_why=why, accelerator=accelerator)
    return msgspec.structs.replace(spec, targets=(host, *spec.targets[1:])), warnings + ([warning] if warning else [])


def _host_gpus(facts: HostFacts, provider: Provider) -> tuple[list[GpuReq], list[str]]:
    """The host's GPUs (each once) and a warning for each taken by its architecture; a GPU known by
    neither is a :class:`SpecError` naming where it came from."""
    parser = SectionParser(facts.source or "this host", provider)
    gpus: list[GpuReq] = []
    warnings = []
    for g in facts.gpus:
        label, warning = _host_label(g, provider)
        warnings += [warning] if warning else []
        if not g.arch and facts.vendor in _UNNAMED_OK and model_of(g, provider) is None:
            warnings.append(f"GPU {g.index} {g.name!r} is not in envsolve's data; solving without it")
            continue
        if label.endswith("..."):  # nvidia-smi's table cut the name: no model can be told from it
            parser.bad(f"GPU {g.index}", f"{label!r} is cut short by nvidia-smi's table (and `nvidia-smi -L` did "
                       "not name it)")
            continue
        if (req := parser.gpu(label, f"GPU {g.index}")) is not None and req not in gpus:
            gpus.append(req)
    parser.problems.raise_if_any(SpecError, tip="describe the GPUs by architecture instead, e.g. ENVSOLVE_GPUS=sm_90 "
                                 "(or gfx942), or update envsolve's data")
    return gpus, warnings


def _host_label(g: GpuInfo, provider: Provider) -> tuple[str, str]:
    """The name a host GPU is solved by: its model's, else the architecture the tools reported (a
    name the data lacks, or a model whose architecture is not the one the driver reports: the
    driver knows its GPU better than a catalog row); with the warning that says so."""
    model = model_of(g, provider)
    if not g.arch or (model is not None and model.arch == g.arch):
        return model.name if model is not None else g.name, ""
    if model is None:
        return g.arch, (f"GPU {g.index} {g.name!r} is not in envsolve's data; solving for its architecture "
                        f"{g.arch} as the driver reported it")
    return g.arch, (f"GPU {g.index} {g.name!r} is {model.name} ({model.arch}) in envsolve's data but the driver "
                    f"reports {g.arch}; solving for {g.arch}")


def _host_driver(facts: HostFacts, vendor: Vendor, jetson: bool) -> Dotted | None:
    """The NVIDIA driver the host reported (a Jetson's comes with its JetPack)."""
    if vendor != "nvidia" or not facts.driver or jetson:
        return None
    try:
        return parse_driver(facts.driver)
    except ValueError:
        return None


def _host_jetpack(facts: HostFacts, gpus: list[GpuReq], base: Target, provider: Provider) -> tuple[Dotted | None, str]:
    """(JetPack, warning) of a Jetson host: its L4T release's, else the spec's, else the newest its
    modules support (with a warning)."""
    row = provider.jetpack_of_l4t(facts.l4t)
    if row is not None:
        return row.version, ""
    warning = (f"L4T {facts.l4t or '(unknown)'} is no JetPack release in envsolve's data; "
               + (f"keeping jetpack = {base.jetpack.raw}" if base.jetpack else "solving for the newest "
                  "JetPack the modules support"))
    fits = provider.jetpacks_for([g.name for g in gpus]) if base.jetpack is None else []
    return (fits[-1].version if fits else base.jetpack), warning


def _host_platform(facts: HostFacts, gpus: list[GpuReq], jetson: bool, base: Target) -> tuple[Platform, str]:
    """(platform, why): the host CPU's (a Jetson's when unknown), else the one its GPUs imply, else the spec's."""
    platform = host_platform(facts) or (JETSON_PLATFORM if jetson else None)
    if platform is not None:
        if facts.platform in ("windows", "darwin"):
            return platform, f"this host ({facts.platform}, {facts.machine})"
        return platform, f"this host's CPU ({facts.machine})" if facts.machine else "a Jetson (/etc/nv_tegra_release)"
    implied = {g.platform for g in gpus if g.platform}
    if len(implied) == 1:
        return implied.pop(), "the host's GPUs"
    return base.platform, base.platform_why


def _host_vendor(facts: HostFacts, gpus: list[GpuReq], jetson: bool) -> Vendor:
    """The vendor of the host's GPUs (a Jetson's is NVIDIA); cpu without GPUs, but Apple silicon's
    GPU whatever the data calls its chip."""
    if not gpus:
        return "apple" if facts.vendor == "apple" else "cpu"
    return "nvidia" if jetson else _HOST_VENDOR.get(facts.vendor, "cpu")


def _kept_accelerator(base: Target, platform: Platform, vendor: Vendor) -> AppleAccelerator | Literal[""]:
    """The spec's ``accelerator`` choice, kept on a Mac on Apple silicon (``mps`` only where its GPU is seen)."""
    if platform != APPLE_PLATFORM or (base.accelerator == "mps" and vendor != "apple"):
        return ""
    return base.accelerator


def _kept_pins(base: Target, vendor: Vendor, jetson: bool) -> tuple[Dotted | None, Dotted | None, Dotted | None]:
    """(CUDA, ROCm, ROCm kernel driver) of ``base`` ([hardware]) that fit the host's vendor."""
    nvidia = vendor == "nvidia" and not jetson
    amd = vendor == "amd"
    return base.cuda if nvidia else None, base.rocm if amd else None, base.rocm_driver if amd else None
