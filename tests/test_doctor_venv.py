"""`envsolve doctor` checks the Python the lock's packages live in: the .venv beside the lock (where
`envsolve sync` puts it), a Python or venv given with --python, else the one envsolve runs in; for a
full lock it names every package missing, at another version, or installed beside the lock.

The venvs are real (``python -m venv --without-pip``: no network), their distributions fake
``*.dist-info/METADATA`` folders; the full lock comes from a local index of fake wheels."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from msgspec.structs import replace
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.host import detect as det
from envsolve.host.doctor import Finding, Interpreter, check
from envsolve.lock.model import Package
from envsolve.provider import Provider
from tests.fakeindex import Wheel, serve
from tests.test_detect import _DETECT, HOSTS, host
from tests.test_doctor import H100_TORCH, environment

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
VERSION = "{}.{}.{}".format(*sys.version_info[:3])
SPEC = ('[project]\nname = "demo"\npython = "==' + PY + '.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
        '[packages]\npip = ["requests"]\n')  # locks requests 2.32.3 and its dependency idna 3.10


@pytest.fixture
def lock(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A full lock of SPEC against a local index, on a machine with no GPU and no Docker."""
    url = serve(httpserver, [Wheel("requests", "2.32.3", requires=["idna"]), Wheel("idna", "3.10")])
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", url)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    d = HOSTS / "no-gpu"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))
    monkeypatch.setattr(det, "docker_tools", lambda: {"docker": False})
    project = tmp_path / "project"
    project.mkdir()
    (project / "project.toml").write_text(SPEC)
    r = CliRunner().invoke(main, ["lock", str(project / "project.toml")])
    assert r.exit_code == 0, r.output
    return project / "envsolve.lock"


def _venv(path: Path, **dists: str) -> Path:
    """A venv at ``path`` (no pip) holding the distributions ``name=version`` (fake dist-info folders)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, capture_output=True)
    for name, version in dists.items():
        _install(path, name, version)
    return path


def _site(venv: Path) -> Path:
    return venv / "lib" / f"python{PY}" / "site-packages"


def _install(venv: Path, name: str, version: str) -> None:
    info = _site(venv) / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


def _remove(venv: Path, name: str) -> None:
    for info in _site(venv).glob(f"{name}-*.dist-info"):
        shutil.rmtree(info)


def _doctor(lock: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["doctor", str(lock), *args])


def _packages(r: Result) -> list[str]:
    """The package findings of the doctor's text, each with its fix."""
    lines = r.stdout.splitlines()
    return [line + (f" | {lines[i + 1].strip()}" if i + 1 < len(lines) and lines[i + 1].startswith("      fix:") else "")
            for i, line in enumerate(lines) if line[6:].startswith("package:")]


def test_the_venv_beside_a_full_lock_is_checked_naming_each_missing_extra_and_mismatched_package(
        lock: Path, httpserver: HTTPServer) -> None:
    index = f" --index-url {httpserver.url_for('/simple')}"  # (the lock's: the index it was made from)
    venv = _venv(lock.parent / ".venv", requests="2.31.0", handmade="1.0", pip="24.0")  # idna missing
    r = _doctor(lock)
    assert r.exit_code == 1, r.output
    assert r.stdout.splitlines()[1] == (f"python: {venv}/bin/python, Python {VERSION} (the venv beside the lock, "
                                        "not made by envsolve sync)")
    pip = f"{venv}/bin/python -m pip"  # the pip of the Python checked, whatever is on PATH
    assert _packages(r) == [
        f"FAIL  package: idna 3.10 is locked but not installed | fix: {pip} install 'idna==3.10'{index}",
        f"FAIL  package: requests 2.31.0 is installed; the lock has 2.32.3 | fix: {pip} install 'requests==2.32.3'"
        f"{index}",
        f"WARN  package: handmade 1.0 is installed but not in the lock | fix: {pip} uninstall -y handmade",
        "OK    package: pip 24.0: the tools this venv was made with, not counted as extras"]
    assert r.stderr.startswith("ERROR: 2 check(s) failed, 1 warning(s)\n")

    data = json.loads(_doctor(lock, "--format", "json").stdout)
    assert data["python"] == {"path": f"{venv}/bin/python", "version": VERSION, "chosen_by": "venv",
                              "synced": False, "extras_checked": True}
    assert data["installed"] == {"handmade": "1.0", "pip": "24.0", "requests": "2.31.0"}
    assert list(data) == ["format", "lock", "environment", "on", "host", "python", "installed", "findings", "summary"]

    # the venv put right: every package at its locked version, the extra gone
    _remove(venv, "requests")
    _remove(venv, "handmade")
    _install(venv, "requests", "2.32.3")
    _install(venv, "idna", "3.10")
    r = _doctor(lock)
    assert r.exit_code == 0, r.output
    assert _packages(r)[0] == "OK    package: all 2 locked packages are installed at the locked versions"
    assert r.stdout.endswith("all checks passed (0 warning(s))\n")


