"""``envsolve data --verify``: re-check every row the package index can confirm.

Pure comparison: the index is read through an :class:`envsolve.index.reader.Reader`
(``IndexClient`` is one; the network stays in ``envsolve/index/``). For each framework release and
each of its builds installed from the default index, the facts the index states are compared with
the rows: the release exists (and each final release on the index newer than the oldest row has
a row, as has each of its main distributions', with a tip on how to add it),
its Pythons (the CPython tags of its Linux x86_64 wheels, or what ``Requires-Python`` admits for
pure wheels), its companions' Python tags (which bound the Pythons a spec asking for the companion
gets), the ``==`` pins of its wheels on nvidia-*, cuda-toolkit and triton, jax's jaxlib and plugin
pins, TensorFlow's ``and-cuda`` ranges and Keras pin. A framework plugs in by adding its check to
:data:`CHECKS`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TypeVar

import msgspec
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .data import Build, Matrices, Release
from .domain import COMPANIONS_OF, DEFAULT_PLATFORM, FRAMEWORKS, PYTHONS_FROM
from .errors import MissingProject, Problem, RefreshError, SpecError
from .index import metadata as md_
from .index import pages as ix
from .index.reader import Reader
from .refresh import dist_versions, new_versions
from .versions import parse_python_minor, python_admits_minor
from .voice import silent

__all__ = ["CHECKS", "DATA_CHECKS", "Mismatch", "Report", "checked_packages", "report_text", "verify"]

Page = dict[Version, tuple[ix.DistFile, ...]]
_T = TypeVar("_T")


class Mismatch(msgspec.Struct, frozen=True, kw_only=True):
    """One fact on which the data and the index disagree."""

    row: str  # "torch.toml torch 2.9.0 cu128"
    fact: str  # "pin nvidia-cudnn-cu12"
    data: str
    index: str


class Report(msgspec.Struct, frozen=True, kw_only=True):
    index_url: str
    checked: int  # facts compared
    mismatches: tuple[Mismatch, ...]
    warnings: tuple[str, ...]  # facts that could not be read, so were not compared
    tips: tuple[str, ...] = ()  # how to add each release on the index that the data lacks


class _Ctx(msgspec.Struct):
    reader: Reader
    m: Matrices
    known_pythons: tuple[str, ...] = ()
    pages: dict[str, Page | None] = msgspec.field(default_factory=dict)
    checked: int = 0
    mismatches: list[Mismatch] = msgspec.field(default_factory=list)
    warnings: list[str] = msgspec.field(default_factory=list)
    tips: list[str] = msgspec.field(default_factory=list)  # how to add each release the data lacks

    def page(self, name: str) -> Page | None:
        """Releases of ``name`` (yanked files dropped); None, with a warning, when the index lacks it."""
        if name not in self.pages:
            try:
                files = self.reader.project(name)
            except MissingProject:
                self.warnings.append(f"{name}: not on this index, so its facts were not checked")
                self.pages[name] = None
            else:
                self.pages[name] = ix.releases(f for f in files if not f.yanked)
        return self.pages[name]

    def builds_of(self, rel: Release) -> list[Build]:
        return [b for b in self.m.builds if (b.package, b.version) == (rel.package, rel.version)]

    def compare(self, row: str, fact: str, data: str, index: str, same: bool | None = None) -> None:
        self.checked += 1
        if not (data == index if same is None else same):
            self.mismatches.append(Mismatch(row=row, fact=fact, data=data or "-", index=index or "-"))

    def _first(self, label: str, files: Iterable[ix.DistFile],
               read: Callable[[ix.DistFile], _T | None]) -> _T | None:
        """What ``read`` gives for the best Linux x86_64 wheel among ``files`` (the next one
        when a file fails, with a warning)."""
        for f in ix.metadata_candidates(files)[:3]:
            try:
                got = read(f)
            except RefreshError as e:
                self.warnings.append(f"{label}: {e.message}")
                continue
            if got is not None:
                return got
        return None

    def metadata(self, label: str, files: Iterable[ix.DistFile]) -> tuple[ix.DistFile, md_.Metadata] | None:
        """The metadata of the best Linux x86_64 wheel among ``files`` (a warning when none can be read)."""
        got = self._first(label, files, lambda f: (f, md) if (md := self.reader.metadata(f)) else None)
        if got is None:
            self.warnings.append(f"{label}: no metadata could be read for its Linux x86_64 wheels; pins not checked")
        return got

    def member(self, label: str, files: Iterable[ix.DistFile], pattern: str) -> str | None:
        """A member of the best Linux x86_64 wheel among ``files`` (a warning when none can be read)."""
        text = self._first(label, files, lambda f: self.reader.wheel_member(f, pattern))
        if text is None:
            self.warnings.append(f"{label}: {pattern} could not be read out of its wheels; not checked")
        return text


def _show(pythons: Iterable[str]) -> str:
    return ", ".join(sorted(set(pythons), key=parse_python_minor))


def _release_pythons(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> tuple[str, ...] | None:
    """The Pythons the index admits for ``rel``: its wheels' tags (or its jaxlib's for jax)."""
    source = PYTHONS_FROM.get(rel.package)
    if not source:
        return ix.release_pythons(files, ctx.known_pythons)
    page = ctx.page(source)
    if page is None:
        return None
    companion = Version(dict(rel.companions).get(source, rel.raw))
    return ix.release_pythons(files, ctx.known_pythons, page.get(companion, ()))


def _specifier(text: str) -> SpecifierSet | None:
    try:
        return SpecifierSet(text)
    except InvalidSpecifier:
        return None


def _pin_spec(text: str) -> SpecifierSet | None:
    """A pin as a specifier set: a version is ``==version``; None when it is neither."""
    return _specifier(f"=={text}" if _is_version(text) else text)


def _spans_one(spec: SpecifierSet, version: str) -> bool:
    """Whether ``spec`` says ``==version``: exactly, or as ``>=v,<=v``."""
    exact = md_.exact_version(spec)
    if exact:
        return Version(exact) == Version(version)
    return {(s.operator, Version(s.version)) for s in spec} == {(">=", Version(version)), ("<=", Version(version))}


def _same_spec(data: str, index: str) -> bool:
    """Whether a data pin (a version, or a range) says what an index requirement says."""
    want = _specifier(index) if index else None
    if want is None:
        return data == index
    if _is_version(data):
        return _spans_one(want, data)
    return _specifier(data) == want


def _req_text(req: Requirement | None) -> str:
    if req is None:
        return ""
    return md_.exact_version(req.specifier) or str(req.specifier)


def _combined(reqs: Iterable[Requirement]) -> dict[str, str]:
    """Each name's requirement, the requirements on one name joined (an extra may narrow the base)."""
    specs: dict[str, SpecifierSet] = {}
    for r in reqs:
        name = str(canonicalize_name(r.name))
        specs[name] = specs[name] & r.specifier if name in specs else r.specifier
    return {n: md_.exact_version(sp) or str(sp) for n, sp in specs.items()}


