"""The project's own packages steer the compatibility solve.

``[packages] pip`` lines are read before the solve: for each, the newest release on the index that
the line admits (and that leaves the project's framework ranges and Python range something to
choose), its ``Requires-Dist`` on the frameworks the project names (``vllm==0.11.0`` asks
``torch==2.8.0``) and the Pythons it can install on (``Requires-Python`` and the cpXY tags of its
wheels for the targets' platforms: ``scipy==1.11.4`` has wheels up to cp312), its markers evaluated
for each target's platform (index.metadata.marker_environment: domain.MARKERS). Those become extra ranges on the
spec, each remembering which package asked for it, so the solver's explanations can say so.

Pure: the index is read through an :class:`envsolve.index.reader.Reader` (``IndexClient`` in the command).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import msgspec
import msgspec.structs
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from ..data import Release
from ..domain import COMPANIONS, COMPANIONS_OF, DEFAULT_PLATFORM, FRAMEWORKS, PLATFORMS, Platform
from ..index import pages as ix
from ..index.metadata import Metadata, requirements
from ..index.reader import Reader
from ..spec import ProjectSpec
from ..versions import parse_python_minor, python_admits_minor
from .asks import Steer

__all__ = ["steer"]

_TRIES = 12  # releases of one package looked at, newest first, before taking the newest as is


def _managed(spec: ProjectSpec) -> set[str]:
    """Framework and companion names the project's solve chooses."""
    names = {f.name for f in spec.frameworks}
    return names | {c for n in names for c in COMPANIONS_OF.get(n, ())}


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
            and python_admits_minor(spec.python, p)]


def _has_release(spec: ProjectSpec, name: str, raw: str, releases: Callable[[str], Sequence[Release]]) -> bool:
    """Whether a release of framework ``name`` is in both ``raw`` and the project's own range."""
    own = spec.framework(name)
    want = SpecifierSet(raw) & (own.specifier if own else SpecifierSet())
    return any(want.contains(r.version, prereleases=True) for r in releases(name))


def _fits(spec: ProjectSpec, frameworks: Sequence[tuple[str, str]], pythons: Sequence[str],
          releases: Callable[[str], Sequence[Release]]) -> bool:
    """Whether a release leaves the project's ranges something to choose."""
    if pythons and not any(python_admits_minor(spec.python, p) for p in pythons):
        return False
    return all(_has_release(spec, name, raw, releases) for name, raw in frameworks)


def _matching(files: tuple[ix.DistFile, ...], req: Requirement) -> dict[Version, tuple[ix.DistFile, ...]]:
    """The releases among ``files`` that ``req`` admits, newest first."""
    by_version = ix.releases(files, pre=bool(req.specifier.prereleases))
    return {v: by_version[v] for v in sorted(by_version, reverse=True) if req.specifier.contains(v, prereleases=True)}


def _platform(text: str) -> Platform:
    return next((p for p in PLATFORMS if p == text), DEFAULT_PLATFORM)


class _Context(msgspec.Struct, frozen=True, kw_only=True):
    spec: ProjectSpec
    reader: Reader
    known: Sequence[str]  # every Python minor the data knows
    releases: Callable[[str], Sequence[Release]]
    platforms: tuple[Platform, ...]  # of the spec's targets

    @classmethod
    def of(cls, spec: ProjectSpec, reader: Reader, known: Sequence[str],
           releases: Callable[[str], Sequence[Release]]) -> _Context:
        platforms = tuple(sorted({_platform(t.platform) for t in spec.targets})) or (DEFAULT_PLATFORM,)
        return cls(spec=spec, reader=reader, known=known, releases=releases, platforms=platforms)


def _pythons(ctx: _Context, files: Sequence[ix.DistFile], md: Metadata | None) -> tuple[str, ...]:
    """The Pythons a release limits the solve to; () when it leaves every choosable one."""
    pythons = ix.installable_pythons(files, ctx.known, md.requires_python if md else "", ctx.platforms)
    return () if set(_choosable(ctx.spec, ctx.known)) <= set(pythons) else pythons


def _pulled(ctx: _Context, req: Requirement, md: Metadata) -> list[Requirement]:
    """What the release pulls with the line's extras, on the newest Python and every target platform."""
    newest = max(ctx.known, key=parse_python_minor)
    return [r for p in ctx.platforms for extra in ("", *sorted(req.extras))
            for r in requirements(md, python=newest, extra=extra, platform=p)]


