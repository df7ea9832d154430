"""Adding new rows to the curated matrices (``envsolve refresh --write``), and new fields to
rows they have (:func:`with_fields`).

Each new ``[[release]]`` / ``[[build]]`` row goes after the last entry of its table, before the
comments that open the next section, through tomlkit's document model: every other byte of the
file (comments, multi-line arrays, key order) stays as the curators wrote it. All changed files
are validated together with the rest (``load_dir``) before any is written.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
import tomlkit
from tomlkit.container import Container
from tomlkit.items import AoT, Comment, Item, KeyType, SingleKey, Table, Whitespace

from .data import load_dir
from .errors import MatrixError, Problem, RefreshError
from .files import MATRIX_CAP, decoded, read_bytes, refused, write_all

__all__ = ["Row", "new_file_text", "row_text", "with_fields", "with_rows", "write_rows"]


class Row(msgspec.Struct, frozen=True, kw_only=True):
    """A new matrix row: its file, its table and its fields in writing order."""

    file: str
    table: str
    label: str
    fields: tuple[tuple[str, Any], ...]


# ---------------------------------------------------------------------------- one row


def _key(k: str) -> SingleKey:
    """A bare key where TOML allows one the matrices use (letters, digits, _), else a quoted one."""
    return SingleKey(k, t=KeyType.Bare if re.fullmatch(r"[A-Za-z0-9_]+", k) else KeyType.Basic)


def _inline(d: dict[str, Any]) -> Item:
    """``{ a = "1", b = "2" }``: spaced inside the braces, as the matrices write them."""
    out = tomlkit.inline_table()
    for k, v in d.items():
        out.append(_key(k), _value(v))
    values = [item for key, item in out.value.body if key is not None]
    if values:  # tomlkit puts ", " between the items; the spaces inside the braces are ours
        values[0].trivia.indent = " "
        values[-1].trivia.trail = " "
    return out


def _value(v: Any) -> Item:
    return _inline(v) if isinstance(v, dict) else tomlkit.item(v)


def _table(r: Row) -> Table:
    out = tomlkit.table()
    for k, v in r.fields:
        out.append(_key(k), _value(v))
    return out


def row_text(r: Row) -> str:
    """The row as a TOML array-of-tables entry, in the matrices' style."""
    return f"[[{r.table}]]\n" + _table(r).as_string()


# ---------------------------------------------------------------------------- into a file


def _last_item(body: Container) -> Item | None:
    return next((item for key, item in reversed(body.body) if key is not None), None)


def _inner(item: Item | None) -> Container | None:
    """The body of a sub-table (``[release.companions]``) or of an array's last entry; None for a value."""
    if isinstance(item, Table) and not item.is_super_table():
        return item.value
    return item.body[-1].value if isinstance(item, AoT) and item.body else None


def _innermost(table: Table) -> Container:
    """The container the last lines of an array-of-tables entry belong to (its last sub-table's)."""
    body = table.value
    while (inner := _inner(_last_item(body))) is not None:
        body = inner
    return body


def _trailing(container: Container) -> list[Item]:
    """Take the blank and comment lines that end ``container``: they open what follows it."""
    out: list[Item] = []
    while container.body and container.body[-1][0] is None and isinstance(container.body[-1][1], (Whitespace, Comment)):
        out.insert(0, container.body.pop()[1])
    return out


def _after_existing(doc: tomlkit.TOMLDocument, name: str, tables: Sequence[Table], followed: bool) -> None:
    """After the last entry, before the blank and comment lines that open what follows, with a
    blank line after the new entries when a line of text follows them."""
    aot = _last_aot(doc, name)
    assert aot is not None
    trail = _trailing(_innermost(aot[-1]))
    for t in tables:
        aot.append(t)
    last = tables[-1].value
    follows = trail[0].as_string() if trail else ("[" if followed else "")
    if follows.split("\n", 1)[0].strip():
        last.append(None, Whitespace("\n"))
    for item in trail:
        last.append(None, item)


def _last_aot(doc: tomlkit.TOMLDocument, name: str) -> AoT | None:
    """The last ``[[name]]`` run of the file (a table may be written in several runs: torch's
    legacy releases follow its builds)."""
    return next((item for key, item in reversed(doc.body) if key == name and isinstance(item, AoT)), None)


def _at_end(doc: tomlkit.TOMLDocument, name: str, tables: Sequence[Table], followed: bool) -> None:
    aot = tomlkit.aot()
    for t in tables:
        aot.append(t)
    doc.append(name, aot)


_HEADER = re.compile(r"\[\[?([A-Za-z0-9_-]+)[^\]]*\]\]?\s*(?:#.*)?")


def _runs(text: str) -> list[tuple[str, str]]:
    """The file as runs of one top-level table each (name, text), the top-level keys first (name "").

    tomlkit merges the runs of an array of tables written in several places (torch's legacy
    releases follow its builds) and would move them; parsed one run at a time, each keeps its place."""
    runs: list[tuple[str, list[str]]] = [("", [])]
    for line in text.splitlines(keepends=True):
        header = _HEADER.fullmatch(line.strip())
        if header is not None and header.group(1) != runs[-1][0]:
            runs.append((header.group(1), []))
        runs[-1][1].append(line)
    return [(name, "".join(lines)) for name, lines in runs]


