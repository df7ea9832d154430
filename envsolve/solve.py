"""Pure solver: (spec, graph) -> one :class:`Resolution` per target, or :class:`Unsatisfiable`.

Rules (README "How envsolve chooses" documents the preference order):

* A build serves a GPU when it carries SASS for the GPU's major at a minor at or below the
  GPU's, or PTX at or below it; PTX counts only when the driver runs the build's CUDA natively
  and that CUDA release knows the GPU. Every GPU of a target must be served by the same build.
* The driver runs the build's CUDA natively, or by minor-version compatibility within the
  major (never for PTX). A driver branch that dropped a GPU's generation cannot serve it.
* Frameworks in one environment share a Python and a CUDA major and agree on bundled pins.

The search sees the domain only through :class:`~envsolve.graph.CompatGraph`; a
:class:`Reporter` receives every choice and rejection (``envsolve explain``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from .errors import Clash, Unsatisfiable
from .graph import CompatGraph, arch
from .matrix import Build, Gpu, Image, Release
from .spec import COMPANIONS, FrameworkReq, GpuReq, ProjectSpec, Target
from .versions import Dotted, parse_python_minor

__all__ = ["Candidate", "PackagePin", "Reporter", "Resolution", "solve", "solve_target"]

ORDER = ("torch", "tensorflow", "jax", "keras")
ACCELERATOR = {"nvidia": "cuda", "amd": "rocm", "cpu": "cpu"}
KERAS_DEFAULT_BACKENDS = ("tensorflow", "jax", "torch")  # Keras' own default comes first


class Reporter:
    """Receives the search's decisions; the base class ignores them."""

    def chosen(self, target: str, subject: str, reason: str) -> None:
        """A candidate was chosen."""

    def rejected(self, target: str, subject: str, reason: str) -> None:
        """A candidate was ruled out."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """A release and build of one framework that fits the target on its own."""

    release: Release
    build: Build | None  # None for keras (pure Python)
    pythons: frozenset[str]
    compat: str = ""  # native | minor-version ("" off NVIDIA)
    driver_min: Dotted | None = None

    @property
    def package(self) -> str:
        return self.release.package

    @property
    def label(self) -> str:
        v = f"{self.release.package} {self.release.raw}"
        return f"{v} ({self.build.variant})" if self.build else v

    @property
    def pins(self) -> tuple[tuple[str, str], ...]:
        return self.build.pins if self.build else ()


@dataclass(frozen=True, kw_only=True, slots=True)
class PackagePin:
    name: str
    version: str
    variant: str
    index: str
    index_path: str = ""
    extra: str = ""
    conda: tuple[str, ...] = ()  # conda-forge MatchSpecs of the same build, when conda-forge has it
    pins: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolution:
    target: Target
    accelerator: str
    python: str
    cuda: str
    rocm: str
    cudnn: str
    driver_min: str
    compat: str
    gpu_archs: tuple[str, ...]
    gpus: tuple[str, ...]
    base_image: str
    keras_backend: str
    packages: tuple[PackagePin, ...]
    models: tuple[Gpu, ...] = ()  # the GPU models' records (aliases, peak TFLOP/s)
    tools: tuple[tuple[str, str], ...] = ()  # tools the images install, name -> version
    warnings: tuple[str, ...] = ()
    choices: tuple[Candidate, ...] = field(default=(), compare=False)


# ----------------------------------------------------------------------------- fit


@dataclass(frozen=True, slots=True)
class No:
    """Why a build does not fit: a code the explanations group by, and the text."""

    code: str  # accelerator | pin | arch | arch-cuda | cudnn | driver | python | companion
    text: str
    needs: str = ""  # for arch-cuda: the CUDA major.minor the GPU needs


def _gpu(g: GpuReq) -> str:
    return f"{g.name} ({g.arch.name})" if g.name != g.arch.name else g.arch.name


def _archs_text(b: Build) -> str:
    sass = ", ".join(b.archs) or "none"
    return f"{sass}" + (f"; PTX {', '.join(b.ptx)}" if b.ptx else "")


def gpu_driver_floor(g: CompatGraph, gpu: GpuReq) -> Dotted | None:
    """The oldest driver that knows ``gpu``: the floor of the first CUDA toolkit targeting it."""
    first = g.introduced_by(gpu.arch)
    return first.driver_min if first else None


def _fit_nvidia(g: CompatGraph, b: Build, t: Target) -> tuple[str, Dotted | None, No | None]:
    """(compat, driver_min, None) when ``b`` serves ``t``; else ("", None, why)."""
    if b.cuda is None:  # the loader refuses CUDA builds without a CUDA version
        return "", None, No("accelerator", f"{b.variant} names no CUDA version")
    if t.cuda is not None and b.cuda.prefix(2)[: len(t.cuda.key[:2])] != t.cuda.key[:2]:
        return "", None, No("pin", f"built for CUDA {b.cuda}, not the pinned CUDA {t.cuda}")
    native = g.native_driver_min(b.cuda)
    if native is None:
        return "", None, No("driver", f"CUDA {b.cuda} is not in matrices/cuda.toml, so its driver needs are unknown")
    major = g.cuda_major(b.cuda.major)
    floor = major.minor_compat_driver_min if major else None
    if b.driver_min is not None:
        native = max(native, b.driver_min)
        floor = max(floor, b.driver_min) if floor else None
    ptx_only: list[GpuReq] = []
    for gpu in t.gpus:
        if any(arch(a).sass_runs_on(gpu.arch) for a in b.archs):
            continue
        ptx = any(arch(p).ptx_jits_to(gpu.arch) for p in b.ptx)
        if not g.toolkit_knows(b.cuda, gpu.arch):
            first, last = g.first_toolkit_for(gpu.arch), g.last_toolkit_for(gpu.arch)
            if first is None or last is None:
                return "", None, No("arch", f"no CUDA release in the data targets {_gpu(gpu)}")
            if last.version < b.cuda:
                return "", None, No("arch", f"no kernels for {_gpu(gpu)}: CUDA {b.cuda} no longer targets "
                                    f"{gpu.arch.name} (the last CUDA that does is {last.version})")
            need = "{}.{}".format(*first.version.prefix(2))
            return "", None, No("arch-cuda", f"no kernels for {_gpu(gpu)}: {gpu.arch.name} needs CUDA >= {need}, "
                                f"and this build is CUDA {b.cuda} (compiled for {_archs_text(b)})", need)
        if not ptx:
            return "", None, No("arch", f"no kernels for {_gpu(gpu)}: compiled for {_archs_text(b)}, "
                                f"none of which runs on {gpu.arch.name}")
        ptx_only.append(gpu)
    if b.cudnn:
        row = g.cudnn_row(b.cudnn, b.cuda.major)
        for gpu in t.gpus:
            if row and not any(arch(a).sass_runs_on(gpu.arch) or (gpu in ptx_only and arch(a).ptx_jits_to(gpu.arch))
                               for a in row.archs):
                return "", None, No("cudnn", f"its cuDNN {b.cudnn} does not support {_gpu(gpu)} "
                                    f"(cuDNN {row.version} for CUDA {row.cuda_major} supports {', '.join(row.archs)})")
    gpu_floor = max((f for x in t.gpus if (f := gpu_driver_floor(g, x))), default=None)
    if gpu_floor is not None:
        native = max(native, gpu_floor)
        floor = max(floor, gpu_floor) if floor else None
    families = {gpu.family for gpu in t.gpus}
    ptx_note = (f" ({', '.join(_gpu(x) for x in ptx_only)} runs only through PTX JIT, which needs native support)"
                if ptx_only else "")
    if t.driver is not None:
        if t.driver >= native:
            return "native", native, None
        if floor is not None and t.driver >= floor and not ptx_only:
            return "minor-version", floor, None
        if floor is not None and t.driver >= floor:
            return "", None, No("driver", f"driver {t.driver} runs CUDA {b.cuda} only by minor-version "
                                f"compatibility; needs >= {native}{ptx_note}")
        alt = (f" (or >= {floor} by minor-version compatibility)"
               if floor is not None and floor < native and not ptx_only else "")
        return "", None, No("driver", f"driver {t.driver} is too old for CUDA {b.cuda}: needs >= {native}{alt}")
    limit = g.newest_branch_for(families)
    if limit is None or native.major <= limit:
        return "native", native, None
    if floor is not None and floor.major <= limit and not ptx_only:
        return "minor-version", floor, None
    fam = ", ".join(sorted(f.capitalize() for f in families))
    return "", None, No("driver", f"{fam} GPUs are supported by drivers up to R{limit}, which cannot run "
                        f"CUDA {b.cuda} (needs >= {native}){ptx_note}")


def _fit_amd(g: CompatGraph, b: Build, t: Target) -> No | None:
    if b.rocm is None:  # the loader refuses ROCm builds without a ROCm version
        return No("accelerator", f"{b.variant} names no ROCm version")
    if t.rocm is not None and b.rocm.prefix(2)[: len(t.rocm.key[:2])] != t.rocm.key[:2]:
        return No("pin", f"built for ROCm {b.rocm}, not the pinned ROCm {t.rocm}")
    row = g.rocm_row(b.rocm)
    targets = b.gfx or (row.gfx if row else ())
    for gpu in t.gpus:
        if gpu.arch.name not in targets:
            listed = ", ".join(targets) or "no listed gfx target"
            return No("arch", f"no kernels for {_gpu(gpu)}: compiled for {listed}")
    return None


def fit(g: CompatGraph, spec: ProjectSpec, t: Target, rel: Release, b: Build) -> Candidate | No:
    """The candidate ``b`` makes for target ``t``, or why it makes none."""
    wanted = ACCELERATOR[t.vendor]
    if b.accelerator != wanted:
        need = {"cuda": "NVIDIA GPUs need a CUDA build", "rocm": "AMD GPUs need a ROCm build",
                "cpu": "the target has no GPU"}[wanted]
        return No("accelerator", f"{b.variant} is a {b.accelerator.upper()} build; {need}")
    pys = _pythons(spec, rel, b)
    if not pys:
        return No("python", f"has no wheel for Python {spec.python_raw} (it has {', '.join(b.python or rel.python)})")
    compat, dmin = "", None
    if t.vendor == "nvidia":
        compat, dmin, no = _fit_nvidia(g, b, t)
    elif t.vendor == "amd":
        no = _fit_amd(g, b, t)
    else:
        no = None
    if no is not None:
        return no
    return Candidate(release=rel, build=b, pythons=pys, compat=compat, driver_min=dmin)


# Ranges are remembered by their text (FrameworkReq.raw, ProjectSpec.python_raw, always set
# together with the parsed set): a matrix asks the same few thousand questions, and hashing a
# SpecifierSet costs more than answering them.
@lru_cache(maxsize=1024)
def _range(raw: str) -> SpecifierSet:
    return SpecifierSet("" if raw.strip() in ("", "*") else raw)


@lru_cache(maxsize=4096)
def _python_subset(python_raw: str, pys: tuple[str, ...]) -> frozenset[str]:
    return frozenset(p for p in pys if _range(python_raw).contains(p, prereleases=True))


def _pythons(spec: ProjectSpec, rel: Release, b: Build | None) -> frozenset[str]:
    return _python_subset(spec.python_raw, b.python if b and b.python else rel.python)


@lru_cache(maxsize=8192)
def _in_range(raw: str, version: Version) -> bool:
    return _range(raw).contains(version)


def _memo_key(spec: ProjectSpec, t: Target, req: FrameworkReq) -> tuple[object, ...]:
    """What a framework's candidates depend on: the Python range, companion ranges, target, range."""
    companions = tuple((f.name, f.raw) for f in spec.frameworks if f.name in COMPANIONS)
    return (spec.python_raw, companions, t, req.name, req.raw, req.backend)


