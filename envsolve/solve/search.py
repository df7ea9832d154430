"""The search: the frameworks' candidate lists, pruned to what can share an environment, then
the first combination in preference order (README "How envsolve decides").

The search sees the domain only through the :class:`~envsolve.provider.Provider`; a
:class:`~envsolve.solve.model.Reporter` receives every choice and rejection (``envsolve explain``).
"""

from __future__ import annotations

from typing import NoReturn

import msgspec

from ..domain import COMPANIONS, FRAMEWORKS, KERAS_BACKENDS
from ..errors import Clash, Unsatisfiable
from ..provider import Provider
from ..spec import FrameworkReq, GpuReq, ProjectSpec, Target
from ..versions import Dotted
from . import extensions
from .cache import Cache
from .candidates import candidates_shared
from .explain import why_chosen, why_none_shared
from .fit import families_text, gpu_families, gpu_text
from .model import Candidate, Reporter, Resolution
from .output import metal_note, resolution
from .together import clash, clash_with_all

__all__ = ["driver_refusal", "keras_backend", "needed", "solve", "solve_target", "try_solve_target"]


class _Search(msgspec.Struct):
    lists: dict[str, list[Candidate]]
    backend: str
    cache: Cache
    reporter: Reporter
    target: str
    clashes: dict[str, None] = msgspec.field(default_factory=dict)

    def prune(self) -> None:
        """Arc consistency: drop candidates that clash with every candidate of another list."""
        while any([self._revise(a, b) for a in self.lists for b in self.lists if a != b]):
            pass

    def _revise(self, a: str, b: str) -> bool:
        """Drop the candidates of list ``a`` that clash with every candidate of list ``b``; whether any went."""
        keep = [ca for ca in self.lists[a] if self._supported(ca, self.lists[b])]
        changed = len(keep) != len(self.lists[a])
        self.lists[a] = keep
        return changed

    def _supported(self, c: Candidate, others: list[Candidate]) -> bool:
        """Whether some candidate of ``others`` shares an environment with ``c`` (else its first
        clash is kept, and told to the reporter as why ``c`` was rejected)."""
        if any(not clash(c, o, self.backend, self.cache) for o in others):
            return True
        if others:
            why = clash_with_all(c, others, self.backend, self.cache)
            self.clashes.setdefault(why)
            self.reporter.rejected(self.target, c.label, why)
        return False

    def run(self, order: list[str]) -> list[Candidate] | None:
        """The first combination, in preference order, of one candidate per list that shares a Python."""
        chosen: list[Candidate] = []
        pythons = frozenset(p for c in self.lists.values() for x in c for p in x.pythons)
        return chosen if self._extend(order, chosen, pythons) else None

    def _extend(self, order: list[str], chosen: list[Candidate], pythons: frozenset[str]) -> bool:
        """Depth first: add the first candidate of the next list that fits ``chosen``, and go on."""
        if len(chosen) == len(order):
            return True
        for c in self.lists[order[len(chosen)]]:
            why = self._clash_with(chosen, c, pythons)
            if why:
                self.clashes.setdefault(why)
                continue
            chosen.append(c)
            if self._extend(order, chosen, pythons & c.pythons):
                return True
            chosen.pop()
        return False

    def _clash_with(self, chosen: list[Candidate], c: Candidate, pythons: frozenset[str]) -> str:
        """Why ``c`` cannot join ``chosen`` ("" when it can)."""
        why = next((w for p in chosen if (w := clash(p, c, self.backend, self.cache))), "")
        if not why and not (pythons & c.pythons):
            return f"{c.label}: no Python shared with {', '.join(p.label for p in chosen)}"
        return why


def keras_backend(spec: ProjectSpec) -> str:
    """The backend Keras runs on: as written, else the one framework present, else Keras' default."""
    req = spec.framework("keras")
    if req is None:
        return ""
    if req.backend:
        return req.backend
    present = [f for f in KERAS_BACKENDS if spec.framework(f)]
    return present[0] if present else KERAS_BACKENDS[0]


def needed(spec: ProjectSpec, cache: Cache) -> list[FrameworkReq]:
    """The frameworks to resolve: those asked for, the owners of companions, Keras' backend."""
    reqs = {f.name: f for f in spec.frameworks if f.name in FRAMEWORKS}
    implied = [COMPANIONS.get(f.name, f.name) for f in spec.frameworks] + [keras_backend(spec)]
    for name in filter(None, implied):
        reqs.setdefault(name, FrameworkReq(name=name, specifier=cache.range("*"), raw="*"))
    return [reqs[n] for n in FRAMEWORKS if n in reqs]


