"""``envsolve data --verify``: re-check every row the package index can confirm.

Pure comparison: the index is read through a :class:`Reader` (``refresh.IndexClient`` is one; the
network stays there). For each framework release and each of its builds installed from the
default index, the facts the index states are compared with the rows: the release exists (and
each release on the index from the oldest row on has a row), its Pythons (the CPython tags of its
Linux x86_64 wheels, or what ``Requires-Python`` admits for pure wheels), its companions' Python
tags (which bound the Pythons a spec asking for the companion gets), the ``==`` pins of its wheels
on nvidia-*, cuda-toolkit and triton, jax's jaxlib and plugin pins, TensorFlow's ``and-cuda``
ranges and Keras pin. A framework plugs in by adding its check to :data:`CHECKS`.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .data import Build, Matrices, Release
from .domain import COMPANIONS_OF, FRAMEWORKS, PYTHONS_FROM
from .errors import MissingProject, RefreshError
from .index import pages as ix
from .versions import parse_python_minor, python_admits_minor

__all__ = ["CHECKS", "DATA_CHECKS", "Mismatch", "Reader", "Report", "render", "verify"]


class Reader(Protocol):
    """What verification reads from an index (``refresh.IndexClient`` implements it)."""

    def project(self, name: str) -> tuple[ix.DistFile, ...]: ...

    def metadata(self, f: ix.DistFile) -> ix.Metadata | None: ...

    def wheel_member(self, f: ix.DistFile, pattern: str, what: str = "") -> str | None: ...

    @property
    def warnings(self) -> list[str]: ...


@dataclass(frozen=True, kw_only=True, slots=True)
class Mismatch:
    """One fact on which the data and the index disagree."""

    row: str  # "torch.toml torch 2.9.0 cu128"
    fact: str  # "pin nvidia-cudnn-cu12"
    data: str
    index: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Report:
    index_url: str
    checked: int  # facts compared
    mismatches: tuple[Mismatch, ...]
    warnings: tuple[str, ...]  # facts that could not be read, so were not compared


@dataclass(slots=True)
class _Ctx:
    reader: Reader
    m: Matrices
    known_pythons: tuple[str, ...] = ()
    pages: dict[str, dict[Version, tuple[ix.DistFile, ...]] | None] = field(default_factory=dict)
    checked: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def page(self, name: str) -> dict[Version, tuple[ix.DistFile, ...]] | None:
        """Releases of ``name`` (yanked files dropped); None, with a warning, when the index lacks it."""
        if name not in self.pages:
            try:
                files = self.reader.project(name)
            except MissingProject:
                self.warnings.append(f"{name}: not on this index, so its facts were not checked")
                self.pages[name] = None
            else:
                self.pages[name] = {v: fs for v, fs in ix.releases(f for f in files if not f.yanked).items()}
        return self.pages[name]

    def compare(self, row: str, fact: str, data: str, index: str, same: bool | None = None) -> None:
        self.checked += 1
        if not (data == index if same is None else same):
            self.mismatches.append(Mismatch(row=row, fact=fact, data=data or "-", index=index or "-"))

    def metadata(self, label: str, files: Iterable[ix.DistFile]) -> tuple[ix.DistFile, ix.Metadata] | None:
        """The metadata of the best Linux x86_64 wheel among ``files`` (a warning when none can be read)."""
        for f in ix.metadata_candidates(files)[:3]:
            try:
                md = self.reader.metadata(f)
            except RefreshError as e:
                self.warnings.append(f"{label}: {e.message}")
                continue
            if md is not None:
                return f, md
        self.warnings.append(f"{label}: no metadata could be read for its Linux x86_64 wheels; pins not checked")
        return None


    def member(self, label: str, files: Iterable[ix.DistFile], pattern: str) -> str | None:
        """A member of the best Linux x86_64 wheel among ``files`` (a warning when none can be read)."""
        for f in ix.metadata_candidates(files)[:3]:
            try:
                text = self.reader.wheel_member(f, pattern)
            except RefreshError as e:
                self.warnings.append(f"{label}: {e.message}")
                continue
            if text is not None:
                return text
        self.warnings.append(f"{label}: {pattern} could not be read out of its wheels; not checked")
        return None


def _show(pythons: Iterable[str]) -> str:
    return ", ".join(sorted(set(pythons), key=parse_python_minor))


def _wheel_python(f: ix.DistFile, fallback: str) -> str:
    m = re.search(r"-cp(\d)(\d+)-", f.filename)
    return f"{m.group(1)}.{m.group(2)}" if m else fallback


def _requires_python(files: Sequence[ix.DistFile], md: ix.Metadata | None = None) -> str:
    return next((f.requires_python for f in files if f.requires_python), md.requires_python if md else "")


def _release_pythons(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> tuple[str, ...] | None:
    """The Pythons the index admits for ``rel``: its wheels' tags (or its jaxlib's for jax)."""
    source = PYTHONS_FROM.get(rel.package)
    if source:
        page = ctx.page(source)
        comp = dict(rel.companions).get(source, rel.raw)
        if page is None:
            return None
        return ix.cpython_minors(page.get(Version(comp), ()), ctx.known_pythons, _requires_python(files))
    return ix.cpython_minors(files, ctx.known_pythons)


def _same_spec(data: str, index: str) -> bool:
    """Whether a data pin (a version, or a range) says what an index requirement says."""
    if not index:
        return not data
    try:
        want = SpecifierSet(index)
    except InvalidSpecifier:
        return data == index
    try:
        Version(data)
    except InvalidVersion:
        try:
            return SpecifierSet(data) == want
        except InvalidSpecifier:
            return False
    exact = ix.exact_version(want)
    if exact:
        return Version(exact) == Version(data)
    # ">=v,<=v" says "==v" too
    return {(s.operator, Version(s.version)) for s in want} == {(">=", Version(data)), ("<=", Version(data))}


def _req_text(req: Requirement | None) -> str:
    if req is None:
        return ""
    return ix.exact_version(req.specifier) or str(req.specifier)


def _combined(reqs: Iterable[Requirement]) -> dict[str, str]:
    """Each name's requirement, the requirements on one name joined (an extra may narrow the base)."""
    specs: dict[str, SpecifierSet] = {}
    for r in reqs:
        name = str(canonicalize_name(r.name))
        specs[name] = specs[name] & r.specifier if name in specs else r.specifier
    return {n: ix.exact_version(sp) or str(sp) for n, sp in specs.items()}


