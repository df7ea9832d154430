"""The job of `envsolve lock`, between the command line and the modules that do the work.

1. What ``[packages] pip`` asks of the frameworks and Python is read from the default index
   (:mod:`envsolve.lock.steer`, through :class:`envsolve.index.client.IndexClient` and envsolve's cache).
2. The compatibility solve, keeping the versions of the lock on disk where they still fit (and
   one version of each framework on every target where the project asks:
   :mod:`envsolve.solve.uniform`).
3. The full resolve of each environment (:mod:`envsolve.lock.resolve`, uv), unless frameworks only.

:func:`run` is the whole command: ``--check`` (a full lock by its digests, never the network; a
frameworks-only lock solved again and compared), the warning about a lock made with other data,
writing the lock, ``--render`` of the lock in memory, and whether the replay may answer the
same request next time (:mod:`envsolve.lock.replay`). Nothing here prints: lines go to the
``say`` the command line passes, artifacts to its ``render``.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import msgspec.structs

from ..domain import FLAT_INDEXES, canonical_name, driver_text, stack_text
from ..errors import CheckFailed, LockError, Problem, RefreshError, ResolveError, SpecError
from ..files import LOCK_CAP, check_output, read_text, write_all
from ..provider import Provider
from ..solve import Resolution, solve_explained
from ..solve.images import end_of_life_warnings
from ..solve.output import python_reason
from ..spec import ProjectSpec
from ..spec import digest as spec_digest
from ..tables import parse_toml
from ..voice import SILENT, Voice
from . import model as lockfile
from .options import LOCK_OPTIONS
from .replay import Request as ReplayKey
from .replay import data_version_of, request_of

if TYPE_CHECKING:  # the full lock's modules: a frameworks-only lock never imports them
    from packaging.requirements import Requirement

    from ..config import Credential
    from ..index.client import IndexClient
    from ..versions import PipRequirement
    from .asks import Steer
    from .resolve import Pin

__all__ = ["Options", "Outcome", "Request", "lock_command", "make", "stale_by_digests", "steered", "today"]

Said = Literal["out", "say", "warn"]  # the product (stdout) | what was done | a warning (stderr)
Say = Callable[[str, Said, bool], None]  # (line, what it is, to stderr)
Render = Callable[[lockfile.Lock, Path], Mapping[Path, str]]  # (the lock, its path) -> the artifacts' texts by path






class Options(msgspec.Struct, frozen=True, kw_only=True):
    """The lock command's choices."""

    frameworks_only: bool = False
    offline: bool = False
    exclude_newer: str = ""
    upgrade_packages: tuple[str, ...] = ()
    upgrade: bool = False
    same_versions: bool = False
    upgrade_images: bool = False  # read every base image's digest anew, not the lock on disk's

    @property
    def refresh(self) -> bool:
        """Read the index anew (an upgrade); else the cache answers first."""
        return self.upgrade or bool(self.upgrade_packages)


class Previous(msgspec.Struct, frozen=True, kw_only=True):
    """The versions of the lock on disk, to keep on a re-lock: environment -> name -> version."""

    frameworks: Mapping[str, Mapping[str, str]] = msgspec.field(default_factory=dict)
    packages: Mapping[str, tuple[tuple[str, str], ...]] = msgspec.field(default_factory=dict)
    warning: str = ""  # why a lock on disk was not reused


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    lock: lockfile.Lock
    resolutions: list[Resolution]
    steers: tuple[Steer, ...]
    warnings: tuple[str, ...]
    # the index could not say what [packages] pip asks (a frameworks-only lock went on without it):
    # an answer the replay must not keep, for the index may answer next time
    unsteered: bool = False


def _upgrading(name: str, upgrading: set[str]) -> bool:
    return bool(upgrading) and canonical_name(name) in upgrading


def _kept_frameworks(old: lockfile.Lock, spec: ProjectSpec, upgrading: set[str]) -> dict[str, dict[str, str]]:
    """Environment -> framework -> version of the lock on disk, for the frameworks the spec names."""
    names = {f.name for f in spec.frameworks}
    return {e.name: {p.name: p.version for p in e.frameworks if p.name in names and not _upgrading(p.name, upgrading)}
            for e in old.environments}


