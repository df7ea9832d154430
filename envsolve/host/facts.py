"""Pure facts about a host: its vendor, driver, GPUs and platform, as :mod:`envsolve.host.detect`
found them, completed from the data where the tools were silent. Nothing here reads the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import msgspec
import msgspec.structs

from ..domain import DEFAULT_PLATFORM, DOCKER_PLATFORM, PLATFORMS, Platform, Vendor
from ..versions import parse_driver

if TYPE_CHECKING:
    from ..data import Gpu
    from ..provider import Provider
    from ..versions import Dotted

__all__ = ["GpuInfo", "HostFacts", "HostOs", "MigDevice", "complete", "describe", "hardware_table", "host_platform",
           "model_name", "model_of", "unknown_named"]


# What OS a host runs: a kind of Linux (a Jetson runs L4T; WSL 2 reaches the Windows host's
# driver), native Windows, or macOS.
HostOs = Literal["linux", "wsl2", "jetson", "windows", "darwin"]


def _or_none(value: str) -> str | None:
    """A fact the tools did not report is null in JSON, not ""."""
    return value or None


class MigDevice(msgspec.Struct, frozen=True, kw_only=True):
    """A MIG instance of a GPU: its profile (``1g.20gb``) and UUID, as nvidia-smi lists them."""

    profile: str
    uuid: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"profile": self.profile, "uuid": _or_none(self.uuid)}


class GpuInfo(msgspec.Struct, frozen=True, kw_only=True):
    """One GPU as the host reports it; the name is kept exactly as the tool printed it."""

    index: int
    name: str
    compute_capability: str = ""  # NVIDIA, e.g. "9.0"
    gfx: str = ""  # AMD, e.g. "gfx942"
    arch_name: str = ""  # Intel's or Apple's architecture as the data names it ("dg2", "apple-m2")
    memory_mib: int | None = None
    uuid: str = ""
    pci_id: str = ""  # "8086:56a0", as lspci -nn prints it (Intel GPUs)
    mig: tuple[MigDevice, ...] = ()

    @property
    def arch(self) -> str:
        """``sm_90``, ``gfx942``, ``dg2`` or ``apple-m2``; "" when unknown."""
        if self.gfx or self.arch_name:
            return self.gfx or self.arch_name
        return "sm_" + self.compute_capability.replace(".", "") if self.compute_capability else ""

    def to_dict(self) -> dict[str, Any]:
        arch = ({"gfx": self.gfx} if self.gfx else {"arch": self.arch_name} if self.arch_name
                else {"compute_capability": _or_none(self.compute_capability)})
        mig = {"mig": [m.to_dict() for m in self.mig]} if self.mig else {}
        pci = {"pci_id": self.pci_id} if self.pci_id else {}
        return {"index": self.index, "name": self.name, **arch, "memory_mib": self.memory_mib,
                "uuid": _or_none(self.uuid), **pci, **mig}


class HostFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`detect` found: the facts, where they came from, and what went wrong."""

    vendor: Vendor
    driver: str = ""  # raw, as the tool printed it ("580.159.04")
    cuda_driver_max: str = ""  # the newest CUDA major.minor the driver runs
    cuda_driver_max_from: str = ""  # the tool that said so, or "toolkit driver floors"
    rocm: str = ""  # the ROCm install's version (/opt/rocm/.info/version)
    gpus: tuple[GpuInfo, ...] = ()
    source: str = ""  # the source the GPUs came from
    platform: HostOs = "linux"
    l4t: str = ""  # Jetson's L4T release ("R35.3.1")
    machine: str = ""  # the CPU architecture as ``uname -m`` prints it ("aarch64"); "" when unknown
    container: bool = False  # inside a Docker/Podman container
    chip: str = ""  # a Mac's chip ("Apple M2 Pro", "Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz")
    os_version: str = ""  # a Mac's macOS release ("26.4")
    level_zero: bool = False  # an Intel GPU answered through Level Zero (xpu-smi, sycl-ls), as torch.xpu needs
    # in a container: the CUDA forward-compatibility libraries a cuda-compat package installed,
    # sorted, each with why it does not load ("" when it loads):
    # ("/usr/local/cuda-13.2/compat/libcuda.so.595.45.04", "")
    cuda_compat: tuple[tuple[str, str], ...] = ()
    warnings: tuple[str, ...] = ()

    @property
    def wsl(self) -> bool:
        """Linux under WSL 2: the NVIDIA driver is the Windows host's, its number a Windows one."""
        return self.platform == "wsl2"

    @property
    def windows_driver(self) -> bool:
        """Whether the NVIDIA driver is a Windows one (native Windows, or WSL 2's host)."""
        return self.platform in ("wsl2", "windows")

    def to_dict(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor,
            "driver": _or_none(self.driver),
            "cuda_driver_max": _or_none(self.cuda_driver_max),
            "cuda_driver_max_from": _or_none(self.cuda_driver_max_from),
            "rocm": _or_none(self.rocm),
            "platform": self.platform,
            "l4t": _or_none(self.l4t),
            "machine": _or_none(self.machine),
            "container": self.container,
            "wsl": self.wsl,
            **({"chip": self.chip} if self.chip else {}),
            **({"os_version": self.os_version} if self.os_version else {}),
            **({"level_zero": self.level_zero} if self.vendor == "intel" else {}),
            **({"cuda_compat": [{"path": path, "loads": not why, "error": why or None}
                                for path, why in self.cuda_compat]} if self.cuda_compat else {}),
            "source": self.source,
            "gpus": [g.to_dict() for g in self.gpus],
            "warnings": list(self.warnings),
        }


