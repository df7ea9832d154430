"""`envsolve site`: the selector's tables give what `envsolve lock --frameworks-only` gives (the
look-up below is site.js's, line for line), the site is deterministic, small, offline, sourced,
readable without JavaScript; bad output folders are refused (exit 2) and never emptied."""

from __future__ import annotations

import base64
import json
import random
import re
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.data import load
from envsolve.errors import SpecError, Unsatisfiable
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from envsolve.site.build import MARKER, site_files
from envsolve.site.tables import CPU_ONLY, Choice, explored_gpus, project_toml, selector_data
from envsolve.solve.fixes import solve_explained
from envsolve.spec import parse_spec


@pytest.fixture(scope="module")
def provider() -> Provider:
    return Provider(load())


@pytest.fixture(scope="module")
def files(provider: Provider) -> dict[str, str]:
    return site_files(provider)


@pytest.fixture(scope="module")
def data(files: dict[str, str]) -> dict[str, Any]:
    """The embedded data as site.js reads it: base64, then inflated (zlib's format), then JSON."""
    found = re.search(r'<script type="application/octet-stream" id="site-data" data-encoding="deflate base64">'
                      r'([A-Za-z0-9+/=]*)</script>', files["index.html"])
    assert found is not None
    return json.loads(zlib.decompress(base64.b64decode(found.group(1))).decode("utf-8"))  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- site.js's look-up, in Python

def _at(runs: list[int], j: int) -> int:
    for count, value in zip(runs[::2], runs[1::2], strict=True):
        if j < count:
            return value
        j -= count
    return runs[-1]


def _fill(text: str, ctx: dict[str, str]) -> str:
    return text.replace("{gpu}", ctx["gpu"]).replace("{driver}", ctx["driver"]).replace("{range}", ctx["subject"])


def _pick(idx: list[int], rank: Any) -> int:
    best, low = -1, float("inf")
    for i in idx:
        r = rank(i)
        if 0 < r < low:
            best, low = i, r
    return best


def _fold(s: str) -> str:
    return re.sub(r"[^a-z0-9]", "", s.lower())


def gpu_of(d: dict[str, Any], name: str) -> int:
    """site.js's gpuOf: the GPU a name means, by the command line's rules (``d["resolver"]``)."""
    by = {_fold(n): i for i, g in enumerate(d["gpus"]) for n in g["names"]}
    r = d["resolver"]

    def named(text: str) -> int:
        key = _fold(text)
        tries = [key, *(_fold(p + key) for p in r["prefixes"]), *(key[len(p):] for p in r["longest"] if key.startswith(p))]
        return next((by[k] for k in tries if k in by), -1)

    laptop = re.sub(r["laptop"], " Laptop GPU", name, count=1, flags=re.IGNORECASE)
    sized = re.sub(r["memory"], "", laptop, flags=re.IGNORECASE)
    bare = re.sub(r["form"], "", sized, flags=re.IGNORECASE)
    ways = [name, laptop, sized, bare, re.sub(r["laptop"], "", bare, count=1, flags=re.IGNORECASE)]
    return next((i for w in ways if (i := named(w)) >= 0), -1)


