"""The full resolve: every package of one environment, pinned with hashes, by uv.

envsolve's compatibility solve stays in charge of the frameworks: its pins (with their variant
and index) go to uv as exact requirements, beside the project's ``[packages] pip``, and uv
resolves the transitive closure for the environment's Python and platform (Linux x86_64 or aarch64)
(``uv pip compile --generate-hashes --format pylock.toml``). uv is a runtime dependency; it is
run as ``python -m uv``'s binary (:func:`uv.find_uv_bin`) in a scratch folder holding a generated
``pyproject.toml``.

Dependency confusion: the PyTorch index is declared ``explicit = true`` and only the
framework packages that envsolve chose from it are routed there with ``[tool.uv.sources]``; every
other name (their dependencies included) comes from the default index alone, and uv's default
``first-index`` strategy never mixes versions of one name across indexes. A package published on
the default index under a PyTorch-index name cannot replace the chosen build, and nothing on the
PyTorch index can stand in for a default-index package.

The default index is ``ENVSOLVE_INDEX_PYPI`` or ``[indexes] pypi`` when set, else pip's own
configured index (:func:`envsolve.config.pip_index_url`); the lock records it as "" (pip's own at
install time) unless it was named, so the same spec gives the same lock on every machine.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from ..domain import WHEEL_MACHINE
from ..errors import ResolveError
from ..paths import cache_dir

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["WAYS_OUT", "Pin", "Resolved", "resolve"]

WAYS_OUT = ("lock the frameworks only with `envsolve lock --frameworks-only` (no network), or point the "
             "index at a mirror you can reach (ENVSOLVE_INDEX_PYPI, ENVSOLVE_INDEX_PYTORCH or [indexes] in "
             "project.toml; see README 'Index URLs')")


@dataclass(frozen=True, kw_only=True, slots=True)
class Pin:
    """A requirement the compatibility solve fixed: ``requirement`` goes to uv as is; a non-empty
    ``index_url`` routes ``name`` to that (explicit) index."""

    name: str
    requirement: str
    index_url: str = ""


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolved:
    """One package of the full resolve."""

    name: str
    version: str
    index_url: str  # "" for the default index (pip's own where it installs)
    hashes: tuple[str, ...]  # "sha256:<hex>", sorted
    direct: bool  # asked for (a framework, a companion, a [packages] pip line), else a dependency


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _uv() -> str:
    try:
        from uv import find_uv_bin
    except ImportError:  # pragma: no cover - uv is a dependency
        raise ResolveError("uv is not installed, and the full lock needs it",
                           tip="pip install uv (envsolve depends on it), or lock with --frameworks-only") from None
    return str(find_uv_bin())


def _pyproject(python: str, pins: Sequence[Pin], pip: Sequence[str]) -> dict[str, Any]:
    routed = sorted({p.index_url for p in pins if p.index_url})
    names = {url: f"explicit-{i}" for i, url in enumerate(routed)}
    project: dict[str, Any] = {"name": "envsolve-environment", "version": "0",
                               "requires-python": f">={python}",
                               "dependencies": [p.requirement for p in pins] + list(pip)}
    uv: dict[str, Any] = {}
    if routed:
        uv["sources"] = {p.name: {"index": names[p.index_url]} for p in pins if p.index_url}
        uv["index"] = [{"name": names[url], "url": url, "explicit": True} for url in routed]
    return {"project": project, "tool": {"uv": uv}} if uv else {"project": project}


def _trim(stderr: str) -> str:
    lines = [ln.rstrip() for ln in stderr.splitlines() if ln.strip()]
    lines = [ln.removeprefix("  × ").removeprefix("× ").removeprefix("error: ") for ln in lines
             if not ln.lstrip().startswith(("Resolved ", "Using ", "warning: "))]
    return "\n  ".join(lines[:12]) or "uv failed without a message"


def _failure(stderr: str, default_index: str, routed: Sequence[str], offline: bool) -> ResolveError:
    text = _trim(stderr)
    low = stderr.lower()
    unreachable = ("failed to fetch", "could not connect", "dns error", "connection refused", "tcp connect",
                   "error sending request", "failed to lookup address", "operation timed out")
    if offline and ("offline" in low or "network connectivity is disabled" in low):
        return ResolveError(f"the full resolve needs files that are not in the cache (--offline):\n  {text}",
                            tip="lock once with the network to fill the cache, or use --frameworks-only")
    if any(u in low for u in unreachable):
        urls = [u for u in (*routed, default_index) if u and u in stderr] or [*routed, default_index]
        return ResolveError(f"the package index {' / '.join(u for u in urls if u)} cannot be reached:\n  {text}",
                            tip=WAYS_OUT)
    return ResolveError(f"the packages cannot be installed together:\n  {text}",
                        tip="loosen the [packages] pip requirement or the framework range that clashes "
                            "(see `envsolve explain`), then lock again")


def _hashes(entry: Mapping[str, Any]) -> tuple[str, ...]:
    files = list(entry.get("wheels", [])) + ([entry["sdist"]] if "sdist" in entry else [])
    return tuple(sorted({f"sha256:{f['hashes']['sha256']}" for f in files if "sha256" in f.get("hashes", {})}))


def _uv_run(cmd: Sequence[str], root: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(cmd), cwd=root, env=dict(env), capture_output=True, text=True, check=False)
    except OSError as e:
        raise ResolveError(f"uv could not be run ({e})", tip="reinstall envsolve (pip install uv)") from None


def resolve(*, python: str, platform: str = "linux/amd64", pins: Sequence[Pin], pip: Sequence[str], default_index: str,
            record_default: str = "", offline: bool = False, exclude_newer: str = "",
            prefer: Sequence[tuple[str, str]] = (), upgrade: Sequence[str] = (), cache_first: bool = True,
            environ: Mapping[str, str] | None = None) -> tuple[Resolved, ...]:
    """The full package list of an environment for ``python`` (``"3.12"``), sorted by name.

    ``prefer`` (name, version) are kept where they still fit (the previous lock's, as uv keeps
    those of an existing output file); ``upgrade`` names move to their newest. With
    ``cache_first`` uv resolves from its cache alone first (a second lock of the same spec needs no
    network) and reads the index only when the cache cannot answer. Raises
    :class:`ResolveError` for a conflict, an unreachable index or (offline) a missing file."""
    env = {**os.environ, **(environ or {})}  # environ: settings over this process's
    routed = sorted({p.index_url for p in pins if p.index_url})
    via = {_canon(p.name): p.index_url for p in pins if p.index_url}
    asked = {_canon(p.name) for p in pins}
    for line in pip:
        if (m := _NAME.match(line)):
            asked.add(_canon(m.group(1)))
    with tempfile.TemporaryDirectory(prefix="envsolve-resolve-") as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text(tomli_w.dumps(_pyproject(python, pins, pip)), encoding="utf-8")
        if prefer:  # uv reads an existing output file as its preferences
            (root / "pylock.toml").write_text(tomli_w.dumps(
                {"lock-version": "1.0", "created-by": "envsolve",
                 "packages": [{"name": n, "version": v} for n, v in sorted(prefer)]}), encoding="utf-8")
        cmd = [_uv(), "pip", "compile", "pyproject.toml", "--generate-hashes", "--format", "pylock.toml",
               "--python-version", python,
               "--python-platform", f"{WHEEL_MACHINE[platform]}-manylinux_2_28",  # glibc 2.28+, as the images
               "--no-header", "--no-annotate",
               "--quiet", "--output-file", "pylock.toml",
               "--cache-dir", str(cache_dir(env) / "uv"),
               # the target is --python-version; this interpreter only builds an sdist's metadata, and
               # uv must not try to download one (that costs seconds, and offline fails)
               "--python", sys.executable, "--no-python-downloads",
               "--native-tls"]  # the system's CA certificates, as pip's configuration uses here
        if default_index:
            cmd += ["--default-index", default_index]
        if offline:
            cmd.append("--offline")
        if exclude_newer:
            cmd += ["--exclude-newer", exclude_newer]
        for name in upgrade:
            cmd += ["--upgrade-package", name]
        for var in [k for k in env if k.startswith("UV_")]:
            del env[var]  # the user's uv settings do not change a lock
        out = root / "pylock.toml"
        preferences = out.read_bytes() if out.exists() else None
        warm = (cache_dir(env) / "uv").is_dir()  # an empty cache cannot answer: skip the try
        run = _uv_run([*cmd, "--offline"], root, env) if cache_first and warm and not offline else None
        if run is None or run.returncode != 0 or not out.exists():
            if preferences is not None:
                out.write_bytes(preferences)
            run = _uv_run(cmd, root, env)
        if run.returncode != 0 or not out.exists():
            raise _failure(run.stderr, default_index, routed, offline)
        data = tomllib.loads(out.read_text(encoding="utf-8"))
    result = []
    for entry in data.get("packages", []):
        name = _canon(str(entry["name"]))  # a routed name comes only from its explicit index
        result.append(Resolved(name=name, version=str(entry["version"]), index_url=via.get(name, record_default),
                               hashes=_hashes(entry), direct=name in asked))
    return tuple(sorted(result, key=lambda r: r.name))