def _asks(ctx: _Context, req: Requirement, md: Metadata | None) -> dict[str, list[str]]:
    """framework or companion -> the specifiers the release's Requires-Dist asks of it."""
    everything = set(FRAMEWORKS) | set(COMPANIONS)
    asks: dict[str, dict[str, None]] = {}
    for r in _pulled(ctx, req, md) if md else ():
        if (dep := str(canonicalize_name(r.name))) in everything:
            asks.setdefault(dep, {}).update({str(r.specifier): None} if r.specifier else {})
    return {dep: list(specs) for dep, specs in asks.items()}


def _joined(specs: Sequence[str]) -> str:
    """Specifier sets as one, each clause once."""
    return ",".join(dict.fromkeys(x for s in specs for x in s.split(",") if x))


def _framework_ranges(ctx: _Context, ranges: dict[str, list[str]]) -> tuple[tuple[str, str], ...]:
    """The ranges asked of the project's frameworks, a companion's asked of its framework."""
    own = {n: list(specs) for n, specs in ranges.items() if n not in COMPANIONS}
    for comp, specs in ((n, specs) for n, specs in ranges.items() if n in COMPANIONS and specs):
        own.setdefault(COMPANIONS[comp], []).append(_owner_range(comp, ",".join(specs), ctx.releases))
    return tuple(sorted((n, _joined(specs)) for n, specs in own.items()))


def _ask(ctx: _Context, req: Requirement, line: str, version: Version, files: Sequence[ix.DistFile]) -> Steer:
    """What one release of a ``[packages] pip`` line asks of the frameworks and Python."""
    got = ctx.reader.first_metadata(files)
    md = got[1] if got else None
    asks = _asks(ctx, req, md)
    managed = _managed(ctx.spec)
    frameworks = _framework_ranges(ctx, {n: specs for n, specs in asks.items() if n in managed})
    unmanaged = tuple(sorted((n, ",".join(specs)) for n, specs in asks.items() if n not in managed))
    return Steer(line=line, package=f"{canonicalize_name(req.name)}=={version}", frameworks=frameworks,
                 pythons=_pythons(ctx, files, md), unmanaged=unmanaged)


def _requirement(line: str) -> Requirement | None:
    """A ``[packages] pip`` line the steering reads: a plain requirement on a package envsolve does
    not choose itself (not a URL, an option, a framework or a companion)."""
    try:
        req = Requirement(line)
    except InvalidRequirement:
        return None
    name = canonicalize_name(req.name)
    return None if req.url or name in FRAMEWORKS or name in COMPANIONS else req


def _releases(reader: Reader, req: Requirement) -> list[tuple[Version, tuple[ix.DistFile, ...]]]:
    """The releases a line admits, newest first: from the page as read, else the page asked anew
    (a release newer than a cached page)."""
    name = canonicalize_name(req.name)
    matching = _matching(reader.project(name), req) or _matching(reader.project(name, revalidate=True), req)
    return list(matching.items())[:_TRIES]


def _fits_ask(ctx: _Context, asked: Steer) -> bool:
    return _fits(ctx.spec, asked.frameworks, asked.pythons, ctx.releases)


def _steer_line(ctx: _Context, req: Requirement, line: str) -> Steer | None:
    """The newest release of the line that fits the project's ranges, else the newest."""
    asked: list[Steer] = []
    for v, files in _releases(ctx.reader, req):
        asked.append(_ask(ctx, req, line, v, files))
        if _fits_ask(ctx, asked[-1]):
            return asked[-1]
    return asked[0] if asked else None


def steer(spec: ProjectSpec, reader: Reader, known_pythons: Sequence[str],
          releases: Callable[[str], Sequence[Release]]) -> tuple[Steer, ...]:
    """What each ``[packages] pip`` line of ``spec`` asks; ``releases(name)`` are the data's releases
    of a framework. A companion's range is asked of its framework (``torchvision==0.23.0`` is
    ``torch==2.8.0``). Lines that are not plain requirements (URLs, options) ask nothing. Of the
    releases a line admits, the newest that leaves the project's ranges something to choose is
    read (else the newest, whose clash the solve then explains). A line whose marker is true on no
    target (:meth:`ProjectSpec.applies`) asks nothing."""
    ctx = _Context.of(spec, reader, known_pythons, releases)
    lines = [(req, line) for line in spec.pip
             if (req := _requirement(line)) is not None and spec.applies(req.marker, known_pythons)]
    return tuple(s for req, line in lines if (s := _steer_line(ctx, req, line)) is not None)
