"""Where files are: envsolve's shipped matrices and templates (inside the wheel, else the source
checkout's), the user's cache folder, the user's state folder (the key that seals the caches),
and pip's configuration files. Standard library only, and
no pathlib on the warm path: `envsolve lock`'s replay (:mod:`envsolve.lock.replay`) takes the
``*_folder``/``*_paths`` texts (pathlib and the modules it loads cost a replay a third of its
time); everything else takes the ``Path`` forms, made from the same texts."""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the lock replay imports this
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

__all__ = ["PROJECT_FILES", "SHIPPED_COMPILED", "cache_dir", "cache_folder", "data_dir", "data_folder", "found",
           "pip_config_files", "pip_config_paths", "project_folder", "state_folder", "templates_dir", "venv_bin",
           "venv_python"]

_HERE = os.path.dirname(os.path.realpath(__file__))


def _shipped(name: str) -> str:
    packaged = os.path.join(_HERE, "_data", name)
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(_HERE), name)


# the shipped matrices' records, checked and compiled when the wheel is built (hatch_build.py): a
# wheel's first run reads them instead of checking the TOML; a source checkout has none
SHIPPED_COMPILED = os.path.join(_HERE, "_data", "compiled")


def data_folder() -> str:
    """The shipped ``matrices/`` folder."""
    return _shipped("matrices")


def data_dir() -> Path:
    """:func:`data_folder` as a ``Path``."""
    from pathlib import Path

    return Path(data_folder())


def templates_dir() -> Path:
    """The shipped ``templates/`` folder."""
    from pathlib import Path

    return Path(_shipped("templates"))


def cache_folder(environ: Mapping[str, str] | None = None) -> str:
    """envsolve's cache folder: ``ENVSOLVE_CACHE_DIR``, else ``$XDG_CACHE_HOME/envsolve``, else
    ``~/.cache/envsolve``."""
    env = os.environ if environ is None else environ
    if env.get("ENVSOLVE_CACHE_DIR"):
        return env["ENVSOLVE_CACHE_DIR"]
    return os.path.join(env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "envsolve")


def state_folder(environ: Mapping[str, str] | None = None) -> str:
    """envsolve's state folder, outside the cache folder (a cache copied from elsewhere carries none
    of it): ``ENVSOLVE_STATE_DIR``, else ``$XDG_STATE_HOME/envsolve``, else ``~/.local/state/envsolve``."""
    env = os.environ if environ is None else environ
    if env.get("ENVSOLVE_STATE_DIR"):
        return env["ENVSOLVE_STATE_DIR"]
    home = os.path.expanduser("~")
    return os.path.join(env.get("XDG_STATE_HOME") or os.path.join(home, ".local", "state"), "envsolve")


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """:func:`cache_folder` as a ``Path``."""
    from pathlib import Path

    return Path(cache_folder(environ))


def pip_config_paths(env: Mapping[str, str]) -> list[str]:
    """pip's configuration files, lowest precedence first (pip's own order)."""
    home = os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    files = ["/etc/xdg/pip/pip.conf", "/etc/pip.conf", os.path.join(home, ".pip", "pip.conf"),
             os.path.join(xdg, "pip", "pip.conf"), os.path.join(sys.prefix, "pip.conf")]
    return files + ([env["PIP_CONFIG_FILE"]] if env.get("PIP_CONFIG_FILE") else [])


def pip_config_files(env: Mapping[str, str]) -> list[Path]:
    """:func:`pip_config_paths` as ``Path`` objects."""
    from pathlib import Path

    return [Path(p) for p in pip_config_paths(env)]


# what makes a folder a project's: its spec, or a lock made from it (a lock may travel alone)
PROJECT_FILES = ("project.toml", "envsolve.lock")


def project_folder(start: str | None = None, environ: Mapping[str, str] | None = None) -> str | None:
    """The nearest folder, from ``start`` (the working folder) upward, that holds a project.toml or
    an envsolve.lock, as uv and pixi find their project: "." for ``start`` itself, else a path
    relative to it; None when there is none. The search ends at a repository root (a folder with
    ``.git``), the home folder or the file system's root, each searched itself."""
    env = os.environ if environ is None else environ
    try:
        here = os.path.abspath(start or os.getcwd())
    except FileNotFoundError:  # the working folder was removed: nothing to find from it
        return None
    home = os.path.abspath(env.get("HOME") or os.path.expanduser("~"))
    folder = here
    while True:
        if any(os.path.isfile(os.path.join(folder, name)) for name in PROJECT_FILES):
            return "." if folder == here else os.path.relpath(folder, here)
        parent = os.path.dirname(folder)
        if parent == folder or folder == home or os.path.exists(os.path.join(folder, ".git")):
            return None
        folder = parent


def found(name: str, environ: Mapping[str, str] | None = None) -> str:
    """``name`` (project.toml or envsolve.lock) in the nearest project folder (:func:`project_folder`),
    as a path relative to the working folder: ``name`` itself when that is the working folder or
    no folder is found (the command then says it is missing)."""
    folder = project_folder(environ=environ)
    return name if folder in (None, ".") else os.path.join(folder, name)


def venv_bin(venv: Path) -> Path:
    """The folder of a venv's executables (``Scripts`` on Windows): what `envsolve run` puts first on PATH."""
    return venv / ("Scripts" if os.name == "nt" else "bin")


def venv_python(venv: Path) -> Path:
    """The interpreter of the venv at ``venv``: what `envsolve sync` installs with and `envsolve doctor` reads."""
    return venv_bin(venv) / ("python.exe" if os.name == "nt" else "python")
