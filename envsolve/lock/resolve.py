"""The full resolve: every package of one environment, pinned with hashes, by uv.

envsolve's compatibility solve stays in charge of the frameworks: its pins (with their variant
and index) go to uv as exact requirements, beside the project's ``[packages] pip``, and uv
resolves the transitive closure for the environment's Python and platform (``--python-platform``:
domain.PYTHON_PLATFORM, so a Windows or macOS environment is locked from Linux with its own wheels)
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
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec
import tomli_w
from packaging.utils import canonicalize_name

from .. import scratch
from ..config import Credential, private_cache, scrub, strip_credentials, with_tokens, write_netrc
from ..domain import DEFAULT_PLATFORM, MACOS_TARGET, PYTHON_PLATFORM, Platform
from ..errors import ResolveError
from ..index.policy import BACKOFF, CREDENTIALS_TIP, REFUSED_STATUS, RETRIES
from ..paths import cache_dir
from ..solve.together import asks
from ..voice import silent
from .model import Package

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["WAYS_OUT", "Conflict", "Pin", "UvClash", "resolve", "uv_clash", "uv_command", "uv_environ"]

WAYS_OUT = ("lock the frameworks only with `envsolve lock --frameworks-only` (no network); lock from "
             "envsolve's cache alone with --offline (once a lock with the network has filled it); or point the "
             "index at a mirror you can reach (ENVSOLVE_INDEX_PYPI, ENVSOLVE_INDEX_PYTORCH, [indexes] in "
             "project.toml, or pip's PIP_INDEX_URL; see README 'Index URLs')")


class Pin(msgspec.Struct, frozen=True, kw_only=True):
    """A requirement the compatibility solve fixed: ``requirement`` goes to uv as is; a non-empty
    ``index_url`` routes ``name`` to that (explicit) index."""

    name: str
    requirement: str
    index_url: str = ""
    flat: bool = False  # the index is a folder of wheel files (domain.FLAT_INDEXES): uv's flat format


_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def _canon(name: str) -> str:
    return str(canonicalize_name(name))


def uv_environ(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of every uv run of envsolve's: ``environ`` without the user's uv settings
    (``UV_*``: they would change a lock or widen where an install reads from), with pip's
    certificate bundle when pip has one and no other is set."""
    from ..config import pip_config

    env = {k: v for k, v in environ.items() if not k.startswith("UV_")}
    cert = pip_config(env).get("cert", "")
    if cert and not env.get("SSL_CERT_FILE"):
        env["SSL_CERT_FILE"] = cert
    return env


def uv_command(args: Sequence[str], env: Mapping[str, str], *, needed_by: str, tip: str) -> list[str]:
    """uv's command line as envsolve runs it everywhere (the full lock, sync): its binary, ``args``,
    envsolve's cache folder, the system's CA certificates (as pip's configuration uses here) and
    no uv.toml. ``needed_by`` and ``tip`` say who needs uv when it is missing. No secret goes on
    this line (any local user can read a command line): index URLs, which may carry a login, reach
    uv through its environment (:func:`index_environ`)."""
    try:
        from uv import find_uv_bin
    except ImportError:  # pragma: no cover - uv is a dependency
        raise ResolveError(f"uv is not installed, and {needed_by} needs it", tip=tip) from None
    return [str(find_uv_bin()), *args, "--cache-dir", str(cache_dir(env) / "uv"), "--system-certs", "--no-config"]


def index_environ(default_index: str) -> dict[str, str]:
    """The variable that gives uv its default index (``UV_DEFAULT_INDEX``; none for "": uv's own),
    so that a login in it never reaches uv's command line."""
    return {"UV_DEFAULT_INDEX": default_index} if default_index else {}


def _explicit_indexes(pins: Sequence[Pin]) -> dict[str, Any]:
    """``[tool.uv]``: each routed name from its explicit index alone ({} when none is routed)."""
    routed = sorted({p.index_url for p in pins if p.index_url})
    names = {url: f"explicit-{i}" for i, url in enumerate(routed)}
    flat = {p.index_url for p in pins if p.flat}
    if not routed:
        return {}
    return {"sources": {p.name: {"index": names[p.index_url]} for p in pins if p.index_url},
            "index": [{"name": names[url], "url": url, "explicit": True, **({"format": "flat"} if url in flat else {})}
                      for url in routed]}


