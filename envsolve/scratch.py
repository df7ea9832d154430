"""Where secrets may live for a moment, and the children that may see them.

A secret (a netrc of index logins, a requirements file with a token in a direct reference, pip's
configured index with its login) is written only into a **private folder** (:func:`private_folder`:
mode 0700 under the system's temporary folder, named ``envsolve-<what>-<pid>-<random>``). The folder
is removed when its ``with`` block ends, and also when SIGTERM, SIGHUP or SIGINT end envsolve on the
way; a folder that a SIGKILL left behind is removed by the next envsolve that makes one (the pid
in its name is no longer running, and the folder is this user's).

A child that may read a secret (uv, a container engine) runs through :func:`run` or :func:`popen`:
in its **own process group** (a terminal's Ctrl-C reaches envsolve, which ends the group), registered
while it runs, so the same signals end the group before envsolve exits; on Linux the child is also
asked to die with envsolve (``PR_SET_PDEATHSIG``), so a ``kill -9`` of envsolve does not leave uv
downloading behind it. Secrets reach a child through its environment or a file in a private folder,
never its command line (``/proc/PID/cmdline`` is readable by every local user; ``environ`` by the
owner alone).

Standard library only; the handlers are installed on first use, in the main thread, and act only in
the process that registered what they clean (never in a forked matrix worker).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from .files import alive

__all__ = ["SIGNALS", "popen", "private_folder", "removed_on_signal", "run", "sweep"]

SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT) if hasattr(signal, "SIGHUP") else (signal.SIGTERM,
                                                                                              signal.SIGINT)
_PREFIX = "envsolve-"
_NAME = re.compile(r"envsolve-[a-z]+-(\d+)-[0-9a-f]{8}")

_folders: dict[str, int] = {}  # private folder -> the pid that made it
_groups: dict[int, int] = {}  # child process group -> the pid that started it
_installed = False
_guard = threading.Lock()


def _left_behind(root: str, name: str) -> bool:
    """Whether ``name`` in ``root`` is a private folder of this user's whose run has ended."""
    m = _NAME.fullmatch(name)
    if m is None or int(m.group(1)) == os.getpid() or alive(int(m.group(1))):
        return False
    try:
        st = os.lstat(os.path.join(root, name))
    except OSError:
        return False
    return st.st_uid == os.getuid() and stat.S_ISDIR(st.st_mode)  # (lstat: a link is no folder)


def _sweep(root: str) -> None:
    """Remove the private folders of envsolve runs that are no longer running (a SIGKILL's)."""
    try:
        names = [n for n in os.listdir(root) if n.startswith(_PREFIX)]
    except OSError:
        return
    for name in names:
        if _left_behind(root, name):
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def sweep() -> None:
    """Remove the private folders that runs killed by a SIGKILL left under the system's temporary
    folder (each a netrc's password, maybe): every command does, on start (one listing of that
    folder), not only the next run that makes a private folder."""
    _sweep(tempfile.gettempdir())


def _clean_up(pid: int) -> None:
    """End the child groups and remove the private folders that process ``pid`` registered."""
    for group, owner in list(_groups.items()):
        if owner == pid:
            with contextlib.suppress(OSError):
                os.killpg(group, signal.SIGKILL)
    for folder, owner in list(_folders.items()):
        if owner == pid:
            shutil.rmtree(folder, ignore_errors=True)
            _folders.pop(folder, None)


def _handler(signum: int, frame: Any) -> None:
    _clean_up(os.getpid())
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    signal.signal(signum, signal.SIG_DFL)  # then die of it, as the sender expects
    os.kill(os.getpid(), signum)


def _install_handlers() -> None:
    """Clean up on SIGTERM, SIGHUP and SIGINT (once; only from the main thread, where Python can)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    for sig in SIGNALS:
        if signal.getsignal(sig) in (signal.SIG_DFL, signal.default_int_handler):
            signal.signal(sig, _handler)
    _installed = True


@contextlib.contextmanager
def private_folder(what: str) -> Iterator[Path]:
    """A new folder only this user can read (0700), removed on leaving the block and on the
    signals above; ``what`` (lowercase letters) names the run in the folder's name."""
    root = tempfile.gettempdir()
    _sweep(root)
    while True:
        named = os.path.join(root, f"{_PREFIX}{what}-{os.getpid()}-{os.urandom(4).hex()}")
        try:
            os.mkdir(named, 0o700)  # (the umask can only narrow it)
            break
        except FileExistsError:
            continue
    with _guard:
        _install_handlers()
        _folders[named] = os.getpid()
    try:
        yield Path(named)
    finally:
        with _guard:
            _folders.pop(named, None)
        shutil.rmtree(named, ignore_errors=True)


@contextlib.contextmanager
def removed_on_signal(folder: Path) -> Iterator[None]:
    """Remove ``folder`` (one this run makes, such as the venv a sync builds beside the old one)
    should SIGTERM, SIGHUP or SIGINT end envsolve inside the block; the block's own end leaves it."""
    named = os.fspath(folder)
    with _guard:
        _install_handlers()
        _folders[named] = os.getpid()
    try:
        yield
    finally:
        with _guard:
            _folders.pop(named, None)


def _die_with(parent: int) -> None:  # pragma: no cover - runs in the child
    """In the child, before exec: be sent SIGTERM when envsolve (``parent``) dies (Linux); and
    end now if it died before this could be asked (the child was then already orphaned)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)


def popen(argv: Sequence[str], *, env: Mapping[str, str] | None = None, **kwargs: Any) -> subprocess.Popen[Any]:
    """:class:`subprocess.Popen` of ``argv`` in its own process group, ended with envsolve;
    use it as a context manager (the group is registered until the block ends)."""
    proc: subprocess.Popen[Any] = _Child(list(argv), env=None if env is None else dict(env),
                                         start_new_session=True, preexec_fn=functools.partial(_die_with, os.getpid()),
                                         **kwargs)
    with _guard:
        _install_handlers()
        _groups[proc.pid] = os.getpid()
    return proc


class _Child(subprocess.Popen):  # type: ignore[type-arg]
    """A Popen whose process group is forgotten (and ended, should it linger) when it is left."""

    def __exit__(self, *exc: Any) -> None:
        try:
            super().__exit__(*exc)
        finally:
            with _guard:
                _groups.pop(self.pid, None)
            with contextlib.suppress(OSError):
                os.killpg(self.pid, signal.SIGKILL)  # what it started and left running


def run(argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | os.PathLike[str] | None = None,
        timeout: float | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` to its end as :func:`popen` starts it; its text output captured. An exception
    (KeyboardInterrupt, a timeout) ends the child's group first."""
    with popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
               errors="replace") as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except BaseException:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    return subprocess.CompletedProcess(list(argv), proc.returncode, out, err)