def complete(facts: HostFacts, provider: Provider) -> HostFacts:
    """Fill what the tools did not say from the data: a Jetson board's module, a GPU's compute
    capability from its model name (nvidia-smi -q -x and old drivers do not print it), and the
    newest CUDA the driver runs from the toolkits' driver floors when no tool reported it."""
    modules, unknown = _modules(facts, provider)
    cuda, cuda_from, bad_driver = _cuda_driver_max(facts, provider)
    vendor = "nvidia" if any(g not in facts.gpus for g in modules) else facts.vendor  # a Jetson's module
    return msgspec.structs.replace(facts, vendor=vendor, cuda_driver_max=cuda, cuda_driver_max_from=cuda_from,
                   gpus=tuple(_with_arch(g, provider) for g in modules),
                   warnings=(*facts.warnings, *unknown, *bad_driver))


def unknown_named(facts: HostFacts, provider: Provider) -> list[str]:
    """`envsolve detect`'s warning for each name ``ENVSOLVE_GPUS`` gives that is no GPU of the
    data (of :func:`complete`'s facts), with the resolver's nearest names, as a spec's ``gpus``
    says it: a person may misspell one. (``lock --host`` refuses such a name and ``doctor`` has
    its own finding, so neither needs the warning.)"""
    unknown = [g.name for g in facts.gpus if not g.arch] if "ENVSOLVE_GPUS" in facts.source else []
    if not unknown:
        return []
    from ..spec import unknown_gpu  # the spec's words for it; only an unknown name needs them

    return [f"ENVSOLVE_GPUS: {unknown_gpu(provider, name)}" for name in unknown]


def _modules(facts: HostFacts, provider: Provider) -> tuple[list[GpuInfo], list[str]]:
    """The GPUs, a Jetson's board named as its module; and a warning for each board the data has
    no module of."""
    named = [_as_module(g, facts, provider) for g in facts.gpus]
    return [g for g, _ in named if g is not None], [w for _, w in named if w]


def _as_module(g: GpuInfo, facts: HostFacts, provider: Provider) -> tuple[GpuInfo | None, str]:
    """A Jetson's board (which names its module) as that module; None and a warning when the data
    has no module of that name; any other GPU as it is."""
    if facts.platform != "jetson" or g.arch:
        return g, ""
    model = provider.gpu(g.name)  # a board whose model is a module's name or alias
    module = model.name if model is not None else jetson_module(g.name, provider)
    if module is None:
        return None, f"the board {g.name!r} names no Jetson module in envsolve's data"
    return msgspec.structs.replace(g, name=module), ""


