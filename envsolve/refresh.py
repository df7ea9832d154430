"""``envsolve refresh``: diff the package index against the matrices (the survey and its report).

The configured index (never a host written here) is read through an
:class:`envsolve.index.reader.Reader`: each package's project page, and the core metadata files of
new releases (wheels are never downloaded). What the metadata says becomes new ``[[release]]`` /
``[[build]]`` rows (:mod:`envsolve.curate` writes them); what it cannot say (arch lists,
non-default builds) is listed as needing curation, never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

import msgspec
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from .config import strip_credentials
from .curate import Row
from .data import Matrices
from .domain import COMPANIONS_OF, FRAMEWORKS, PYTHONS_FROM, shared_name, variant_of_cuda
from .errors import RefreshError
from .index import metadata as md_
from .index import pages as ix
from .index.reader import Reader
from .versions import parse_python_minor
from .voice import silent

__all__ = ["DEFAULT_PACKAGES", "RefreshFinding", "RefreshPlan", "dist_versions", "known_newest", "new_versions",
           "plan_text", "shared_requirements", "survey"]

DEFAULT_PACKAGES = (
    "torch", "torchvision", "torchaudio", "triton", "tensorflow", "jax", "jaxlib",
    "jax-cuda12-plugin", "jax-cuda13-plugin", "keras", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13",
    # CUDA 13's runtime is published without the -cu13 suffix (that name holds a placeholder)
    "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime", "cuda-toolkit",
)

FindingKind = Literal["changed", "curate", "info"]
Page = dict[Version, tuple[ix.DistFile, ...]]
_NO_CUDA = "no CUDA libraries"




class RefreshFinding(msgspec.Struct, frozen=True, kw_only=True):
    """A line of the report: ``changed`` (the index disagrees with a row), ``curate`` (a fact
    the metadata cannot give), or ``info``."""

    package: str
    kind: FindingKind
    text: str


class RefreshPlan(msgspec.Struct, frozen=True, kw_only=True):
    index_url: str
    newest: tuple[tuple[str, str, str], ...]  # package, newest on the index, newest in the matrices
    rows: tuple[Row, ...] = ()
    findings: tuple[RefreshFinding, ...] = ()
    warnings: tuple[str, ...] = ()  # what could not be read (a missing companion, a failed file)

    @property
    def changed(self) -> int:
        """How many rows the index disagrees with (reported, not rewritten)."""
        return sum(f.kind == "changed" for f in self.findings)


class _Survey(msgspec.Struct):
    reader: Reader
    m: Matrices
    pages: dict[str, Page]
    known_pythons: tuple[str, ...]
    rows: list[Row] = msgspec.field(default_factory=list)
    findings: list[RefreshFinding] = msgspec.field(default_factory=list)

    def note(self, package: str, kind: FindingKind, text: str) -> None:
        self.findings.append(RefreshFinding(package=package, kind=kind, text=text))

    def wheel_python(self, f: ix.DistFile) -> str:
        """The Python a wheel's metadata is read with: its own, else the newest the data knows."""
        return ix.wheel_python(f, self.known_pythons[-1] if self.known_pythons else "3.12")


# ---------------------------------------------------------------------------- the survey


def _names(packages: Sequence[str]) -> list[str]:
    """The packages asked for, each followed by its companions, once each."""
    asked = [canonicalize_name(p) for p in packages]
    return list(dict.fromkeys(n for p in asked for n in (p, *COMPANIONS_OF.get(p, ()))))


def _read_pages(reader: Reader, names: Sequence[str], asked: set[str],
                progress: Callable[[str], None]) -> tuple[dict[str, Page], list[str]]:
    """The pages that could be read, and a warning for each that could not. One page that cannot
    be read (a companion the index lacks, an error that outlived the retries) costs only its own
    facts; when none can be read, the first error is the answer."""
    pages: dict[str, Page] = {}
    missing: list[str] = []
    failed: list[RefreshError] = []
    for i, name in enumerate(names, 1):
        progress(f"reading {name} ({i}/{len(names)})")
        try:
            pages[name] = ix.releases(reader.project(name))
        except RefreshError as e:
            failed.append(e)
            what = "a companion of the frameworks asked for" if name not in asked else "asked for"
            missing.append(f"{name} ({what}) was not read: {e.message}")
    if failed and not pages:
        raise failed[0]
    return pages, missing


