"""Under load and faults: 20 concurrent runs of `render`, `matrix --render` and `refresh --write`,
some of them killed (SIGKILL) at random points, leave every file old or new and whole, and no
temporary file once a run has finished; a sync killed on the way leaves a venv the next sync
repairs. Each run is a real `python -m envsolve` process; the random points come from a fixed seed."""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from tests.conftest import FIXTURE
from tests.fakeindex import Wheel, serve

_TMP = re.compile(r"^\..+\.\d+\.[0-9a-f]{8}\.tmp$")  # envsolve's temporary files: .NAME.PID.8HEX.tmp
RUNS = 20  # at once
KILLED = 8  # of them, each at a random point of the storm


def _envsolve(*args: str) -> list[str]:
    return [sys.executable, "-m", "envsolve", "--matrices", str(FIXTURE), *args]


def _timed(argv: list[str], cwd: Path) -> float:
    """Seconds one run takes alone (and it must succeed)."""
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - start


def _storm(argv: list[str], cwd: Path, seed: int, alone: float) -> None:
    """RUNS copies of ``argv`` at once; KILLED of them SIGKILLed at random points of the time the
    storm takes (about RUNS runs alone on this machine's cores). Every run not killed succeeds."""
    rng = random.Random(seed)
    procs = [subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(RUNS)]
    span = alone * RUNS / max(1, min(RUNS, os.cpu_count() or 1))
    start = time.monotonic()
    for when, proc in sorted(((rng.uniform(0, span), p) for p in rng.sample(procs, KILLED)), key=lambda x: x[0]):
        time.sleep(max(0.0, start + when - time.monotonic()))
        proc.send_signal(signal.SIGKILL)
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode in (0, -signal.SIGKILL), err


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _temporary(root: Path) -> list[str]:
    """The temporary files of envsolve's writer under ``root``."""
    return [str(p) for p in root.rglob(".*") if _TMP.match(p.name)]


def _old_or_new(root: Path, old: Mapping[str, bytes], new: Mapping[str, bytes]) -> None:
    """Every file under ``root`` is, whole, its old or its new text (temporary files aside)."""
    for name, blob in _tree(root).items():
        if not _TMP.match(Path(name).name):
            assert blob in (old.get(name), new.get(name)), f"{name} is neither the old nor the new file"


def _storm_and_finish(argv: list[str], cwd: Path, out: Path, old: Mapping[str, bytes],
                      new: Mapping[str, bytes], seed: int) -> None:
    alone = _timed(argv, cwd)  # (writes the new files once: the storm replaces them with themselves)
    for name, blob in old.items():  # back to the old files, so that the storm replaces them
        (out / name).write_bytes(blob)
    _storm(argv, cwd, seed, alone)
    _old_or_new(out, old, new)
    _timed(argv, cwd)  # a run after the storm: the new files, and nothing left behind
    assert _tree(out) == dict(new) and _temporary(out) == []


# ----------------------------------------------------------------------------- render


SPEC = '[project]\nname = "demo"\n[frameworks]\ntorch = "{torch}"\n[hardware]\ngpus = ["A100", "H100"]\n'


def _lock(folder: Path, torch: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "project.toml").write_text(SPEC.format(torch=torch))
    r = CliRunner().invoke(main, ["--matrices", str(FIXTURE), "lock", str(folder / "project.toml")])
    assert r.exit_code == 0, r.output
    return folder / "envsolve.lock"


def test_concurrent_and_killed_renders_leave_old_or_new_files_whole(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old_lock, new_lock = _lock(tmp_path / "old", "==2.5.1"), _lock(tmp_path / "new", "==2.7.1")
    CliRunner().invoke(main, ["--matrices", str(FIXTURE), "render", str(old_lock), "-o", str(out)])
    old = _tree(out)
    CliRunner().invoke(main, ["--matrices", str(FIXTURE), "render", str(new_lock), "-o", str(tmp_path / "want")])
    new = _tree(tmp_path / "want")
    assert old.keys() == new.keys() and old != new
    _storm_and_finish(_envsolve("render", str(new_lock), "-o", str(out)), tmp_path, out, old, new, seed=1)


# ----------------------------------------------------------------------------- matrix --render


MATRIX = '[matrix]\ntorch = ["2.7.1", "2.5.1"]\ngpus = ["A100"]\n'


def test_concurrent_and_killed_matrix_renders_leave_old_or_new_files_whole(tmp_path: Path) -> None:
    (tmp_path / "images.toml").write_text(MATRIX)
    argv = _envsolve("matrix", "images.toml", "--render", "cells")
    _timed(argv, tmp_path)
    out = tmp_path / "cells"
    new = _tree(out)
    old = {name: b"# an old cell's file\n" for name in new}
    _storm_and_finish(argv, tmp_path, out, old, new, seed=2)


# ----------------------------------------------------------------------------- refresh --write


def test_concurrent_and_killed_refresh_writes_leave_old_or_new_matrices_whole(tmp_path: Path,
                                                                              recorded_index: HTTPServer) -> None:
    out = tmp_path / "matrices"
    out.mkdir()
    for p in FIXTURE.glob("*.toml"):
        (out / p.name).write_bytes(p.read_bytes())
    old = _tree(out)
    argv = [sys.executable, "-m", "envsolve", "--matrices", str(out), "refresh", "--index-url",
            recorded_index.url_for("/simple"), "--no-cache", "--backoff", "0", "--write", "--data-version", "2026-11-22"]
    _timed(argv, tmp_path)
    new = _tree(out)
    assert {n for n in new if new[n] != old[n]} == {"jax.toml", "keras.toml", "tensorflow.toml", "torch.toml"}
    _storm_and_finish(argv, tmp_path, out, old, new, seed=3)


# ----------------------------------------------------------------------------- sync


_FAKE_HOST = """\
import sys
from tests.test_detect import _DETECT, HOSTS
from envsolve.host import detect as det
d = HOSTS / "no-gpu"
det.detect = lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False)
from envsolve.cli import main
sys.argv[0] = "envsolve"
main()
"""


def test_concurrent_and_killed_syncs_leave_a_venv_the_next_sync_repairs(tmp_path: Path, httpserver: HTTPServer,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    url = serve(httpserver, [Wheel("requests", "2.32.3", requires=["idna"]), Wheel("idna", "3.10")])
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", url)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    (tmp_path / "project.toml").write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\n'
                                           '[hardware]\nvendor = "cpu"\n[packages]\npip = ["requests"]\n')
    r = CliRunner().invoke(main, ["lock", str(tmp_path / "project.toml")])
    assert r.exit_code == 0, r.output
    venv = tmp_path / "venv"
    argv = [sys.executable, "-c", _FAKE_HOST, "sync", str(tmp_path / "envsolve.lock"), "--venv", str(venv)]
    alone = _timed(argv, tmp_path)
    rng = random.Random(4)
    for _ in range(3):  # runs killed at a random point, the venv left as it is
        proc = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, alone))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
    shutil.rmtree(venv)  # the storm makes the venv too
    _storm(argv, tmp_path, seed=5, alone=alone)  # concurrent syncs of one venv take turns; every one not killed succeeds
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    code = "import importlib.metadata as m; print(sorted((d.metadata['Name'], d.version) for d in m.distributions()))"
    installed = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True)
    assert installed.stdout.strip() == "[('idna', '3.10'), ('requests', '2.32.3')]"
    assert _temporary(venv) == [] and _temporary(tmp_path) == []
