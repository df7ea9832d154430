"""The fit rules: whether one build of a framework serves one target on its own.

* A build serves a GPU when it carries SASS for the GPU's major at a minor at or below the
  GPU's, or PTX at or below it (:func:`envsolve.domain.kernels`; arch-specific PTX such as
  ``compute_90a`` only on its own compute capability). PTX runs by JIT whatever CUDA made the
  build (onnxruntime-gpu 1.22's CUDA 12.2 compute_90 PTX runs on an RTX 5090), on a driver that knows
  the GPU and runs the build's CUDA natively. Every GPU of a target must be served by the same
  build; a GPU served only by PTX is said in the lock and ``explain`` (:func:`jit_note`).
* The driver runs the build's CUDA natively, or by minor-version compatibility within the
  major (never for PTX), or, when neither serves, by forward compatibility: the image brings the
  build's CUDA's user-mode driver (``cuda-compat-X-Y``, matrices/cuda.toml ``[[compat]]``) for a
  driver branch that package supports, on data-center GPUs only (``forward_compat`` of their
  rows), on Linux outside WSL2; PTX JIT works there. A driver branch that dropped a GPU's
  generation cannot serve it.
* The build is published for the target's platform (matrices/platforms.toml). A Jetson runs
  the builds of its JetPack (linked against JetPack's own CUDA), or from JetPack 7 (SBSA) the
  linux/arm64 builds whose CUDA major is JetPack's; its driver comes with JetPack.
* A build whose wheels are only on a find-links page (``find_links``: jaxlib before 0.4.23) is
  checked like any other; where it would run, it is refused saying how to install it by hand.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import msgspec
import msgspec.structs

from ..data import Build, JetPack, Release, Rocm
from ..domain import ACCELERATOR, DEFAULT_PLATFORM, LINUX_PLATFORMS, STACK_NAME, kernels, serves
from ..provider import Provider
from ..spec import GpuReq, ProjectSpec, Target
from ..versions import Arch, Dotted, parse_arch
from .cache import Cache
from .model import Candidate, No

__all__ = ["compiler_on", "cudnn_refusal", "families_text", "fit", "fit_drivers", "gpu_families",
           "gpu_text", "jit_note", "of_pin", "pythons", "target_text"]


_Fit = tuple[str, Dotted | None, "No | None"]  # (compat, driver_min, None) or ("", None, why not)
# how the target's driver runs the build's CUDA, in words (a find-links build's refusal says it)
_BY = {"minor-version": " by minor-version compatibility", "forward": " by forward compatibility (cuda-compat)"}
_NEED = {"cuda": "NVIDIA GPUs need a CUDA build", "rocm": "AMD GPUs need a ROCm build",
         "xpu": "Intel GPUs need an XPU build", "mps": "Apple's GPU needs an MPS build (macOS on Apple silicon)",
         "cpu": "the target has no GPU"}
_AN = ("xpu", "mps")  # the stacks said with "an" (an XPU build)


def gpu_text(gpu: GpuReq) -> str:
    """``RTX 5090 (sm_120)``, or the bare arch when the user named one."""
    return f"{gpu.name} ({gpu.arch.name})" if gpu.name != gpu.arch.name else gpu.arch.name


_GPUS_OF = {"nvidia": "NVIDIA GPUs", "amd": "AMD GPUs", "intel": "Intel GPUs", "apple": "Apple's GPU"}


def target_text(t: Target, cpu: str = "a CPU-only machine") -> str:
    """The target's GPUs as the user knows them, else its vendor's (no model named), else ``cpu``."""
    return ", ".join(gpu_text(x) for x in t.gpus) or _GPUS_OF.get(t.vendor, cpu)


def gpu_families(t: Target) -> set[str]:
    """The GPU families of a target (``hopper``, ``maxwell``): what driver branches drop."""
    return {gpu.family for gpu in t.gpus}


def pythons(cache: Cache, spec: ProjectSpec, rel: Release, b: Build | None) -> frozenset[str]:
    """The Pythons of the spec's range that a release (or one of its builds) has wheels for, and,
    when the spec asks for a companion whose wheels cover fewer Pythons, that companion too."""
    pys = b.python if b and b.python else rel.python
    bounds = dict(rel.companion_python)
    for req in spec.frameworks:
        if req.name in bounds:
            pys = tuple(p for p in pys if p in bounds[req.name])
    return cache.pythons(spec.python_raw, pys)


def _archs_text(b: Build) -> str:
    """``sm_75, sm_80; PTX compute_80``: the build's SASS and PTX targets."""
    sass = ", ".join(b.archs) or "none"
    return f"{sass}" + (f"; PTX {', '.join(map(_ptx_name, b.ptx))}" if b.ptx else "")


def _ptx_name(arch: str) -> str:
    """``compute_90a``: PTX for an arch as nvcc names it."""
    a = parse_arch(arch)
    return f"compute_{a.major}{a.minor}{a.suffix}"


