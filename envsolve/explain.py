"""Why a spec resolved as it did, and the nearest change that works when it did not.

Nearest changes are found by solving again with one constraint relaxed at a time (a
framework's version range, the driver, the Python range, a CUDA or ROCm pin, one GPU), so
every suggestion is itself a resolution the solver accepts.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.specifiers import SpecifierSet

from .errors import Unsatisfiable
from .graph import CompatGraph
from .solve import Reporter, Resolution, candidates, solve_target
from .spec import FrameworkReq, ProjectSpec, Target

__all__ = ["ExplainReporter", "nearest_fixes", "solve_explained"]


def _try(g: CompatGraph, spec: ProjectSpec, t: Target) -> Resolution | None:
    try:
        return solve_target(g, spec, t)
    except Unsatisfiable:
        return None


def _variant(r: Resolution, name: str) -> str:
    pin = next((p for p in r.packages if p.name == name or p.name.startswith(name)), None)
    return f"{pin.name} {pin.version} {pin.variant}" if pin else ""


def _lowest_working(g: CompatGraph, spec: ProjectSpec, t: Target, req: FrameworkReq) -> str | None:
    """The oldest release of ``req`` with which the whole target resolves."""
    versions = sorted({c.release.raw for c in candidates(g, spec, t, req, Reporter())},
                      key=lambda v: [c.release.version for c in candidates(g, spec, t, req, Reporter())
                                     if c.release.raw == v][0])
    for v in versions:
        pinned = replace(req, specifier=SpecifierSet(f"=={v}"), raw=f"=={v}")
        trial = replace(spec, frameworks=tuple(pinned if f.name == req.name else f for f in spec.frameworks))
        if _try(g, trial, t) is not None:
            return v
    return None


def nearest_fixes(g: CompatGraph, spec: ProjectSpec, t: Target, limit: int = 4) -> list[str]:
    """Single changes to the spec that make target ``t`` solvable, most specific first."""
    fixes: list[str] = []
    for req in spec.frameworks:
        if not req.specifier:
            continue
        loose = replace(req, specifier=SpecifierSet(), raw="*")
        relaxed = replace(spec, frameworks=tuple(loose if f is req else f for f in spec.frameworks))
        r = _try(g, relaxed, t)
        if r is None:
            continue
        low = _lowest_working(g, relaxed, t, loose)
        example = _variant(r, req.name)
        span = f"{req.name} >= {low}" if low is not None else req.name
        fixes.append(f"{span} works (for example {example})" if example else f"{span} works")
    if t.driver is not None:
        r = _try(g, spec, replace(t, driver=None))
        if r is not None and r.driver_min:
            fixes.append(f"a driver >= {r.driver_min} (R{r.driver_min.split('.')[0]} or newer)")
    if spec.python:
        r = _try(g, replace(spec, python=SpecifierSet(), python_raw="*"), t)
        if r is not None:
            fixes.append(f"Python {r.python}")
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


def solve_explained(g: CompatGraph, spec: ProjectSpec, reporter: Reporter | None = None) -> list[Resolution]:
    """Like :func:`~envsolve.solve.solve`, but an :class:`Unsatisfiable` carries nearest fixes."""
    out = []
    for t in spec.targets:
        try:
            out.append(solve_target(g, spec, t, reporter))
        except Unsatisfiable as e:
            fixes = e.fixes or tuple(nearest_fixes(g, spec, t))
            raise Unsatisfiable(e.target, e.clashes, fixes) from None
    return out


class ExplainReporter(Reporter):
    """Collects every decision for ``envsolve explain``."""

    def __init__(self) -> None:
        self.lines: dict[str, list[tuple[str, str, str]]] = {}

    def chosen(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("chose", subject, reason))

    def rejected(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("rejected", subject, reason))

    def render(self, resolutions: list[Resolution], verbose: bool = False, per_target: int = 12) -> str:
        """Readable text: each target's choices, then the alternatives rejected and why."""
        out: list[str] = []
        for r in resolutions:
            t = r.target
            hw = ", ".join(f"{x.name} ({x.arch.name})" if x.name != x.arch.name else x.name
                           for x in t.gpus) or "CPU only"
            drv = f", driver {t.driver}" if t.driver else ""
            out.append(f"target {t.name}: {hw}{drv}")
            entries = self.lines.get(t.name, [])
            for kind, subject, reason in entries:
                if kind == "chose":
                    out.append(f"  chose {subject}: {reason}")
            out.append(f"  python {r.python}: the newest Python every chosen package supports")
            if r.compat:
                out.append(f"  driver >= {r.driver_min} ({r.compat} support of CUDA {r.cuda})")
            out.append(f"  base image {r.base_image}")
            rejected = [(s, why) for k, s, why in entries if k == "rejected"]
            if rejected:
                shown = rejected if verbose else rejected[:per_target]
                out.append(f"  rejected ({len(rejected)}):")
                out += [f"    {s}: {why}" for s, why in shown]
                if len(shown) < len(rejected):
                    out.append(f"    ... {len(rejected) - len(shown)} more (--all shows every one)")
        return "\n".join(out) + "\n"