def lookup(d: dict[str, Any], c: Choice) -> dict[str, Any]:
    """What the selector shows for choice ``c``: {"status", fields | "reasons" and "tip"}."""
    at = gpu_of(d, c.gpu)
    if at < 0:
        return {"status": "invalid"}
    g = d["gpus"][at]
    if g["invalid"][(2 if c.driver else 0) + d["platforms"].index(c.platform)]:
        return {"status": "invalid"}
    tab = d["tables"][d["classes"][g["cls"]][c.platform]]
    j = d["drivers"].index(c.driver) + 1 if c.driver else 0
    ctx = {"gpu": g["text"], "driver": c.driver, "subject": f"{c.framework} {c.raw}"}
    if (t := _at(tab["t"], j)):
        tt = _at(tab["tt"], j)
        return _refused(d["texts"][t - 1], d["texts"][tt - 1] if tt else "", ctx)
    f = tab["f"][c.framework]
    r, x, xt, k, h = (d["blobs"][f[n]] if n in f else None for n in ("r", "x", "xt", "k", "h"))
    assert r is not None and x is not None and xt is not None and h is not None
    rels = d["frameworks"][c.framework]["releases"]
    top, bottom = (rels.index(c.high) if c.high else 0), (rels.index(c.low) if c.low else len(rels) - 1)
    idx = list(range(top, bottom + 1))
    fixes = [_fill(d["texts"][v - 1], ctx)] if c.raw != "*" and (v := _at(f["v"], j)) else []
    if not idx:
        return _refused(d["texts"][_at(f["e"], j)], _tip(d, fixes), ctx)
    chosen = _pick(idx, lambda i: 0 if _at(r[i], j) < 0 else 1 + (_at(k[i], j) if k else 0))
    if chosen >= 0:
        return {"status": "ok", **dict(zip(d["fields"], d["answers"][_at(r[chosen], j)], strict=True))}
    fix = _pick(idx, lambda i: _at(x[i], j))
    if fix >= 0:
        fixes.append(_fill(d["texts"][_at(xt[fix], j) - 1], ctx))
    told = next((i for i in idx if h[i]), idx[0])  # the newest in range with a build of the GPU's kind
    return _refused(d["texts"][-1 - _at(r[told], j)], _tip(d, fixes), ctx)


def _tip(d: dict[str, Any], fixes: list[str]) -> str:
    return d["tip"].replace("{fixes}", "; ".join(fixes)) if fixes else ""


def _refused(lines: str, tip: str, ctx: dict[str, str]) -> dict[str, Any]:
    return {"status": "refused", "reasons": _fill(lines, ctx).split("\n"), "tip": _fill(tip, ctx)}


# ---------------------------------------------------------------------------- the real lock

def solved(provider: Provider, c: Choice) -> dict[str, Any]:
    """What `envsolve lock --frameworks-only` answers for the choice's project.toml."""
    text = project_toml(c)
    try:
        spec = parse_spec(text, "project.toml", provider)
    except SpecError:
        return {"status": "invalid"}
    try:
        resolutions = solve_explained(provider, spec)
    except Unsatisfiable as e:
        return {"status": "refused", "reasons": [line.removeprefix("  - ") for line in e.message.splitlines()[1:]],
                "tip": e.tip or ""}
    lock = lockfile.build(project=spec.name, spec_name="project.toml", spec_bytes=text.encode(),
                          data_version=provider.data_version, data_digest=provider.digest,
                          resolutions=resolutions, pip=(), conda=(), apt=(), urls={}, full=None)
    env = lock.environments[0]
    fw = env.frameworks[0]
    return {"status": "ok", "release": fw.version, "build": fw.variant, "cuda": env.cuda, "rocm": env.rocm,
            "python": env.python, "driver-min": env.driver_min, "compat": env.compat, "base-image": env.base_image}


def _sample(d: dict[str, Any], n: int, seed: int) -> list[Choice]:
    """``n`` choices over every kind of GPU (NVIDIA, AMD, Jetson, CPU only), drivers, platforms,
    frameworks and ranges, drawn the same way every run."""
    rnd = random.Random(seed)
    by_kind: dict[str, list[str]] = {}
    for g in d["gpus"]:
        kind = _kind(d, g)
        by_kind.setdefault(kind, []).append(g["name"])
    out = []
    for i in range(n):
        kind = sorted(by_kind)[i % len(by_kind)]
        gpu = rnd.choice(by_kind[kind])
        fw = rnd.choice(sorted(d["frameworks"]))
        rels = d["frameworks"][fw]["releases"]
        low, high = sorted(rnd.sample(range(len(rels)), 2), reverse=True) if len(rels) > 1 else (0, 0)
        low_s = rnd.choice(["", rels[low]])
        high_s = rnd.choice(["", rels[high], rels[min(high, len(rels) - 1)]])
        driver = rnd.choice(["", *d["drivers"]]) if kind == "nvidia" else ""
        platform = "linux/arm64" if kind == "jetson" else rnd.choice(d["platforms"])
        out.append(Choice(gpu=gpu, driver=driver, platform=platform, framework=fw, low=low_s, high=high_s))
    return out