def _refused(no: No) -> _Fit:
    return "", None, no




def _fit_nvidia(provider: Provider, b: Build, cuda: Dotted, t: Target) -> _Fit:
    """(compat, driver_min, None) when ``b`` (CUDA ``cuda``) serves ``t``; else ("", None, why)."""
    if (no := _off_pin(cuda, t.cuda, "CUDA")) is not None:
        return _refused(no)
    floors = _driver_floors(provider, b, cuda, t)
    if isinstance(floors, No):
        return _refused(floors)
    ptx_only = _kernels(provider, b, cuda, t)
    if isinstance(ptx_only, No):
        return _refused(ptx_only)
    if (no := _cudnn(provider, b, cuda, t, ptx_only)) is not None:
        return _refused(no)
    if (no := _cublas(provider, b, cuda, t, ptx_only)) is not None:
        return _refused(no)
    return _driver(provider, cuda, t, *floors, ptx_only)


def _driver_floors(provider: Provider, b: Build, cuda: Dotted, t: Target) -> tuple[Dotted, Dotted | None] | No:
    """(native floor, minor-version floor) of the driver for ``b`` on ``t``: the toolkit's, raised
    by a floor the framework documents, by the first driver that knows each GPU, and under WSL 2 by
    the first Windows driver whose CUDA reaches it."""
    windows = t.windows_driver
    native = provider.windows_driver_min(cuda) if windows else provider.native_driver_min(cuda)
    if native is None:
        return No("driver", f"CUDA {cuda} is not in matrices/cuda.toml, so its driver needs are unknown")
    floor = provider.minor_compat_driver_min(cuda.major, windows=windows)
    gpus = max((f for x in t.gpus if (f := provider.gpu_driver_floor(x.arch, windows=windows))), default=None)
    wsl = provider.wsl_driver_floor() if t.wsl else None  # no older Windows driver brings CUDA into WSL 2
    for extra in (b.driver_min, gpus, wsl):
        native, floor = _raised(native, floor, extra)
    return native, floor


def _raised(native: Dotted, floor: Dotted | None, extra: Dotted | None) -> tuple[Dotted, Dotted | None]:
    """Both floors raised to ``extra`` (a minor-version floor only where there is one)."""
    if extra is None:
        return native, floor
    return max(native, extra), (max(floor, extra) if floor else None)


def _kernels(provider: Provider, b: Build, cuda: Dotted, t: Target) -> list[GpuReq] | No:
    """The GPUs of ``t`` that ``b`` serves only through PTX; or why one GPU gets no kernels."""
    ptx_only: list[GpuReq] = []
    for gpu in t.gpus:
        code = kernels(b, gpu.arch)
        no = _no_kernels(provider, b, cuda, gpu, code)
        if no is not None:
            return no
        if code == "ptx":
            ptx_only.append(gpu)
    return ptx_only


def _no_kernels(provider: Provider, b: Build, cuda: Dotted, gpu: GpuReq, code: str) -> No | None:
    """Why ``b`` (CUDA ``cuda``, carrying ``code`` for the GPU) has no kernels for ``gpu``: neither
    SASS for it nor PTX at or below it (PTX JIT-compiles for a newer GPU whatever CUDA made it),
    told with what the build carries: its PTX arch-specific, or, when its CUDA cannot target the
    GPU, the CUDA whose builds could carry SASS for it."""
    if code:
        return None
    none = f"no kernels for {gpu_text(gpu)}: compiled for {_archs_text(b)}"
    specific = _arch_specific_ptx(b)
    if specific:
        return No("arch", f"{none}, arch-specific PTX that JIT-compiles for {specific} only: no SASS for "
                  f"{gpu.arch.name} and no plain PTX at or below it")
    none += f": no SASS for {gpu.arch.name} and no PTX at or below it"
    if provider.toolkit_knows(cuda, gpu.arch):
        return No("arch", none)
    return _unknown_to(provider, cuda, gpu, none)


def _arch_specific_ptx(b: Build) -> str:
    """``sm_90``: the archs the build's arch-specific PTX (``compute_90a``) JIT-compiles for ("" when none)."""
    return ", ".join(f"sm_{a.major}{a.minor}" for a in map(parse_arch, b.ptx) if a.suffix == "a")


def _unknown_to(provider: Provider, cuda: Dotted, gpu: GpuReq, none: str) -> No:
    """No kernels for ``gpu``, and CUDA ``cuda`` cannot target it: no CUDA in the data does, it
    stopped, or it came later (``arch-cuda``: a build of a newer CUDA may carry them)."""
    first, last = provider.first_toolkit_for(gpu.arch), provider.last_toolkit_for(gpu.arch)
    if first is None or last is None:
        return No("arch", f"{none} (no CUDA release in the data targets {gpu.arch.name})")
    if last.version < cuda:
        return No("arch", f"{none} (CUDA {cuda} no longer targets {gpu.arch.name}; the last CUDA that does "
                  f"is {last.version})")
    need = "{}.{}".format(*first.version.prefix(2))
    return No("arch-cuda", f"{none} ({gpu.arch.name} needs CUDA >= {need}; this build is CUDA {cuda})", need)


