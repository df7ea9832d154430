"""What `envsolve matrix` prints of solved cells: a table, GitHub's ``strategy.matrix`` JSON (in
shards when asked), a ``docker-bake.json``, or everything as JSON."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from .cells import CellResult
from .spec import Cell, MatrixSpec

__all__ = ["GITHUB_JOB_LIMIT", "bake", "everything", "github", "image_tag", "row", "table"]

GITHUB_JOB_LIMIT = 256


def image_tag(ms: MatrixSpec, cell: Cell) -> str:
    return f"{ms.repository}:{cell.id}"


def row(ms: MatrixSpec, res: CellResult, render_dir: str) -> dict[str, Any]:
    """A valid cell as GitHub and JSON output show it: axis values under axis names, id, image."""
    out: dict[str, Any] = dict(res.cell.values)
    out["id"] = res.cell.id
    out["image"] = image_tag(ms, res.cell)
    out["dockerfile"] = f"{render_dir}/{res.cell.id}/Dockerfile"
    return out


def github(ms: MatrixSpec, results: list[CellResult], render_dir: str, max_jobs: int | None) -> dict[str, Any]:
    """``{"include": [...]}``, or ``{"shards": [{"include": [...]}, ...]}`` of at most ``max_jobs``."""
    rows = [row(ms, r, render_dir) for r in results if r.valid]
    if not max_jobs:
        return {"include": rows}
    return {"shards": [{"include": rows[i:i + max_jobs]} for i in range(0, len(rows), max_jobs)] or [{"include": []}]}


def bake(ms: MatrixSpec, results: list[CellResult], render_dir: str) -> dict[str, Any]:
    """A docker-bake.json: a target per valid cell and a ``default`` group of them all."""
    targets = {r.cell.id: {"context": f"{render_dir}/{r.cell.id}", "dockerfile": "Dockerfile",
                           "tags": [image_tag(ms, r.cell)], "platforms": list(ms.platforms)}
               for r in results if r.valid}
    return {"group": {"default": {"targets": list(targets)}}, "target": targets}


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
        stack = f"CUDA {res.cuda} ({res.compat}, driver >= {res.driver_min})" if res.cuda else (
            f"ROCm {res.rocm}" if res.rocm else "CPU")
        pkgs = ", ".join(f"{p.name} {p.version} {p.variant}" for p in res.packages)
        mark = " [include]" if r.cell.included else ""
        lines.append(f"  ok      {r.cell.id}{mark}: {pkgs}; {stack}; {res.base_image}")
    for r in pruned:
        mark = " [include]" if r.cell.included else ""
        lines.append(f"  pruned  {r.cell.id}{mark}: {r.reason}")
    return "\n".join(lines) + "\n"