def _kind(d: dict[str, Any], g: dict[str, Any]) -> str:
    if g["name"] == CPU_ONLY:
        return "cpu"
    if g["invalid"][0] and not g["invalid"][1]:
        return "jetson" if g["invalid"][3] else "arm"
    return "amd" if g["invalid"][2] else "nvidia"


def _same(provider: Provider, d: dict[str, Any], c: Choice) -> None:
    got, want = lookup(d, c), solved(provider, c)
    got.pop("packages", None)
    assert got == want, project_toml(c)


def test_every_kind_of_gpu_is_in_the_sample(data: dict[str, Any]) -> None:
    kinds = {_kind(data, g) for g in data["gpus"]}
    assert {"cpu", "amd", "jetson", "nvidia"} <= kinds


@pytest.mark.parametrize("seed", range(6))
def test_the_tables_answer_as_the_lock_does(provider: Provider, data: dict[str, Any], seed: int) -> None:
    for c in _sample(data, 25, seed):
        _same(provider, data, c)


@pytest.mark.parametrize("choice", [
    Choice(gpu="NVIDIA GeForce RTX 5090", driver="535.104.05", framework="torch"),  # driver predates the GPU
    Choice(gpu="RTX 5090", framework="torch", high="2.6.0"),  # no build for sm_120 before 2.7
    Choice(gpu="RTX 4090", driver="470.82.01", framework="torch", low="2.0.0"),  # the driver fix
    Choice(gpu="K80", driver="470.82.01", framework="tensorflow"),
    Choice(gpu="K80", driver="595.71.05", framework="torch"),  # a branch that dropped Kepler
    Choice(gpu="H100", driver="525.85.12", framework="jax"),
    Choice(gpu="GH200", platform="linux/arm64", framework="torch"),
    Choice(gpu="GH200", platform="linux/amd64", framework="torch"),  # invalid: an Arm superchip
    Choice(gpu="MI300X", framework="torch"),
    Choice(gpu="AMD Instinct MI300X", framework="torch", driver="535.104.05"),  # invalid: a driver for AMD
    Choice(gpu="Jetson AGX Orin", platform="linux/arm64", framework="torch"),
    Choice(gpu="Jetson AGX Orin", platform="linux/arm64", framework="tensorflow"),
    Choice(gpu=CPU_ONLY, framework="torch"),
    Choice(gpu=CPU_ONLY, platform="linux/arm64", framework="tensorflow"),
    Choice(gpu="RTX 4090", framework="keras"),
    Choice(gpu="K80", driver="470.82.01", framework="keras", low="3.0.0"),  # Keras 3 and the old TensorFlow
    Choice(gpu="RTX 4090", driver="450.80.02", framework="keras"),
    Choice(gpu="RTX 4090", framework="torch", low="2.5.1", high="2.0.0"),  # no release in range
    Choice(gpu="V100", driver="418.87.00", framework="cupy"),
    Choice(gpu="A100", driver="450.80.02", framework="onnxruntime"),
    Choice(gpu="T4", framework="paddlepaddle", driver="525.85.12"),
    # jaxlib 0.3.15's CUDA wheels are only on JAX's find-links page: a driver too old for them is told
    # first, as the lock tells it; a new enough one gets the find-links refusal with its floor
    Choice(gpu="GT 1010", driver="440.33", framework="jax", high="0.3.19"),
    Choice(gpu="GT 1010", driver="535.104.05", framework="jax", high="0.3.19"),
    # refused, told by the newest release with a ROCm build (2.14.0), not the newest in range
    Choice(gpu="RX Vega 64", platform="linux/arm64", framework="tensorflow", low="2.5.0"),
])
def test_chosen_cases(provider: Provider, data: dict[str, Any], choice: Choice) -> None:
    _same(provider, data, choice)


