"""What `envsolve matrix` prints of solved cells: a table, GitHub's ``strategy.matrix`` JSON (in
shards when asked), a ``docker-bake.json``, a Markdown summary (``$GITHUB_STEP_SUMMARY``), or
everything as JSON."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..domain import ACCELERATOR, GITHUB_RUNNER, PLATFORMS, VENDORS, Vendor, driver_text
from ..errors import Problem, SpecError
from ..solve import Resolution
from ..tables import word
from .cells import CellResult
from .parse import Cell, MatrixSpec

__all__ = ["GITHUB_JOB_LIMIT", "IMAGE_STAGE", "MARKDOWN_ROWS", "SMOKE_STAGE", "bake", "check_shard", "everything",
           "github", "cell_image", "markdown", "md_escape", "printed", "row", "smoke_target", "table", "too_many_jobs",
           "vendor"]

GITHUB_JOB_LIMIT = 256
# The rendered Dockerfile's stages: the image is ``runtime``; ``smoke`` (FROM runtime, RUN
# smoke_test.py --allow-cpu) comes last and exists for CPU images only, since a GPU image's smoke
# test needs the GPU (templates/Dockerfile.j2).
SMOKE_STAGE = "smoke"
IMAGE_STAGE = "runtime"
MARKDOWN_ROWS = 500  # per table: GitHub keeps at most 1 MiB of a step's summary


def platforms(ms: MatrixSpec, cell: Cell) -> list[str]:
    """The platforms a cell's image is built for: its own (the ``platform`` axis), else [image]'s."""
    return [p] if (p := cell.get("platform")) else list(ms.platforms)


def cell_image(ms: MatrixSpec, cell: Cell) -> str:
    return f"{ms.repository}:{cell.id}"


def row(ms: MatrixSpec, res: CellResult, render_dir: str) -> dict[str, Any]:
    """A valid cell as GitHub and JSON output show it: axis values under axis names, id, image,
    whose GPU its smoke test needs, and a Jetson cell's ``jetpack`` (the workflow runs it with the
    Jetson's ``nvidia`` runtime)."""
    out: dict[str, Any] = dict(res.cell.values)
    out["id"] = res.cell.id
    out["image"] = cell_image(ms, res.cell)
    out["dockerfile"] = f"{render_dir}/{res.cell.id}/Dockerfile"
    out["vendor"] = vendor(res.resolution)
    if res.resolution is not None and res.resolution.jetpack:
        out["jetpack"] = res.resolution.jetpack
    if platform := word(res.cell.get("platform"), PLATFORMS):
        out["runner"] = GITHUB_RUNNER[platform]  # built natively: GitHub's Arm runners for linux/arm64
    return out


def vendor(res: Resolution | None) -> Vendor:
    """``nvidia``, ``amd`` or ``cpu``: whose GPU the cell's image needs to run its smoke test."""
    if res is None:
        return "cpu"
    return next((v for v in VENDORS if ACCELERATOR[v] == res.accelerator), "cpu")


def github(ms: MatrixSpec, results: list[CellResult], render_dir: str, max_jobs: int | None) -> dict[str, Any]:
    """``{"include": [...]}``, or ``{"shards": [{"include": [...]}, ...]}`` of at most ``max_jobs``."""
    rows = [row(ms, r, render_dir) for r in results if r.valid]
    if not max_jobs:
        return {"include": rows}
    return {"shards": [{"include": rows[i:i + max_jobs]} for i in range(0, len(rows), max_jobs)] or [{"include": []}]}


def smoke_target(cell: Cell) -> str:
    """The bake target that builds a cell's ``smoke`` stage. Cell ids start with ``py`` or a
    framework name, so ``smoke-`` never names a cell."""
    return f"smoke-{cell.id}"


def bake(ms: MatrixSpec, results: list[CellResult], render_dir: str) -> dict[str, Any]:
    """A docker-bake.json: a target per valid cell and a ``default`` group of them all; for the
    CPU cells also a ``smoke-<id>`` target building the ``smoke`` stage (the smoke test runs at
    build time; its output is the build cache only, no image, no tag) and a ``smoke`` group of
    them. GPU cells have none: their smoke test needs the GPU, at ``docker run`` with the flags of
    :func:`envsolve.domain.gpu_run_flags` (``--gpus all``; a Jetson's ``--runtime nvidia``)."""
    valid = [r for r in results if r.valid]
    targets = {r.cell.id: _image_target(ms, r, render_dir) for r in valid}
    smoke = {smoke_target(r.cell): _smoke_target(ms, r, render_dir) for r in valid if vendor(r.resolution) == "cpu"}
    groups: dict[str, dict[str, Any]] = {"default": {"targets": list(targets)}}
    if smoke:
        groups["smoke"] = {"description": "the smoke test of every CPU cell, run at build time",
                           "targets": list(smoke)}
    return {"group": groups, "target": targets | smoke}


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
    return entry | {"image": cell_image(ms, r.cell), "dockerfile": f"{render_dir}/{r.cell.id}/Dockerfile",
                    "python_resolved": res.python, "cuda": res.cuda, "rocm": res.rocm, "cudnn": res.cudnn,
                    "driver_min": res.driver_min, "compat": res.compat, "base_image": res.base_image,
                    "packages": {p.name: f"{p.version} ({p.variant})" for p in res.packages}}


def everything(ms: MatrixSpec, results: Iterable[CellResult], render_dir: str) -> Iterator[str]:
    """``{"cells": [...], "valid": N, "pruned": M}`` as JSON text in pieces, one cell a line, so a
    matrix of a million cells is never held whole, solved or as text."""
    yield '{"cells": ['
    valid = total = 0
    for r in results:
        yield ("\n" if total == 0 else ",\n") + json.dumps(cell_entry(ms, r, render_dir), separators=(",", ":"))
        valid += r.valid
        total += 1
    yield f'\n], "valid": {valid}, "pruned": {total - valid}}}\n'