def solve_target(provider: Provider, spec: ProjectSpec, t: Target, reporter: Reporter | None = None,
                 cache: Cache | None = None) -> Resolution:
    """Resolve one target; raise :class:`Unsatisfiable` with the clashing facts.

    ``cache`` carries memo tables between solves over the same provider (``envsolve matrix``
    solves thousands of cells with one); without it the solve uses a fresh one."""
    got = try_solve_target(provider, spec, t, reporter, cache)
    if isinstance(got, Unsatisfiable):
        raise got.with_traceback(None)
    return got


def try_solve_target(provider: Provider, spec: ProjectSpec, t: Target, reporter: Reporter | None = None,
                     cache: Cache | None = None) -> Resolution | Unsatisfiable:
    """:func:`solve_target`, with the :class:`Unsatisfiable` returned rather than raised (a matrix
    prunes most of its cells, and each answer of a shared sub-problem is kept once)."""
    rep = reporter or Reporter()
    cache = cache if cache is not None else Cache()
    exts = extensions.asked(provider, spec)
    refused = extensions.refusal(provider, t, exts)
    if refused is not None:
        return refused
    spec = extensions.with_torch(spec, exts)
    got = _frameworks_shared(provider, cache, spec, t, rep)
    if isinstance(got, Unsatisfiable):
        return got
    found, backend = got
    if type(rep) is not Reporter:  # the plain reporter keeps nothing: say nothing to it
        for c in found:
            why = why_chosen(provider, c) + extensions.wheel_note(provider, exts, t, c) + _asked(spec, c)
            rep.chosen(t.name, c.label, why)
    return _metal_tradeoff(provider, cache, spec, t, _with_extensions(provider, cache, spec, t, found, backend, exts))


def _metal_tradeoff(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, r: Resolution) -> Resolution:
    """``r`` with a warning when Apple's Metal plugins (jax-metal, tensorflow-metal) hold a chosen
    framework back: the same spec solved for the Mac's CPU (what ``accelerator = 'cpu'`` gives)
    gets a newer release of it. Only where the spec did not choose (no ``accelerator``)."""
    held = [c for c in r.choices if c.build is not None and c.build.plugins]
    if t.accelerator or t.vendor != "apple" or not held:
        return r
    cpu = try_solve_target(provider, spec, msgspec.structs.replace(t, vendor="cpu", gpus=(), accelerator="cpu"),
                           None, cache)
    if isinstance(cpu, Unsatisfiable):
        return r
    newest = {c.package: c for c in cpu.choices}
    behind = [(c, n) for c in held
              if (n := newest.get(c.package)) is not None and n.release.version > c.release.version]
    return msgspec.structs.replace(r, warnings=(*r.warnings, metal_note(behind))) if behind else r


def _with_extensions(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, found: list[Candidate],
                     backend: str, exts: tuple[extensions.Asked, ...]) -> Resolution:
    """The resolution of ``found`` with how each extension package installs (on the devel image of
    its CUDA when one compiles)."""
    r = resolution(provider, cache, spec, t, found, backend)
    if not exts:
        return r
    pins = extensions.pins(provider, exts, t, r.choices, r.python)
    flavor = extensions.devel_flavor(spec, pins, exts)
    if flavor and t.vendor == "nvidia":
        r = resolution(provider, cache, msgspec.structs.replace(spec, flavor=flavor), t, found, backend)
    degraded = extensions.degraded(provider, exts, t, pins)
    return msgspec.structs.replace(r, extensions=pins, warnings=(*r.warnings, *degraded))


def _asked(spec: ProjectSpec, c: Candidate) -> str:
    """`` (asked by torchvision: torch >=2.6)`` when a companion's range brought the framework in."""
    req = spec.framework(c.release.package)
    return f" (asked by {req.asked_by}: {req.name} {req.raw})" if req is not None and req.asked_by else ""


def _frameworks_shared(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target,
                       rep: Reporter) -> tuple[list[Candidate], str] | Unsatisfiable:
    """:func:`_frameworks`, once per (frameworks, Python range, target, container OS) when nobody
    traces the search: cells of a matrix that differ only in image flavour share it (the OS's glibc
    decides which wheels install)."""
    if type(rep) is not Reporter:
        return _frameworks_or_why(provider, cache, spec, t, rep)
    key = (spec.python_raw, tuple((f.name, f.raw, f.backend) for f in spec.frameworks), t, spec.pip,
           provider.glibc_class(spec.os))
    table = cache.table("frameworks")
    if key not in table:
        table[key] = _frameworks_or_why(provider, cache, spec, t, rep)
    return table[key]  # type: ignore[no-any-return]


def _frameworks_or_why(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target,
                       rep: Reporter) -> tuple[list[Candidate], str] | Unsatisfiable:
    """:func:`_frameworks`, with the :class:`Unsatisfiable` returned (without its traceback)."""
    try:
        return _frameworks(provider, cache, spec, t, rep)
    except Unsatisfiable as e:
        return e.with_traceback(None)


