"""`envsolve sync` and `envsolve run`: one environment of a lock, exactly, in a virtual environment
on this machine, and commands run inside it.

:func:`sync`, in order:

1. **The lock.** A frameworks-only lock is refused (exit 2): it has no packages and no hashes.
   A lock stale against its spec (the spec named in the lock, beside it, compared by the digests
   `envsolve lock --check` compares: :func:`envsolve.lock.job.stale_by_digests`) is refused (exit 1)
   with the command that refreshes it, as `uv sync --locked` does. When that spec is not beside
   the lock (a lock copied alone to a machine), a warning says the lock was not checked and the
   sync goes on; ``--frozen`` skips the check, as uv's does.
2. **The environment and the host.** ``--target``, else the doctor's pick for this machine
   (:func:`envsolve.host.doctor.pick_environment`); the doctor's host checks
   (:func:`envsolve.host.doctor.check_host`: accelerator, platform, driver, GPU archs; nothing
   about installed packages) refuse (exit 1) a host the environment cannot serve, with each
   finding and its fix, unless ``--force``.
3. **The venv.** Made by uv (``uv venv --python X.Y``; uv installs that Python when the machine
   lacks it), and made again when its Python's minor is not the lock's. A folder that is not a
   venv is never removed.
4. **The packages.** What is installed (``uv pip list``) against the lock: names the lock does not
   hold are removed first (a distribution installed under another name may own files the locked
   one brings), then every package the venv lacks, holds at another version, or holds without a
   sync of this very record (name, version, index, hashes: the marker says) is installed with
   ``--require-hashes --no-deps``, one index at a time, from the requirements files
   :func:`envsolve.render.artifacts.render_environment` writes (one file per index: that grouping
   has one home). Why not one ``uv pip sync`` of every file: it takes one set of indexes for all
   of them, and uv then takes each name from the first index that has it, so the PyTorch index
   could serve a default-index name (or the reverse): installing each file from its own index
   alone is what keeps dependency confusion out, as the images do. The default index is the
   requirements file's own ``--index-url`` when the lock names one, else pip's configured index
   (:func:`envsolve.config.pip_index_url`, with pip's ``cert``): uv does not read pip's settings,
   and the user's uv settings (``UV_*``, uv.toml) are not read, so nothing widens the sources.
   Afterwards the venv must hold exactly the lock's names and versions.
5. **The marker** ``.envsolve-sync.json`` in the venv: the lock's digest, the environment and the
   record of each package installed. A sync whose plan is empty installs and removes nothing (a
   no-op), but still compares what is installed, so a package added by hand goes.
6. ``--smoke``: the environment's rendered smoke test, run by the venv's Python.

:func:`run` runs a command with the venv's ``bin`` first on ``PATH`` and ``VIRTUAL_ENV`` set,
syncing first when the venv is missing or its marker is not for this lock (another digest or
environment); a current marker is trusted (``envsolve sync`` is the full check).

Index credentials never reach a message: every URL shown, and uv's own output, go through
:func:`envsolve.config.strip_credentials`. The logins of the spec's URLs (beside the lock, which
holds none: :func:`envsolve.spec.url_credentials`) reach uv as a netrc in a private scratch folder
(:func:`envsolve.config.write_netrc`). Nothing here prints: lines go to :class:`envsolve.voice.Voice`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec
from packaging.utils import canonicalize_name

from . import scratch
from .config import Credential, scrub
from .errors import CheckFailed, LockError, Problem, ResolveError, SpecError
from .files import SPEC_CAP, decoded, folder_lock, read_bytes, refused, write_atomic
from .host.doctor import Finding, check_host, pick_environment, report_lines, where
from .host.facts import HostFacts
from .lock import model as lockfile
from .lock.model import Environment, Lock, Package
from .lock.resolve import uv_command, uv_environ
from .paths import venv_bin, venv_python
from .provider import Provider
from .spec import url_credentials
from .versions import same_version
from .voice import Voice

__all__ = ["MARKER", "Request", "Synced", "current", "run", "run_environ", "sync"]

MARKER = ".envsolve-sync.json"  # in the venv: what the last sync installed there
_MARKER_FORMAT = 1




class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What `envsolve sync` was asked."""

    lock_path: Path
    target: str | None = None
    venv: Path | None = None
    force: bool = False  # install on a host the doctor's checks refuse
    frozen: bool = False  # do not check the lock against its spec
    smoke: bool = False

    @property
    def venv_path(self) -> Path:
        """``--venv``, else ``.venv`` beside the lock."""
        return self.venv or self.lock_path.parent / ".venv"


