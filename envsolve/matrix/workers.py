"""A large matrix solved by several processes on Linux: the product of its axes cut into chunks
of :data:`CHUNK` cells (less those an [[exclude]] leaves out), each chunk solved and written
(``--format json``) by one of the forked workers, the pieces printed in the cells' order, so the
output is the bytes one process writes (``tests/test_matrix.py``).

A worker takes the next chunk no worker has taken, so the chunks each sees come in order: it
keeps one cursor over the product and one :class:`~envsolve.matrix.cells.Solving` (its solver
cache and refused groups) for all of its chunks. At most :data:`AHEAD` chunks per worker wait to
be printed, so memory stays flat in the cells however slowly the output is read; when the output
stops (a closed pipe, Ctrl-C, an error) the chunks not started are dropped. A matrix with
[[include]] rows is solved in one process: including holds every cell (``MatrixSpec.iter_cells``).
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from ..errors import Problem, SpecError
from ..provider import Provider
from .cells import Solving
from .formats import CellTexts, JsonPiece, Tally, json_document
from .parse import Cell, MatrixSpec

if TYPE_CHECKING:
    from concurrent.futures import Future

__all__ = ["CHUNK", "MAX_WORKERS", "MIN_CELLS", "WORKERS_ENV", "cpus", "json_pieces", "workers_for"]

CHUNK = 4096  # cells of the product per chunk: a worker's piece of output (about 1.3 MB of JSON)
MIN_CELLS = 20_000  # a smaller product is done sooner by one process than by starting others
AHEAD = 3  # chunks per worker solved before the one printing now is done
MAX_WORKERS = 256
WORKERS_ENV = "ENVSOLVE_MATRIX_WORKERS"


def workers_for(ms: MatrixSpec, environ: Mapping[str, str] | None = None) -> int:
    """How many processes solve ``ms``: one per CPU this process may use (``ENVSOLVE_MATRIX_WORKERS``
    sets it); one for a product under :data:`MIN_CELLS` cells, a matrix with [[include]] rows, or
    off Linux (forking is Linux's way to start a worker; macOS's is unsafe with its frameworks)."""
    n = _asked(os.environ if environ is None else environ) or cpus()
    cells = math.prod(len(values) for _, values in ms.axes)
    if n <= 1 or cells < MIN_CELLS or ms.includes or not sys.platform.startswith("linux"):
        return 1
    return n


def _asked(env: Mapping[str, str]) -> int | None:
    """The number of workers ``ENVSOLVE_MATRIX_WORKERS`` asks for (None: unset); anything but a
    whole number from 1 to :data:`MAX_WORKERS` is a :class:`~envsolve.errors.SpecError`."""
    asked = env.get(WORKERS_ENV, "").strip()
    if not asked:
        return None
    if not (re.fullmatch(r"[0-9]{1,3}", asked) and 1 <= int(asked) <= MAX_WORKERS):
        raise SpecError([Problem(WORKERS_ENV, asked, f"is not a number of processes from 1 to {MAX_WORKERS}")],
                        tip=f"set {WORKERS_ENV} to a whole number such as 2 (1: solve in this process), or unset it")
    return int(asked)


def cpus() -> int:
    """The CPUs this process may use: those it may run on, fewer under a container's CPU quota
    (cgroup v2's ``cpu.max``, as ``docker --cpus`` and Kubernetes' limits set it)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as f:
            quota, period = f.read().split()[:2]
        if quota != "max":
            cpus = min(cpus, max(1, int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return cpus


class _Chunk(NamedTuple):
    """What a worker sends back of one chunk: its JSON lines, and how many cells of the product it
    covered (excluded ones too: fewer than CHUNK once the product ends)."""

    piece: JsonPiece
    covered: int


class _Worker:
    """A forked worker's state: a cursor over the product, its own solving and JSON texts."""

    def __init__(self, provider: Provider, ms: MatrixSpec, render_dir: str) -> None:
        self.ms = ms
        self.solving = Solving(provider, ms)
        self.texts = CellTexts(ms, render_dir)
        self.values = ms.product_values()
        self.at = 0  # the index in the product of the cursor's next cell

    def chunk(self, index: int) -> _Chunk:
        start = index * CHUNK
        if start < self.at:
            raise AssertionError(f"chunk {index} comes after the worker's cursor ({self.at})")
        collections.deque(itertools.islice(self.values, start - self.at), maxlen=0)  # the other workers' cells
        taken = list(itertools.islice(self.values, CHUNK))
        self.at = start + len(taken)
        cells = self.ms.kept(map(Cell, taken))
        return _Chunk(self.texts.piece(list(self.solving.solve(cells))), len(taken))


_FORKED: dict[str, object] = {}  # what a forked worker inherits (the provider, the matrix), and its own state


def _start_worker() -> None:
    """A worker leaves Ctrl-C to the command, which drops the chunks not started and stops."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _solve_chunk(index: int) -> _Chunk:
    worker = _FORKED.get("worker")
    if not isinstance(worker, _Worker):
        provider, ms, render_dir = _FORKED["provider"], _FORKED["ms"], _FORKED["render_dir"]
        assert isinstance(provider, Provider) and isinstance(ms, MatrixSpec) and isinstance(render_dir, str)
        worker = _FORKED["worker"] = _Worker(provider, ms, render_dir)
    return worker.chunk(index)


def json_pieces(provider: Provider, ms: MatrixSpec, render_dir: str, workers: int, tally: Tally) -> Iterator[str]:
    """``envsolve matrix --format json`` of ``ms`` (without [[include]] rows) by ``workers``
    forked processes: the text of :func:`~envsolve.matrix.formats.everything`, in pieces;
    ``tally`` counts the valid cells as they come."""
    return json_document(_pieces(provider, ms, render_dir, workers, tally))


def _pieces(provider: Provider, ms: MatrixSpec, render_dir: str, workers: int, tally: Tally) -> Iterator[JsonPiece]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    _FORKED.update(provider=provider, ms=ms, render_dir=render_dir)
    pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_start_worker)
    try:
        waiting: collections.deque[Future[_Chunk]] = collections.deque()
        submitted = itertools.count()
        while True:
            while len(waiting) < workers * AHEAD:
                waiting.append(pool.submit(_solve_chunk, next(submitted)))
            got = waiting.popleft().result()
            tally.valid += got.piece.valid
            yield got.piece
            if got.covered < CHUNK:  # the product ended in this chunk; the later ones are empty
                return
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # the chunks not started are dropped
        _FORKED.clear()