def _cudnn(provider: Provider, b: Build, cuda: Dotted, t: Target, ptx_only: list[GpuReq]) -> No | None:
    """Why the build's bundled cuDNN does not support a GPU of ``t`` (None when it does).

    cuDNN is a component with its own kernels, told by the one kernel rule
    (:func:`envsolve.domain.serves`): SASS for each arch of its support matrix, and PTX only where
    the release ships it (``ptx`` of its row: cuDNN's hardware forward compatibility), counted for
    a GPU the build itself reaches only through PTX (where the driver JIT-compiles anyway). A
    release that ships SASS only never JIT-compiles for a newer GPU, whatever PTX the framework has."""
    return next((no for gpu in t.gpus if (no := cudnn_refusal(provider, b, cuda, gpu.arch, gpu_text(gpu),
                                                               native=gpu in ptx_only))), None)


def _cublas(provider: Provider, b: Build, cuda: Dotted, t: Target, ptx_only: list[GpuReq]) -> No | None:
    """Why the cuBLAS ``b`` pins (Requires-Dist ``nvidia-cublas-cu11/cu12==V``) has no kernels for a
    GPU of ``t``, told by the one kernel rule as cuDNN's (libraries.toml); a build that takes any
    release of a range gets the newest, one that bundles its CUDA's is not told apart here, and
    CUDA 13's ``nvidia-cublas`` (its rows read from the x86_64 wheel only) is not asked yet."""
    wheel = f"nvidia-cublas-cu{cuda.major}"
    version = dict(b.pins).get(wheel, "") or dict(b.shared).get(wheel, "").removeprefix("==")
    row = provider.library("cublas", version, cuda.major) if version and version[0].isdigit() else None
    if row is None:
        return None
    return next((no for gpu in t.gpus if (no := _no_library_kernels(
        b, row.archs, row.ptx, gpu.arch, native=gpu in ptx_only,
        head=f"its cuBLAS {version} has no kernels for {gpu_text(gpu)} (", code="cublas"))), None)


def cudnn_refusal(provider: Provider, b: Build, cuda: Dotted, arch: Arch, shown: str, *, native: bool) -> No | None:
    """Why ``b``'s bundled cuDNN has no kernels for a GPU of ``arch`` (``shown`` as the message
    names it); ``native``: the build itself reaches it only through PTX, under a driver that runs
    its CUDA natively (the JIT works there). :func:`fit` and ``envsolve doctor`` ask it."""
    row = provider.cudnn_row(b.cudnn, cuda.major) if b.cudnn else None
    if row is None:
        return None
    return _no_library_kernels(b, row.archs, row.ptx, arch, native=native, code="cudnn",
                               head=f"its cuDNN {b.cudnn} has no kernels for {shown} (cuDNN {row.version} for "
                                    f"CUDA {row.cuda_major}: ")


def _no_library_kernels(b: Build, archs: tuple[str, ...], ptx: tuple[str, ...], arch: Arch, *, native: bool,
                        code: str, head: str) -> No | None:
    """Why a CUDA library ``b`` loads (SASS for ``archs``, PTX for ``ptx``) has no kernels for a
    GPU of ``arch``, by the one kernel rule (:func:`envsolve.domain.serves`; ``native``: its PTX
    counts); ``head`` begins the message, which ends with what the library carries."""
    if serves(msgspec.structs.replace(b, archs=archs, ptx=ptx, gfx=()), arch, native=native):
        return None
    jit = f"; PTX {', '.join(map(_ptx_name, ptx))}" if ptx else "; no PTX to JIT-compile for newer GPUs"
    return No(code, f"{head}SASS for {', '.join(archs)}{jit})")


def _driver(provider: Provider, cuda: Dotted, t: Target, native: Dotted, floor: Dotted | None,
            ptx_only: list[GpuReq]) -> _Fit:
    """How the target's driver (or, with none given, the newest branch that still supports its
    GPUs) runs CUDA ``cuda``: natively, by minor-version compatibility (never for PTX), or not."""
    if t.driver is not None:
        return _given_driver(provider, t, t.driver, cuda, (native, floor), ptx_only)
    return _newest_branch(provider, cuda, t, native, floor, ptx_only)


def _ptx_note(cuda: Dotted, ptx_only: list[GpuReq]) -> str:
    """Why a GPU reached only through PTX needs more of the driver: its JIT compiles PTX of the
    build's CUDA ``cuda``, so it must run that CUDA natively (never by minor-version compatibility)."""
    if not ptx_only:
        return ""
    return (f" ({', '.join(gpu_text(x) for x in ptx_only)} runs only through PTX JIT, which needs a driver "
            f"that runs CUDA {cuda} natively)")


