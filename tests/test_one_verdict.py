"""One question, one answer: for a spec drawn from the data (a GPU by any name the CLI takes, a
driver, a platform, a framework and its range, an extension package, a container OS), the lock,
``envsolve explain``, a matrix cell and the explorer's tables give the same answer: the status,
the chosen builds, the Python, the extension packages and the refusal's cause."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomllib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsolve.data import load
from envsolve.errors import SpecError, Unsatisfiable
from envsolve.matrix.cells import solve_cells
from envsolve.matrix.parse import parse_matrix
from envsolve.provider import Provider
from envsolve.site.build import site_files
from envsolve.site.tables import CPU_ONLY, Choice, project_toml
from envsolve.solve.fixes import solve_explained
from envsolve.solve.report import ExplainReporter, answers
from envsolve.spec import ProjectSpec, parse_spec
from tests.test_site import lookup, solved

P = Provider(load())
_SITE: dict[str, Any] = {}


def _site() -> dict[str, Any]:
    """The explorer's embedded tables (built once: the whole site takes seconds)."""
    if not _SITE:
        import base64
        import json
        import re
        import zlib

        page = site_files(P)["index.html"]
        found = re.search(r'id="site-data" data-encoding="deflate base64">([A-Za-z0-9+/=]*)<', page)
        assert found is not None
        _SITE.update(json.loads(zlib.decompress(base64.b64decode(found.group(1))).decode("utf-8")))
    return _SITE


FRAMEWORKS = ("torch", "tensorflow", "jax", "onnxruntime", "paddlepaddle", "cupy", "keras")
RELEASES = {f: [r.raw for r in P.releases(f)] for f in FRAMEWORKS}
NVIDIA = sorted(g.name for g in P.m.gpus if g.vendor == "nvidia" and not P.is_jetson(g.name))
AMD = sorted(g.name for g in P.m.gpus if g.vendor == "amd")
DRIVERS = [f.raw for f in P.driver_floors(windows=False)][::3]  # the explorer's driver choices are floors
EXTENSIONS = sorted({x.package for x in P.m.extensions})
OSES = sorted(o.name for o in P.m.oses if o.glibc is not None)


def _spelt(name: str) -> st.SearchStrategy[str]:
    """A GPU's name as people write it: as the data has it, lower case, without spaces, or with
    its vendor's words before it (the CLI's resolver takes each)."""
    return st.sampled_from([name, name.lower(), name.replace(" ", ""), f"NVIDIA GeForce {name}"
                            if name.startswith(("RTX", "GTX")) else name])


@st.composite
def choices(draw: st.DrawFn) -> Choice:
    vendor = draw(st.sampled_from(["nvidia", "nvidia", "amd", "cpu"]))
    gpu = CPU_ONLY if vendor == "cpu" else draw(st.sampled_from(NVIDIA if vendor == "nvidia" else AMD))
    fw = draw(st.sampled_from(FRAMEWORKS[:-1]))
    rels = RELEASES[fw]
    pick = draw(st.sampled_from(["any", "exact", "upto"]))
    version = draw(st.sampled_from(rels))
    return Choice(gpu=gpu, driver=draw(st.sampled_from(["", *DRIVERS])) if vendor == "nvidia" else "",
                  framework=fw, low=version if pick == "exact" else "",
                  high=version if pick in ("exact", "upto") else "")


def _lock(spec: ProjectSpec) -> dict[str, Any]:
    """What `envsolve lock --frameworks-only` solves: status, builds, Python, extensions, or the cause."""
    try:
        [r] = solve_explained(P, spec)
    except Unsatisfiable as e:
        return {"status": "refused", "causes": [c.reason for c in e.clashes]}
    return {"status": "ok", "builds": [(p.name, p.version, p.variant) for p in r.packages],
            "python": r.python, "extensions": [(x.name, x.version, x.install) for x in r.extensions],
            "base_image": r.base_image}


def _explained(spec: ProjectSpec) -> dict[str, Any]:
    """What `envsolve explain --format json` says of the same spec, in the same terms."""
    rep = ExplainReporter()
    got = answers(P, spec, rep)
    [target] = rep.explanation(got).to_dict()["targets"]
    if not target["satisfiable"]:
        return {"status": "refused", "causes": [c["reason"] for c in target["clashes"]]}
    return {"status": "ok", "builds": [(p["name"], p["version"], p["variant"]) for p in target["packages"]],
            "python": target["python"]["version"],
            "extensions": [(x["name"], x["version"], x["install"]) for x in target["extensions"]],
            "base_image": target["base_image"]}


