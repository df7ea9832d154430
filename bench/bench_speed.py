"""The speed table of issue 26: every measure beside its yardstick, in the same run, with the ratio.

    python bench/bench_speed.py [--runs 7] [--big] [--full-lock] [--against CHECKOUT]

Rows (each a new interpreter per run, start-up included; medians):
1. `python -c pass`, the yardstick of the lock rows.
2. The floor of a lock that solves: `python -c "import msgspec, packaging.specifiers"`, the two
   libraries every such lock imports, msgspec as envsolve imports it (without typing_extensions:
   `envsolve.__main__.import_msgspec`); no goal: it shows what the 5x goal leaves to envsolve.
3. `envsolve lock --frameworks-only` of examples/project.toml and of a three-target spec:
   replayed (inputs unchanged), the spec changed (the compiled data cache warm), first run (no
   caches at all); goals <= 3x, <= 5x and <= 150 ms. Each runs envsolve as `pip install .` installs
   it (a wheel built from the checkout into a folder of its own, the matrices' records compiled by
   the build hook, bytecode compiled); one more row, without a goal, is the first run from the source
   checkout itself (no compiled records shipped: it checks the TOML). Rows 1-3 are taken in turn in
   each round, and
   each ratio is the median of the rounds' own ratios to that round's `python -c pass`: this VM's
   speed drifts from minute to minute, and a yardstick timed minutes apart misled.
   `--against CHECKOUT` also runs each lock row on another checkout's envsolve (a `git worktree` of
   an older commit) in the same rounds, with the median ratio of this tree's CPU time to its.
4. The import time of the lock path: the self times `python -X importtime` reports for a lock of
   a changed spec, less those of `python -c pass` in the same round; goal <= 30 ms.
5. `envsolve matrix --format json` of 100,800 cells (goal <= 1 s) and, with --big, of 1,008,000
   cells (goals <= 10 s and 150 MiB), with `python -c pass` as the start-up they include: as a
   user runs it (one forked worker per CPU) and in one process; memory is the command's and its
   workers' together, from a run of its own (bench_matrix.run). With `--against`, the other
   checkout runs each matrix in turn with this one, and the row gives the median ratio of the times.
6. With --full-lock (needs the package index): the full lock cold beside `uv pip compile` of the
   same requirements cold (goal <= 1.1x), and cached beside `uv pip compile --offline` (<= 2x).
Prints a Markdown table (README "Speed") and the machine it ran on. envsolve's bytecode is compiled
first, as an install has it.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_lock import THREE  # noqa: E402
from bench_matrix import matrix_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
Row = tuple[str, str, str, str]  # what, measured, yardstick and ratio, goal


def timed(argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS KiB) of one command, its output thrown away. CPU time
    (user + system, the child's own) is the steadier figure on a busy machine."""
    t0 = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=sink, stderr=subprocess.PIPE)
        err = proc.stderr.read() if proc.stderr else b""
        _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{' '.join(argv)} failed: {err.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - t0, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _median(xs: list[tuple[float, float, int]]) -> tuple[float, float]:
    return statistics.median(x[0] for x in xs), statistics.median(x[1] for x in xs)


def time_pass(runs: int) -> tuple[float, float]:
    return _median([timed([sys.executable, "-c", "pass"]) for _ in range(runs)])


def installed(tree: Path, folder: Path) -> Path:
    """``tree``'s envsolve installed as `pip install .` installs it (a wheel built by its build
    backend, build hook included), into ``folder``, with its bytecode; no dependencies (this
    environment's serve)."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(folder), str(tree)], check=True, env={**os.environ, "PIP_CONFIG_FILE": os.devnull})
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(folder / "envsolve")], check=True)
    return folder


class LockRun:
    """`envsolve lock --frameworks-only SPEC` as a user runs it, in a folder of its own: ``warm``
    (inputs unchanged: the replay), ``data-cache`` (the spec changed before each run) or ``cold``
    (an empty cache folder)."""

    def __init__(self, spec: Path, mode: str, folder: Path, tree: Path) -> None:
        self.mode, self.folder = mode, folder
        # the envsolve installed in ``tree`` (of this checkout, or another with --against), run from
        # ``folder``: `python -m` puts the working folder first on the path, before PYTHONPATH
        self.env = {**os.environ, "ENVSOLVE_CACHE_DIR": f"{folder}/cache", "PYTHONPATH": str(tree)}
        self.spec = folder / spec.name
        self.spec.write_bytes(spec.read_bytes())
        self.argv = [sys.executable, "-m", "envsolve", "lock", "--frameworks-only", str(self.spec), "-o",
                     f"{folder}/x.lock"]
        timed(self.argv, self.env, folder)  # fills the caches
        self.runs = 0

    def once(self) -> tuple[float, float, int]:
        if self.mode.startswith("cold"):
            shutil.rmtree(self.folder / "cache", ignore_errors=True)
        elif self.mode == "data-cache":
            with self.spec.open("a") as f:
                f.write(f"# run {self.runs}\n")
        self.runs += 1
        return timed(self.argv, self.env, self.folder)


def _both(wall: float, cpu: float) -> str:
    return f"{wall * 1000:.0f} ms (CPU {cpu * 1000:.0f} ms)"


# what every lock that solves imports from outside envsolve: msgspec as envsolve imports it (without
# typing_extensions: envsolve.__main__.import_msgspec) and packaging's specifiers
FLOOR = "from envsolve.__main__ import import_msgspec; import_msgspec(); import packaging.specifiers"


def lock_rows(runs: int, against: str = "") -> list[Row]:
    """The yardstick, the floor and each lock row, taken in turn in every round (this VM's speed
    drifts from minute to minute): medians of the times and of each round's ratio to that round's
    `python -c pass`. With ``against`` (another checkout), each lock row is also run on its envsolve
    in the same rounds, with the median of the rounds' ratios of this tree to it."""
    goals = {"warm": ("replayed (inputs unchanged)", "<= 3x"),
             "data-cache": ("spec changed, data cache warm", "<= 5x (about 50 ms)"),
             "cold": ("first run, no caches", "<= 150 ms"),
             "cold-checkout": ("first run, no caches, from the source checkout", "")}
    with tempfile.TemporaryDirectory() as d:
        three = Path(d) / "three.toml"
        three.write_text(THREE)
        ours = installed(ROOT, Path(d) / "site")
        theirs = installed(Path(against), Path(d) / "against-site") if against else ours
        measures: dict[str, Callable[[], tuple[float, float, int]]] = {
            "`python -c pass`, the yardstick": lambda: timed([sys.executable, "-c", "pass"]),
            "`import msgspec, packaging.specifiers` (msgspec as envsolve imports it), the floor of a lock that "
            "solves (no goal: see README)":
                lambda: timed([sys.executable, "-c", FLOOR]),
        }
        for name, spec in (("examples/project.toml", ROOT / "examples" / "project.toml"), ("three targets", three)):
            for mode, (what, _) in goals.items():
                folder = Path(d) / f"{len(measures)}"
                folder.mkdir()
                tree = ROOT if mode == "cold-checkout" else ours
                measures[f"`lock --frameworks-only` {name}: {what}"] = LockRun(spec, mode, folder, tree).once
                if against and tree is ours:
                    (folder / "against").mkdir()
                    measures[f"`lock --frameworks-only` {name}: {what}, {against}"] = LockRun(
                        spec, mode, folder / "against", theirs).once
        got: dict[str, list[tuple[float, float, int]]] = {k: [] for k in measures}
        for _ in range(runs):
            for what, measure in measures.items():
                got[what].append(measure())
    pass_runs = next(iter(got.values()))
    rows: list[Row] = []
    for what, xs in got.items():
        wall, cpu = _median(xs)
        ratios = [x[0] / p[0] for x, p in zip(xs, pass_runs, strict=True)]
        cpu_ratios = [x[1] / p[1] for x, p in zip(xs, pass_runs, strict=True)]
        goal = next((g for w, g in goals.values() if what.endswith(w)), "")
        beside = f"{statistics.median(ratios):.1f}x pass (CPU {statistics.median(cpu_ratios):.1f}x)"
        if xs is pass_runs:
            beside = ""
        elif against and what.endswith(f", {against}"):
            this = got[what.removesuffix(f", {against}")]
            to_theirs = statistics.median(o[1] / x[1] for o, x in zip(this, xs, strict=True))
            beside += f"; this tree {to_theirs:.2f}x its CPU"
        rows.append((what, _both(wall, cpu), beside, goal))
    return rows


def _import_self_ms(argv: list[str], env: dict[str, str], cwd: str) -> float:
    """The sum of the self times `-X importtime` reports for ``argv`` (milliseconds)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv], env=env, cwd=cwd, capture_output=True, text=True)
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:") and "self [us]" not in line]
    return sum(int(line.split(":", 1)[1].split("|")[0]) for line in lines) / 1000


def import_row(runs: int) -> Row:
    with tempfile.TemporaryDirectory() as d:
        env = {**os.environ, "ENVSOLVE_CACHE_DIR": f"{d}/cache", "PYTHONPATH": str(ROOT)}
        spec = Path(d) / "project.toml"
        spec.write_bytes((ROOT / "examples" / "project.toml").read_bytes())
        lock = ["-m", "envsolve", "lock", "--frameworks-only", str(spec), "-o", f"{d}/x.lock"]
        subprocess.run([sys.executable, *lock], env=env, cwd=d, capture_output=True, check=True)  # the data cache
        ours, bare = [], []
        for i in range(runs):
            spec.write_bytes(spec.read_bytes() + f"# {i}\n".encode())  # changed: no replay
            ours.append(_import_self_ms(lock, env, d))
            bare.append(_import_self_ms(["-c", "pass"], env, d))
    got, yard = statistics.median(ours), statistics.median(bare)
    less = statistics.median(o - b for o, b in zip(ours, bare, strict=True))  # each round's own difference
    return ("import time of the lock path (`-X importtime`, self times, less `python -c pass`'s)",
            f"{less:.0f} ms", f"{got:.0f} ms in all, pass {yard:.0f} ms", "<= 30 ms")


def matrix_rows(sizes: list[str], base: tuple[float, float], against: str = "") -> list[Row]:
    """`envsolve matrix --format json` as a user runs it (forked workers, one per CPU) and, beside
    it, in one process (``ENVSOLVE_MATRIX_WORKERS=1``); memory: the command and its workers. With
    ``against``, that checkout's envsolve runs each matrix too, in turn with this one's in every
    round, and the row gives the median of the rounds' ratios of the times."""
    from bench_matrix import run

    from envsolve.matrix.workers import cpus

    rows: list[Row] = []
    goals = {"100k": "<= 1 s", "1m": "<= 10 s, <= 150 MiB"}
    trees = [str(ROOT), *([against] if against else [])]
    with tempfile.TemporaryDirectory() as d:
        warm = Path(d) / "one.toml"  # each tree's compiled data is made before anything is timed
        warm.write_text('[matrix]\npython = ["3.12"]\ntorch = ["2.8.0"]\naccelerator = ["cu128"]\n')
        for tree in trees:
            run(warm, "json", {**os.environ, "PYTHONPATH": tree})
        for size in sizes:
            text, n = matrix_text(size)
            spec = Path(d) / f"{size}.toml"
            spec.write_text(text)
            runs = 3 if size != "1m" else 1
            for how, extra in ((f"{cpus()} workers", {}), ("one process", {"ENVSOLVE_MATRIX_WORKERS": "1"})):
                envs = {tree: {**os.environ, "PYTHONPATH": tree, **extra} for tree in trees}
                walls: dict[str, list[float]] = {tree: [] for tree in trees}
                for _ in range(runs):
                    for tree in trees:
                        walls[tree].append(run(spec, "json", envs[tree])[0])
                wall = statistics.median(walls[str(ROOT)])
                mem = run(spec, "json", envs[str(ROOT)], memory=True)[1] / 1024  # a run of its own: sampling slows it
                beside = f"{n / wall:,.0f} cells/s; pass {base[0] * 1000:.0f} ms"
                if against:
                    ratio = statistics.median(a / b for a, b in zip(walls[str(ROOT)], walls[against], strict=True))
                    beside += f"; {ratio:.2f}x the time of {against}"
                rows.append((f"`matrix --format json`, {n:,} cells, {how}", f"{wall:.2f} s, {mem:.0f} MiB", beside,
                             goals[size] if not extra else ""))
    return rows


def full_lock_rows(runs: int) -> list[Row]:
    from bench_full_lock import measure

    with tempfile.TemporaryDirectory() as d:
        med = measure(runs, installed(ROOT, Path(d)))
    return [("full lock, cold (vllm on an H100)", f"{med['envsolve cold']:.2f} s",
             f"uv cold {med['uv cold']:.2f} s: {med['envsolve cold'] / med['uv cold']:.2f}x", "<= 1.1x"),
            ("full lock, cached (the same lock again)", f"{med['envsolve cached']:.2f} s",
             f"uv offline {med['uv offline']:.2f} s: {med['envsolve cached'] / med['uv offline']:.2f}x", "<= 2x")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--big", action="store_true", help="also the matrix of 1,008,000 cells (about a minute)")
    ap.add_argument("--full-lock", action="store_true", help="also the full lock beside uv (needs the index)")
    ap.add_argument("--against", metavar="CHECKOUT", default="",
                    help="also run the lock and matrix rows on another checkout's envsolve, in the same rounds")
    args = ap.parse_args()
    # an installed envsolve has its bytecode compiled (pip compiles at install); a checkout on a
    # machine with PYTHONDONTWRITEBYTECODE would compile every changed module on every run
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "envsolve")], check=True)
    base = time_pass(args.runs)  # the matrix rows' start-up
    if args.against:
        args.against = str(Path(args.against).resolve())
        subprocess.run([sys.executable, "-m", "compileall", "-q", f"{args.against}/envsolve"], check=True)
    rows = lock_rows(args.runs, args.against)
    rows.append(import_row(args.runs))
    rows += matrix_rows(["100k", "1m"] if args.big else ["100k"], base, args.against)
    if args.full_lock:
        rows += full_lock_rows(3)
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f} at the end")
    print("| work | measured | beside its yardstick | goal |\n|---|---|---|---|")
    print("\n".join(f"| {' | '.join(r)} |" for r in rows))


if __name__ == "__main__":
    main()
