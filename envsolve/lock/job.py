"""The job of `envsolve lock`, between the command line and the modules that do the work.

1. What ``[packages] pip`` asks of the frameworks and Python is read from the default index
   (:mod:`envsolve.steer`, through :class:`envsolve.index.client.IndexClient` and envsolve's cache).
2. The compatibility solve, keeping the versions of the lock on disk where they still fit (and
   one version of each framework on every target where the project asks:
   :mod:`envsolve.solve.uniform`).
3. The full resolve of each environment (:mod:`envsolve.resolve`, uv), unless frameworks only.

``lock --check`` of a full lock compares digests (:func:`check_digests`): never the network.
Nothing here prints; warnings come back in :class:`Outcome`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import canonicalize_name

from ..errors import LockError, Problem, RefreshError, ResolveError, SpecError
from ..provider import Provider
from ..solve import Resolution, solve_explained
from ..spec import ProjectSpec
from . import model as lockfile
from .steer import Steer

__all__ = ["Options", "Outcome", "Previous", "check_digests", "make", "previous"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Options:
    """The lock command's choices."""

    frameworks_only: bool = False
    offline: bool = False
    exclude_newer: str = ""
    upgrade_packages: tuple[str, ...] = ()
    upgrade: bool = False
    same_versions: bool = False

    @property
    def refresh(self) -> bool:
        """Read the index anew (an upgrade); else the cache answers first."""
        return self.upgrade or bool(self.upgrade_packages)


@dataclass(frozen=True, kw_only=True, slots=True)
class Previous:
    """The versions of the lock on disk, to keep on a re-lock: environment -> name -> version."""

    frameworks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    packages: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    warning: str = ""  # why a lock on disk was not reused


@dataclass(frozen=True, kw_only=True, slots=True)
class Outcome:
    lock: lockfile.Lock
    resolutions: list[Resolution]
    steers: tuple[Steer, ...]
    warnings: tuple[str, ...]


def previous(path: Path, spec: ProjectSpec, upgrading: set[str]) -> Previous:
    """What to keep of the lock at ``path`` (nothing of the names in ``upgrading``)."""
    if not path.exists():
        return Previous()
    try:
        old = lockfile.read(path)
    except LockError as e:
        return Previous(warning=f"{path}: not reused ({e.message}); every package takes its newest version")
    names = {f.name for f in spec.frameworks}
    frameworks = {e.name: {p.name: p.version for p in e.frameworks
                           if p.name in names and str(canonicalize_name(p.name)) not in upgrading}
                  for e in old.environments}
    packages = {e.name: tuple((p.name, p.version) for p in e.packages
                              if str(canonicalize_name(p.name)) not in upgrading) for e in old.environments}
    return Previous(frameworks=frameworks, packages=packages)


def check_digests(out: Path, blob: bytes, graph: Provider) -> str | None:
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
    if old.spec_digest != lockfile.sha256(blob):
        return f"{out} is stale: its spec changed since it was locked"
    if old.data_digest != graph.digest:
        return (f"{out} is stale: the compatibility data changed since it was locked "
                f"({old.data_version} -> {graph.data_version})")
    return ""


def _steers(spec: ProjectSpec, graph: Provider, urls: Mapping[str, str], opts: Options) -> tuple[Steer, ...]:
    if not spec.pip:
        return ()
    from ..config import pip_index_url
    from ..index.client import IndexClient
    from ..paths import cache_dir
    from .resolve import WAYS_OUT
    from .steer import steer

    index = urls.get("pypi", "") or pip_index_url()
    client = IndexClient(index, cache_dir=cache_dir(), offline=opts.offline, retries=1, revalidate=opts.refresh)
    try:
        return steer(spec, client, graph.pythons(), graph.releases)
    except RefreshError as e:
        raise ResolveError(f"the [packages] pip requirements cannot be read from the index: {e.message}",
                           tip=e.tip if opts.offline else WAYS_OUT) from None