def survey(reader: Reader, m: Matrices, packages: Sequence[str] = DEFAULT_PACKAGES,
           progress: Callable[[str], None] = silent) -> RefreshPlan:
    """Read ``packages`` (and the companions of the frameworks among them) from the index and
    compare them with ``m``: the rows to add, and what needs a person."""
    asked = {str(canonicalize_name(p)) for p in packages}
    pages, missing = _read_pages(reader, _names(packages), asked, progress)
    s = _Survey(reader=reader, m=m, pages=pages, known_pythons=_known_pythons(m))
    for fw in sorted(asked.intersection(pages, FRAMEWORKS), key=FRAMEWORKS.index):
        progress(f"comparing {fw}'s releases with the matrices")
        _framework(s, fw)
    names = [n for n in _names(packages) if n in pages]
    for name in names:
        _cuda_package(s, name)
    return RefreshPlan(index_url=strip_credentials(reader.index_url)[0], newest=tuple(_newest(s, n) for n in names),
                       rows=tuple(s.rows),
                       findings=tuple(s.findings), warnings=tuple(missing + reader.warnings))


def _known_pythons(m: Matrices) -> tuple[str, ...]:
    return tuple(sorted({p for r in m.releases for p in r.python}, key=parse_python_minor))


def _newest(s: _Survey, name: str) -> tuple[str, str, str]:
    """(name, its newest release on the index, the newest the matrices know)."""
    return name, str(max(s.pages[name])) if s.pages[name] else "", known_newest(s.m, name)


# ---------------------------------------------------------------------------- what the matrices know


def _versions(raw: Iterable[str]) -> list[Version]:
    out = []
    for v in raw:
        try:
            out.append(Version(v))
        except InvalidVersion:
            continue
    return out


def _framework_versions(m: Matrices, name: str) -> list[Version]:
    return [r.version for r in m.releases if r.package == name]


def _cudnn_versions(m: Matrices, name: str) -> list[Version]:
    major = int(name.rsplit("cu", 1)[1])
    return [Version(c.version.raw) for c in m.cudnn if c.cuda_major == major]


def _toolkit_versions(m: Matrices, name: str) -> list[Version]:
    suffix = re.fullmatch(r"nvidia-cuda-runtime-cu(\d+)", name)
    return [Version(t.version.raw) for t in m.toolkits if not suffix or t.version.major == int(suffix.group(1))]


def _other_versions(m: Matrices, name: str) -> list[Version]:
    """A companion's, a pinned library's or a build's own distribution's (onnxruntime-gpu, cupy-cuda12x)."""
    companions = [v for r in m.releases for c, v in r.companions if c == name]
    pins = [v for b in m.builds for p, v in b.pins if p == name]
    return _versions(companions + pins + dist_versions(m, name))


def dist_versions(m: Matrices, name: str) -> list[str]:
    return [b.dist_version or b.raw for b in m.builds if b.dist == name]


_KNOWN: tuple[tuple[Callable[[str], bool], Callable[[Matrices, str], list[Version]]], ...] = (
    (lambda n: n in FRAMEWORKS, _framework_versions),
    (lambda n: bool(re.fullmatch(r"nvidia-cudnn-cu(\d+)", n)), _cudnn_versions),
    (lambda n: n == "cuda-toolkit" or n.startswith("nvidia-cuda-runtime"), _toolkit_versions),
    (lambda n: True, _other_versions),
)


def known_newest(m: Matrices, name: str) -> str:
    """The newest version of ``name`` the matrices mention ("" when none)."""
    versions = next(read for applies, read in _KNOWN if applies(name))
    found = versions(m, name)
    return str(max(found)) if found else ""


# ---------------------------------------------------------------------------- frameworks


def _pythons(s: _Survey, fw: str, v: Version) -> tuple[str, ...]:
    files = s.pages[fw].get(v, ())
    source = PYTHONS_FROM.get(fw)
    return ix.release_pythons(files, s.known_pythons, s.pages.get(source, {}).get(v, ()) if source else None)


def _show(pythons: Sequence[str]) -> str:
    return ", ".join(pythons) if pythons else "none"


def _all_yanked(files: Iterable[ix.DistFile]) -> bool:
    return all(f.yanked for f in files)