def _given_driver(provider: Provider, t: Target, driver: Dotted, cuda: Dotted, floors: tuple[Dotted, Dotted | None],
                  ptx_only: list[GpuReq]) -> _Fit:
    """How driver ``driver`` runs CUDA ``cuda``: natively, by minor-version compatibility, by
    forward compatibility (only when neither serves), or not."""
    native, floor = floors
    if driver >= native:
        return "native", native, None
    by_minor = floor is not None and driver >= floor
    if by_minor and not ptx_only:
        return "minor-version", floor, None
    forward = _forward(provider, cuda, t, driver.major, driver)
    if isinstance(forward, Dotted):
        return "forward", forward, None
    if by_minor:
        return _refused(No("driver", f"driver {driver} runs CUDA {cuda} only by minor-version "
                           f"compatibility; needs >= {native}{_ptx_note(cuda, ptx_only)}{forward}"))
    alt = _or_minor_version(native, floor, ptx_only)
    return _refused(No("driver", f"driver {driver} is too old for CUDA {cuda}: needs >= {native}{alt}{forward}"))


def _forward(provider: Provider, cuda: Dotted, t: Target, branch: int, driver: Dotted | None) -> Dotted | str:
    """The driver floor at which forward compatibility runs CUDA ``cuda`` on ``t``'s driver branch
    ``branch`` (of ``driver``, when the target names one): NVIDIA's cuda-compat package of that
    CUDA supports the branch, every GPU is a data-center GPU, and the driver is a Linux one (not
    Windows', not WSL2's); the floor is the branch's first driver of its own CUDA, raised to the
    first driver that knows each GPU. Else why not, as a clause a refusal ends with ("" when no
    cuda-compat package comes near: nothing worth telling)."""
    row = provider.cuda_compat(cuda)
    if row is None:
        return ""
    head = f"; forward compatibility ({row.package})"
    if t.windows_driver:  # first: a Windows driver's number is no Linux branch
        return f"{head} runs on Linux only, not {'under WSL2' if t.wsl else 'on Windows'}"
    outsider = _not_data_center(provider, t)
    if branch not in row.branches:
        return "" if outsider else f"{head} supports drivers of {row.branches_text} only, not R{branch}"
    if outsider:
        return f"{head} serves data-center GPUs only; {outsider}"
    gpus = max((f for x in t.gpus if (f := provider.gpu_driver_floor(x.arch, windows=False))), default=None)
    floor = max(filter(None, (provider.branch_floor(branch), gpus)), default=None)
    if floor is None or (driver is not None and driver < floor):
        return f"{head} on R{branch} needs a driver >= {floor}" if floor else ""
    return floor


def _not_data_center(provider: Provider, t: Target) -> str:
    """Why a GPU of ``t`` is not one forward compatibility serves ("" when every one is a
    data-center GPU): a GeForce card, another model, or an architecture named without its model."""
    if not t.gpus:
        return "name the GPU models in [hardware] gpus"
    for x in t.gpus:
        row = provider.gpu(x.name) if x.name != x.arch.name else None
        if row is None:
            return f"{x.name} names no GPU model"
        if not row.forward_compat:
            return f"{gpu_text(x)} is {'a GeForce card' if row.geforce else 'not a data-center GPU'}"
    return ""


def _or_minor_version(native: Dotted, floor: Dotted | None, ptx_only: list[GpuReq]) -> str:
    """`` (or >= 450.80.02 by minor-version compatibility)`` where that floor is lower and serves."""
    if floor is None or floor >= native or ptx_only:
        return ""
    return f" (or >= {floor} by minor-version compatibility)"


def _newest_branch(provider: Provider, cuda: Dotted, t: Target, native: Dotted, floor: Dotted | None,
                   ptx_only: list[GpuReq]) -> _Fit:
    """How the newest driver branch that still supports the target's GPUs runs CUDA ``cuda``."""
    families = gpu_families(t)
    limit = provider.newest_branch_for(families)
    if limit is None or native.major <= limit:
        return "native", native, None
    if floor is not None and floor.major <= limit and not ptx_only:
        return "minor-version", floor, None
    forward = _forward(provider, cuda, t, limit, None)
    if isinstance(forward, Dotted):
        return "forward", forward, None
    return _refused(No("driver", f"{families_text(families)} GPUs are supported by drivers up to R{limit}, "
                       f"which cannot run CUDA {cuda} (needs >= {native}){_ptx_note(cuda, ptx_only)}{forward}"))


def families_text(families: set[str]) -> str:
    """``Maxwell, Pascal``: GPU families as NVIDIA writes them, sorted."""
    return ", ".join(sorted(f.capitalize() for f in families))