class Synced(msgspec.Struct, frozen=True, kw_only=True):
    """What a sync did."""

    environment: str
    venv: Path
    packages: int
    installed: tuple[str, ...]
    removed: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return bool(self.installed or self.removed)


# ---------------------------------------------------------------------------- the lock


def _refuse_frameworks_only(lock: Lock, lock_path: Path) -> None:
    if lock.scope != "full":
        raise LockError(f"{lock_path}: is a frameworks-only lock (no packages, no hashes); sync installs every "
                        "package of a full lock, hash-checked",
                        tip=f"lock in full: `envsolve lock {_spec_path(lock, lock_path)}` without --frameworks-only "
                            "(and without ENVSOLVE_FRAMEWORKS_ONLY)")


def _spec_path(lock: Lock, lock_path: Path) -> Path:
    """The spec the lock was made from: its ``spec`` file name, beside the lock."""
    return lock_path.parent / lock.spec


def _check_current(lock: Lock, lock_path: Path, provider: Provider, talk: Voice) -> None:
    """Refuse a lock stale against its spec or data (the rule of `envsolve lock --check`)."""
    from .lock.job import stale_by_digests

    spec = _spec_path(lock, lock_path)
    try:
        blob = read_bytes(spec, SPEC_CAP)  # (a FIFO or a device is no spec: never read)
    except FileNotFoundError:
        talk.warn(f"{lock_path}: its spec {spec} is not beside it, so whether the lock is current was not checked; "
                  "syncing the lock as it is")
        return
    except OSError as e:  # there, and no spec: whether the lock is current cannot be told
        why, what = refused(spec, e)
        raise SpecError([Problem(str(spec), "", f"the spec of {lock_path} {why}")],
                        tip=what or "fix or remove it, or sync the lock as it is with --frozen") from None
    verdict = stale_by_digests(lock_path, blob, provider)
    if verdict:
        raise CheckFailed(verdict, tip=f"refresh it with `envsolve lock {spec}` (with the options it was locked "
                                       "with, such as --host), then sync again; or sync it as it is with --frozen")


def _environment(lock: Lock, lock_path: Path, target: str | None, facts: Callable[[], HostFacts]
                 ) -> tuple[Environment, HostFacts]:
    """The environment to sync (``target``, else the one for this machine) and the host's facts."""
    host = facts()
    env = pick_environment(lock, host, target)
    if env is None:
        names = ", ".join(e.name for e in lock.environments)
        raise LockError(f"{lock_path}: has no environment {target!r} (it has: {names})",
                        tip="pass one of those to --target, or leave --target out for this machine's")
    return env, host


def _check_host(env: Environment, lock_path: Path, host: HostFacts, provider: Provider, force: bool,
                talk: Voice) -> None:
    """The doctor's host checks: a failure refuses the sync (unless ``force``), a warning is said."""
    findings = check_host(env, host, provider)
    fails = [f for f in findings if f.level == "fail"]
    for f in (f for f in findings if f.level == "warn"):
        talk.warn(_finding_text(f))
    if not fails:
        return
    if not force:
        lines = "\n  ".join(report_lines(fails))
        raise CheckFailed(f"this {where(host)} cannot run environment '{env.name}' of {lock_path}:\n  {lines}",
                          tip="apply the fixes above; or sync another environment (--target NAME), or pass "
                              "--force to install it anyway")
    for f in fails:
        talk.warn(f"{_finding_text(f)} (installing anyway: --force)")