def _tagged(fw: str, files: Sequence[ix.DistFile]) -> bool:
    """Whether the wheels say the release's Pythons: pure wheels (keras) admit every known Python,
    so its rows list the released ones by hand."""
    return fw in PYTHONS_FROM or ix.has_cpython_wheels(files)


def _changed_pythons(s: _Survey, fw: str, known: dict[Version, Any], on_index: Page) -> None:
    for v, rel in sorted(known.items()):
        now = _pythons(s, fw, v) if v in on_index and _tagged(fw, on_index[v]) else ()
        if now and set(now) != set(rel.python):
            s.note(fw, "changed", f"{fw} {rel.raw}: the index has Linux x86_64 wheels for Python {_show(now)}; "
                                  f"the matrices say {_show(rel.python)}")


def new_versions(known: Iterable[Version], on_index: Page) -> list[Version]:
    """Releases on the index newer than the oldest row (the newest only, for a package without rows)."""
    floor = min(known, default=None)
    return [v for v in on_index if v not in known and (v > floor if floor else v == max(on_index))]


def _on_index(page: Page) -> Page:
    """The releases not yanked whole."""
    return {v: fs for v, fs in page.items() if not _all_yanked(fs)}


def _framework(s: _Survey, fw: str) -> None:
    known = {r.version: r for r in s.m.releases if r.package == fw}
    on_index = _on_index(s.pages[fw])
    for v in sorted(known.keys() & (s.pages[fw].keys() - on_index.keys()), key=list(s.pages[fw]).index):
        s.note(fw, "changed", f"{fw} {known[v].raw} is yanked on the index")
    _changed_pythons(s, fw, known, on_index)
    new = new_versions(known, on_index)
    companions = _companion_map(s, fw) if new else {}
    for v in new:
        _new_release(s, fw, v, companions.get(str(v), {}))


def _companion_pin(s: _Survey, fw: str, comp: str, cv: Version, files: Sequence[ix.DistFile]) -> str:
    """The ``fw==X`` a companion release pins ("" when it pins none, with a note when unreadable)."""
    got = s.reader.first_metadata(files)
    if got is None:
        s.note(comp, "curate", f"{comp} {cv}: the index serves no metadata file, so which {fw} "
                               f"release it pairs with needs curation")
        return ""
    req = md_.requirement_of(md_.requirements(got[1], python=s.wheel_python(got[0])), fw)
    return md_.exact_version(req.specifier) if req is not None else ""


def _newer(page: Page, known: set[str]) -> list[tuple[Version, tuple[ix.DistFile, ...]]]:
    """The releases of ``page`` newer than every version in ``known``, none of those listed."""
    top = max(map(Version, known), default=None)
    return [(v, files) for v, files in page.items() if str(v) not in known and (top is None or v > top)]


def _new_companions(s: _Survey, fw: str, comp: str) -> list[tuple[Version, tuple[ix.DistFile, ...]]]:
    """The companion's releases newer than any the matrices pair with ``fw`` (yanked ones aside)."""
    known = {v for r in s.m.releases if r.package == fw for c, v in r.companions if c == comp}
    return _newer(_on_index(s.pages.get(comp, {})), known)


def _companion_map(s: _Survey, fw: str) -> dict[str, dict[str, str]]:
    """framework version -> {companion: version}, from the companions' own ``fw==X`` pins."""
    out: dict[str, dict[str, str]] = {}
    for comp in COMPANIONS_OF["torch"] if fw == "torch" else ():  # jaxlib follows jax's own pin
        for cv, files in _new_companions(s, fw, comp):
            if exact := _companion_pin(s, fw, comp, cv, files):
                out.setdefault(exact, {})[comp] = str(cv)
    return out


class _NewRelease(msgspec.Struct):
    """One new release being written: its fields, what needs curation, and what its metadata says."""

    fw: str
    v: Version
    md: md_.Metadata | None
    py: str
    reqs: tuple[Requirement, ...]
    companions: dict[str, str]
    fields: list[tuple[str, Any]] = msgspec.field(default_factory=list)
    curate: list[str] = msgspec.field(default_factory=list)

    @property
    def raw(self) -> str:
        return str(self.v)

    @property
    def label(self) -> str:
        return f"{self.fw} {self.v}"

    @property
    def source(self) -> str:
        return f"package metadata of {self.fw}=={self.v}"