def _cell(spec: ProjectSpec, c: Choice, got: dict[str, Any]) -> dict[str, Any] | None:
    """The matrix cell of the lock's own choice (its release, build and Python, on the same GPU and
    driver): it must be valid, with the same builds and Python. None where a matrix cannot say it
    (a CPU-only target, a pure-Python framework)."""
    if got["status"] != "ok" or c.gpu == CPU_ONLY:
        return None
    name, version, variant = got["builds"][0]
    if variant in ("any", "") or name != c.framework:
        return None
    text = (f'[matrix]\npython = ["{got["python"]}"]\n{name} = ["{version}"]\naccelerator = ["{variant}"]\n'
            f'gpus = ["{c.gpu}"]\n' + (f'driver = "{c.driver}"\n' if c.driver else ""))
    try:
        ms = parse_matrix(text, "m.toml", P)
    except SpecError:
        return None  # a variant word the matrix does not take (a Jetson's, an XPU's)
    [cell] = solve_cells(P, ms, ms.cells())
    if cell.resolution is None:
        return {"status": "refused", "causes": [cell.reason]}
    return {"status": "ok", "builds": [(p.name, p.version, p.variant) for p in cell.resolution.packages],
            "python": cell.resolution.python}


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(c=choices(), spelt=st.data())
def test_lock_explain_matrix_and_site_agree(c: Choice, spelt: st.DataObject) -> None:
    # the same GPU as a user may write it: the CLI's resolver and the explorer's give the same answer
    written = c if c.gpu == CPU_ONLY else Choice(**{**{f: getattr(c, f) for f in c.__struct_fields__},
                                                    "gpu": spelt.draw(_spelt(c.gpu))})
    site = lookup(_site(), written) if not c.driver or c.driver in _site()["drivers"] else None
    if site is not None:
        site.pop("packages", None)
    try:
        spec = parse_spec(project_toml(written), "project.toml", P)
    except SpecError:
        assert site is None or site["status"] == "invalid", project_toml(written)
        return
    got = _lock(spec)
    assert _explained(spec) == got, project_toml(written)
    if site is not None:
        assert site == solved(P, c), project_toml(c)  # the explorer: the same answer, its causes too
        assert site["status"] == got["status"], project_toml(c)
        if got["status"] == "ok":
            assert (site["release"], site["build"], site["python"]) == (*got["builds"][0][1:], got["python"])
    cell = _cell(spec, c, got)
    if cell is not None:
        assert cell == {k: got[k] for k in ("status", "builds", "python")}, project_toml(c)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(gpu=st.sampled_from(NVIDIA), ext=st.sampled_from(EXTENSIONS), os=st.sampled_from(["", *OSES]),
       platform=st.sampled_from(["linux/amd64", "linux/arm64", "windows/amd64"]))
def test_extension_packages_and_container_oses_agree(gpu: str, ext: str, os: str, platform: str) -> None:
    """The lock and explain agree with an extension package and a container OS, which the explorer
    does not take: the extension packages chosen, and the cause of a refusal."""
    text = (f'[frameworks]\ntorch = "*"\n[packages]\npip = ["{ext}"]\n[hardware]\ngpus = ["{gpu}"]\n'
            f'platform = "{platform}"\n' + (f'[container]\nos = "{os}"\n' if os else ""))
    try:
        spec = parse_spec(text, "project.toml", P)
    except SpecError:
        return
    assert _explained(spec) == _lock(spec), text


@pytest.mark.parametrize("written", ["RTX3060", "rtx 3060 mobile", "H100 80GB HBM3", "Radeon RX 7900 XTX",
                                     "NVIDIA GeForce RTX 4090", "a100-sxm4-80gb", "Tesla V100-SXM2-32GB",
                                     "geforce gtx 1080 ti", "NVIDIA RTX A6000"])
def test_the_explorer_takes_every_gpu_name_the_cli_takes(written: str) -> None:
    """issue 39: the explorer took fewer GPU names than the command line ("RTX3060", "H100 80GB
    HBM3"); its look-up now follows the command line's resolver, exported with the tables."""
    from tests.test_site import gpu_of

    model = P.gpu(written)
    assert model is not None, written
    d = _site()
    assert d["gpus"][gpu_of(d, written)]["name"] == model.name, written


