"""A large matrix solved by several processes: the cells cut into chunks of :data:`CHUNK`, each
chunk solved and written (``--format json``) by one of the forked workers, the pieces printed in
the cells' order, so the output is the bytes one process writes (``tests/test_matrix.py``).

A worker takes the next chunk no worker has taken, so the chunks each sees come in order: it
keeps one cursor over the cells and one :class:`~envsolve.matrix.cells.Solving` (the solver's
cache and the refused groups) for all of them. At most :data:`AHEAD` chunks per worker wait to be
printed, so memory stays flat in the cells however slowly the output is read.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..errors import Problem, SpecError
from ..provider import Provider
from .cells import CellResult, Solving
from .formats import CellTexts, JsonPiece, Tally, json_document
from .parse import Cell, MatrixSpec

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["CHUNK", "MIN_CELLS", "json_pieces", "workers_for"]

CHUNK = 4096  # cells per chunk: a worker's piece of output (about 1.3 MB of JSON)
MIN_CELLS = 20_000  # a smaller matrix is done sooner by one process than by starting others
AHEAD = 3  # chunks per worker solved before the one printing now is done
WORKERS_ENV = "ENVSOLVE_MATRIX_WORKERS"


def workers_for(ms: MatrixSpec, environ: Mapping[str, str] | None = None) -> int:
    """How many processes solve ``ms``: one per CPU this process may use (``ENVSOLVE_MATRIX_WORKERS``
    sets it), one for a matrix under :data:`MIN_CELLS` cells or where processes cannot fork."""
    env = os.environ if environ is None else environ
    asked = env.get(WORKERS_ENV, "").strip()
    if asked and not (asked.isdigit() and int(asked) > 0):
        raise SpecError([Problem(WORKERS_ENV, asked, "is not a number of processes")],
                        tip=f"set {WORKERS_ENV} to a whole number such as 2 (1: solve in this process), or unset it")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    n = int(asked) if asked else cpus
    cells = math.prod(len(values) for _, values in ms.axes) + len(ms.includes)
    if n <= 1 or cells < MIN_CELLS:
        return 1
    import multiprocessing  # here: a small matrix never needs it

    return n if "fork" in multiprocessing.get_all_start_methods() else 1


class _Chunk(NamedTuple):
    """What a worker sends back of one chunk: its JSON lines and the [[include]] cells that are invalid."""

    piece: JsonPiece
    bad_includes: list[CellResult]


class _Worker:
    """A forked worker's state: a cursor over the cells, the solving they share, the JSON texts."""

    def __init__(self, provider: Provider, ms: MatrixSpec, render_dir: str) -> None:
        self.solving = Solving(provider, ms)
        self.texts = CellTexts(ms, render_dir)
        # without [[include]] or [[exclude]] the cursor skips the product's tuples, not cells
        self.raw = not ms.includes and not ms.excludes
        self.cells: Iterator[Any] = ms.product_values() if self.raw else ms.iter_cells()
        self.at = 0  # the index of the cursor's next cell

    def chunk(self, index: int) -> _Chunk:
        start = index * CHUNK
        if start < self.at:
            raise AssertionError(f"chunk {index} comes after the worker's cursor ({self.at})")
        collections.deque(itertools.islice(self.cells, start - self.at), maxlen=0)  # the other workers' cells
        taken = list(itertools.islice(self.cells, CHUNK))
        self.at = start + len(taken)
        cells: list[Cell] = [Cell(v) for v in taken] if self.raw else taken
        results = list(self.solving.solve(cells))
        return _Chunk(self.texts.piece(results), [r for r in results if r.cell.included and not r.valid])


_FORKED: dict[str, Any] = {}  # what a forked worker inherits (the provider, the matrix), and its own state


def _solve_chunk(index: int) -> _Chunk:
    worker = _FORKED.get("worker")
    if worker is None:
        worker = _FORKED["worker"] = _Worker(_FORKED["provider"], _FORKED["ms"], _FORKED["render_dir"])
    return worker.chunk(index)


def json_pieces(provider: Provider, ms: MatrixSpec, render_dir: str, workers: int, tally: Tally) -> Iterator[str]:
    """``envsolve matrix --format json`` of ``ms`` by ``workers`` forked processes: the text of
    :func:`~envsolve.matrix.formats.everything`, in pieces; ``tally`` counts the cells as they come."""
    return json_document(_pieces(provider, ms, render_dir, workers, tally))


def _pieces(provider: Provider, ms: MatrixSpec, render_dir: str, workers: int, tally: Tally) -> Iterator[JsonPiece]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    fork = multiprocessing.get_context("fork")
    _FORKED.update(provider=provider, ms=ms, render_dir=render_dir)
    try:
        with ProcessPoolExecutor(workers, mp_context=fork) as pool:
            waiting: collections.deque[Future[_Chunk]] = collections.deque()
            submitted = itertools.count()
            last = False  # a chunk came back short: the cells are done
            while True:
                while not last and len(waiting) < workers * AHEAD:
                    waiting.append(pool.submit(_solve_chunk, next(submitted)))
                if not waiting:
                    return
                got = waiting.popleft().result()
                if got.piece.total < CHUNK:
                    last = True
                    for later in waiting:  # past the end: empty
                        later.cancel()
                    waiting.clear()
                tally.valid += got.piece.valid
                tally.bad_includes += got.bad_includes
                yield got.piece
    finally:
        _FORKED.clear()
