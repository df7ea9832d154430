"""Benchmark `envsolve matrix` on matrices of about 2,500, 5,000 and 10,000 cells.

    python bench/bench_matrix.py

Every PyTorch release x 5 Pythons x 14 accelerators x the OS axis, with GPUs of both vendors
fixed. Reports cells per second in one process (a fresh graph each size, so no warm caches), and
the command end to end (interpreter start, data load, JSON output) for the 10,000-cell matrix.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ACCELERATORS = ["cpu", "cu118", "cu121", "cu124", "cu126", "cu128", "cu129", "cu130", "cu132",
                "rocm6.2", "rocm6.3", "rocm6.4", "rocm7.0", "rocm7.1"]
OSES = ["ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "bookworm", "trixie"]


def matrix_text(oses: list[str]) -> str:
    from envsolve.data import load
    from envsolve.provider import Provider

    torch = sorted(r.raw for r in Provider(load()).releases("torch"))
    q = lambda xs: "[" + ", ".join(f'"{x}"' for x in xs) + "]"  # noqa: E731
    return (f"[matrix]\npython = {q(['3.10', '3.11', '3.12', '3.13', '3.14'])}\ntorch = {q(torch)}\n"
            f"accelerator = {q(ACCELERATORS)}\nos = {q(oses)}\ngpus = [\"A100\", \"H100\", \"MI300X\"]\n")


def in_process(text: str) -> tuple[int, int, float]:
    from envsolve.data import load
    from envsolve.matrix.cells import solve_cells
    from envsolve.matrix.spec import parse_matrix
    from envsolve.provider import Provider

    g = Provider(load())  # fresh memo tables
    t0 = time.perf_counter()
    ms = parse_matrix(text, "bench.toml", g)
    cells = ms.cells()
    results = solve_cells(g, ms, cells)
    return len(cells), sum(r.valid for r in results), time.perf_counter() - t0


def main() -> None:
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print("| cells | valid | solve (in process) | per cell |\n|---|---|---|---|")
    for n_os in (1, 2, 3, 5):
        n, valid, secs = in_process(matrix_text(OSES[:n_os]))
        print(f"| {n} | {valid} | {secs:.2f} s | {secs / n * 1e6:.0f} us |")
    with tempfile.TemporaryDirectory() as d:
        spec = Path(d) / "big.toml"
        spec.write_text(matrix_text(OSES))
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "envsolve", "matrix", str(spec), "--format", "json"],
                           check=True, capture_output=True)
            times.append(time.perf_counter() - t0)
        print(f"`envsolve matrix` end to end, {n} cells, --format json: median "
              f"{sorted(times)[1]:.2f} s (of {', '.join(f'{t:.2f}' for t in times)})")


if __name__ == "__main__":
    main()