def _finding_text(f: Finding) -> str:
    fix = f" (fix: {f.fix})" if f.fix else ""
    return f"{f.check}: {f.message}{fix}"


def _not_installed(env: Environment, talk: Voice) -> None:
    """Say what a venv cannot hold: the environment's system and conda packages."""
    if env.apt:
        talk.warn(f"environment '{env.name}' lists system packages a venv cannot hold ({', '.join(env.apt)}): "
                  "install them with the system's package manager")
    if env.conda:
        talk.warn(f"environment '{env.name}' lists conda packages a venv cannot hold ({', '.join(env.conda)}): "
                  "install them with conda (`envsolve render` writes environment.yml)")
    apart = [f"{x.name} {x.version}" for x in env.extensions if x.install in ("source", "pyg")]
    if apart:
        talk.warn(f"environment '{env.name}' builds or finds {', '.join(apart)} in its image's own step (a source "
                  "build for its GPUs, or PyG's wheel page), which sync does not run: `envsolve render` writes it")


# ---------------------------------------------------------------------------- uv


def _uv_run(args: Sequence[str], what: str, tip: str, secrets: Mapping[str, str] | None = None) -> str:
    """Run uv (its ``--no-config`` and envsolve's cache added; ``secrets``, such as ``NETRC`` and
    the default index, in its environment: never on its command line) as a child that ends with
    envsolve; its stdout; raises :class:`ResolveError` (exit 1) saying ``what`` failed, with uv's
    own words."""
    env = uv_environ(os.environ) | dict(secrets or {})
    cmd = uv_command(args, env, needed_by="sync", tip="pip install uv (envsolve depends on it)")
    try:
        done = scratch.run(cmd, env=env)
    except OSError as e:
        raise ResolveError(f"uv could not be run ({e})", tip="reinstall envsolve (pip install uv)") from None
    if done.returncode != 0:
        said = "\n  ".join(scrub(done.stderr).strip().splitlines()[-12:]) or "uv failed without a message"
        raise ResolveError(f"{what}:\n  {said}", tip=tip)
    return done.stdout


# ---------------------------------------------------------------------------- the venv


_CFG_CAP = 64 * 1024  # a pyvenv.cfg is a few lines


def _venv_minor(venv: Path) -> str | None:
    """The Python minor (``3.11``) of the venv at ``venv``; None when it is no venv (no readable
    ``pyvenv.cfg``: a FIFO or a device there is no venv either) or says no version."""
    try:
        text = decoded(read_bytes(venv / "pyvenv.cfg", _CFG_CAP), venv / "pyvenv.cfg")
    except OSError:
        return None
    cfg = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    version = {k.strip(): v.strip() for k, v in cfg.items()}
    full = version.get("version_info") or version.get("version") or ""
    return ".".join(full.split(".")[:2]) or None


def _refuse_foreign(venv: Path) -> None:
    """Refuse (exit 2) a ``--venv`` that exists and was not made by a sync: not a folder, or a
    folder that holds something and no marker of envsolve's. Sync changes and removes only what it
    made (a venv made by hand, a project folder with a stray pyvenv.cfg: never)."""
    if not os.path.lexists(venv) or (venv.is_dir() and not venv.is_symlink() and not any(venv.iterdir())):
        return
    if venv.is_dir() and not venv.is_symlink() and _read_marker(venv):
        return
    why = ("is a link; sync makes and replaces its venv in place of that name" if venv.is_symlink() else
           "exists and is not a folder" if not venv.is_dir() else
           f"exists and was not made by `envsolve sync` (its {MARKER} is no sync's marker: not a regular file "
           "of a marker's size, or not one a sync wrote)" if os.path.lexists(venv / MARKER) else
           f"exists and was not made by `envsolve sync` (it has no {MARKER})")
    raise SpecError([Problem(str(venv), "", why)],
                    tip="pass another --venv PATH (a new or empty folder), or move that one away yourself: sync "
                        "never changes or removes a folder it did not make")


