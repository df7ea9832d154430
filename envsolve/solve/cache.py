"""The solver's one cache: memo tables of pure computations, owned by whoever solves.

A matrix of a hundred thousand cells asks the same few thousand questions (a range's parse, the
Pythons and the releases a range admits, a framework's candidates for one target), so :class:`Cache` remembers
them by their text. One cache serves any number of solves over the same provider; it never
outlives them and is never shared between providers. Hashing a ``SpecifierSet`` costs more than
answering, so ranges are keyed by the text the user wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from packaging.specifiers import SpecifierSet

from ..data import Release
from ..versions import parse_range, python_admits_minor

__all__ = ["Cache"]


class Cache:
    """Memo tables keyed by plain values; see the module docstring."""

    def __init__(self) -> None:
        self._ranges: dict[str, SpecifierSet] = {}
        self._subsets: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}
        self._in_range: dict[tuple[str, str], tuple[Release, ...]] = {}
        self.tables: dict[str, dict[Any, Any]] = {}  # named tables of the solver's sub-problems

    def range(self, raw: str) -> SpecifierSet:
        """The specifier ``raw`` stands for ("" and "*" admit everything)."""
        got = self._ranges.get(raw)
        if got is None:
            got = self._ranges[raw] = parse_range(raw)
        return got

    def pythons(self, python_raw: str, pys: tuple[str, ...]) -> frozenset[str]:
        """The Python minors of ``pys`` that the range ``python_raw`` admits."""
        key = (python_raw, pys)
        got = self._subsets.get(key)
        if got is None:
            spec = self.range(python_raw)
            got = self._subsets[key] = frozenset(p for p in pys if python_admits_minor(spec, p))
        return got

    def in_range(self, raw: str, name: str, releases: Sequence[Release]) -> tuple[Release, ...]:
        """The releases of ``name`` (``releases``, the provider's list of them, in its order) that
        the range ``raw`` admits."""
        key = (name, raw)
        got = self._in_range.get(key)
        if got is None:
            spec = self.range(raw)
            got = self._in_range[key] = tuple(r for r in releases if spec.contains(r.version))
        return got

    def table(self, name: str) -> dict[Any, Any]:
        """The memo table ``name`` (candidate lists, explanations, ...)."""
        return self.tables.setdefault(name, {})

    def forget(self, *names: str) -> None:
        """Empty the tables ``names``: what they remember is asked again."""
        for name in names:
            self.tables.pop(name, None)
