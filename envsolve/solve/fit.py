"""The fit rules: whether one build of a framework serves one target on its own.

* A build serves a GPU when it carries SASS for the GPU's major at a minor at or below the
  GPU's, or PTX at or below it (:func:`envsolve.domain.kernels`); PTX counts only when the
  driver runs the build's CUDA natively and that CUDA release knows the GPU. Every GPU of a
  target must be served by the same build.
* The driver runs the build's CUDA natively, or by minor-version compatibility within the
  major (never for PTX). A driver branch that dropped a GPU's generation cannot serve it.
* The build is published for the target's platform (matrices/platforms.toml). A Jetson runs
  the builds of its JetPack (linked against JetPack's own CUDA), or from JetPack 7 (SBSA) the
  linux/arm64 builds whose CUDA major is JetPack's; its driver comes with JetPack.
"""

from __future__ import annotations

from ..data import Build, JetPack, Release
from ..domain import ACCELERATOR, kernels
from ..provider import Provider
from ..spec import GpuReq, ProjectSpec, Target
from ..versions import Dotted
from .cache import Cache
from .model import Candidate, No

__all__ = ["fit", "gpu_driver_floor", "gpu_text", "pythons"]


def gpu_text(g: GpuReq) -> str:
    """``RTX 5090 (sm_120)``, or the bare arch when the user named one."""
    return f"{g.name} ({g.arch.name})" if g.name != g.arch.name else g.arch.name


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
    sass = ", ".join(b.archs) or "none"
    return f"{sass}" + (f"; PTX {', '.join(b.ptx)}" if b.ptx else "")


def gpu_driver_floor(g: Provider, gpu: GpuReq) -> Dotted | None:
    """The oldest driver that knows ``gpu``: the floor of the first CUDA toolkit targeting it."""
    first = g.introduced_by(gpu.arch)
    return first.driver_min if first else None


def _fit_nvidia(g: Provider, b: Build, t: Target) -> tuple[str, Dotted | None, No | None]:
    """(compat, driver_min, None) when ``b`` serves ``t``; else ("", None, why)."""
    if b.cuda is None:  # the loader refuses CUDA builds without a CUDA version
        return "", None, No("accelerator", f"{b.variant} names no CUDA version")
    if t.cuda is not None and b.cuda.prefix(2)[: len(t.cuda.key[:2])] != t.cuda.key[:2]:
        return "", None, No("pin", f"built for CUDA {b.cuda}, not the pinned CUDA {t.cuda}")
    floors = _driver_floors(g, b, b.cuda, t)
    if isinstance(floors, No):
        return "", None, floors
    ptx_only = _kernels(g, b, b.cuda, t)
    if isinstance(ptx_only, No):
        return "", None, ptx_only
    if (no := _cudnn(g, b, b.cuda, t, ptx_only)) is not None:
        return "", None, no
    return _driver(g, b.cuda, t, *floors, ptx_only)


def _driver_floors(g: Provider, b: Build, cuda: Dotted, t: Target) -> tuple[Dotted, Dotted | None] | No:
    """(native floor, minor-version floor) of the driver for ``b`` on ``t``: the toolkit's, raised
    by a floor the framework documents and by the first driver that knows each GPU."""
    native = g.native_driver_min(cuda)
    if native is None:
        return No("driver", f"CUDA {cuda} is not in matrices/cuda.toml, so its driver needs are unknown")
    major = g.cuda_major(cuda.major)
    floor = major.minor_compat_driver_min if major else None
    for extra in (b.driver_min, max((f for x in t.gpus if (f := gpu_driver_floor(g, x))), default=None)):
        if extra is not None:
            native = max(native, extra)
            floor = max(floor, extra) if floor else None
    return native, floor


