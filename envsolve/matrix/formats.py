"""What `envsolve matrix` prints of solved cells: a table, GitHub's ``strategy.matrix`` JSON (in
shards when asked), a ``docker-bake.json``, a Markdown summary (``$GITHUB_STEP_SUMMARY``), or
everything as JSON."""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..domain import ACCELERATOR, driver_text
from ..solve import Resolution
from .cells import CellResult
from .parse import Cell, MatrixSpec

__all__ = ["GITHUB_JOB_LIMIT", "IMAGE_STAGE", "MARKDOWN_ROWS", "SMOKE_STAGE", "bake", "everything", "github",
           "image_tag", "markdown", "md_escape", "row", "smoke_target", "table", "vendor"]

GITHUB_JOB_LIMIT = 256
# The rendered Dockerfile's stages: the image is ``runtime``; ``smoke`` (FROM runtime, RUN
# smoke_test.py --allow-cpu) comes last and exists for CPU images only, since a GPU image's smoke
# test needs the GPU (templates/Dockerfile.j2).
SMOKE_STAGE = "smoke"
IMAGE_STAGE = "runtime"
MARKDOWN_ROWS = 500  # per table: GitHub keeps at most 1 MiB of a step's summary


# The GitHub-hosted runner that builds a platform natively.
RUNNERS = {"linux/amd64": "ubuntu-latest", "linux/arm64": "ubuntu-24.04-arm"}


def platforms(ms: MatrixSpec, cell: Cell) -> list[str]:
    """The platforms a cell's image is built for: its own (the ``platform`` axis), else [image]'s."""
    return [p] if (p := cell.get("platform")) else list(ms.platforms)


def image_tag(ms: MatrixSpec, cell: Cell) -> str:
    return f"{ms.repository}:{cell.id}"


def row(ms: MatrixSpec, res: CellResult, render_dir: str) -> dict[str, Any]:
    """A valid cell as GitHub and JSON output show it: axis values under axis names, id, image."""
    out: dict[str, Any] = dict(res.cell.values)
    out["id"] = res.cell.id
    out["image"] = image_tag(ms, res.cell)
    out["dockerfile"] = f"{render_dir}/{res.cell.id}/Dockerfile"
    out["vendor"] = vendor(res.resolution)
    if platform := res.cell.get("platform"):
        out["runner"] = RUNNERS[platform]  # built natively: GitHub's Arm runners for linux/arm64
    return out


def vendor(res: Resolution | None) -> str:
    """``nvidia``, ``amd`` or ``cpu``: whose GPU the cell's image needs to run its smoke test."""
    if res is None:
        return "cpu"
    return next((v for v, a in ACCELERATOR.items() if a == res.accelerator), "cpu")


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
    them. GPU cells have none: their smoke test needs the GPU, at ``docker run --gpus all``."""
    targets: dict[str, dict[str, Any]] = {}
    smoke: dict[str, dict[str, Any]] = {}
    for r in results:
        if not r.valid:
            continue
        t: dict[str, Any] = {"context": f"{render_dir}/{r.cell.id}", "dockerfile": "Dockerfile",
                             "tags": [image_tag(ms, r.cell)], "platforms": platforms(ms, r.cell)}
        if IMAGE_STAGE:
            t["target"] = IMAGE_STAGE
        targets[r.cell.id] = t
        if vendor(r.resolution) == "cpu":
            smoke[smoke_target(r.cell)] = {
                "description": f"runs smoke_test.py of {r.cell.id} at build time",
                "context": t["context"], "dockerfile": "Dockerfile", "target": SMOKE_STAGE,
                "platforms": platforms(ms, r.cell), "output": ["type=cacheonly"]}
    groups: dict[str, dict[str, Any]] = {"default": {"targets": list(targets)}}
    if smoke:
        groups["smoke"] = {"description": "the smoke test of every CPU cell, run at build time",
                           "targets": list(smoke)}
    return {"group": groups, "target": targets | smoke}


def cell_entry(ms: MatrixSpec, r: CellResult, render_dir: str) -> dict[str, Any]:
    """One cell as ``--format json`` shows it: axis values, id, validity, and the resolution or
    the reason it was pruned."""
    entry: dict[str, Any] = {**dict(r.cell.values), "id": r.cell.id, "valid": r.valid, "include": r.cell.included}
    if r.resolution is not None:
        res = r.resolution
        entry |= {"image": image_tag(ms, r.cell), "dockerfile": f"{render_dir}/{r.cell.id}/Dockerfile",
                  "python_resolved": res.python, "cuda": res.cuda, "rocm": res.rocm, "cudnn": res.cudnn,
                  "driver_min": res.driver_min, "compat": res.compat, "base_image": res.base_image,
                  "packages": {p.name: f"{p.version} ({p.variant})" for p in res.packages}}
    else:
        entry["reason"] = r.reason
    return entry


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


def table(results: list[CellResult]) -> str:
    """Valid cells, then pruned cells each with its reason."""
    lines = []
    valid = [r for r in results if r.valid]
    pruned = [r for r in results if not r.valid]
    lines.append(f"{len(valid)} valid, {len(pruned)} pruned of {len(results)} cells")
    for r in valid:
        res = r.resolution
        assert res is not None
        stack = _stack(res)
        pkgs = ", ".join(f"{p.name} {p.version} {p.variant}" for p in res.packages)
        mark = " [include]" if r.cell.included else ""
        lines.append(f"  ok      {r.cell.id}{mark}: {pkgs}; {stack}; {res.base_image}")
    for r in pruned:
        mark = " [include]" if r.cell.included else ""
        lines.append(f"  pruned  {r.cell.id}{mark}: {r.reason}")
    return "\n".join(lines) + "\n"


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
    valid = [r for r in results if r.valid]
    pruned = [r for r in results if not r.valid]
    bad = [r for r in pruned if r.cell.included]
    lines = [f"## Image matrix {md_escape(ms.path)}", "",
             f"**{len(valid)} valid**, {len(pruned)} pruned of {len(results)} cells"
             + (f"; **{len(bad)} [[include]] cell(s) invalid**" if bad else "") + ".", ""]
    rows: list[tuple[str, ...]] = []
    for r in valid:
        res = r.resolution
        assert res is not None
        pkgs = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in res.packages)
        rows.append((r.cell.id + (" (include)" if r.cell.included else ""), pkgs, _stack(res), res.base_image))
    lines += ["### Valid cells", "", *_md_table(("cell", "packages", "CUDA / ROCm", "base image"), rows, "valid cells")]
    rows = [(r.cell.id + (" (include)" if r.cell.included else ""), r.reason) for r in pruned]
    lines += ["### Pruned cells", "", *_md_table(("cell", "reason"), rows, "pruned cells")]
    return "\n".join(lines).rstrip("\n") + "\n"
