"""Frameworks that must share one environment agree on the requirements they share (issue 22):
the data's ``shared`` field, the range intersection the solver uses, the solve and its
explanation, and the full lock's retry of the next combination when uv still finds a clash."""

from __future__ import annotations

import itertools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tomli_w
import tomllib
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.data import load_dir
from envsolve.errors import MatrixError, Unsatisfiable
from envsolve.lock.resolve import Pin, uv_clash
from envsolve.provider import Provider
from envsolve.solve import solve_explained
from envsolve.solve.together import meet
from tests.conftest import FIXTURE, pkg, spec_of
from tests.fakeindex import Wheel, serve

# ---------------------------------------------------------------------------- meet: the range intersection

_RELEASES = ["0", "1", "2", "1.0", "1.1", "2.0", "1.0.1", "1.1.0"]
_TAILS = ["", ".post0", ".post1", "rc1", ".dev0", ".post0.dev0", "rc1.post0"]
_NAMED = [r + t for r in _RELEASES for t in _TAILS]
# the brute force's versions: finer than the named ones (longer releases, more tails), so that a
# version between two named ones, of every kind, is among them
_GRID = sorted({Version(".".join(map(str, rel)) + t)
                for n in (1, 2, 3, 4) for rel in itertools.product(range(4), repeat=n)
                for t in [*_TAILS, ".post2", "a1", "rc2", ".dev1", "a0.post0", ".post1.dev0", "rc1.dev0"]})


def _one_spec() -> st.SearchStrategy[str]:
    plain = st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.sampled_from(_NAMED)).map("".join)
    compatible = st.sampled_from([r + t for r in _RELEASES if "." in r for t in ("", ".post1", "rc1")]).map(
        lambda v: "~=" + v)
    wildcard = st.tuples(st.sampled_from(["==", "!="]), st.sampled_from(_RELEASES)).map(lambda p: f"{p[0]}{p[1]}.*")
    return st.one_of(plain, compatible, wildcard)


_SETS = st.lists(_one_spec(), min_size=1, max_size=3).map(lambda specs: SpecifierSet(",".join(specs)))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=_SETS, b=_SETS)
def test_meet_finds_a_common_version_whenever_brute_force_finds_one(a: SpecifierSet, b: SpecifierSet) -> None:
    allow = bool(a.prereleases) and bool(b.prereleases)
    brute = next((v for v in _GRID if a.contains(v, prereleases=allow) and b.contains(v, prereleases=allow)), None)
    got = meet(a, b)
    if got is not None:  # a witness is a version both admit
        assert a.contains(got, prereleases=allow) and b.contains(got, prereleases=allow)
    assert brute is None or got is not None, (str(a), str(b), brute)


def test_meet_agrees_with_brute_force_on_every_pair_of_single_specifiers() -> None:
    near = ["1.0", "1.0.post0", "1.0rc1", "1.0.dev0", "1.1", "1.0.1"]
    specs = [op + v for op in ("==", "!=", "<", "<=", ">", ">=") for v in near]
    specs += ["~=1.0", "~=1.0.1", "==1.*", "!=1.0.*", "==1.0.*"]
    grid = [v for v in _GRID if len(v.release) <= 4 and max(v.release) <= 2]
    for x, y in itertools.combinations_with_replacement(specs, 2):
        a, b = SpecifierSet(x), SpecifierSet(y)
        if meet(a, b) is None:
            allow = bool(a.prereleases) and bool(b.prereleases)
            assert not any(a.contains(v, prereleases=allow) and b.contains(v, prereleases=allow) for v in grid), (x, y)


