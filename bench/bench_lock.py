"""Benchmark `envsolve lock` end to end and the solver over every combination the graph allows.

    python bench/bench_lock.py [--runs 15]

1. `envsolve lock` as a user runs it (a new interpreter each time, start-up included) on
   examples/project.toml and on a three-target spec; median and spread of wall time.
2. Every GPU model in the data (and a CPU-only target) against every release of every framework,
   pinned, solved in one process: how many, how long in all and per solve.
Results go to stdout as a Markdown table (pasted into README.md).
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

ROOT = Path(__file__).resolve().parent.parent
THREE = """[project]
name = "three"
[frameworks]
torch = "*"
keras = { version = ">=3", backend = "torch" }
[hardware]
gpus = ["A100", "H100", "L4"]
driver = "535.104.05"
[targets.blackwell]
gpus = ["RTX 5090", "B200"]
driver = "575.57.08"
[targets.amd]
gpus = ["MI300X"]
"""


def time_cli(spec: Path, runs: int) -> list[float]:
    env = {**os.environ, "ENVSOLVE_INDEX_PYTORCH": "https://index.invalid/whl"}
    out = []
    with tempfile.TemporaryDirectory() as d:
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "envsolve", "lock", str(spec), "-o", f"{d}/x.lock"],
                           check=True, env=env, capture_output=True)
            out.append(time.perf_counter() - t0)
    return out


def every_combination() -> tuple[int, int, float]:
    from envsolve.data import load
    from envsolve.errors import Unsatisfiable
    from envsolve.provider import Provider
    from envsolve.solve import solve_target
    from envsolve.spec import parse_spec

    g = Provider(load())
    hardware = [f'gpus = ["{gpu.name}"]' for gpu in sorted(g.m.gpus, key=lambda x: x.name)] + ['vendor = "cpu"']
    specs = []
    for hw in hardware:
        for rel in g.m.releases:
            text = f'[frameworks]\n{rel.package} = "=={rel.raw}"\n[hardware]\n{hw}\n'
            specs.append(parse_spec(text, "bench.toml", g))
    ok = 0
    t0 = time.perf_counter()
    for spec in specs:
        try:
            solve_target(g, spec, spec.targets[0])
            ok += 1
        except Unsatisfiable:
            pass
    return len(specs), ok, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        three = Path(d) / "three.toml"
        three.write_text(THREE)
        for name, spec in (("examples/project.toml (2 targets)", ROOT / "examples" / "project.toml"),
                           ("three-target spec", three)):
            ts = time_cli(spec, args.runs)
            rows.append(f"| `envsolve lock` {name} | {statistics.median(ts) * 1000:.0f} ms | "
                        f"{min(ts) * 1000:.0f}-{max(ts) * 1000:.0f} ms | {args.runs} runs |")
    n, ok, secs = every_combination()
    rows.append(f"| solve every GPU x framework release ({n} specs, {ok} satisfiable) | {secs:.2f} s total | "
                f"{secs / n * 1e6:.0f} us per solve | 1 run |")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print("| what | median / total | range / per item | runs |\n|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