def _split(results: list[CellResult]) -> tuple[list[CellResult], list[CellResult]]:
    """(valid cells, pruned cells)."""
    return [r for r in results if r.valid], [r for r in results if not r.valid]


def _resolved(r: CellResult) -> Resolution:
    """The resolution of a cell known to be valid."""
    assert r.resolution is not None
    return r.resolution


def table(results: list[CellResult]) -> str:
    """Valid cells, then pruned cells each with its reason."""
    valid, pruned = _split(results)
    lines = [f"{len(valid)} valid, {len(pruned)} pruned of {len(results)} cells"]
    lines += [_table_valid_line(r) for r in valid]
    lines += [f"  pruned  {r.cell.id}{_mark(r, ' [include]')}: {r.reason}" for r in pruned]
    return "\n".join(lines) + "\n"


def _table_valid_line(r: CellResult) -> str:
    res = _resolved(r)
    stack = f"{_packages(res, '{} {} {}')}; {_stack(res)}; {res.base_image}"
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
    text = html.escape(text, quote=False).replace("\\", "\\\\").replace("|", "\\|")
    return "<br>".join(text.splitlines()) if text else text


def _stack(res: Resolution) -> str:
    if res.cuda:
        return f"CUDA {res.cuda} ({res.compat}, {driver_text(res.driver_min, res.jetpack)})"
    return f"ROCm {res.rocm}" if res.rocm else "CPU"


def _md_table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]], what: str) -> list[str]:
    if not rows:
        return [f"_No {what}._", ""]
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(md_escape(v) for v in r) + " |" for r in rows[:MARKDOWN_ROWS]]
    if len(rows) > MARKDOWN_ROWS:
        out.append(f"\n_{len(rows) - MARKDOWN_ROWS} more {what}: `envsolve matrix --format json` lists them all._")
    return [*out, ""]


def markdown(ms: MatrixSpec, results: list[CellResult]) -> str:
    """A summary for ``$GITHUB_STEP_SUMMARY``: counts, the valid cells (packages, CUDA/ROCm, base
    image) and the pruned cells with their reasons."""
    valid, pruned = _split(results)
    bad = sum(r.cell.included for r in pruned)
    invalid = f"; **{bad} [[include]] cell(s) invalid**" if bad else ""
    lines = [f"## Image matrix {md_escape(ms.path)}", "",
             f"**{len(valid)} valid**, {len(pruned)} pruned of {len(results)} cells{invalid}.", ""]
    rows = [_md_valid_row(r) for r in valid]
    lines += ["### Valid cells", "", *_md_table(("cell", "packages", "CUDA / ROCm", "base image"), rows, "valid cells")]
    rows = [(r.cell.id + _mark(r, " (include)"), r.reason) for r in pruned]
    lines += ["### Pruned cells", "", *_md_table(("cell", "reason"), rows, "pruned cells")]
    return "\n".join(lines).rstrip("\n") + "\n"


def _md_valid_row(r: CellResult) -> tuple[str, ...]:
    """A valid cell in the summary: id, packages, CUDA/ROCm with the driver floor, base image."""
    res = _resolved(r)
    return r.cell.id + _mark(r, " (include)"), _packages(res, "{} {} ({})"), _stack(res), res.base_image


def too_many_jobs(fmt: str, results: list[CellResult], max_jobs: int | None) -> str:
    """The warning for ``--format github`` past GitHub's limit of jobs per ``strategy.matrix``
    ("" for other formats, and within the limit or sharded)."""
    valid = sum(r.valid for r in results)
    if fmt != "github" or valid <= GITHUB_JOB_LIMIT or max_jobs:
        return ""
    return (f"WARNING: {valid} jobs exceed GitHub's limit of {GITHUB_JOB_LIMIT} per matrix; "
            "split them with --max-jobs 256")


def check_shard(max_jobs: int | None, shard: int | None) -> None:
    """``--shard K`` picks one of the shards that ``--max-jobs N`` cuts: it needs it."""
    if shard is not None and not max_jobs:
        raise SpecError([Problem("--shard", str(shard), "needs --max-jobs N, which cuts the jobs into shards")],
                        tip="add --max-jobs 256 (GitHub's limit per matrix), or leave --shard out")


def _github_text(ms: MatrixSpec, results: list[CellResult], render_dir: str, max_jobs: int | None,
                 shard: int | None) -> str:
    """``--format github``: all rows, the shards of ``max_jobs`` rows, or shard ``shard`` of them (from 1)."""
    out = github(ms, results, render_dir, max_jobs)
    if shard is not None:
        shards = out.get("shards", [out])
        if shard > len(shards):
            raise SpecError([Problem("--shard", str(shard), f"there are {len(shards)} shards")])
        out = shards[shard - 1]
    return json.dumps(out, separators=(",", ":")) + "\n"


def printed(fmt: str, ms: MatrixSpec, results: list[CellResult], render_dir: str, *, max_jobs: int | None = None,
            shard: int | None = None) -> str:
    """What ``envsolve matrix --format fmt`` prints of solved cells (``--format json`` of cells
    that stream: :func:`everything`)."""
    if fmt == "github":
        return _github_text(ms, results, render_dir, max_jobs, shard)
    if fmt == "bake":
        return json.dumps(bake(ms, results, render_dir), indent=1) + "\n"
    if fmt == "markdown":
        return markdown(ms, results)
    if fmt == "json":
        return "".join(everything(ms, results, render_dir))
    return table(results)
