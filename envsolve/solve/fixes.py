"""The nearest changes that make an unsatisfiable target solvable: each found by solving again
with one constraint relaxed at a time (a framework's range, the driver, the Python range, the
container OS, a CUDA or ROCm pin, one GPU), so every suggestion is itself a resolution the solver accepts.
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec
import msgspec.structs
from packaging.specifiers import SpecifierSet

from ..errors import Unsatisfiable
from ..provider import Provider
from ..spec import FrameworkReq, ProjectSpec, Target
from .cache import Cache
from .candidates import candidates
from .model import Reporter, Resolution
from .search import solve_target

__all__ = ["driver_fix_text", "nearest_fixes", "packages_text", "solve_explained",
           "version_fix_text"]


def _try(provider: Provider, spec: ProjectSpec, t: Target) -> Resolution | None:
    try:
        return solve_target(provider, spec, t)
    except Unsatisfiable:
        return None


def _variant(r: Resolution, name: str) -> str:
    pin = next((p for p in r.packages if p.name == name or p.name.startswith(name)), None)
    return f"{pin.name} {pin.version} {pin.variant}" if pin else ""


def _working_versions(provider: Provider, spec: ProjectSpec, t: Target, req: FrameworkReq) -> list[str]:
    """Releases of ``req`` (any version) with which the whole target resolves, oldest first."""
    loose = msgspec.structs.replace(req, specifier=SpecifierSet(), raw="*")
    fitting = sorted(candidates(provider, Cache(), spec, t, loose, Reporter()), key=lambda c: c.release.version)
    return [v for v in dict.fromkeys(c.release.raw for c in fitting)
            if _try(provider, _pinned_to(spec, req, v), t) is not None]


def _span(name: str, versions: list[str], newest: str) -> str:
    """``torch >= 2.7.0``, ``torch == 2.3.1`` or ``torch 2.0.0 .. 2.4.1``."""
    if versions[-1] == newest:
        return f"{name} >= {versions[0]}"
    if versions[0] == versions[-1]:
        return f"{name} == {versions[0]}"
    return f"{name} {versions[0]} .. {versions[-1]}"


def _lowest_driver(provider: Provider, spec: ProjectSpec, t: Target) -> tuple[str, Resolution] | None:
    """The oldest driver floor in the data, newer than the target's, with which it resolves."""
    newer = [floor for floor in provider.driver_floors(windows=t.windows_driver)
             if t.driver is None or floor > t.driver]
    tried = ((floor.raw, _try(provider, spec, msgspec.structs.replace(t, driver=floor))) for floor in newer)
    return next(((floor, r) for floor, r in tried if r is not None), None)


def _packages(r: Resolution) -> str:
    return ", ".join(f"{p.name} {p.version} {p.variant}" for p in r.packages)


def nearest_fixes(provider: Provider, spec: ProjectSpec, t: Target, limit: int = 4) -> list[str]:
    """Single changes to the spec that make target ``t`` solvable, most specific first."""
    fixes = [fix for req in spec.frameworks if (fix := _version_fix(provider, spec, t, req))]
    fixes += [fix for relax in _RELAXATIONS if (fix := relax(provider, spec, t))]
    fixes += _own_targets(provider, spec, t)
    return fixes[:limit]


def _pinned_to(spec: ProjectSpec, req: FrameworkReq, version: str) -> ProjectSpec:
    pin = msgspec.structs.replace(req, specifier=SpecifierSet(f"=={version}"), raw=f"=={version}")
    return msgspec.structs.replace(spec, frameworks=tuple(pin if f is req else f for f in spec.frameworks))


def _version_fix(provider: Provider, spec: ProjectSpec, t: Target, req: FrameworkReq) -> str:
    """The versions of a framework the spec narrows with which the target resolves."""
    if not req.specifier or not provider.releases(req.name):
        return ""
    versions = _working_versions(provider, spec, t, req)
    if not versions:
        return ""
    return version_fix_text(provider, req.name, versions, _try(provider, _pinned_to(spec, req, versions[-1]), t))


def version_fix_text(provider: Provider, name: str, versions: list[str], best: Resolution | None) -> str:
    """``torch >= 2.7.0 works (for example torch 2.9.1 cu128)``: the releases of ``name`` with which
    the target resolves (oldest first) and the resolution of the newest of them."""
    example = f" (for example {_variant(best, name)})" if best else ""
    return f"{_span(name, _newest_run(provider, name, versions), provider.releases(name)[0].raw)} works{example}"