def _beside(venv: Path, what: str) -> Path:
    """The hidden folder beside the venv where a sync builds its next venv (``new``), or puts
    the old one while it swaps them (``old``)."""
    return venv.parent / f".{venv.name}.envsolve-{what}"


def _clear_leftover(venv: Path) -> None:
    """What a sync killed on the way left beside the venv: the old venv put back when the swap was
    cut between its two renames, a half-made new one removed; a folder of that name that is not
    a sync's is refused, never removed."""
    for what in ("old", "new"):
        path = _beside(venv, what)
        if not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_dir() or not _read_marker(path):
            raise SpecError([Problem(str(path), "", f"is in the way of the sync of {venv} and was not made by a sync")],
                            tip="move it away; sync never removes what it did not make")
        if what == "old" and not os.path.lexists(venv):
            os.rename(path, venv)
        else:
            shutil.rmtree(path)


def _swap(new: Path, venv: Path) -> None:
    """Put the venv built at ``new`` in place of ``venv`` (absent, empty or a sync's), whole: one
    atomic exchange where the system has it (Linux's ``renameat2``), else two renames, the old venv
    put back if the second fails; then the old one goes."""
    if not os.path.lexists(venv):
        os.rename(new, venv)
        return
    if _exchange(new, venv):
        shutil.rmtree(new)  # (now the old venv)
        return
    old = _beside(venv, "old")
    os.rename(venv, old)
    try:
        os.rename(new, venv)
    except OSError:
        os.rename(old, venv)
        raise
    shutil.rmtree(old)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two folders in one step (``renameat2(RENAME_EXCHANGE)``); False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):  # an old libc
        return False
    at_fdcwd, exchange = -100, 2
    return bool(renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), exchange) == 0)


def _links_are_the_venvs(venv: Path) -> bool:
    """Whether every link in ``venv`` is one a venv is made with (``bin/python*``, ``lib64 ->
    lib``): a copy of it then holds nothing another folder shares (a link to a folder elsewhere
    would take the sync's removals to it)."""
    for folder, dirs, files in os.walk(venv):
        for name in (*dirs, *files):
            path = Path(folder, name)
            if not path.is_symlink():
                continue
            ours = (Path(folder) == venv / "bin" and name.startswith("python")) or (
                Path(folder) == venv and name == "lib64" and os.readlink(path) == "lib")
            if not ours:
                return False
    return True


def _copy_venv(venv: Path, new: Path) -> None:
    """``venv`` again at ``new``, its files hard links (a venv of torch copied in a moment; uv
    never writes an installed file in place, it links new ones), made relocatable so that what uv
    installs there runs once it is moved in place of ``venv``."""
    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError:  # a file system without hard links
            shutil.copy2(src, dst)

    shutil.copytree(venv, new, symlinks=True, copy_function=link)
    cfg = new / "pyvenv.cfg"
    text = cfg.read_text(encoding="utf-8")
    if "relocatable" not in text:
        cfg.unlink()  # a link to the old venv's file: written anew, never in place
        cfg.write_text(text.rstrip("\n") + "\nrelocatable = true\n", encoding="utf-8")


def _make_venv(new: Path, python: str, venv: Path, talk: Voice) -> None:
    """A new relocatable venv with Python ``python`` at ``new`` (to be moved to ``venv``)."""
    minor = _venv_minor(venv)
    again = f" (it had Python {minor})" if minor and minor != python else ""
    talk.progress(f"sync: creating {venv} with Python {python}{again}")
    _uv_run(["venv", str(new), "--python", python, "--no-project", "--relocatable"],
            f"uv could not create the virtual environment {venv} with Python {python}",
            tip="check that uv can find or download that Python (`uv python install "
                f"{python}`), or pass another --venv")


def _installed(venv: Path) -> dict[str, str]:
    """Canonical name -> version of every distribution in the venv."""
    out = _uv_run(["pip", "list", "--python", str(venv_python(venv)), "--format", "json"],
                  f"uv could not list the packages of {venv}", tip="recreate it: remove the folder and sync again")
    return {str(canonicalize_name(d["name"])): str(d["version"]) for d in json.loads(out or "[]")}