def _platform(provider: Provider, b: Build, t: Target) -> No | None:
    """Why ``b`` cannot run on ``t``'s platform or JetPack (None when it can). A Jetson build for
    another machine, or another build for a Jetson before SBSA, is a build of another kind (code
    ``jetson``), as is a build published only for other platforms (``elsewhere``: the macOS
    builds for a Linux target): explanations leave them out, as they do builds of another accelerator."""
    jp = _jetpack(provider, t)
    if jp is not None and not jp.sbsa:
        return _jetpack_build(b, jp)
    if b.jetpack:
        return No("jetson", f"{b.variant} is built for Jetson modules (JetPack {b.jetpack}) only")
    if b.platforms and t.platform not in b.platforms:
        return No("elsewhere", f"{b.variant} is built for {', '.join(b.platforms)} only")
    if not provider.on_platform(b, t.platform):
        return No("platform", f"no {t.platform} wheel of this build (matrices/platforms.toml)")
    return None


def _glibc(provider: Provider, spec: ProjectSpec, b: Build, t: Target) -> No | None:
    """Why ``b``'s Linux wheels cannot load on the container OS the spec asks for: they are
    ``manylinux_X_Y`` wheels, which need glibc X.Y or newer, and the OS has an older one (pip finds
    no wheel it may install). None when they can, or when the data does not say."""
    if not spec.os or t.platform not in LINUX_PLATFORMS:
        return None
    need, have = provider.wheel_glibc(b, t.platform), provider.os_glibc(spec.os)
    if need is None or have is None or have >= need:
        return None
    tag = f"manylinux_{need.major}_{need.key[1] if len(need.key) > 1 else 0}"
    return No("glibc", f"its {t.platform} wheels are {tag} (glibc >= {need}); the container OS ([container] os) "
                       f"has glibc {have}, so pip finds no wheel it may install there")


def _jetpack(provider: Provider, t: Target) -> JetPack | None:
    return provider.jetpack(t.jetpack) if t.jetpack is not None else None


def _jetpack_build(b: Build, jp: JetPack) -> No | None:
    """Why ``b`` is not one of NVIDIA's Jetson builds for JetPack ``jp`` (None when it is): a build
    of another kind, or a Jetson build for other releases of the same JetPack major."""
    if b.runs_on_jetpack(jp.version):
        return None
    if b.jetpack == str(jp.version.major):
        return No("jetpack", f"built for JetPack {', '.join(b.jetpacks)} only, not {jp.version}")
    return No("jetson", f"{b.variant} is not built for JetPack {jp.version.major}: a Jetson runs the "
              f"builds of NVIDIA's Jetson index for its JetPack ({jp.version}, CUDA {jp.cuda})")


def _fit_jetson(provider: Provider, b: Build, cuda: Dotted, t: Target, jp: JetPack) -> _Fit:
    """A Jetson's CUDA is its JetPack's: a build linked against JetPack's CUDA needs that very
    major.minor; an SBSA build (JetPack 7) runs its major, newer minors by minor-version compatibility."""
    if not _links_to(b, cuda, jp):
        return _refused(No("jetpack", f"built for CUDA {cuda}; JetPack {jp.version} brings CUDA {jp.cuda}"))
    ptx_only = _kernels(provider, b, cuda, t)
    if isinstance(ptx_only, No):
        return _refused(ptx_only)
    newer = cuda.prefix(2) > jp.cuda.prefix(2)
    if ptx_only and newer:
        return _refused(No("jetpack", f"{', '.join(map(gpu_text, ptx_only))} runs only through PTX JIT, "
                           f"which needs CUDA {cuda} natively; JetPack {jp.version} brings CUDA {jp.cuda}"))
    return ("minor-version" if newer else "native"), None, None


def _links_to(b: Build, cuda: Dotted, jp: JetPack) -> bool:
    """Whether ``b`` (CUDA ``cuda``) runs on JetPack's CUDA: its major, and its very major.minor
    for a build that uses the system's CUDA."""
    return cuda.major == jp.cuda.major and (not b.system_cuda or cuda.prefix(2) == jp.cuda.prefix(2))


def _fit_amd(provider: Provider, b: Build, t: Target) -> No | None:
    """Why ROCm build ``b`` does not serve ``t``: the pinned ROCm, the kernel driver, the gfx targets."""
    if b.rocm is None:  # the loader refuses ROCm builds without a ROCm version
        return No("accelerator", f"{b.variant} names no ROCm version")
    return _off_pin(b.rocm, t.rocm, "ROCm") or _kmd(provider, b.rocm, t) or _gfx(provider, b, b.rocm, t)


def of_pin(version: Dotted | None, pin: Dotted | None) -> bool:
    """Whether a build of CUDA/ROCm ``version`` is of the target's pinned ``pin`` (``12`` or
    ``12.8``; any when there is no pin)."""
    return pin is None or (version is not None and version.prefix(2)[: len(pin.key[:2])] == pin.key[:2])


