"""`envsolve explain`: its text and its JSON (``--format json``) are made from one set of records
(:class:`envsolve.solve.report.Explanation`); ``--host`` explains what ``lock --host`` chooses."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.host import detect as det
from envsolve.lock import model as lockfile
from tests.conftest import FIXTURE
from tests.fakeindex import Wheel, serve
from tests.test_detect import _DETECT, HOSTS

GOOD = '[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n'


def explain(spec: Path, *args: str, matrices: Path | None = FIXTURE) -> "object":
    return CliRunner().invoke(main, [*(["--matrices", str(matrices)] if matrices else []), "explain", str(spec), *args])


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "project.toml"
    p.write_text(GOOD)
    return p


def test_json_has_the_chosen_build_its_stack_python_image_and_rejections(spec: Path) -> None:
    r = explain(spec, "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["format"] == 1 and data["pip_notes"] == []
    [t] = data["targets"]
    assert (t["name"], t["satisfiable"], t["vendor"], t["platform"]) == ("default", True, "nvidia", "linux/amd64")
    assert t["gpus"] == [{"name": "H100", "arch": "sm_90"}]
    assert t["chosen"] == [{"framework": "torch", "version": "2.7.1", "variant": "cu126", "cuda": "12.6", "rocm": "",
                            "driver_min": "560.28.03", "compat": "native", "jit": [],
                            "reason": "newest release that fits, the default build; driver >= 560.28.03 (native)"}]
    assert t["python"] == {"version": "3.13",
                           "reason": "the newest every framework supports; set [project] python to choose"}
    assert (t["cuda"], t["driver_min"], t["compat"]) == ("12.6", "560.28.03", "native")
    assert t["base_image"].startswith("nvidia/cuda:12.6")
    assert t["packages"] == [{"name": "torch", "version": "2.7.1", "variant": "cu126", "index": "pypi",
                              "requirement": "torch==2.7.1"}]
    assert len(t["rejected"]) == t["rejected_total"] > 0
    assert all(sorted(x) == ["reason", "subject"] for x in t["rejected"])
    assert "clashes" not in t and "fixes" not in t


def test_text_and_json_say_the_same_and_all_lists_every_rejection(spec: Path) -> None:
    """On the shipped data: 12 rejections without --all, every one with it, in the text and the JSON alike."""
    [short] = json.loads(explain(spec, "--format", "json", matrices=None).stdout)["targets"]
    assert len(short["rejected"]) == 12 < short["rejected_total"]
    assert f"    ... {short['rejected_total'] - 12} more (--all shows every one)\n" in explain(spec, matrices=None).stdout
    text = explain(spec, "--all", matrices=None).stdout
    data = json.loads(explain(spec, "--all", "--format", "json", matrices=None).stdout)
    [t] = data["targets"]
    assert len(t["rejected"]) == t["rejected_total"] == short["rejected_total"]
    assert f"  rejected ({t['rejected_total']}):\n" in text
    for x in t["rejected"]:
        assert f"    {x['subject']}: {x['reason']}\n" in text
    for c in t["chosen"]:
        assert f"  chose {c['framework']} {c['version']} ({c['variant']}): {c['reason']}\n" in text
    assert f"  python {t['python']['version']}: {t['python']['reason']}\n" in text
    assert f"  base image {t['base_image']}\n" in text
    again = explain(spec, "--all", "--format", "json", matrices=None).stdout
    assert again == explain(spec, "--all", "--format", "json", matrices=None).stdout  # same input, same bytes


def test_json_of_an_unsatisfiable_target_has_its_clashes_and_fixes_and_exits_1(spec: Path) -> None:
    spec.write_text('[frameworks]\ntorch = "==2.5.1"\n[hardware]\ngpus = ["RTX 5090"]\n[targets.cpu]\nvendor = "cpu"\n')
    r = explain(spec, "--format", "json")
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    bad, cpu = data["targets"]
    assert (bad["name"], bad["satisfiable"]) == ("default", False)
    assert bad["clashes"] == [{"subject": "torch ==2.5.1",
                               "reason": "torch 2.5.1 has no build for RTX 5090 (sm_120): sm_120 needs CUDA >= 12.8, "
                                         "and torch 2.5.1 builds stop at cu124 (CUDA 12.4)"}]
    assert bad["fixes"] == ["torch >= 2.7.1 works (for example torch 2.7.1 cu128)"]
    assert {"subject": "torch 2.5.1 (cu124)",
            "reason": "no SASS for sm_120 and no PTX at or below it (sm_120 needs CUDA >= 12.8; this build is CUDA 12.4)"} in [
        {"subject": x["subject"], "reason": x["reason"].split(": ", 2)[-1]} for x in bad["rejected"]]
    assert "chosen" not in bad and "python" not in bad
    assert (cpu["name"], cpu["satisfiable"], cpu["chosen"][0]["variant"]) == ("cpu", True, "cpu")
    assert r.stderr.startswith("ERROR: target 'default' cannot be satisfied:\n")
    text = explain(spec)
    assert text.exit_code == 1 and "target default: no resolution\n" in text.stdout
    assert "target cpu: CPU only\n" in text.stdout  # the other targets are explained as well


def test_the_python_of_a_given_range_says_it_came_from_the_spec(spec: Path) -> None:
    spec.write_text(GOOD.replace('name = "demo"', 'name = "demo"\npython = ">=3.10,<3.13"'))
    data = json.loads(explain(spec, "--format", "json").stdout)
    assert data["targets"][0]["python"] == {
        "version": "3.12", "reason": "the newest in [project] python '>=3.10,<3.13' every framework supports"}


def test_host_explains_what_lock_host_chooses(spec: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    d = HOSTS / "h100"  # driver 535.129.03: CUDA 12 by minor-version compatibility
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))
    spec.write_text(GOOD.replace('"H100"', '"A100"'))
    r = explain(spec, "--host", "--format", "json", matrices=None)
    assert r.exit_code == 0, r.output
    assert "host: gpus = ['H100'], driver = 535.129.03, vendor = nvidia" in r.stderr
    [t] = json.loads(r.stdout)["targets"]
    assert (t["gpus"], t["driver"], t["compat"]) == ([{"name": "H100", "arch": "sm_90"}], "535.129.03", "minor-version")
    assert CliRunner().invoke(main, ["lock", "--host", "--frameworks-only", str(spec)]).exit_code == 0
    env = lockfile.read(spec.parent / "envsolve.lock").environments[0]
    assert [(c["framework"], c["version"], c["variant"]) for c in t["chosen"]] == [
        (p.name, p.version, p.variant) for p in env.frameworks]
    assert (t["python"]["version"], t["cuda"], t["driver_min"]) == (env.python, env.cuda, env.driver_min)
    text = explain(spec, "--host", matrices=None)
    assert text.stdout.startswith("target default: H100 (sm_90), driver 535.129.03\n")
    assert explain(spec, matrices=None).stdout.startswith("target default: A100 (sm_80)\n")  # without --host: the spec's


def test_what_pip_packages_ask_is_in_the_json_and_the_python_says_who_bounded_it(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    wheels = [Wheel("torch", "2.8.0"), Wheel("torch", "2.9.1"), Wheel("requests", "2.32.3"),
              Wheel("servepkg", "1.0", requires=["torch==2.8.0", "requests"], python=">=3.9,<3.14")]
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, wheels))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "580.65.06"\n'
                    '[packages]\npip = ["servepkg==1.0"]\n')
    r = explain(spec, "--format", "json", matrices=None)
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert "servepkg==1.0 asks torch ==2.8.0" in data["pip_notes"]
    [t] = data["targets"]
    assert [(c["framework"], c["version"]) for c in t["chosen"]] == [("torch", "2.8.0")]
    assert "(asked by servepkg==1.0: torch ==2.8.0)" in t["chosen"][0]["reason"]
    assert t["python"] == {"version": "3.13", "reason": "the newest every framework supports that servepkg==1.0 installs "
                                                        "on; set [project] python to choose"}
    lock = CliRunner().invoke(main, ["lock", str(spec), "--format", "json"])
    assert lock.exit_code == 0, lock.output
    assert ("  default: Python 3.13 (the newest every framework supports that servepkg==1.0 installs on; set [project] "
            "python to choose), CUDA ") in lock.stderr