def _with_arch(g: GpuInfo, provider: Provider) -> GpuInfo:
    """``g`` with its architecture from the data's model of that name, when the tool did not say it."""
    model = None if g.arch else model_of(g, provider)
    if model is None:
        return g
    if model.vendor == "amd":
        return msgspec.structs.replace(g, gfx=model.arch)
    if model.vendor in ("intel", "apple"):
        return msgspec.structs.replace(g, arch_name=model.arch)
    info = provider.arch_info(model.arch)
    return msgspec.structs.replace(g, compute_capability=info.compute_capability) if info is not None else g


def _cuda_driver_max(facts: HostFacts, provider: Provider) -> tuple[str, str, tuple[str, ...]]:
    """The newest CUDA the driver runs and who said so: the tool's answer, else the toolkits'
    driver floors (a desktop NVIDIA driver only); with a warning when the driver is no version."""
    if not _from_floors(facts):
        return facts.cuda_driver_max, facts.cuda_driver_max_from, ()
    try:
        best = _cuda_max(facts, provider, parse_driver(facts.driver))
    except ValueError:
        return "", facts.cuda_driver_max_from, (f"driver version {facts.driver!r} is not an NVIDIA driver version "
                                                "such as 535.104.05",)
    if best is None:
        return "", facts.cuda_driver_max_from, ()
    return "{}.{}".format(*best.prefix(2)), "toolkit driver floors", ()


def _cuda_max(facts: HostFacts, provider: Provider, driver: Dotted) -> Dotted | None:
    """The newest CUDA ``driver`` runs natively: a Windows driver (native, or WSL 2's host) against
    NVIDIA's Windows floors where cuda.toml has them, else the Linux ones."""
    if not facts.windows_driver:
        return provider.cuda_max_for_driver(driver)
    runs = [t.version for t in provider.m.toolkits if (t.driver_min_windows or t.driver_min) <= driver]
    return max(runs, default=None)


def _from_floors(facts: HostFacts) -> bool:
    """Whether the CUDA a driver runs is to be read from the toolkits' floors: a desktop NVIDIA
    driver no tool said it of (a Jetson's CUDA is its JetPack's)."""
    return not facts.cuda_driver_max and facts.vendor == "nvidia" and bool(facts.driver) and facts.platform != "jetson"


def jetson_module(board: str, provider: Provider) -> str | None:
    """The Jetson module a board's name contains ("NVIDIA Jetson Orin NX Engineering Reference
    Developer Kit" -> "Jetson Orin NX"; "Jetson-AGX", the AGX Xavier's board under L4T R32 ->
    "Jetson AGX Xavier"): the longest module name or alias of the data found in it."""
    text = f" {board.casefold()} "
    named = [(n, g.name) for g in provider.m.gpus if provider.is_jetson(g.name) for n in (g.name, *g.aliases)]
    named.sort(key=lambda x: len(x[0]), reverse=True)
    return next((module for n, module in named if f" {n.casefold()} " in text), None)


def model_of(g: GpuInfo, provider: Provider) -> Gpu | None:
    """The data's model of a GPU: by the name the tool printed, else by its PCI id (``8086:e20b``, as
    lspci -nn prints it when its pci.ids is older than the GPU), through the name Intel's runtime
    gives a device it does not know by name (``Intel(R) Graphics [0xe20b]``, an alias in gpus.toml)."""
    named = None if g.name.endswith("...") else provider.gpu(g.name)  # a name nvidia-smi's table cut is no model's
    if named is not None or not g.pci_id:
        return named
    return provider.gpu(f"Intel(R) Graphics [0x{g.pci_id.partition(':')[2]}]")


def model_name(g: GpuInfo, provider: Provider) -> str:
    """envsolve's name for a GPU (``H100``), else its architecture (``sm_90``, ``gfx942``), else ""."""
    model = model_of(g, provider)
    return model.name if model is not None else g.arch


def describe(facts: HostFacts, provider: Provider) -> str:
    """`envsolve detect`'s text: the vendor and where it came from, the OS when it is not plain
    Linux, the driver and what it runs, then each GPU (and its MIG instances)."""
    lines = [f"vendor: {facts.vendor} (from {facts.source})", *_stack(facts)]
    lines += [line for g in facts.gpus for line in _gpu_lines(g, provider)] or ["no GPU"]
    return "\n".join(lines)


