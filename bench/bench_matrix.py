"""Benchmark `envsolve matrix` end to end on matrices of about 10k, 100k and 1M cells, per output format.

    python bench/bench_matrix.py [--sizes 10k,100k,1m] [--runs 3] [--formats json,table,github,bake,markdown]

The 100k matrix is the one the speed goal names: 7 Pythons x 16 torch releases x 15 accelerators
x 5 OSes x 3 image flavours x 4 Keras releases (100,800 cells), with GPUs of both vendors fixed.
10k keeps 3 OSes, 2 flavours and 1 Keras release (10,080 cells); 1M takes every Keras release
(1,008,000 cells). Each run is a new interpreter (start-up, data load, solving, JSON on stdout);
reported per format: median wall time, cells per second, and, from one more run, the peak memory
of the command and the workers it forks (the largest sum of their proportional set sizes, sampled
every 100 ms: pages the workers share with it count once; sampling slows a run, so it is not
timed). Every format streams, so the peak stays flat in the number of cells. ``--format json`` of
a matrix of 20,000 cells or more is solved by one forked worker per CPU
(``ENVSOLVE_MATRIX_WORKERS=1``: one process).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15"]
ACCELERATORS = ["cpu", "cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132",
                "rocm6.2", "rocm6.3", "rocm6.4", "rocm7.0", "rocm7.1", "rocm7.2"]
OSES = ["ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "bookworm", "trixie"]
FLAVORS = ["base", "runtime", "devel"]


def matrix_text(size: str) -> tuple[str, int]:
    from envsolve.data import load
    from envsolve.provider import Provider

    p = Provider(load())
    torch = [r.raw for r in p.releases("torch")][:16]
    keras = [r.raw for r in p.releases("keras")]
    oses, flavors = OSES, FLAVORS
    if size == "10k":
        oses, flavors, keras = OSES[:3], FLAVORS[:2], keras[:1]
    elif size == "100k":
        keras = keras[:4]
    q = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    text = (f"[matrix]\npython = {q(PYTHONS)}\ntorch = {q(torch)}\nkeras = {q(keras)}\n"
            f"accelerator = {q(ACCELERATORS)}\nos = {q(oses)}\nflavor = {q(flavors)}\n"
            'gpus = ["A100", "H100", "MI300X"]\n')
    return text, len(PYTHONS) * len(torch) * len(keras) * len(ACCELERATORS) * len(oses) * len(flavors)


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (a large matrix is solved by forked workers)."""
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    out += _tree(int(child))
    except OSError:
        pass
    return out


def _pss_kib(pid: int) -> int:
    """The proportional set size of one process (its private pages, and its share of those it
    shares with its forked workers), in KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("Pss:")), 0)
    except OSError:
        return 0


def run(spec: Path, fmt: str, env: dict[str, str] | None = None, *, memory: bool = False) -> tuple[float, int]:
    """(seconds, peak memory in KiB) of one `envsolve matrix SPEC --format FMT`. The memory is the
    command's own peak RSS or, with ``memory``, the largest sum, sampled every 100 ms, of the
    proportional set sizes of the command and the workers it forks (where /proc has
    ``smaps_rollup``). Sampling slows the command it samples (reading a process's page tables
    contends with its page faults): time a run that is not sampled."""
    t0 = time.perf_counter()
    peak = 0
    env = env if env is not None else {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "envsolve", "matrix", str(spec), "--format", fmt],
                                stdout=sink, stderr=subprocess.PIPE, env=env, cwd=spec.parent)
        sampled = memory and os.path.exists(f"/proc/{proc.pid}/smaps_rollup")
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG if sampled else 0)
            if pid:
                break
            peak = max(peak, sum(_pss_kib(p) for p in _tree(proc.pid)))
            time.sleep(0.1)
    secs = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"envsolve matrix failed: {proc.stderr.read().decode() if proc.stderr else status}")
    return secs, peak if sampled else usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10k,100k,1m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="json,table,github,bake,markdown")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print("| cells | format | end to end (median) | cells/s | peak memory | runs |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for size in args.sizes.split(","):
            text, n = matrix_text(size)
            spec = Path(d) / f"{size}.toml"
            spec.write_text(text)
            for fmt in args.formats.split(","):
                secs = statistics.median(run(spec, fmt)[0] for _ in range(args.runs))
                rss = run(spec, fmt, memory=True)[1] / 1024
                print(f"| {n:,} | {fmt} | {secs:.2f} s | {n / secs:,.0f} | {rss:.0f} MiB | {args.runs} |", flush=True)


if __name__ == "__main__":
    main()