# ---------------------------------------------------------------------------- the marker


def _record(p: Package) -> dict[str, Any]:
    """What the marker keeps of a package it installed: the lock's record of it."""
    return {"version": p.version, "index_url": p.index_url, "hashes": list(p.hashes)}


def _read_marker(venv: Path) -> dict[str, Any]:
    """The venv's marker ({} when there is none, or it is no regular file of a marker's size, or
    cannot be read): what makes a folder a sync's."""
    try:
        data = json.loads(read_bytes(venv / MARKER, SPEC_CAP))
        if not all(_yours(p) for p in (venv, venv / MARKER, venv_bin(venv))):
            return {}  # a folder another user made, or may change, is no venv of this user's sync
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == _MARKER_FORMAT else {}


def _yours(path: Path) -> bool:
    """Whether ``path`` (absent, or there) is this user's and no other user may write it: what a
    sync makes, under any umask that keeps others out."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return True
    return st.st_uid == os.geteuid() and not st.st_mode & stat.S_IWOTH


def _claim(new: Path) -> None:
    """Mark a venv being built as a sync's, before anything is installed (no lock's yet: no run
    trusts it), so that what a killed sync leaves is known to be its own."""
    write_atomic(new / MARKER, json.dumps({"format": _MARKER_FORMAT, "lock_digest": ""}) + "\n")


def _marker(lock: Lock, env: Environment) -> str:
    body = {"format": _MARKER_FORMAT, "project": lock.project, "lock_digest": lock.lock_digest,
            "environment": env.name, "python": env.python,
            "packages": {_canon(p.name): _record(p) for p in env.packages}}
    return json.dumps(body, indent=2, sort_keys=True) + "\n"


def _write_marker(venv: Path, text: str) -> None:
    """The marker, written only when it changes (a no-op sync touches nothing)."""
    try:
        if read_bytes(venv / MARKER, SPEC_CAP) == text.encode("utf-8"):
            return
    except OSError:
        pass
    write_atomic(venv / MARKER, text)


def current(lock: Lock, venv: Path, target: str | None) -> Environment | None:
    """The environment the venv holds when its marker is for ``lock`` (its digest) and for
    ``target`` (any environment of the lock when None); else None."""
    marker = _read_marker(venv)
    if marker.get("lock_digest") != lock.lock_digest or not venv_python(venv).exists():
        return None
    env = lock.environment(str(marker.get("environment")))
    if env is None or _venv_minor(venv) != env.python:  # (its pyvenv.cfg read, as a venv's Python reads it)
        return None
    return env if target in (None, env.name) else None


# ---------------------------------------------------------------------------- the plan


def _canon(name: str) -> str:
    return str(canonicalize_name(name))


class _Plan(msgspec.Struct, frozen=True, kw_only=True):
    remove: tuple[str, ...]  # installed names the lock does not hold
    install: tuple[str, ...]  # locked names to install: missing, another version, or not synced as locked
    reinstall: tuple[str, ...]  # of those, the names at the locked version whose files no sync of this record checked


def _plan(env: Environment, installed: Mapping[str, str], marker: Mapping[str, Any]) -> _Plan:
    locked = {_canon(p.name): p for p in env.packages}
    synced = marker.get("packages")
    synced = synced if isinstance(synced, dict) else {}
    stale = [n for n, p in locked.items() if n in installed and same_version(installed[n], p.version)
             and synced.get(n) != _record(p)]
    missing = [n for n, p in locked.items() if n not in installed or not same_version(installed[n], p.version)]
    return _Plan(remove=tuple(sorted(set(installed) - set(locked))), install=tuple(sorted({*stale, *missing})),
                 reinstall=tuple(sorted(stale)))


# ---------------------------------------------------------------------------- installing


_OPTION = re.compile(r"^(--index-url|--extra-index-url|--find-links)\s+(\S+)\s*$")
_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:==| @ )")  # name==version, or name @ URL


def _index_of(text: str) -> tuple[str, str] | None:
    """The index option a rendered requirements file carries (option, URL); None for pip's default."""
    return next(((m.group(1), m.group(2)) for line in text.splitlines() if (m := _OPTION.match(line))), None)