def _companion_problem(spec: ProjectSpec, rel: Release) -> str:
    comps = dict(rel.companions)
    for req in spec.frameworks:
        if COMPANIONS.get(req.name) == rel.package:
            v = comps.get(req.name)
            if v is None:
                return f"no {req.name} release pairs with it"
            if not req.specifier.contains(v, prereleases=True):
                return f"it pairs with {req.name} {v}, outside {req.name} {req.raw!r}"
    return ""


def candidates(g: CompatGraph, spec: ProjectSpec, t: Target, req: FrameworkReq,
               reporter: Reporter) -> list[Candidate]:
    """Every (release, build) of ``req`` that fits ``t`` alone, in preference order."""
    out: list[Candidate] = []
    for rel in g.releases(req.name):
        subject = f"{rel.package} {rel.raw}"
        if not _in_range(req.raw, rel.version):
            continue
        if (why := _companion_problem(spec, rel)):
            reporter.rejected(t.name, subject, why)
            continue
        if not rel.python or (req.name == "keras" and not _pythons(spec, rel, None)):
            has = ", ".join(rel.python)
            reporter.rejected(t.name, subject, f"has no wheel for Python {spec.python_raw} (it has {has})")
            continue
        if req.name == "keras":
            out.append(Candidate(release=rel, build=None, pythons=_pythons(spec, rel, None)))
            continue
        ranked: list[tuple[tuple[int, int, tuple[int, ...]], Candidate]] = []
        for b in g.builds(rel):
            c = fit(g, spec, t, rel, b)
            if isinstance(c, No):
                reporter.rejected(t.name, f"{subject} ({b.variant})", c.text)
                continue
            version = b.cuda or b.rocm
            rank = (0 if b.default else 1, 0 if c.compat != "minor-version" else 1,
                    tuple(-k for k in version.key) if version else ())
            ranked.append((rank, c))
        out.extend(c for _, c in sorted(ranked, key=lambda rc: (rc[0], rc[1].build.variant)))  # type: ignore[union-attr]
    return out


