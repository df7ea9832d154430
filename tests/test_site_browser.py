"""The compatibility explorer (`envsolve site`, issue 27) in a real browser: headless Chromium
(Debian's `chromium`, which `.ci/run` installs) driven by Playwright, on the site built once per
session and opened over file://.

The selector must answer exactly what `envsolve lock --frameworks-only` answers for the same spec:
the page only looks things up in tables envsolve computed, so any rule written twice shows up here
as a combination where the two disagree. Without a browser the tests skip with the reason, except
in CI (CI=true), where a missing browser fails them.
"""

from __future__ import annotations

import functools
import random
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from packaging.version import Version

from tests.browser import (
    CHROMIUM_SETTING,
    CONTROLS,
    CPU_ONLY,
    Combo,
    build_site,
    choose,
    find_chromium,
    in_ci,
    launch,
    read_answer,
)
from tests.browser import lock_answer as _lock_answer

if TYPE_CHECKING:
    from playwright.sync_api import Browser, ConsoleMessage, Page, Request, ViewportSize

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = ROOT / "docs" / "site.png"

C = Combo
# GPU (as nvidia-smi / rocm-smi print it, or envsolve's short name) x driver x platform x framework
# x range: NVIDIA data center and consumer, old and new drivers, Jetson, AMD Instinct and Radeon,
# CPU only; answers that work and refusals (driver too old, no build for the arch, no build for
# the platform, a range that misses), and a GPU envsolve does not know.
COMBOS: tuple[Combo, ...] = (
    C(gpu="H100"),
    C(gpu="NVIDIA H100 80GB HBM3", driver="535.104.05"),
    C(gpu="NVIDIA A100-SXM4-80GB", driver="525.85.12", low="2.0.0", high="2.4.1"),
    C(gpu="V100", driver="470.82.01"),
    C(gpu="Tesla V100-SXM2-16GB", low="2.9.0"),
    C(gpu="P100", driver="580.95.05", framework="tensorflow"),
    C(gpu="B200", driver="570.124.06", low="2.6.0", high="2.6.0"),
    C(gpu="B200", framework="jax"),
    C(gpu="GB200", platform="linux/arm64", framework="jax"),
    C(gpu="GH200", driver="535.104.05", platform="linux/arm64"),
    C(gpu="H200", driver="550.54.15", framework="jax", low="0.4.30", high="0.4.38"),
    C(gpu="A100", driver="450.80.02", framework="jax"),
    C(gpu="L4", framework="tensorflow", low="2.15.0", high="2.16.1"),
    C(gpu="Tesla T4", driver="450.80.02", framework="tensorflow"),
    C(gpu="A10G", driver="535.104.05", framework="onnxruntime"),
    C(gpu="L40S", framework="paddlepaddle"),
    C(gpu="A100", driver="470.82.01", framework="paddlepaddle"),
    C(gpu="H100", framework="cupy"),
    C(gpu="H100", framework="keras"),
    C(gpu="NVIDIA GeForce RTX 5090", driver="535.104.05"),
    C(gpu="RTX 5090", driver="575.57.08", low="2.0.0", high="2.5.1"),
    C(gpu="RTX 5090", framework="jax"),
    C(gpu="RTX 5080", driver="580.95.05", framework="tensorflow"),
    C(gpu="NVIDIA GeForce RTX 4090", driver="560.35.05"),
    C(gpu="NVIDIA GeForce RTX 3060", framework="tensorflow"),
    C(gpu="RTX 3090", driver="450.80.02", framework="cupy"),
    C(gpu="RTX 2080 Ti", framework="onnxruntime"),
    C(gpu="GTX 1080 Ti", driver="535.104.05"),
    C(gpu="GB10", platform="linux/arm64"),
    C(gpu="Jetson AGX Orin", platform="linux/arm64"),
    C(gpu="Jetson Orin Nano", platform="linux/arm64", low="2.5.0"),
    C(gpu="Jetson AGX Orin", platform="linux/arm64", framework="tensorflow"),
    C(gpu="Jetson Nano", platform="linux/arm64"),
    C(gpu="Jetson T5000", platform="linux/arm64"),
    C(gpu="MI300X"),
    C(gpu="AMD Instinct MI300X", framework="tensorflow"),
    C(gpu="MI250X", low="2.4.0", high="2.5.1"),
    C(gpu="MI50", framework="jax"),
    C(gpu="AMD Radeon RX 7900 XTX"),
    C(gpu="RX 9070 XT", framework="onnxruntime"),
    C(gpu=CPU_ONLY, low="2.3.0", high="2.3.1"),
    C(gpu=CPU_ONLY, platform="linux/arm64", framework="tensorflow"),
    C(gpu=CPU_ONLY, framework="keras"),
    C(gpu=CPU_ONLY, framework="paddlepaddle"),
    C(gpu=CPU_ONLY, platform="linux/arm64", framework="onnxruntime"),
    # issue 21's edges: a JetPack that cannot run a release, a ROCm window that closed, a Kepler GK10x card
    C(gpu="Jetson Nano", platform="linux/arm64", low="2.5.0"),
    C(gpu="MI50", low="2.10.0"),
    C(gpu="NVIDIA GeForce GTX 660 Ti"),
    C(gpu="NVIDIA Foo 9000"),
)


