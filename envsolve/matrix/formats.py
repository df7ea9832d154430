"""What `envsolve matrix` prints of solved cells: a table, GitHub's ``strategy.matrix`` JSON (in
shards when asked), a ``docker-bake.json``, a Markdown summary (``$GITHUB_STEP_SUMMARY``), one
HTML page (cells coloured by outcome, for reviews and CI artifacts), or everything as JSON.

Every format streams (:func:`streamed`): the cells are read once, as they are solved, and never
held; what a format prints before something it learns only at the end (the table's and the
summary's counts, the bake file's groups before its targets) waits in an unnamed temporary file,
one JSON line per cell, so memory stays flat in the number of cells."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from types import TracebackType
from typing import Any, NamedTuple, TextIO, TypeVar

from ..domain import (
    ACCELERATOR,
    GITHUB_RUNNER,
    LINUX_PLATFORMS,
    PLATFORMS,
    VENDORS,
    Vendor,
    driver_text,
    stack_text,
)
from ..errors import Problem, SpecError
from ..solve import PackagePin, Resolution
from ..tables import word
from .cells import CellResult
from .parse import Cell, MatrixSpec, Memo

__all__ = ["GITHUB_JOB_LIMIT", "IMAGE_STAGE", "MARKDOWN_ROWS", "SMOKE_STAGE", "CellTexts", "JsonPiece", "Tally", "bake",
           "check_shard", "everything", "github", "cell_image", "has_image", "html_page", "json_document", "markdown",
           "md_escape", "printed", "row", "smoke_target", "streamed", "table", "too_many_jobs", "vendor"]

GITHUB_JOB_LIMIT = 256
# The rendered Dockerfile's stages: the image is ``runtime``; ``smoke`` (FROM runtime, RUN
# smoke_test.py --allow-cpu) comes last and exists for CPU images only, since a GPU image's smoke
# test needs the GPU (templates/Dockerfile.j2).
SMOKE_STAGE = "smoke"
IMAGE_STAGE = "runtime"
MARKDOWN_ROWS = 500  # per table: GitHub keeps at most 1 MiB of a step's summary
_T = TypeVar("_T")


def platforms(ms: MatrixSpec, cell: Cell) -> list[str]:
    """The platforms a cell's image is built for: its own (the ``platform`` axis), else [image]'s."""
    return [p] if (p := cell.get("platform")) else list(ms.platforms)


def cell_image(ms: MatrixSpec, cell: Cell, cell_id: str = "") -> str:
    """The image of ``cell`` (whose id is ``cell_id`` when given)."""
    return f"{ms.repository}:{cell_id or cell.id}"


def has_image(cell: Cell) -> bool:
    """Whether a cell gets an image (:func:`platform_has_image` of its platform)."""
    return platform_has_image(cell.get("platform"))


def platform_has_image(platform: str) -> bool:
    """Whether a cell of ``platform`` ("" without a platform axis) gets an image: a Linux cell does
    (the one without a platform axis is on [image]'s Linux platforms); a Windows or macOS cell gets
    its requirements and smoke test only."""
    return not platform or platform in LINUX_PLATFORMS


def row(ms: MatrixSpec, res: CellResult, render_dir: str) -> dict[str, Any]:
    """A valid cell as GitHub and JSON output show it: axis values under axis names, id, image
    (a Linux cell's), whose GPU its smoke test needs, a Jetson cell's ``jetpack`` (the workflow
    runs it with the Jetson's ``nvidia`` runtime), the GitHub runner of its platform (a platform
    axis), and for a Windows or macOS cell the Python to set up there (``python_version``)."""
    out: dict[str, Any] = dict(res.cell.values)
    out["id"] = res.cell.id
    image = has_image(res.cell)
    if image:
        out["image"] = cell_image(ms, res.cell)
        out["dockerfile"] = f"{render_dir}/{res.cell.id}/Dockerfile"
    out["vendor"] = vendor(res.resolution)
    if res.resolution is not None and res.resolution.jetpack:
        out["jetpack"] = res.resolution.jetpack
    if platform := word(res.cell.get("platform"), PLATFORMS):
        out["runner"] = GITHUB_RUNNER[platform]  # built natively: GitHub's Arm runners for linux/arm64
    if not image and res.resolution is not None:
        out["python_version"] = res.resolution.python
    return out


def vendor(res: Resolution | None) -> Vendor:
    """``nvidia``, ``amd``, ``intel``, ``apple`` or ``cpu``: whose GPU the cell's smoke test needs."""
    if res is None:
        return "cpu"
    return next((v for v in VENDORS if ACCELERATOR[v] == res.accelerator), "cpu")


def github(ms: MatrixSpec, results: Iterable[CellResult], render_dir: str, max_jobs: int | None) -> dict[str, Any]:
    """``{"include": [...]}``, or ``{"shards": [{"include": [...]}, ...]}`` of at most ``max_jobs``."""
    loaded: dict[str, Any] = json.loads("".join(_github(ms, results, render_dir, max_jobs, None)))
    return loaded


def _github(ms: MatrixSpec, results: Iterable[CellResult], render_dir: str, max_jobs: int | None,
            shard: int | None) -> Iterator[str]:
    """``--format github`` as JSON text in pieces: all rows, the shards of ``max_jobs`` rows, or
    shard ``shard`` of them (from 1)."""
    rows = (_compact(row(ms, r, render_dir)) for r in results if r.valid)
    if not max_jobs:
        yield from _joined(rows, '{"include":[', "]}\n")
    elif shard is None:
        yield from _sharded(rows, max_jobs)
    else:
        yield from _one_shard(rows, max_jobs, shard)


def _sharded(rows: Iterator[str], max_jobs: int) -> Iterator[str]:
    """``{"shards":[{"include":[...]},...]}``: one shard of no rows when there are none."""
    yield '{"shards":['
    n = -1
    for n, text in enumerate(rows):
        yield (("]}," if n else "") + '{"include":[' if n % max_jobs == 0 else ",") + text
    yield ('{"include":[' if n < 0 else "") + "]}]}\n"


def _one_shard(rows: Iterator[str], max_jobs: int, shard: int) -> Iterator[str]:
    """Shard ``shard`` of ``max_jobs`` rows (kept on disk until the count says it exists)."""
    with _Spool() as kept:
        n = 0
        for n, text in enumerate(rows, 1):
            if (n - 1) // max_jobs == shard - 1:
                kept.add(text)
        shards = max(1, -(-n // max_jobs))
        if shard > shards:
            raise SpecError([Problem("--shard", str(shard), f"there are {shards} shards")])
        yield from _joined(kept, '{"include":[', "]}\n")


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _joined(texts: Iterable[str], start: str, end: str) -> Iterator[str]:
    """``start``, the texts separated by commas, ``end``: in pieces of many texts each."""
    yield start
    first = True
    for chunk in _chunks(texts):
        yield ("" if first else ",") + ",".join(chunk)
        first = False
    yield end


def _chunks(items: Iterable[_T], size: int = 256) -> Iterator[list[_T]]:
    """``items`` in lists of ``size`` (a piece per list, not per cell: fewer writes)."""
    it = iter(items)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


class _Spool:
    """Records kept in an unnamed temporary file, not in memory, and read back in order, each a
    JSON line: what a format prints only after it has seen every cell. The file has no name on
    disk (it is gone when closed, or when the process dies)."""

    def __init__(self) -> None:
        import tempfile  # here: only the formats that print counts first spool

        self._file: TextIO = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.count = 0

    def __enter__(self) -> _Spool:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._file.close()

    def add(self, record: Any) -> None:
        self._file.write(_compact(record) + "\n")
        self.count += 1

    def __iter__(self) -> Iterator[Any]:
        self._file.flush()
        self._file.seek(0)
        for line in self._file:
            yield json.loads(line)


def smoke_target(cell: Cell) -> str:
    """The bake target that builds a cell's ``smoke`` stage. Cell ids start with ``py`` or a
    framework name, so ``smoke-`` never names a cell."""
    return f"smoke-{cell.id}"


def bake(ms: MatrixSpec, results: Iterable[CellResult], render_dir: str) -> dict[str, Any]:
    """A docker-bake.json: a target per valid cell and a ``default`` group of them all; for the
    CPU cells also a ``smoke-<id>`` target building the ``smoke`` stage (the smoke test runs at
    build time; its output is the build cache only, no image, no tag) and a ``smoke`` group of
    them. GPU cells have none: their smoke test needs the GPU, at ``docker run`` with the flags of
    :func:`envsolve.domain.gpu_run_flags` (``--gpus all``; a Jetson's ``--runtime nvidia``)."""
    loaded: dict[str, Any] = json.loads("".join(_bake(ms, results, render_dir)))
    return loaded


_SMOKE_GROUP = "the smoke test of every CPU cell, run at build time"


def _bake(ms: MatrixSpec, results: Iterable[CellResult], render_dir: str) -> Iterator[str]:
    """:func:`bake` as the text ``json.dumps(indent=1)`` writes, in pieces: the groups name every
    target first, so the targets wait on disk."""
    with _Spool() as images, _Spool() as smokes:
        for r in results:
            if not (r.valid and has_image(r.cell)):  # a Windows or macOS cell has no Dockerfile
                continue
            images.add([r.cell.id, _image_target(ms, r, render_dir)])
            if vendor(r.resolution) == "cpu":
                smokes.add([smoke_target(r.cell), _smoke_target(ms, r, render_dir)])
        yield '{\n "group": {\n  "default": {\n   "targets": '
        yield from _array((name for name, _ in images), 3)
        yield "\n  }"
        if smokes.count:
            yield f',\n  "smoke": {{\n   "description": {json.dumps(_SMOKE_GROUP)},\n   "targets": '
            yield from _array((name for name, _ in smokes), 3)
            yield "\n  }"
        yield '\n },\n "target": '
        yield from _object(itertools.chain(images, smokes), 1)
        yield "\n}\n"


def _nested(value: Any, depth: int) -> str:
    """``json.dumps(value, indent=1)`` as it reads ``depth`` levels deep."""
    return json.dumps(value, indent=1).replace("\n", "\n" + " " * depth)


def _array(values: Iterable[Any], depth: int) -> Iterator[str]:
    """A JSON array as ``json.dumps(indent=1)`` writes it ``depth`` levels deep, in pieces."""
    pad = "\n" + " " * (depth + 1)
    first = True
    for chunk in _chunks(values):
        yield ("[" if first else ",") + pad + ("," + pad).join(_nested(v, depth + 1) for v in chunk)
        first = False
    yield "[]" if first else "\n" + " " * depth + "]"


def _object(pairs: Iterable[Sequence[Any]], depth: int) -> Iterator[str]:
    """A JSON object of (key, value) pairs as ``json.dumps(indent=1)`` writes it ``depth`` levels
    deep, in pieces."""
    pad = "\n" + " " * (depth + 1)
    first = True
    for chunk in _chunks(pairs):
        members = (f"{json.dumps(k)}: {_nested(v, depth + 1)}" for k, v in chunk)
        yield ("{" if first else ",") + pad + ("," + pad).join(members)
        first = False
    yield "{}" if first else "\n" + " " * depth + "}"


def _image_target(ms: MatrixSpec, r: CellResult, render_dir: str) -> dict[str, Any]:
    """The bake target that builds a cell's image."""
    t: dict[str, Any] = {"context": f"{render_dir}/{r.cell.id}", "dockerfile": "Dockerfile",
                         "tags": [cell_image(ms, r.cell)], "platforms": platforms(ms, r.cell)}
    return t | ({"target": IMAGE_STAGE} if IMAGE_STAGE else {})


def _smoke_target(ms: MatrixSpec, r: CellResult, render_dir: str) -> dict[str, Any]:
    """The bake target that runs a CPU cell's smoke test at build time (the ``smoke`` stage)."""
    return {"description": f"runs smoke_test.py of {r.cell.id} at build time",
            "context": f"{render_dir}/{r.cell.id}", "dockerfile": "Dockerfile", "target": SMOKE_STAGE,
            "platforms": platforms(ms, r.cell), "output": ["type=cacheonly"]}


def cell_entry(ms: MatrixSpec, r: CellResult, render_dir: str) -> dict[str, Any]:
    """One cell as ``--format json`` shows it: axis values, id, validity, and the resolution or
    the reason it was pruned."""
    entry: dict[str, Any] = {**dict(r.cell.values), "id": r.cell.id, "valid": r.valid, "include": r.cell.included}
    if r.resolution is None:
        return entry | {"reason": r.reason}
    res = r.resolution
    if has_image(r.cell):
        entry |= {"image": cell_image(ms, r.cell), "dockerfile": f"{render_dir}/{r.cell.id}/Dockerfile"}
    return entry | {"python_resolved": res.python, "cuda": res.cuda, "rocm": res.rocm, "cudnn": res.cudnn,
                    "driver_min": res.driver_min, "compat": res.compat, "base_image": res.base_image,
                    "packages": {p.name: f"{p.version} ({p.variant})" for p in res.packages}}


def everything(ms: MatrixSpec, results: Iterable[CellResult], render_dir: str) -> Iterator[str]:
    """``{"cells": [...], "valid": N, "pruned": M}`` as JSON text in pieces, one cell a line, so a
    matrix of a million cells is never held whole, solved or as text."""
    texts = CellTexts(ms, render_dir)
    return json_document(texts.piece(chunk) for chunk in _chunks(results))  # a piece per chunk: fewer writes


def json_document(pieces: Iterable[JsonPiece]) -> Iterator[str]:
    """:func:`everything` from its pieces in order, each the lines of some cells (:meth:`CellTexts.piece`)."""
    yield '{"cells": ['
    valid = total = 0
    for piece in pieces:
        if piece.total:
            yield ("\n" if total == 0 else ",\n") + piece.text
        valid += piece.valid
        total += piece.total
    yield f'\n], "valid": {valid}, "pruned": {total - valid}}}\n'


class JsonPiece(NamedTuple):
    """Some consecutive cells of :func:`everything`: their lines, how many are valid, how many there are."""

    text: str
    valid: int
    total: int


class CellTexts:
    """:func:`cell_entry` as compact JSON, byte for byte ``json.dumps(cell_entry(...),
    separators=(",", ":"))``, from pieces a matrix repeats (an axis value, a reason, a set of
    packages), each encoded once. The memos are bounded, so memory stays flat in the cells."""

    _LIMIT = 1024

    def __init__(self, ms: MatrixSpec, render_dir: str) -> None:
        self.ms = ms
        self.render_dir = render_dir
        self._pairs = Memo(_pair_text, self._LIMIT)
        self._strings = Memo(json.dumps, self._LIMIT)
        self._packages: dict[int, tuple[object, str]] = {}  # by id: the entry holds the tuple itself
        self._folder = json.dumps(f"{render_dir}/")[:-1]  # a cell's folder as JSON, less the id and the quote
        self._platform = ms.value_of("platform")

    def piece(self, results: Sequence[CellResult]) -> JsonPiece:
        """The lines of ``results`` for :func:`json_document`."""
        valid = sum(r.resolution is not None for r in results)
        return JsonPiece(",\n".join(map(self.line, results)), valid, len(results))

    def line(self, r: CellResult) -> str:
        cell = r.cell
        cid = cell.id  # letters, digits, "_" and "-" only (parse._id_part): JSON as it is
        res = r.resolution
        head = ("{" + ",".join(map(self._pairs.__getitem__, cell.values)) + ',"id":"' + cid
                + ('","valid":false,"include":' if res is None else '","valid":true,"include":')
                + _TRUE[cell.included])
        if res is None:
            return head + ',"reason":' + self._strings[r.reason] + "}"
        enc = self._strings.__getitem__
        # an image name is JSON as it is (the repository's grammar, checked when parsing, and an id)
        image = (',"image":"' + cell_image(self.ms, cell, cid) + '","dockerfile":' + self._folder + cid
                 + '/Dockerfile"') if platform_has_image(self._platform(cell.values)) else ""
        return (head + image + ',"python_resolved":' + enc(res.python)
                + ',"cuda":' + enc(res.cuda) + ',"rocm":' + enc(res.rocm) + ',"cudnn":' + enc(res.cudnn)
                + ',"driver_min":' + enc(res.driver_min) + ',"compat":' + enc(res.compat) + ',"base_image":'
                + enc(res.base_image) + ',"packages":' + self._packages_text(res.packages) + "}")

    def _packages_text(self, packages: tuple[PackagePin, ...]) -> str:
        entry = self._packages.get(id(packages))
        if entry is None or entry[0] is not packages:
            text = json.dumps({p.name: f"{p.version} ({p.variant})" for p in packages}, separators=(",", ":"))
            entry = _bounded(self._packages, self._LIMIT)[id(packages)] = (packages, text)
        return entry[1]


_TRUE = {True: "true", False: "false"}


def _pair_text(pair: tuple[str, str]) -> str:
    """An axis value as a member of a cell's JSON object: ``"torch":"2.7.1"``."""
    return f"{json.dumps(pair[0])}:{json.dumps(pair[1])}"


def _bounded(memo: dict[Any, Any], limit: int) -> dict[Any, Any]:
    """``memo``, emptied first when it holds ``limit`` entries."""
    if len(memo) >= limit:
        memo.clear()
    return memo


def _resolved(r: CellResult) -> Resolution:
    """The resolution of a cell known to be valid."""
    assert r.resolution is not None
    return r.resolution


def table(results: Iterable[CellResult]) -> str:
    """Valid cells, then pruned cells each with its reason."""
    return "".join(_table(results))


def _table(results: Iterable[CellResult]) -> Iterator[str]:
    """:func:`table` in pieces: the counts come first, so the lines wait on disk."""
    with _Spool() as valid, _Spool() as pruned:
        for r in results:
            if r.valid:
                valid.add(_table_valid_line(r))
            else:
                pruned.add(f"  pruned  {r.cell.id}{_mark(r, ' [include]')}: {r.reason}")
        yield f"{valid.count} valid, {pruned.count} pruned of {valid.count + pruned.count} cells\n"
        for chunk in _chunks(itertools.chain(valid, pruned)):
            yield "\n".join(chunk) + "\n"


def _table_valid_line(r: CellResult) -> str:
    res = _resolved(r)
    stack = f"{_packages(res, '{} {} {}')}; {_stack(res)}; {_base_image(res)}"
    return f"  ok      {r.cell.id}{_mark(r, ' [include]')}: {stack}"


def _mark(r: CellResult, text: str) -> str:
    """``text`` for an [[include]] cell, else nothing."""
    return text if r.cell.included else ""


def _packages(res: Resolution, each: str) -> str:
    """The resolved packages, each as ``each`` formats its name, version and variant."""
    return ", ".join(each.format(p.name, p.version, p.variant) for p in res.packages)


def md_escape(text: str) -> str:
    """``text`` as one cell of a GitHub Markdown table: HTML and backslashes escaped, ``|`` as
    ``\\|`` and line breaks as ``<br>``, so no value can end its cell, row or table."""
    from html import escape  # here: JSON, the format of large matrices, escapes no HTML

    text = escape(text, quote=False).replace("\\", "\\\\").replace("|", "\\|")
    return "<br>".join(text.splitlines()) if text else text


def _stack(res: Resolution) -> str:
    if res.cuda:
        return f"CUDA {res.cuda} ({res.compat}, {driver_text(res.driver_min, res.jetpack)})"
    return f"ROCm {res.rocm}" if res.rocm else stack_text(res.accelerator)


def _base_image(res: Resolution) -> str:
    """The base image of a cell, or where a cell without one runs (Windows, macOS)."""
    return res.base_image or f"no image: {res.platform}"


def _md_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], total: int, what: str) -> list[str]:
    """A table of the first :data:`MARKDOWN_ROWS` of ``total`` rows, and how many more there are."""
    if not total:
        return [f"_No {what}._", ""]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(v) for v in r) + " |" for r in rows[:MARKDOWN_ROWS]]
    if total > MARKDOWN_ROWS:
        out.append(f"\n_{total - MARKDOWN_ROWS} more {what}: `envsolve matrix --format json` lists them all._")
    return [*out, ""]