def test_python_chooses_a_venv_folder_or_an_executable_and_a_bad_path_is_exit_2_naming_it(
        lock: Path, tmp_path: Path) -> None:
    elsewhere = _venv(tmp_path / "elsewhere", requests="2.32.3", idna="3.10")
    _venv(lock.parent / ".venv")  # empty: --python wins over it
    for given in (elsewhere, elsewhere / "bin" / "python"):
        r = _doctor(lock, "--python", str(given))
        assert r.exit_code == 0, r.output
        assert r.stdout.splitlines()[1] == f"python: {elsewhere}/bin/python, Python {VERSION} (chosen with --python)"
    (tmp_path / "no-venv").mkdir()
    text, script = tmp_path / "notes.txt", tmp_path / "python-ish"
    text.write_text("not a Python\n")
    script.write_text("#!/bin/sh\necho 'no such option: -E' >&2\nexit 3\n")
    for f in (text, script):
        f.chmod(0o755)
    for bad, why in ((tmp_path / "no" / "python", "does not exist"),
                     (tmp_path / "no-venv", "is a folder but no venv: it has no bin/python"),
                     (text, "could not be run: Exec format error"),
                     (script, "is no working Python 3.8 or newer (no such option: -E)")):
        r = _doctor(lock, "--python", str(bad))
        assert r.exit_code == 2, r.output
        assert r.stderr.startswith(f"ERROR: {bad}: {why}"), r.stderr
        assert "TIP: pass --python a Python 3.8 or newer (its executable, or a venv's folder)" in r.stderr
        assert "Traceback" not in r.output


def test_a_folder_beside_the_lock_that_is_no_venv_is_said_and_envsolves_python_checked(lock: Path) -> None:
    (lock.parent / ".venv").mkdir()
    r = _doctor(lock)
    assert r.exit_code == 1  # the checks of the Python envsolve runs in, which lacks the lock's packages
    assert (f"WARNING: {lock.parent / '.venv'} beside the lock is no venv (it has no bin/python): checking the Python "
            "envsolve runs in; `envsolve sync` makes the venv\n") in r.stderr
    assert "(the Python envsolve runs in: no .venv beside the lock)" in r.stdout.splitlines()[1]


def test_a_package_removed_from_the_synced_venv_is_named_with_syncs_fix(lock: Path) -> None:
    """The symptom of issue 41: after `envsolve sync`, a package removed from its .venv was not noticed."""
    r = CliRunner().invoke(main, ["sync", str(lock)])
    assert r.exit_code == 0, r.output
    venv = lock.parent / ".venv"
    ok = _doctor(lock)
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.splitlines()[1] == (f"python: {venv}/bin/python, Python {VERSION} (the venv envsolve sync made "
                                         "for this lock)")
    _remove(venv, "idna")
    _install(venv, "pip", "24.0")  # in a sync's venv, pip is one more extra: the next sync removes it
    r = _doctor(lock)
    assert r.exit_code == 1
    sync = "fix: `envsolve sync` installs the lock's versions and removes what the lock does not hold"
    assert _packages(r) == [f"FAIL  package: idna 3.10 is locked but not installed | {sync}",
                            f"WARN  package: pip 24.0 is installed but not in the lock | {sync}"]
    assert json.loads(_doctor(lock, "--format", "json").stdout)["python"]["synced"] is True