def _candidates_shared(g: CompatGraph, spec: ProjectSpec, t: Target, req: FrameworkReq,
                       reporter: Reporter) -> list[Candidate]:
    """:func:`candidates`, computed once per sub-problem when nobody listens to the search.

    A matrix of thousands of cells shares a few hundred (framework range, Python range, target)
    sub-problems; the result depends on nothing else (companions are part of the key)."""
    if type(reporter) is not Reporter:
        return candidates(g, spec, t, req, reporter)
    key = _memo_key(spec, t, req)
    cache = g.memo.setdefault("candidates", {})
    if key not in cache:
        cache[key] = candidates(g, spec, t, req, reporter)
    return list(cache[key])


# ----------------------------------------------------------------------------- pairs


def _exact(version: str) -> bool:
    """A four-part version such as 9.5.1.17 names one wheel, not a range or a minimum."""
    return version.count(".") == 3 and all(p.isdigit() for p in version.split("."))


def _pin_clash(a: Candidate, b: Candidate) -> str:
    ba, bb = a.build, b.build
    if (ba and bb and ba.cuda and bb.cuda and ba.cuda.major == bb.cuda.major
            and _exact(ba.cudnn) and _exact(bb.cudnn) and ba.cudnn != bb.cudnn):
        # Both install the cuDNN wheel of one CUDA major, at different exact versions.
        return (f"{a.label} bundles cuDNN {ba.cudnn} but {b.label} bundles cuDNN {bb.cudnn}: "
                f"one environment holds one nvidia-cudnn-cu{ba.cuda.major}")
    pa, pb = dict(a.pins), dict(b.pins)
    for name in sorted(set(pa) & set(pb)):
        va, vb = pa[name], pb[name]
        if va == vb:
            continue
        if _admits(va, vb) and _admits(vb, va):
            continue
        return f"{a.label} pins {name} {_pin(va)} but {b.label} pins {name} {_pin(vb)}"
    return ""