def _off_pin(version: Dotted, pin: Dotted | None, stack: str) -> No | None:
    """Why a build of CUDA/ROCm ``version`` is not of the target's pinned ``pin`` (``12`` or ``12.8``)."""
    if of_pin(version, pin):
        return None
    return No("pin", f"built for {stack} {version}, not the pinned {stack} {pin}")


def _kmd(provider: Provider, rocm: Dotted, t: Target) -> No | None:
    """Why the host's amdgpu kernel driver does not support ROCm ``rocm``'s user space."""
    kmd = provider.kmd(t.rocm_driver) if t.rocm_driver is not None else None
    user = "{}.{}".format(*rocm.prefix(2))
    if kmd is None or user in kmd.user:
        return None
    return No("driver", f"ROCm {user} user space is not supported on the amdgpu kernel driver of ROCm "
              f"{t.rocm_driver} (it supports {', '.join(kmd.user)})")


def _gfx(provider: Provider, b: Build, rocm: Dotted, t: Target) -> No | None:
    """Why a GPU of ``t`` gets no kernels from ``b``: the build is not compiled for its gfx target
    (listed, else its ROCm release's), or its ROCm release's libraries ship none for it (the
    target's support window, matrices/rocm.toml)."""
    row = provider.rocm_row(rocm)
    targets = b.gfx or (row.gfx if row else ())
    code = b if b.gfx else msgspec.structs.replace(b, gfx=targets)
    for gpu in t.gpus:
        if not serves(code, gpu.arch, native=True):
            return _not_compiled(provider, rocm, targets, gpu)
        if (no := _not_shipped(provider, rocm, row, gpu)) is not None:
            return no
    return None


def _not_compiled(provider: Provider, rocm: Dotted, targets: tuple[str, ...], gpu: GpuReq) -> No:
    """``b`` (ROCm ``rocm``, compiled for ``targets``) has no code for ``gpu``: told by the ROCm
    releases that support its target, when this ROCm is outside them (or none ever did)."""
    gfx, listed = gpu.arch.name, ", ".join(targets) or "no listed gfx target"
    window = provider.rocm_supporting(gfx)
    head = f"no kernels for {gpu_text(gpu)}: "
    if not window:
        never = f"{head}{gfx} was never a supported target of AMD's official ROCm releases"
        if provider.compiled_for(gfx):  # some builds carry it all the same (RX 7600 XT's gfx1102)
            return No("arch", f"{never}, and this build (ROCm {rocm}) is not compiled for it (compiled for {listed})")
        return No("arch", f"{never}, and no official framework build is compiled for it")
    first, last = window[0].version, window[-1].version
    if rocm.prefix(2) > last.prefix(2):
        return No("arch", f"{head}ROCm {last} was the last release to support {gfx}, "
                          f"and this build is ROCm {rocm}, not compiled for it")
    if rocm.prefix(2) < first.prefix(2):
        return No("arch", f"{head}{gfx} needs ROCm >= {first}; this build is ROCm {rocm} (compiled for {listed})")
    return No("arch", f"{head}compiled for {listed}")


def _not_shipped(provider: Provider, rocm: Dotted, row: Rocm | None, gpu: GpuReq) -> No | None:
    """Why ROCm ``rocm``'s libraries (rocBLAS) have no kernels for ``gpu`` although the framework
    build compiled its own: a release past the end of the target's window (or before its start);
    a ROCm newer than the data knows counts as past the end when the window closed before the
    newest known release."""
    gfx = gpu.arch.name
    if row is not None and gfx in row.shipped:
        return None
    window = provider.rocm_shipping(gfx)
    newest = provider.newest_rocm()
    if not window or newest is None:
        return None if row is None else No("arch", f"no kernels for {gpu_text(gpu)}: ROCm's libraries "
                                                   f"never shipped {gfx} kernels")
    last = window[-1].version
    if rocm.prefix(2) > last.prefix(2) and (row is not None or last.prefix(2) < newest.prefix(2)):
        return No("arch", f"no kernels for {gpu_text(gpu)}: ROCm {last} was the last release with {gfx} "
                          f"kernels in its libraries (rocBLAS); this build is ROCm {rocm}, which has none")
    if row is None:
        return None
    return No("arch", f"no kernels for {gpu_text(gpu)}: ROCm {rocm}'s libraries (rocBLAS) ship none for {gfx} "
                      f"(first in ROCm {window[0].version})")