def _stack(facts: HostFacts) -> list[str]:
    said = [(facts.platform != "linux", _platform_line(facts)),
            (bool(facts.driver), f"driver: {facts.driver}"),
            (bool(facts.cuda_driver_max),
             f"CUDA the driver runs: up to {facts.cuda_driver_max} (from {facts.cuda_driver_max_from})"),
            (bool(facts.rocm), f"ROCm: {facts.rocm}"),
            (facts.vendor == "intel", "Level Zero: " + ("answered" if facts.level_zero else "not found (PyTorch's "
                                                        "XPU builds need Intel's GPU driver with Level Zero)"))]
    return [line for shown, line in said if shown]


def _platform_line(facts: HostFacts) -> str:
    """``platform: jetson R36.4.3``, ``platform: wsl2``, ``platform: darwin/arm64 (Apple M2 Pro, macOS 26.4)``."""
    about = ", ".join(x for x in (facts.chip, f"macOS {facts.os_version}" if facts.os_version else "") if x)
    name = facts.platform if facts.platform in ("wsl2", "jetson") else host_platform(facts) or facts.platform
    return f"platform: {name}" + (f" {facts.l4t}" if facts.l4t else "") + (f" ({about})" if about else "")


def _gpu_lines(g: GpuInfo, provider: Provider) -> list[str]:
    """``GPU 0: NVIDIA H100 80GB HBM3 (compute capability 9.0, 81559 MiB) -> H100`` and its MIG instances."""
    known = model_name(g, provider)
    memory = f", {g.memory_mib} MiB" if g.memory_mib else ""
    alias = f" -> {known}" if known and known != g.name else ""
    return [f"GPU {g.index}: {g.name} ({_arch_text(g)}{memory}){alias}", *(_mig_line(m) for m in g.mig)]


def _arch_text(g: GpuInfo) -> str:
    return g.gfx or (f"compute capability {g.compute_capability}" if g.compute_capability else "arch unknown")


def _mig_line(m: MigDevice) -> str:
    return f"  MIG {m.profile}" + (f" {m.uuid}" if m.uuid else "")


def hardware_table(facts: HostFacts, provider: Provider) -> dict[str, Any]:
    """The ``[hardware]`` table of project.toml that describes this host."""
    names = list(dict.fromkeys(n for g in facts.gpus if (n := model_name(g, provider))))
    vendor = facts.vendor if names or facts.vendor == "apple" else "cpu"  # Apple silicon's GPU is implied
    table = {"gpus": names, "driver": _desktop_driver(facts), "vendor": vendor, "platform": _platform(facts),
             "wsl": facts.wsl, "jetpack": _jetpack(facts, provider)}
    return {k: v for k, v in table.items() if v}


def _desktop_driver(facts: HostFacts) -> str:
    """The NVIDIA driver version, when it is one (a Jetson's L4T release is not)."""
    if facts.vendor != "nvidia" or not facts.driver:
        return ""
    try:
        parse_driver(facts.driver)
    except ValueError:
        return ""
    return facts.driver


def host_platform(facts: HostFacts) -> Platform | None:
    """The host's platform: its OS (Windows, macOS, else Linux) and CPU (``uname -m``, Windows'
    AMD64/ARM64); None when the CPU is unknown."""
    linux = DOCKER_PLATFORM.get(facts.machine.lower())
    if linux is None:
        return None
    name = f"{_OS.get(facts.platform, 'linux')}/{linux.partition('/')[2]}"
    return next((p for p in PLATFORMS if p == name), None)


_OS = {"windows": "windows", "darwin": "darwin"}  # HostOs -> the OS half of a platform (the rest are Linux)


def _platform(facts: HostFacts) -> str:
    """Docker's name of the host's platform, when it is not the default one."""
    platform = host_platform(facts) or DEFAULT_PLATFORM
    return "" if platform == DEFAULT_PLATFORM else platform


def _jetpack(facts: HostFacts, provider: Provider) -> str:
    """A Jetson's JetPack release (from its L4T release), when the data knows it."""
    jetpack = provider.jetpack_of_l4t(facts.l4t) if facts.platform == "jetson" else None
    return jetpack.version.raw if jetpack is not None else ""
