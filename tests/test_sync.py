"""`envsolve sync` and `envsolve run`: a full lock made against a local index of fake wheels,
installed into a temporary venv by uv, exactly; the host faked from recorded tool output."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.host import detect as det
from envsolve.sync import MARKER
from tests.fakeindex import Wheel, serve
from tests.test_detect import _DETECT, HOSTS

# the Python running the tests: uv finds it here, so no test downloads one
PY = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER_PY = "3.11" if PY == "3.10" else "3.10"

CPU = ('[project]\nname = "demo"\npython = "==' + PY + '.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
       '[packages]\npip = ["requests"]\n')


def _wheels() -> list[Wheel]:
    return [Wheel("requests", "2.32.3", requires=["idna"]), Wheel("requests", "2.31.0", requires=["idna"]),
            Wheel("idna", "3.10"), Wheel("handmade", "1.0"), Wheel("filelock", "3.16.1")]


@pytest.fixture
def index(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    url = serve(httpserver, _wheels())
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", url)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    return url


def _host(monkeypatch: pytest.MonkeyPatch, machine: str) -> None:
    """This machine is the recorded ``machine`` (its nvidia-smi and /proc)."""
    d = HOSTS / machine
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))


def _locked(tmp_path: Path, body: str = CPU, *args: str) -> Path:
    spec = tmp_path / "project.toml"
    spec.write_text(body)
    r = CliRunner().invoke(main, ["lock", str(spec), *args])
    assert r.exit_code == 0, r.output
    return tmp_path / "envsolve.lock"


def _sync(lock: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["sync", str(lock), *args])


def _python(venv: Path, code: str) -> str:
    """CODE run by the venv's Python alone: isolated (-I) from PYTHONPATH and the user's site-packages."""
    done = subprocess.run([str(venv / "bin" / "python"), "-I", "-c", code], capture_output=True, text=True,
                          check=True)
    return done.stdout.strip()


def _installed(venv: Path) -> dict[str, str]:
    """Name -> version of every distribution in the venv, as its own Python sees them."""
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    return json.loads(_python(venv, code))  # type: ignore[no-any-return]


def test_sync_installs_exactly_the_lock_is_a_no_op_again_and_removes_a_package_added_by_hand(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 0, r.output
    assert r.stdout == f"synced environment 'default' (2 packages) into {venv}: 2 installed, 0 removed\n"
    assert _installed(venv) == {"requests": "2.32.3", "idna": "3.10"}  # nothing else: no pip, no setuptools
    assert _python(venv, "import requests, importlib.metadata as m, sys; "
                         "print(m.version('requests'), sys.version_info[:2])") == f"2.32.3 {sys.version_info[:2]}"
    marker = json.loads((venv / MARKER).read_text())
    assert marker["environment"] == "default" and sorted(marker["packages"]) == ["idna", "requests"]

    # a second sync of the same lock installs and removes nothing: the files stay as they were
    module = next(venv.glob(f"lib/python{PY}/site-packages/requests/__init__.py"))
    before = (module.stat().st_ino, module.stat().st_mtime_ns, (venv / MARKER).stat().st_mtime_ns)
    again = _sync(lock, "--venv", str(venv))
    assert again.exit_code == 0, again.output
    assert again.stdout == f"environment 'default' (2 packages) is already in sync in {venv}\n"
    assert (module.stat().st_ino, module.stat().st_mtime_ns, (venv / MARKER).stat().st_mtime_ns) == before

    # a package added by hand, and another version of a locked one: the next sync puts the lock back
    from uv import find_uv_bin

    uv = [str(find_uv_bin()), "pip", "install", "--python", str(venv / "bin" / "python"), "--index-url", index,
          "--no-config", "--cache-dir", str(tmp_path / "cache" / "uv")]
    subprocess.run([*uv, "handmade==1.0", "requests==2.31.0"], check=True, capture_output=True)
    assert _installed(venv) == {"requests": "2.31.0", "idna": "3.10", "handmade": "1.0"}
    fixed = _sync(lock, "--venv", str(venv))
    assert fixed.exit_code == 0, fixed.output
    assert fixed.stdout.endswith(": 1 installed, 1 removed\n")
    assert _installed(venv) == {"requests": "2.32.3", "idna": "3.10"}


def test_a_venv_made_by_hand_is_refused_and_a_package_no_sync_recorded_is_installed_again_with_its_hash(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A venv made by hand with the locked versions is not the sync's to change (it would be
    replaced): refused, left as it was. In a sync's venv, a package whose record the marker lacks
    (installed by hand at the locked version) is installed again, hash-checked, and remembered."""
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / ".venv"  # the default: beside the lock
    from uv import find_uv_bin

    uv = str(find_uv_bin())
    subprocess.run([uv, "venv", str(venv), "--python", PY, "--no-config"], check=True, capture_output=True)
    subprocess.run([uv, "pip", "install", "--python", str(venv / "bin" / "python"), "--index-url", index,
                    "--no-config", "requests==2.32.3", "idna==3.10"], check=True, capture_output=True)
    before = sorted(str(p.relative_to(venv)) for p in venv.rglob("*"))
    r = _sync(lock)
    assert r.exit_code == 2 and f"{venv}: exists and was not made by `envsolve sync`" in r.stderr
    assert sorted(str(p.relative_to(venv)) for p in venv.rglob("*")) == before
    import shutil

    shutil.rmtree(venv)
    assert _sync(lock).exit_code == 0
    marker = json.loads((venv / MARKER).read_text())
    del marker["packages"]["idna"]
    (venv / MARKER).write_text(json.dumps(marker))
    r = _sync(lock)
    assert r.stdout == f"synced environment 'default' (2 packages) into {venv}: 1 installed, 0 removed\n"
    assert _sync(lock).stdout.startswith("environment 'default' (2 packages) is already in sync")