def _kernels(g: Provider, b: Build, cuda: Dotted, t: Target) -> list[GpuReq] | No:
    """The GPUs of ``t`` that ``b`` serves only through PTX; or why one GPU gets no kernels."""
    ptx_only: list[GpuReq] = []
    for gpu in t.gpus:
        code = kernels(b, gpu.arch)
        if code == "sass":
            continue
        if not g.toolkit_knows(cuda, gpu.arch):
            first, last = g.first_toolkit_for(gpu.arch), g.last_toolkit_for(gpu.arch)
            if first is None or last is None:
                return No("arch", f"no CUDA release in the data targets {gpu_text(gpu)}")
            if last.version < cuda:
                return No("arch", f"no kernels for {gpu_text(gpu)}: CUDA {cuda} no longer targets "
                          f"{gpu.arch.name} (the last CUDA that does is {last.version})")
            need = "{}.{}".format(*first.version.prefix(2))
            return No("arch-cuda", f"no kernels for {gpu_text(gpu)}: {gpu.arch.name} needs CUDA >= {need}, "
                      f"and this build is CUDA {cuda} (compiled for {_archs_text(b)})", need)
        if code != "ptx":
            return No("arch", f"no kernels for {gpu_text(gpu)}: compiled for {_archs_text(b)}, "
                      f"none of which runs on {gpu.arch.name}")
        ptx_only.append(gpu)
    return ptx_only


def _cudnn(g: Provider, b: Build, cuda: Dotted, t: Target, ptx_only: list[GpuReq]) -> No | None:
    """Why the build's bundled cuDNN does not support a GPU of ``t`` (None when it does)."""
    row = g.cudnn_row(b.cudnn, cuda.major) if b.cudnn else None
    for gpu in t.gpus if row else ():
        assert row is not None
        if not any(a.sass_runs_on(gpu.arch) or (gpu in ptx_only and a.ptx_jits_to(gpu.arch)) for a in row.code):
            return No("cudnn", f"its cuDNN {b.cudnn} does not support {gpu_text(gpu)} "
                      f"(cuDNN {row.version} for CUDA {row.cuda_major} supports {', '.join(row.archs)})")
    return None


def _driver(g: Provider, cuda: Dotted, t: Target, native: Dotted, floor: Dotted | None,
            ptx_only: list[GpuReq]) -> tuple[str, Dotted | None, No | None]:
    """How the target's driver (or, with none given, the newest branch that still supports its
    GPUs) runs CUDA ``cuda``: natively, by minor-version compatibility (never for PTX), or not."""
    ptx_note = (f" ({', '.join(gpu_text(x) for x in ptx_only)} runs only through PTX JIT, which needs native support)"
                if ptx_only else "")
    if t.driver is not None:
        if t.driver >= native:
            return "native", native, None
        if floor is not None and t.driver >= floor and not ptx_only:
            return "minor-version", floor, None
        if floor is not None and t.driver >= floor:
            return "", None, No("driver", f"driver {t.driver} runs CUDA {cuda} only by minor-version "
                                f"compatibility; needs >= {native}{ptx_note}")
        alt = (f" (or >= {floor} by minor-version compatibility)"
               if floor is not None and floor < native and not ptx_only else "")
        return "", None, No("driver", f"driver {t.driver} is too old for CUDA {cuda}: needs >= {native}{alt}")
    families = {gpu.family for gpu in t.gpus}
    limit = g.newest_branch_for(families)
    if limit is None or native.major <= limit:
        return "native", native, None
    if floor is not None and floor.major <= limit and not ptx_only:
        return "minor-version", floor, None
    fam = ", ".join(sorted(f.capitalize() for f in families))
    return "", None, No("driver", f"{fam} GPUs are supported by drivers up to R{limit}, which cannot run "
                        f"CUDA {cuda} (needs >= {native}){ptx_note}")


def _platform(g: Provider, b: Build, t: Target) -> No | None:
    """Why ``b`` cannot run on ``t``'s platform or JetPack (None when it can)."""
    jp = g.jetpack(t.jetpack) if t.jetpack is not None else None
    if jp is not None and not jp.sbsa:
        if b.jetpack != str(jp.version.major):
            return No("platform", f"{b.variant} is not built for JetPack {jp.version.major}: a Jetson runs the "
                      f"builds of NVIDIA's Jetson index for its JetPack ({jp.version}, CUDA {jp.cuda})")
        return None
    if b.jetpack:
        return No("platform", f"{b.variant} is built for Jetson modules (JetPack {b.jetpack}) only")
    if not g.on_platform(b, t.platform):
        return No("platform", f"no {t.platform} wheel of this build (matrices/platforms.toml)")
    return None


