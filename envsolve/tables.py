"""The one reader of TOML tables: every file envsolve reads from a person or from ``matrices/``
goes through it, so every problem is reported the same way (file, key path, value, what to do)
and all of them at once.

A reader belongs to one file and adds what is wrong to a :class:`~envsolve.errors.Problems`
collector (its own, or one shared by several files); the caller raises the collected problems
once, as the error of its kind (``SpecError`` for a person's file, ``MatrixError`` for the data).
Nothing here raises for bad input, and nothing here knows a section of a particular file: the
parsers of ``project.toml`` (:mod:`envsolve.spec`), of a matrix file (:mod:`envsolve.matrix.parse`)
and of ``matrices/*.toml`` (:mod:`envsolve.data`) subclass or hold one.

API (a key path is ``section.key``, ``rows[2].key`` or ``rows[2] (version 2.7.1).key``; ``at``
joins them)::

    data = load_toml(text, path)              # a person's file: its table, or SpecError at once
    reader = TableReader(path)                # or TableReader(name, problems): one collector, many files
    data = reader.document(blob, "a matrix file")   # the same, collected: the table or None
    reader.unknown_section(name, allowed)     # "unknown section (allowed: ...); did you mean [x]?"
    reader.unknown_keys(table, where, allowed[, message])   # each key not allowed, by default with
                                              # unknown_key's "did you mean"; allowed_keys lists only
    rows = reader.rows(data, "build")         # an array of tables ([[build]]), or the problem and []
    fields = reader.record(raw, where, checks, required)    # one row: its checked fields, or None
    fields = reader.record(raw, where, checks, required, unknown=..., missing=...)  # its own words
    value = reader.check(raw, where, parse)   # parse raises ValueError(message): the value or None
    word(raw, PLATFORMS)                      # a closed word, typed (domain's Literal), or None
    strings(raw)                              # a check: a list of strings as a tuple
    reader.problems.raise_if_any(SpecError, tip=...)

A check is any ``Callable[[Any], T]`` that returns the typed value or raises ``ValueError`` whose
text is the message (``"must be a non-empty string"``); ``record`` applies a table of them in
order, after naming unknown and missing keys, so one row's problems read top to bottom. A check
may itself read rows with the same reader (a table's array of tables): whatever it adds makes
the outer row's ``record`` None too. The lock reader (:mod:`envsolve.lock.model`) turns each
``from_dict`` into a ``checks`` table and a ``record`` call, raising ``LockError`` once from the
collected problems.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, TypeVar

from .errors import Problem, Problems, SpecError

__all__ = ["Check", "TableReader", "allowed_keys", "at", "closest", "load_toml", "parse_toml", "strings",
           "unknown_key", "word"]

T = TypeVar("T")
W = TypeVar("W", bound=str)
# A field check: the raw TOML value in, the record's value out, or ValueError with the message.
Check = Callable[[Any], Any]


def at(where: str, key: str) -> str:
    """The key path of ``key`` inside ``where`` (``hardware`` + ``gpus`` -> ``hardware.gpus``)."""
    return f"{where}.{key}" if where else key


def closest(name: str, names: Iterable[str]) -> str | None:
    """The one name of ``names`` that ``name`` is most likely a typo of, or None."""
    import difflib  # only a file with a mistake gets here

    return next(iter(difflib.get_close_matches(name, list(names), 1)), None)


def allowed_keys(key: str, allowed: Collection[str]) -> str:
    """"unknown key (allowed: ...)", the allowed keys sorted."""
    return f"unknown key (allowed: {', '.join(sorted(allowed))})"


def unknown_key(key: str, allowed: Collection[str]) -> str:
    """"unknown key (allowed: ...)", with a "did you mean" for a near miss."""
    near = closest(key, sorted(allowed))
    return allowed_keys(key, allowed) + (f"; did you mean '{near}'?" if near else "")


def word(value: object, words: tuple[W, ...]) -> W | None:
    """``value`` as one of a closed set of words (domain's ``PLATFORMS``, ``VENDORS``), typed; None
    when it is none of them."""
    return next((w for w in words if w == value), None)


def strings(value: Any) -> tuple[str, ...]:
    """A check: ``value`` as a tuple of strings (empty ones allowed), else "must be a list of strings"."""
    if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
        raise ValueError(f"must be a list of strings, not {value!r}")
    return tuple(value)


def load_toml(text: str, path: str, what: str = "a project file",
              example: str = "a project.toml is a few flat tables; `envsolve init` writes one with comments"
              ) -> dict[str, Any]:
    """A person's TOML file as a table; bad syntax or absurd nesting is a :class:`SpecError` at once
    (nothing else in the file can be read)."""
    try:
        data: dict[str, Any] = parse_toml(text)
    except ValueError as e:  # tomllib's TOMLDecodeError (see parse_toml)
        raise SpecError([Problem(path, "", f"is not valid TOML: {e}")],
                        tip="fix the TOML syntax at the line named above") from None
    except RecursionError:
        raise SpecError([Problem(path, "", f"nests tables or arrays too deeply to be {what}")],
                        tip=example) from None
    return data


def parse_toml(text: str) -> dict[str, Any]:
    """The TOML parser of files read whole (matrices, specs, locks): ``text`` parsed by rtoml
    (compiled, eight times tomllib's speed on the shipped matrices, the same tables); anything
    rtoml refuses is parsed again by tomllib, whose message names the line and column."""
    import rtoml

    try:
        data: dict[str, Any] = rtoml.loads(text)
    except (rtoml.TomlParsingError, ValueError, RecursionError):
        if sys.version_info >= (3, 11):
            import tomllib
        else:  # pragma: no cover
            import tomli as tomllib
        data = tomllib.loads(text)  # raises its own error (a ValueError), with the line; else it is the answer
    return data


class TableReader:
    """Reads the tables of one file, adding every problem to one collector."""

    def __init__(self, file: str, problems: Problems | None = None) -> None:
        self.file = file
        self.problems = problems if problems is not None else Problems(file)

    def bad(self, where: str, message: str) -> None:
        """A problem at the key path ``where`` of this file ("" for the file as a whole)."""
        self.problems.add(self.file, where, message)

    def document(self, blob: bytes, what: str) -> dict[str, Any] | None:
        """The file's bytes as a table (a UTF-8 byte-order mark dropped); None, and the problem
        added, when they are not UTF-8 TOML."""
        try:
            data: dict[str, Any] = parse_toml(blob.decode("utf-8").removeprefix("\ufeff"))
        except UnicodeDecodeError as e:
            self.bad("", f"is not UTF-8 text (byte {e.start} is {blob[e.start:e.start + 1]!r}); save it as UTF-8")
            return None
        except ValueError as e:  # tomllib's TOMLDecodeError (see parse_toml)
            self.bad("", f"is not valid TOML: {e}")
            return None
        except RecursionError:
            self.bad("", f"nests tables or arrays too deeply to be {what}")
            return None
        return data

    def unknown_section(self, name: str, allowed: Collection[str]) -> bool:
        """Whether ``name`` is no section of ``allowed`` (in their order), added as a problem."""
        if name in allowed:
            return False
        near = closest(name, allowed)
        tip = f"; did you mean [{near}]?" if near else ""
        self.bad(name, f"unknown section (allowed: {', '.join(allowed)}){tip}")
        return True

    def unknown_keys(self, table: Mapping[str, Any], where: str, allowed: Collection[str],
                     message: Callable[[str, Collection[str]], str] = unknown_key) -> bool:
        """Whether ``table`` (at ``where``) has keys outside ``allowed``; each is added as a problem."""
        unknown = [key for key in table if key not in allowed]
        for key in unknown:
            self.bad(at(where, key), message(key, allowed))
        return bool(unknown)

    def rows(self, data: Mapping[str, Any], key: str) -> list[Any]:
        """The array of tables ``[[key]]`` of ``data`` (none when absent), or the problem and []."""
        rows = data.get(key, [])
        if not isinstance(rows, list):
            self.bad(key, f"must be an array of tables ([[{key}]])")
            return []
        return rows

    def check(self, value: Any, where: str, parse: Callable[[Any], T]) -> T | None:
        """``parse(value)``, or None and its ValueError's message added at ``where``."""
        try:
            return parse(value)
        except ValueError as e:
            self.bad(where, str(e))
            return None

    def record(self, raw: Any, where: str, checks: Mapping[str, Check], required: Iterable[str], *,
               unknown: Callable[[str, Collection[str]], str] = allowed_keys,
               missing: str = "missing") -> dict[str, Any] | None:
        """The checked fields of the row ``raw`` at ``where``: its unknown keys (allowed: those of
        ``checks``; ``unknown`` words the problem), the ``required`` keys it lacks (``missing``),
        then each check in order. None when the row has any problem, every one of them added."""
        if not isinstance(raw, dict):
            self.bad(where, "must be a table")
            return None
        before = len(self.problems)
        self.unknown_keys(raw, where, checks, unknown)
        for key in required:
            if key not in raw:
                self.bad(at(where, key), missing)
        fields: dict[str, Any] = {}
        for key, check in checks.items():
            if key in raw:  # inline, not through check(): the data has thousands of rows
                try:
                    fields[key] = check(raw[key])
                except ValueError as e:
                    self.bad(at(where, key), str(e))
        return fields if len(self.problems) == before else None