def test_meet_of_the_ranges_found_in_requires_dist() -> None:
    def meets(x: str, y: str) -> bool:
        return meet(SpecifierSet(x), SpecifierSet(y)) is not None

    assert not meets("~=0.3.1", ">=0.5.0")  # TensorFlow 2.16's ml-dtypes against a new jax's
    assert meets("~=0.3.1", ">=0.2.0")
    assert not meets(">=1.23.5,<2.0.0", ">=2")
    assert meets("<2.0.0,>=1.23.5", ">=1.26.0")
    assert not meets("==8.9.7.29", ">=9.1,<10")  # a cuDNN pin against a plugin's range
    assert meets(">1.0", "<1.0.0.1")  # 1.0.0.0.1 sits between
    assert not meets(">1.0", "<=1.0.post3")  # >1.0 refuses 1.0's post-releases
    assert not meets(">=2.0rc1", "<2.0")  # <2.0 refuses 2.0's pre-releases
    assert not meets(">=0.5.0rc1", "<0.5.0")
    assert meets("==0.3.*", ">=0.3.9")
    assert not meets("!=1.*", "~=1.2")


# ---------------------------------------------------------------------------- the data and the solve

_PY = ["3.10", "3.11", "3.12"]


def _jax_release(version: str, ml_dtypes: str) -> list[dict[str, Any]]:
    """A jax release (its rows: release, cpu build) whose Requires-Dist asks ``ml-dtypes<ml_dtypes>``."""
    return [{"version": version, "python": _PY, "companions": {"jaxlib": version}, "source": "tests fixture",
             "shared": {"ml-dtypes": ml_dtypes, "numpy": ">=1.24"}},
            {"version": version, "variant": "cpu", "accelerator": "cpu", "default": True, "index": "pypi",
             "source": "tests fixture"}]


def _coinstall(doc: dict[str, Any]) -> None:
    """The fixture universe with TensorFlow's and jax's shared requirements as their wheels state
    them: TensorFlow 2.15 pins ml-dtypes ~=0.2.0, 2.17 and 2.18 >=0.3.1,<0.5.0; jax 0.4.30 needs
    >=0.2.0, 0.4.35 >=0.4.0, 0.5.0 >=0.5.0 (and its cuda12 build a cuDNN 9)."""
    if doc.get("package") == "tensorflow":
        for r in doc["release"]:
            r["shared"] = {"ml-dtypes": "~=0.2.0" if r["version"] == "2.15.1" else ">=0.3.1,<0.5.0",
                           "numpy": ">=1.23.5,<2.0.0"}
    if doc.get("package") == "jax":
        doc["release"][0]["shared"] = {"ml-dtypes": ">=0.2.0", "numpy": ">=1.22"}
        doc["build"][1]["shared"] = {"numpy": ">=1.26"}
        for version, floor in (("0.4.35", ">=0.4.0"), ("0.5.0", ">=0.5.0")):
            release, build = _jax_release(version, floor)
            doc["release"].append(release)
            doc["build"].append(build)


def universe(tmp_path: Path, edit: Callable[[dict[str, Any]], None] = _coinstall) -> Path:
    """A copy of the fixture matrices with ``edit`` applied to each parsed file."""
    root = tmp_path / "matrices"
    shutil.copytree(FIXTURE, root)
    for path in root.glob("*.toml"):
        doc = tomllib.loads(path.read_text())
        edit(doc)
        path.write_text(tomli_w.dumps(doc))
    return root


@pytest.fixture
def graph(tmp_path: Path) -> Provider:
    return Provider(load_dir(universe(tmp_path)))


_TF_JAX = '[frameworks]\ntensorflow = "==2.17.0"\njax = "*"\n'


def test_the_newest_jax_whose_ml_dtypes_meets_tensorflows_is_chosen(graph: Provider) -> None:
    (r,) = solve_explained(graph, spec_of(_TF_JAX, graph))
    assert pkg(r, "tensorflow-cpu") == ("2.17.0", "cpu") and pkg(r, "jax") == ("0.4.35", "cpu")  # not 0.5.0
    (old,) = solve_explained(graph, spec_of(_TF_JAX.replace("2.17.0", "2.15.1"), graph))
    assert pkg(old, "jax") == ("0.4.30", "cpu")  # ~=0.2.0 leaves 0.4.30 alone
    (alone,) = solve_explained(graph, spec_of('[frameworks]\njax = "*"\n', graph))
    assert pkg(alone, "jax") == ("0.5.0", "cpu")  # nothing to agree with: the newest


