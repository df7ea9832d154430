"""User settings envsolve reads: the package index URLs, from project.toml's ``[indexes]``,
``ENVSOLVE_INDEX_<NAME>`` and pip's own configuration.

Registry hosts are never written into envsolve: the default index is pip's (its configuration
files, ``PIP_INDEX_URL``, or pip's built-in default, read from pip itself), and every other
index comes from the user's settings.
"""

from __future__ import annotations

import configparser
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["check_url", "index_urls", "pip_config", "pip_config_files"]

_TORCH_INDEX = re.compile(r"/whl/?$")


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


def pip_config(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``index-url`` and ``extra-index-url`` as pip would see them."""
    env = os.environ if environ is None else environ
    out: dict[str, str] = {}
    if env.get("PIP_CONFIG_FILE") != os.devnull:
        for path in pip_config_files(env):
            parser = configparser.RawConfigParser()
            try:
                parser.read(path, encoding="utf-8")
            except (OSError, configparser.Error, UnicodeDecodeError):
                continue
            for section in ("global", "install"):
                for key in ("index-url", "extra-index-url"):
                    if parser.has_option(section, key):
                        out[key] = parser.get(section, key).strip()
    for key, var in (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL")):
        if env.get(var):
            out[key] = env[var].strip()
    return out


def _pip_default_index() -> str:
    """pip's built-in default index, read from pip itself (never written here)."""
    try:
        from pip._internal.models.index import PyPI  # noqa: PLC0415 - only when needed

        return str(PyPI.simple_url)
    except Exception:  # pip absent or reorganised: leave the placeholder to the lock
        return ""


def index_urls(spec_indexes: Mapping[str, str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Symbolic index name -> URL: project.toml, then ENVSOLVE_INDEX_*, then pip's settings."""
    env = os.environ if environ is None else environ
    cfg = pip_config(env)
    urls: dict[str, str] = {}
    if cfg.get("index-url"):
        urls["pypi"] = cfg["index-url"].rstrip("/")
    for url in cfg.get("extra-index-url", "").split():
        if _TORCH_INDEX.search(url):
            urls.setdefault("pytorch", url.rstrip("/"))
    for key, value in env.items():
        if key.startswith("ENVSOLVE_INDEX_") and value.strip():
            urls[key[len("ENVSOLVE_INDEX_"):].lower()] = value.strip().rstrip("/")
    urls.update(spec_indexes)
    if "pypi" not in urls and (default := _pip_default_index()):
        urls["pypi"] = default.rstrip("/")
    return urls


# Characters a URL may carry into a RUN line, a requirements file or YAML: no whitespace, no
# quotes, no shell metacharacters ($ ; | & ` < > ( ) { } \ ' " and newlines).
_SAFE_URL = re.compile(r"(?:https?|file)://[A-Za-z0-9._~:/?#@%=+,\[\]-]+")


def check_url(value: object) -> str | None:
    """Why ``value`` is not an index URL envsolve will write into a file; None when it is fine."""
    if not isinstance(value, str) or not _SAFE_URL.fullmatch(value):
        return (f"{value!r} must be an index URL (http, https or file) without whitespace, quotes or "
                "shell metacharacters")
    return None
