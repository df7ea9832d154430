"""A resolution from the chosen candidates: the Python every package supports, the CUDA/ROCm,
cuDNN and driver floor, the base image, and the packages to pin (with companions and the
conda-forge builds of the same versions)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import msgspec

from ..data import Build, Gpu
from ..domain import ACCELERATOR, DEFAULT_PLATFORM, LINUX_PLATFORMS, Accelerator
from ..provider import Provider
from ..spec import ProjectSpec, Target
from ..versions import Dotted, admits_any, parse_python_minor
from .cache import Cache
from .fit import gpu_families, jit_note
from .images import BaseImage, base_image, offers_os
from .model import Candidate, PackagePin, PythonWhy, Resolution

__all__ = ["FORWARD_NOTE", "METAL_NOTE", "base_image_of", "metal_note", "python_reason", "resolution"]


class _Stack(msgspec.Struct, frozen=True):
    """What the chosen builds need of the machine: the accelerator, CUDA/ROCm, cuDNN and driver."""

    accel: Accelerator
    cuda: Dotted | None
    rocm: Dotted | None
    cudnn: str
    driver_min: str
    compat: str  # forward, else minor-version, when a build runs so; native on NVIDIA; else ""
    system_cuda: bool  # a build uses the image's CUDA and cuDNN


def resolution(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, found: list[Candidate],
               backend: str) -> Resolution:
    """What the lock records of the chosen candidates: Python, CUDA/ROCm, driver, image, pins."""
    fixed = _fixed_shared(provider, cache, spec, t, found)
    image = _image(provider, cache, spec, t, fixed.stack, fixed.python)
    return _resolution(provider, t, found, backend, fixed, image)


class _Fixed(msgspec.Struct, frozen=True, kw_only=True):
    """What the chosen candidates fix whatever the base image: Python, the stack, the pins, the notes."""

    python: str
    python_why: PythonWhy
    stack: _Stack
    packages: tuple[PackagePin, ...]
    notes: tuple[str, ...]  # the choices resting on low-confidence rows or on the PTX JIT, an uncertain driver floor
    models: tuple[Gpu, ...]
    gpu_archs: tuple[str, ...]
    jit_archs: tuple[str, ...]  # the GPU archs a chosen build reaches only through PTX JIT
    tools: tuple[tuple[str, str], ...]


def _fixed_shared(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, found: list[Candidate]) -> _Fixed:
    """:func:`_fixed`, once per search answer: the cells of a matrix that differ only in the
    image's OS or flavour share their search's ``found`` list (the search's own cache keys it by
    the Python range, the frameworks and the target), so they share this too (a CPU
    environment's Python looks at the OS's python images). The entry holds ``found`` itself, so
    its ``id`` names no other list while the entry lives."""
    key = (id(found), spec.os if t.vendor == "cpu" else "")
    table = cache.table("resolution parts")
    entry = table.get(key)
    if entry is None or entry[0] is not found:
        entry = table[key] = (found, _fixed(provider, cache, spec, t, found))
    return entry[1]


def _fixed(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, found: list[Candidate]) -> _Fixed:
    python, why = _python(provider, cache, spec, t, found)
    stack = _stack(t, found)
    packages = [pin for c in found for pin in _pins(provider, spec, t, c, python, stack.accel)]
    low = [f"{c.label} rests on data marked confidence = low" for c in found if _rests_on_low(c)]
    jit = [jit_note(c) for c in found]
    return _Fixed(python=python, python_why=why, stack=stack, packages=tuple(sorted(packages, key=lambda p: p.name)),
                  notes=tuple(filter(None, (*low, *jit, _floor_note(provider, stack), _forward_note(provider, stack)))),
                  models=_models(provider, t),
                  gpu_archs=tuple(sorted({x.arch.name for x in t.gpus})),
                  jit_archs=tuple(sorted({a for c in found for a in c.jit})),
                  tools=provider.tools())


def base_image_of(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, r: Resolution) -> str:
    """The base image :func:`resolution` gives ``r``'s choices on target ``t`` (``t`` differing from
    ``r``'s own target in its driver only: ``envsolve site`` resolves once for every driver)."""
    found = list(r.choices)
    return _image(provider, cache, spec, t, _stack(t, found), r.python)[0]