def _spec(tmp_path: Path, body: str) -> Path:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n' + body)
    return spec


def test_explain_says_why_a_newer_jax_was_rejected(tmp_path: Path) -> None:
    root = universe(tmp_path)
    r = CliRunner().invoke(main, ["--matrices", str(root), "explain", str(_spec(tmp_path, _TF_JAX)), "--all"])
    assert r.exit_code == 0, r.output
    assert ("    jax 0.5.0 (cpu): jax 0.5.0 needs ml-dtypes>=0.5.0; tensorflow 2.17.0 pins ml-dtypes>=0.3.1,<0.5.0\n"
            in r.output)
    assert "chose jax 0.4.35 (cpu)" in r.output


def test_no_jax_that_agrees_is_unsatisfiable_naming_the_pins(graph: Provider) -> None:
    with pytest.raises(Unsatisfiable) as e:
        solve_explained(graph, spec_of(_TF_JAX.replace('jax = "*"', 'jax = "==0.5.0"'), graph))
    assert [c.reason for c in e.value.clashes] == [
        "tensorflow 2.17.0 pins ml-dtypes>=0.3.1,<0.5.0; jax 0.5.0 needs ml-dtypes>=0.5.0"]
    assert e.value.fixes == ("jax 0.4.30 .. 0.4.35 works (for example jax 0.4.35 cpu)",)
    assert e.value.exit_code == 1


def test_a_builds_shared_requirement_replaces_its_releases_and_its_exact_pins_count(graph: Provider) -> None:
    jax = graph.releases("jax")[-1]
    cpu, cuda = graph.builds(jax)
    assert graph.shared(jax, cpu) == (("ml-dtypes", ">=0.2.0"), ("numpy", ">=1.22"))
    # the cuda12 build's numpy replaces the release's; its pin of the cuDNN wheel is a shared requirement
    assert graph.shared(jax, cuda) == (("ml-dtypes", ">=0.2.0"), ("numpy", ">=1.26"),
                                       ("nvidia-cudnn-cu12", ">=9.1,<10.0"))
    tf = next(r for r in graph.releases("tensorflow") if r.raw == "2.17.0")
    assert dict(graph.shared(tf, next(b for b in graph.builds(tf) if b.variant == "cuda")))["nvidia-cudnn-cu12"] == "==8.9.7.29"


def test_frameworks_only_lock_takes_the_jax_that_agrees(tmp_path: Path) -> None:
    root = universe(tmp_path)
    r = CliRunner().invoke(main, ["--matrices", str(root), "lock", str(_spec(tmp_path, _TF_JAX)), "--frameworks-only",
                                  "--format", "json"])
    assert r.exit_code == 0, r.output
    (env,) = json.loads(r.stdout)["environments"]
    assert {p["name"]: p["version"] for p in env["frameworks"]}["jax"] == "0.4.35"


def test_a_bad_shared_row_is_refused_naming_file_row_key_and_value(tmp_path: Path) -> None:
    def bad(doc: dict[str, Any]) -> None:
        if doc.get("package") == "jax":
            doc["release"][0]["shared"] = {"ml_dtypes": ">=0.2.0"}
            doc["build"][0]["shared"] = {"numpy": "1.26"}
        if doc.get("package") == "tensorflow":
            doc["release"][0]["shared"] = {"scipy": ">=1.9"}

    with pytest.raises(MatrixError) as e:
        load_dir(universe(tmp_path, bad))
    text = str(e.value)
    assert "jax.toml: release[0] (version 0.4.30).shared: 'ml_dtypes' is not a canonical distribution name " \
           "(write 'ml-dtypes')" in text
    assert "jax.toml: build[0] (version 0.4.30).shared: numpy: '1.26' is not a version specifier" in text
    assert "tensorflow.toml: release[0] (version 2.15.1).shared: 'scipy' is not a requirement frameworks share" in text