def test_a_file_other_than_the_locked_one_is_refused_by_its_hash(
        index: str, httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    httpserver.clear()  # the index now serves another requests-2.32.3 wheel (other bytes, same name)
    serve(httpserver, [Wheel("requests", "2.32.3", requires=["idna", "evil"]), Wheel("idna", "3.10")])
    venv = tmp_path / "venv"
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 1
    assert "uv could not install 2 package(s) of requirements.txt from http://localhost" in r.stderr
    assert "hash" in r.stderr.lower() and "requests" in r.stderr
    assert not venv.exists() and sorted(p.name for p in tmp_path.iterdir() if "envsolve-" in p.name) == []


def test_a_venv_of_another_python_is_made_again_and_a_folder_that_is_no_venv_is_kept(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    cfg = venv / "pyvenv.cfg"
    cfg.write_text(cfg.read_text().replace(f"version_info = {PY}", f"version_info = {OTHER_PY}"))
    r = CliRunner().invoke(main, ["-v", "sync", str(lock), "--venv", str(venv)])
    assert r.exit_code == 0, r.output
    assert f"sync: creating {venv} with Python {PY} (it had Python {OTHER_PY})" in r.stderr
    assert f"version_info = {PY}" in cfg.read_text() and "2 installed" in r.stdout
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    r = _sync(lock, "--venv", str(mine))
    assert r.exit_code == 2 and "exists and was not made by `envsolve sync`" in r.stderr
    assert (mine / "notes.txt").read_text() == "keep me"


def test_a_stale_lock_is_refused_with_the_command_that_refreshes_it(index: str, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    spec = tmp_path / "project.toml"
    spec.write_text(CPU.replace('"requests"', '"requests", "filelock"'))
    venv = tmp_path / "venv"
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 1
    assert r.stderr == (f"ERROR: {lock} is stale: its spec changed since it was locked\n"
                        f"TIP: refresh it with `envsolve lock {spec}` (with the options it was locked with, such as "
                        "--host), then sync again; or sync it as it is with --frozen\n")
    assert not venv.exists()
    frozen = _sync(lock, "--venv", str(venv), "--frozen")
    assert frozen.exit_code == 0, frozen.output
    spec.unlink()  # a lock alone on a machine: said, and synced as it is
    alone = _sync(lock, "--venv", str(venv))
    assert alone.exit_code == 0, alone.output
    assert f"WARNING: {lock}: its spec {spec} is not beside it, so whether the lock is current was not checked" \
        in alone.stderr


def test_a_frameworks_only_lock_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path, CPU, "--frameworks-only")  # the test setup's ENVSOLVE_FRAMEWORKS_ONLY too
    r = _sync(lock, "--venv", str(tmp_path / "venv"))
    assert r.exit_code == 2
    assert r.stderr == (f"ERROR: {lock}: is a frameworks-only lock (no packages, no hashes); sync installs every "
                        "package of a full lock, hash-checked\n"
                        f"TIP: lock in full: `envsolve lock {tmp_path / 'project.toml'}` without --frameworks-only "
                        "(and without ENVSOLVE_FRAMEWORKS_ONLY)\n")
    assert not (tmp_path / "venv").exists()


GPU = ('[project]\nname = "demo"\npython = "==' + PY + '.*"\n[frameworks]\ntorch = "==2.14.1"\n'
       '[hardware]\ngpus = ["A100"]\ndriver = "535.104.05"\n')


def test_a_host_the_lock_cannot_serve_is_refused_with_the_fixes_and_force_goes_on(
        index: str, httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = Wheel("torch", "2.14.1+cu126", requires=["filelock"])
    pytorch = serve(httpserver, [torch], prefix="/whl/cu126").removesuffix("/whl/cu126") + "/whl"
    monkeypatch.setenv("ENVSOLVE_INDEX_PYTORCH", pytorch)
    lock = _locked(tmp_path, GPU)
    _host(monkeypatch, "t4-driver460")  # a Tesla T4 on driver 460: too old for CUDA 12.6
    venv = tmp_path / "venv"
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 1
    assert f"ERROR: this host cannot run environment 'default' of {lock}:\n" in r.stderr
    assert "  FAIL  driver: driver 460.32.03 is too old for CUDA 12.6" in r.stderr
    assert "      fix: upgrade the NVIDIA driver to >= " in r.stderr
    assert r.stderr.endswith("TIP: apply the fixes above; or sync another environment (--target NAME), or pass "
                             "--force to install it anyway\n")
    assert not venv.exists()
    forced = _sync(lock, "--venv", str(venv), "--force")
    assert forced.exit_code == 0, forced.output
    assert "WARNING: driver: driver 460.32.03 is too old for CUDA 12.6" in forced.stderr
    assert "(installing anyway: --force)" in forced.stderr
    assert _installed(venv) == {"torch": "2.14.1+cu126", "filelock": "3.16.1"}  # each from its own index
    pinned = [line for line in httpserver.log if "/whl/cu126/files/" in line[0].path]
    assert pinned, "torch came from the PyTorch index"


def test_run_syncs_a_missing_venv_then_runs_in_it_with_the_commands_exit_status(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    out = tmp_path / "prefix.txt"
    code = (f"import os, sys, requests; open({str(out)!r}, 'w').write(sys.prefix + ' ' + os.environ['VIRTUAL_ENV']);"
            " sys.exit(3)")
    r = CliRunner().invoke(main, ["run", "--lock", str(lock), "--venv", str(venv), "--", "python", "-c", code])
    assert r.exit_code == 3, r.output
    assert "synced environment 'default' (2 packages)" in r.stdout
    assert out.read_text() == f"{venv} {venv}"
    monkeypatch.setattr(det, "detect", lambda: pytest.fail("a current venv needs no sync"))
    again = CliRunner().invoke(main, ["run", "--lock", str(lock), "--venv", str(venv), "python", "-c",
                                      "import sys; sys.exit(0)"])
    assert again.exit_code == 0 and again.output == ""
    missing = CliRunner().invoke(main, ["run", "--lock", str(lock), "--venv", str(venv), "--", "no-such-tool-x"])
    assert missing.exit_code == 2 and "no-such-tool-x" in missing.stderr


def test_smoke_runs_the_environments_smoke_test_in_the_venv(index: str, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    monkeypatch.chdir(tmp_path)  # the default venv, .venv beside the lock, named relatively
    r = _sync(Path(lock.name), "--smoke")
    assert r.exit_code == 0, r.output
    assert (tmp_path / ".venv" / "bin" / "python").exists()
    assert "envsolve smoke test: project demo, environment default" in r.stdout
    assert "PASS  python:" in r.stdout and "\nOK (" in r.stdout
    other = _sync(lock, "--target", "gpu")
    assert other.exit_code == 2 and "has no environment 'gpu' (it has: default)" in other.stderr


def test_index_credentials_from_pips_configuration_are_never_shown(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lock records the default index as "" (pip's own where it is installed); sync takes
    pip's configured index, whose token must not reach a message."""
    _host(monkeypatch, "no-gpu")
    monkeypatch.delenv("ENVSOLVE_INDEX_PYPI")
    monkeypatch.setenv("PIP_INDEX_URL", index.replace("http://", "http://bot:S3CRET@"))
    lock = _locked(tmp_path)
    assert json.dumps(lock.read_text()).count("S3CRET") == 0
    monkeypatch.setenv("PIP_INDEX_URL", "http://bot:S3CRET@127.0.0.1:9/simple")  # nothing listens there
    r = CliRunner().invoke(main, ["-v", "sync", str(lock), "--venv", str(tmp_path / "venv")])
    assert r.exit_code == 1
    assert "S3CRET" not in r.output and "from http://127.0.0.1:9/simple" in r.output


@pytest.mark.network
def test_onnxruntime_from_the_package_index_syncs_imports_at_the_locked_version_and_smoke_tests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real default index (pip's configuration, as on a user's machine)."""
    from envsolve.lock import model as lockfile

    for var in ("ENVSOLVE_INDEX_PYPI", "ENVSOLVE_INDEX_PYTORCH", "ENVSOLVE_FRAMEWORKS_ONLY", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path, '[project]\nname = "ort"\npython = "==' + PY + '.*"\n[frameworks]\nonnxruntime = "*"\n'
                             '[hardware]\nvendor = "cpu"\n')
    env = lockfile.read(lock).environments[0]
    locked = {p.name: p.version for p in env.packages}
    assert "onnxruntime" in locked and "numpy" in locked
    venv = tmp_path / "venv"
    r = _sync(lock, "--venv", str(venv), "--smoke")
    assert r.exit_code == 0, r.output
    assert f"synced environment 'default' ({len(locked)} packages) into {venv}" in r.stdout and "\nOK (" in r.stdout
    assert _python(venv, "import onnxruntime; print(onnxruntime.__version__)") == locked["onnxruntime"]
    assert {k.lower(): v for k, v in _installed(venv).items()} == {k.lower(): v for k, v in locked.items()}
    assert _sync(lock, "--venv", str(venv)).stdout.startswith(f"environment 'default' ({len(locked)} packages) "
                                                              "is already in sync")


def test_a_file_of_a_folder_of_wheels_finds_its_links_beside_the_default_index(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # NVIDIA's JetPack wheel folders (rendered as --find-links) are no index: the framework is found
    # there, its dependencies on the default index, as pip does in the image
    from envsolve.sync import _index_args

    monkeypatch.setenv("PIP_INDEX_URL", "https://mirror.invalid/simple")
    text = ("--find-links https://developer.download.nvidia.com/compute/redist/jp/v461/tensorflow\n"
            "tensorflow==2.7.0+nv22.1\n")
    secrets, shown = _index_args(text)
    assert secrets == {"UV_DEFAULT_INDEX": "https://mirror.invalid/simple"}  # uv's environment, not its argv
    assert shown == "https://developer.download.nvidia.com/compute/redist/jp/v461/tensorflow"


# ---------------------------------------------------------------------------- what sync may touch


@pytest.mark.parametrize("cfg", [f"home = /usr/bin\nversion_info = {OTHER_PY}.1\n", "home = /usr/bin\n"])
def test_sync_into_a_project_folder_with_a_stray_pyvenv_cfg_changes_nothing(
        cfg: str, index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sync --venv .` in a project folder once deleted the spec, the lock and the sources."""
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    (tmp_path / "pyvenv.cfg").write_text(cfg)
    (tmp_path / "train.py").write_text("print('mine')\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()}
    for argv in (["sync", str(lock), "--venv", str(tmp_path)],
                 ["run", "--lock", str(lock), "--venv", str(tmp_path), "--", "python", "-V"]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 2, r.output
        assert f"{tmp_path}: exists and was not made by `envsolve sync`" in r.stderr
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir() if p.is_file()} == before


def test_a_sync_that_fails_half_way_leaves_the_old_venv_working_and_its_marker_true(
        index: str, httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    marker = (venv / MARKER).read_text()
    (tmp_path / "project.toml").write_text(CPU.replace('"requests"', '"filelock"'))  # 2 to remove, 1 to install
    assert CliRunner().invoke(main, ["lock", str(tmp_path / "project.toml")]).exit_code == 0
    httpserver.clear()  # the index is down: nothing can be fetched
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 1 and "uv could not install" in r.stderr
    assert _installed(venv) == {"requests": "2.32.3", "idna": "3.10"}  # the old venv, whole, still runs
    assert _python(venv, "import requests, idna; print('ok')") == "ok"
    assert (venv / MARKER).read_text() == marker  # and says what it holds: the old lock's
    assert [p.name for p in tmp_path.iterdir() if "envsolve-" in p.name] == []  # nothing half-made left
    ran = CliRunner().invoke(main, ["run", "--lock", str(lock), "--venv", str(venv), "--", "python", "-V"])
    assert ran.exit_code == 1 and "uv could not install" in ran.stderr  # run does not trust it for the new lock


def test_what_a_killed_sync_left_is_put_back_or_removed_and_nothing_else_is(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    venv.rename(tmp_path / ".venv.envsolve-old")  # killed between the swap's two renames
    (tmp_path / ".venv.envsolve-new").mkdir()  # ... while a half-made venv was beside it
    (tmp_path / ".venv.envsolve-new" / MARKER).write_text('{"format": 1, "lock_digest": ""}')
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 0 and "is already in sync" in r.stdout, r.output  # the old venv, put back
    assert sorted(p.name for p in tmp_path.iterdir() if "envsolve-" in p.name) == []
    (tmp_path / ".venv.envsolve-new").mkdir()  # a folder of that name that no sync made
    (tmp_path / ".venv.envsolve-new" / "mine.txt").write_text("keep me")
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code == 2 and "was not made by a sync" in r.stderr
    assert (tmp_path / ".venv.envsolve-new" / "mine.txt").read_text() == "keep me"


@pytest.mark.parametrize("where", [MARKER, "pyvenv.cfg"])
def test_a_fifo_or_a_device_in_a_venv_never_hangs_a_sync(where: str, index: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    (venv / where).unlink()
    os.mkfifo(venv / where)  # nobody ever writes it: a read would wait for ever
    r = _sync(lock, "--venv", str(venv))
    if where == MARKER:  # no marker of the sync's: not its folder
        assert r.exit_code == 2 and "was not made by `envsolve sync`" in r.stderr
    else:  # the sync's folder, no venv in it: made again
        assert r.exit_code == 0 and "2 installed" in r.stdout, r.output
    (venv / where).unlink(missing_ok=True)
    (venv / where).symlink_to("/dev/zero")
    r = _sync(lock, "--venv", str(venv))
    assert r.exit_code in (0, 2) and "Traceback" not in r.output and "MemoryError" not in r.output


def test_a_venv_whose_folder_is_missing_is_refused_and_an_empty_folder_is_used_as_it_is(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    r = _sync(lock, "--venv", str(tmp_path / "typo" / "dir" / "venv"))
    assert r.exit_code == 2 and f"its folder {tmp_path / 'typo' / 'dir'} does not exist" in r.stderr
    assert not (tmp_path / "typo").exists()  # a typo in a path is not a new tree
    empty = tmp_path / "mine"
    empty.mkdir()
    empty.chmod(0o750)
    inode = empty.stat().st_ino
    assert _sync(lock, "--venv", str(empty)).exit_code == 0
    assert (empty.stat().st_ino, empty.stat().st_mode & 0o777) == (inode, 0o750)  # the folder given, kept
    assert _installed(empty) == {"requests": "2.32.3", "idna": "3.10"}


def test_a_spec_beside_the_lock_that_cannot_be_read_is_refused_not_taken_for_missing(
        index: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    (tmp_path / "project.toml").unlink()
    os.mkfifo(tmp_path / "project.toml")
    r = _sync(lock, "--venv", str(tmp_path / "venv"))
    assert r.exit_code == 2 and "is a FIFO" in r.stderr and not (tmp_path / "venv").exists()


def test_run_does_not_trust_a_venv_whose_pyvenv_cfg_is_not_a_venvs(index: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    (venv / "pyvenv.cfg").unlink()
    (venv / "pyvenv.cfg").symlink_to("/dev/zero")  # its Python would die reading it
    r = CliRunner().invoke(main, ["run", "--lock", str(lock), "--venv", str(venv), "--", "python", "-c", "pass"])
    assert r.exit_code == 0, r.output  # synced again (the folder is the sync's), then run
    assert not (venv / "pyvenv.cfg").is_symlink()


def test_a_link_inside_the_venv_never_takes_a_failed_syncs_removals_elsewhere(
        index: str, httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    site = next((venv / "lib").glob("python*/site-packages"))
    shared = tmp_path / "shared-site-packages"
    shutil.move(str(site), str(shared))
    site.symlink_to(shared)  # the venv's packages live elsewhere, through a link
    before = sorted(p.name for p in shared.iterdir())
    (tmp_path / "project.toml").write_text(CPU.replace('"requests"', '"filelock"'))
    assert CliRunner().invoke(main, ["lock", str(tmp_path / "project.toml")]).exit_code == 0
    httpserver.clear()  # the index is down
    assert _sync(lock, "--venv", str(venv)).exit_code == 1
    assert sorted(p.name for p in shared.iterdir()) == before  # nothing removed through the link


def test_a_signal_inside_the_block_removes_the_folder_being_built(tmp_path: Path) -> None:
    import signal

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        new = tmp_path / f".venv.envsolve-new-{sig}"
        script = ("import os, signal, pathlib; from envsolve import scratch\n"
                  f"p = pathlib.Path({str(new)!r}); p.mkdir(); (p / 'f').write_text('x')\n"
                  "with scratch.removed_on_signal(p):\n"
                  f"    os.kill(os.getpid(), {int(sig)})\n"
                  "    signal.pause()\n")
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
        assert done.returncode != 0 and not new.exists(), (sig, done.stderr)


def test_run_never_trusts_a_venv_another_user_may_write(index: str, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "no-gpu")
    lock = _locked(tmp_path)
    venv = tmp_path / "venv"
    assert _sync(lock, "--venv", str(venv)).exit_code == 0
    planted = venv / "bin" / "planted"
    planted.write_text("#!/bin/sh\necho PLANTED\n")
    planted.chmod(0o755)
    (venv / "bin").chmod(0o777)  # anyone may put a program there
    r = CliRunner().invoke(main, ["run", "--lock", str(lock), "--venv", str(venv), "--", "planted"])
    assert r.exit_code == 2 and "was not made by `envsolve sync`" in r.stderr and "PLANTED" not in r.output
    (venv / "bin").chmod(0o755)


def test_an_upgrade_package_that_is_no_name_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text(CPU)
    for bad in ("../x", "-U", "-o/tmp/x", "x" * 5000):
        r = CliRunner().invoke(main, ["lock", str(spec), "-P", bad])
        assert r.exit_code == 2 and "is no package name" in r.stderr, (bad, r.output)