@functools.cache
def lock_answer(spec_text: str) -> dict[str, Any]:
    return _lock_answer(spec_text)


def _unavailable(reason: str) -> None:
    """Skip with the reason, or fail in CI, where the browser tests must run."""
    if in_ci():
        pytest.fail(f"{reason}; CI=true, so the browser tests must run (.ci/run installs chromium)")
    pytest.skip(reason)


def _chromium() -> str:
    path, why = find_chromium()
    if path is None:
        _unavailable(why)
    assert path is not None
    return path


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory, _cache_dir: Path) -> Path:
    out = tmp_path_factory.mktemp("site") / "envsolve-site"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ENVSOLVE_CACHE_DIR", str(_cache_dir))
        t0 = time.perf_counter()
        build_site(out)
        print(f"envsolve site: {time.perf_counter() - t0:.2f} s")
    return out


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("Playwright for Python is not installed (pip install '.[test]')")
    with sync_playwright() as p:
        b = launch(p, executable)
        yield b
        b.close()


class Watched:
    """One page and what went wrong on it: console errors, page errors, failed loads, and any
    request that is not a file:// or data: URL (the site needs no network at view time)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.problems: list[str] = []
        page.set_default_timeout(5000)
        page.on("console", self._console)
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"failed load: {r.url} ({r.failure})"))
        page.on("request", self._request)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.problems.append(f"console error: {message.text} at {message.location}")

    def _request(self, request: Request) -> None:
        if not request.url.startswith(("file://", "data:", "about:")):
            self.problems.append(f"network request: {request.url}")

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.page.wait_for_load_state("load")
        if self.page.locator("#site-data").count():  # the selector: its tables are inflated after load
            self.page.wait_for_selector("#platform option", state="attached")


DESKTOP: ViewportSize = {"width": 1280, "height": 900}


@pytest.fixture(scope="session")
def _selector(browser: Browser, site: Path) -> Watched:
    w = Watched(browser.new_page(viewport=DESKTOP))
    w.open((site / "index.html").as_uri())
    return w


@pytest.fixture
def selector(_selector: Watched) -> Watched:
    """The one page the selector tests share, in a desktop-sized window, with no problem seen yet."""
    _selector.problems.clear()
    _selector.page.set_viewport_size(DESKTOP)
    return _selector


def _answer_when_settled(page: Page, expected: dict[str, Any], wait_s: float = 2.0) -> dict[str, Any]:
    """The answer on the page, read again for a moment while it differs from ``expected``
    (in case the page answers on the next frame rather than in the event handler)."""
    deadline = time.monotonic() + wait_s
    got = read_answer(page)
    while got != expected and time.monotonic() < deadline:
        page.wait_for_timeout(50)
        got = read_answer(page)
    return got


def _of_release(version: str, release: str) -> bool:
    """A locked version is of a release: the same, or the release's own build of it (tensorflow-rocm
    2.14.0.600, NVIDIA's 1.15.5+nv23.3 and its Jetson torch 1.11.0a0+17540c5 are builds of
    2.14.0, 1.15.5 and 1.11.0)."""
    from packaging.version import Version

    return version == release or version.startswith((release + ".", release + "+")) \
        or Version(version).base_version == release


def _current(page: Page) -> Combo:
    """The choice the page's controls hold now."""
    v = [page.input_value(sel) for sel in CONTROLS]
    return Combo(gpu=v[0], driver=v[1], platform=v[2], framework=v[3], low=v[4], high=v[5])


# ------------------------------------------------------------------------------ the browser itself


def test_the_browser_comes_from_the_setting_and_a_missing_one_fails_in_ci(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path: Path) -> None:
    monkeypatch.setenv(CHROMIUM_SETTING, str(tmp_path / "no-such-chromium"))
    assert find_chromium() == (None, f"{CHROMIUM_SETTING}={tmp_path / 'no-such-chromium'} is not an executable file")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true, so the browser tests must run"):
        _chromium()
    monkeypatch.setenv("CI", "")
    with pytest.raises(pytest.skip.Exception, match="is not an executable file"):
        _chromium()
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv(CHROMIUM_SETTING, str(fake))
    assert find_chromium() == (str(fake), "")


# ------------------------------------------------------------------------------ the selector