def _kept_packages(old: lockfile.Lock, upgrading: set[str]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Environment -> (name, version) of every package of the lock on disk."""
    return {e.name: tuple((p.name, p.version) for p in e.packages if not _upgrading(p.name, upgrading))
            for e in old.environments}


def _previous(path: Path, spec: ProjectSpec, upgrading: set[str]) -> Previous:
    """What to keep of the lock at ``path`` (nothing of the names in ``upgrading``)."""
    if not path.exists():
        return Previous()
    try:
        old = lockfile.read(path)
    except LockError as e:
        return Previous(warning=f"{path}: not reused ({e.message}); every package takes its newest version")
    return Previous(frameworks=_kept_frameworks(old, spec, upgrading), packages=_kept_packages(old, upgrading))


def stale_by_digests(out: Path, blob: bytes, provider: Provider) -> str | None:
    """``lock --check`` of the full lock at ``out`` by the spec's and data's digests: "" when it is
    up to date, else why it is stale; None when it is a frameworks-only lock (solve it again)."""
    if not out.exists():
        return f"{out} does not exist"
    try:
        old = lockfile.read(out)
    except LockError as e:
        return f"{out} cannot be used: {e.message}"
    if old.scope != "full":
        return None
    if old.spec_digest not in (spec_digest(blob), lockfile.sha256(blob)):  # by meaning; an older lock: by bytes
        return f"{out} is stale: its spec changed since it was locked"
    if old.data_digest != provider.digest:
        return (f"{out} is stale: the compatibility data changed since it was locked "
                f"({old.data_version} -> {provider.data_version})")
    return ""


def _steers(spec: ProjectSpec, provider: Provider, urls: Mapping[str, str], opts: Options,
            voice: Voice) -> tuple[Steer, ...]:
    if not spec.pip:
        return ()
    from ..config import pip_index_url

    index = urls.get("pypi", "") or pip_index_url()
    memo = _steer_memo(spec, provider, index)
    if not opts.refresh and (kept := _kept_steers(memo)) is not None:
        from ..config import public_url

        voice.detail("[packages] pip: what it asks of the frameworks, kept from an earlier read of "
                     f"{public_url(index)}")
        return kept  # the HTTP client is not even imported
    from ..index.client import IndexClient
    from ..paths import cache_dir
    from .resolve import WAYS_OUT
    from .steer import steer

    # a frameworks-only lock goes on without the asks: it does not wait for retries
    client = IndexClient(index, cache_dir=cache_dir(), offline=opts.offline, retries=0 if opts.frameworks_only else 1,
                         revalidate=opts.refresh,
                         progress=voice.progress, warn=voice.warn, credentials=spec_logins(spec))
    voice.progress(f"reading what [packages] pip asks from {client.shown_url}")
    try:
        steers = steer(spec, client, provider.pythons(), provider.releases)
        for w in client.warnings:  # a metadata file it could not read: the asks may lack its ranges
            voice.warn(w)
        if not client.warnings:
            _keep_steers(memo, steers)
        return steers
    except RefreshError as e:
        raise ResolveError(f"the [packages] pip requirements cannot be read from the index: {e.message}",
                           tip=e.tip if opts.offline else WAYS_OUT) from None
    finally:
        voice.detail(f"[packages] pip read from {client.answered()}")


# What the pip lines ask is kept for ten minutes, keyed by everything the steering reads but the
# pages (as an index's max-age keeps a page: within that time another project's `--upgrade` reading a
# page anew is not seen), and only when every page and metadata file could be read; `--upgrade`
# reads anew. Reading numpy's page and importing the HTTP client cost a frameworks-only lock of the
# bundled example 230 ms of its 330 (bench/bench_speed.py, 2 cores).
_STEER_FRESH_S = 600
_STEER_CAP = 1 << 20


def _steer_memo(spec: ProjectSpec, provider: Provider, index: str) -> tuple[str, bytes] | None:
    """(the cache file of what ``spec``'s pip lines ask of its frameworks from ``index``, the user's
    key that seals it); None when the caches are off or there is no key. Keyed by everything the
    steering reads but the index's pages."""
    import hashlib
    import os

    from .. import __version__
    from ..files import cache_key
    from ..paths import cache_folder, state_folder

    key = cache_key(state_folder()) if not os.environ.get("ENVSOLVE_NO_CACHE") else None
    if key is None:
        return None
    asked = [__version__, provider.digest, index, list(spec.pip), spec.python_raw,
             [(f.name, f.raw, f.backend) for f in spec.frameworks], sorted({t.platform for t in spec.targets})]
    digest = hashlib.sha256(json.dumps(asked).encode()).hexdigest()
    return os.path.join(cache_folder(), "steer", f"{digest}.msgpack"), key


def _kept_steers(memo: tuple[str, bytes] | None) -> tuple[Steer, ...] | None:
    """The asks kept in ``memo``'s file while fresh and sealed with its key; else None."""
    import os
    import time

    from ..files import read_cache, seal
    from .asks import Steer

    if memo is None:
        return None
    path, key = memo
    blob = read_cache(path, _STEER_CAP)
    if not blob or blob[:32] != seal(blob[32:], key):
        return None
    try:
        if time.time() - os.stat(path).st_mtime > _STEER_FRESH_S:
            return None
        return msgspec.msgpack.decode(blob[32:], type=tuple[Steer, ...])
    except (OSError, msgspec.ValidationError, msgspec.DecodeError):
        return None


def _keep_steers(memo: tuple[str, bytes] | None, steers: tuple[Steer, ...]) -> None:
    """Keep what the pip lines asked (a cache that cannot be written costs the next lock a read)."""
    import os

    from ..files import prune, seal, write_atomic

    if memo is None:
        return
    path, key = memo
    blob = msgspec.msgpack.encode(steers)
    try:
        write_atomic(path, seal(blob, key) + blob, durable=False, private=True)
    except OSError:
        return
    prune(os.path.dirname(path), ".msgpack", 64, path)


def steered(spec: ProjectSpec, provider: Provider, urls: Mapping[str, str], opts: Options, voice: Voice = SILENT
            ) -> tuple[ProjectSpec, tuple[Steer, ...] | None, list[str]]:
    """``spec`` narrowed by what its pip packages ask, those asks, and a warning for each framework
    they pull that the project does not name: the one steering step of every command that solves
    (``lock``, frameworks-only or full, ``lock --host``, ``explain``), so the same spec and index
    give the same choice everywhere. The full lock needs the index anyway, so an index that cannot
    say stops it; a frameworks-only lock and ``explain`` go on without the asks (None), and say so."""
    try:
        steers = _steers(spec, provider, urls, opts, voice)
    except ResolveError as e:
        if not opts.frameworks_only:
            raise
        return spec, None, [f"{e.message}; solving without what [packages] pip asks"]
    if not steers:
        return spec, steers, []
    from .asks import apply

    warnings = [f"{st.package} requires {name}{raw}, which [frameworks] does not name: add {name} there so "
                "that envsolve chooses its build for your GPUs" for st in steers for name, raw in st.unmanaged]
    return apply(spec, steers), steers, warnings


def _resolutions(provider: Provider, spec: ProjectSpec, keep: Previous, opts: Options) -> list[Resolution]:
    """The compatibility solve: keeping the lock on disk's versions, and one version on every
    target where asked; else the newest that fits."""
    uniform = opts.same_versions or spec.same_versions
    if not (keep.frameworks or uniform):
        return solve_explained(provider, spec)
    from ..solve.uniform import solve_preferring

    return solve_preferring(provider, spec, keep.frameworks, uniform=uniform)


def _refuse_upgrade_of_frameworks_only(opts: Options) -> None:
    from ..spec import is_name

    bad = [name for name in opts.upgrade_packages if not is_name(name) or len(name) > 200]
    if bad:
        raise SpecError([Problem("--upgrade-package", "", f"{name[:60]!r} is no package name") for name in bad],
                        tip="pass a package's name, such as -P numpy")
    if opts.frameworks_only and opts.upgrade_images:
        raise SpecError([Problem("--upgrade-images", "", "applies to the full lock; --frameworks-only records no "
                                 "image digest")], tip="leave out --frameworks-only to read the digests anew")
    if opts.offline and opts.upgrade_images:
        raise SpecError([Problem("--upgrade-images", "", "reads each base image's digest from its registry, which "
                                 "--offline forbids")], tip="leave out --offline, or --upgrade-images")
    if opts.frameworks_only and opts.refresh:
        raise SpecError([Problem("--upgrade-package" if opts.upgrade_packages else "--upgrade", "",
                                 "applies to the full lock; --frameworks-only always takes the newest that fits")])


def _kept(out: Path, spec: ProjectSpec, opts: Options, upgrading: set[str]) -> Previous:
    """What a re-lock keeps of the lock on disk (nothing with frameworks only or --upgrade)."""
    return Previous() if opts.frameworks_only or opts.upgrade else _previous(out, spec, upgrading)


def make(provider: Provider, spec: ProjectSpec, *, spec_name: str, blob: bytes, urls: Mapping[str, str],
         out: Path, opts: Options, voice: Voice = SILENT) -> Outcome:
    """The lock of ``spec`` (its bytes ``blob``), written later to ``out``, whose lock on disk
    gives the versions to keep."""
    _refuse_upgrade_of_frameworks_only(opts)
    spec, asked, warnings = steered(spec, provider, urls, opts, voice)
    steers = asked or ()
    upgrading = _canonical(opts.upgrade_packages)
    keep = _kept(out, spec, opts, upgrading)

    def build(resolutions: list[Resolution], full: Mapping[str, tuple[lockfile.Package, ...]] | None
              ) -> lockfile.Lock:
        return lockfile.build(project=spec.name, spec_name=spec_name, spec_bytes=blob,
                              data_version=provider.data_version, data_digest=provider.digest,
                              resolutions=resolutions, pip=spec.pip, conda=spec.conda, apt=spec.apt, urls=urls,
                              full=full, sdists=None if full is None else _sdists(resolutions, spec, urls, opts, voice))

    def full(frameworks: lockfile.Lock, resolved: _Resolved) -> dict[str, tuple[lockfile.Package, ...]]:
        return _full(frameworks, spec, urls, opts, keep.packages, tuple(sorted(upgrading)), voice, resolved)

    if opts.frameworks_only:
        resolutions = _resolutions(provider, spec, keep, opts)
        done = build(resolutions, None)
    else:
        resolutions, done = _settled(provider, spec, keep, opts, build, full, voice)
        done, unread = _pinned_images(done, out, opts, voice)
        warnings += unread
    return Outcome(lock=done, resolutions=resolutions, steers=steers, unsteered=asked is None,
                   warnings=(*_credential_warnings(spec), *warnings,
                             *([keep.warning] if keep.warning else []),
                             *end_of_life_warnings(provider, spec, resolutions, today())))


def today() -> datetime.date:
    """The day the end-of-life dates of the base images are compared with (``lock`` and ``explain``)."""
    return datetime.date.today()


def _pinned_images(lock: lockfile.Lock, out: Path, opts: Options, voice: Voice) -> tuple[lockfile.Lock, list[str]]:
    """The full lock with the digest of each environment's base image: the lock on disk's for the
    same image (unless ``--upgrade-images``), else read from its registry (envsolve's cache first);
    a warning naming the images whose digest could not be read (their FROM names the tag alone)."""
    from ..domain import LINUX_PLATFORMS

    images = sorted({e.base_image for e in lock.environments if e.base_image and e.platform in LINUX_PLATFORMS})
    recorded = _recorded_digests(out)
    digests = {} if opts.upgrade_images else recorded
    digests = {image: digests[image] for image in images if image in digests}
    unread = [image for image in images if image not in digests]
    if not unread:
        return lockfile.with_image_digests(lock, digests), []
    from ..index.registry import RegistryClient
    from ..paths import cache_dir

    client = RegistryClient(cache_dir=cache_dir(), offline=opts.offline, retries=1, revalidate=opts.upgrade_images,
                            warn=voice.warn)
    failed = []
    for image in unread:
        voice.progress(f"reading the digest of {image} from its registry")
        try:
            digests[image] = client.digest(image)
        except RefreshError as e:
            if image in recorded:  # --upgrade-images without the registry: the recorded digest is kept
                digests[image] = recorded[image]
                voice.warn(f"the base image digest of {image} was not read anew ({e.message}); the lock keeps the "
                           "one it recorded")
            else:
                failed.append(f"{image} ({e.message})")
    warnings = [f"the base image digest of {what} is missing from the lock: its Dockerfile's FROM names the tag alone; "
                "`envsolve lock --upgrade-images` with the registry reachable pins it" for what in failed]
    return lockfile.with_image_digests(lock, digests), warnings


def _recorded_digests(out: Path) -> dict[str, str]:
    """Base image -> the digest the lock on disk recorded for it (none when there is no lock, or
    it cannot be read)."""
    if not out.exists():
        return {}
    try:
        old = lockfile.read(out)
    except LockError:
        return {}
    return {e.base_image: e.base_image_digest for e in old.environments if e.base_image_digest}


def _canonical(names: Collection[str]) -> set[str]:
    """``names`` as PEP 503 normalises them."""
    return {canonical_name(n) for n in names}


def _credential_warnings(spec: ProjectSpec) -> list[str]:
    """:func:`envsolve.config.credential_warnings` of the spec's logins (the config module is
    imported only when there are some)."""
    if not spec.credentials:
        return []
    from ..config import credential_warnings

    return credential_warnings(spec.credentials)


# The full resolves a lock may take when uv finds its frameworks in conflict: the solver's answer,
# then the next combination it offers without the release uv named, and so on.
_TRIES = 5
# an environment's inputs to uv (Python, platform, the framework pins) -> its packages: an environment
# whose frameworks did not move is not resolved again
_Resolved = dict[tuple[object, ...], tuple[lockfile.Package, ...]]


def _settled(provider: Provider, spec: ProjectSpec, keep: Previous, opts: Options,
             build: Callable[[list[Resolution], Mapping[str, tuple[lockfile.Package, ...]] | None], lockfile.Lock],
             full: Callable[[lockfile.Lock, _Resolved], dict[str, tuple[lockfile.Package, ...]]], voice: Voice
             ) -> tuple[list[Resolution], lockfile.Lock]:
    """The compatibility solve and its full lock. When uv finds two packages that cannot install
    together and one is a framework, the next combination the solver offers without that
    framework's release (each try a warning), up to :data:`_TRIES` full resolves; else uv's
    conflict, naming the two packages and the pin that clash."""
    from .resolve import Conflict

    resolved: _Resolved = {}
    for _ in range(_TRIES - 1):
        resolutions = _resolutions(provider, spec, keep, opts)
        try:
            return resolutions, build(resolutions, full(build(resolutions, None), resolved))
        except Conflict as e:
            spec = _without(provider, spec, resolutions, e, voice)
    resolutions = _resolutions(provider, spec, keep, opts)  # the last try: its conflict is the answer
    return resolutions, build(resolutions, full(build(resolutions, None), resolved))


def _without(provider: Provider, spec: ProjectSpec, resolutions: list[Resolution], conflict: ResolveError,
             voice: Voice) -> ProjectSpec:
    """``spec`` without the release of a framework ``conflict`` names (first the one the spec leaves
    more releases to) with which the spec still solves; raises ``conflict`` when there is none."""
    from .resolve import Conflict

    clash = conflict.clash if isinstance(conflict, Conflict) else None
    named = {f for f in (_framework_of(resolutions, n) for n in clash.requirers) if f} if clash else set()
    for name, version in sorted(named, key=lambda f: _freedom(provider, spec, f[0]), reverse=True):
        narrowed = _excluding(spec, name, version)
        if clash is not None and _solves(provider, narrowed):
            voice.warn(f"{clash.text()}: the compatibility data does not say so; trying a {name} other than {version}")
            return narrowed
    raise conflict


def _solves(provider: Provider, spec: ProjectSpec) -> bool:
    from ..errors import Unsatisfiable

    try:
        solve_explained(provider, spec)
    except Unsatisfiable:
        return False
    return True


def _framework_of(resolutions: list[Resolution], dist: str) -> tuple[str, str] | None:
    """The framework (and its release) whose pin installs the distribution ``dist``, if one does."""
    from ..domain import COMPANIONS_OF

    for r in resolutions:
        for c in r.choices:
            dists = [c.build.dist] if c.build and c.build.dist else []
            names = {c.package, *COMPANIONS_OF.get(c.package, ()), *dists}
            if dist in _canonical(names):
                return c.package, c.release.raw
    return None


def _freedom(provider: Provider, spec: ProjectSpec, framework: str) -> tuple[int, int]:
    """How many releases the spec leaves ``framework`` (then the later framework first): the one to move."""
    from ..domain import FRAMEWORKS

    req = spec.framework(framework)
    count = sum(1 for r in provider.releases(framework) if req is None or req.specifier.contains(r.version, True))
    return count, FRAMEWORKS.index(framework) if framework in FRAMEWORKS else 0


def _excluding(spec: ProjectSpec, framework: str, version: str) -> ProjectSpec:
    """``spec`` with ``framework``'s range narrowed by ``!=version`` (added when the spec only implies it)."""
    from packaging.specifiers import SpecifierSet

    from ..spec import FrameworkReq
    from ..versions import admits_any

    req = spec.framework(framework) or FrameworkReq(name=framework, specifier=SpecifierSet(), raw="*")
    raw = f"!={version}" if admits_any(req.raw) else f"{req.raw},!={version}"
    narrowed = msgspec.structs.replace(req, specifier=SpecifierSet(raw), raw=raw)
    others = tuple(f for f in spec.frameworks if f.name != framework)
    return msgspec.structs.replace(spec, frameworks=(*others, narrowed))


def _full(frameworks: lockfile.Lock, spec: ProjectSpec, urls: Mapping[str, str], opts: Options,
          keep: Mapping[str, tuple[tuple[str, str], ...]], upgrade: tuple[str, ...], voice: Voice,
          resolved: _Resolved) -> dict[str, tuple[lockfile.Package, ...]]:
    """Every package of every environment (uv's full resolve), by environment name; ``resolved``
    keeps each environment's answer by its inputs; the logins taken out of the spec's URLs reach uv
    as a netrc (see envsolve.config)."""
    from ..config import pip_index_url
    from ..solve.extensions import resolvable_lines
    from .resolve import resolve

    pip, credentials = spec.pip, spec_logins(spec)
    named_default = urls.get("pypi", "")
    default_index = named_default or pip_index_url()
    envs = frameworks.environments
    full = {}
    for i, env in enumerate(envs, 1):
        env_pip = resolvable_lines(pip, env.extensions)
        key = (env.name, env.python, env.platform, tuple(_pins(env)), env_pip)
        if key not in resolved:
            voice.progress(f"resolving environment {env.name} with uv ({i} of {len(envs)})")
            resolved[key] = resolve(python=env.python, platform=env.platform, pins=_pins(env), pip=env_pip,
                                    default_index=default_index, record_default=named_default,
                                    offline=opts.offline, exclude_newer=opts.exclude_newer,
                                    prefer=keep.get(env.name, ()), upgrade=upgrade, cache_first=not opts.refresh,
                                    detail=voice.detail, warn=voice.warn,
                                    credentials=credentials)
        full[env.name] = resolved[key]
    return full


def _sdists(resolutions: Sequence[Resolution], spec: ProjectSpec, urls: Mapping[str, str], opts: Options,
            voice: Voice) -> dict[tuple[str, str], tuple[str, str]]:
    """(name, version) -> the URL and sha256 of the sdist of each package the image builds from
    source, read from the default index's page of it (a build from a git URL has no sdist)."""
    wanted = sorted({(x.name, x.version) for r in resolutions for x in r.extensions
                     if x.install == "source" and not x.build_from})
    if not wanted:
        return {}
    from ..config import pip_index_url
    from ..index.client import IndexClient
    from ..paths import cache_dir

    index = urls.get("pypi", "") or pip_index_url()
    client = IndexClient(index, cache_dir=cache_dir(), offline=opts.offline, retries=1, revalidate=opts.refresh,
                         progress=voice.progress, warn=voice.warn, credentials=spec_logins(spec))
    return {(name, version): _sdist(client, name, version) for name, version in wanted}


_SHA256 = re.compile(r"[0-9a-f]{64}")


def _sdist(client: IndexClient, name: str, version: str) -> tuple[str, str]:
    """The URL and sha256 of ``name``'s sdist of ``version`` on ``client``'s index (a .tar.gz first);
    :class:`ResolveError` when the index has none with a sha256."""
    from packaging.version import Version

    from ..config import strip_credentials
    from ..index.pages import file_version
    from .resolve import WAYS_OUT

    try:
        files = client.project(name)
    except RefreshError as e:
        raise ResolveError(f"the sdist of {name} {version}, which the image builds from source, cannot be read from "
                           f"the index: {e.message}", tip=e.tip or WAYS_OUT) from None
    found = sorted((f for f in files if f.filename.endswith((".tar.gz", ".zip")) and not f.yanked
                    and _SHA256.fullmatch(f.sha256) and file_version(f.filename) == Version(version)),
                   key=lambda f: (not f.filename.endswith(".tar.gz"), f.filename))
    if not found:
        raise ResolveError(f"{name} {version} is built from source in the image, but the index at {client.shown_url} "
                           "has no sdist of it with a sha256, so the full lock cannot hash it",
                           tip=f"lock with --frameworks-only (its build is then not hashed), or pin a release of "
                               f"{name} whose sdist the index has")
    return strip_credentials(found[0].url)[0], f"sha256:{found[0].sha256}"


def spec_logins(spec: ProjectSpec) -> tuple[Credential, ...]:
    """The logins taken out of the spec's URLs and of ``ENVSOLVE_INDEX_<NAME>``: what uv and
    envsolve's own index client get (neither lock nor file holds them)."""
    from ..config import index_credentials

    return (*spec.credentials, *index_credentials(dict(spec.indexes), spec_path=spec.path))


def _pins(env: lockfile.Environment) -> list[Pin]:
    """The frameworks as uv takes them: each of a non-default index routed to its URL alone."""
    from .resolve import Pin

    return [Pin(name=p.name, requirement=p.requirement, index_url=p.index_url if p.index != "pypi" else "",
                flat=p.index in FLAT_INDEXES) for p in env.frameworks]


# ---------------------------------------------------------------------------- the command


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """What `envsolve lock` was asked: the spec and the options of
    :data:`~envsolve.lock.options.LOCK_OPTIONS`."""

    spec_path: Path
    output: Path | None = None
    fmt: Literal["toml", "json"] = "toml"
    check: bool = False
    render: bool = False
    host: bool = False
    options: Options = msgspec.field(default_factory=Options)
    replay_key: ReplayKey = ()  # the request as the replay reads it from argv (see :func:`.replay.request_of`)
    # the replay can answer this request next time: no option it does not read was given
    replayable: bool = False

    @classmethod
    def of(cls, spec_path: Path, chosen: Mapping[str, Any], *, typed: Collection[str] = ()) -> Request:
        """The request of the command line's values (by the options' ``dest``); ``typed`` names the
        options given on the command line itself (not by an environment variable or a default)."""
        opts = Options(**{name: chosen[name] for name in Options.__struct_fields__})
        return cls(spec_path=spec_path, output=chosen["output"], fmt=chosen["fmt"], check=chosen["check"],
                   render=chosen["then_render"], host=chosen["host"], options=opts,
                   replay_key=request_of(str(spec_path), {dest: chosen[dest] for dest in typed}),
                   replayable=all(o.replayed or not chosen[o.dest] for o in LOCK_OPTIONS))

    @property
    def out(self) -> Path:
        """Where the lock goes: ``-o``, else envsolve.lock beside the spec."""
        return self.output or self.spec_path.parent / "envsolve.lock"

    @property
    def stale_tip(self) -> str:
        return f"run `envsolve lock {self.spec_path}` and commit the result"


class _Output(msgspec.Struct):
    """The command's lines, as they are said; with ``--format json`` the summary goes to stderr
    (stdout stays pure JSON)."""

    say: Say
    json: bool
    said: list[tuple[bool, str]] = msgspec.field(default_factory=list)

    def _line(self, text: str, kind: Said, err: bool) -> None:
        self.said.append((err, text))
        self.say(text, kind, err)

    def product(self, text: str) -> None:
        """The lock itself (``--format json``), on stdout."""
        self._line(text, "out", False)

    def line(self, text: str) -> None:
        """What was done, on stdout."""
        self._line(text, "say", False)

    def summary(self, text: str) -> None:
        """What was written and chosen: stderr with ``--format json``, else stdout."""
        self._line(text, "say", self.json)

    def warning(self, text: str) -> None:
        self._line(text, "warn", True)


def _stale_data_warning(out: Path, installed: str) -> str:
    """A warning when the lock on disk was made with other data than the installed matrices."""
    try:
        old = data_version_of(read_text(out, LOCK_CAP))
    except OSError:
        return ""
    if not old or old == installed:
        return ""
    if old < installed:
        return (f"WARNING: {out} was made with data {old}; the installed data is {installed}, "
                "so the lock may change (see `envsolve data`).")
    return (f"WARNING: {out} was made with newer data ({old}) than this envsolve has ({installed}); "
            "upgrade envsolve or pass --matrices.")


def _up_to_date_by_digests(request: Request, blob: bytes, provider: Provider, output: _Output) -> bool:
    """``--check`` of a full lock, by its digests: True when it is up to date; raises
    :class:`CheckFailed` when stale; False for a frameworks-only lock (solve it again)."""
    verdict = stale_by_digests(request.out, blob, provider)
    if verdict:
        raise CheckFailed(verdict, tip=request.stale_tip)
    if verdict == "":
        output.line(f"{request.out} is up to date (spec and data digests match)")
    return verdict == ""


def _check_text(request: Request, text: str, output: _Output) -> None:
    """``--check`` of a frameworks-only lock: the lock on disk is exactly what a solve gives now."""
    try:
        current: str | None = read_text(request.out, LOCK_CAP)
    except OSError:
        current = None
    if current != text:
        why = "does not exist" if current is None else "is not what the spec and data give now"
        raise CheckFailed(f"{request.out} {why}", tip=request.stale_tip)
    output.line(f"{request.out} is up to date")


def _stack(r: Resolution) -> str:
    """A resolution's stack in a few words: CUDA and driver, ROCm, else XPU, MPS or CPU."""
    if r.cuda:
        return f"CUDA {r.cuda}, {driver_text(r.driver_min, r.jetpack)} ({r.compat})"
    if r.rocm:
        return f"ROCm {r.rocm}"
    return stack_text(r.accelerator)


def _summarise(done: Outcome, python_asked: str, out: Path, fmt: str, output: _Output) -> None:
    """The JSON structure (with ``--format json``) and what was written, per target: its Python
    and why (``python_asked``: the spec's ``[project] python``), its stack and frameworks."""
    if fmt == "json":
        output.product(json.dumps(done.lock.to_dict(), indent=2, sort_keys=False))
    output.summary(f"wrote {out}")
    for note in (n for st in done.steers for n in st.notes()):
        output.summary(f"  [packages] pip: {note}")
    bounded_by = [st.package for st in done.steers if st.pythons]
    for r in done.resolutions:
        pkgs = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in r.packages) or "no frameworks"
        why = python_reason(r, python_asked, bounded_by)
        output.summary(f"  {r.target.name}: Python {r.python} ({why}), {_stack(r)}: {pkgs}")