def _admits(page: Page, spec: SpecifierSet) -> set[Version]:
    """The releases of ``page`` that ``spec`` admits."""
    return {v for v in page if v in spec}


def _same_pin(ctx: _Ctx, name: str, data: str, index: str) -> bool:
    """Whether the data's pin and the index's requirement admit the same releases of ``name`` (when
    its page has been read), else whether they are written alike."""
    page = ctx.pages.get(name)
    if not (page and data and index):
        return _same_spec(data, index)
    want, have = _pin_spec(index), _pin_spec(data)
    return want is not None and have is not None and _admits(page, have) == _admits(page, want)


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


# ---------------------------------------------------------------------------- the checks


def _released(found: object) -> str:
    return "released" if found else "not found"


def _versions(ctx: _Ctx, fw: str, rels: Sequence[Release]) -> None:
    """Each row's version is on the index; each final release on the index newer than the oldest
    row has a row, and so has each of its main distributions' (:func:`_main_dists`)."""
    page = ctx.page(fw)
    if page is None or not rels:
        return
    for r in rels:
        ctx.compare(f"{fw}.toml {fw} {r.raw}", "on the index", "released", _released(r.version in page))
    _missing(ctx, fw, fw, page, {r.version for r in rels})
    for dist in _main_dists(ctx, rels):
        if (dist_page := ctx.page(dist)) is not None:
            _missing(ctx, fw, dist, dist_page, {Version(v) for v in dist_versions(ctx.m, dist) if _is_version(v)})