def test_the_combinations_cover_vendors_frameworks_and_both_answers() -> None:
    answers = [lock_answer(c.spec())["status"] for c in COMBOS]
    assert len(COMBOS) >= 30
    assert answers.count("ok") >= 15 and answers.count("refused") >= 8 and "invalid" in answers
    assert {c.framework for c in COMBOS} >= {"torch", "tensorflow", "jax", "keras", "onnxruntime", "paddlepaddle",
                                             "cupy"}
    names = " ".join(c.gpu for c in COMBOS)
    for kind in ("NVIDIA", "GeForce", "Jetson", "MI300X", "Radeon", CPU_ONLY):
        assert kind in names


@pytest.mark.parametrize("combo", COMBOS, ids=str)
def test_the_selector_answers_exactly_what_the_lock_answers(selector: Watched, combo: Combo) -> None:
    expected = lock_answer(combo.spec())
    choose(selector.page, combo)
    assert _answer_when_settled(selector.page, expected) == expected, combo.spec()
    if expected["status"] == "ok":  # the build taken is a row that fits in the table of builds considered
        release, build = expected["fields"]["release"], expected["fields"]["build"]
        fits = selector.page.eval_on_selector_all(f'#builds tr[data-build="{build}"][data-status="ok"]',
                                                  "rows => rows.map(r => r.dataset.release)")
        assert any(_of_release(release, r) for r in fits), (release, build, fits)
    assert selector.problems == []


def _options(page: Page, sel: str) -> list[str]:
    """A control's choices: the GPU names of the datalist, a select's option values."""
    css = "#gpu-names option" if sel == "#gpu" else f"{sel} option"
    values: list[str] = page.eval_on_selector_all(css, "options => options.map(o => o.value)")
    return values


def test_a_seeded_sample_of_the_pages_own_choices_answers_what_the_lock_answers(selector: Watched) -> None:
    """30 choices drawn (seeded) from every option the page offers, beside the hand-picked ones."""
    page, rng, differ = selector.page, random.Random(27), []
    gpus, drivers, platforms = (_options(page, sel) for sel in ("#gpu", "#driver", "#platform"))
    frameworks = _options(page, "#framework")
    assert len(gpus) > 200 and len(drivers) > 10 and set(platforms) == {"linux/amd64", "linux/arm64"}
    for _ in range(30):
        framework = rng.choice(frameworks)
        page.select_option("#framework", value=framework)
        releases = _options(page, "#version-min")
        low, high = (rng.choice(releases) if rng.random() < 0.4 else "" for _ in range(2))
        combo = Combo(gpu=rng.choice(gpus), driver=rng.choice(drivers), platform=rng.choice(platforms),
                      framework=framework, low=low, high=high)
        expected = lock_answer(combo.spec())
        choose(page, combo)
        got = _answer_when_settled(page, expected)
        if got != expected:
            differ.append(f"{combo}:\n  page: {got}\n  lock: {expected}")
    assert differ == [], "\n".join(differ)
    assert selector.problems == []


def test_the_builds_table_lists_releases_newest_first_with_the_reason_of_each_refusal(selector: Watched) -> None:
    choose(selector.page, Combo(gpu="RTX 5090", driver="575.57.08", low="2.0.0", high="2.9.1"))
    read_answer(selector.page)
    rows = selector.page.eval_on_selector_all(
        "#builds tr[data-release]",
        "rows => rows.map(r => [r.dataset.release, r.dataset.build, r.dataset.status, r.textContent])")
    assert len(rows) >= 10
    releases = [Version(r[0]) for r in rows]
    assert releases == sorted(releases, reverse=True)
    assert {r[2] for r in rows} == {"ok", "refused"}
    assert {r[0] for r in rows} >= {"2.0.0", "2.5.1", "2.9.1"}
    refused = [r for r in rows if r[0] == "2.5.1"]
    assert refused and all(r[2] == "refused" for r in refused) and any("sm_120" in r[3] for r in refused)
    assert selector.problems == []


@pytest.mark.parametrize("combo", [COMBOS[2], COMBOS[12], COMBOS[19], COMBOS[29], COMBOS[36], COMBOS[42]], ids=str)
def test_the_project_toml_on_the_page_locks_to_the_answer_it_shows(selector: Watched, combo: Combo) -> None:
    choose(selector.page, combo)
    shown = _answer_when_settled(selector.page, lock_answer(combo.spec()))
    toml = selector.page.text_content("#project-toml") or ""
    assert lock_answer(toml) == shown, toml
    commands = selector.page.text_content("#commands") or ""
    assert "envsolve lock" in commands and "pip install" in commands


# ------------------------------------------------------------------------------ using it