def _resolution(provider: Provider, t: Target, found: list[Candidate], backend: str, fixed: _Fixed,
                image: BaseImage) -> Resolution:
    """The one place a :class:`Resolution` is made."""
    ref, image_note, image_os, image_python = image
    python, python_why, stack = fixed.python, fixed.python_why, fixed.stack
    return Resolution(
        target=t,
        accelerator=stack.accel,
        platform=t.platform,
        jetpack=_raw(t.jetpack),
        python=python,
        python_why=python_why,
        cuda=_raw(stack.cuda),
        rocm=_raw(stack.rocm),
        cudnn=stack.cudnn,
        driver_min=stack.driver_min,
        compat=stack.compat,
        gpu_archs=fixed.gpu_archs,
        jit_archs=fixed.jit_archs,
        gpus=tuple(x.name for x in t.gpus),
        base_image=ref,
        python_from=_python_from(provider, image, python),
        keras_backend=backend,
        packages=fixed.packages,
        models=fixed.models,
        tools=fixed.tools,
        warnings=(image_note, *fixed.notes) if image_note else fixed.notes,
        choices=tuple(found),
    )


def _raw(version: Dotted | None) -> str:
    """A version as written ("" for none)."""
    return version.raw if version is not None else ""


def _models(provider: Provider, t: Target) -> tuple[Gpu, ...]:
    """The records of the target's GPU models (aliases, peak TFLOP/s); none for a bare arch."""
    return tuple(m for x in t.gpus if (m := provider.gpu(x.name)) is not None)


def _python(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, found: list[Candidate]
            ) -> tuple[str, PythonWhy]:
    """The newest Python every chosen package supports (for CPU, one with a python image if any),
    and why that one (see :attr:`Resolution.python_why`)."""
    pythons = _shared_pythons(provider, cache, spec, found)
    newest = max(pythons, key=parse_python_minor) if pythons else ""
    why: PythonWhy = "frameworks" if found else "data"
    if t.vendor != "cpu" or t.platform not in LINUX_PLATFORMS:
        return newest, why
    imaged = max(_with_python_image(provider, spec, pythons), key=parse_python_minor, default="")
    return imaged, _WITH_IMAGE[why] if imaged != newest else why


def python_reason(r: Resolution, asked: str, bounded_by: Sequence[str] = ()) -> str:
    """Why ``r`` has its Python, in words: ``the newest every framework supports; set [project]
    python to choose``. ``asked`` is the spec's ``[project] python`` as written ("*" when not
    given), ``bounded_by`` the ``[packages] pip`` packages whose Pythons narrowed the choice."""
    within = "" if admits_any(asked) else f" in [project] python '{asked}'"
    installs = f" that {' and '.join(bounded_by)} install{'s' if len(bounded_by) == 1 else ''} on" if bounded_by else ""
    hint = "; set [project] python to choose" if admits_any(asked) else ""
    return f"the newest{within} {_WHY[r.python_why]}{installs}{hint}"


_WHY: dict[PythonWhy, str] = {
    "frameworks": "every framework supports",
    "frameworks-image": "every framework supports with a python image",
    "data": "envsolve's data knows",
    "data-image": "envsolve's data knows with a python image",
}
_WITH_IMAGE: dict[PythonWhy, PythonWhy] = {"frameworks": "frameworks-image", "data": "data-image"}


def _shared_pythons(provider: Provider, cache: Cache, spec: ProjectSpec, found: list[Candidate]) -> frozenset[str]:
    """The Pythons every candidate has; with none chosen, those of the data the spec's range admits."""
    if found:
        return frozenset.intersection(*(c.pythons for c in found))
    return frozenset(p for p in provider.pythons() if p in cache.pythons(spec.python_raw, (p,)))


