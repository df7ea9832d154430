"""Benchmark `envsolve lock` end to end and the solver over every combination the graph allows.

    python bench/bench_lock.py [--runs 15]

1. `python -c pass` in the same interpreter, the yardstick of the speed goal (warm lock <= 5x it).
2. `envsolve lock --frameworks-only` (the compatibility solve, no network) as a user runs it (a
   new interpreter each time, start-up included) on
   examples/project.toml and on a three-target spec, three ways: warm (the inputs are unchanged,
   so the lock is replayed), with the compiled data cache but no replay (a changed spec), and
   cold (an empty cache folder every run: TOML parsed, cache written); median and spread.
3. Every GPU model in the data (and a CPU-only target) against every release of every framework,
   pinned, solved in one process: how many, how long in all and per solve.
Results go to stdout as a Markdown table (pasted into README.md).
"""

from __future__ import annotations

import argparse
import os
import statistics
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


def time_cli(spec: Path, runs: int, mode: str) -> list[float]:
    """Wall times of `envsolve lock SPEC`: mode warm, data-cache (spec touched each run) or cold."""
    from bench_speed import lock_runs

    return [wall for wall, _, _ in lock_runs(spec, runs, mode)]


def time_pass(runs: int) -> list[float]:
    from bench_speed import timed

    return [timed([sys.executable, "-c", "pass"])[0] for _ in range(runs)]


def every_combination() -> tuple[int, int, float]:
    from envsolve.data import load
    from envsolve.errors import Unsatisfiable
    from envsolve.provider import Provider
    from envsolve.solve import Cache, solve_target
    from envsolve.spec import parse_spec

    g = Provider(load())
    hardware = [f'gpus = ["{gpu.name}"]' for gpu in sorted(g.m.gpus, key=lambda x: x.name)] + ['vendor = "cpu"']
    specs = []
    for hw in hardware:
        for rel in g.m.releases:
            text = f'[frameworks]\n{rel.package} = "=={rel.raw}"\n[hardware]\n{hw}\n'
            specs.append(parse_spec(text, "bench.toml", g))
    ok = 0
    cache = Cache()  # one solver cache for the whole run, as `envsolve matrix` uses it
    t0 = time.perf_counter()
    for spec in specs:
        try:
            solve_target(g, spec, spec.targets[0], cache=cache)
            ok += 1
        except Unsatisfiable:
            pass
    return len(specs), ok, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    base = statistics.median(time_pass(args.runs))
    rows = [f"| `python -c pass` (the yardstick) | {base * 1000:.0f} ms | | {args.runs} runs |"]
    with tempfile.TemporaryDirectory() as d:
        three = Path(d) / "three.toml"
        three.write_text(THREE)
        for name, spec in (("examples/project.toml (2 targets)", ROOT / "examples" / "project.toml"),
                           ("three-target spec", three)):
            for mode in ("warm", "data-cache", "cold"):
                ts = time_cli(spec, args.runs, mode)
                med = statistics.median(ts)
                rows.append(f"| `envsolve lock` {name}, {mode} | {med * 1000:.0f} ms ({med / base:.1f}x) | "
                            f"{min(ts) * 1000:.0f}-{max(ts) * 1000:.0f} ms | {args.runs} runs |")
    n, ok, secs = every_combination()
    rows.append(f"| solve every GPU x framework release ({n} specs, {ok} satisfiable) | {secs:.2f} s total | "
                f"{secs / n * 1e6:.0f} us per solve | 1 run |")
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}")
    print("| what | median / total | range / per item | runs |\n|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