def test_keyboard_alone_reaches_every_control_in_order_and_changes_the_answer(selector: Watched) -> None:
    page = selector.page
    selector.open(page.url)
    page.focus("body")
    order: list[str] = []
    for _ in range(60):
        page.keyboard.press("Tab")
        focused = page.evaluate("() => document.activeElement && document.activeElement.id")
        if focused and f"#{focused}" in CONTROLS and f"#{focused}" not in order:
            order.append(f"#{focused}")
        if len(order) == len(CONTROLS):
            break
    assert order == list(CONTROLS)
    page.focus("#gpu")
    page.keyboard.press("Control+A")
    page.keyboard.type("NVIDIA H100 80GB HBM3")  # as nvidia-smi names it
    page.focus("#framework")
    before = page.input_value("#framework")
    last = page.evaluate("() => { const s = document.querySelector('#framework'); "
                         "return s.selectedIndex === s.options.length - 1; }")
    page.keyboard.press("ArrowUp" if last else "ArrowDown")
    assert page.input_value("#framework") != before
    now = _current(page)
    expected = lock_answer(now.spec())
    assert _answer_when_settled(page, expected) == expected, now.spec()
    assert expected["status"] == "ok"
    assert selector.problems == []


def test_no_console_or_page_errors_on_load_and_in_use(selector: Watched, site: Path) -> None:
    selector.open((site / "index.html").as_uri())
    assert selector.problems == []
    for combo in COMBOS[::5]:
        choose(selector.page, combo)
        read_answer(selector.page)
    selector.page.fill("#gpu", "")
    read_answer(selector.page)
    assert selector.problems == []


def test_at_phone_width_nothing_scrolls_sideways_and_every_control_shows(browser: Browser, site: Path) -> None:
    w = Watched(browser.new_page(viewport={"width": 375, "height": 812}, is_mobile=True, has_touch=True))
    try:
        w.open((site / "index.html").as_uri())
        for combo in (COMBOS[0], COMBOS[6], COMBOS[35]):
            choose(w.page, combo)
            read_answer(w.page)
            assert w.page.evaluate("() => document.documentElement.scrollWidth") <= 375
            for sel in (*CONTROLS, "#answer"):
                box = w.page.locator(sel).bounding_box()
                assert w.page.is_visible(sel) and box is not None, sel
                assert box["x"] >= 0 and box["x"] + box["width"] <= 375 and box["width"] >= 40, (sel, box)
        assert w.problems == []
    finally:
        w.page.close()


def test_the_table_pages_read_without_javascript(browser: Browser, site: Path) -> None:
    context = browser.new_context(java_script_enabled=False)
    w = Watched(context.new_page())
    try:
        for index, link, facts in (("gpus", 'a:text-is("H100")', ["sm_90", "torch", "jax"]),
                                   ("releases", 'a[href$="torch-2.5.1.html"]', ["cu124", "sm_90", "3.12"]),
                                   ("drivers", 'a[href$="535.html"]', ["12.2", "525.60.13"])):
            w.open((site / index / "index.html").as_uri())
            assert w.page.locator("table tr").count() >= 5, index
            assert w.page.locator(link).count() >= 1, f"{index}/index.html has no link {link}"
            href = w.page.locator(link).first.get_attribute("href")
            assert href
            w.open((site / index / href).as_uri())
            text = w.page.inner_text("main")
            assert all(f in text for f in facts), (href, text[:600])
            assert w.page.locator('main a[href^="https://"]').count() >= 1, f"{href}: no fact links to its source"
        assert w.problems == []
    finally:
        context.close()


# ------------------------------------------------------------------------------ the screenshot


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_the_screenshot_shows_an_answer_and_readme_shows_it(selector: Watched, site: Path, update_goldens: bool,
                                                            tmp_path: Path) -> None:
    """`python -m pytest tests/test_site_browser.py --update-goldens` rewrites docs/site.png."""
    page = selector.page
    page.set_viewport_size({"width": 1100, "height": 820})
    selector.open((site / "index.html").as_uri())
    combo = Combo(gpu="RTX 4090", driver="560.35.05")
    choose(page, combo)
    assert read_answer(page) == lock_answer(combo.spec())
    page.evaluate("() => document.activeElement && document.activeElement.blur()")
    shot = tmp_path / "site.png"
    page.screenshot(path=str(shot))
    data = shot.read_bytes()
    assert _png_size(data) == (1100, 820) and len(data) < 300_000
    assert selector.problems == []
    if update_goldens:
        SCREENSHOT.parent.mkdir(exist_ok=True)
        SCREENSHOT.write_bytes(data)
    assert SCREENSHOT.is_file(), "no docs/site.png: run pytest tests/test_site_browser.py --update-goldens"
    assert len(SCREENSHOT.read_bytes()) < 300_000
    assert "](docs/site.png)" in (ROOT / "README.md").read_text()