def _warn(stale: str, index_warnings: Sequence[str], done: Outcome, output: _Output) -> None:
    if stale:
        output.warning(stale)
    for w in (*index_warnings, *done.warnings):
        output.warning(f"WARNING: {w}")
    for r in done.resolutions:
        for w in r.warnings:
            output.warning(f"WARNING: {r.target.name}: {w}")


def _say_indexes(urls: Mapping[str, str], detail: Callable[[str], None]) -> None:
    """``-v``: the index of each name the full lock reads (credentials dropped) and envsolve's cache."""
    from ..config import pip_index_url, strip_credentials
    from ..paths import cache_dir

    for name, url in sorted(urls.items()):
        detail(f"index {name}: {url}")
    if "pypi" not in urls:
        detail(f"index pypi (the default): {strip_credentials(pip_index_url())[0] or 'none configured'} "
               "(pip's configuration; the lock records pip's own, whatever it is at install time)")
    detail(f"cache: {cache_dir()}")


def _refuse_empty(spec: ProjectSpec, request: Request, blob: bytes) -> None:
    """A spec without a [frameworks] or a [packages] table is a mistake (an empty or truncated
    file): refused, so that it never replaces a lock with an empty one. A spec whose tables are
    there and empty (what `envsolve init` writes, what `envsolve remove` leaves) locks its Python alone."""
    if spec.frameworks or spec.pip or spec.conda or spec.apt:
        return
    data = parse_toml(blob.decode("utf-8-sig"))  # the spec parsed it already: it is TOML
    if "frameworks" not in data and "packages" not in data:
        raise SpecError([Problem(str(request.spec_path), "", "names no [frameworks] and no [packages]: there is "
                                 "nothing to lock")],
                        tip="add what the project needs: `envsolve add torch` (or [frameworks] torch = '>=2.4')")