def _torch_release(s: _Survey, r: _NewRelease) -> None:
    missing = [c for c in COMPANIONS_OF["torch"] if c not in r.companions and c in s.pages]
    r.curate += [f"no {comp} release on the index pins torch=={r.raw}" for comp in missing]
    if r.companions:
        r.fields.append(("companions", dict(sorted(r.companions.items()))))


def _jax_release(s: _Survey, r: _NewRelease) -> None:
    if r.md is None:
        return
    req = md_.requirement_of(r.reqs, "jaxlib")
    if req is not None and r.v in s.pages.get("jaxlib", {}) and req.specifier.contains(r.v, prereleases=True):
        r.fields.append(("companions", {"jaxlib": r.raw}))
    else:
        r.curate.append("its jaxlib companion is not on the index")


def _tensorflow_release(s: _Survey, r: _NewRelease) -> None:
    req = md_.requirement_of(r.reqs, "keras") if r.md is not None else None
    if req is not None and str(req.specifier):
        r.fields.append(("requires", {"keras": str(req.specifier)}))


def _keras_release(s: _Survey, r: _NewRelease) -> None:
    r.curate.append("its minimum backend versions (backends) are not in the package metadata")


def shared_requirements(reqs: Iterable[Requirement], *, bundled: bool = False) -> dict[str, str]:
    """``shared`` of a matrix row: name -> specifier of the requirements on packages other frameworks
    also require, the clauses of several on one name joined in order, once each; an unversioned
    one constrains nothing and is left out. NVIDIA's libraries (and cuda-toolkit) only with
    ``bundled``: a release's belong to its GPU build."""
    clauses: dict[str, list[str]] = {}
    for r in reqs:
        name = str(canonicalize_name(r.name))
        if _is_shared(name, bundled):
            have = clauses.setdefault(name, [])
            have += [c for c in str(r.specifier).split(",") if c and c not in have]
    return {name: ",".join(c) for name, c in sorted(clauses.items()) if c}


def _is_shared(name: str, bundled: bool) -> bool:
    return shared_name(name) and (bundled or not md_.is_bundled(name))


def _shared_release(r: _NewRelease, pythons: Sequence[str]) -> None:
    """The release's ``shared``, its markers evaluated for its newest Python."""
    newest = max(pythons, key=parse_python_minor)
    if r.md is not None and (shared := shared_requirements(md_.requirements(r.md, python=newest))):
        r.fields.append(("shared", shared))


_RELEASE_FACTS: dict[str, Callable[[_Survey, _NewRelease], None]] = {
    "torch": _torch_release, "jax": _jax_release, "tensorflow": _tensorflow_release, "keras": _keras_release,
}


def _read_release(s: _Survey, fw: str, v: Version, pythons: tuple[str, ...],
                  companions: dict[str, str]) -> _NewRelease:
    """A new release and what its best wheel's metadata says (nothing when none can be read)."""
    got = s.reader.first_metadata(s.pages[fw][v])
    fields: list[tuple[str, Any]] = [("version", str(v)), ("python", list(pythons))]
    if got is None:
        return _NewRelease(fw=fw, v=v, md=None, py=pythons[-1], reqs=(), companions=companions, fields=fields,
                           curate=["the index serves no metadata file for its wheels: pins and requirements "
                                   "need curation"])
    py = s.wheel_python(got[0])
    return _NewRelease(fw=fw, v=v, md=got[1], py=py, reqs=md_.requirements(got[1], python=py),
                       companions=companions, fields=fields)


def _builds_to_curate(r: _NewRelease) -> list[str]:
    if r.fw == "keras":
        return []
    return ["its GPU builds (CUDA version, arch list) are listed by `envsolve refresh` for curation"
            if r.md is not None else "its builds"]


def _new_release(s: _Survey, fw: str, v: Version, companions: dict[str, str]) -> None:
    pythons = _pythons(s, fw, v)
    if not pythons:
        s.note(fw, "curate", f"{fw} {v}: no Linux x86_64 CPython wheel on the index; not added")
        return
    r = _read_release(s, fw, v, pythons, companions)
    if (facts := _RELEASE_FACTS.get(fw)) is not None:
        facts(s, r)
    _shared_release(r, pythons)
    builds = _builds(s, r)
    curate = r.curate + _builds_to_curate(r)
    note = [("note", "added by envsolve refresh; needs curation: " + "; ".join(curate))] if curate else []
    fields = (*r.fields, *note, ("source", r.source))
    s.rows.append(Row(file=f"{fw}.toml", table="release", label=r.label, fields=fields))
    s.rows.extend(builds)


