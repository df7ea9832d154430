"""The selector's tables: what the solver answers for every GPU class, driver choice, platform,
framework and release, computed with the solver's own functions, so that the page only looks
answers up (no compatibility rule lives in its script).

Why one answer per release is enough (``tests/test_site.py`` checks it against real solves): a
framework's candidates are its releases newest first (those that only forward compatibility serves
after all others: their ``rank`` is 1), so the lock of a range is the lock of the newest release in
range with a candidate of the lowest rank; Keras comes with its backend (TensorFlow), whose
candidates the search takes first, so Keras' range takes the release whose own solve took the
earliest backend candidate (its ``rank``), the newest of those. A refused range is told by its
newest release with a build of the GPU's kind, else its newest (``explain.why_none``: the tables
flag those releases, ``h``); its nearest fixes are the versions that work (range free)
and the oldest driver floor with which some release in range works (``fixes``).

The GPU models of one class (same architecture, family, vendor, implied platform and JetPack)
get the same answers but for their name, which texts hold as ``{gpu}``; a driver choice's texts
hold the driver as ``{driver}``: that is what keeps the tables small.
"""

from __future__ import annotations

import functools
import itertools
import multiprocessing
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import msgspec
import msgspec.structs
from packaging.specifiers import SpecifierSet

from ..data import Build, Gpu, Release
from ..domain import FRAMEWORKS, KERAS_BACKENDS, LINUX_PLATFORMS
from ..errors import SpecError, Unsatisfiable
from ..provider import Provider
from ..solve.cache import Cache
from ..solve.candidates import preferred
from ..solve.explain import has_kind, why_misfits, why_none
from ..solve.fit import fit_drivers, gpu_text, pythons
from ..solve.fixes import driver_fix_text, packages_text, version_fix_text
from ..solve.model import Candidate, No, Resolution
from ..solve.output import base_image_of, resolution
from ..solve.search import driver_refusal
from ..solve.together import clash
from ..spec import FrameworkReq, GpuReq, ProjectSpec, Target, parse_spec
from ..versions import Dotted

__all__ = ["CPU_ONLY", "FORMAT", "Choice", "explored_gpus", "project_toml", "selector_data"]

FORMAT = 1  # the version of the data's layout (site.js reads it)
CPU_ONLY = "CPU only"  # the selector's entry for a machine without a GPU
GPU, DRIVER, RANGE = "{gpu}", "{driver}", "{range}"  # the texts' placeholders
KERAS = "keras"
BACKEND = KERAS_BACKENDS[0]  # the backend the lock gives Keras when no other framework is asked


class Choice(msgspec.Struct, frozen=True, kw_only=True):
    """One selector choice, as the page writes it into project.toml."""

    gpu: str  # a GPU model's name, or CPU_ONLY
    driver: str = ""  # "" for the newest
    platform: str = LINUX_PLATFORMS[0]
    framework: str = "torch"
    low: str = ""  # inclusive bounds ("" for any)
    high: str = ""

    @property
    def raw(self) -> str:
        """The framework's range as project.toml writes it."""
        parts = [f">={self.low}"] * bool(self.low) + [f"<={self.high}"] * bool(self.high)
        return ",".join(parts) or "*"


def project_toml(c: Choice) -> str:
    """The project.toml of a choice (the page writes the same text)."""
    hardware = [f"gpus = [{_q(c.gpu)}]"] * (c.gpu != CPU_ONLY) + [f"driver = {_q(c.driver)}"] * bool(c.driver)
    return ("[project]\nname = \"explorer\"\n\n[frameworks]\n"
            f"{c.framework} = {_q(c.raw)}\n\n[hardware]\n" + "".join(f"{x}\n" for x in hardware)
            + f"platform = {_q(c.platform)}\n")


