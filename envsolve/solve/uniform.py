"""One framework version across a fleet: the newest release of each framework that every target
can run, when the project asks for it (``[project] same-versions = true`` or ``lock --same-versions``),
and the previous lock's versions kept when a re-lock allows it (``lock --upgrade-package``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NoReturn

import msgspec
import msgspec.structs
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from ..domain import COMPANIONS
from ..errors import Clash, Unsatisfiable
from ..provider import Provider
from ..spec import FrameworkReq, ProjectSpec
from ..versions import admits_any
from .cache import Cache
from .fixes import solve_explained
from .model import Reporter, Resolution
from .search import solve_target

__all__ = ["pinned", "solve_preferring", "solve_uniform"]


def pinned(spec: ProjectSpec, pins: Mapping[str, str]) -> ProjectSpec:
    """``spec`` with each framework of ``pins`` narrowed to ``==version`` (its range kept too)."""
    out = []
    for f in spec.frameworks:
        if f.name in pins:
            raw = f"=={pins[f.name]}" if admits_any(f.raw) else f"{f.raw},=={pins[f.name]}"
            f = FrameworkReq(name=f.name, specifier=SpecifierSet(raw), raw=raw, backend=f.backend,
                             asked_by=f.asked_by)
        out.append(f)
    return msgspec.structs.replace(spec, frameworks=tuple(out))


def _all_solve(provider: Provider, spec: ProjectSpec, cache: Cache) -> list[Resolution] | None:
    try:
        return [solve_target(provider, spec, t, None, cache) for t in spec.targets]
    except Unsatisfiable:
        return None


def solve_uniform(provider: Provider, spec: ProjectSpec, reporter: Reporter | None = None) -> list[Resolution]:
    """Every target solved with the same version of each framework: per framework in the spec's
    order, the newest release in range with which all targets still solve."""
    first = solve_explained(provider, spec, reporter)  # each target alone must work; its errors say why
    cache = Cache()
    fixed: dict[str, str] = {}
    for f in spec.frameworks:
        if f.name not in COMPANIONS:  # a companion follows its framework
            version = _agreed(provider, spec, cache, fixed, f, first)
            fixed.update({f.name: version} if version else {})
    return solve_explained(provider, pinned(spec, fixed), reporter)


def _agreed(provider: Provider, spec: ProjectSpec, cache: Cache, fixed: dict[str, str], f: FrameworkReq,
            first: list[Resolution]) -> str:
    """The version of ``f`` every target runs (with the versions ``fixed`` so far): the one all
    chose alone, else the newest release, no newer than the oldest chosen, with which all solve."""
    chosen = {r.target.name: p.version for r in first for p in r.packages if p.name == f.name}
    if len(set(chosen.values())) <= 1:
        return next(iter(chosen.values()), "")
    newest_needed = min(Version(v) for v in chosen.values())  # each target took its newest
    return _newest_for_all(provider, spec, cache, fixed, f, newest_needed) or _no_agreement(f, chosen)


def _newest_for_all(provider: Provider, spec: ProjectSpec, cache: Cache, fixed: dict[str, str], f: FrameworkReq,
                    newest_needed: Version) -> str:
    """The newest release of ``f`` in range, no newer than ``newest_needed``, with which every target
    solves (with the versions ``fixed`` so far); "" when none does."""
    for rel in provider.releases(f.name):
        in_range = rel.version <= newest_needed and f.specifier.contains(rel.version, prereleases=True)
        if in_range and _all_solve(provider, pinned(spec, {**fixed, f.name: rel.raw}), cache) is not None:
            return rel.raw
    return ""


def _no_agreement(f: FrameworkReq, chosen: dict[str, str]) -> NoReturn:
    """No release of ``f`` runs on every target (each target's own choice told)."""
    each = ", ".join(f"{t} gets {v}" for t, v in sorted(chosen.items()))
    raise Unsatisfiable("(all)", [Clash(subject=f"{f.name} {f.raw} (same-versions)",
                                        reason=f"no release runs on every target ({each} alone)")],
                        ("drop same-versions, or split the fleet into projects",))


def _keep(spec: ProjectSpec, previous: Mapping[str, str]) -> dict[str, str]:
    """The previous versions the spec's ranges still admit (companions follow their framework)."""
    return {f.name: previous[f.name] for f in spec.frameworks
            if f.name in previous and f.name not in COMPANIONS
            and f.specifier.contains(previous[f.name], prereleases=True)}


def _kept(provider: Provider, spec: ProjectSpec, previous: Mapping[str, str], cache: Cache) -> ProjectSpec:
    """``spec`` pinned to the ``previous`` versions it admits, when every target still solves so."""
    keep = _keep(spec, previous)
    if keep and _all_solve(provider, pinned(spec, keep), cache) is not None:
        return pinned(spec, keep)
    return spec


def _common(spec: ProjectSpec, previous: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The previous versions every target of ``spec`` had."""
    agreed = [dict(previous.get(t.name, {})) for t in spec.targets]
    return {k: v for k, v in agreed[0].items() if all(a.get(k) == v for a in agreed)} if agreed else {}


def solve_preferring(provider: Provider, spec: ProjectSpec, previous: Mapping[str, Mapping[str, str]],
                     reporter: Reporter | None = None, *, uniform: bool = False) -> list[Resolution]:
    """The solve keeping each target's ``previous`` framework versions (target -> framework ->
    version, from the lock on disk) where the spec's ranges still admit them and the target
    still solves; the others take the plain solve's answer."""
    cache = Cache()
    if uniform:
        return solve_uniform(provider, _kept(provider, spec, _common(spec, previous), cache), reporter)
    out = []
    for t in spec.targets:
        one = _kept(provider, msgspec.structs.replace(spec, targets=(t,)), previous.get(t.name, {}), cache)
        out += solve_explained(provider, one, reporter)
    return out
