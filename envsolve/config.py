"""User settings envsolve reads: the package index URLs, from project.toml's ``[indexes]``,
``ENVSOLVE_INDEX_<NAME>`` and pip's own configuration.

Two different questions, two functions:

- :func:`index_urls` gives the *canonical* indexes a lock records: the PyTorch index's public
  URL (``domain.DEFAULT_INDEXES``) unless ``ENVSOLVE_INDEX_<NAME>`` or ``[indexes]`` override it,
  and nothing at all for the default index unless one of those names it. pip's configuration
  never enters a lock, so the same spec gives the same lock on every machine; a mirror is an
  install-time concern (pip's configuration where the artifacts are installed).
- :func:`pip_index_url` gives the index pip itself would use here (``envsolve refresh``).

The default index's host is never written into envsolve: pip's configuration files,
``PIP_INDEX_URL``, or pip's built-in default (read from pip itself) supply it. Every URL is
checked before it can reach a generated file, and credentials in it are dropped.
"""

from __future__ import annotations

import configparser
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .domain import DEFAULT_INDEXES
from .errors import Problem, SpecError
from .paths import pip_config_files

__all__ = ["check_url", "index_urls", "pip_config", "pip_config_files", "pip_index_url", "strip_credentials"]

_ENV_PREFIX = "ENVSOLVE_INDEX_"
_INDEX_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")


_PIP_KEYS = ("index-url", "extra-index-url", "cert")
_PIP_VARIABLES = (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL"), ("cert", "PIP_CERT"))


def _pip_file_settings(path: Path) -> dict[str, tuple[str, str, str]]:
    """The settings one pip configuration file gives ({} when it cannot be read)."""
    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return {}
    return {key: (parser.get(section, key).strip(), f"{path} [{section}]", key)
            for section in ("global", "install") for key in _PIP_KEYS if parser.has_option(section, key)}


def _pip_settings(env: Mapping[str, str]) -> dict[str, tuple[str, str, str]]:
    """``index-url`` / ``extra-index-url`` / ``cert`` -> (value, the file or variable pip read it
    from, key)."""
    out: dict[str, tuple[str, str, str]] = {}
    for path in pip_config_files(env) if env.get("PIP_CONFIG_FILE") != os.devnull else ():
        out.update(_pip_file_settings(path))
    out.update({key: (env[var].strip(), var, "") for key, var in _PIP_VARIABLES if env.get(var)})
    return out


def pip_config(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``index-url``, ``extra-index-url`` and ``cert`` as pip would see them."""
    env = os.environ if environ is None else environ
    return {k: v for k, (v, _, _) in _pip_settings(env).items()}


def _pip_default_index() -> str:
    """pip's built-in default index, read from pip itself (never written here)."""
    try:
        from pip._internal.models.index import PyPI  # noqa: PLC0415 - only when needed

        return str(PyPI.simple_url)
    except Exception:  # pip absent or reorganised: the caller says none is configured
        return ""


def pip_index_url(environ: Mapping[str, str] | None = None) -> str:
    """The index pip would use on this machine ("" when none can be found), checked like every
    URL envsolve reads: a bad value raises :class:`SpecError` naming where pip read it."""
    env = os.environ if environ is None else environ
    value, where, key = _pip_settings(env).get("index-url", ("", "", ""))
    if value:
        if (why := check_url(value)) is not None:
            raise SpecError([Problem(where, key, why)],
                            tip=f"fix the index URL in {where}, or pass --index-url URL")
        return value.rstrip("/")
    return _pip_default_index().rstrip("/")


def strip_credentials(url: str) -> tuple[str, bool]:
    """``url`` without user, password, query or fragment (where tokens travel), and whether
    anything was dropped. ``https://bot:S3CRET@mirror/simple?token=x`` -> ``https://mirror/simple``."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if "@" in parts.netloc or parts.query or parts.fragment:
        return urlunsplit((parts.scheme, host, parts.path, "", "")), True
    return url, False


def _env_sources(env: Mapping[str, str], problems: list[Problem]) -> dict[str, tuple[str, str]]:
    """``ENVSOLVE_INDEX_<NAME>`` variables: name -> (URL, where it was read); a bad name is a problem."""
    out: dict[str, tuple[str, str]] = {}
    for key in (k for k in sorted(env) if k.startswith(_ENV_PREFIX) and env[k].strip()):
        name = key[len(_ENV_PREFIX):].lower()
        if _INDEX_NAME.fullmatch(name):
            out[name] = (env[key].strip(), f"environment variable {key}")
        else:
            problems.append(Problem("environment", key, "is not an index variable such as ENVSOLVE_INDEX_PYTORCH"))
    return out


_DROPPED = ("credentials (user, password, query or fragment) were dropped from the index URL; nothing generated "
            "carries them. Give them to pip at install time (pip.conf or .netrc, a BuildKit secret in Docker "
            "builds: see README 'Index URLs')")


def _checked(sources: Mapping[str, tuple[str, str]], problems: list[Problem],
             warnings: list[str]) -> dict[str, str]:
    """Each source's URL, checked (a bad one is a problem) and without its credentials (a warning)."""
    urls: dict[str, str] = {}
    for name, (value, where) in sorted(sources.items()):
        if (why := check_url(value)) is not None:
            problems.append(Problem(where.removeprefix("environment variable "), "", why))
            continue
        clean, dropped = strip_credentials(value)
        warnings += [f"{where}: {_DROPPED}"] if dropped else []
        urls[name] = clean.rstrip("/")
    return urls


def index_urls(spec_indexes: Mapping[str, str], environ: Mapping[str, str] | None = None,
               spec_path: str = "project.toml") -> tuple[dict[str, str], list[str]]:
    """(symbolic index name -> URL for the lock, warnings).

    The PyTorch index's public URL, overridden by ``ENVSOLVE_INDEX_<NAME>``, overridden by
    ``[indexes]``. pip's configuration is not read: the default index is pip's at install time.
    Each value is checked (a bad one raises :class:`SpecError` naming the variable or key and
    the value) and loses its credentials, with a warning saying so."""
    env = os.environ if environ is None else environ
    problems: list[Problem] = []
    warnings: list[str] = []
    sources = {k: (v, "") for k, v in DEFAULT_INDEXES.items()} | _env_sources(env, problems)
    sources |= {name: (value, f"{spec_path} [indexes] {name}") for name, value in spec_indexes.items()}
    urls = _checked(sources, problems, warnings)
    if problems:
        raise SpecError(problems, tip="set each index to an http(s) URL without whitespace, quotes or shell "
                                      "metacharacters, e.g. ENVSOLVE_INDEX_PYTORCH=https://your.mirror/whl")
    return urls, warnings


# Characters a URL may carry into a RUN line, a requirements file or YAML: no whitespace, no
# quotes, no shell metacharacters ($ ; | & ` < > ( ) { } \ ' " and newlines).
_SAFE_URL = re.compile(r"(?:https?|file)://[A-Za-z0-9._~:/?#@%=+,\[\]-]+")


def check_url(value: object) -> str | None:
    """Why ``value`` is not an index URL envsolve will write into a file; None when it is fine."""
    if not isinstance(value, str) or not _SAFE_URL.fullmatch(value):
        return (f"{value!r} must be an index URL (http, https or file) without whitespace, quotes or "
                "shell metacharacters")
    return None
