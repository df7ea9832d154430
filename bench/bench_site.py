"""Benchmark the compatibility explorer (`envsolve site`, issue 27) against its goals.

    python bench/bench_site.py [--runs 5] [--changes 300]

1. `envsolve site -o DIR` as a user runs it (a new interpreter each time, start-up included):
   the first run with an empty cache folder, then the median of --runs more (goal < 10 s).
2. The site's size on disk, every file (goal < 5 MB).
3. The selector's answer time in headless Chromium (Debian's chromium, or ENVSOLVE_CHROMIUM),
   over file://: --changes control changes (a random control set to a random one of its options,
   seeded), each timed in the page from setting the value and firing input/change to #answer
   changed (a MutationObserver's first record), and to the next frame after it (the change
   painted); median and 95th percentile (goal < 100 ms). Changes that leave #answer as it was
   are not counted.
Results go to stdout as a Markdown table (pasted into README.md).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.browser import CONTROLS, find_chromium, launch  # noqa: E402

# one timed change, in the page: set the control, fire its events, wait for #answer to change
# (or 2 s), then for the next frame
CHANGE = """async ([sel, value]) => {
  const el = document.querySelector(sel), answer = document.querySelector('#answer');
  let updated = null;
  const obs = new MutationObserver(() => { if (updated === null) updated = performance.now(); });
  obs.observe(answer, {subtree: true, childList: true, characterData: true, attributes: true});
  const t0 = performance.now();
  el.value = value;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  while (updated === null && performance.now() - t0 < 2000) await new Promise(r => setTimeout(r, 0));
  await new Promise(r => requestAnimationFrame(r));
  const painted = performance.now();
  obs.disconnect();
  return updated === null ? null : [updated - t0, painted - t0];
}"""
# every control's choices now: the GPU names of the datalist, each select's option values
OPTIONS = """(sels) => sels.map(sel => sel === '#gpu'
  ? [...document.querySelectorAll('#gpu-names option')].map(o => o.value)
  : [...document.querySelector(sel).options].map(o => o.value))"""


def build_times(out: Path, runs: int) -> tuple[float, list[float]]:
    """The first build with an empty cache folder, then ``runs`` more."""
    env = {**os.environ, "ENVSOLVE_CACHE_DIR": str(out.parent / "cache"), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "envsolve", "site", "-o", str(out)]
    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, env=env, capture_output=True)
        times.append(time.perf_counter() - t0)
    return times[0], times[1:]


def site_size(out: Path) -> tuple[int, int]:
    files = [p for p in out.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def answer_times(index: Path, changes: int, seed: int) -> tuple[list[float], list[float]]:
    """(updated, painted) milliseconds of each change that changed the answer."""
    from playwright.sync_api import sync_playwright

    executable, why = find_chromium()
    if executable is None:
        sys.exit(f"bench_site: {why}")
    rng = random.Random(seed)
    updated: list[float] = []
    painted: list[float] = []
    with sync_playwright() as p:
        browser = launch(p, executable)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(index.as_uri())
        page.wait_for_selector("#platform option", state="attached")  # the tables inflated
        for _ in range(changes):
            options = page.evaluate(OPTIONS, list(CONTROLS))
            i = rng.randrange(len(CONTROLS))
            if not options[i]:
                continue
            timed: Any = page.evaluate(CHANGE, [CONTROLS[i], rng.choice(options[i])])
            if timed is not None:
                updated.append(timed[0])
                painted.append(timed[1])
        browser.close()
    return updated, painted


def p95(xs: list[float]) -> float:
    return sorted(xs)[min(len(xs) - 1, round(0.95 * (len(xs) - 1)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5, help="timed builds after the first")
    ap.add_argument("--changes", type=int, default=300, help="control changes timed in the browser")
    ap.add_argument("--seed", type=int, default=27)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "envsolve-site"
        first, rest = build_times(out, args.runs)
        size, files = site_size(out)
        updated, painted = answer_times(out / "index.html", args.changes, args.seed)
    build = statistics.median(rest)
    print("| measure | result | goal |")
    print("|---|---|---|")
    print(f"| `envsolve site` build, empty cache | {first:.2f} s | < 10 s |")
    print(f"| `envsolve site` build, median of {len(rest)} | {build:.2f} s (spread {min(rest):.2f}-{max(rest):.2f}) "
          f"| < 10 s |")
    print(f"| site size | {size / 1e6:.2f} MB in {files} files | < 5 MB |")
    if updated:
        print(f"| answer time, control change to #answer updated ({len(updated)} changes) | median "
              f"{statistics.median(updated):.1f} ms, p95 {p95(updated):.1f} ms | < 100 ms |")
        print(f"| answer time, to the next frame painted | median {statistics.median(painted):.1f} ms, "
              f"p95 {p95(painted):.1f} ms | < 100 ms |")
    else:
        print("| answer time | no change updated #answer | < 100 ms |")
    print(f"\n({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end.)")


if __name__ == "__main__":
    main()