def steered(spec: ProjectSpec, graph: Provider, urls: Mapping[str, str], opts: Options
            ) -> tuple[ProjectSpec, tuple[Steer, ...], list[str]]:
    """``spec`` narrowed by what its pip packages ask (none with frameworks only), those asks, and
    a warning for each framework they pull that the project does not name."""
    from .steer import apply

    steers = () if opts.frameworks_only else _steers(spec, graph, urls, opts)
    warnings = [f"{st.package} requires {name}{raw}, which [frameworks] does not name: add {name} there so "
                "that envsolve chooses its build for your GPUs" for st in steers for name, raw in st.unmanaged]
    return (apply(spec, steers) if steers else spec), steers, warnings


def make(graph: Provider, spec: ProjectSpec, *, spec_name: str, blob: bytes, urls: Mapping[str, str],
         out: Path, opts: Options) -> Outcome:
    """The lock of ``spec`` (its bytes ``blob``), written later to ``out``, whose lock on disk
    gives the versions to keep."""
    if opts.frameworks_only and opts.refresh:
        raise SpecError([Problem("--upgrade-package" if opts.upgrade_packages else "--upgrade", "",
                                 "applies to the full lock; --frameworks-only always takes the newest that fits")])
    spec, steers, warnings = steered(spec, graph, urls, opts)
    upgrading = {str(canonicalize_name(n)) for n in opts.upgrade_packages}
    keep = Previous() if opts.frameworks_only or opts.upgrade else previous(out, spec, upgrading)
    if keep.warning:
        warnings.append(keep.warning)
    uniform = opts.same_versions or spec.same_versions
    if keep.frameworks or uniform:
        from ..solve.uniform import solve_preferring

        resolutions = solve_preferring(graph, spec, keep.frameworks, uniform=uniform)
    else:
        resolutions = solve_explained(graph, spec)

    def build(full: Mapping[str, tuple[lockfile.Package, ...]] | None) -> lockfile.Lock:
        return lockfile.build(project=spec.name, spec_name=spec_name, spec_bytes=blob,
                              data_version=graph.data_version, data_digest=graph.digest, resolutions=resolutions,
                              pip=spec.pip, conda=spec.conda, apt=spec.apt, urls=urls, full=full)

    frameworks = build(None)
    if opts.frameworks_only:
        return Outcome(lock=frameworks, resolutions=resolutions, steers=steers, warnings=tuple(warnings))
    return Outcome(lock=build(_full(frameworks, spec.pip, urls, opts, keep.packages, tuple(sorted(upgrading)))),
                   resolutions=resolutions, steers=steers, warnings=tuple(warnings))


def _full(frameworks: lockfile.Lock, pip: tuple[str, ...], urls: Mapping[str, str], opts: Options,
          keep: Mapping[str, tuple[tuple[str, str], ...]], upgrade: tuple[str, ...]
          ) -> dict[str, tuple[lockfile.Package, ...]]:
    """Every package of every environment (uv's full resolve), by environment name."""
    from ..config import pip_index_url
    from .resolve import Pin, resolve

    named_default = urls.get("pypi", "")
    default_index = named_default or pip_index_url()
    full = {}
    for env in frameworks.environments:
        pins = [Pin(name=p.name, requirement=p.requirement, index_url=p.index_url if p.index != "pypi" else "")
                for p in env.frameworks]
        got = resolve(python=env.python, platform=env.platform, pins=pins, pip=pip, default_index=default_index,
                      record_default=named_default, offline=opts.offline, exclude_newer=opts.exclude_newer,
                      prefer=keep.get(env.name, ()), upgrade=upgrade, cache_first=not opts.refresh)
        full[env.name] = tuple(lockfile.Package(name=r.name, version=r.version, index_url=r.index_url,
                                                hashes=r.hashes, direct=r.direct) for r in got)
    return full
