"""The project's own packages steer the compatibility solve.

``[packages] pip`` lines are read before the solve: for each, the newest release on the index that
the line admits (and that leaves the project's framework ranges and Python range something to
choose), its ``Requires-Dist`` on the frameworks the project names (``vllm==0.11.0`` asks
``torch==2.8.0``) and the Pythons it can install on (``Requires-Python`` and the cpXY tags of its
Linux wheels: ``scipy==1.11.4`` has wheels up to cp312). Those become extra ranges on the
spec, each remembering which package asked for it, so the solver's explanations can say so.

Pure: the index is read through a :class:`Reader` (``refresh.IndexClient`` in the command).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from . import index as ix
from .data import Release
from .domain import COMPANIONS, COMPANIONS_OF, FRAMEWORKS
from .spec import FrameworkReq, ProjectSpec
from .versions import parse_python_minor

__all__ = ["Reader", "Steer", "apply", "steer"]

_TRIES = 12  # releases of one package looked at, newest first, before taking the newest as is


@dataclass(frozen=True, kw_only=True, slots=True)
class Reader:
    """How the index is read: a project's files, and a release's core metadata (None if none)."""

    files: Callable[[str], tuple[ix.DistFile, ...]]
    metadata: Callable[[Sequence[ix.DistFile]], ix.Metadata | None]
    # the files read anew, for a line no release of ``files`` (a cached page) matches; None: no other
    fresh_files: Callable[[str], tuple[ix.DistFile, ...]] | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Steer:
    """What one ``[packages] pip`` line asks of the solve."""

    line: str  # as the user wrote it
    package: str  # the release read, "vllm==0.11.0"
    frameworks: tuple[tuple[str, str], ...]  # (framework, specifier) it requires
    pythons: tuple[str, ...]  # CPython minors it installs on; () when it says nothing
    unmanaged: tuple[tuple[str, str], ...] = ()  # framework names it pulls that the project does not name

    def notes(self) -> list[str]:
        out = [f"{self.package} asks {name} {spec or '(any version)'}" for name, spec in self.frameworks]
        if self.pythons:
            out.append(f"{self.package} installs on Python {_span(self.pythons)} only")
        return out


def _span(pythons: Sequence[str]) -> str:
    return pythons[0] if len(pythons) == 1 else f"{pythons[0]}-{pythons[-1]}"


def _managed(spec: ProjectSpec) -> set[str]:
    """Framework and companion names the project's solve chooses."""
    names = {f.name for f in spec.frameworks}
    return names | {c for n in names for c in COMPANIONS_OF.get(n, ())}


_MACHINE = {"linux/amd64": "x86_64", "linux/arm64": "aarch64"}


def _pythons(files: Sequence[ix.DistFile], known: Sequence[str], requires_python: str,
             platforms: Sequence[str]) -> tuple[str, ...]:
    """Pythons a release installs on from wheels alone, on every platform of the project's targets;
    for an sdist-only release, Requires-Python."""
    wheels = [f for f in files if f.filename.endswith(".whl")]
    if not wheels:
        return tuple(p for p in known if ix.admits(requires_python, p))
    each = [set(ix.cpython_minors(wheels, known, requires_python, _MACHINE.get(pl, "x86_64"))) for pl in platforms]
    both = set.intersection(*each) if each else set()
    return tuple(p for p in known if p in both)


def _owner_range(companion: str, raw: str, releases: Callable[[str], Sequence[Release]]) -> str:
    """A companion's range (``torchvision==0.23.0``) as its framework's (``torch>=2.8.0,<=2.8.0``):
    the span of the data's releases whose companion version it admits ("" when none does, which
    no release matches)."""
    want = SpecifierSet(raw)
    hits = sorted(r.version for r in releases(COMPANIONS[companion])
                  if (v := dict(r.companions).get(companion)) and want.contains(v, prereleases=True))
    if not hits:
        return "<0"
    return f"=={hits[0]}" if hits[0] == hits[-1] else f">={hits[0]},<={hits[-1]}"


def _choosable(spec: ProjectSpec, known: Sequence[str]) -> list[str]:
    """The Pythons the spec's range admits, from 3.9 on (the older ones only legacy releases have,
    and a package's floor below them changes no choice)."""
    return [p for p in known if parse_python_minor(p) >= (3, 9)
            and (spec.python.contains(f"{p}.0") or spec.python.contains(f"{p}.99"))]