def _with_python_image(provider: Provider, spec: ProjectSpec, pythons: frozenset[str]) -> frozenset[str]:
    """A CPU environment runs on a python image: prefer a Python that has one (of the asked OS)."""
    python_images = [i for i in provider.images("cpu") if i.python]
    if not offers_os(python_images, spec.os):
        return pythons
    return (pythons & {i.python for i in python_images}) or pythons


def _stack(t: Target, found: list[Candidate]) -> _Stack:
    builds = [c.build for c in found if c.build]
    return _Stack(
        accel=ACCELERATOR[t.vendor],
        cuda=_newest(b.cuda for b in builds),
        rocm=_newest(b.rocm for b in builds),
        cudnn=next(filter(None, (b.cudnn for b in builds)), ""),
        driver_min=_driver_min(found),
        compat=_compat(t, found),
        system_cuda=any(b.system_cuda for b in builds),
    )


def _newest(versions: Iterable[Dotted | None]) -> Dotted | None:
    return max(filter(None, versions), default=None)


def _driver_min(found: list[Candidate]) -> str:
    """The highest driver floor of the chosen builds ("" when none has one)."""
    return _raw(_newest(c.driver_min for c in found))


def _compat(t: Target, found: list[Candidate]) -> str:
    """How the target's driver runs the environment's CUDA: by forward compatibility when a build
    needs it (the image's cuda-compat then serves every build), else by minor-version
    compatibility when a build runs so, else natively."""
    for compat in ("forward", "minor-version"):
        if any(c.compat == compat for c in found):
            return compat
    return "native" if t.vendor == "nvidia" else ""


def _image(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, stack: _Stack, python: str) -> BaseImage:
    """:func:`~envsolve.solve.images.base_image`, once per question (cells of a matrix share it)."""
    version = stack.cuda or stack.rocm
    key = (stack.accel, _raw(version), python, stack.compat, spec.os, spec.flavor, stack.system_cuda,
           _image_target(cache, t))
    images = cache.table("images")
    if key not in images:
        images[key] = base_image(provider, spec, t, stack.accel, version, python, stack.compat,
                                 needs_cudnn=stack.system_cuda)
    return images[key]  # type: ignore[no-any-return]


def _image_target(cache: Cache, t: Target) -> tuple[str, frozenset[str], str, str]:
    """What of a target chooses its base image: the driver, the GPU families, the platform and the
    JetPack (targets of other GPUs of the same families share their images), once per target."""
    table = cache.table("image targets")
    if t not in table:
        table[t] = (_raw(t.driver), frozenset(gpu_families(t)), t.platform, _raw(t.jetpack))
    return table[t]  # type: ignore[no-any-return]


def _python_from(provider: Provider, image: BaseImage, python: str) -> str:
    """How the image gets the locked Python: the python image's own, the OS's python3, or a pinned uv."""
    ref, _, image_os, image_python = image
    if image_python:
        return "image"
    return "os" if ref and provider.os_python(image_os) == python else "uv"


def _floor_note(provider: Provider, stack: _Stack) -> str:
    """Why the native driver floor is uncertain, when the environment runs its CUDA natively."""
    if stack.cuda is None or stack.compat != "native":
        return ""
    return provider.driver_floor_note(stack.cuda)


FORWARD_NOTE = "forward compatibility"  # how the note of :func:`_forward_note` begins (explain shows it)


def _forward_note(provider: Provider, stack: _Stack) -> str:
    """What forward compatibility costs and needs, when the environment runs its CUDA so: the
    cuda-compat package in the image, data-center GPUs, the driver branches it supports, Linux,
    a new lock when the host's driver changes branch, no graphics interop."""
    row = provider.cuda_compat(stack.cuda) if stack.cuda is not None and stack.compat == "forward" else None
    if row is None or stack.cuda is None:
        return ""
    cuda = "{}.{}".format(*stack.cuda.prefix(2))
    branch = stack.driver_min.split(".")[0]
    return (f"{FORWARD_NOTE}: the R{branch} driver runs CUDA {cuda} through {row.package}, which the image installs "
            f"from NVIDIA's CUDA repository (CUDA {cuda}'s user-mode driver in /usr/local/cuda-{cuda}/compat, first on "
            f"LD_LIBRARY_PATH); it serves data-center GPUs only, on drivers of {row.branches_text}, on Linux (not "
            "WSL2); on a driver of another branch the image can fail (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803): lock "
            "again when the driver changes branch; CUDA-OpenGL/Vulkan interop does not work")