# ---------------------------------------------------------------------------- builds


def _runtime_text(f: md_.BundledFacts) -> str:
    return f"CUDA {f.cuda}" if f.cuda else (f"CUDA runtime {f.cuda_runtime}" if f.cuda_runtime else "")


def _facts_text(f: md_.BundledFacts) -> str:
    named = (("cuDNN", f.cudnn), ("NCCL", f.nccl), ("triton", f.triton))
    parts = [_runtime_text(f), *(f"{what} {value}" for what, value in named if value)]
    return ", ".join(p for p in parts if p) or _NO_CUDA


def _cpu_build(r: _NewRelease, *extra: tuple[str, Any]) -> Row:
    fields = (("version", r.raw), ("variant", "cpu"), ("accelerator", "cpu"), ("default", True), ("index", "pypi"),
              *extra, ("source", r.source))
    return Row(file=f"{r.fw}.toml", table="build", label=f"{r.label} cpu", fields=fields)


def _torch_builds(s: _Survey, r: _NewRelease) -> list[Row]:
    facts = md_.bundled_facts(r.reqs)
    rows = [_cpu_build(r)] if not facts.cuda and facts.empty else []
    if facts.cuda:
        pins = ", ".join(f"{k}=={v}" for k, v in facts.pins)
        s.note(r.fw, "curate", f"{r.label} {variant_of_cuda(facts.cuda)} (the default build): {_facts_text(facts)}; "
                               f"pins {pins}; its arch list is not in the package metadata")
    elif not facts.empty:
        s.note(r.fw, "curate", f"{r.label} (the default build): {_facts_text(facts)}; no exact CUDA runtime pin")
    s.note(r.fw, "curate", f"{r.label}: the builds on the PyTorch index (CPU, other CUDA and ROCm variants) "
                           "are not on this index")
    return rows


def _jax_builds(s: _Survey, r: _NewRelease) -> list[Row]:
    req = md_.requirement_of(r.reqs, "jaxlib")
    spec = req.specifier if req is not None else None
    pins = [("pins", {"jaxlib": md_.exact_version(spec) or str(spec)})] if spec is not None and str(spec) else []
    return [_cpu_build(r, *pins)]


def _shown_requirement(req: Requirement) -> bool:
    return md_.is_bundled(req.name) or "plugin" in req.name or canonicalize_name(req.name) == "jaxlib"


def _extra_note(s: _Survey, r: _NewRelease, extra: str) -> None:
    assert r.md is not None
    extra_reqs = set(md_.requirements(r.md, python=r.py, extra=extra)) - set(r.reqs)
    shown = ", ".join(sorted(f"{q.name}{q.specifier}" for q in extra_reqs if _shown_requirement(q)))
    what = _facts_text(md_.bundled_facts(extra_reqs))
    detail = f"{what}; requires {shown}" if what != _NO_CUDA else f"requires {shown}"
    s.note(r.fw, "curate", f"{r.label} [{extra}]: {detail}; its CUDA build and arch list are not in the "
                           "package metadata")


_BUILDS: dict[str, Callable[[_Survey, _NewRelease], list[Row]]] = {"torch": _torch_builds, "jax": _jax_builds}


def _builds(s: _Survey, r: _NewRelease) -> list[Row]:
    """The build rows the metadata fully determines; every other build goes to curation."""
    if r.md is None or r.fw == "keras":
        return []
    rows = _BUILDS[r.fw](s, r) if r.fw in _BUILDS else []
    for extra in md_.gpu_extras(r.md, r.py):
        _extra_note(s, r, extra)
    return rows


# ---------------------------------------------------------------------------- CUDA packages


def _first_per(rels: Iterable[Version], key: Callable[[Version], tuple[int, ...]]) -> dict[tuple[int, ...], Version]:
    """The first release of each key (its x.y.z, its x.y), in order."""
    out: dict[tuple[int, ...], Version] = {}
    for v in rels:
        out.setdefault(key(v), v)
    return out


def _xyz(v: Version) -> tuple[int, ...]:
    return (v.release + (0, 0))[:3]