def _pyproject(python: str, pins: Sequence[Pin], pip: Sequence[str]) -> dict[str, Any]:
    project: dict[str, Any] = {"name": "envsolve-environment", "version": "0",
                               "requires-python": f">={python}",
                               "dependencies": [p.requirement for p in pins] + list(pip)}
    uv = _explicit_indexes(pins)
    return {"project": project, "tool": {"uv": uv}} if uv else {"project": project}


def _trim(stderr: str) -> str:
    lines = [ln.rstrip() for ln in scrub(stderr).splitlines() if ln.strip()]
    lines = [ln.removeprefix("  × ").removeprefix("× ").removeprefix("error: ") for ln in lines
             if not ln.lstrip().startswith(("Resolved ", "Using ", "warning: "))]
    return "\n  ".join(lines[:12]) or "uv failed without a message"


_UNREACHABLE = ("failed to fetch", "could not connect", "dns error", "connection refused", "tcp connect",
                "error sending request", "failed to lookup address", "operation timed out")


def _cache_miss(stderr: str, offline: bool) -> bool:
    """Whether uv failed for a file missing from its cache (--offline)."""
    low = stderr.lower()
    return offline and ("offline" in low or "network connectivity is disabled" in low)


# how uv words an index that refused the credentials (the URL, the status), as of uv 0.13: a page
# ("hint: An index URL (URL) could not be queried due to a lack of valid authentication credentials
# (401 Unauthorized)", "hint: An index (URL) returned a 403 Forbidden error"), a file ("Failed to fetch:
# URL / cause: HTTP status client error (401 Unauthorized) for url (URL)")
_REFUSED = (re.compile(r"An index URL \((\S+)\) could not be queried due to a lack of valid authentication "
                       r"credentials \((?P<status>401)"),
            re.compile(r"An index \((\S+)\) returned a (?P<status>403) Forbidden"),
            re.compile(r"HTTP status client error \((?P<status>40[13])\b[^)]*\) for url \((\S+)\)"))


def _refused(stderr: str, default_index: str, routed: Sequence[str]) -> str | None:
    """Which index refused uv's credentials, and how ("the package index URL refused the credentials
    (HTTP 401 Unauthorized for URL)"); None when none did."""
    hit = next((m for rx in _REFUSED if (m := rx.search(scrub(stderr)))), None)
    if hit is None:
        return None
    url = next(g for g in hit.groups() if g != hit.group("status"))
    index = _index_of(url, [strip_credentials(u)[0].rstrip("/") for u in (*routed, default_index) if u])
    status = REFUSED_STATUS[int(hit.group("status"))]
    return (f"the package index {index} refused the credentials (HTTP {status} for {url}): none were given for it, "
            "or they are not valid there")


def _index_of(url: str, indexes: Sequence[str]) -> str:
    """The index a URL uv names belongs to: the one it starts with, else the one on its host (files
    served beside the pages), else the URL's own host."""
    parts = urlsplit(url)
    return (next((i for i in indexes if url.startswith(i)), None)
            or next((i for i in indexes if urlsplit(i).netloc == parts.netloc), None)
            or f"{parts.scheme}://{parts.netloc}")


def _unreachable(stderr: str, default_index: str, routed: Sequence[str]) -> str | None:
    """The index URLs uv could not reach; None when it failed otherwise (an index that refused the
    credentials answered: asking again gets the same answer)."""
    if not any(u in stderr.lower() for u in _UNREACHABLE) or _refused(stderr, default_index, routed) is not None:
        return None
    urls = [u for u in (*routed, default_index) if u and u in stderr] or [*routed, default_index]
    return " / ".join(strip_credentials(u)[0] for u in urls if u)


class UvClash(msgspec.Struct, frozen=True, kw_only=True):
    """Two requirers of one package whose ranges of it uv found disjoint: ``a`` asks ``dep``
    ``a_spec``, ``b`` asks it ``b_spec``. A requirer is a canonical name ("" for the project's own
    requirements), with the version the environment pins it to when it is a pinned framework."""

    dep: str
    a: str
    a_spec: str
    b: str
    b_spec: str
    versions: tuple[tuple[str, str], ...] = ()  # pinned name -> version

    @property
    def requirers(self) -> tuple[str, str]:
        return self.a, self.b

    def text(self) -> str:
        """``jax 0.12.0.1 needs ml-dtypes>=0.5.0; tensorflow 2.16.2 pins ml-dtypes>=0.3.1,<0.4.dev0``."""
        return f"{asks(self._who(self.a), self.dep, self.a_spec)}; {asks(self._who(self.b), self.dep, self.b_spec)}"

    def _who(self, name: str) -> str:
        version = dict(self.versions).get(name, "")
        if name:
            return f"{name} {version}" if version else name
        return "the project" if self.dep in dict(self.versions) else "[packages] pip"