# ---------------------------------------------------------------------------- the full lock: uv has the last word


def _releases_only(doc: dict[str, Any]) -> None:
    """The fixture universe with jax 0.4.35 and 0.5.0, and no shared requirements recorded: the
    solver cannot know that they clash with TensorFlow; uv finds out."""
    if doc.get("package") == "jax":
        for version in ("0.4.35", "0.5.0"):
            release, build = _jax_release(version, "")
            del release["shared"]
            doc["release"].append(release)
            doc["build"].append(build)


def _wheels() -> list[Wheel]:
    """TensorFlow 2.17 pins ml-dtypes below 0.5 and numpy below 2; jax 0.5.0 needs ml-dtypes 0.5."""
    return [Wheel("tensorflow-cpu", "2.17.0", requires=["ml-dtypes<0.5.0,>=0.3.1", "numpy<2.0.0,>=1.23.5"]),
            Wheel("jax", "0.5.0", requires=["ml-dtypes>=0.5.0", "numpy>=1.24"]),
            Wheel("jax", "0.4.35", requires=["ml-dtypes>=0.4.0", "numpy>=1.24"]),
            Wheel("ml-dtypes", "0.4.1"), Wheel("ml-dtypes", "0.5.1"), Wheel("numpy", "1.26.4"),
            Wheel("numpy", "2.1.0"), Wheel("numpyfan", "1.0", requires=["numpy>=2"])]