def fit(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, rel: Release, b: Build) -> Candidate | No:
    """The candidate ``b`` makes for target ``t``, or why it makes none."""
    no = _accelerator(b, t) or _platform(provider, b, t)
    if no is not None:
        return no
    b = provider.for_platform(b, t.platform)
    pys = _pythons_on(provider, cache, spec, t, rel, b)
    if not pys:
        return _no_python(spec, rel, b)
    if (no := _glibc(provider, spec, b, t)) is not None:
        return no
    compat, driver_min, no = _fit_stack(provider, b, t)
    if no is not None:
        return no
    gap = compiler_on(provider, rel, [(x.arch, gpu_text(x)) for x in t.gpus]) if t.vendor == "nvidia" else ""
    if isinstance(gap, No):
        return gap
    if b.find_links:
        return _only_on_a_page(b, compat, driver_min)
    return Candidate(release=rel, build=b, pythons=pys, compat=compat, driver_min=driver_min,
                     jit=_jit(b, t), shared=provider.shared(rel, b), compiler_gap=gap)


def compiler_on(provider: Provider, rel: Release, gpus: Sequence[tuple[Arch, str]]) -> No | str:
    """What the compiler ``rel`` runs on the user's machine (compilers.toml) cannot do for NVIDIA
    GPUs given as (arch, how the message names it): :func:`fit` asks it of a target's GPUs and
    ``envsolve doctor`` of a host's. A GPU gets no code from the compiler when it is newer than the
    newest arch it targets, or is one of the archs below that it rejects, whatever PTX the wheel
    carries. Where every kernel is compiled so (XLA for JAX) the build does not serve the GPU (a
    refusal, code ``compiler``); where only some paths use it (torch.compile's Triton), what those
    paths cannot do, as a warning ("" when nothing is amiss)."""
    row = provider.compiler(rel)
    if row is None:
        return ""
    newest = parse_arch(row.newest_arch)
    beyond = [(arch, shown) for arch, shown in gpus if (arch.major, arch.minor) > (newest.major, newest.minor)
              or f"sm_{arch.major}{arch.minor}" in row.rejects]
    if not beyond:
        return ""
    gpus_text = ", ".join(shown for _, shown in beyond)
    first = beyond[0][0]
    seen = f" ({row.error.replace('{arch}', f'sm_{first.major}{first.minor}')})" if row.error else ""
    targets = f"archs up to {row.newest_arch}" + (f" except {', '.join(row.rejects)}" if row.rejects else "")
    if row.every_run:
        return No("compiler", f"{rel.package} {rel.raw} compiles its GPU kernels at run time with {row.compiler}, "
                              f"which targets {targets}, not {gpus_text}{seen}; PTX in the wheel does not help")
    return (f"{rel.package} {rel.raw}'s run-time compiler ({row.compiler}) targets {targets}, not {gpus_text}: "
            f"what it compiles fails there{seen}; the prebuilt kernels still run")


def _jit(b: Build, t: Target) -> tuple[str, ...]:
    """The archs of ``t``'s GPUs that ``b`` reaches only through PTX JIT (no SASS for them)."""
    return tuple(sorted({x.arch.name for x in t.gpus if kernels(b, x.arch) == "ptx"}))


def jit_note(c: Candidate) -> str:
    """What a build that reaches a GPU only through PTX (an XPU build: SPIR-V) JIT means for its
    user ("" for none): the driver compiles the kernels on the first run, which takes minutes, and warns."""
    if not c.jit or c.build is None:
        return c.compiler_gap
    if c.build.accelerator == "xpu":
        return (f"{c.label} has no AOT code for {', '.join(c.jit)} (compiled for {', '.join(c.build.xpu)}): Intel's "
                "driver JIT-compiles its SPIR-V on the first run, which can take minutes (cached by the driver)")
    ptx = ", ".join(_jit_ptx(c.build, a) for a in c.jit)
    return (f"{c.label} has no SASS for {', '.join(c.jit)}: the driver JIT-compiles its PTX ({ptx}), so the "
            "first run compiles its kernels, which can take minutes (cached in ~/.nv/ComputeCache; raise "
            "CUDA_CACHE_MAXSIZE for a large build), and warnings that it was not built for this GPU are "
            f"expected (the framework's own; its CUDA's ptxas: \"Value '{c.jit[-1]}' is not defined\", "
            "falling back to the driver)" + (f"; {c.compiler_gap}" if c.compiler_gap else ""))


def _jit_ptx(b: Build, arch: str) -> str:
    """``compute_80 -> sm_86``: the newest PTX of ``b`` that JIT-compiles for ``arch``."""
    gpu = parse_arch(arch)
    code = max((p for p in map(parse_arch, b.ptx) if p.ptx_jits_to(gpu)), key=lambda p: (p.major, p.minor))
    return f"{_ptx_name(code.name)} -> {arch}"


def _only_on_a_page(b: Build, compat: str, driver_min: Dotted | None) -> No:
    """``b`` would serve the target, but its wheels are only on a find-links page (JAX's own, for the
    jaxlib wheels before 0.4.23 but 0.4.13's CPU ones): envsolve locks builds of an index, so it says
    how to install it by hand."""
    runs = f"it would run (driver >= {driver_min}{_BY.get(compat, '')})" if driver_min else "it would run"
    pins = " ".join(f"{name}=={version}" for name, version in b.pins)
    install = " ".join(filter(None, (f"{b.package}=={b.raw}", pins)))
    return No("find-links", f"{runs}, but {pins or 'it'} is on no index, only on a find-links page (by hand: "
                            f"pip install {install} -f {b.find_links}; envsolve locks builds of an index)")


