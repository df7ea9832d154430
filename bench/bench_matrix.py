"""Benchmark `envsolve matrix` end to end on matrices of about 10k, 100k and 1M cells, per output format.

    python bench/bench_matrix.py [--sizes 10k,100k,1m] [--runs 3] [--formats json,table,github,bake,markdown]

The 100k matrix is the one the speed goal names: 7 Pythons x 16 torch releases x 15 accelerators
x 5 OSes x 3 image flavours x 4 Keras releases (100,800 cells), with GPUs of both vendors fixed.
10k keeps 3 OSes, 2 flavours and 1 Keras release (10,080 cells); 1M takes every Keras release
(1,008,000 cells). Each run is a new interpreter (start-up, data load, solving, JSON on stdout);
reported per format: median wall time, cells per second, and the child's peak RSS (its
``ru_maxrss`` from ``os.wait4``, the resource usage of that one process). Every format streams, so
the peak stays flat in the number of cells.
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


def run(spec: Path, fmt: str) -> tuple[float, int]:
    """(seconds, peak RSS in KiB) of one `envsolve matrix SPEC --format FMT`."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "envsolve", "matrix", str(spec), "--format", fmt],
                                stdout=sink, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t0
    if status != 0:
        raise SystemExit(f"envsolve matrix failed: {proc.stderr.read().decode() if proc.stderr else status}")
    return secs, usage.ru_maxrss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10k,100k,1m")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--formats", default="json,table,github,bake,markdown")
    args = ap.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print("| cells | format | end to end (median) | cells/s | peak RSS | runs |\n|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for size in args.sizes.split(","):
            text, n = matrix_text(size)
            spec = Path(d) / f"{size}.toml"
            spec.write_text(text)
            for fmt in args.formats.split(","):
                results = [run(spec, fmt) for _ in range(args.runs)]
                secs = statistics.median(s for s, _ in results)
                rss = max(r for _, r in results) / 1024
                print(f"| {n:,} | {fmt} | {secs:.2f} s | {n / secs:,.0f} | {rss:.0f} MiB | {args.runs} |", flush=True)


if __name__ == "__main__":
    main()