@pytest.fixture
def uv_index(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The fake index above, and the matrices that do not know the clash; returns the matrices."""
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, _wheels()))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY", raising=False)
    return universe(tmp_path, _releases_only)


def _full_lock(root: Path, tmp_path: Path, body: str) -> Result:
    return CliRunner().invoke(main, ["--matrices", str(root), "lock", str(_spec(tmp_path, body)), "--format", "json"])


def test_the_full_lock_tries_the_next_jax_when_uv_finds_the_clash(uv_index: Path, tmp_path: Path) -> None:
    r = _full_lock(uv_index, tmp_path, _TF_JAX)
    assert r.exit_code == 0, r.output
    (env,) = json.loads(r.stdout)["environments"]
    assert {p["name"]: p["version"] for p in env["frameworks"]} == {"jax": "0.4.35", "tensorflow-cpu": "2.17.0"}
    assert {p["name"]: p["version"] for p in env["packages"]}["ml-dtypes"] == "0.4.1"
    assert ("WARNING: tensorflow-cpu 2.17.0 pins ml-dtypes>=0.3.1,<0.5.0; jax 0.5.0 needs ml-dtypes>=0.5.0: the "
            "compatibility data does not say so; trying a jax other than 0.5.0\n") in r.stderr


def test_when_no_combination_installs_the_clash_is_named_without_a_pip_tip(uv_index: Path, tmp_path: Path) -> None:
    r = _full_lock(uv_index, tmp_path, _TF_JAX.replace('jax = "*"', 'jax = "==0.5.0"'))
    assert r.exit_code == 1
    assert ("the packages cannot be installed together: tensorflow-cpu 2.17.0 pins ml-dtypes>=0.3.1,<0.5.0; "
            "jax 0.5.0 needs ml-dtypes>=0.5.0:\n") in r.output
    assert "[packages] pip" not in r.output and "narrow a framework's range in [frameworks]" in r.output


def test_a_pip_requirement_that_clashes_is_named_with_the_pip_tip(uv_index: Path, tmp_path: Path) -> None:
    r = _full_lock(uv_index, tmp_path, '[frameworks]\ntensorflow = "==2.17.0"\n[packages]\npip = ["numpyfan"]\n')
    assert r.exit_code == 1
    assert "numpyfan needs numpy>=2; tensorflow-cpu 2.17.0 pins numpy>=1.23.5,<2.0.0" in r.output
    assert "loosen the [packages] pip requirement" in r.output


# ---------------------------------------------------------------------------- the shipped data


def test_tensorflow_2_16_and_the_newest_jax_do_not_share_an_environment(real_graph: Provider, tmp_path: Path) -> None:
    with pytest.raises(Unsatisfiable) as e:
        solve_explained(real_graph, spec_of('[frameworks]\ntensorflow = "==2.16.*"\njax = "==0.12.0.1"\n', real_graph))
    assert "tensorflow 2.16.2 pins ml-dtypes~=0.3.1; jax 0.12.0.1 needs ml-dtypes>=0.5.0" in [
        c.reason for c in e.value.clashes]
    with pytest.raises(Unsatisfiable) as gpu:  # told against jax's cuda12 build, not its cuda13 one
        solve_explained(real_graph, spec_of('[frameworks]\ntensorflow = "==2.16.*"\njax = "==0.12.0.1"\n'
                                            '[hardware]\ngpus = ["A100"]\n', real_graph))
    assert [c.reason for c in gpu.value.clashes][0] == ("tensorflow 2.16.2 pins ml-dtypes~=0.3.1; "
                                                         "jax 0.12.0.1 needs ml-dtypes>=0.5.0")
    r = CliRunner().invoke(main, ["explain", str(_spec(tmp_path, '[frameworks]\ntensorflow = "==2.16.*"\njax = "*"\n')),
                                  "--all"])
    assert r.exit_code == 0, r.output
    assert "    jax 0.12.0.1 (cpu): jax 0.12.0.1 needs ml-dtypes>=0.5.0; tensorflow 2.16.2 pins ml-dtypes~=0.3.1\n" \
        in r.output
    assert "chose jax 0.12.0.1" not in r.output


def test_uvs_explanation_gives_the_two_requirers_and_their_ranges() -> None:
    pins = [Pin(name="tensorflow", requirement="tensorflow[and-cuda]==2.16.2"), Pin(name="jax", requirement="jax==0.5.0")]
    two = ("  × No solution found when resolving dependencies:\n  ╰─▶ Because jax>=0.5.0 depends on ml-dtypes>=0.5.0 "
           "and all versions of tensorflow[and-cuda] depend on ml-dtypes>=0.3.1,<0.4.dev0, we can conclude that "
           "jax>=0.5.0 and all versions of tensorflow[and-cuda] are incompatible.\n      And because "
           "envsolve-environment depends on tensorflow[and-cuda]==2.16.2 and jax==0.5.0, we can conclude that your "
           "requirements are unsatisfiable.")
    clash = uv_clash(two, pins)
    assert clash is not None and clash.requirers == ("jax", "tensorflow")
    assert clash.text() == "jax 0.5.0 needs ml-dtypes>=0.5.0; tensorflow 2.16.2 pins ml-dtypes>=0.3.1,<0.4.dev0"
    # what uv concludes from two clauses is not a third requirer; the project's own is [packages] pip
    mine = ("Because all versions of tensorflow depend on numpy>=1.23.5,<2.0.0 and envsolve-environment depends on "
            "tensorflow==2.16.2, we can conclude that envsolve-environment depends on numpy>=1.23.5,<2.0.0.\n And "
            "because envsolve-environment depends on numpy>=2, we can conclude that your requirements are "
            "unsatisfiable.")
    told = uv_clash(mine, pins)
    assert told is not None and told.text() == "tensorflow 2.16.2 pins numpy>=1.23.5,<2.0.0; [packages] pip needs numpy>=2"
    assert uv_clash("Because there is no version of foo==9 and you require foo==9, ...", pins) is None
