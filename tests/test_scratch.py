"""Secrets live only in private folders that go with the run, and the children that read them end
with envsolve: a real `envsolve lock` killed while uv waits on an index that never answers."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from envsolve import scratch
from tests.fakeindex import Wheel, serve

PY = f"{sys.version_info.major}.{sys.version_info.minor}"
SPEC = ('[project]\nname = "demo"\npython = "==' + PY + '.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
        '[packages]\npip = ["requests"]\n')


@pytest.fixture
def silent_index(httpserver: HTTPServer) -> Iterator[str]:
    """An index that answers envsolve's own client (the fake index's pages) and never answers
    uv: uv waits on it."""
    upstream = serve(httpserver, [Wheel("requests", "2.32.3")])
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if "uv/" in self.headers.get("User-Agent", ""):
                stop.wait(60)
                return
            with urllib.request.urlopen(upstream.rsplit("/simple", 1)[0] + self.path) as answer:
                body = answer.read()
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.headers.get("Content-Type", "text/html"))
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    stop.set()
    server.shutdown()
    server.server_close()


def _waiting_uv(tmp: Path, deadline: float = 60) -> tuple[Path, int]:
    """The private folder of the lock under way in ``tmp`` and the uv working in it."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        for folder in tmp.glob("envsolve-resolve-*"):
            for proc in Path("/proc").iterdir():
                try:  # uv itself, once exec'd (not the fork that is about to become it)
                    if (proc.name.isdigit() and os.readlink(proc / "cwd") == str(folder)
                            and Path(os.readlink(proc / "exe")).name == "uv"):
                        return folder, int(proc.name)
                except OSError:
                    continue
        time.sleep(0.05)
    raise AssertionError("no uv started in a private folder")


def _gone(pid: int, deadline: float = 10) -> bool:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            return True
        if state == "Z":  # ended; its parent (init, once envsolve is gone) reaps it
            return True
        time.sleep(0.05)
    return False


def _lock(tmp_path: Path, index: str) -> tuple[subprocess.Popen[bytes], Path]:
    spec = tmp_path / "project.toml"
    spec.write_text(SPEC)
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "ENVSOLVE_FRAMEWORKS_ONLY"}
    env |= {"TMPDIR": str(tmp), "ENVSOLVE_INDEX_PYPI": index.replace("://", "://bot:hunter2xyz@"), "ENVSOLVE_CACHE_DIR": str(tmp_path / "cache"),
            "HOME": str(tmp_path)}
    proc = subprocess.Popen([sys.executable, "-m", "envsolve", "lock", str(spec)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, tmp


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_during_a_lock_removes_the_netrc_and_ends_uv(sig: int, tmp_path: Path, silent_index: str) -> None:
    proc, tmp = _lock(tmp_path, silent_index)
    folder, uv = _waiting_uv(tmp)
    assert (folder / "netrc").is_file() and (folder.stat().st_mode & 0o777) == 0o700
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert not folder.exists()  # the netrc with its password, gone
    assert _gone(uv)  # and uv with it: it was in envsolve's care


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG is Linux's")
def test_after_a_sigkill_uv_ends_and_the_next_run_removes_the_folder(tmp_path: Path, silent_index: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    proc, tmp = _lock(tmp_path, silent_index)
    folder, uv = _waiting_uv(tmp)
    proc.kill()
    proc.wait(timeout=30)
    assert _gone(uv)  # uv was asked to die with envsolve
    assert folder.exists()  # nothing could clean up after a SIGKILL ...
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    with scratch.private_folder("sync") as mine:  # ... so the next run does
        assert mine.is_dir() and not folder.exists()
    assert not mine.exists()


def test_the_sweep_spares_folders_of_running_processes_and_what_envsolve_did_not_name(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    alive = tmp_path / f"envsolve-sync-{os.getppid()}-0123abcd"  # the test runner's parent: running
    users = tmp_path / "envsolve-notes"  # a name of the user's
    other = tmp_path / "envsolve-build-999999999-0123abcd"  # a dead pid's, but a file, not a folder
    alive.mkdir()
    users.mkdir()
    other.write_text("mine")
    with scratch.private_folder("lock"):
        pass
    assert alive.is_dir() and users.is_dir() and other.read_text() == "mine"


def test_a_child_runs_in_its_own_group_and_its_group_ends_with_the_block(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild"
    script = (f"import subprocess, os; p = subprocess.Popen(['sleep', '60'], stdout=subprocess.DEVNULL, "
              f"stderr=subprocess.DEVNULL); open({str(marker)!r}, 'w').write(str(p.pid))")
    done = scratch.run([sys.executable, "-c", script])
    assert done.returncode == 0 and _gone(int(marker.read_text()))  # what it left running ended with it
    with scratch.popen(["sleep", "60"]) as proc:
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)
        proc.kill()
    left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert left == []  # nothing of its group outlives the block


# ------------------------------------------------------------------ hostile round 3, defect 5

@pytest.mark.parametrize("command", [["doctor"], ["render", "envsolve.lock"]])
def test_every_command_removes_a_sigkilled_runs_private_folder(command: list[str], tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from envsolve.cli import main

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    left = tmp / f"envsolve-lock-{dead}-0123abcd"  # a SIGKILL's: its netrc holds a password
    left.mkdir(mode=0o700)
    (left / "netrc").write_text("machine index.example login me password hunter2\n")
    running = tmp / f"envsolve-sync-{os.getppid()}-0123abcd"  # a running process's: kept
    running.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp))
    monkeypatch.chdir(tmp_path)
    CliRunner().invoke(main, command)  # whatever it answers (no lock here for render)
    assert not left.exists() and running.is_dir()