def _refuse_bad_date(opts: Options) -> None:
    """``--exclude-newer`` is a date or an RFC 3339 time (as uv reads it), in either mode."""
    import datetime

    try:
        if opts.exclude_newer:
            datetime.datetime.fromisoformat(opts.exclude_newer)
    except ValueError:
        raise SpecError([Problem("--exclude-newer", opts.exclude_newer, "is not a date or an RFC 3339 time")],
                        tip="write e.g. --exclude-newer 2025-06-01 or 2025-06-01T00:00:00Z") from None


def _pinned(item: str) -> Requirement | PipRequirement | None:
    """The requirement ``item`` when it bounds a version (no marker, no URL), else None."""
    from ..versions import parse_requirement

    req = parse_requirement(item)
    return req if req.specifier and not req.marker and not req.url else None


def _contradiction(item: str, spec: ProjectSpec, provider: Provider) -> str | None:
    """Why the ``[packages] pip`` requirement ``item`` contradicts ``[frameworks]``: no release of
    the data that the framework's range admits (some) meets it. None when it does not."""
    req = _pinned(item)
    fw = spec.framework(canonical_name(req.name)) if req is not None else None
    if req is None or fw is None:
        return None
    releases = provider.releases(fw.name)
    versions = sorted(r.version for r in releases if fw.specifier.contains(r.version, prereleases=True))
    if not versions or any(req.specifier.contains(v, prereleases=True) for v in versions):
        return None
    return (f"[packages] pip {item!r} contradicts [frameworks] {fw.name} = {fw.raw!r} (the {fw.name} releases it "
            f"admits: {', '.join(str(v) for v in versions[-5:])})")