def _same_pin(ctx: _Ctx, name: str, data: str, index: str) -> bool:
    """Whether the data's pin and the index's requirement admit the same releases of ``name`` (when
    its page has been read), else whether they are written alike."""
    page = ctx.pages.get(name)
    if page and data and index:
        try:
            want = SpecifierSet(f"=={index}" if _is_version(index) else index)
            have = SpecifierSet(f"=={data}" if _is_version(data) else data)
        except InvalidSpecifier:
            return False
        versions = list(page)
        return {v for v in versions if v in have} == {v for v in versions if v in want}
    return _same_spec(data, index)


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


# ---------------------------------------------------------------------------- the checks


def _versions(ctx: _Ctx, fw: str, rels: Sequence[Release]) -> None:
    """Each row's version is on the index; each release on the index from the oldest row on has a row."""
    page = ctx.page(fw)
    if page is None:
        return
    known = {r.version for r in rels}
    for r in rels:
        ctx.compare(f"{fw}.toml {fw} {r.raw}", "on the index", "released",
                    "released" if r.version in page else "not found")
    floor = min(known, default=None)
    for v in page:
        if floor is not None and v > floor and v not in known:
            ctx.compare(f"{fw}.toml {fw} {v}", "has a row", "no row", "released")


def _pythons(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    label = f"{rel.package}.toml {rel.package} {rel.raw}"
    got = _release_pythons(ctx, rel, files)
    if got is None:
        return
    # a Python only another index's build serves (nvidia-tensorflow 1.15.5's 3.8) is not this page's
    builds = [b for b in ctx.m.builds if b.package == rel.package and b.version == rel.version]
    here = {p for b in builds if b.index == "pypi" for p in (b.python or rel.python)}
    elsewhere = {p for b in builds if b.index != "pypi" and b.python for p in b.python} - here
    ours = tuple(p for p in rel.python if p not in elsewhere)
    ctx.compare(label, "Python (wheel tags, Requires-Python)", _show(ours), _show(got))
    rp = _requires_python(files)
    if rp:
        outside = [p for p in rel.python if not python_admits_minor(rp, p)]
        ctx.compare(label, "Requires-Python", f"admits {_show(rel.python)}",
                    f"{rp}" + (f" (excludes {_show(outside)})" if outside else ""), same=not outside)


def _companions(ctx: _Ctx, rel: Release) -> None:
    """Each companion exists and has wheels for every Python the row lists (else a spec asking
    for it would get a Python it has no wheel for)."""
    label = f"{rel.package}.toml {rel.package} {rel.raw}"
    for comp, version in rel.companions:
        page = ctx.page(comp)
        if page is None:
            continue
        try:
            files = page.get(Version(version))
        except InvalidVersion:
            files = None
        ctx.compare(label, f"companion {comp} {version} on the index", "released",
                    "released" if files else "not found")
        if not files or comp in PYTHONS_FROM.values():
            continue  # jax's Pythons are its jaxlib's already
        has = ix.cpython_minors(files, ctx.known_pythons)
        usable = [p for p in rel.python if p in has]
        data = dict(rel.companion_python).get(comp, rel.python)
        ctx.compare(label, f"Python with companion {comp} {version}", _show(data), _show(usable))


def _pins(ctx: _Ctx, label: str, data: dict[str, str], index: dict[str, str]) -> None:
    for name in sorted(set(data) | set(index)):
        d, i = data.get(name, ""), index.get(name, "")
        ctx.compare(label, f"pin {name}", d, i, same=_same_pin(ctx, name, d, i))


def _default_index_builds(ctx: _Ctx, rel: Release) -> list[Build]:
    return [b for b in ctx.m.builds if b.package == rel.package and b.version == rel.version
            and b.index == "pypi" and not b.dist]


def _bundled(reqs: Iterable[Requirement]) -> dict[str, str]:
    return {str(canonicalize_name(r.name)): _req_text(r) for r in reqs if ix.is_bundled(r.name)}


def _torch(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    builds = _default_index_builds(ctx, rel)
    if not builds:
        return
    got = ctx.metadata(f"torch {rel.raw}", files)
    if got is None:
        return
    f, md = got
    # the == pins at each Python of the row (markers such as python_version < "3.12" drop some)
    per_python = {p: dict(ix.bundled_facts(ix.requirements(md, python=p)).pins) for p in rel.python}
    facts = ix.bundled_facts(ix.requirements(md, python=_wheel_python(f, rel.python[-1])))
    for b in builds:
        label = f"torch.toml torch {rel.raw} {b.variant}"
        data = dict(b.pins)
        for name in sorted(set(data) | {n for pins in per_python.values() for n in pins}):
            at = {p: pins.get(name, "") for p, pins in per_python.items()}
            said = sorted(set(at.values()) - {""}, key=Version)
            where = [p for p, v in at.items() if v]
            index = ", ".join(said) + (f" (Python {_show(where)} only)" if said and len(where) < len(at) else "")
            # a pin the data lists must be the index's wherever it applies; one the data omits may
            # only be a pin that some Pythons do not get
            same = (said == [data[name]]) if name in data else len(where) < len(at)
            ctx.compare(label, f"pin {name}", data.get(name, ""), index, same=same)
        ctx.compare(label, "CUDA runtime", b.cuda.raw if b.cuda else "", facts.cuda,
                    same=(b.cuda.raw if b.cuda else "") == facts.cuda or not facts.cuda_runtime)
        if facts.cudnn and _is_version(facts.cudnn):
            ctx.compare(label, "cuDNN", b.cudnn, facts.cudnn)


def _jax(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    builds = _default_index_builds(ctx, rel)
    if not builds:
        return
    got = ctx.metadata(f"jax {rel.raw}", files)
    if got is None:
        return
    _, md = got
    py = rel.python[-1] if rel.python else "3.12"
    for b in builds:
        label = f"jax.toml jax {rel.raw} {b.variant}" + (f" [{b.extra}]" if b.extra else "")
        reqs = ix.requirements(md, python=py, extra=b.extra)
        if b.extra and b.extra not in md.provides_extra:
            ctx.compare(label, f"extra {b.extra}", "exists", "not declared")
            continue
        # jax's own requirements name jaxlib and the plugins; a pin jax does not name (the pjrt,
        # a plugin installed beside it) is the plugin's fact, not jax's
        every = _combined(reqs)
        named = {n: v for n, v in every.items() if n == "jaxlib" or re.fullmatch(r"jax-(cuda\d+|rocm\d*)-plugin", n)}
        data = {k: v for k, v in b.pins if k in every}
        _pins(ctx, label, data, named)
        _plugin_pythons(ctx, rel, b, label)


def _plugin_pythons(ctx: _Ctx, rel: Release, b: Build, label: str) -> None:
    """A plugin's own wheels bound the Pythons of the build that installs it."""
    for name, pin in b.pins:
        if not re.fullmatch(r"jax-(cuda\d+|rocm\d*)-plugin", name):
            continue
        page = ctx.page(name)
        if page is None:
            continue
        try:
            spec = SpecifierSet(f"=={pin}" if _is_version(pin) else pin)
        except InvalidSpecifier:
            continue
        matching = [v for v in page if v in spec]
        if not matching:
            ctx.compare(label, f"{name} {pin} on the index", "released", "not found")
            continue
        # pip takes, per Python, the newest matching release that has a wheel for it
        has = {p for v in matching for p in ix.cpython_minors(page[v], ctx.known_pythons)}
        usable = [p for p in rel.python if p in has]
        ctx.compare(label, f"Python with {name} {pin}", _show(b.python or rel.python), _show(usable))


def _tensorflow(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    builds = _default_index_builds(ctx, rel)
    _tensorflow_archs(ctx, rel, files, builds)
    needs_keras = bool(dict(rel.requires).get("keras"))
    if not builds and not needs_keras:
        return
    got = ctx.metadata(f"tensorflow {rel.raw}", files)
    if got is None:
        return
    f, md = got
    py = _wheel_python(f, rel.python[-1])
    reqs = ix.requirements(md, python=py)
    label = f"tensorflow.toml tensorflow {rel.raw}"
    ctx.compare(label, "requires keras", dict(rel.requires).get("keras", ""),
                _req_text(ix.requirement_of(reqs, "keras")),
                same=_same_spec(dict(rel.requires).get("keras", ""), _req_text(ix.requirement_of(reqs, "keras"))))
    for b in builds:
        extra_reqs = _combined(ix.requirements(md, python=py, extra=b.extra) if b.extra else reqs)
        # the bundled libraries, and whatever else the row pins (tensorrt in 2.14-2.15)
        index = {n: v for n, v in extra_reqs.items() if ix.is_bundled(n) or n in dict(b.pins)}
        _pins(ctx, f"{label} {b.variant}" + (f" [{b.extra}]" if b.extra else ""), dict(b.pins), index)


_BUILD_INFO = r"tensorflow/python/platform/build_info\.py"


def _build_info(text: str) -> dict[str, object]:
    """The ``build_info`` table of TensorFlow's build_info.py: a literal OrderedDict of pairs
    (2.4 and later) or a literal dict (2.3)."""
    m = re.search(r"OrderedDict\((\[.*\])\)", text, re.DOTALL) or re.search(r"^build_info = (\{.*\})$", text,
                                                                           re.DOTALL | re.MULTILINE)
    if m is None:
        return {}
    try:
        table = ast.literal_eval(m.group(1))
    except (ValueError, SyntaxError):
        return {}
    if isinstance(table, dict):
        return {str(k): v for k, v in table.items()}
    return {str(k): v for k, v in table} if isinstance(table, list) else {}


def _tensorflow_archs(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile], builds: Sequence[Build]) -> None:
    """A CUDA wheel says what it was built for: build_info.py's CUDA version and compute capabilities
    (``sm_NN`` is SASS, ``compute_NN`` PTX only)."""
    cuda_builds = [b for b in builds if b.accelerator == "cuda"]
    if not cuda_builds:
        return
    text = ctx.member(f"tensorflow {rel.raw}", files, _BUILD_INFO)
    if text is None:
        return
    info = _build_info(text)
    caps = info.get("cuda_compute_capabilities")
    if not isinstance(caps, list):
        ctx.warnings.append(f"tensorflow {rel.raw}: its build_info.py has no cuda_compute_capabilities list; "
                            "arch lists not checked")
        return
    sass = [str(c) for c in caps if str(c).startswith("sm_")]
    ptx = ["sm_" + str(c).split("_", 1)[1] for c in caps if str(c).startswith("compute_")]
    cuda = ".".join(str(info.get("cuda_version", "")).split(".")[:2])
    for b in cuda_builds:
        label = f"tensorflow.toml tensorflow {rel.raw} {b.variant}"
        ctx.compare(label, "SASS (build_info.py)", ", ".join(b.archs), ", ".join(sass))
        ctx.compare(label, "PTX (build_info.py)", ", ".join(b.ptx), ", ".join(ptx))
        ctx.compare(label, "CUDA (build_info.py)", ".".join(map(str, b.cuda.prefix(2))) if b.cuda else "", cuda)


def _keras(ctx: _Ctx, rel: Release, files: Sequence[ix.DistFile]) -> None:
    """Keras is a pure wheel: its Requires-Python (from the page, else the metadata) is the fact."""
    if _requires_python(files):
        return  # compared by _pythons already
    got = ctx.metadata(f"keras {rel.raw}", files)
    if got is None or not got[1].requires_python:
        return
    admitted = [p for p in ctx.known_pythons if python_admits_minor(got[1].requires_python, p)]
    ctx.compare(f"keras.toml keras {rel.raw}", "Python (Requires-Python)", _show(rel.python), _show(admitted))


def _cudnn_rows(ctx: _Ctx) -> None:
    """Each cuDNN release on the index (nvidia-cudnn-cuXX) has a cudnn.toml row (rows of releases
    NVIDIA published outside the index are not expected there)."""
    for major in sorted({c.cuda_major for c in ctx.m.cudnn}):
        page = ctx.page(f"nvidia-cudnn-cu{major}")
        if page is None:
            continue
        known = {c.version.prefix(3) for c in ctx.m.cudnn if c.cuda_major == major}
        seen: set[tuple[int, ...]] = set()
        for v in page:
            key = (v.release + (0, 0))[:3]
            if key not in seen:
                seen.add(key)
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


def _known_pythons(m: Matrices, pages: Iterable[dict[Version, tuple[ix.DistFile, ...]] | None]) -> tuple[str, ...]:
    """The Pythons the data knows, and every newer CPython minor the index has wheels for."""
    data = {p for r in m.releases for p in r.python}
    floor = min((parse_python_minor(p) for p in data), default=(3, 0))
    seen: set[str] = set()
    for page in pages:
        for files in (page or {}).values():
            for f in files:
                for mm in re.findall(r"cp(\d)(\d+)-cp\d+-", f.filename):
                    seen.add(f"{mm[0]}.{mm[1]}")
    return tuple(sorted((p for p in data | seen if parse_python_minor(p) >= floor), key=parse_python_minor))


def verify(reader: Reader, m: Matrices, packages: Sequence[str] = (*FRAMEWORKS, *DATA_CHECKS),
           index_url: str = "") -> Report:
    """Compare the rows of ``m`` for ``packages`` (frameworks, and "cudnn" / "cuda" for the CUDA
    libraries' rows) with what ``reader``'s index says."""
    ctx = _Ctx(reader=reader, m=m)
    wanted = {canonicalize_name(p) for p in packages}
    fws = [fw for fw in FRAMEWORKS if fw in wanted]
    for fw in fws:
        ctx.page(fw)
        for comp in COMPANIONS_OF.get(fw, ()):
            ctx.page(comp)
    ctx.known_pythons = _known_pythons(m, ctx.pages.values())
    for fw in fws:
        rels = sorted((r for r in m.releases if r.package == fw), key=lambda r: r.version)
        _versions(ctx, fw, rels)
        page = ctx.page(fw)
        if page is None:
            continue
        for rel in rels:
            files = page.get(rel.version)
            if not files:
                continue
            _pythons(ctx, rel, files)
            _companions(ctx, rel)
            check = CHECKS.get(fw)
            if check is not None:
                check(ctx, rel, files)
    for name, data_check in DATA_CHECKS.items():
        if name in wanted:
            data_check(ctx)
    return Report(index_url=index_url, checked=ctx.checked, mismatches=tuple(ctx.mismatches),
                  warnings=tuple(reader.warnings) + tuple(ctx.warnings))


def render(report: Report) -> str:
    """The table ``envsolve data --verify`` prints: one line per mismatch, then a summary."""
    lines = [f"index: {report.index_url}"] if report.index_url else []
    if report.mismatches:
        head = ("row", "fact", "data says", "index says")
        rows = [(x.row, x.fact, x.data, x.index) for x in report.mismatches]
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(3)]
        for r in [head, *rows]:
            lines.append("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    for w in report.warnings:
        lines.append(f"warning: {w}")
    n = len(report.mismatches)
    lines.append(f"{report.checked} fact(s) checked, {n} mismatch(es)")
    return "\n".join(lines) + "\n"
