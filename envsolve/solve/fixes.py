"""The nearest changes that make an unsatisfiable target solvable: each found by solving again
with one constraint relaxed at a time (a framework's range, the driver, the Python range, a CUDA
or ROCm pin, one GPU), so every suggestion is itself a resolution the solver accepts.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.specifiers import SpecifierSet

from ..errors import Unsatisfiable
from ..provider import Provider
from ..spec import FrameworkReq, ProjectSpec, Target
from .cache import Cache
from .candidates import candidates
from .model import Reporter, Resolution
from .search import solve_target

__all__ = ["nearest_fixes", "solve_explained"]


def _try(g: Provider, spec: ProjectSpec, t: Target) -> Resolution | None:
    try:
        return solve_target(g, spec, t)
    except Unsatisfiable:
        return None


def _variant(r: Resolution, name: str) -> str:
    pin = next((p for p in r.packages if p.name == name or p.name.startswith(name)), None)
    return f"{pin.name} {pin.version} {pin.variant}" if pin else ""


def _working_versions(g: Provider, spec: ProjectSpec, t: Target, req: FrameworkReq) -> list[str]:
    """Releases of ``req`` (any version) with which the whole target resolves, oldest first."""
    loose = replace(req, specifier=SpecifierSet(), raw="*")
    fitting = sorted(candidates(g, Cache(), spec, t, loose, Reporter()), key=lambda c: c.release.version)
    out = []
    for v in dict.fromkeys(c.release.raw for c in fitting):
        pinned = replace(req, specifier=SpecifierSet(f"=={v}"), raw=f"=={v}")
        trial = replace(spec, frameworks=tuple(pinned if f is req else f for f in spec.frameworks))
        if _try(g, trial, t) is not None:
            out.append(v)
    return out


def _span(name: str, versions: list[str], newest: str) -> str:
    """``torch >= 2.7.0``, ``torch == 2.3.1`` or ``torch 2.0.0 .. 2.4.1``."""
    if versions[-1] == newest:
        return f"{name} >= {versions[0]}"
    if versions[0] == versions[-1]:
        return f"{name} == {versions[0]}"
    return f"{name} {versions[0]} .. {versions[-1]}"


def _lowest_driver(g: Provider, spec: ProjectSpec, t: Target) -> tuple[str, Resolution] | None:
    """The oldest driver floor in the data, newer than the target's, with which it resolves."""
    floors = {tk.driver_min for tk in g.m.toolkits}
    floors |= {m.minor_compat_driver_min for m in g.m.cuda_majors if m.minor_compat_driver_min}
    for floor in sorted(floors):
        if t.driver is not None and floor <= t.driver:
            continue
        r = _try(g, spec, replace(t, driver=floor))
        if r is not None:
            return floor.raw, r
    return None


def _packages(r: Resolution) -> str:
    return ", ".join(f"{p.name} {p.version} {p.variant}" for p in r.packages)


def nearest_fixes(g: Provider, spec: ProjectSpec, t: Target, limit: int = 4) -> list[str]:
    """Single changes to the spec that make target ``t`` solvable, most specific first."""
    fixes: list[str] = []
    for req in spec.frameworks:
        if not req.specifier or not g.releases(req.name):
            continue
        versions = _working_versions(g, spec, t, req)
        if not versions:
            continue
        best = _try(g, replace(spec, frameworks=tuple(
            replace(req, specifier=SpecifierSet(f"=={versions[-1]}"), raw=f"=={versions[-1]}") if f is req else f
            for f in spec.frameworks)), t)
        example = f" (for example {_variant(best, req.name)})" if best else ""
        fixes.append(f"{_span(req.name, versions, g.releases(req.name)[0].raw)} works{example}")
    if t.driver is not None:
        low = _lowest_driver(g, spec, t)
        if low is not None:
            drv, with_driver = low
            fixes.append(f"a driver >= {drv} (R{drv.split('.')[0]} or newer; with it: {_packages(with_driver)})")
    if spec.python:
        r = _try(g, replace(spec, python=SpecifierSet(), python_raw="*"), t)
        if r is not None:
            fixes.append(f"Python {r.python} (with it: {_packages(r)})")
    if t.cuda is not None:
        r = _try(g, spec, replace(t, cuda=None))
        if r is not None:
            fixes.append(f"drop the cuda = '{t.cuda}' pin (CUDA {r.cuda} works)")
    if t.rocm is not None:
        r = _try(g, spec, replace(t, rocm=None))
        if r is not None:
            fixes.append(f"drop the rocm = '{t.rocm}' pin (ROCm {r.rocm} works)")
    if len(t.gpus) > 1:
        for gpu in t.gpus:
            rest = tuple(x for x in t.gpus if x is not gpu)
            if _try(g, spec, replace(t, gpus=rest)) is not None:
                fixes.append(f"serve {gpu.name} from a target of its own ([targets.NAME])")
    return fixes[:limit]


def solve_explained(g: Provider, spec: ProjectSpec, reporter: Reporter | None = None) -> list[Resolution]:
    """Like :func:`~envsolve.solve.solve`, but an :class:`Unsatisfiable` carries nearest fixes."""
    out = []
    cache = Cache()
    for t in spec.targets:
        try:
            out.append(solve_target(g, spec, t, reporter, cache))
        except Unsatisfiable as e:
            fixes = e.fixes or tuple(nearest_fixes(g, spec, t))
            raise Unsatisfiable(e.target, e.clashes, fixes) from None
    return out