def _missing(ctx: _Ctx, fw: str, name: str, page: Page, known: set[Version]) -> None:
    """The releases of ``name`` the index has and the data lacks, by refresh's rule of what is new
    (:func:`envsolve.refresh.new_versions`: newer than the oldest the data has), each a mismatch
    with a tip saying how to add it."""
    what, lacks = ("row", "no row") if name == fw else ("build", "no build")
    for v in new_versions(known, page):
        ctx.compare(f"{fw}.toml {name} {v}", f"has a {what}", lacks, "released")
        ctx.tips.append(_add_tip(fw, name, v, known))


def _main_dists(ctx: _Ctx, rels: Sequence[Release]) -> list[str]:
    """The distributions other than the framework's own name that its newest such release installs
    from the default index (onnxruntime-gpu, cupy-cuda12x and cupy-cuda13x, tensorflow-cpu): ones
    the data stopped following (tensorflow-gpu, tensorflow-macos, cupy-cuda11x) are not its main ones."""
    for rel in reversed(rels):
        builds = [b for b in ctx.builds_of(rel) if b.index == "pypi" and b.dist not in ("", rel.package)]
        if builds:
            return sorted({b.dist for b in builds})
    return []


def _add_tip(fw: str, name: str, v: Version, known: set[Version]) -> str:
    """How to add release ``v`` of ``name`` (the framework, or one of its distributions)."""
    before = max((k for k in known if k < v), default=None)
    model = f" on {name} {before}'s" if before is not None else ""
    if name == fw:
        return (f"add {fw} {v}: `envsolve refresh --package {fw} --write` writes its [[release]] row from the "
                f"index; model its [[build]] rows{model} where the index has the same variants (arch lists from "
                "its release notes or build files, else confidence = \"low\" and a note)")
    return (f"add {name} {v}: a [[build]] of {fw} {v} with dist = \"{name}\" in {fw}.toml, modelled{model} "
            f"(its Pythons from the wheels `envsolve refresh --package {name}` reads)")


def _elsewhere(rel: Release, builds: Sequence[Build]) -> set[str]:
    """The Pythons only another index's build of ``rel`` serves (nvidia-tensorflow 1.15.5's 3.8)."""
    ours = [b.python or rel.python for b in builds if b.index == "pypi"]
    theirs = [b.python for b in builds if b.index != "pypi"]
    return set().union(*theirs) - set().union(*ours)


def _this_index_pythons(ctx: _Ctx, rel: Release) -> tuple[str, ...]:
    """The row's Pythons but those only another index's build serves."""
    elsewhere = _elsewhere(rel, ctx.builds_of(rel))
    return tuple(p for p in rel.python if p not in elsewhere)


def _requires_python_check(ctx: _Ctx, label: str, rel: Release, rp: str) -> None:
    outside = [p for p in rel.python if not python_admits_minor(rp, p)]
    ctx.compare(label, "Requires-Python", f"admits {_show(rel.python)}",
                f"{rp}" + (f" (excludes {_show(outside)})" if outside else ""), same=not outside)