class Conflict(ResolveError):
    """uv found no set of versions that installs together; ``clash`` is the pair it named, when its
    message names one (None otherwise)."""

    def __init__(self, message: str, tip: str | None, clash: UvClash | None) -> None:
        super().__init__(message, tip)
        self.clash = clash


# one clause of uv's explanation: ``jax>=0.12.0.1 depends on ml-dtypes>=0.5.0``, ``all versions of
# tensorflow[and-cuda] depend on ml-dtypes>=0.3.1,<0.4.dev0`` (not what it concludes from two of them)
_DEPENDS = re.compile(r"(?<![\w.\[-])(?<!conclude that )(?<!conclude that all versions of )"
                      r"(?:all versions of |only )?(?P<who>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?"
                      r"(?:[<>=!~][^\s]*)? depends? on (?P<dep>[A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?"
                      r"(?P<spec>[<>=!~][^\s]*)?")
_PROJECT = "envsolve-environment"  # the scratch project's name: its dependencies are the environment's requirements


def uv_clash(stderr: str, pins: Sequence[Pin]) -> UvClash | None:
    """The first package that two requirers in uv's explanation ask for with ranges that exclude
    each other; None when uv's words name no such pair."""
    seen: dict[str, tuple[str, str]] = {}
    for m in _DEPENDS.finditer(" ".join(stderr.split())):
        who, dep, spec = _canon(m["who"]), _canon(m["dep"]), (m["spec"] or "").rstrip(",.")
        who = "" if who == _PROJECT else who
        first = seen.setdefault(dep, (who, spec))
        if first[0] != who and spec and first[1]:
            return UvClash(dep=dep, a=first[0], a_spec=first[1], b=who, b_spec=spec, versions=_pinned(pins))
    return None


def _pinned(pins: Sequence[Pin]) -> tuple[tuple[str, str], ...]:
    """Each pinned name and its version (``torch==2.7.1+cu128`` -> 2.7.1+cu128)."""
    from packaging.requirements import InvalidRequirement, Requirement

    out = []
    for p in pins:
        try:
            specs = list(Requirement(p.requirement).specifier)
        except InvalidRequirement:
            continue
        out += [(_canon(p.name), specs[0].version)] if len(specs) == 1 and specs[0].operator == "==" else []
    return tuple(sorted(out))


def _conflict_tip(clash: UvClash | None, pip: Sequence[str]) -> str:
    """What to change: the [packages] pip requirement only when the project has one."""
    if pip and (clash is None or "" in clash.requirers or not set(clash.requirers) <= {n for n, _ in clash.versions}):
        return ("loosen the [packages] pip requirement or the framework range that clashes "
                "(see `envsolve explain`), then lock again")
    return ("narrow a framework's range in [frameworks] to releases that agree (see `envsolve explain`), "
            "then lock again")


def _failure(stderr: str, ask: _Ask) -> ResolveError:
    text = _trim(stderr)
    if _cache_miss(stderr, ask.offline):
        return ResolveError(f"the full resolve needs files that are not in the cache (--offline):\n  {text}",
                            tip="lock once with the network to fill the cache, or use --frameworks-only")
    if (refused := _refused(stderr, ask.default_index, ask.routed)) is not None:
        return ResolveError(refused, tip=CREDENTIALS_TIP)
    if (urls := _unreachable(stderr, ask.default_index, ask.routed)) is not None:
        return ResolveError(f"the package index {urls} cannot be reached:\n  {text}", tip=WAYS_OUT)
    clash = uv_clash(scrub(stderr), ask.pins)
    head = f": {clash.text()}" if clash is not None else ""
    return Conflict(f"the packages cannot be installed together{head}:\n  {text}",
                    tip=_conflict_tip(clash, ask.pip), clash=clash)


def _hashes(entry: Mapping[str, Any]) -> tuple[str, ...]:
    """The sha256 of every file of a pylock.toml entry: its wheels, its sdist, or the archive a
    direct reference names."""
    files = list(entry.get("wheels", [])) + [entry[k] for k in ("sdist", "archive") if k in entry]
    return tuple(sorted({f"sha256:{f['hashes']['sha256']}" for f in files if "sha256" in f.get("hashes", {})}))