def test_the_lock_command_agrees_for_a_refused_and_a_solved_spec(tmp_path: Path, provider: Provider,
                                                                  data: dict[str, Any]) -> None:
    """The real command line, for one refused and one solved choice (the sample above uses its solve)."""
    for c in (Choice(gpu="RTX 5090", driver="535.104.05", framework="torch"),
              Choice(gpu="RTX 4090", driver="535.104.05", framework="torch", high="2.3.1")):
        spec = tmp_path / "project.toml"
        spec.write_text(project_toml(c))
        got = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec), "-o", str(tmp_path / "x.lock")])
        want = lookup(data, c)
        if want["status"] == "ok":
            assert got.exit_code == 0, got.output
            text = (tmp_path / "x.lock").read_text()
            assert f'version = "{want["release"]}"' in text and f'base_image = "{want["base-image"]}"' in text
        else:
            assert got.exit_code == 1
            assert all(f"  - {line}" in got.output for line in want["reasons"])
            assert f"TIP: {want['tip']}" in got.output


# ---------------------------------------------------------------------------- the site's files

def test_small_and_every_page_there(files: dict[str, str]) -> None:
    # a page per GPU model: the catalog has every NVIDIA GPU from Kepler on (about 420 models)
    assert sum(len(t.encode()) for t in files.values()) < 5_000_000
    assert len(files["index.html"]) < 1_000_000  # the tables deflated: their JSON is about ten times more
    for page in ("index.html", "site.css", "site.js", "gpus/index.html", "releases/index.html", "drivers/index.html",
                 "gpus/rtx-4090.html", "releases/torch-2.7.1.html", "drivers/535.html", MARKER):
        assert page in files


def test_one_process_or_two_make_the_same_tables(provider: Provider, data: dict[str, Any]) -> None:
    """The tables are computed by two processes and merged in one order: one process gives the same."""
    alone = selector_data(provider, workers=1)
    assert {k: alone[k] for k in ("tables", "blobs", "texts", "answers", "gpus", "classes")} == \
        {k: data[k] for k in ("tables", "blobs", "texts", "answers", "gpus", "classes")}


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.fetched: list[str] = []  # what a browser fetches while showing the page
        self.anchors: list[str] = []
        self.tables = 0
        self.low: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "img", "iframe") and a.get("src"):
            self.fetched.append(a["src"] or "")
        if tag == "link":
            self.fetched.append(a.get("href") or "")
        if tag == "a":
            self.anchors.append(a.get("href") or "")
        if tag == "table":
            self.tables += 1
        if "low" in (a.get("class") or "").split():
            self.low.append(a.get("title") or "")


def _parsed(text: str) -> _Links:
    p = _Links()
    p.feed(text)
    return p


def test_nothing_is_fetched_from_the_network(files: dict[str, str]) -> None:
    for name, text in files.items():
        if name.endswith(".html"):
            assert not [u for u in _parsed(text).fetched if "//" in u], name
    assert "fetch(" not in files["site.js"] and "http" not in files["site.js"]
    assert "@import" not in files["site.css"] and "url(" not in files["site.css"]


def _sourced(row: Any, page: _Links, text: str) -> bool:
    """A URL source is a link; another ("package metadata of torch==2.7.1") is there as text."""
    return row.source in page.anchors if row.source.startswith("https://") else f">{row.source}<" in text