def _fit_jetson(g: Provider, b: Build, t: Target, jp: JetPack) -> tuple[str, Dotted | None, No | None]:
    """A Jetson's CUDA is its JetPack's: a build linked against JetPack's CUDA needs that very
    major.minor; an SBSA build (JetPack 7) runs its major, newer minors by minor-version compatibility."""
    if b.cuda is None:
        return "", None, No("accelerator", f"{b.variant} names no CUDA version")
    if b.cuda.major != jp.cuda.major or (b.system_cuda and b.cuda.prefix(2) != jp.cuda.prefix(2)):
        return "", None, No("jetpack", f"built for CUDA {b.cuda}; JetPack {jp.version} brings CUDA {jp.cuda}")
    ptx_only = _kernels(g, b, b.cuda, t)
    if isinstance(ptx_only, No):
        return "", None, ptx_only
    if ptx_only and b.cuda.prefix(2) > jp.cuda.prefix(2):
        return "", None, No("jetpack", f"{', '.join(gpu_text(x) for x in ptx_only)} runs only through PTX JIT, "
                            f"which needs CUDA {b.cuda} natively; JetPack {jp.version} brings CUDA {jp.cuda}")
    return ("native" if b.cuda.prefix(2) <= jp.cuda.prefix(2) else "minor-version"), None, None


def _fit_amd(g: Provider, b: Build, t: Target) -> No | None:
    if b.rocm is None:  # the loader refuses ROCm builds without a ROCm version
        return No("accelerator", f"{b.variant} names no ROCm version")
    if t.rocm is not None and b.rocm.prefix(2)[: len(t.rocm.key[:2])] != t.rocm.key[:2]:
        return No("pin", f"built for ROCm {b.rocm}, not the pinned ROCm {t.rocm}")
    if t.rocm_driver is not None and (kmd := g.kmd(t.rocm_driver)) is not None:
        user = "{}.{}".format(*b.rocm.prefix(2))
        if user not in kmd.user:
            return No("driver", f"ROCm {user} user space is not supported on the amdgpu kernel driver of ROCm "
                      f"{t.rocm_driver} (it supports {', '.join(kmd.user)})")
    row = g.rocm_row(b.rocm)
    targets = b.gfx or (row.gfx if row else ())
    for gpu in t.gpus:
        if gpu.arch.name not in targets:
            listed = ", ".join(targets) or "no listed gfx target"
            return No("arch", f"no kernels for {gpu_text(gpu)}: compiled for {listed}")
    return None


def fit(g: Provider, cache: Cache, spec: ProjectSpec, t: Target, rel: Release, b: Build) -> Candidate | No:
    """The candidate ``b`` makes for target ``t``, or why it makes none."""
    wanted = ACCELERATOR[t.vendor]
    if b.accelerator != wanted:
        need = {"cuda": "NVIDIA GPUs need a CUDA build", "rocm": "AMD GPUs need a ROCm build",
                "cpu": "the target has no GPU"}[wanted]
        return No("accelerator", f"{b.variant} is a {b.accelerator.upper()} build; {need}")
    if (no := _platform(g, b, t)) is not None:
        return no
    b = g.for_platform(b, t.platform)
    pys = pythons(cache, spec, rel, b)
    if t.platform != "linux/amd64" and (w := g.platform_wheel(b, t.platform)) is not None and w.python:
        pys = pys & frozenset(w.python)
    if not pys:
        bounded = [f"{c} {dict(rel.companions).get(c, '')} has {', '.join(ps)}".replace("  ", " ")
                   for c, ps in rel.companion_python if spec.framework(c)]
        return No("python", f"has no wheel for Python {spec.python_raw} (it has {', '.join(b.python or rel.python)}"
                            + "".join(f"; {x}" for x in bounded) + ")")
    compat, dmin = "", None
    jp = g.jetpack(t.jetpack) if t.jetpack is not None else None
    if jp is not None:
        compat, dmin, no = _fit_jetson(g, b, t, jp)
    elif t.vendor == "nvidia":
        compat, dmin, no = _fit_nvidia(g, b, t)
    elif t.vendor == "amd":
        no = _fit_amd(g, b, t)
    else:
        no = None
    if no is not None:
        return no
    return Candidate(release=rel, build=b, pythons=pys, compat=compat, driver_min=dmin)