def test_lock_and_explain_steer_the_same_way_from_the_index(
        httpserver: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """issue 39: with ``pip = ["vllm"]`` on an H100, ``lock --frameworks-only`` took the newest vllm
    of the data (and its torch) while ``explain`` took the newest on the index that fits: both now
    read what the line asks through the one steering step, so they choose the same torch and vllm."""
    from click.testing import CliRunner

    from envsolve.cli import main
    from tests.fakeindex import Wheel, serve

    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, [
        Wheel("torch", "2.8.0"), Wheel("vllm", "0.10.2", requires=["torch==2.8.0"], python=">=3.9")]))
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n[packages]\npip = ["vllm"]\n[hardware]\ngpus = ["H100"]\n')
    locked = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)])
    assert locked.exit_code == 0, locked.output
    lock = tomllib.loads((tmp_path / "envsolve.lock").read_text())
    [env] = lock["environments"]
    why = json.loads(CliRunner().invoke(main, ["explain", str(spec), "--format", "json"]).stdout)
    [target] = why["targets"]
    assert [(f["name"], f["version"]) for f in env["frameworks"]] == [("torch", "2.8.0")]
    assert [(p["name"], p["version"]) for p in target["packages"]] == [("torch", "2.8.0")]
    assert [(x["name"], x["version"]) for x in env["extensions"]] == [("vllm", "0.10.2")]
    assert [(x["name"], x["version"]) for x in target["extensions"]] == [("vllm", "0.10.2")]
    # what the line asked is kept while the index's pages are fresh: the same answer without them
    httpserver.clear()
    spec.write_text(spec.read_text() + "# changed\n")
    again = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)])
    assert again.exit_code == 0 and "vllm==0.10.2 asks torch ==2.8.0" in again.output, again.output


def test_an_index_that_cannot_say_is_said_the_same_way_by_lock_and_explain(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No index: a frameworks-only lock and explain both go on without what the line asks, and warn."""
    from click.testing import CliRunner

    from envsolve.cli import main

    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", "http://127.0.0.1:9/simple")  # nothing listens there
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n[packages]\npip = ["vllm"]\n[hardware]\ngpus = ["H100"]\n')
    locked = CliRunner().invoke(main, ["lock", "--frameworks-only", "-v", str(spec)])
    why = CliRunner().invoke(main, ["explain", str(spec)])
    assert locked.exit_code == why.exit_code == 0, locked.output + why.output
    for out in (locked.output, why.output):
        assert "solving without what [packages] pip asks" in out
    # an answer the index may change next time is not kept for the replay
    assert "kept for the lock replay" not in locked.output
    spec.write_text(spec.read_text().replace('pip = ["vllm"]', "pip = []"))
    assert "kept for the lock replay" in CliRunner().invoke(main, ["lock", "--frameworks-only", "-v", str(spec)]).output


def test_the_solver_asks_the_provider_and_never_reads_its_records() -> None:
    """issue 39: the questions ``solve/`` asks are Provider methods; the records behind it (its
    ``m``) are the Provider's own. Every attribute read off a ``provider`` in solve/ is a method."""
    import ast
    import inspect

    import envsolve.solve

    folder = Path(envsolve.solve.__file__).parent
    read = {(path.name, node.attr) for path in sorted(folder.glob("*.py"))
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "provider"}
    assert read, "the scan found nothing: it no longer reads solve/"
    not_methods = {(f, a) for f, a in read if not inspect.isfunction(getattr(Provider, a, None))}
    assert not not_methods


def test_explain_warns_of_a_base_image_at_its_end_of_life_as_the_lock_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The bundled example's base image (CUDA 12.2, R535's) may be deleted since 2026-12-01: `lock`
    and `explain` say so alike (explain said nothing)."""
    import datetime
    import shutil

    from click.testing import CliRunner

    from envsolve.cli import main
    from envsolve.lock import job

    monkeypatch.setattr(job, "today", lambda: datetime.date(2026, 12, 8))
    spec = tmp_path / "project.toml"
    shutil.copy(Path(__file__).parent.parent / "examples" / "project.toml", spec)
    spec.write_text(spec.read_text().replace('pip = ["numpy<2", "einops"]', "pip = []"))
    locked = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)])
    why = CliRunner().invoke(main, ["explain", str(spec)])
    warned = [line for line in locked.output.splitlines() if "may be deleted since" in line]
    assert warned and all(line in why.output for line in warned), locked.output + why.output