def _pythons(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    label = f"{rel.package}.toml {rel.package} {rel.raw}"
    got = _release_pythons(ctx, rel, files)
    if got is None:
        return
    ctx.compare(label, "Python (wheel tags, Requires-Python)", _show(_this_index_pythons(ctx, rel)), _show(got))
    if rp := ix.requires_python_of(files):
        _requires_python_check(ctx, label, rel, rp)


def _companion_files(ctx: _Ctx, comp: str, version: str) -> tuple[ix.DistFile, ...] | None:
    """The companion release's files; () when the index lacks that release, None when it lacks the companion."""
    page = ctx.page(comp)
    return None if page is None else page.get(Version(version), ()) if _is_version(version) else ()


def _companions(ctx: _Ctx, rel: Release) -> None:
    """Each companion exists and has wheels for every Python the row lists (else a spec asking
    for it would get a Python it has no wheel for); jax's Pythons are its jaxlib's already."""
    label = f"{rel.package}.toml {rel.package} {rel.raw}"
    for comp, version in rel.companions:
        files = _companion_files(ctx, comp, version)
        if files is not None:
            ctx.compare(label, f"companion {comp} {version} on the index", "released", _released(files))
        if files and comp not in PYTHONS_FROM.values():
            has = ix.cpython_minors(files, ctx.known_pythons)
            data = dict(rel.companion_python).get(comp, rel.python)
            ctx.compare(label, f"Python with companion {comp} {version}", _show(data),
                        _show(set(has).intersection(rel.python)))


def _pins(ctx: _Ctx, label: str, data: dict[str, str], index: dict[str, str]) -> None:
    for name in sorted(set(data) | set(index)):
        d, i = data.get(name, ""), index.get(name, "")
        ctx.compare(label, f"pin {name}", d, i, same=_same_pin(ctx, name, d, i))


def _default_index_builds(ctx: _Ctx, rel: Release) -> list[Build]:
    """The Linux x86_64 builds of ``rel`` installed from the default index under the framework's own
    name: what the wheels whose metadata is read are (not the Mac wheels of an ``mps`` build)."""
    return [b for b in ctx.builds_of(rel) if b.index == "pypi" and not b.dist
            and (not b.platforms or DEFAULT_PLATFORM in b.platforms)]


def _pin_at_pythons(name: str, per_python: dict[str, dict[str, str]]) -> tuple[list[str], str]:
    """(the pins the index gives ``name`` across the row's Pythons, how the report shows them)."""
    at = {p: pins.get(name, "") for p, pins in per_python.items()}
    said = sorted(set(at.values()) - {""}, key=Version)
    where = [p for p, v in at.items() if v]
    partly = bool(said) and len(where) < len(at)
    return said, ", ".join(said) + (f" (Python {_show(where)} only)" if partly else "")


def _torch_pins(ctx: _Ctx, label: str, b: Build, per_python: dict[str, dict[str, str]]) -> None:
    """A pin the data lists must be the index's wherever it applies; one the data omits may only
    be a pin that some Pythons do not get."""
    data = dict(b.pins)
    for name in sorted(set(data) | {n for pins in per_python.values() for n in pins}):
        said, index = _pin_at_pythons(name, per_python)
        everywhere = all(pins.get(name) for pins in per_python.values())
        same = (said == [data[name]]) if name in data else not everywhere
        ctx.compare(label, f"pin {name}", data.get(name, ""), index, same=same)


def _torch_cuda(ctx: _Ctx, label: str, b: Build, facts: md_.BundledFacts) -> None:
    cuda = b.cuda.raw if b.cuda else ""
    ctx.compare(label, "CUDA runtime", cuda, facts.cuda, same=cuda == facts.cuda or not facts.cuda_runtime)
    if facts.cudnn and _is_version(facts.cudnn):
        ctx.compare(label, "cuDNN", b.cudnn, facts.cudnn)


def _torch(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    builds = _default_index_builds(ctx, rel)
    got = ctx.metadata(f"torch {rel.raw}", files) if builds else None
    if got is None:
        return
    f, md = got
    # the == pins at each Python of the row (markers such as python_version < "3.12" drop some)
    per_python = {p: dict(md_.bundled_facts(md_.requirements(md, python=p)).pins) for p in rel.python}
    facts = md_.bundled_facts(md_.requirements(md, python=ix.wheel_python(f, rel.python[-1])))
    for b in builds:
        label = f"torch.toml torch {rel.raw} {b.variant}"
        _torch_pins(ctx, label, b, per_python)
        _torch_cuda(ctx, label, b, facts)


_PLUGIN = re.compile(r"jax-(cuda\d+|rocm\d*)-plugin")


def _jax_label(rel: Release, b: Build) -> str:
    return f"jax.toml jax {rel.raw} {b.variant}" + (f" [{b.extra}]" if b.extra else "")


def _jax_named(every: dict[str, str]) -> dict[str, str]:
    """The pins jax's own requirements name: jaxlib and the plugins."""
    return {n: v for n, v in every.items() if n == "jaxlib" or _PLUGIN.fullmatch(n)}


def _jax_build(ctx: _Ctx, rel: Release, b: Build, md: md_.Metadata) -> None:
    """jax's own requirements name jaxlib and the plugins; a pin jax does not name (the pjrt, a
    plugin installed beside it) is the plugin's fact, not jax's."""
    label = _jax_label(rel, b)
    if b.extra and b.extra not in md.provides_extra:
        ctx.compare(label, f"extra {b.extra}", "exists", "not declared")
        return
    every = _combined(md_.requirements(md, python=rel.python[-1] if rel.python else "3.12", extra=b.extra))
    _pins(ctx, label, {k: v for k, v in b.pins if k in every}, _jax_named(every))
    for name, pin in filter(lambda pin: _PLUGIN.fullmatch(pin[0]), b.pins):
        _plugin_pythons(ctx, rel, b, label, name, pin)


def _jax(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    builds = _default_index_builds(ctx, rel)
    got = ctx.metadata(f"jax {rel.raw}", files) if builds else None
    if got is None:
        return
    for b in builds:
        _jax_build(ctx, rel, b, got[1])


def _plugin_pythons(ctx: _Ctx, rel: Release, b: Build, label: str, name: str, pin: str) -> None:
    """A plugin's own wheels bound the Pythons of the build that installs it: pip takes, per
    Python, the newest matching release that has a wheel for it."""
    page = ctx.page(name)
    spec = _pin_spec(pin)
    if page is None or spec is None:
        return
    matching = [page[v] for v in _admits(page, spec)]
    if not matching:
        ctx.compare(label, f"{name} {pin} on the index", "released", "not found")
        return
    has = set().union(*(ix.cpython_minors(files, ctx.known_pythons) for files in matching))
    ctx.compare(label, f"Python with {name} {pin}", _show(b.python or rel.python), _show(has.intersection(rel.python)))


def _tensorflow_build(ctx: _Ctx, label: str, b: Build, md: md_.Metadata, py: str) -> None:
    """The bundled libraries of a build's extra, and whatever else the row pins (tensorrt in 2.14-2.15)."""
    extra_reqs = _combined(md_.requirements(md, python=py, extra=b.extra))
    index = {n: v for n, v in extra_reqs.items() if md_.is_bundled(n) or n in dict(b.pins)}
    _pins(ctx, f"{label} {b.variant}" + (f" [{b.extra}]" if b.extra else ""), dict(b.pins), index)


def _tensorflow(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    builds = _default_index_builds(ctx, rel)
    _tensorflow_archs(ctx, rel, files, builds)
    keras = dict(rel.requires).get("keras", "")
    got = ctx.metadata(f"tensorflow {rel.raw}", files) if builds or keras else None
    if got is None:
        return
    f, md = got
    py = ix.wheel_python(f, rel.python[-1])
    label = f"tensorflow.toml tensorflow {rel.raw}"
    index = _req_text(md_.requirement_of(md_.requirements(md, python=py), "keras"))
    ctx.compare(label, "requires keras", keras, index, same=_same_spec(keras, index))
    for b in builds:
        _tensorflow_build(ctx, label, b, md, py)


_BUILD_INFO = r"tensorflow/python/platform/build_info\.py"


def _build_info_literal(text: str) -> object:
    """The literal the ``build_info`` table is written as: an OrderedDict's list of pairs (2.4 and
    later) or a dict (2.3); None when there is none."""
    m = re.search(r"OrderedDict\((\[.*\])\)", text, re.DOTALL) or re.search(r"^build_info = (\{.*\})$", text,
                                                                           re.DOTALL | re.MULTILINE)
    try:
        return ast.literal_eval(m.group(1)) if m is not None else None
    except (ValueError, SyntaxError):
        return None


def _build_info(text: str) -> dict[str, object]:
    """The ``build_info`` table of TensorFlow's build_info.py."""
    table = _build_info_literal(text)
    pairs = table.items() if isinstance(table, dict) else table if isinstance(table, list) else ()
    return {str(k): v for k, v in pairs}


def _compare_archs(ctx: _Ctx, label: str, b: Build, caps: list[object], cuda: str) -> None:
    """``sm_NN`` is SASS, ``compute_NN`` SASS and PTX (TensorFlow builds both for it: the wheels' fatbins hold them)."""
    ptx = ["sm_" + str(c).split("_", 1)[1] for c in caps if str(c).startswith("compute_")]
    sass = [str(c) for c in caps if str(c).startswith("sm_")] + [a for a in ptx if a not in map(str, caps)]
    ctx.compare(label, "SASS (build_info.py)", ", ".join(b.archs), ", ".join(sass))
    ctx.compare(label, "PTX (build_info.py)", ", ".join(b.ptx), ", ".join(ptx))
    ctx.compare(label, "CUDA (build_info.py)", ".".join(map(str, b.cuda.prefix(2))) if b.cuda else "", cuda)


def _tensorflow_archs(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile], builds: Sequence[Build]) -> None:
    """A CUDA wheel says what it was built for: build_info.py's CUDA version and compute capabilities."""
    cuda_builds = [b for b in builds if b.accelerator == "cuda"]
    text = ctx.member(f"tensorflow {rel.raw}", files, _BUILD_INFO) if cuda_builds else None
    if text is None:
        return
    info = _build_info(text)
    caps = info.get("cuda_compute_capabilities")
    if not isinstance(caps, list):
        ctx.warnings.append(f"tensorflow {rel.raw}: its build_info.py has no cuda_compute_capabilities list; "
                            "arch lists not checked")
        return
    cuda = ".".join(str(info.get("cuda_version", "")).split(".")[:2])
    for b in cuda_builds:
        _compare_archs(ctx, f"tensorflow.toml tensorflow {rel.raw} {b.variant}", b, caps, cuda)


def _keras(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    """Keras is a pure wheel: its Requires-Python (from the page, else the metadata) is the fact."""
    if ix.requires_python_of(files):
        return  # compared by _pythons already
    got = ctx.metadata(f"keras {rel.raw}", files)
    if got is None or not got[1].requires_python:
        return
    admitted = [p for p in ctx.known_pythons if python_admits_minor(got[1].requires_python, p)]
    ctx.compare(f"keras.toml keras {rel.raw}", "Python (Requires-Python)", _show(rel.python), _show(admitted))


def _cudnn_keys(page: Page) -> list[tuple[int, ...]]:
    """The cuDNN x.y.z releases of a page, once each."""
    return list(dict.fromkeys((v.release + (0, 0))[:3] for v in page))


def _cudnn_rows(ctx: _Ctx) -> None:
    """Each cuDNN release on the index (nvidia-cudnn-cuXX) has a cudnn.toml row (rows of releases
    NVIDIA published outside the index are not expected there)."""
    for major in sorted({c.cuda_major for c in ctx.m.cudnn}):
        known = {c.version.prefix(3) for c in ctx.m.cudnn if c.cuda_major == major}
        for key in _cudnn_keys(ctx.page(f"nvidia-cudnn-cu{major}") or {}):
            ctx.compare(f"cudnn.toml cuDNN {'.'.join(map(str, key))} (CUDA {major})", "has a row",
                        "row" if key in known else "no row", "row")


def _toolkit_rows(ctx: _Ctx) -> None:
    """Each cuda-toolkit release on the index from the oldest row on has a cuda.toml row."""
    page = ctx.page("cuda-toolkit")
    known = {Version(t.version.raw) for t in ctx.m.toolkits}
    if page is None or not known:
        return
    for v in page:
        if v >= min(known):
            ctx.compare(f"cuda.toml CUDA {v}", "has a row", "row" if v in known else "no row", "row")


# what `--package` names beside the frameworks: the CUDA libraries' own rows
DATA_CHECKS: dict[str, Callable[[_Ctx], None]] = {"cudnn": _cudnn_rows, "cuda": _toolkit_rows}

CHECKS: dict[str, Callable[[_Ctx, Release, Sequence[ix.DistFile]], None]] = {
    "torch": _torch, "jax": _jax, "tensorflow": _tensorflow, "keras": _keras,
}


def _index_minors(pages: Iterable[Page | None]) -> set[str]:
    """Every CPython minor the pages have wheels for."""
    return {p for page in pages for files in (page or {}).values() for p in ix.cpython_tag_minors(files)}


def _known_pythons(m: Matrices, pages: Iterable[Page | None]) -> tuple[str, ...]:
    """The Pythons the data knows, and every newer CPython minor the index has wheels for."""
    data = {p for r in m.releases for p in r.python}
    floor = min((parse_python_minor(p) for p in data), default=(3, 0))
    found = data | _index_minors(pages)
    return tuple(sorted((p for p in found if parse_python_minor(p) >= floor), key=parse_python_minor))




def _read_pages(ctx: _Ctx, frameworks: Sequence[str], progress: Callable[[str], None]) -> None:
    names = [name for fw in frameworks for name in (fw, *COMPANIONS_OF.get(fw, ()))]
    for i, name in enumerate(names, 1):
        progress(f"reading {name} ({i}/{len(names)})")
        ctx.page(name)


def _release(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    """Every check of one framework release on the index."""
    _pythons(ctx, rel, files)
    _companions(ctx, rel)
    if (check := CHECKS.get(rel.package)) is not None:
        check(ctx, rel, files)


def _framework(ctx: _Ctx, fw: str) -> None:
    rels = sorted((r for r in ctx.m.releases if r.package == fw), key=lambda r: r.version)
    _versions(ctx, fw, rels)
    page = ctx.page(fw) or {}
    for rel in (r for r in rels if page.get(r.version) and not _off_index(ctx, r)):
        _release(ctx, rel, page[rel.version])


def _off_index(ctx: _Ctx, rel: Release) -> bool:
    """Whether every build of ``rel`` is only on a find-links page (jax 0.3 .. 0.4.17 but 0.4.13: its
    jaxlib left the default index), so the index can say nothing of its Pythons and companions."""
    builds = ctx.builds_of(rel)
    return bool(builds) and all(b.find_links for b in builds)


def checked_packages(packages: Sequence[str]) -> tuple[str, ...]:
    """What ``--package`` names (every framework and CUDA library row when nothing), each one
    something :func:`verify` checks: else a :class:`SpecError` naming them."""
    known = (*FRAMEWORKS, *DATA_CHECKS)
    if unknown := [p for p in packages if p not in known]:
        raise SpecError([Problem("--package", p, "is not something --verify checks") for p in unknown],
                        tip=f"pass one of: {', '.join(known)}")
    return tuple(packages) or known


def verify(reader: Reader, m: Matrices, packages: Sequence[str] = (*FRAMEWORKS, *DATA_CHECKS),
           index_url: str = "", progress: Callable[[str], None] = silent) -> Report:
    """Compare the rows of ``m`` for ``packages`` (frameworks, and "cudnn" / "cuda" for the CUDA
    libraries' rows) with what ``reader``'s index says; ``progress`` hears what is checked now."""
    ctx = _Ctx(reader=reader, m=m)
    wanted = {canonicalize_name(p) for p in packages}
    fws = [fw for fw in FRAMEWORKS if fw in wanted]
    _read_pages(ctx, fws, progress)
    ctx.known_pythons = _known_pythons(m, ctx.pages.values())
    checks = [*fws, *(name for name in DATA_CHECKS if name in wanted)]
    for i, name in enumerate(checks, 1):
        progress(f"checking the {name} rows ({i} of {len(checks)})")
        if name in DATA_CHECKS:
            DATA_CHECKS[name](ctx)
        else:
            _framework(ctx, name)
    return Report(index_url=index_url, checked=ctx.checked, mismatches=tuple(ctx.mismatches),
                  warnings=tuple(reader.warnings) + tuple(ctx.warnings), tips=tuple(ctx.tips))


def _table(mismatches: Sequence[Mismatch]) -> list[str]:
    """One line per mismatch under a header, the first three columns padded."""
    rows = [("row", "fact", "data says", "index says"), *((x.row, x.fact, x.data, x.index) for x in mismatches)]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return ["  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3] for r in rows]


def report_text(report: Report) -> str:
    """The table ``envsolve data --verify`` prints: one line per mismatch, then a summary."""
    lines = [f"index: {report.index_url}"] if report.index_url else []
    lines += _table(report.mismatches) if report.mismatches else []
    lines += [f"tip: {t}" for t in report.tips]
    lines += [f"warning: {w}" for w in report.warnings]
    lines.append(f"{report.checked} fact(s) checked, {len(report.mismatches)} mismatch(es)")
    return "\n".join(lines) + "\n"