def _names_in(text: str) -> set[str]:
    """The canonical names a rendered requirements file installs."""
    return {_canon(m.group(1)) for line in text.splitlines() if (m := _NAME.match(line))}


def _requirements(lock: Lock, lock_path: Path, env: Environment) -> dict[str, str]:
    """The rendered requirements files of ``env`` (one per index), the non-default index's first,
    as the images install them."""
    from .render.artifacts import render_environment

    texts = render_environment(lock, env, lock_path.name, dockerfile=False)
    names = sorted((n for n in texts if n.startswith("requirements")), key=lambda n: (n == "requirements.txt", n))
    return {n: texts[n] for n in names}


def _index_args(text: str) -> tuple[dict[str, str], str]:
    """uv's default index for a rendered file, as the variable that gives it (its URL may carry
    pip's login: never on uv's command line; the file's own ``--index-url`` is read from the
    file), and the URL to show: the file's, else pip's configured index."""
    from .config import pip_index_url, strip_credentials
    from .lock.resolve import index_environ

    option = _index_of(text)
    default = pip_index_url() if option is None or option[0] != "--index-url" else ""  # beside a folder of wheels too
    shown = option[1] if option is not None else default or "the default index"
    return index_environ(default), strip_credentials(shown)[0]


def _install(venv: Path, files: Mapping[str, str], plan: _Plan, talk: Voice,
             credentials: Sequence[Credential] = ()) -> None:
    """Install the plan's names, each file from its own index, hashes required. ``credentials``
    (the secrets of the spec's URLs, which the lock does not hold) reach uv from a private folder,
    removed on exit and on a signal: the logins as a netrc, a direct reference's token in the
    requirements file uv reads there."""
    from .config import forget_tokens, private_cache, with_tokens, write_netrc

    with scratch.private_folder("sync") as tmp:
        netrc = write_netrc(credentials, tmp, os.environ)
        for name, text in files.items():
            wanted = sorted(_names_in(text) & set(plan.install))
            if not wanted:
                continue
            secrets, shown = _index_args(text)
            secrets |= {"NETRC": str(netrc)} if netrc is not None else {}
            talk.progress(f"sync: installing {len(wanted)} package(s) from {shown}")
            path = tmp / name
            given = with_tokens(text, credentials)
            secrets |= private_cache(tmp) if given != text else {}  # a token: uv's cache keeps the URLs it read
            path.write_text(given, encoding="utf-8")
            again = [a for n in plan.reinstall if n in wanted for a in ("--reinstall-package", n)]
            _uv_run(["pip", "install", "--python", str(venv_python(venv)), "--require-hashes", "--no-deps",
                     "-r", str(path), *again],
                    f"uv could not install {len(wanted)} package(s) of {name} from {shown} into {venv}",
                    tip="check that the index can be reached (pip's configuration names the default index); a "
                        "hash mismatch means the index serves other files than the lock's: lock again",
                    secrets=secrets)
        forget_tokens(venv, credentials)


def _remove(venv: Path, names: Sequence[str], talk: Voice) -> None:
    if not names:
        return
    talk.progress(f"sync: removing {len(names)} package(s) the lock does not hold")
    _uv_run(["pip", "uninstall", "--python", str(venv_python(venv)), *names],
            f"uv could not remove {', '.join(names)} from {venv}", tip="recreate it: remove the folder and sync again")


def _verify(env: Environment, venv: Path, shown: Path) -> None:
    """The venv at ``venv`` (to be moved to ``shown``) holds exactly the lock's names and versions."""
    installed = _installed(venv)
    locked = {_canon(p.name): p.version for p in env.packages}
    wrong = sorted(n for n in set(installed) | set(locked)
                   if n not in installed or n not in locked or not same_version(installed[n], locked[n]))
    if wrong:
        listed = ", ".join(f"{n} {installed.get(n, '(missing)')} (lock: {locked.get(n, 'none')})" for n in wrong)
        raise CheckFailed(f"{shown} would not hold exactly environment '{env.name}' after the sync: {listed} "
                          f"({shown} is left as it was)", tip="lock again, then sync again")