def test_every_fact_links_its_source(provider: Provider, files: dict[str, str]) -> None:
    rel = next(r for r in provider.releases("torch") if r.raw == "2.7.1")
    text = files["releases/torch-2.7.1.html"]
    page = _parsed(text)
    assert all(_sourced(row, page, text) for row in (rel, *provider.builds(rel)))
    gpus = files["gpus/index.html"]
    assert all(_sourced(g, _parsed(gpus), gpus) for g in explored_gpus(provider))  # the Linux platforms' GPUs
    drivers = files["drivers/index.html"]
    assert all(_sourced(b, _parsed(drivers), drivers) for b in provider.m.branches)
    branch = files["drivers/535.html"]
    assert all(_sourced(t, _parsed(branch), branch) for t in provider.m.toolkits if t.driver_min.major <= 535)
    assert any("https://" in a for a in _parsed(files["gpus/rtx-4090.html"]).anchors)


def test_low_confidence_is_marked_with_its_note(provider: Provider, files: dict[str, str]) -> None:
    low = [g for g in provider.m.gpus if g.confidence == "low"]
    assert low, "the data has no low-confidence GPU row"
    page = _parsed(files["gpus/index.html"])
    assert len(page.low) >= len(low) and low[0].note in page.low
    branches = [b for b in provider.m.branches if b.confidence == "low"]
    if branches:
        assert branches[0].note in _parsed(files["drivers/index.html"]).low


def test_tables_are_there_without_javascript(files: dict[str, str]) -> None:
    for name in ("gpus/index.html", "gpus/rtx-4090.html", "releases/torch-2.7.1.html", "drivers/535.html",
                 "drivers/index.html"):
        page = _parsed(files[name])
        assert page.tables >= 1 and "<script" not in files[name], name
    assert "RTX 4090" in files["gpus/index.html"] and "cu128" in files["releases/torch-2.7.1.html"]
    assert re.search(r"2\.7\.1(, [0-9.]+)* <b>cu1", files["gpus/rtx-4090.html"])  # what the GPU runs, as text


def test_selector_controls_and_labels(files: dict[str, str]) -> None:
    index = files["index.html"]
    for control in ("gpu", "driver", "platform", "framework", "version-min", "version-max"):
        assert f'<label for="{control}">' in index and f'id="{control}"' in index
    assert 'id="gpu-names"' in index and 'aria-live="polite"' in index and 'id="builds"' in index
    assert 'name="viewport"' in index and "@media (max-width" in files["site.css"]


# ---------------------------------------------------------------------------- the command

def test_site_command_writes_the_same_bytes_again(tmp_path: Path, files: dict[str, str]) -> None:
    """A second build (the command's) writes exactly the files of the first; a site is rewritable."""
    out = tmp_path / "site"
    out.mkdir()
    (out / MARKER).write_text("an earlier site")
    (out / "index.html").write_text("old")
    got = CliRunner().invoke(main, ["site", "-o", str(out)])
    assert got.exit_code == 0, got.output
    written = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file()}
    assert written == files