def contradictions(spec: ProjectSpec, provider: Provider) -> list[str]:
    """Each ``[packages] pip`` requirement of a framework ``[frameworks]`` names that no release of
    the data admits together with the ``[frameworks]`` range."""
    return [why for item in spec.pip if (why := _contradiction(item, spec, provider)) is not None]


def _refuse_contradictions(spec: ProjectSpec, provider: Provider) -> None:
    if found := contradictions(spec, provider):
        raise CheckFailed("; ".join(found), tip="drop the framework from [packages] pip (its version belongs in "
                                                "[frameworks], where envsolve chooses its build), or change the range")


def _refuse_bad_request(spec: ProjectSpec, request: Request, provider: Provider, blob: bytes) -> None:
    """What `envsolve lock` refuses before any work: an output that cannot take a lock (a device,
    a FIFO, a folder, a missing folder), a spec asking for nothing, a date uv cannot read, pip
    requirements that contradict [frameworks]."""
    if not request.check:
        check_output(request.out, "-o")
    _refuse_empty(spec, request, blob)
    _refuse_bad_date(request.options)
    _refuse_contradictions(spec, provider)


def _write(request: Request, done: Outcome, text: str, render: Render) -> Mapping[Path, str]:
    """The lock and, with ``--render``, its artifacts (rendered in memory first), written together
    or not at all; the artifacts' texts by path."""
    artifacts = render(done.lock, request.out) if request.render else {}
    write_all({request.out: text, **artifacts}, tip="choose another path with -o, or fix the folder's permissions")
    return artifacts