def _newest_run(provider: Provider, name: str, versions: list[str]) -> list[str]:
    """The newest of ``versions`` with every release between them (oldest first): working releases
    need not be one run (torch 1.3 .. 1.5 reach an RTX 5090 by PTX JIT, 2.0 .. 2.6 do not), and
    a span tells one run only."""
    works, run = set(versions), []
    for release in provider.releases(name):  # newest first
        if release.raw in works:
            run.append(release.raw)
        elif run:
            break
    return run[::-1]


def _driver_fix(provider: Provider, spec: ProjectSpec, t: Target) -> str:
    low = _lowest_driver(provider, spec, t) if t.driver is not None else None
    if low is None:
        return ""
    drv, with_driver = low
    return driver_fix_text(drv, packages_text(with_driver))


def driver_fix_text(drv: str, packages: str) -> str:
    """``a driver >= 570.26 (R570 or newer; with it: torch 2.9.1 cu128)``: a driver and the
    packages (:func:`packages_text`) the target resolves to with it."""
    return f"a driver >= {drv} (R{drv.split('.')[0]} or newer; with it: {packages})"


def packages_text(r: Resolution) -> str:
    """``torch 2.9.1 cu128``: the packages of a resolution as the fixes tell them."""
    return _packages(r)


def _python_fix(provider: Provider, spec: ProjectSpec, t: Target) -> str:
    r = _try(provider, msgspec.structs.replace(spec, python=SpecifierSet(), python_raw="*"), t) if spec.python else None
    return f"Python {r.python} (with it: {_packages(r)})" if r is not None else ""


def _cuda_fix(provider: Provider, spec: ProjectSpec, t: Target) -> str:
    r = _try(provider, spec, msgspec.structs.replace(t, cuda=None)) if t.cuda is not None else None
    return f"drop the cuda = '{t.cuda}' pin (CUDA {r.cuda} works)" if r is not None else ""


def _rocm_fix(provider: Provider, spec: ProjectSpec, t: Target) -> str:
    r = _try(provider, spec, msgspec.structs.replace(t, rocm=None)) if t.rocm is not None else None
    return f"drop the rocm = '{t.rocm}' pin (ROCm {r.rocm} works)" if r is not None else ""


def _os_fix(provider: Provider, spec: ProjectSpec, t: Target) -> str:
    """A container OS whose glibc the wheels install on: the OS the target's image takes when
    none is asked (a manylinux_2_28 wheel does not install on Ubuntu 18.04's glibc 2.27)."""
    if not spec.os:
        return ""
    r = _try(provider, msgspec.structs.replace(spec, os=""), t)
    line = provider.image_line(r.base_image) if r is not None and r.base_image else None  # (row, flavour, OS)
    if r is None or line is None or line[2] == spec.os:
        return ""
    return f"[container] os = '{line[2]}' (with it: {_packages(r)})"


# the relaxations of one constraint each, in the order the fixes are told
_RELAXATIONS: tuple[Callable[[Provider, ProjectSpec, Target], str], ...] = (
    _driver_fix, _python_fix, _os_fix, _cuda_fix, _rocm_fix)


def _own_targets(provider: Provider, spec: ProjectSpec, t: Target) -> list[str]:
    """The GPUs without which a target of several resolves: each could have a target of its own."""
    if len(t.gpus) < 2:
        return []
    without = (msgspec.structs.replace(t, gpus=tuple(x for x in t.gpus if x is not gpu)) for gpu in t.gpus)
    return [f"serve {gpu.name} from a target of its own ([targets.NAME])"
            for gpu, rest in zip(t.gpus, without, strict=True) if _try(provider, spec, rest) is not None]


def solve_explained(provider: Provider, spec: ProjectSpec, reporter: Reporter | None = None) -> list[Resolution]:
    """Like :func:`~envsolve.solve.solve`, but an :class:`Unsatisfiable` carries nearest fixes."""
    out = []
    cache = Cache()
    for t in spec.targets:
        try:
            out.append(solve_target(provider, spec, t, reporter, cache))
        except Unsatisfiable as e:
            fixes = e.fixes or tuple(nearest_fixes(provider, spec, t))
            raise Unsatisfiable(e.target, e.clashes, fixes) from None
    return out
