"""Pure facts about a host: its vendor, driver, GPUs and platform, as :mod:`envsolve.detect`
found them, completed from the data where the tools were silent. Nothing here reads the host.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..domain import DOCKER_PLATFORM
from ..versions import parse_driver

if TYPE_CHECKING:
    from ..provider import Provider

__all__ = ["GpuInfo", "HostFacts", "MigDevice", "complete", "hardware_table", "model_name"]


@dataclass(frozen=True, kw_only=True, slots=True)
class MigDevice:
    """A MIG instance of a GPU: its profile (``1g.20gb``) and UUID, as nvidia-smi lists them."""

    profile: str
    uuid: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuInfo:
    """One GPU as the host reports it; the name is kept exactly as the tool printed it."""

    index: int
    name: str
    compute_capability: str = ""  # NVIDIA, e.g. "9.0"
    gfx: str = ""  # AMD, e.g. "gfx942"
    memory_mib: int | None = None
    uuid: str = ""
    mig: tuple[MigDevice, ...] = ()

    @property
    def arch(self) -> str:
        """``sm_90`` or ``gfx942``; "" when unknown."""
        if self.gfx:
            return self.gfx
        return "sm_" + self.compute_capability.replace(".", "") if self.compute_capability else ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"index": self.index, "name": self.name}
        if self.gfx:
            d["gfx"] = self.gfx
        else:
            d["compute_capability"] = self.compute_capability or None
        d["memory_mib"] = self.memory_mib
        d["uuid"] = self.uuid or None
        if self.mig:
            d["mig"] = [{"profile": m.profile, "uuid": m.uuid or None} for m in self.mig]
        return d


@dataclass(frozen=True, kw_only=True, slots=True)
class HostFacts:
    """What :func:`detect` found: the facts, where they came from, and what went wrong."""

    vendor: str  # nvidia | amd | cpu
    driver: str = ""  # raw, as the tool printed it ("580.159.04")
    cuda_driver_max: str = ""  # the newest CUDA major.minor the driver runs
    cuda_driver_max_from: str = ""  # the tool that said so, or "toolkit driver floors"
    rocm: str = ""  # the ROCm install's version (/opt/rocm/.info/version)
    gpus: tuple[GpuInfo, ...] = ()
    source: str = ""  # the source the GPUs came from
    platform: str = "linux"  # linux | wsl2 | jetson
    l4t: str = ""  # Jetson's L4T release ("R35.3.1")
    machine: str = ""  # the CPU architecture as ``uname -m`` prints it ("aarch64"); "" when unknown
    container: bool = False  # inside a Docker/Podman container
    warnings: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "driver": self.driver or None,
            "cuda_driver_max": self.cuda_driver_max or None,
            "cuda_driver_max_from": self.cuda_driver_max_from or None,
            "rocm": self.rocm or None,
            "platform": self.platform,
            "l4t": self.l4t or None,
            "machine": self.machine or None,
            "container": self.container,
            "source": self.source,
            "gpus": [g.to_dict() for g in self.gpus],
            "warnings": list(self.warnings),
        }


def complete(facts: HostFacts, provider: Provider) -> HostFacts:
    """Fill what the tools did not say from the data: a GPU's compute capability from its model
    name (nvidia-smi -q -x and old drivers do not print it), and the newest CUDA the driver runs
    from the toolkits' driver floors when no tool reported it."""
    gpus = []
    warnings = list(facts.warnings)
    vendor = facts.vendor
    for g in facts.gpus:
        if facts.platform == "jetson" and provider.gpu(g.name) is None and not g.arch:
            module = jetson_module(g.name, provider)  # a Jetson's board names its module
            if module is None:
                warnings.append(f"the board {g.name!r} names no Jetson module in envsolve's data")
                continue
            g, vendor = replace(g, name=module), "nvidia"
        cc, gfx = g.compute_capability, g.gfx
        if not cc and not gfx and (model := provider.gpu(g.name)) is not None:
            info = provider.arch_info(model.arch)
            if model.vendor == "amd":
                gfx = model.arch
            elif info is not None and info.compute_capability:
                cc = info.compute_capability
        gpus.append(replace(g, compute_capability=cc, gfx=gfx))
    cuda, cuda_from = facts.cuda_driver_max, facts.cuda_driver_max_from
    if facts.vendor == "nvidia" and facts.driver and not cuda and facts.platform != "jetson":
        try:
            best = provider.cuda_max_for_driver(parse_driver(facts.driver))
        except ValueError:
            warnings.append(f"driver version {facts.driver!r} is not an NVIDIA driver version such as 535.104.05")
            best = None
        if best is not None:
            cuda, cuda_from = "{}.{}".format(*best.prefix(2)), "toolkit driver floors"
    return replace(facts, vendor=vendor, cuda_driver_max=cuda, cuda_driver_max_from=cuda_from, gpus=tuple(gpus),
                   warnings=tuple(warnings))


def jetson_module(board: str, provider: Provider) -> str | None:
    """The Jetson module a board's name contains ("NVIDIA Jetson Orin NX Engineering Reference
    Developer Kit" -> "Jetson Orin NX"): the longest module name of the data found in it."""
    text = f" {board.casefold()} "
    names = sorted((g.name for g in provider.m.gpus if provider.is_jetson(g.name)), key=len, reverse=True)
    return next((n for n in names if f" {n.casefold()} " in text), None)


def model_name(g: GpuInfo, provider: Provider) -> str:
    """envsolve's name for a GPU (``H100``), else its architecture (``sm_90``, ``gfx942``), else ""."""
    model = provider.gpu(g.name)
    return model.name if model is not None else g.arch


def hardware_table(facts: HostFacts, provider: Provider) -> dict[str, Any]:
    """The ``[hardware]`` table of project.toml that describes this host."""
    table: dict[str, Any] = {}
    names = [n for n in (model_name(g, provider) for g in facts.gpus) if n]
    if names:
        table["gpus"] = sorted(set(names), key=names.index)
    if facts.vendor == "nvidia" and facts.driver:
        try:
            parse_driver(facts.driver)
            table["driver"] = facts.driver
        except ValueError:  # Jetson's L4T version is not a desktop driver version
            pass
    table["vendor"] = facts.vendor if facts.vendor in ("nvidia", "amd") and names else "cpu"
    if (platform := DOCKER_PLATFORM.get(facts.machine, "")) and platform != "linux/amd64":
        table["platform"] = platform
    if facts.platform == "jetson" and (jp := provider.jetpack_of_l4t(facts.l4t)) is not None:
        table["jetpack"] = jp.version.raw
    return table