class _Summary:
    """What the Markdown summary shows of the cells: counts, and the first rows of each table."""

    def __init__(self) -> None:
        self.valid: list[tuple[str, ...]] = []
        self.pruned: list[tuple[str, ...]] = []
        self.counts = {"valid": 0, "pruned": 0, "bad": 0}

    def add(self, r: CellResult) -> None:
        kind, rows = ("valid", self.valid) if r.valid else ("pruned", self.pruned)
        self.counts[kind] += 1
        self.counts["bad"] += r.cell.included and not r.valid
        if len(rows) < MARKDOWN_ROWS:
            rows.append(_md_valid_row(r) if r.valid else (r.cell.id + _mark(r, " (include)"), r.reason))


def markdown(ms: MatrixSpec, results: Iterable[CellResult]) -> str:
    """A summary for ``$GITHUB_STEP_SUMMARY``: counts, the valid cells (packages, CUDA/ROCm, base
    image) and the pruned cells with their reasons (the first :data:`MARKDOWN_ROWS` of each: only
    those are held)."""
    s = _Summary()
    for r in results:
        s.add(r)
    valid, pruned, bad = s.counts["valid"], s.counts["pruned"], s.counts["bad"]
    invalid = f"; **{bad} [[include]] cell(s) invalid**" if bad else ""
    lines = [f"## Image matrix {md_escape(ms.path)}", "",
             f"**{valid} valid**, {pruned} pruned of {valid + pruned} cells{invalid}.", ""]
    lines += ["### Valid cells", "",
              *_md_table(("cell", "packages", "CUDA / ROCm", "base image"), s.valid, valid, "valid cells")]
    lines += ["### Pruned cells", "", *_md_table(("cell", "reason"), s.pruned, pruned, "pruned cells")]
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_valid_row(r: CellResult) -> tuple[str, ...]:
    """A valid cell in the summary: id, packages, CUDA/ROCm with the driver floor, base image."""
    res = _resolved(r)
    return r.cell.id + _mark(r, " (include)"), _packages(res, "{} {} ({})"), _stack(res), _base_image(res)