def _fits(spec: ProjectSpec, frameworks: Sequence[tuple[str, str]], pythons: Sequence[str],
          releases: Callable[[str], Sequence[Release]]) -> bool:
    """Whether a release leaves the project's ranges something to choose."""
    if pythons and not any(spec.python.contains(f"{p}.0") or spec.python.contains(f"{p}.99") for p in pythons):
        return False
    for name, raw in frameworks:
        own = spec.framework(name)
        want = SpecifierSet(raw) & (own.specifier if own else SpecifierSet())
        if not any(want.contains(r.version, prereleases=True) for r in releases(name)):
            return False
    return True


def steer(spec: ProjectSpec, reader: Reader, known_pythons: Sequence[str],
          releases: Callable[[str], Sequence[Release]]) -> tuple[Steer, ...]:
    """What each ``[packages] pip`` line of ``spec`` asks; ``releases(name)`` are the data's releases
    of a framework. A companion's range is asked of its framework (``torchvision==0.23.0`` is
    ``torch==2.8.0``). Lines that are not plain requirements (URLs, options) ask nothing."""
    managed = _managed(spec)
    everything = set(FRAMEWORKS) | set(COMPANIONS)
    newest_python = max(known_pythons, key=parse_python_minor)
    platforms = sorted({t.platform or "linux/amd64" for t in spec.targets}) or ["linux/amd64"]
    out = []
    for line in spec.pip:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if req.url or name in everything:
            continue
        pre = bool(req.specifier.prereleases)
        by_version = ix.releases(reader.files(name), pre=pre)
        versions = [v for v in sorted(by_version, reverse=True) if req.specifier.contains(v, prereleases=True)]
        if not versions and reader.fresh_files is not None:  # released after the page was cached
            by_version = ix.releases(reader.fresh_files(name), pre=pre)
            versions = [v for v in sorted(by_version, reverse=True) if req.specifier.contains(v, prereleases=True)]
        first: Steer | None = None
        for v in versions[:_TRIES]:
            md = reader.metadata(by_version[v])
            rp = md.requires_python if md else ""
            pythons = _pythons(by_version[v], known_pythons, rp, platforms)
            if set(_choosable(spec, known_pythons)) <= set(pythons):
                pythons = ()  # every Python the solve could choose: no limit worth saying
            asks: dict[str, list[str]] = {}
            for extra in ("", *sorted(req.extras)):
                for r in ix.requirements(md, python=newest_python, extra=extra) if md else ():
                    if (dep := str(canonicalize_name(r.name))) in everything:
                        asks.setdefault(dep, []).append(str(r.specifier))
            ranges: dict[str, str] = {n: ",".join(s for s in specs if s) for n, specs in asks.items() if n in managed}
            for comp, raw in list(ranges.items()):
                if comp in COMPANIONS and raw:
                    owner = COMPANIONS[comp]
                    ranges[owner] = ",".join(x for x in (ranges.get(owner, ""), _owner_range(comp, raw, releases))
                                             if x)
                    del ranges[comp]
            frameworks = tuple(sorted((n, ",".join(dict.fromkeys(x for x in raw.split(",") if x)))
                                      for n, raw in ranges.items()))
            unmanaged = tuple(sorted((n, ",".join(s for s in specs if s)) for n, specs in asks.items()
                                     if n not in managed))
            found = Steer(line=line, package=f"{name}=={v}", frameworks=frameworks, pythons=pythons,
                          unmanaged=unmanaged)
            first = first or found
            if _fits(spec, frameworks, pythons, releases):
                first = found
                break
        if first is not None:
            out.append(first)
    return tuple(out)


def apply(spec: ProjectSpec, steers: Sequence[Steer]) -> ProjectSpec:
    """``spec`` with each steer's framework and Python ranges added (the ranges of both must hold)."""
    frameworks = []
    for f in spec.frameworks:
        asked = [(s.package, raw) for s in steers for n, raw in s.frameworks if n == f.name and raw]
        if not asked:
            frameworks.append(f)
            continue
        parts = ([] if f.raw.strip() in ("", "*") else [f.raw]) + [raw for _, raw in asked]
        raw = ",".join(parts)
        frameworks.append(FrameworkReq(name=f.name, specifier=SpecifierSet(raw), raw=raw, backend=f.backend,
                                       asked_by=", ".join(p for p, _ in asked)))
    python, python_raw = spec.python, spec.python_raw
    for s in steers:
        if s.pythons:
            bound = f">={s.pythons[0]},<{_next_minor(s.pythons[-1])}"
            python = python & SpecifierSet(bound)
            python_raw = bound if python_raw.strip() in ("", "*") else f"{python_raw},{bound}"
    return dataclasses.replace(spec, frameworks=tuple(frameworks), python=python, python_raw=python_raw)


def _next_minor(minor: str) -> str:
    major, m = parse_python_minor(minor)
    return f"{major}.{m + 1}"