def _accelerator(b: Build, t: Target) -> No | None:
    """Why ``b`` is a build of another accelerator than the target's GPUs need."""
    wanted = ACCELERATOR[t.vendor]
    if b.accelerator == wanted:
        return None
    article = "an" if b.accelerator in _AN else "a"
    return No("accelerator", f"{b.variant} is {article} {STACK_NAME[b.accelerator]} build; {_NEED[wanted]}")


def _pythons_on(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, rel: Release,
                b: Build) -> frozenset[str]:
    """:func:`pythons`, narrowed to those of the build's wheel for the target's platform."""
    pys = pythons(cache, spec, rel, b)
    wheel = provider.platform_wheel(b, t.platform) if t.platform != DEFAULT_PLATFORM else None
    return pys & frozenset(wheel.python) if wheel is not None and wheel.python else pys


def _no_python(spec: ProjectSpec, rel: Release, b: Build) -> No:
    """The build has no wheel for the spec's Pythons (nor has a companion the spec asks for)."""
    bounded = [f"{c} {dict(rel.companions).get(c, '')} has {', '.join(ps)}".replace("  ", " ")
               for c, ps in rel.companion_python if spec.framework(c)]
    return No("python", f"has no wheel for Python {spec.python_raw} (it has {', '.join(b.python or rel.python)}"
                        + "".join(f"; {x}" for x in bounded) + ")")


def _fit_stack(provider: Provider, b: Build, t: Target) -> _Fit:
    """How ``b``'s CUDA or ROCm runs on ``t``: a Jetson's JetPack, an NVIDIA driver, an AMD driver."""
    jp = _jetpack(provider, t)
    if jp is None and t.vendor != "nvidia":
        return "", None, _fit_amd(provider, b, t) if t.vendor == "amd" else None
    if b.cuda is None:  # the loader refuses CUDA builds without a CUDA version
        return _refused(No("accelerator", f"{b.variant} names no CUDA version"))
    return _fit_jetson(provider, b, b.cuda, t, jp) if jp is not None else _fit_nvidia(provider, b, b.cuda, t)


def fit_drivers(provider: Provider, cache: Cache, spec: ProjectSpec, targets: Sequence[Target], rel: Release,
                b: Build) -> list[Candidate | No]:
    """:func:`fit` of ``b`` for each of ``targets``, which differ only in their driver (None: the
    newest branch that supports their GPUs): the checks that do not depend on the driver are made
    once, the driver's by the same rules as :func:`fit` (``envsolve site`` tables every driver)."""
    t = targets[0]
    if t.vendor != "nvidia" or t.jetpack is not None:
        return [fit(provider, cache, spec, x, rel, b) for x in targets]
    first = fit(provider, cache, spec, _with_any_driver(t), rel, b)
    if isinstance(first, No) and first.code == "find-links":  # refused after the driver is asked
        return [fit(provider, cache, spec, x, rel, b) for x in targets]
    if isinstance(first, No) or first.build is None or first.build.cuda is None:
        return [first] * len(targets)  # refused before the driver is asked, or no CUDA to run
    return _each_driver(provider, targets, first, first.build, first.build.cuda)


def _each_driver(provider: Provider, targets: Sequence[Target], first: Candidate, built: Build,
                 cuda: Dotted) -> list[Candidate | No]:
    """``first`` (the fit of ``built`` with any driver) for each target's driver: :func:`_driver`'s
    answer, one candidate for the drivers that agree."""
    t = targets[0]
    floors, ptx_only = _driver_floors(provider, built, cuda, t), _kernels(provider, built, cuda, t)
    assert not isinstance(floors, No) and not isinstance(ptx_only, No)  # the fit of ``first`` passed them
    out: list[Candidate | No] = []
    made: dict[tuple[str, Dotted | None], Candidate] = {}
    for x in targets:
        compat, driver_min, no = _driver(provider, cuda, x, *floors, ptx_only)
        if no is None and (compat, driver_min) not in made:
            made[compat, driver_min] = msgspec.structs.replace(first, compat=compat, driver_min=driver_min)
        out.append(no if no is not None else made[compat, driver_min])
    return out


_ANY_DRIVER = Dotted(key=(1_000_000,), raw="1000000")  # newer than any: every CUDA runs natively


@functools.lru_cache(maxsize=64)
def _with_any_driver(t: Target) -> Target:
    """``t`` with a driver newer than any (asked for every build of a table: made once)."""
    return msgspec.structs.replace(t, driver=_ANY_DRIVER)