_HTML_STYLE = (
    "body{font:15px/1.45 system-ui,sans-serif;margin:1rem;color:#1d2330}"
    "table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;"
    "border-bottom:1px solid #d5d9e0;vertical-align:top}thead th{background:#eef1f5}"
    ".ok{background:#e4f5e8}.pruned{background:#f4f4f6;color:#5a6273}.bad{background:#fbe7e6}"
    "td.outcome{font-weight:600}.ok td.outcome{color:#2d7a3e}.bad td.outcome{color:#b3261e}"
    "code{overflow-wrap:anywhere}@media(max-width:40rem){td,th{padding:.2rem}}"
)


def html_page(ms: MatrixSpec, results: Iterable[CellResult]) -> Iterator[str]:
    """One HTML page (no script, no fetch): the counts, then every cell in order, coloured by its
    outcome (valid, pruned, an [[include]] cell that is invalid), a pruned cell with its reason. The
    rows wait on disk while the counts are made, so memory stays flat."""
    from html import escape as e

    with _Spool() as rows:
        counts = {"ok": 0, "pruned": 0, "bad": 0}
        for r in results:
            kind = "ok" if r.valid else "bad" if r.cell.included else "pruned"
            counts[kind] += 1
            rows.add(_html_row(r, kind))
        total = sum(counts.values())
        yield (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
               f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
               f"<title>Image matrix {e(ms.path)}</title>\n<style>{_HTML_STYLE}</style>\n</head>\n<body>\n"
               f"<h1>Image matrix <code>{e(ms.path)}</code></h1>\n"
               f'<p><strong>{counts["ok"]} valid</strong>, {counts["pruned"] + counts["bad"]} pruned of {total} cells'
               + (f'; <strong>{counts["bad"]} [[include]] cell(s) invalid</strong>' if counts["bad"] else "")
               + ".</p>\n<table>\n<thead><tr><th scope=\"col\">Cell</th><th scope=\"col\">Outcome</th>"
               "<th scope=\"col\">Packages</th><th scope=\"col\">CUDA / ROCm</th>"
               "<th scope=\"col\">Base image, or why pruned</th></tr></thead>\n<tbody>\n")
        for chunk in _chunks(rows):
            yield "".join(chunk)
        yield "</tbody>\n</table>\n</body>\n</html>\n"