def _pin(v: str) -> str:
    return v if v[:1] in "<>=!~" else f"=={v}"


def _admits(spec: str, other: str) -> bool:
    """Whether pin ``spec`` (exact version or specifier) admits ``other`` (if exact)."""
    if spec[:1] not in "<>=!~" or other[:1] in "<>=!~":
        return spec[:1] in "<>=!~" or other[:1] in "<>=!~" or spec == other
    try:
        return SpecifierSet(spec).contains(Version(other), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def _requires_clash(a: Candidate, b: Candidate, backend: str) -> str:
    for x, y in ((a, b), (b, a)):
        want = dict(x.release.requires).get(y.package)
        if want and not SpecifierSet(want).contains(y.release.version, prereleases=True):
            return f"{x.label} requires {y.package}{want}, not {y.release.raw}"
        if x.package == "keras" and y.package == backend:
            floor = dict(x.release.backends).get(backend)
            if floor and not SpecifierSet(floor).contains(y.release.version, prereleases=True):
                return f"{x.label} needs {backend}{floor} as its backend, not {y.release.raw}"
    return ""


def clash(a: Candidate, b: Candidate, backend: str) -> str:
    """Why two candidates cannot share an environment ("" when they can)."""
    if not a.pythons & b.pythons:
        return (f"{a.label} has Python {', '.join(sorted(a.pythons, key=parse_python_minor))} and "
                f"{b.label} has {', '.join(sorted(b.pythons, key=parse_python_minor))}: no common Python")
    ca = a.build.cuda if a.build else None
    cb = b.build.cuda if b.build else None
    if ca is not None and cb is not None and ca.major != cb.major:
        return f"{a.label} uses CUDA {ca} and {b.label} uses CUDA {cb}: one environment needs one CUDA major"
    return _pin_clash(a, b) or _requires_clash(a, b, backend)


# ----------------------------------------------------------------------------- search


@dataclass(slots=True)
class _Search:
    lists: dict[str, list[Candidate]]
    backend: str
    clashes: dict[str, None] = field(default_factory=dict)

    def prune(self) -> None:
        """Arc consistency: drop candidates that clash with every candidate of another list."""
        changed = True
        while changed:
            changed = False
            for a in self.lists:
                for b in self.lists:
                    if a == b:
                        continue
                    keep = []
                    for ca in self.lists[a]:
                        if any(not clash(ca, cb, self.backend) for cb in self.lists[b]):
                            keep.append(ca)
                        elif self.lists[b]:
                            self.clashes.setdefault(clash(ca, self.lists[b][0], self.backend))
                    if len(keep) != len(self.lists[a]):
                        self.lists[a] = keep
                        changed = True

    def run(self, order: list[str]) -> list[Candidate] | None:
        chosen: list[Candidate] = []

        def dfs(i: int, pythons: frozenset[str]) -> bool:
            if i == len(order):
                return True
            for c in self.lists[order[i]]:
                why = next((w for p in chosen if (w := clash(p, c, self.backend))), "")
                if not why and not (pythons & c.pythons):
                    why = f"{c.label}: no Python shared with {', '.join(p.label for p in chosen)}"
                if why:
                    self.clashes.setdefault(why)
                    continue
                chosen.append(c)
                if dfs(i + 1, pythons & c.pythons):
                    return True
                chosen.pop()
            return False

        return chosen if dfs(0, frozenset(p for c in self.lists.values() for x in c for p in x.pythons)) else None


def keras_backend(spec: ProjectSpec) -> str:
    """The backend Keras runs on: as written, else the one framework present, else Keras' default."""
    req = spec.framework("keras")
    if req is None:
        return ""
    if req.backend:
        return req.backend
    present = [f for f in KERAS_DEFAULT_BACKENDS if spec.framework(f)]
    return present[0] if present else KERAS_DEFAULT_BACKENDS[0]


def needed(spec: ProjectSpec) -> list[FrameworkReq]:
    """The frameworks to resolve: those asked for, the owners of companions, Keras' backend."""
    reqs = {f.name: f for f in spec.frameworks if f.name in ORDER}
    for f in spec.frameworks:
        owner = COMPANIONS.get(f.name, f.name)
        reqs.setdefault(owner, FrameworkReq(name=owner, specifier=SpecifierSet(), raw="*"))
    backend = keras_backend(spec)
    if backend:
        reqs.setdefault(backend, FrameworkReq(name=backend, specifier=SpecifierSet(), raw="*"))
    return [reqs[n] for n in ORDER if n in reqs]


def solve_target(g: CompatGraph, spec: ProjectSpec, t: Target,
                 reporter: Reporter | None = None) -> Resolution:
    """Resolve one target; raise :class:`Unsatisfiable` with the clashing facts."""
    rep = reporter or Reporter()
    if t.driver is not None:
        dropped = g.branch_drops(t.driver.major, {gpu.family for gpu in t.gpus})
        if dropped:
            gpus = [gpu for gpu in t.gpus if gpu.family in dropped]
            limit = g.newest_branch_for(dropped)
            raise Unsatisfiable(t.name, [Clash(
                subject=f"driver {t.driver}",
                reason=(f"driver branch R{t.driver.major} no longer supports "
                        f"{', '.join(sorted(f.capitalize() for f in dropped))} GPUs "
                        f"({', '.join(_gpu(x) for x in gpus)})"))],
                [f"run those GPUs on a driver of branch R{limit} or older" if limit else
                 "move those GPUs to a target of their own"])
    if t.driver is not None:
        for gpu in t.gpus:
            floor = gpu_driver_floor(g, gpu)
            if floor is not None and t.driver < floor:
                first = g.introduced_by(gpu.arch)
                raise Unsatisfiable(t.name, [Clash(
                    subject=f"driver {t.driver}",
                    reason=(f"predates {_gpu(gpu)}: the first driver that knows {gpu.arch.name} is "
                            f"{floor} (shipped with CUDA {first.version if first else '?'})"))],
                    [f"a driver >= {floor} (R{floor.major} or newer)"])
    reqs = needed(spec)
    backend = keras_backend(spec)
    search = _Search(lists={r.name: _candidates_shared(g, spec, t, r, rep) for r in reqs}, backend=backend)
    empty = [r for r in reqs if not search.lists[r.name]]
    if empty:
        raise Unsatisfiable(t.name, [_why_none_shared(g, spec, t, r) for r in empty])
    search.prune()
    found = search.run([r.name for r in reqs]) if all(search.lists.values()) else None
    if found is None:
        raise Unsatisfiable(t.name, [Clash(subject="frameworks together", reason=w)
                                     for w in list(search.clashes)[:5]])
    for c in found:
        rep.chosen(t.name, c.label, _why_chosen(c))
    return _resolution(g, spec, t, found, backend)


def _why_none_shared(g: CompatGraph, spec: ProjectSpec, t: Target, req: FrameworkReq) -> Clash:
    """:func:`_why_none`, once per sub-problem (the same key as the candidate lists)."""
    cache = g.memo.setdefault("why_none", {})
    key = _memo_key(spec, t, req)
    if key not in cache:
        cache[key] = _why_none(g, spec, t, req)
    return cache[key]  # type: ignore[no-any-return]


def _why_none(g: CompatGraph, spec: ProjectSpec, t: Target, req: FrameworkReq) -> Clash:
    """The clash that leaves ``req`` with no candidate, told for its newest matching release."""
    subject = f"{req.name} {req.raw}"
    rels = [r for r in g.releases(req.name) if _in_range(req.raw, r.version)]
    if not rels:
        known = g.releases(req.name)
        span = f"{known[-1].raw} .. {known[0].raw}" if known else "none"
        return Clash(subject=subject, reason=f"no release matches (known: {span})")
    rel = rels[0]
    name = f"{req.name} {rel.raw}"
    if (why := _companion_problem(spec, rel)):
        return Clash(subject=subject, reason=f"{name}: {why}")
    if req.name == "keras":
        return Clash(subject=subject, reason=f"{name} has no wheel for Python {spec.python_raw} "
                     f"(it has {', '.join(rel.python)})")
    nos = [(b, n) for b in g.builds(rel) if isinstance(n := fit(g, spec, t, rel, b), No)]
    hw = ", ".join(_gpu(x) for x in t.gpus) or {"nvidia": "NVIDIA GPUs", "amd": "AMD GPUs"}.get(
        t.vendor, "a CPU-only machine")
    wanted = [(b, n) for b, n in nos if n.code != "accelerator"]
    if wanted and any(n.code != "pin" for _, n in wanted):
        wanted = [(b, n) for b, n in wanted if n.code != "pin"]  # the builds of the pinned CUDA/ROCm tell why
    elif wanted:
        pin = f"CUDA {t.cuda}" if t.cuda is not None else f"ROCm {t.rocm}"
        have = ", ".join(b.variant for b, _ in wanted)
        return Clash(subject=subject, reason=f"{name} has no {pin} build (it has {have})")
    if not wanted:
        kind = {"nvidia": "CUDA", "amd": "ROCm"}.get(t.vendor, "CPU")
        have = ", ".join(sorted({b.variant for b, _ in nos})) or "none"
        return Clash(subject=subject, reason=f"{name} has no {kind} build (its builds: {have})")
    if all(n.code == "python" for _, n in wanted):
        return Clash(subject=subject, reason=f"{name} {wanted[0][1].text}")
    if all(n.code == "arch-cuda" for _, n in wanted):
        newest = max(wanted, key=lambda bn: bn[0].cuda or bn[0].rocm)[0]  # type: ignore[arg-type, return-value]
        need = max(n.needs for _, n in wanted)
        gpus = [x for x in t.gpus if not g.toolkit_knows(newest.cuda, x.arch)]  # type: ignore[arg-type]
        if t.cuda is not None:  # the pin chose the builds; the release may have newer ones
            variants = ", ".join(b.variant for b, _ in wanted)
            return Clash(subject=subject, reason=(
                f"{name} ({variants}) has no kernels for {', '.join(_gpu(x) for x in gpus)}: "
                f"{', '.join(x.arch.name for x in gpus)} needs CUDA >= {need}"))
        return Clash(subject=subject, reason=(
            f"{name} has no build for {', '.join(_gpu(x) for x in gpus)}: "
            f"{', '.join(x.arch.name for x in gpus)} needs CUDA >= {need}, and {name} builds stop at "
            f"{newest.variant} (CUDA {newest.cuda})"))
    texts = list(dict.fromkeys(f"{b.variant}: {n.text}" for b, n in wanted))
    return Clash(subject=subject, reason=f"no {name} build serves {hw}: " + "; ".join(texts))




def _why_chosen(c: Candidate) -> str:
    if c.build is None:
        return "newest release that fits"
    b = c.build
    how = "the default build" if b.default else "the newest usable build (the default build does not fit)"
    drv = ""
    if c.compat:
        drv = f"; driver >= {c.driver_min} ({c.compat})"
    return f"newest release that fits, {how}{drv}"


# ----------------------------------------------------------------------------- output


def _image(g: CompatGraph, spec: ProjectSpec, t: Target, accel: str, version: Dotted | None,
           python: str, compat: str, needs_cudnn: bool = False) -> tuple[str, str]:
    """(image, "") with the newest patch of the build's CUDA/ROCm (or Python) for the OS,
    or ("", why) when the data has none. A build that brings no CUDA libraries of its own
    (``system_cuda``) gets an image flavour with cuDNN."""
    flavor = spec.flavor or "base"
    fallback = ""
    if accel == "cpu":
        rows = [i for i in g.images("cpu") if i.python == python]
        flavor = "slim"
        if spec.os and not any(spec.os in i.os for i in rows):
            # a distribution image of the asked OS (ubuntu22.04); the pinned uv brings Python
            rows = [i for i in g.images("cpu") if not i.python and spec.os in i.os]
            flavor = "base"
    else:
        assert version is not None
        rows = [i for i in g.images(accel) if i.version.prefix(2) == version.prefix(2)]
        if accel == "rocm" and not rows:
            # ROCm wheels bundle their user-space libraries; the image's ROCm need only share the major
            rows = [i for i in g.images("rocm") if i.version.major == version.major and i.version < version]
            fallback = f"no ROCm {version} image in the data; using the newest ROCm {version.major}.x image"
        if accel == "cuda" and compat == "minor-version":
            # The container toolkit refuses an image whose CUDA the driver does not run natively
            # (NVIDIA_REQUIRE_CUDA), so take the newest image of the major such a driver runs.
            limit = g.newest_branch_for({x.family for x in t.gpus})
            rows = [i for i in g.images("cuda") if i.version.major == version.major
                    and (n := g.native_driver_min(i.version)) is not None
                    and (n <= t.driver if t.driver is not None else limit is None or n.major <= limit)]
    if needs_cudnn and accel == "cuda":
        flavor = _cudnn_flavor(rows, "devel" if flavor == "devel" else "runtime") or flavor
    rows = [i for i in rows if (not spec.os or spec.os in i.os) and (flavor in i.flavors or accel == "cpu")]
    if not rows:
        what = f"{accel.upper()} {version}" if version else f"Python {python}"
        where = f" on {spec.os}" if spec.os else ""
        ceiling = " that such a driver runs" if compat == "minor-version" else ""
        return "", f"no base image in matrices/images.toml for {what}{where} ({flavor}){ceiling}"
    confident = [i for i in rows if i.confidence != "low"] or rows
    newest = max(i.version for i in confident)
    # one version may span several rows (one per group of OSes): choose the OS across all of them
    same = [i for i in confident if i.version == newest]
    os = spec.os or _default_os(tuple(o for i in same for o in i.os))
    best = next(i for i in same if os in i.os)
    note = f"base image {best.repository} {best.version} is marked confidence = low" if best.confidence == "low" else ""
    note = "; ".join(n for n in (fallback, note) if n)
    return best.ref(flavor if flavor in best.flavors else best.flavors[0], os), note


def _cudnn_flavor(rows: list[Image], kind: str) -> str:
    """The cuDNN flavour these images publish for ``kind`` (cudnn-runtime, cudnn9-runtime, ...)."""
    names = sorted({f for i in rows for f in i.flavors if f.startswith("cudnn") and f.endswith(kind)})
    return names[-1] if names else ""


def _default_os(oses: tuple[str, ...]) -> str:
    """The newest Ubuntu among ``oses``; else the first listed (rows list OSes newest first)."""
    ubuntu = [o for o in oses if o.startswith("ubuntu")]
    if ubuntu:
        return max(ubuntu, key=lambda o: tuple(int(x) for x in o[6:].split(".") if x.isdigit()))
    return oses[0]


def _resolution(g: CompatGraph, spec: ProjectSpec, t: Target, found: list[Candidate],
                backend: str) -> Resolution:
    pythons = frozenset.intersection(*(c.pythons for c in found)) if found else frozenset(
        p for p in g.pythons() if spec.python.contains(p, prereleases=True))
    python_images = [i for i in g.images("cpu") if i.python]
    if t.vendor == "cpu" and (not spec.os or any(spec.os in i.os for i in python_images)):
        # a CPU environment runs on a python image: prefer a Python that has one
        pythons = (pythons & {i.python for i in python_images}) or pythons
    python = max(pythons, key=parse_python_minor) if pythons else ""
    builds = [c.build for c in found if c.build]
    cudas = [b.cuda for b in builds if b.cuda]
    rocms = [b.rocm for b in builds if b.rocm]
    accel = ACCELERATOR[t.vendor]
    driver_mins = [c.driver_min for c in found if c.driver_min]
    compat = "minor-version" if any(c.compat == "minor-version" for c in found) else (
        "native" if t.vendor == "nvidia" else "")
    cuda = max(cudas) if cudas else None
    rocm = max(rocms) if rocms else None
    system = [b for b in builds if b.system_cuda]
    image, image_note = _image(g, spec, t, accel, cuda or rocm, python, compat, needs_cudnn=bool(system))
    low = [f"{c.label} rests on data marked confidence = low" for c in found
           if c.release.confidence == "low" or (c.build and c.build.confidence == "low")]
    packages: list[PackagePin] = []
    for c in found:
        b = c.build
        variant = b.variant if b else "any"
        index = b.index if b else "pypi"
        path = b.index_path if b else ""
        name = (b.dist if b and b.dist else c.package)
        version = b.dist_version if b and b.dist_version else c.release.raw
        conda: tuple[str, ...] = ()
        if accel != "rocm" and not any(spec.framework(comp) for comp, _ in c.release.companions):
            conda = g.conda_specs(c.release, b.cuda if b else None, python)
        packages.append(PackagePin(name=name, version=version, variant=variant, index=index,
                                   index_path=path, extra=b.extra if b else "", conda=conda, pins=c.pins))
        for comp, version in c.release.companions:
            if spec.framework(comp) is not None:
                packages.append(PackagePin(name=comp, version=version, variant=variant, index=index,
                                           index_path=path))
    return Resolution(
        target=t,
        accelerator=accel,
        python=python,
        cuda=cuda.raw if cuda else "",
        rocm=rocm.raw if rocm else "",
        cudnn=next((b.cudnn for b in builds if b.cudnn), ""),
        driver_min=max(driver_mins).raw if driver_mins else "",
        compat=compat,
        gpu_archs=tuple(sorted({x.arch.name for x in t.gpus})),
        gpus=tuple(x.name for x in t.gpus),
        base_image=image,
        keras_backend=backend,
        packages=tuple(sorted(packages, key=lambda p: p.name)),
        models=tuple(m for x in t.gpus if (m := g.gpu(x.name)) is not None),
        tools=tuple((tool.name, tool.version) for tool in g.m.tools),
        warnings=tuple(w for w in (image_note, *low) if w),
        choices=tuple(found),
    )


def solve(g: CompatGraph, spec: ProjectSpec, reporter: Reporter | None = None) -> list[Resolution]:
    """Resolve every target of ``spec``; the first unsatisfiable target raises."""
    return [solve_target(g, spec, t, reporter) for t in spec.targets]