def _frameworks(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target,
                rep: Reporter) -> tuple[list[Candidate], str]:
    """The chosen candidates (in framework order) and Keras' backend; or :class:`Unsatisfiable`."""
    if t.driver is not None:
        _check_driver(provider, t, t.driver)
    reqs = needed(spec, cache)
    backend = keras_backend(spec)
    search = _Search(lists={r.name: candidates_shared(provider, cache, spec, t, r, rep) for r in reqs},
                     backend=backend, cache=cache, reporter=rep, target=t.name)
    _check_none_empty(provider, cache, spec, t, reqs, search.lists)
    misfits = extensions.narrow(provider, extensions.asked(provider, spec), t, search.lists, rep)
    if not all(search.lists.values()):
        raise Unsatisfiable(t.name, [Clash(subject=f"{r.name} {r.raw}", reason="; ".join(misfits[:3]))
                                     for r in reqs if not search.lists[r.name]])
    return _together(t, search, [r.name for r in reqs]), backend


def _check_none_empty(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, reqs: list[FrameworkReq],
                      lists: dict[str, list[Candidate]]) -> None:
    """Raise :class:`Unsatisfiable` naming why, when a framework has no candidate that fits alone."""
    empty = [r for r in reqs if not lists[r.name]]
    if empty:
        raise Unsatisfiable(t.name, [why_none_shared(provider, cache, spec, t, r) for r in empty])


def _together(t: Target, search: _Search, order: list[str]) -> list[Candidate]:
    """The first combination of candidates that share an environment; or :class:`Unsatisfiable`
    with the first clashes met."""
    search.prune()
    found = search.run(order) if all(search.lists.values()) else None
    if found is None:
        raise Unsatisfiable(t.name, [Clash(subject="frameworks together", reason=w)
                                     for w in list(search.clashes)[:5]])
    return found


def driver_refusal(provider: Provider, t: Target) -> Unsatisfiable | None:
    """Why the target's driver cannot drive its GPUs at all, whatever the frameworks (None: it can)."""
    try:
        if t.driver is not None:
            _check_driver(provider, t, t.driver)
    except Unsatisfiable as e:
        return e.with_traceback(None)
    return None


def _check_driver(provider: Provider, t: Target, driver: Dotted) -> None:
    """Raise :class:`Unsatisfiable` when driver ``driver`` cannot drive a GPU of ``t`` at all: its
    branch dropped the GPU's generation, or it predates the GPU."""
    first = provider.wsl_cuda_branch() if t.wsl else None
    if first is not None and driver.major < first:
        raise Unsatisfiable(t.name, [Clash(
            subject=f"driver {driver}",
            reason=(f"Windows driver {driver} is older than R{first}, the first branch whose CUDA reaches WSL 2 "
                    "(NVIDIA's CUDA on WSL guide): no CUDA build runs there"))],
            [f"install an NVIDIA Windows driver of R{first} or newer on the Windows host (never a Linux driver "
             "inside WSL), and set [hardware] driver to its version"])
    dropped = provider.branch_drops(driver.major, gpu_families(t))
    if dropped:
        _refuse_dropped(provider, t, driver, dropped)
    for gpu in t.gpus:
        floor = provider.gpu_driver_floor(gpu.arch, windows=t.windows_driver)
        if floor is not None and driver < floor:
            _refuse_older(provider, t, driver, gpu, floor)


def _refuse_dropped(provider: Provider, t: Target, driver: Dotted, dropped: set[str]) -> NoReturn:
    gpus = [gpu for gpu in t.gpus if gpu.family in dropped]
    limit = provider.newest_branch_for(dropped)
    raise Unsatisfiable(t.name, [Clash(
        subject=f"driver {driver}",
        reason=(f"driver branch R{driver.major} no longer supports "
                f"{families_text(dropped)} GPUs ({', '.join(map(gpu_text, gpus))})"))],
        [f"run those GPUs on a driver of branch R{limit} or older" if limit else
         "move those GPUs to a target of their own"])


def _refuse_older(provider: Provider, t: Target, driver: Dotted, gpu: GpuReq, floor: Dotted) -> NoReturn:
    first = provider.introduced_by(gpu.arch)
    raise Unsatisfiable(t.name, [Clash(
        subject=f"driver {driver}",
        reason=(f"predates {gpu_text(gpu)}: the first driver that knows {gpu.arch.name} is "
                f"{floor} (shipped with CUDA {first.version if first else '?'})"))],
        [f"a driver >= {floor} (R{floor.major} or newer)"])


def solve(provider: Provider, spec: ProjectSpec, reporter: Reporter | None = None,
          cache: Cache | None = None) -> list[Resolution]:
    """Resolve every target of ``spec``; the first unsatisfiable target raises."""
    cache = cache if cache is not None else Cache()
    return [solve_target(provider, spec, t, reporter, cache) for t in spec.targets]