def _html_row(r: CellResult, kind: str) -> str:
    """A cell's row: its id, outcome, and packages, stack and image (valid) or its reason (pruned)."""
    from html import escape as e

    head = f'<tr class="{kind}"><th scope="row"><code>{e(r.cell.id)}</code>{_mark(r, " [include]")}</th>'
    if r.valid:
        res = _resolved(r)
        return (f'{head}<td class="outcome">valid</td><td>{e(_packages(res, "{} {} ({})"))}</td>'
                f"<td>{e(_stack(res))}</td><td><code>{e(_base_image(res))}</code></td></tr>\n")
    return f'{head}<td class="outcome">pruned</td><td></td><td></td><td title="{e(r.reason)}">{e(r.reason)}</td></tr>\n'


def too_many_jobs(fmt: str, valid: int, max_jobs: int | None) -> str:
    """The warning for ``--format github`` of ``valid`` jobs past GitHub's limit of jobs per
    ``strategy.matrix`` ("" for other formats, and within the limit or sharded)."""
    if fmt != "github" or valid <= GITHUB_JOB_LIMIT or max_jobs:
        return ""
    return (f"WARNING: {valid} jobs exceed GitHub's limit of {GITHUB_JOB_LIMIT} per matrix; "
            "split them with --max-jobs 256")


