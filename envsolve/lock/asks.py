"""What the project's ``[packages] pip`` lines ask of the solve (:class:`Steer`, read from the
index by :mod:`envsolve.lock.steer`), and the spec those asks narrow (:func:`apply`). Values only:
a lock that finds the asks kept (``lock.job``) imports neither the index client nor the reader."""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import msgspec.structs
from packaging.specifiers import SpecifierSet

from ..spec import FrameworkReq, ProjectSpec
from ..versions import admits_any, parse_python_minor

__all__ = ["Steer", "apply"]


class Steer(msgspec.Struct, frozen=True, kw_only=True):
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


def _asks_of(name: str, steers: Sequence[Steer]) -> list[tuple[str, str]]:
    """(the release that asks, its range) for each range the steers ask of framework ``name``."""
    return [(s.package, raw) for s in steers for n, raw in s.frameworks if n == name and raw]


def _asked(f: FrameworkReq, steers: Sequence[Steer]) -> FrameworkReq:
    """``f`` with the ranges the steers ask of its framework added, remembering who asked."""
    asked = _asks_of(f.name, steers)
    if not asked:
        return f
    raw = ",".join(([] if admits_any(f.raw) else [f.raw]) + [raw for _, raw in asked])
    return FrameworkReq(name=f.name, specifier=SpecifierSet(raw), raw=raw, backend=f.backend,
                        asked_by=", ".join(p for p, _ in asked))


def _python_bounds(steers: Sequence[Steer]) -> list[str]:
    """The Python range each steer that limits the Pythons asks for."""
    return [f">={s.pythons[0]},<{_next_minor(s.pythons[-1])}" for s in steers if s.pythons]


def apply(spec: ProjectSpec, steers: Sequence[Steer]) -> ProjectSpec:
    """``spec`` with each steer's framework and Python ranges added (the ranges of both must hold)."""
    python, python_raw = spec.python, spec.python_raw
    for bound in _python_bounds(steers):
        python = python & SpecifierSet(bound)
        python_raw = bound if admits_any(python_raw) else f"{python_raw},{bound}"
    frameworks = tuple(_asked(f, steers) for f in spec.frameworks)
    return msgspec.structs.replace(spec, frameworks=frameworks, python=python, python_raw=python_raw)


def _next_minor(minor: str) -> str:
    major, m = parse_python_minor(minor)
    return f"{major}.{m + 1}"
