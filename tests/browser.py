"""Driving the compatibility explorer (`envsolve site`, issue 27) in headless Chromium.

Shared by tests/test_site_browser.py and bench/bench_site.py. The browser is Debian's `chromium`
(`.ci/run` installs it), driven by Playwright for Python with that executable: Playwright's own
browser download is never used. The page's controls and answer follow the DOM contract of the
selector (ids #gpu #driver #platform #framework #version-min #version-max, region #answer with
`data-status` and `[data-field]` elements); :func:`lock_answer` says what `envsolve lock
--frameworks-only` answers for the same spec, in the same shape as :func:`read_answer`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from click.testing import CliRunner

from envsolve.cli import main
from envsolve.lock.model import read

if TYPE_CHECKING:  # Playwright is imported where a browser is launched, so that its absence can skip
    from playwright.sync_api import Browser, Page, Playwright

CHROMIUM_SETTING = "ENVSOLVE_CHROMIUM"
USUAL_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
USUAL_PATHS = ("/usr/bin/chromium", "/usr/lib/chromium/chromium", "/snap/bin/chromium")
CPU_ONLY = "CPU only"
# the ok answer's fields, in the contract's words, and the lock's value for each
FIELDS = ("release", "build", "cuda", "rocm", "python", "driver-min", "compat", "base-image")
CONTROLS = ("#gpu", "#driver", "#platform", "#framework", "#version-min", "#version-max")


def find_chromium() -> tuple[str | None, str]:
    """The Chromium executable (ENVSOLVE_CHROMIUM, then the usual names and paths), or None and why."""
    setting = os.environ.get(CHROMIUM_SETTING, "")
    if setting:
        if os.path.isfile(setting) and os.access(setting, os.X_OK):
            return setting, ""
        return None, f"{CHROMIUM_SETTING}={setting} is not an executable file"
    for name in USUAL_NAMES:
        found = shutil.which(name)
        if found:
            return found, ""
    for path in USUAL_PATHS:
        if os.access(path, os.X_OK):
            return path, ""
    return None, (f"no Chromium found (set {CHROMIUM_SETTING}, or install Debian's chromium package: "
                  f"apt-get install chromium)")


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@dataclass(frozen=True, kw_only=True, slots=True)
class Combo:
    """One choice on the selector: the GPU as typed (or "CPU only"), the driver ("" for newest),
    the platform, the framework and the range's bounds ("" for any)."""

    gpu: str
    driver: str = ""
    platform: str = "linux/amd64"
    framework: str = "torch"
    low: str = ""
    high: str = ""

    @property
    def range(self) -> str:
        parts = [f">={self.low}" if self.low else "", f"<={self.high}" if self.high else ""]
        return ",".join(p for p in parts if p) or "*"

    def spec(self) -> str:
        """The project.toml the contract says the page answers for."""
        hardware = [] if self.gpu == CPU_ONLY else [f"gpus = [{_quoted(self.gpu)}]"]
        if self.driver:
            hardware.append(f"driver = {_quoted(self.driver)}")
        hardware.append(f"platform = {_quoted(self.platform)}")
        return ('[project]\nname = "site"\n'
                f"[frameworks]\n{self.framework} = {_quoted(self.range)}\n"
                "[hardware]\n" + "\n".join(hardware) + "\n")

    def __str__(self) -> str:
        return f"{self.gpu} / {self.driver or 'newest'} / {self.platform} / {self.framework} {self.range}"


def _quoted(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def lock_answer(spec_text: str) -> dict[str, Any]:
    """What `envsolve lock --frameworks-only` answers for a spec, in :func:`read_answer`'s shape:
    ok (exit 0) with the lock's values, refused (exit 1) with the reason lines and the TIP, or
    invalid (exit 2)."""
    with tempfile.TemporaryDirectory() as d:
        spec, out = Path(d) / "project.toml", Path(d) / "envsolve.lock"
        spec.write_text(spec_text)
        r = CliRunner().invoke(main, ["--no-color", "lock", "--frameworks-only", str(spec), "-o", str(out)])
        if r.exit_code == 0:
            env = read(out).environments[0]
            fw = env.frameworks[0]
            values = (fw.version, fw.variant, env.cuda, env.rocm, env.python, env.driver_min, env.compat,
                      env.base_image)
            return {"status": "ok", "fields": dict(zip(FIELDS, values, strict=True))}
    if r.exit_code == 1 and "cannot be satisfied:" in r.output:
        return {"status": "refused", **_refusal(r.output)}
    if r.exit_code == 2:
        return {"status": "invalid"}
    raise AssertionError(f"envsolve lock exited {r.exit_code}:\n{r.output}")


def _refusal(output: str) -> dict[str, Any]:
    """The reason lines after "cannot be satisfied:" (without "  - ") and the TIP's text."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.endswith("cannot be satisfied:")) + 1
    reasons = [line[4:] for line in lines[start:] if line.startswith("  - ")]
    tips = [_tip_text(line) for line in lines[start:] if line.startswith("TIP: ")]
    return {"reasons": reasons, "tip": tips[0] if tips else ""}


def _tip_text(text: str) -> str:
    """A TIP's text; the page may or may not print the word "TIP:" before it."""
    return text.strip().removeprefix("TIP:").strip()


# -------------------------------------------------------------------------------- the page

READ_ANSWER = """(names) => {
  const answer = document.querySelector('#answer');
  if (!answer) return null;
  const own = [...answer.querySelectorAll('[data-field]')].filter(e => !e.closest('#builds'));
  const all = name => own.filter(e => e.dataset.field === name).map(e => e.textContent);
  const fields = {};
  for (const name of names) { const v = all(name); fields[name] = v.length ? v[0] : null; }
  return {status: answer.dataset.status || null, fields, reasons: all('reason'), tip: all('tip')};
}"""

SETTLE = "() => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)))"


def read_answer(page: Page) -> dict[str, Any]:
    """#answer as the contract reads it, in :func:`lock_answer`'s shape."""
    page.evaluate(SETTLE)
    raw = page.evaluate(READ_ANSWER, list(FIELDS))
    if raw is None:
        return {"status": "no #answer on the page"}
    status = raw["status"]
    if status == "ok":
        return {"status": status, "fields": raw["fields"]}
    if status == "refused":
        return {"status": status, "reasons": raw["reasons"], "tip": _tip_text(raw["tip"][0]) if raw["tip"] else ""}
    return {"status": status}


def choose(page: Page, combo: Combo) -> None:
    """Set the controls as a user would (each change fires input/change), GPU first: the other
    controls' options may follow it."""
    page.fill("#gpu", combo.gpu)
    page.select_option("#platform", value=combo.platform)
    page.select_option("#driver", value=combo.driver)
    page.select_option("#framework", value=combo.framework)
    page.select_option("#version-min", value=combo.low)
    page.select_option("#version-max", value=combo.high)


def launch(playwright: Playwright, executable: str) -> Browser:
    """Headless Chromium from ``executable`` (never Playwright's own download)."""
    return playwright.chromium.launch(executable_path=executable, headless=True,
                                      args=["--disable-gpu", "--no-first-run", "--no-default-browser-check"])


def build_site(out: Path) -> None:
    """`envsolve site -o OUT`, in process."""
    r = CliRunner().invoke(main, ["site", "-o", str(out)])
    assert r.exit_code == 0, f"envsolve site exited {r.exit_code}:\n{r.output}"
    assert (out / "index.html").is_file(), f"envsolve site wrote no index.html in {out}"