class Tally:
    """What `envsolve matrix` needs of the cells besides its output, gathered as they stream by:
    how many are valid, the [[include]] cells that are not (for ``--check``), and the valid cells
    themselves only when asked (``--render`` writes them all at once)."""

    def __init__(self, *, keep_valid: bool = False) -> None:
        self.valid = 0
        self.bad_includes: list[CellResult] = []
        self.kept: list[CellResult] = []
        self._keep = keep_valid

    def counted(self, results: Iterable[CellResult]) -> Iterator[CellResult]:
        """``results``, unchanged, each noted on the way."""
        for r in results:
            self.valid += r.valid
            if r.cell.included and not r.valid:
                self.bad_includes.append(r)
            if self._keep and r.valid:
                self.kept.append(r)
            yield r


def check_shard(max_jobs: int | None, shard: int | None) -> None:
    """``--shard K`` picks one of the shards that ``--max-jobs N`` cuts: it needs it."""
    if shard is not None and not max_jobs:
        raise SpecError([Problem("--shard", str(shard), "needs --max-jobs N, which cuts the jobs into shards")],
                        tip="add --max-jobs 256 (GitHub's limit per matrix), or leave --shard out")


def streamed(fmt: str, ms: MatrixSpec, results: Iterable[CellResult], render_dir: str, *,
             max_jobs: int | None = None, shard: int | None = None) -> Iterator[str]:
    """What ``envsolve matrix --format fmt`` prints of the cells, in pieces, reading them once as
    they come (a million cells are never held, solved or as text)."""
    if fmt == "github":
        return _github(ms, results, render_dir, max_jobs, shard)
    if fmt == "bake":
        return _bake(ms, results, render_dir)
    if fmt == "markdown":
        return iter([markdown(ms, results)])
    if fmt == "json":
        return everything(ms, results, render_dir)
    if fmt == "html":
        return html_page(ms, results)
    return _table(results)


def printed(fmt: str, ms: MatrixSpec, results: Iterable[CellResult], render_dir: str, *,
            max_jobs: int | None = None, shard: int | None = None) -> str:
    """:func:`streamed` as one text."""
    return "".join(streamed(fmt, ms, results, render_dir, max_jobs=max_jobs, shard=shard))