# ---------------------------------------------------------------------------- the smoke test


def _smoke(lock: Lock, lock_path: Path, env: Environment, venv: Path, talk: Voice) -> None:
    """Run the environment's smoke test with the venv's Python; exit 1 when it fails."""
    from .render.artifacts import render_environment

    talk.progress(f"sync: running the smoke test of environment '{env.name}'")
    script = render_environment(lock, env, lock_path.name, dockerfile=False)["smoke_test.py"]
    with scratch.private_folder("smoke") as tmp:
        path = tmp / "smoke_test.py"
        path.write_text(script, encoding="utf-8")
        done = subprocess.run([str(venv_python(venv).absolute()), str(path)], env=run_environ(venv, env), cwd=tmp,
                              capture_output=True, text=True, check=False)
    lines = (done.stdout + done.stderr).rstrip().splitlines()
    for line in lines:
        talk.say(line)
    if done.returncode != 0:
        failed = [ln.strip() for ln in lines if ln.lstrip().startswith("FAIL ")]
        raise CheckFailed(f"the smoke test of environment '{env.name}' failed in {venv}"
                          + "".join(f"\n  {ln}" for ln in failed[:12]),
                          tip="see the checks above; `envsolve doctor` checks the host against the lock")


# ---------------------------------------------------------------------------- the commands


def sync(request: Request, provider: Provider, facts: Callable[[], HostFacts], talk: Voice) -> Synced:
    """`envsolve sync`: the environment of the lock at ``request.lock_path`` in the venv, exactly.
    ``facts`` detects the host (called once)."""
    lock = lockfile.read(request.lock_path)
    _refuse_frameworks_only(lock, request.lock_path)
    if not request.frozen:
        _check_current(lock, request.lock_path, provider, talk)
    env, host = _environment(lock, request.lock_path, request.target, facts)
    _check_host(env, request.lock_path, host, provider, request.force, talk)
    _not_installed(env, talk)
    files = _requirements(lock, request.lock_path, env)  # refuses what no file may carry before anything is made
    venv = request.venv_path
    if not venv.parent.is_dir():  # a typo in a path is not a new tree
        raise SpecError([Problem(str(venv), "", f"cannot be made: its folder {venv.parent} does not exist or is "
                                                "not a folder")], tip=f"mkdir -p {venv.parent}, or pass another --venv")
    with folder_lock(venv.parent):  # syncs of one venv take turns: none finds another's half-made venv
        _clear_leftover(venv)
        _refuse_foreign(venv)
        same = _venv_minor(venv) == env.python and venv_python(venv).exists()
        plan = _plan(env, _installed(venv) if same else {}, _read_marker(venv) if same else {})
        if same and not (plan.remove or plan.install):
            _write_marker(venv, _marker(lock, env))
        else:
            _rebuild(venv, env, same, plan, _Inputs(lock=lock, lock_path=request.lock_path, files=files), talk)
    done = Synced(environment=env.name, venv=venv, packages=len(env.packages), installed=plan.install,
                  removed=plan.remove)
    talk.say(summary(done))
    if request.smoke:
        _smoke(lock, request.lock_path, env, venv, talk)
    return done


class _Inputs(msgspec.Struct, frozen=True, kw_only=True):
    """What a rebuild installs from: the lock, where it is, and its rendered requirements files."""

    lock: Lock
    lock_path: Path
    files: Mapping[str, str]


