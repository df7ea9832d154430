"""Benchmark `envsolve site` end to end: a new interpreter, the data load, the selector's tables
(two processes), the pages, the files written.

    python bench/bench_site_build.py [--runs 3]

Goal (issue 27): under 10 s on a 2-core machine, under 5 MB. Prints the median wall time, the CPU
time of the command and its workers, and the site's size. The wall time depends on what else runs
on the machine: the CPU time is the steadier number (two cores free give about half of it).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _one(out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one `envsolve site -o out`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "envsolve", "site", "-o", str(out), "-q"], check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        runs = [_one(Path(tmp) / f"site{k}") for k in range(args.runs)]
        size = sum(p.stat().st_size for p in (Path(tmp) / "site0").rglob("*") if p.is_file())
    wall = statistics.median(w for w, _ in runs)
    cpu = statistics.median(c for _, c in runs)
    print(f"| runs | wall (median) | CPU (median) | size | cores | load |\n|---|---|---|---|---|---|\n"
          f"| {args.runs} | {wall:.1f} s | {cpu:.1f} s | {size / 1e6:.2f} MB | {os.cpu_count()} | "
          f"{os.getloadavg()[0]:.1f} |")


if __name__ == "__main__":
    main()
