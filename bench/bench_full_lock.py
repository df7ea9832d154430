"""Benchmark the full lock (every package with hashes) against uv alone, on the real index.

    python bench/bench_full_lock.py [--runs 3]

The project is issue 11's vllm case: `torch = "*"` on an H100 with driver 580 and
`[packages] pip = ["vllm==0.11.0"]`. Measured in one run, each with a new interpreter:
1. uv cold: `uv pip compile --generate-hashes` of `vllm==0.11.0` alone for Python 3.13 on Linux
   x86_64, with an empty cache folder;
2. uv offline: the same with `--offline` on the cache 1. filled;
3. envsolve cold: `envsolve lock project.toml`, empty cache folder (envsolve's and uv's), envsolve
   installed as `pip install .` installs it;
4. envsolve cached: the same lock again (a second lock of the same spec).
Goals (issue 26): 4 <= 2x 2 and 3 <= 1.1x 1. Needs the package index; medians go to stdout as a
Markdown table (pasted into README.md).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SPEC = """[project]
name = "serve"
[frameworks]
torch = "*"
[hardware]
gpus = ["H100"]
driver = "580.65.06"
[packages]
pip = ["vllm==0.11.0"]
"""


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{done.stderr[-3000:]}")
    return took


def measure(runs: int, site: Path) -> dict[str, float]:
    """Median seconds of uv cold, uv offline, envsolve cold and envsolve cached over ``runs``, the
    envsolve installed in ``site`` (bench_speed.installed: as `pip install .` installs it)."""
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    times: dict[str, list[float]] = {k: [] for k in ("uv cold", "uv offline", "envsolve cold", "envsolve cached")}
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d)
            (root / "req.in").write_text("vllm==0.11.0\n")
            (root / "project.toml").write_text(SPEC)
            env = {k: v for k, v in os.environ.items() if not k.startswith(("UV_", "ENVSOLVE_"))}
            env |= {"UV_CACHE_DIR": f"{d}/uv-cache", "ENVSOLVE_CACHE_DIR": f"{d}/envsolve-cache",
                    "PYTHONPATH": str(site)}
            compile_ = [uv, "pip", "compile", "req.in", "--generate-hashes", "--python-version", "3.13",
                        "--python-platform", "x86_64-manylinux_2_28", "--python", sys.executable,
                        "--no-python-downloads", "--system-certs", "-q", "-o", "out.txt"]
            times["uv cold"].append(_run(compile_, env, root))
            times["uv offline"].append(_run([*compile_, "--offline"], env, root))
            lock = [sys.executable, "-m", "envsolve", "lock", "project.toml"]
            times["envsolve cold"].append(_run(lock, env, root))
            times["envsolve cached"].append(_run(lock, env, root))
            shutil.rmtree(f"{d}/uv-cache", ignore_errors=True)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from bench_speed import ROOT, installed

    with tempfile.TemporaryDirectory() as d:
        med = measure(args.runs, installed(ROOT, Path(d)))
    print(f"| measure ({args.runs} runs, median) | seconds |\n|---|---|")
    for k, v in med.items():
        print(f"| {k} | {v:.2f} |")
    print(f"| cached / uv offline (goal <= 2) | {med['envsolve cached'] / med['uv offline']:.2f}x |")
    print(f"| cold / uv cold (goal <= 1.1) | {med['envsolve cold'] / med['uv cold']:.2f}x |")


if __name__ == "__main__":
    main()