def _rebuild(venv: Path, env: Environment, same: bool, plan: _Plan, given: _Inputs, talk: Voice) -> None:
    """The environment built beside the venv (a hard-linked copy of it, changed by ``plan``, when
    its Python is ``same``; else a new venv), checked, then swapped in whole: a sync that fails on
    the way leaves the venv as it was, its marker true, and no half-made folder behind."""
    empty = venv.is_dir() and not any(venv.iterdir())  # (built in place: a mount point cannot be swapped)
    new = venv if empty else _beside(venv, "new")
    try:
        with scratch.removed_on_signal(new) if not empty else contextlib.nullcontext():
            _build(new, venv, env, same and _links_are_the_venvs(venv), plan, given, talk)
            if not empty:
                _swap(new, venv)
    except OSError as e:
        raise CheckFailed(f"{venv} could not be synced: {e.filename or new}: {e.strerror or e} (it is left as it was)",
                          tip=f"check that {venv.parent} is writable and has room, then sync again") from None
    finally:
        if empty:
            _empty(venv)  # what a failed build left in the folder it was given (a success leaves the marker's venv)
        elif os.path.lexists(new):
            shutil.rmtree(new, ignore_errors=True)


def _build(new: Path, venv: Path, env: Environment, copy: bool, plan: _Plan, given: _Inputs, talk: Voice) -> None:
    """The environment at ``new``: a copy of ``venv`` changed by ``plan`` (``copy``), else a new
    venv with every package; marked a sync's first, and with the lock's marker once it holds exactly
    the lock."""
    if copy:
        _copy_venv(venv, new)
    else:
        _make_venv(new, env.python, venv, talk)
        plan = _plan(env, {}, {})
    _claim(new)
    _remove(new, plan.remove, talk)
    _install(new, given.files, plan, talk, url_credentials(_spec_path(given.lock, given.lock_path)))
    _verify(env, new, venv)
    write_atomic(new / MARKER, _marker(given.lock, env))


def _empty(folder: Path) -> None:
    """Clear ``folder`` of a venv a failed sync began in it, unless it holds the lock's marker."""
    marker = _read_marker(folder)
    if marker.get("lock_digest"):
        return
    for child in folder.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def summary(done: Synced) -> str:
    """``synced environment 'default' (12 packages) into .venv: 12 installed, 0 removed``."""
    if not done.changed:
        return f"environment '{done.environment}' ({done.packages} packages) is already in sync in {done.venv}"
    return (f"synced environment '{done.environment}' ({done.packages} packages) into {done.venv}: "
            f"{len(done.installed)} installed, {len(done.removed)} removed")


def run_environ(venv: Path, env: Environment | None = None, environ: Mapping[str, str] | None = None
                ) -> dict[str, str]:
    """The environment variables of a command run in the venv: its ``bin`` first on ``PATH``,
    ``VIRTUAL_ENV``, and the lock's Keras backend unless one is set."""
    out = {k: v for k, v in (os.environ if environ is None else environ).items() if k != "PYTHONHOME"}
    out["VIRTUAL_ENV"] = str(venv.absolute())
    out["PATH"] = os.pathsep.join([str(venv_bin(venv).absolute()), *filter(None, [out.get("PATH", "")])])
    if env is not None and env.keras_backend:
        out.setdefault("KERAS_BACKEND", env.keras_backend)
    return out


def run(request: Request, command: Sequence[str], provider: Callable[[], Provider],
        facts: Callable[[], HostFacts], talk: Voice) -> int:
    """`envsolve run`: ``command`` in the venv (synced first when it is missing or not of this
    lock); its exit status (128 + N when a signal N ended it)."""
    lock = lockfile.read(request.lock_path)
    env = current(lock, request.venv_path, request.target)
    if env is None:
        env = lock.environment(sync(request, provider(), facts, talk).environment)
    return _call(command, run_environ(request.venv_path, env))


def _call(command: Sequence[str], environ: Mapping[str, str]) -> int:
    import shutil

    exe = shutil.which(command[0], path=environ.get("PATH"))
    if exe is None:
        raise SpecError([Problem("envsolve run", command[0], "is no command in the environment or on PATH")],
                        tip="check the command's name; `envsolve run -- python -m MODULE` runs a module")
    with subprocess.Popen([exe, *command[1:]], env=dict(environ)) as proc:
        while True:
            try:
                code = proc.wait()
                break
            except KeyboardInterrupt:  # the command got it too (same process group): wait for it to end
                continue
    return 128 - code if code < 0 else code