def test_the_python_envsolve_runs_in_is_said_and_its_own_packages_are_no_extras(
        lock: Path, monkeypatch: pytest.MonkeyPatch, httpserver: HTTPServer) -> None:
    own = det.PythonSite(path=sys.executable, version=VERSION, prefix=sys.prefix, own=True,
                         distributions={"envsolve": "1.0", "pip": "24.0", "requests": "2.32.3"})
    monkeypatch.setattr(det, "python_site", lambda python=None, **kw: own)
    r = _doctor(lock)  # no .venv beside the lock
    assert r.exit_code == 1
    assert r.stdout.splitlines()[1] == (f"python: {sys.executable}, Python {VERSION} (the Python envsolve runs in: "
                                        "no .venv beside the lock)")
    assert _packages(r) == [
        f"FAIL  package: idna 3.10 is locked but not installed | fix: pip install 'idna==3.10' --index-url "
        f"{httpserver.url_for('/simple')}",
        "OK    package: packages the lock does not hold are not looked for in the Python envsolve runs in (it holds "
        "envsolve and its dependencies); pass --python or sync a venv to check one exactly"]
    assert json.loads(_doctor(lock, "--format", "json").stdout)["installed"] == {"requests": "2.32.3"}
    # none of what the project asks for: the machine alone is checked
    monkeypatch.setattr(det, "python_site", lambda python=None, **kw: replace(own, distributions={"idna": "3.10"}))
    r = _doctor(lock)
    assert r.exit_code == 0, r.output
    assert _packages(r) == [
        "WARN  package: none of the packages environment 'default' asks for (requests) is installed in the Python "
        "envsolve runs in; checked the machine only | fix: `envsolve sync` makes the lock's venv beside it, which "
        "`envsolve doctor` then checks (or pass --python PATH)"]


def _full(graph: Provider, *packages: tuple[str, str]) -> list[Package]:
    return [Package(name=n, version=v, index_url="https://download.pytorch.org/whl/cu128" if n == "torch" else "",
                    hashes=("sha256:" + "0" * 64,), direct=n == "torch") for n, v in packages]


def test_pep_440_versions_local_labels_and_the_pythons_minor(real_graph: Provider) -> None:
    env = replace(environment(H100_TORCH, real_graph), python=PY,
                  packages=tuple(_full(real_graph, ("torch", "2.8.0+cu128"), ("typing-extensions", "4.12.0"))))
    venv = Interpreter(path="/p/.venv/bin/python", version=VERSION, chosen="venv", own=False)

    def pkg(installed: dict[str, str], python: Interpreter = venv) -> list[tuple[str, str]]:
        found: list[Finding] = check(env, host("h100", real_graph), real_graph, installed=installed, tools={},
                                     python=python, full=True)
        return [(f.level, f.message) for f in found if f.check == "package"]

    assert pkg({"torch": "2.8.0+cu128", "typing-extensions": "4.12"}) == [
        ("ok", "all 2 locked packages are installed at the locked versions")]  # 4.12 is 4.12.0
    assert pkg({"torch": "2.8.0+cpu", "typing-extensions": "4.12.0"}) == [
        ("fail", "torch 2.8.0+cpu is installed; the lock has 2.8.0+cu128 (another build of the same release)")]
    assert pkg({"torch": "2.8.0", "typing-extensions": "4.12.0"})[0][1] == (
        "torch 2.8.0 is installed; the lock has 2.8.0+cu128 (another build of the same release)")
    other = replace(venv, version="3.9.18")
    assert pkg({"torch": "2.8.0+cu128", "typing-extensions": "4.12.0"}, other)[0] == (
        "fail", f"/p/.venv/bin/python is Python 3.9.18; environment 'default' was locked for Python {PY}")