METAL_NOTE = "Apple's Metal plugin"  # how the warning of :func:`metal_note` begins (explain shows it)


def metal_note(behind: Sequence[tuple[Candidate, Candidate]]) -> str:
    """The warning of a Mac target whose Metal builds (each with the newer CPU build of the same
    framework) are older than its CPU builds: both versions, and how the spec chooses."""
    one = len(behind) == 1
    gpu = " and ".join(f"{c.label[:-1]}, with {_plugins(c)})" for c, _ in behind)
    cpu = " and ".join(n.label for _, n in behind)
    s = "" if one else "s"
    return (f"{METAL_NOTE}{s} hold{'s' if one else ''} {' and '.join(c.package for c, _ in behind)} back: the Apple "
            f"GPU gets {gpu}, the Mac's CPU would get {cpu}. Set [hardware] accelerator = 'cpu' for the newer CPU "
            f"build{s}, or accelerator = 'mps' to keep the Metal build{s} (and silence this warning)")


def _plugins(c: Candidate) -> str:
    """``jax-metal 0.1.1``: the plugins a build installs beside it."""
    return " and ".join(f"{name} {version}" for name, version in (c.build.plugins if c.build else ()))


def _rests_on_low(c: Candidate) -> bool:
    return c.release.confidence == "low" or (c.build is not None and c.build.confidence == "low")


def _pins(provider: Provider, spec: ProjectSpec, t: Target, c: Candidate, python: str,
          accel: Accelerator) -> list[PackagePin]:
    """The pin of a chosen candidate, of each companion the spec asks for (same build), and of each
    plugin its build installs beside it (jax-metal: the default index's, pure pins)."""
    b = c.build
    own = _pin(_dist_name(provider, t, c), _dist_version(c), b, extra=b.extra if b else "",
               conda=_conda(provider, spec, c, python, accel) if t.platform in LINUX_PLATFORMS else (), pins=c.pins)
    plugins = [_pin(name, version, None) for name, version in (b.plugins if b else ())]  # the default index's
    return [own, *(_pin(comp, version, b) for comp, version in c.release.companions
                  if spec.framework(comp) is not None), *plugins]


def _pin(name: str, version: str, b: Build | None, *, extra: str = "", conda: tuple[str, ...] = (),
         pins: tuple[tuple[str, str], ...] = ()) -> PackagePin:
    """The one place a :class:`PackagePin` is made: ``name`` at ``version`` from build ``b``'s index."""
    return PackagePin(name=name, version=version, variant=b.variant if b else "any", index=b.index if b else "pypi",
                      index_path=b.index_path if b else "", extra=extra, conda=conda, pins=pins)


def _dist_name(provider: Provider, t: Target, c: Candidate) -> str:
    """The distribution that installs ``c`` on the target's platform (nvidia-tensorflow, ...)."""
    b = c.build
    if b is None:
        return c.package
    on = provider.platform_wheel(b, t.platform) if t.platform != DEFAULT_PLATFORM else None
    return (on.dist if on else "") or b.dist or c.package


def _dist_version(c: Candidate) -> str:
    return c.build.dist_version if c.build and c.build.dist_version else c.release.raw


def _conda(provider: Provider, spec: ProjectSpec, c: Candidate, python: str, accel: Accelerator) -> tuple[str, ...]:
    """conda-forge's MatchSpecs of ``c``'s build (linux-64's and linux-aarch64's, as matrices/conda.toml
    reads them; none off Linux); none for ROCm, XPU or MPS, or when the spec asks for a companion
    (then pip installs it)."""
    if accel in ("rocm", "xpu", "mps") or any(spec.framework(comp) for comp, _ in c.release.companions):
        return ()
    return provider.conda_specs(c.release, c.build.cuda if c.build else None, python)