def _cudnn_package(s: _Survey, name: str, rels: Sequence[Version], major: int) -> None:
    """New cuDNN releases (x.y.z) for a CUDA major; the newest only when the matrices have none."""
    top = max((c.version.prefix(3) for c in s.m.cudnn if c.cuda_major == major), default=None)
    for key, v in _first_per(rels if top is not None else rels[-1:], _xyz).items():
        if top is None or key > top:
            s.note(name, "curate", f"cuDNN {'.'.join(map(str, key))} for CUDA {major} ({name} {v}) is not "
                                   "in cudnn.toml: its supported archs come from the cuDNN support matrix")


def _toolkit_package(s: _Survey, name: str, rels: Sequence[Version], toolkits: set[Version]) -> None:
    for v in (v for v in rels if v not in toolkits and v > min(toolkits)):
        s.note(name, "curate", f"CUDA toolkit {v} is not in cuda.toml: its driver floor and archs come "
                               "from the CUDA release notes")


def _runtime_package(s: _Survey, name: str, rels: Sequence[Version], toolkits: set[Version],
                     major: str | None) -> None:
    """New CUDA minors of the runtime package (placeholders and mislabelled uploads aside)."""
    minors = {t.release[:2] for t in toolkits}
    floor = min(toolkits).release[:2]
    fitting = [v for v in rels if not major or v.release[0] == int(major)]
    for mm, v in _first_per(fitting, lambda v: v.release[:2]).items():
        if mm not in minors and mm > floor:
            s.note(name, "curate", f"CUDA {mm[0]}.{mm[1]} ({name} {v}): cuda.toml has no {mm[0]}.{mm[1]} "
                                   "toolkit; its driver floor and archs come from the CUDA release notes")


def _cuda_package(s: _Survey, name: str) -> None:
    """New cuDNN, CUDA runtime and toolkit releases: facts the matrices need from NVIDIA's documents."""
    rels = list(_on_index(s.pages[name]))
    toolkits = {Version(t.version.raw) for t in s.m.toolkits}
    if cudnn := re.fullmatch(r"nvidia-cudnn-cu(\d+)", name):
        _cudnn_package(s, name, rels, int(cudnn.group(1)))
    elif toolkits and name == "cuda-toolkit":
        _toolkit_package(s, name, rels, toolkits)
    elif toolkits and (runtime := re.fullmatch(r"nvidia-cuda-runtime(?:-cu(\d+))?", name)):
        _runtime_package(s, name, rels, toolkits, runtime.group(1))


# ---------------------------------------------------------------------------- report

_SECTIONS: tuple[tuple[FindingKind, str], ...] = (
    ("changed", "changed on the index (not rewritten):"),
    ("curate", "needs curation (not in the package metadata):"),
    ("info", "notes:"),
)


def _section(plan: RefreshPlan, kind: FindingKind, title: str) -> list[str]:
    found = [f"  - {f.text}" for f in plan.findings if f.kind == kind]
    return [title, *found] if found else []


def _row_lines(plan: RefreshPlan) -> list[str]:
    rows = [f"  + {r.file} [[{r.table}]] {r.label}: {_row_summary(r)}" for r in plan.rows]
    return ["new rows:", *rows] if rows else []


def _up_to_date(plan: RefreshPlan) -> bool:
    return not plan.rows and all(f.kind == "info" for f in plan.findings)


def plan_text(plan: RefreshPlan) -> str:
    """The report ``envsolve refresh`` prints (deterministic: rows and findings in survey order)."""
    lines = [f"index: {plan.index_url}", "newest on the index (matrices):"]
    lines += [f"  {name} {newest or '-'} ({known or '-'})" for name, newest, known in plan.newest]
    lines += _row_lines(plan)
    for kind, title in _SECTIONS:
        lines += _section(plan, kind, title)
    lines += ["the matrices are up to date with the index"] if _up_to_date(plan) else []
    return "\n".join(lines) + "\n"


def _summary_value(v: Any) -> str:
    if isinstance(v, list):
        return ", ".join(v)
    if isinstance(v, dict):
        return ", ".join(f"{a} {b}" for a, b in v.items())
    return str(v).lower() if isinstance(v, bool) else str(v)


def _row_summary(r: Row) -> str:
    return "; ".join(f"{k} {_summary_value(v)}" for k, v in r.fields if k not in ("version", "source", "note"))