def _q(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _runs(values: Sequence[int]) -> list[int]:
    """``[count, value, count, value, ...]``: equal neighbours once (the page walks them)."""
    out: list[int] = []
    for v in values:
        if out and out[-1] == v:
            out[-2] += 1
        else:
            out += [1, v]
    return out


class _Texts(msgspec.Struct):
    """Every text once; a GPU's name and the driver replaced by their placeholders."""

    items: list[str] = msgspec.field(default_factory=list)
    ids: dict[str, int] = msgspec.field(default_factory=dict)

    def add(self, text: str, t: Target | None = None) -> int:
        """The id of a solver's text, said for target ``t`` (its GPU and driver made placeholders)."""
        if "{" in text.replace(RANGE, ""):
            raise ValueError(f"a solver text holds a brace, which the page reads as a placeholder: {text!r}")
        return self.held(_placeheld(text, t) if t is not None else text)

    def held(self, text: str) -> int:
        """The id of a text whose placeholders are in place."""
        got = self.ids.get(text)
        if got is None:
            got = self.ids[text] = len(self.items)
            self.items.append(text)
        return got


def _placeheld(text: str, t: Target) -> str:
    for gpu in t.gpus:
        text = text.replace(gpu_text(gpu), GPU)
    return text.replace(t.driver.raw, DRIVER) if t.driver is not None else text


class _Answers(msgspec.Struct):
    """Every answer once: the lock's values of an environment (the selector's fields)."""

    items: list[list[str]] = msgspec.field(default_factory=list)
    ids: dict[tuple[str, ...], int] = msgspec.field(default_factory=dict)

    def add(self, r: Resolution, image: str) -> int:
        """The id of ``r``'s answer, with the base image ``image`` (its driver's)."""
        pin = r.packages[0]  # the lock's environments[0].frameworks[0]
        row = (pin.version, pin.variant, r.cuda, r.rocm, r.python, r.driver_min, r.compat, image, packages_text(r))
        return self.row(list(row))

    def row(self, row: list[str]) -> int:
        """The id of an answer's values."""
        key = tuple(row)
        got = self.ids.get(key)
        if got is None:
            got = self.ids[key] = len(self.items)
            self.items.append(row)
        return got


ANSWER_FIELDS = ("release", "build", "cuda", "rocm", "python", "driver-min", "compat", "base-image", "packages")


class _Class(msgspec.Struct, frozen=True):
    """GPU models the solver cannot tell apart but by name: the first of them stands for all."""

    key: tuple[str, ...]
    gpu: GpuReq | None  # None: CPU only
    vendor: str


class _Memo(Provider):
    """The provider, its pure look-ups that the tables ask thousands of times remembered."""

    def __init__(self, provider: Provider) -> None:
        super().__init__(provider.m)
        self._native: dict[tuple[int, ...], Dotted | None] = {}

    def native_driver_min(self, cuda: Dotted) -> Dotted | None:
        key = cuda.prefix(2)
        if key not in self._native:
            self._native[key] = super().native_driver_min(cuda)
        return self._native[key]


class _Builder(msgspec.Struct):
    provider: Provider
    floors: list[Dotted]  # every driver floor of the data: the fixes try each
    choices: list[int]  # the selector's driver choices: 0 the newest, i the floor floors[i - 1]
    texts: _Texts = msgspec.field(default_factory=_Texts)
    answers: _Answers = msgspec.field(default_factory=_Answers)
    cache: Cache = msgspec.field(default_factory=Cache)
    specs: dict[str, ProjectSpec] = msgspec.field(default_factory=dict)
    resolved: dict[tuple[int, ...], Resolution] = msgspec.field(default_factory=dict)
    refusals: dict[tuple[object, ...], int] = msgspec.field(default_factory=dict)
    answered: dict[tuple[int, str], int] = msgspec.field(default_factory=dict)
    fix_texts: dict[tuple[int, ...], int] = msgspec.field(default_factory=dict)
    blobs: list[list[Any]] = msgspec.field(default_factory=list)
    blob_ids: dict[bytes, int] = msgspec.field(default_factory=dict)

    def blob(self, value: list[Any]) -> int:
        """The id of a list of the tables (each list once)."""
        key = msgspec.json.encode(value)
        if key not in self.blob_ids:
            self.blob_ids[key] = len(self.blobs)
            self.blobs.append(value)
        return self.blob_ids[key]

    def spec(self, framework: str, t: Target) -> ProjectSpec:
        """The spec of ``framework = "*"`` (as the parser reads it) for target ``t``."""
        if framework not in self.specs:
            text = project_toml(Choice(gpu=CPU_ONLY, framework=framework))
            self.specs[framework] = parse_spec(text, "project.toml", self.provider)
        return msgspec.structs.replace(self.specs[framework], targets=(t,))

    def resolve(self, spec: ProjectSpec, t: Target, found: list[Candidate], backend: str) -> Resolution:
        """:func:`resolution` of ``found``, once per table and choices (only the base image depends on
        the driver: :func:`base_image_of` tells it)."""
        key = tuple(map(id, found))  # candidates live as long as their table; the memo is emptied per table
        if key not in self.resolved:
            self.resolved[key] = resolution(self.provider, self.cache, spec, t, found, backend)
        return self.resolved[key]

    def answer(self, spec: ProjectSpec, t: Target, found: list[Candidate], backend: str) -> int:
        r = self.resolve(spec, t, found, backend)
        key = (id(r), base_image_of(self.provider, self.cache, spec, t, r))  # r lives as long as its table
        if key not in self.answered:
            self.answered[key] = self.answers.add(r, key[1])
        return self.answered[key]


class _Table(msgspec.Struct, frozen=True):
    """One GPU class on one platform: its target for the newest driver and for each driver floor."""

    targets: list[Target]
    positions: list[int]  # each selector choice's index in targets
    ok: list[bool]  # per target: whether the target itself is accepted (its driver knows its GPUs)


def _targets(b: _Builder, cls: _Class, platform: str) -> list[Target] | None:
    """The target of ``cls`` on ``platform`` for the newest driver and each floor (None: refused)."""
    gpu = cls.gpu.name if cls.gpu is not None else CPU_ONLY
    try:
        spec = parse_spec(project_toml(Choice(gpu=gpu, platform=platform)), "project.toml", b.provider)
    except SpecError:
        return None
    t = spec.targets[0]
    if cls.vendor != "nvidia" or t.jetpack is not None:
        return [t]
    return [t, *(msgspec.structs.replace(t, driver=d) for d in b.floors)]


def _target_outcome(b: _Builder, t: Target) -> tuple[int, int]:
    """(1+ the lines, 1+ the tip) when the target itself is refused (its driver); else (0, 0)."""
    got = driver_refusal(b.provider, t)
    if got is None:
        return 0, 0
    return 1 + b.texts.add(_lines(got), t), 1 + b.texts.add(got.tip or "", t)


def _lines(e: Unsatisfiable) -> str:
    return "\n".join(f"{c.subject}: {c.reason}" for c in e.clashes)


class _Release(msgspec.Struct):
    """One release's outcomes: per target whether it resolves alone (and its choice), per selector
    choice its answer (or -1-text) and each build's (0 ok, 1+ text)."""

    found: list[list[Candidate] | None]  # per target: the chosen candidates (None: refused)
    # per target: Keras' backend candidate; for others 0, or 1 when only forward compatibility
    # serves it (the search takes it after every other release); _NONE when refused
    rank: list[int]
    outcome: list[int] = msgspec.field(default_factory=list)
    builds: list[list[int]] = msgspec.field(default_factory=list)


_NONE = 1 << 20  # the rank of a release that does not resolve
_RANKS = 1000  # more than any rank of a release that resolves (a fix's order: its floor, then the rank)


class _Fw(msgspec.Struct):
    """One framework's tables for one GPU class and platform."""

    name: str
    releases: list[_Release] = msgspec.field(default_factory=list)
    candidates: list[list[Candidate]] = msgspec.field(default_factory=list)  # per target, in the search's order
    keep: list[Candidate] = msgspec.field(default_factory=list)  # Keras' candidates, alive as long as the table
    kind: list[int] = msgspec.field(default_factory=list)  # per release: 1 when it has a build of the GPU's kind


def _told(kind: list[int]) -> int:
    """The release that tells why a range of all releases is refused: the newest with a build of the
    GPU's kind (:func:`explain.has_kind`), else the newest."""
    return next((i for i, k in enumerate(kind) if k), 0)


def _framework(b: _Builder, tab: _Table, name: str) -> _Fw:
    fw = _Fw(name=name, candidates=[[] for _ in tab.targets])
    spec = b.spec(name, tab.targets[0])
    fw.kind = [int(has_kind(b.provider, rel, tab.targets[0])) for rel in b.provider.releases(name)]
    for rel in b.provider.releases(name):
        fw.releases.append(_release(b, tab, spec, rel, fw))
    return fw


def _release(b: _Builder, tab: _Table, spec: ProjectSpec, rel: Release, fw: _Fw) -> _Release:
    """A release's outcome alone for every target, and what the selector shows for each choice."""
    builds = b.provider.builds(rel)
    fits = [fit_drivers(b.provider, b.cache, spec, tab.targets, rel, x) for x in builds]
    if all(isinstance(f[0], No) and f[0] is f[-1] for f in fits):  # refused alike whatever the driver
        return _refused_alike(b, tab, spec, rel, builds, [n for f in fits if isinstance(n := f[0], No)])
    out = _Release(found=[], rank=[])
    _choose(tab, fits, fw, out)
    said: dict[int, int] = {}  # a build outcome's id, by the object (the same for the drivers that agree)
    for i in tab.positions:
        _shown(b, tab, spec, rel, builds, [f[i] for f in fits], [f[0] for f in fits], out, i, said)
    return out


def _shown(b: _Builder, tab: _Table, spec: ProjectSpec, rel: Release, builds: list[Build],
           now: list[Candidate | No], newest: list[Candidate | No], out: _Release, i: int,
           said: dict[int, int]) -> None:
    """What the selector shows of the release for target ``i`` (a choice): each build's outcome
    (said without a driver where it is the newest driver's too) and the release's."""
    t = tab.targets[i]
    ids = [_build_outcome(b, f, tab.targets[0] if f is n else t, said) for f, n in zip(now, newest, strict=True)]
    out.builds.append(ids)
    out.outcome.append(_outcome(b, spec, t, rel, out.found[i], list(zip(builds, now, strict=True)), ids))


def _choose(tab: _Table, fits: list[list[Candidate | No]], fw: _Fw, out: _Release) -> None:
    """Per target: the release's fitting builds in the search's order (added to the framework's
    candidates), the one the lock takes, and its rank (0; 1 by forward compatibility alone; _NONE
    when none fits)."""
    ok: list[Candidate] = []
    before: list[Candidate] | None = None  # the fitting builds of the previous target
    for i in range(len(tab.targets)):
        now = [c for f in fits if isinstance(c := f[i], Candidate)]
        if _changed(now, before):
            ok = preferred(now)  # the same candidates keep their order
        before = now
        fw.candidates[i] += ok
        out.found.append(ok[:1] if ok else None)
        # a release served only by forward compatibility comes after every other (solve.candidates)
        out.rank.append(_NONE if not ok else 1 if ok[0].compat == "forward" else 0)


def _changed(now: list[Candidate], before: list[Candidate] | None) -> bool:
    return before is None or len(now) != len(before) or any(x is not y for x, y in zip(now, before, strict=True))


def _refused_alike(b: _Builder, tab: _Table, spec: ProjectSpec, rel: Release, builds: list[Build],
                   nos: list[No]) -> _Release:
    """A release whose every build is refused for a reason no driver changes: told once (without a
    driver) for every choice."""
    t = tab.targets[0]
    ids = [_build_outcome(b, no, t, {}) for no in nos]
    outcome = _outcome(b, spec, t, rel, None, list(zip(builds, nos, strict=True)), ids)
    n, m = len(tab.targets), len(tab.positions)
    return _Release(found=[None] * n, rank=[_NONE] * n, outcome=[outcome] * m, builds=[ids] * m)


def _outcome(b: _Builder, spec: ProjectSpec, t: Target, rel: Release, found: list[Candidate] | None,
             fits: list[tuple[Build, Candidate | No]], ids: list[int]) -> int:
    """The answer of ``rel`` alone on ``t``; else -1- why none of its builds serves it (once per
    release and builds' outcomes: the text holds the driver as a placeholder)."""
    if found is not None:
        return b.answer(spec, t, found, "")
    key = (rel.package, rel.raw, *ids)
    if key not in b.refusals:
        nos = [(x, n) for x, n in fits if isinstance(n, No)]
        b.refusals[key] = -1 - b.texts.add(f"{RANGE}: {why_misfits(b.provider, t, rel, nos)}", t)
    return b.refusals[key]


def _build_outcome(b: _Builder, got: Candidate | No, t: Target, said: dict[int, int]) -> int:
    """0 when the build fits, else 1+ why not, said for ``t`` (the target without a driver when no
    driver changes the answer: the text then holds no driver to make a placeholder of)."""
    if isinstance(got, Candidate):
        return 0
    if id(got) not in said or t.driver is not None:
        said[id(got)] = 1 + b.texts.add(got.text, t)
    return said[id(got)]


def _keras(b: _Builder, tab: _Table, backend: _Fw) -> _Fw:
    """Keras' releases: each with the first backend candidate it shares an environment with."""
    fw = _Fw(name=KERAS, keep=[])
    spec = b.spec(KERAS, tab.targets[0])
    fw.kind = [int(has_kind(b.provider, rel, tab.targets[0])) for rel in b.provider.releases(KERAS)]
    clashes: dict[tuple[int, int], str] = {}
    lists: dict[tuple[int, ...], int] = {}
    same = [lists.setdefault(tuple(map(id, cs)), len(lists)) for cs in backend.candidates]  # equal lists, equal ids
    for rel in b.provider.releases(KERAS):
        k = Candidate(release=rel, build=None, pythons=pythons(b.cache, spec, rel, None),
                      shared=b.provider.shared(rel, None))
        fw.keep.append(k)  # alive with the table: the memos key by identity
        firsts = _firsts(b, k, backend, same, clashes)
        out = _Release(found=[None if j is None else [backend.candidates[i][j], k] for i, j in enumerate(firsts)],
                       rank=[_NONE if j is None else j for j in firsts])
        for c, i in enumerate(tab.positions):
            out.outcome.append(_keras_outcome(b, spec, tab.targets[i], k, out.found[i], backend, (c, i), clashes))
        fw.releases.append(out)
    return fw


def _firsts(b: _Builder, k: Candidate, backend: _Fw, same: list[int],
            clashes: dict[tuple[int, int], str]) -> list[int | None]:
    """Per target: the first backend candidate Keras release ``k`` joins (once per equal list)."""
    seen: dict[int, int | None] = {}
    for i, x in enumerate(same):
        if x not in seen:
            seen[x] = _first_backend(b, k, backend.candidates[i], clashes)
    firsts = [seen[x] for x in same]
    if any(j is not None and j >= _RANKS for j in firsts):
        raise ValueError(f"more than {_RANKS} backend candidates: raise _RANKS")
    return firsts


def _clash(b: _Builder, c: Candidate, k: Candidate, clashes: dict[tuple[int, int], str]) -> str:
    """:func:`together.clash` of a backend candidate and a Keras release (remembered for the table)."""
    key = (id(c), id(k))  # both live as long as the table
    if key not in clashes:
        clashes[key] = clash(c, k, BACKEND, b.cache)
    return clashes[key]


def _first_backend(b: _Builder, k: Candidate, backends: list[Candidate],
                   clashes: dict[tuple[int, int], str]) -> int | None:
    """The first backend candidate, in the search's order, that Keras release ``k`` shares an
    environment with: the one the search takes for ``k`` alone."""
    if not k.pythons:
        return None
    return next((i for i, c in enumerate(backends) if not _clash(b, c, k, clashes)), None)


def _keras_outcome(b: _Builder, spec: ProjectSpec, t: Target, k: Candidate, found: list[Candidate] | None,
                   backend: _Fw, where: tuple[int, int], clashes: dict[tuple[int, int], str]) -> int:
    """The answer of Keras release ``k`` alone; else why not: its Pythons, the backend's refusal, or
    the clashes the search met (the first five)."""
    if found is not None:
        return b.answer(spec, t, found, BACKEND)
    if not k.pythons:
        req = FrameworkReq(name=KERAS, specifier=SpecifierSet(f"=={k.release.raw}"), raw=f"=={k.release.raw}")
        return -1 - b.texts.add(f"{RANGE}: {why_none(b.provider, b.cache, spec, t, req).reason}", t)
    choice, i = where
    backends = backend.candidates[i]
    if not backends:
        return -1 - _backend_refusal(b, backend, choice)
    why = list(dict.fromkeys(w for c in backends if (w := _clash(b, c, k, clashes))))[:5]
    return -1 - b.texts.add("\n".join(f"frameworks together: {w}" for w in why), t)


def _backend_refusal(b: _Builder, backend: _Fw, choice: int) -> int:
    """The backend's refusal for a selector choice, told for its newest release with a build of
    the GPU's kind (``why_none``)."""
    text = b.texts.items[-1 - backend.releases[_told(backend.kind)].outcome[choice]]
    return b.texts.held(text.replace(RANGE, f"{BACKEND} *"))


def _version_fixes(b: _Builder, tab: _Table, fw: _Fw) -> list[int]:
    """Per choice: 1+ the releases that work (:func:`fixes.version_fix_text`); 0: none does."""
    out = []
    for i in tab.positions:
        ok = [(rel, found) for rel, r in zip(b.provider.releases(fw.name), fw.releases, strict=True)
              if (found := r.found[i]) is not None and tab.ok[i]]
        if not ok:
            out.append(0)
            continue
        t = tab.targets[i]
        best = b.resolve(b.spec(fw.name, t), t, ok[0][1], _backend(fw))
        versions = [rel.raw for rel, _ in reversed(ok)]
        out.append(1 + b.texts.add(version_fix_text(b.provider, fw.name, versions, best), t))
    return out


def _backend(fw: _Fw) -> str:
    return BACKEND if fw.name == KERAS else ""


def _driver_fixes(b: _Builder, tab: _Table, fw: _Fw, r: _Release) -> tuple[list[int], list[int]]:
    """Per choice: the order of the oldest newer driver floor with which the release resolves
    (its floor, then Keras' rank there; 0: none) and 1+ the fix's text (:func:`fixes.driver_fix_text`)."""
    after = _next_working(tab, r)
    fixes = [_fix_at(b, tab, fw, r, after[i] if i else None) for i in tab.positions]
    return [o for o, _ in fixes], [t for _, t in fixes]


def _next_working(tab: _Table, r: _Release) -> list[int | None]:
    """Per target: the next one (a newer driver floor) on which the release resolves (None: none)."""
    out: list[int | None] = [None] * len(tab.targets)
    for i in range(len(tab.targets) - 2, -1, -1):
        k = i + 1
        out[i] = k if tab.ok[k] and r.found[k] is not None else out[k]
    return out


def _fix_at(b: _Builder, tab: _Table, fw: _Fw, r: _Release, k: int | None) -> tuple[int, int]:
    """(order, 1+ text) of the fix "a driver >= floor k" for release ``r``; (0, 0) for none."""
    found = r.found[k] if k is not None else None
    if k is None or found is None:
        return 0, 0
    return k * _RANKS + r.rank[k], _fix_text(b, tab, fw, k, found)


def _fix_text(b: _Builder, tab: _Table, fw: _Fw, k: int, found: list[Candidate]) -> int:
    """1+ the fix "a driver >= floor k" with the packages of ``found`` there (the text names no
    driver choice: the floor is newer than the choice)."""
    key = (k, *map(id, found))
    if key not in b.fix_texts:
        t = tab.targets[k]
        with_it = b.resolve(b.spec(fw.name, t), t, found, _backend(fw))
        b.fix_texts[key] = 1 + b.texts.add(driver_fix_text(b.floors[k - 1].raw, packages_text(with_it)))
    return b.fix_texts[key]


def _empty_range(b: _Builder, tab: _Table, fw: _Fw, backend: _Fw | None) -> list[int]:
    """Per choice: the lines of a range no release matches (Keras: the backend's refusal first)."""
    t0 = tab.targets[0]
    req = FrameworkReq(name=fw.name, specifier=SpecifierSet(_NO_RELEASE), raw=_NO_RELEASE)
    line = f"{RANGE}: {why_none(b.provider, b.cache, b.spec(fw.name, t0), t0, req).reason}"
    out = []
    for c, i in enumerate(tab.positions):
        if backend is not None and not backend.candidates[i]:
            out.append(b.texts.held(b.texts.items[_backend_refusal(b, backend, c)] + "\n" + line))
        else:
            out.append(b.texts.add(line))
    return out


_NO_RELEASE = "==0.0.0.0.0.1"  # a range no release matches


def _fw_json(b: _Builder, tab: _Table, fw: _Fw, backend: _Fw | None) -> dict[str, Any]:
    """A framework's tables; each per-release list is a blob, shared by the tables that agree."""
    fixes = [_driver_fixes(b, tab, fw, r) for r in fw.releases]
    out: dict[str, Any] = {
        "r": b.blob([_runs(r.outcome) for r in fw.releases]), "x": b.blob([_runs(x) for x, _ in fixes]),
        "xt": b.blob([_runs(t) for _, t in fixes]), "v": _runs(_version_fixes(b, tab, fw)),
        "e": _runs(_empty_range(b, tab, fw, backend)), "h": b.blob(fw.kind)}
    out["k"] = b.blob([_runs([r.rank[i] for i in tab.positions]) for r in fw.releases])
    if fw.name != KERAS:
        out["b"] = b.blob([[_runs(col) for col in zip(*r.builds, strict=True)] for r in fw.releases])
    return out


def _table(b: _Builder, targets: list[Target]) -> dict[str, Any]:
    b.resolved.clear()  # keyed by the candidates of one table (by identity)
    b.answered.clear()
    b.fix_texts.clear()
    positions = [i for i in b.choices if i < len(targets)]
    target = [_target_outcome(b, t) for t in targets]
    tab = _Table(targets=targets, positions=positions, ok=[x == 0 for x, _ in target])
    out: dict[str, Any] = {"t": _runs([target[i][0] for i in positions]),
                           "tt": _runs([target[i][1] for i in positions]), "f": {}}
    done: dict[str, _Fw] = {}
    for name in _frameworks(b):
        fw = _keras(b, tab, done[BACKEND]) if name == KERAS else _framework(b, tab, name)
        done[name] = fw
        out["f"][name] = _fw_json(b, tab, fw, done[BACKEND] if name == KERAS else None)
    return out


def _frameworks(b: _Builder) -> list[str]:
    return [f for f in FRAMEWORKS if b.provider.releases(f)]


class _Models(msgspec.Struct, frozen=True):
    """The GPU classes (CPU only first), each GPU model's class and its GPU as the spec reads it."""

    classes: list[_Class]
    of: dict[str, int]
    reqs: dict[str, GpuReq]


def explored_gpus(provider: Provider) -> list[Gpu]:
    """The GPU models the explorer answers for, by name: those of the Linux platforms (Apple's GPUs
    are on macOS alone)."""
    return sorted((g for g in provider.m.gpus if (g.platform or LINUX_PLATFORMS[0]) in LINUX_PLATFORMS),
                  key=lambda g: g.name)


def _classes(provider: Provider) -> _Models:
    """The GPU classes (CPU only first) and each GPU model's class (read once, before the workers
    start: they inherit it)."""
    classes = [_Class(key=("cpu",), gpu=None, vendor="cpu")]
    index: dict[tuple[str, ...], int] = {}
    of: dict[str, int] = {}
    reqs: dict[str, GpuReq] = {}
    for g in explored_gpus(provider):
        gpu = reqs[g.name] = _gpu_req(provider, g.name)
        jp = provider.jetpacks_for([g.name])
        key = (gpu.arch.name, gpu.family, gpu.vendor, gpu.platform,
               jp[-1].version.raw if jp and provider.is_jetson(g.name) else "", _forward_class(g))
        if key not in index:
            index[key] = len(classes)
            classes.append(_Class(key=key, gpu=gpu, vendor=gpu.vendor))
        of[g.name] = index[key]
    return _Models(classes=classes, of=of, reqs=reqs)


def _forward_class(g: Gpu) -> str:
    """What forward compatibility makes of a model (the solver tells the models apart by it): a
    data-center GPU it serves, a GeForce card or another model it refuses, each said its own way."""
    if g.forward_compat:
        return "data-center"
    return "geforce" if g.geforce else ""


def _gpu_req(provider: Provider, name: str) -> GpuReq:
    spec = parse_spec(project_toml(Choice(gpu=name)).replace('platform = "linux/amd64"\n', ""), "p", provider)
    return spec.targets[0].gpus[0]


def selector_data(provider: Provider, workers: int = 2) -> dict[str, Any]:
    """Everything the selector looks up, as plain JSON values: the tables of each GPU class and
    platform computed by ``workers`` processes (1: in this one), then merged in one order, so the
    data is the same bytes whatever the number of workers."""
    floors = provider.driver_floors(windows=False)
    choices = _choices(floors)
    models = _classes(provider)
    classes = models.classes
    jobs: list[_Job] = [(c, platform) for c in range(len(classes)) for platform in LINUX_PLATFORMS]
    parts = _parts(provider, classes, jobs, workers)
    b = _Builder(_Memo(provider), floors=floors, choices=choices)
    found = {job: (table, part) for part in parts for job, table in part.tables}
    tables: list[dict[str, Any]] = []
    by_class: list[dict[str, int]] = [{} for _ in classes]
    for c, platform in jobs:
        table, part = found[c, platform]
        if table is not None:
            by_class[c][platform] = len(tables)
            tables.append(_merged(b, part, table))
    drivers = [floors[i - 1].raw for i in choices[1:]]
    return {"format": FORMAT, "drivers": drivers, "platforms": list(LINUX_PLATFORMS),
            "frameworks": _framework_lists(b), "gpus": _gpus(b, models, drivers), "classes": by_class,
            "resolver": provider.gpu_resolver(),
            "tables": tables, "blobs": b.blobs, "texts": b.texts.items, "answers": b.answers.items,
            "fields": list(ANSWER_FIELDS)}


_Job = tuple[int, str]  # a GPU class (its index) and a platform


class _Part(msgspec.Struct, frozen=True):
    """What one worker computed: its tables (None: the spec is refused there) and the texts,
    answers and lists its ids refer to."""

    tables: list[tuple[_Job, dict[str, Any] | None]]
    texts: list[str]
    answers: list[list[str]]
    blobs: list[list[Any]]


def _work(provider: Provider, classes: list[_Class], jobs: list[_Job], take: Callable[[], int]) -> _Part:
    """The tables of the jobs ``take`` hands out (an index of ``jobs`` each time, till past the
    end), with registries of their own. A table does not depend on which worker made it, nor on
    the tables made before it there: the merge gives the same data however the jobs were shared."""
    floors = provider.driver_floors(windows=False)
    b = _Builder(_Memo(provider), floors=floors, choices=_choices(floors))
    out: list[tuple[_Job, dict[str, Any] | None]] = []
    while (k := take()) < len(jobs):
        c, platform = jobs[k]
        targets = _targets(b, classes[c], platform)
        out.append(((c, platform), _table(b, targets) if targets is not None else None))
    return _Part(tables=out, texts=b.texts.items, answers=b.answers.items, blobs=b.blobs)


_WORKER: dict[str, Any] = {}  # what a forked worker inherits: the provider, classes, jobs and the queue's ends


def _next_job(end: int) -> int:
    """The index of the next job no worker took yet, from the queue's front (``end`` 0) or back
    (1); past the end when none is left (the ends are shared by the workers)."""
    ends = _WORKER["ends"]
    with ends.get_lock():
        if ends[0] >= ends[1]:
            return len(_WORKER["jobs"])
        if end == 0:
            ends[0] += 1
            return int(ends[0] - 1)
        ends[1] -= 1
        return int(ends[1])


def _forked(worker: int) -> _Part:
    return _work(_WORKER["provider"], _WORKER["classes"], _WORKER["jobs"], functools.partial(_next_job, worker % 2))


def _parts(provider: Provider, classes: list[_Class], jobs: list[_Job], workers: int) -> list[_Part]:
    """The jobs shared out, each worker a forked process taking the next job when it is done with
    one: one from the front of a queue (the first platform's tables, the costly ones: an NVIDIA
    class there has the most builds), the other from its back (the other platforms', then the first
    platform's from the last), so that a worker meets few platforms (its caches serve one)."""
    if workers <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [_work(provider, classes, jobs, itertools.count().__next__)]
    queue = [j for j in jobs if j[1] == LINUX_PLATFORMS[0]] + [j for j in reversed(jobs) if j[1] != LINUX_PLATFORMS[0]]
    fork = multiprocessing.get_context("fork")
    _WORKER.update(provider=provider, classes=classes, jobs=queue, ends=fork.Array("i", [0, len(queue)]))
    try:
        with ProcessPoolExecutor(workers, mp_context=fork) as pool:
            return list(pool.map(_forked, range(workers)))
    finally:
        _WORKER.clear()


class _Remap(msgspec.Struct, frozen=True):
    """A worker's ids made the merged data's: each text, answer and list registered once."""

    b: _Builder
    part: _Part

    def text(self, i: int) -> int:
        return self.b.texts.held(self.part.texts[i])

    def plus(self, v: int) -> int:
        """0 for none, else 1+ a text."""
        return 1 + self.text(v - 1) if v else 0

    def outcome(self, v: int) -> int:
        """An answer (0 or more), else -1- a text."""
        return self.b.answers.row(self.part.answers[v]) if v >= 0 else -1 - self.text(-1 - v)

    def blob(self, i: int, how: Callable[[int], int] | None = None, depth: int = 1) -> int:
        """A list of the tables (its runs ``depth`` levels down), its values mapped by ``how``."""
        value = self.part.blobs[i]
        if how is not None:
            value = [_mapped(x, how) for x in value] if depth == 1 else [[_mapped(y, how) for y in x] for x in value]
        return self.b.blob(value)


def _merged(b: _Builder, part: _Part, table: dict[str, Any]) -> dict[str, Any]:
    """``table`` with its ids made the merged data's."""
    m = _Remap(b, part)
    out: dict[str, Any] = {"t": _mapped(table["t"], m.plus), "tt": _mapped(table["tt"], m.plus), "f": {}}
    for name, f in table["f"].items():
        g = {"r": m.blob(f["r"], m.outcome), "x": m.blob(f["x"]), "xt": m.blob(f["xt"], m.plus),
             "v": _mapped(f["v"], m.plus), "e": _mapped(f["e"], m.text), "h": m.blob(f["h"])}
        g["k"] = m.blob(f["k"])
        if "b" in f:
            g["b"] = m.blob(f["b"], m.plus, depth=2)
        out["f"][name] = g
    return out


def _mapped(runs: list[int], how: Callable[[int], int]) -> list[int]:
    """A run list with each value (every second number) mapped."""
    return [v if k % 2 == 0 else how(v) for k, v in enumerate(runs)]


def _choices(floors: list[Dotted]) -> list[int]:
    """The selector's drivers: the newest (0), and the newest floor of each driver branch (the
    oldest driver of the branch that every floor of the branch admits), as indexes 1+ of ``floors``."""
    newest = {d.major: i for i, d in enumerate(floors, start=1)}
    return [0, *sorted(newest.values())]


def _framework_lists(b: _Builder) -> dict[str, Any]:
    return {f: {"releases": [r.raw for r in b.provider.releases(f)],
                "builds": [[x.variant for x in b.provider.builds(r)] for r in b.provider.releases(f)]}
            for f in _frameworks(b)}


def _gpus(b: _Builder, models: _Models, drivers: list[str]) -> list[dict[str, Any]]:
    """Each GPU model: its names (the model's, nvidia-smi's and rocm-smi's), its class, its text
    in answers, and which choices the spec refuses (a driver for a GPU that takes none, a platform
    it does not run on). What the spec refuses follows from the class (vendor, implied platform,
    JetPack): a class whose first model the spec takes everywhere is taken everywhere; the models
    of other classes are read each, for the message names the model."""
    out = [{"name": CPU_ONLY, "names": [CPU_ONLY], "text": "", "cls": 0,
            "invalid": _invalid(b, CPU_ONLY, drivers[-1])}]
    taken: set[int] = set()  # the classes the spec takes with every choice
    for g in explored_gpus(b.provider):
        cls = models.of[g.name]
        invalid = [0] * (2 * len(LINUX_PLATFORMS)) if cls in taken else _invalid(b, g.name, drivers[-1])
        if not any(invalid):
            taken.add(cls)
        out.append({"name": g.name, "names": _names(b.provider, g), "text": gpu_text(models.reqs[g.name]),
                    "cls": cls, "invalid": invalid})
    return out


def _names(provider: Provider, g: Gpu) -> list[str]:
    """A model's names in the selector: its own, its aliases, and for an NVIDIA alias without the
    prefix the drivers since R470 print ("NVIDIA GeForce GTX 660 Ti") that spelling too, where the
    solver's look-up takes it to the same model."""
    names = {g.name, *g.aliases}
    if g.vendor == "nvidia":
        names |= {f"NVIDIA {a}" for a in g.aliases if not a.startswith("NVIDIA ") and provider.gpu(f"NVIDIA {a}") == g}
    return sorted(names)


def _invalid(b: _Builder, gpu: str, driver: str) -> list[int]:
    """For (no driver, a driver) x each platform: 0 when the spec is read, else 1+ its message."""
    out = []
    for d in ("", driver):
        for platform in LINUX_PLATFORMS:
            try:
                parse_spec(project_toml(Choice(gpu=gpu, driver=d, platform=platform)), "project.toml", b.provider)
                out.append(0)
            except SpecError as e:
                out.append(1 + b.texts.add(e.message.replace(d, DRIVER) if d else e.message))
    return out
