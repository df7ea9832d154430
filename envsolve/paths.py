"""Where files are: envsolve's shipped matrices and templates (inside the wheel, else the source
checkout's), the user's cache folder, and pip's configuration files. Standard library only: the warm path of
`envsolve lock` (:mod:`envsolve.lock.replay`) imports this and little else."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["cache_dir", "data_dir", "pip_config_files", "templates_dir"]

_HERE = Path(__file__).resolve().parent


def _shipped(name: str) -> Path:
    packaged = _HERE / "_data" / name
    return packaged if packaged.is_dir() else _HERE.parent / name


def data_dir() -> Path:
    """The shipped ``matrices/`` folder."""
    return _shipped("matrices")


def templates_dir() -> Path:
    """The shipped ``templates/`` folder."""
    return _shipped("templates")


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """envsolve's cache folder: ``ENVSOLVE_CACHE_DIR``, else ``$XDG_CACHE_HOME/envsolve``, else
    ``~/.cache/envsolve``."""
    env = os.environ if environ is None else environ
    if env.get("ENVSOLVE_CACHE_DIR"):
        return Path(env["ENVSOLVE_CACHE_DIR"])
    return Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "envsolve"


def pip_config_files(env: Mapping[str, str]) -> list[Path]:
    """pip's configuration files, lowest precedence first (pip's own order)."""
    files = [Path("/etc/xdg/pip/pip.conf"), Path("/etc/pip.conf")]
    home = Path.home()
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    files += [home / ".pip" / "pip.conf", xdg / "pip" / "pip.conf"]
    files.append(Path(sys.prefix) / "pip.conf")
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    return files