def _uv_run(cmd: Sequence[str], root: Path, env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return scratch.run(cmd, cwd=root, env=env)
    except OSError as e:
        raise ResolveError(f"uv could not be run ({e})", tip="reinstall envsolve (pip install uv)") from None


class _Ask(msgspec.Struct, frozen=True, kw_only=True):
    """One full resolve's inputs, as :func:`resolve` takes them."""

    python: str
    platform: Platform
    pins: Sequence[Pin]
    pip: Sequence[str]
    default_index: str
    offline: bool
    exclude_newer: str
    upgrade: Sequence[str]

    @property
    def routed(self) -> list[str]:
        """The explicit indexes' URLs."""
        return sorted({p.index_url for p in self.pins if p.index_url})


def _command(ask: _Ask, env: Mapping[str, str]) -> list[str]:
    """uv's command line for ``ask``, run in the scratch folder."""
    cmd = uv_command(["pip", "compile", "pyproject.toml", "--generate-hashes", "--format", "pylock.toml",
                      "--python-version", ask.python,
                      "--python-platform", PYTHON_PLATFORM[ask.platform],
                      "--no-header", "--no-annotate",
                      "--quiet", "--output-file", "pylock.toml",
                      # the target is --python-version; this interpreter only builds an sdist's metadata, and
                      # uv must not try to download one (that costs seconds, and offline fails)
                      "--python", sys.executable, "--no-python-downloads"],
                     env, needed_by="the full lock",
                     tip="pip install uv (envsolve depends on it), or lock with --frameworks-only")
    cmd += ["--offline"] if ask.offline else []
    cmd += ["--exclude-newer", ask.exclude_newer] if ask.exclude_newer else []
    return cmd + [arg for name in ask.upgrade for arg in ("--upgrade-package", name)]


def _write_inputs(root: Path, ask: _Ask, prefer: Sequence[tuple[str, str]], credentials: Sequence[Credential] = ()
                  ) -> bool:
    """The private folder's pyproject.toml (a direct reference's token given back: uv fetches with
    it, and the folder goes when the run ends), and the previous versions as uv's preferences;
    whether a token was given back."""
    pip = [with_tokens(line, credentials) for line in ask.pip]
    (root / "pyproject.toml").write_text(tomli_w.dumps(_pyproject(ask.python, ask.pins, pip)), encoding="utf-8")
    if prefer:  # uv reads an existing output file as its preferences
        (root / "pylock.toml").write_text(tomli_w.dumps(
            {"lock-version": "1.0", "created-by": "envsolve",
             "packages": [{"name": n, "version": v} for n, v in sorted(prefer)]}), encoding="utf-8")
    return pip != list(ask.pip)




def _uv_compile(cmd: Sequence[str], root: Path, env: Mapping[str, str], cache_first: bool,
                detail: Callable[[str], None]) -> subprocess.CompletedProcess[str]:
    """uv's run: from its cache alone first when ``cache_first`` (and there is a cache), else (or
    when the cache cannot answer) from the indexes, with the preferences as they were."""
    out = root / "pylock.toml"
    preferences = out.read_bytes() if out.exists() else None
    uv_cache = cache_dir(env) / "uv"
    if cache_first and uv_cache.is_dir():  # an empty cache cannot answer: skip the try
        run = _uv_run([*cmd, "--offline"], root, env)
        if run.returncode == 0 and out.exists():
            detail(f"uv: answered from its cache ({uv_cache}), without the network")
            return run
        detail(f"uv: its cache ({uv_cache}) could not answer alone; reading the indexes")
        if preferences is not None:
            out.write_bytes(preferences)
    else:
        detail(f"uv: its cache alone ({uv_cache}; --offline)" if "--offline" in cmd else
               f"uv: reading the indexes (cache {uv_cache})")
    return _uv_run(cmd, root, env)


class _Told(msgspec.Struct, frozen=True, kw_only=True):
    """What a resolve says while it works, and how often it asks again an index that did not
    answer (uv's own retries are off: envsolve's, said as warnings, take their place)."""

    detail: Callable[[str], None] = silent
    warn: Callable[[str], None] = silent
    retries: int = RETRIES
    backoff: float = BACKOFF


def _why_not(stderr: str) -> str:
    """uv's last word on a request that failed (``Connection refused (os error 111)``)."""
    causes = [re.sub(r"\s*\(os error \d+\)", "", ln.strip().removeprefix("cause: ")) for ln in stderr.splitlines()
              if "cause:" in ln]
    return causes[-1] if causes else "no answer"


def _compiled(root: Path, ask: _Ask, env: Mapping[str, str], cache_first: bool, told: _Told) -> dict[str, Any]:
    """uv's pylock.toml for ``ask``; raises :class:`ResolveError` when uv fails. An index that
    cannot be reached is asked again ``told.retries`` times, each retry a warning."""
    cmd = _command(ask, env)
    for retry in range(1, told.retries + 2):
        run = _uv_compile(cmd, root, env, cache_first and not ask.offline, told.detail)
        urls = None if run.returncode == 0 or ask.offline else _unreachable(run.stderr, ask.default_index, ask.routed)
        if urls is None or retry > told.retries:
            break
        wait = told.backoff * 2 ** (retry - 1)
        told.warn(f"the package index {urls} did not answer ({_why_not(scrub(run.stderr)).lower()}); trying again in "
                  f"{wait:g} s (retry {retry} of {told.retries})")
        time.sleep(wait)
    out = root / "pylock.toml"
    if run.returncode != 0 or not out.exists():
        raise _failure(run.stderr, ask)
    data: dict[str, Any] = tomllib.loads(out.read_text(encoding="utf-8"))
    return data


def _asked(pins: Sequence[Pin], pip: Sequence[str]) -> set[str]:
    """The canonical names the environment asks for (the rest are dependencies)."""
    names = [p.name for p in pins] + [m.group(1) for line in pip if (m := _NAME.match(line))]
    return {_canon(n) for n in names}


def _packages(data: Mapping[str, Any], pins: Sequence[Pin], pip: Sequence[str], record_default: str
              ) -> tuple[Package, ...]:
    """The lock's packages of uv's pylock.toml, sorted by name; a routed name comes only from its
    explicit index, every other from the default index (recorded as ``record_default``)."""
    via = {_canon(p.name): p.index_url for p in pins if p.index_url}
    asked = _asked(pins, pip)
    names = [(_canon(str(entry["name"])), entry) for entry in data.get("packages", [])]
    return tuple(sorted((Package(name=name, version=str(entry["version"]), index_url=via.get(name, record_default),
                                 hashes=_hashes(entry), direct=name in asked) for name, entry in names),
                        key=lambda p: p.name))


def resolve(*, python: str, platform: Platform = DEFAULT_PLATFORM, pins: Sequence[Pin], pip: Sequence[str],
            default_index: str, record_default: str = "", offline: bool = False, exclude_newer: str = "",
            prefer: Sequence[tuple[str, str]] = (), upgrade: Sequence[str] = (), cache_first: bool = True,
            environ: Mapping[str, str] | None = None, detail: Callable[[str], None] = silent,
            warn: Callable[[str], None] = silent, retries: int = RETRIES, backoff: float = BACKOFF,
            credentials: Sequence[Credential] = ()) -> tuple[Package, ...]:
    """The full package list of an environment for ``python`` (``"3.12"``), sorted by name.

    ``prefer`` (name, version) are kept where they still fit (the previous lock's, as uv keeps
    those of an existing output file); ``upgrade`` names move to their newest. With
    ``cache_first`` uv resolves from its cache alone first (a second lock of the same spec needs no
    network) and reads the index only when the cache cannot answer (``detail`` says which). An
    index that cannot be reached is asked again ``retries`` times, waiting ``backoff`` seconds,
    doubled each time, each retry said through ``warn``. ``credentials`` (the logins taken out of
    the spec's URLs) reach uv as a netrc (``NETRC``) in the private scratch folder, removed with
    it; uv's messages are shown without credentials. Raises
    :class:`ResolveError` for a conflict, an unreachable index or (offline) a missing file."""
    # environ: settings over this process's; the user's uv settings do not change a lock
    env = uv_environ({**os.environ, **(environ or {})})
    env["UV_HTTP_RETRIES"] = "0"  # envsolve's retries, said, instead of uv's silent ones
    if platform in MACOS_TARGET:  # uv reads the macOS a darwin --python-platform means from here
        env["MACOSX_DEPLOYMENT_TARGET"] = MACOS_TARGET[platform]
    ask = _Ask(python=python, platform=platform, pins=pins, pip=pip, default_index=default_index, offline=offline,
               exclude_newer=exclude_newer, upgrade=upgrade)
    env |= index_environ(default_index)
    with scratch.private_folder("resolve") as tmp:  # its netrc and inputs: removed on exit and on a signal
        if (netrc := write_netrc(credentials, tmp, env)) is not None:
            env["NETRC"] = str(netrc)
        if _write_inputs(tmp, ask, prefer, credentials):  # a token in what uv fetches: none in a lasting cache
            env |= private_cache(tmp)
        data = _compiled(tmp, ask, env, cache_first,
                         _Told(detail=detail, warn=warn, retries=max(0, retries), backoff=backoff))
    return _packages(data, pins, pip, record_default)