def lock_command(provider: Provider, spec: ProjectSpec, blob: bytes, request: Request, *, say: Say,
                 render: Render, voice: Voice = SILENT) -> None:
    """`envsolve lock` of ``spec`` (its bytes ``blob``; already for this host with ``--host``)."""
    from ..config import index_urls
    from .replay import store

    _refuse_bad_request(spec, request, provider, blob)
    output = _Output(say=say, json=request.fmt == "json")
    urls, index_warnings = index_urls(dict(spec.indexes), spec_path=str(request.spec_path))
    if request.check and _up_to_date_by_digests(request, blob, provider, output):
        return
    opts = msgspec.structs.replace(request.options, frameworks_only=True) if request.check else request.options
    if not opts.frameworks_only:
        _say_indexes(urls, voice.detail)
    done = make(provider, spec, spec_name=request.spec_path.name, blob=blob, urls=urls, out=request.out, opts=opts,
                voice=voice)
    text = lockfile.dumps(done.lock)
    stale = _stale_data_warning(request.out, provider.data_version)
    _warn(stale, index_warnings, done, output)
    if request.check:
        return _check_text(request, text, output)
    artifacts = _write(request, done, text, render)
    _summarise(done, spec.python_raw, request.out, request.fmt, output)
    for path in artifacts:
        output.summary(f"wrote {path}")
    if request.replayable and not stale and not done.unsteered:
        store(request.replay_key, text, provider.data_version, output.said)
        voice.detail("kept for the lock replay: `envsolve lock` with these same inputs writes this lock again "
                     "without solving (ENVSOLVE_NO_CACHE=1 turns it off)")