def _with_table(runs: list[tuple[str, str]], name: str, tables: Sequence[Table]) -> None:
    """Add ``tables`` after the last run of ``name`` (or after the last run of the file)."""
    at = max((i for i, (run, _) in enumerate(runs) if run == name), default=len(runs) - 1)
    doc = tomlkit.parse(runs[at][1])
    add = _after_existing if _last_aot(doc, name) is not None else _at_end
    add(doc, name, tables, at < len(runs) - 1)
    runs[at] = (runs[at][0], doc.as_string())


def _with_data_version(text: str, data_version: str) -> str:
    doc = tomlkit.parse(text)
    old = doc.get("data_version")
    if isinstance(old, str):
        doc["data_version"] = max(old, data_version)
    return doc.as_string()


def _tables(rows: Sequence[Row], name: str) -> list[Table]:
    """The rows of table ``name``, each to be written after a blank line."""
    tables = [_table(r) for r in rows if r.table == name]
    for t in tables:
        t.trivia.indent = "\n"
    return tables


def with_rows(text: str, rows: Sequence[Row], data_version: str) -> str:
    """``text`` with ``rows`` added, each after the last entry of its table (or, for a table the
    file lacks, at its end), a blank line before each, and ``data_version`` raised to the given one."""
    runs = _runs(text if text.endswith("\n") or not text else text + "\n")
    for name, tables in ((name, _tables(rows, name)) for name in ("release", "build")):
        if tables:
            _with_table(runs, name, tables)
    runs[0] = ("", _with_data_version(runs[0][1], data_version))
    return "".join(text for _, text in runs)


# ---------------------------------------------------------------------------- fields of rows a file has


def _key_at(table: Table, key: str) -> int | None:
    """Where ``key`` stands in the table's body (comments and blank lines count), or None."""
    return next((i for i, (k, _) in enumerate(table.value.body) if k is not None and k.key == key), None)


def _set_fields(table: Table, fields: Mapping[str, Any]) -> None:
    """Replace each of ``fields`` the row has where it stands; put a new one before ``source``."""
    for k, v in fields.items():
        if k in table:
            table[k] = _value(v)
            continue
        at = _key_at(table, "source")
        if at is None:
            table.append(_key(k), _value(v))
        else:  # tomlkit has no public insert; the body index keeps comments and blank lines in place
            table.value._insert_at(at, _key(k), _value(v))


def with_fields(text: str, table: str, fields: Callable[[dict[str, Any]], Mapping[str, Any]]) -> str:
    """``text`` with fields set on its ``[[table]]`` rows: ``fields(row)`` gets each row as read
    (plain values) and gives the keys to set (none: the row stays). A key the row has is replaced
    where it stands, a new one goes before the row's ``source``; every other byte stays."""
    runs = _runs(text)
    for i, (name, run) in enumerate(runs):
        if name != table:
            continue
        doc = tomlkit.parse(run)
        aot = _last_aot(doc, table)
        for row in aot.body if aot is not None else ():
            if changes := fields(row.unwrap()):
                _set_fields(row, changes)
        runs[i] = (name, doc.as_string())
    return "".join(run for _, run in runs)


def new_file_text(name: str, data_version: str) -> str:
    """The head of a framework file the matrices do not have yet."""
    package = name.removesuffix(".toml")
    return f'schema = 1\ndata_version = "{data_version}"\nkind = "framework"\npackage = "{package}"\n'


def _matrix_file(path: Path) -> str:
    """The text of the matrix file ``path`` through the one reader (a regular UTF-8 file of at most
    :data:`~envsolve.files.MATRIX_CAP`, never a FIFO or a device); MatrixError (exit 2) naming it
    otherwise, as ``load_dir`` names it."""
    try:
        return decoded(read_bytes(path, MATRIX_CAP), path)
    except OSError as e:
        why, tip = refused(path, e)
        raise MatrixError([Problem(str(path), "", why)], tip=tip or "matrix files are regular TOML files") from None


def _validated(root: Path, texts: dict[Path, str]) -> None:
    """Load the matrices with ``texts`` in place of their files; a problem writes nothing."""
    with tempfile.TemporaryDirectory(prefix="envsolve-refresh-") as tmp:
        for p in root.glob("*.toml"):
            (Path(tmp) / p.name).write_text(_matrix_file(p), encoding="utf-8")
        for path, text in texts.items():
            (Path(tmp) / path.name).write_text(text, encoding="utf-8")
        try:
            load_dir(Path(tmp))
        except MatrixError as e:
            raise RefreshError(f"the new rows would not validate, so nothing was written:\n  {e.message}",
                               tip=f"fix the rows named above in {root}, then run refresh again") from None


def _new_text(root: Path, name: str, rows: Sequence[Row], data_version: str) -> str:
    path = root / name
    text = _matrix_file(path) if path.exists() else new_file_text(name, data_version)
    return with_rows(text, [r for r in rows if r.file == name], data_version)


def write_rows(rows: Sequence[Row], root: Path, data_version: str) -> list[Path]:
    """Add ``rows`` to the matrices under ``root`` as data version ``data_version``.

    Every changed file is validated together with the rest (``load_dir``) before any is written;
    each is then replaced atomically. Returns the files written.
    """
    texts = {root / name: _new_text(root, name, rows, data_version) for name in dict.fromkeys(r.file for r in rows)}
    if texts:
        _validated(root, texts)
    write_all(texts, tip=f"make {root} writable, or pass another --matrices folder", folder=root,
              option="--matrices")  # together or not at all, inside root
    return sorted(texts)