def test_a_folder_that_is_not_a_site_is_left_alone(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    got = CliRunner().invoke(main, ["site", "-o", str(out)])
    assert got.exit_code == 2
    assert "is not a site envsolve wrote" in got.output and "TIP" in got.output
    assert [p.name for p in out.iterdir()] == ["notes.txt"] and (out / "notes.txt").read_text() == "keep me"


def test_output_that_is_a_file_or_unwritable(tmp_path: Path) -> None:
    file = tmp_path / "file"
    file.write_text("x")
    got = CliRunner().invoke(main, ["site", "-o", str(file)])
    assert got.exit_code == 2 and "is not a folder" in got.output and file.read_text() == "x"
    got = CliRunner().invoke(main, ["site", "-o", str(file / "site")])  # a folder under a file
    assert got.exit_code == 2 and "cannot be written" in got.output and "Traceback" not in got.output


def test_site_never_writes_through_a_link_that_leads_out_of_its_folder(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 40: DIR/gpus -> elsewhere (or DIR/index.html -> ~/.bashrc) wrote outside the site's folder
    monkeypatch.setattr("envsolve.site.build.site_files",
                        lambda _: {MARKER: "site\n", "index.html": "<p>new</p>\n", "gpus/h100.html": "<p>H100</p>\n"})
    out, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "bashrc").write_text("mine\n")
    (out / MARKER).write_text("an earlier site")
    for name, target in (("gpus", elsewhere), ("index.html", elsewhere / "bashrc")):
        (out / name).symlink_to(target)
        got = CliRunner().invoke(main, ["site", "-o", str(out)])
        assert got.exit_code == 2 and "Traceback" not in got.output
        assert f"cannot be written: it lies outside the output folder {out} ({out / name} is a link to {target})" \
            in got.output and f"TIP: remove the link {out / name}" in got.output
        assert sorted(p.name for p in elsewhere.iterdir()) == ["bashrc"] and (elsewhere / "bashrc").read_text() == "mine\n"
        assert (out / MARKER).read_text() == "an earlier site"  # nothing written at all
        (out / name).unlink()
    got = CliRunner().invoke(main, ["site", "-o", str(out)])
    assert got.exit_code == 0 and (out / "gpus" / "h100.html").read_text() == "<p>H100</p>\n"


# ---------------------------------------------------------------------------- matrix --format html

def test_matrix_html_colours_each_cell_and_tells_why_pruned(tmp_path: Path) -> None:
    matrix = tmp_path / "images.toml"
    matrix.write_text('[matrix]\npython = ["3.12"]\ntorch = ["2.8.0"]\naccelerator = ["cu121", "cu126"]\n'
                      'gpus = ["A100"]\n')
    got = CliRunner().invoke(main, ["matrix", str(matrix), "--format", "html"])
    assert got.exit_code == 0, got.output
    page = got.output
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<strong>1 valid</strong>, 1 pruned of 2 cells" in page
    valid = re.search(r'<tr class="ok">.*?py3_12-torch2_8_0-cu126.*?</tr>', page)
    pruned = re.search(r'<tr class="pruned">.*?py3_12-torch2_8_0-cu121.*?</tr>', page)
    assert valid is not None and "torch 2.8.0" in valid.group(0) and "nvidia/cuda:" in valid.group(0)
    assert pruned is not None and "torch 2.8.0 has no CUDA 12.1 build (it has cu126, cu128, cu129)" in pruned.group(0)
    assert "<script" not in page and "http" not in page.split("<body>")[0]


def test_matrix_html_escapes_what_it_shows(tmp_path: Path) -> None:
    matrix = tmp_path / "a<b>.toml"
    matrix.write_text('[matrix]\npython = ["3.12"]\ntorch = ["2.8.0"]\naccelerator = ["cu126"]\ngpus = ["A100"]\n')
    got = CliRunner().invoke(main, ["matrix", str(matrix), "--format", "html"])
    assert got.exit_code == 0, got.output
    assert "a&lt;b&gt;.toml" in got.output and "a<b>" not in got.output


def test_site_never_writes_into_an_output_folder_that_is_itself_a_link(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # hostile round 3, defect 1: `site -o link` wrote into the link's target
    monkeypatch.setattr("envsolve.site.build.site_files", lambda _: {MARKER: "site\n", "index.html": "<p>new</p>\n"})
    victim, link = tmp_path / "victim", tmp_path / "site"
    victim.mkdir()
    link.symlink_to(victim)
    got = CliRunner().invoke(main, ["site", "-o", str(link)])
    assert got.exit_code == 2 and "Traceback" not in got.output
    assert f"{link}: cannot be written (-o): the output folder is a link to {victim}" in got.output
    assert f"TIP: pass the link's target (-o {victim})" in got.output and list(victim.iterdir()) == []
