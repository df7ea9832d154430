"""The only module that talks to the network: read the package index, diff it against the matrices.

``envsolve refresh`` asks the configured index (never a host written here) for each package's
project page through the JSON simple API (PEP 691, the HTML one as fallback) and for the core
metadata files of new releases (PEP 658/714; wheels are never downloaded). Answers are cached on
disk and revalidated with ETag / Last-Modified; metadata files are checked against the sha256 the
index gives. What the metadata says becomes new ``[[release]]`` / ``[[build]]`` rows; what it
cannot say (arch lists, non-default builds) is listed as needing curation, never guessed.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import requests
from packaging.utils import canonicalize_name
from packaging.version import Version

from .data import Matrices, load_dir
from .domain import COMPANIONS_OF, FRAMEWORKS, PYTHONS_FROM, variant_of_cuda
from .errors import EnvsolveError, MatrixError, MissingProject, RefreshError
from .files import write_atomic
from .index import pages as ix
from .index import wheel
from .paths import cache_dir as default_cache_dir
from .versions import parse_python_minor

__all__ = [
    "DEFAULT_PACKAGES",
    "Finding",
    "IndexClient",
    "Plan",
    "RefreshError",
    "Row",
    "apply",
    "default_cache_dir",
    "render",
    "survey",
]

DEFAULT_PACKAGES = (
    "torch", "torchvision", "torchaudio", "triton", "tensorflow", "jax", "jaxlib",
    "jax-cuda12-plugin", "jax-cuda13-plugin", "keras", "nvidia-cudnn-cu12", "nvidia-cudnn-cu13",
    # CUDA 13's runtime is published without the -cu13 suffix (that name holds a placeholder)
    "nvidia-cuda-runtime-cu12", "nvidia-cuda-runtime", "cuda-toolkit",
)
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_METADATA_TRIES = 3  # wheels of one release whose metadata file is tried before giving up


def _quiet(_: str) -> None:
    return None


# ---------------------------------------------------------------------------- the client


@dataclass(frozen=True, kw_only=True, slots=True)
class _Answer:
    status: int
    body: bytes
    content_type: str
    etag: str = ""
    last_modified: str = ""
    fresh_until: float = 0.0  # from Cache-Control max-age: no revalidation before this time


def _fresh_until(cache_control: str, now: float) -> float:
    m = re.search(r"max-age=(\d+)", cache_control)
    return now + int(m.group(1)) if m and "no-cache" not in cache_control and "no-store" not in cache_control else 0.0


class _Cache:
    """Answers on disk, keyed by URL and Accept header, with their validators."""

    def __init__(self, root: Path | None) -> None:
        self.root = root / "index" if root is not None else None

    def _paths(self, url: str, accept: str) -> tuple[Path, Path] | None:
        if self.root is None:
            return None
        key = hashlib.sha256(f"{url}\n{accept}".encode()).hexdigest()
        return self.root / f"{key}.json", self.root / f"{key}.body"

    def load(self, url: str, accept: str) -> _Answer | None:
        paths = self._paths(url, accept)
        if paths is None:
            return None
        try:
            meta = json.loads(paths[0].read_text(encoding="utf-8"))
            body = paths[1].read_bytes()
        except (OSError, ValueError):
            return None
        if not isinstance(meta, dict) or meta.get("url") != url:
            return None
        return _Answer(status=200, body=body, content_type=str(meta.get("content_type", "")),
                       etag=str(meta.get("etag", "")), last_modified=str(meta.get("last_modified", "")),
                       fresh_until=float(meta.get("fresh_until", 0.0)))

    def store(self, url: str, accept: str, answer: _Answer) -> None:
        paths = self._paths(url, accept)
        if paths is None:
            return
        meta = {"url": url, "content_type": answer.content_type, "etag": answer.etag,
                "last_modified": answer.last_modified, "fresh_until": answer.fresh_until}
        try:  # a cache that cannot be written only costs a later request
            paths[0].parent.mkdir(parents=True, exist_ok=True)
            write_atomic(paths[1], answer.body)
            write_atomic(paths[0], json.dumps(meta, sort_keys=True).encode())
        except OSError:
            pass


class IndexClient:
    """Reads project pages and metadata files from one simple-API index."""

    def __init__(self, index_url: str, *, cache_dir: Path | None = None, timeout: float = 30.0,
                 retries: int = 3, backoff: float = 1.0, session: requests.Session | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 progress: Callable[[str], None] = _quiet, offline: bool = False,
                 revalidate: bool = True) -> None:
        scheme = urlparse(index_url).scheme
        if scheme not in ("http", "https"):
            raise EnvsolveError(f"index URL {index_url!r} is not an http(s) URL",
                                tip="pass the simple-API root of an index with --index-url")
        self.index_url = index_url.rstrip("/")
        self.cache = _Cache(cache_dir)
        self.timeout = timeout
        self.retries = max(0, retries)
        self.backoff = backoff
        self.session = session or requests.Session()
        self.sleep = sleep
        self.progress = progress
        self.offline = offline  # answers from the cache only; a missing one is an error naming it
        self.revalidate = revalidate  # False: a cached answer is used as is, however old
        self.requests = 0  # network requests made (cache hits without a request not counted)
        self.warnings: list[str] = []  # files that failed and were skipped (see first_metadata)

    def _send(self, url: str, headers: dict[str, str], stream: bool = False) -> requests.Response:
        """GET with retries and exponential backoff on connection errors, timeouts and 429/5xx."""
        tries = self.retries + 1
        for attempt in range(tries):
            last = attempt == tries - 1
            try:
                self.requests += 1
                resp = self.session.get(url, headers=headers, timeout=(self.timeout, self.timeout), stream=stream)
            except requests.Timeout:
                if last:
                    raise RefreshError(
                        f"the package index at {self.index_url} did not answer within {self.timeout:g} s "
                        f"({url}; {tries} {'try' if tries == 1 else 'tries'})",
                        tip="try again later, raise --timeout, or use another index with --index-url") from None
            except requests.RequestException as e:
                if last:
                    raise RefreshError(
                        f"cannot reach the package index at {self.index_url} ({_reason(e)}; "
                        f"{tries} {'try' if tries == 1 else 'tries'})",
                        tip="check the network or proxy, or pass another index with --index-url "
                            "(or set PIP_INDEX_URL)") from None
            else:
                if resp.status_code not in _RETRY_STATUS or last:
                    return resp
                resp.close()
            delay = self.backoff * (2 ** attempt)
            self.progress(f"retrying {url} in {delay:g} s")
            self.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _get(self, url: str, accept: str, verify: Callable[[bytes], None] | None = None,
             expected_sha256: str = "") -> _Answer:
        cached = self.cache.load(url, accept)
        if cached is not None and expected_sha256 and _sha256(cached.body) == expected_sha256:
            return cached  # content-addressed: nothing to revalidate
        if cached is not None and (self.offline or not self.revalidate or cached.fresh_until > time.time()):
            return cached  # within the index's own max-age, as pip and uv do
        if self.offline:
            raise RefreshError(f"{url} is not in envsolve's cache, and --offline reads nothing else",
                               tip="lock once with the network to fill the cache, or use --frameworks-only")
        headers = {"Accept": accept, "User-Agent": "envsolve-refresh"}
        if cached is not None and cached.etag:
            headers["If-None-Match"] = cached.etag
        if cached is not None and cached.last_modified:
            headers["If-Modified-Since"] = cached.last_modified
        resp = self._send(url, headers)
        if resp.status_code == 304 and cached is not None:
            return cached
        answer = _Answer(status=resp.status_code, body=resp.content,
                         content_type=resp.headers.get("Content-Type", ""),
                         etag=resp.headers.get("ETag", ""), last_modified=resp.headers.get("Last-Modified", ""),
                         fresh_until=_fresh_until(resp.headers.get("Cache-Control", ""), time.time()))
        if answer.status == 200:
            if verify is not None:
                verify(answer.body)
            self.cache.store(url, accept, answer)  # every answer: --offline reads them back
        return answer

    def project(self, name: str) -> tuple[ix.DistFile, ...]:
        """The files of ``name``'s project page; a missing project is a :class:`RefreshError`."""
        url = ix.project_url(self.index_url, name)
        answer = self._get(url, ix.ACCEPT)
        if answer.status == 404:
            raise MissingProject(f"the package index at {self.index_url} has no project {name!r}",
                               tip="check the name given to --package, or use an index that carries it "
                                   "(--index-url)")
        if answer.status != 200:
            raise RefreshError(f"the package index answered HTTP {answer.status} for {url}",
                               tip="try again later, or use another index with --index-url")
        try:
            return ix.parse_project_page(answer.body, answer.content_type, url)
        except ix.IndexFormatError as e:
            raise RefreshError(f"the page of {name!r} at {url} is not a simple-API page: {e}",
                               tip="pass the simple-API root of the index with --index-url") from None

    def metadata(self, f: ix.DistFile) -> ix.Metadata | None:
        """The core metadata of ``f`` (None when the index serves no metadata file for it)."""
        if f.metadata is False:
            return self.wheel_metadata(f)

        def verify(body: bytes) -> None:
            got = _sha256(body)
            if f.metadata_sha256 and got != f.metadata_sha256:
                raise RefreshError(
                    f"the metadata file of {f.filename} does not match the sha256 the index gives for it "
                    f"(index: {f.metadata_sha256[:16]}..., file: {got[:16]}...)",
                    tip="the index or a proxy serves altered files; nothing was written. Try again, "
                        "or use another index with --index-url")

        self.progress(f"reading metadata of {f.filename}")
        answer = self._get(f.metadata_url, "*/*", verify, f.metadata_sha256)
        if answer.status in (404, 410):
            return self.wheel_metadata(f)
        if answer.status != 200:
            raise RefreshError(f"the package index answered HTTP {answer.status} for {f.metadata_url}",
                               tip="try again later, or use another index with --index-url")
        try:
            return ix.parse_metadata(answer.body.decode("utf-8", errors="replace"))
        except ix.IndexFormatError as e:
            raise RefreshError(f"the metadata file of {f.filename} cannot be read: {e}") from None

    def _range(self, url: str, spec: str) -> tuple[bytes, int] | None:
        """The bytes of ``Range: bytes=spec`` and the file's full length; None when the server
        ignores ranges (its answer is closed unread: a wheel is never downloaded whole)."""
        if self.offline:
            raise RefreshError(f"the metadata of {url} is not in envsolve's cache, and --offline reads nothing else",
                               tip="lock once with the network to fill the cache, or use --frameworks-only")
        resp = self._send(url, {"Range": f"bytes={spec}", "Accept-Encoding": "identity",
                                "User-Agent": "envsolve-refresh"}, stream=True)
        with resp:
            if resp.status_code == 200:
                return None
            if resp.status_code != 206:
                raise RefreshError(f"the package index answered HTTP {resp.status_code} for {url} "
                                   f"(bytes {spec})", tip="try again later, or use another index with --index-url")
            m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", resp.headers.get("Content-Range", "").strip())
            if m is None:
                raise RefreshError(f"{url} answered a range request without a usable Content-Range")
            return resp.content, int(m.group(3))

    def wheel_metadata(self, f: ix.DistFile) -> ix.Metadata | None:
        """The METADATA member of wheel ``f``, read with HTTP range requests on its zip central
        directory (PEP 658 files are not served for it); cached by the wheel's sha256. None, with a
        warning, when the server does not serve ranges."""
        text = self.wheel_member(f, wheel.METADATA, "no metadata file, so its metadata")
        if text is None:
            return None
        try:
            return ix.parse_metadata(text)
        except ix.IndexFormatError as e:
            raise RefreshError(f"the METADATA of {f.filename} cannot be read: {e}") from None

    def wheel_member(self, f: ix.DistFile, pattern: str, what: str = "") -> str | None:
        """The text of the one member of wheel ``f`` whose path matches ``pattern`` (a regular
        expression), read with HTTP range requests (the zip directory, then that member alone) and
        cached by the wheel's sha256. None, with a warning, when the server does not serve ranges."""
        if not f.filename.endswith(".whl"):
            return None
        key = hashlib.sha256(pattern.encode()).hexdigest()[:16]
        path = (self.cache.root / "members" / f"{f.sha256}-{key}.txt"
                if self.cache.root is not None and f.sha256 else None)
        if path is not None and path.is_file():
            return path.read_text(encoding="utf-8")
        self.progress(f"reading {pattern} out of {f.filename} (range requests)")
        try:
            text = self._range_member(f, pattern)
        except wheel.WheelFormatError as e:
            raise RefreshError(f"{f.filename} cannot be read as a wheel: {e}") from None
        if text is None:
            what = what or f"its member {pattern}"
            self.warnings.append(f"{f.filename}: the server does not serve byte ranges and {what} was not read "
                                 "(wheels are never downloaded whole)")
            return None
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(path, text.encode("utf-8"))
            except OSError:
                pass
        return text

    def _range_member(self, f: ix.DistFile, pattern: str) -> str | None:
        got = self._range(f.url, f"-{wheel.TAIL}")
        if got is None:
            return None
        tail, total = got
        tail_start = total - len(tail)
        offset, size = wheel.central_directory(tail, tail_start)
        if offset >= tail_start:
            directory = tail[offset - tail_start:offset - tail_start + size]
        else:
            more = self._range(f.url, f"{offset}-{offset + size - 1}")
            if more is None:
                return None
            directory = more[0]
        member = wheel.find_member(directory, pattern)
        end = min(member.header_offset + wheel.member_bytes(member), total) - 1
        chunk = self._range(f.url, f"{member.header_offset}-{end}")
        if chunk is None:
            return None
        return wheel.member_text(member, chunk[0])

    def first_metadata(self, files: Iterable[ix.DistFile]) -> tuple[ix.DistFile, ix.Metadata] | None:
        """The metadata of the best Linux x86_64 wheel whose metadata can be read. A file that
        fails (HTTP error, timeout, hash mismatch) is a warning and the next one is tried."""
        for f in ix.metadata_candidates(files)[:_METADATA_TRIES]:
            try:
                md = self.metadata(f)
            except RefreshError as e:
                if self.offline:
                    raise  # what the cache lacks is the answer, not a file to skip
                self.warnings.append(f"{f.filename}: {e.message}; skipped")
                continue
            if md is not None:
                return f, md
        return None


def _reason(e: requests.RequestException) -> str:
    text = str(e)
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text) or re.search(r"(Connection refused|Name or service "
                                                                     r"not known|No route to host)", text)
    return m.group(1).strip() if m else type(e).__name__


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------------- the survey


@dataclass(frozen=True, kw_only=True, slots=True)
class Row:
    """A new matrix row: its file, its table and its fields in writing order."""

    file: str
    table: str
    label: str
    fields: tuple[tuple[str, Any], ...]


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """A line of the report: ``changed`` (the index disagrees with a row), ``curate`` (a fact
    the metadata cannot give), or ``info``."""

    package: str
    kind: str
    text: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    index_url: str
    newest: tuple[tuple[str, str, str], ...]  # package, newest on the index, newest in the matrices
    rows: tuple[Row, ...] = ()
    findings: tuple[Finding, ...] = ()
    warnings: tuple[str, ...] = ()  # what could not be read (a missing companion, a failed file)


@dataclass(slots=True)
class _Survey:
    client: IndexClient
    m: Matrices
    pages: dict[str, dict[Version, tuple[ix.DistFile, ...]]]
    known_pythons: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    def note(self, package: str, kind: str, text: str) -> None:
        self.findings.append(Finding(package=package, kind=kind, text=text))


def survey(client: IndexClient, m: Matrices, packages: Sequence[str] = DEFAULT_PACKAGES,
           progress: Callable[[str], None] = _quiet) -> Plan:
    """Read ``packages`` (and the companions of the frameworks among them) from the index and
    compare them with ``m``: the rows to add, and what needs a person."""
    names: list[str] = []
    for p in packages:
        for n in (canonicalize_name(p), *COMPANIONS_OF.get(canonicalize_name(p), ())):
            if n not in names:
                names.append(n)
    asked = {canonicalize_name(p) for p in packages}
    pages: dict[str, dict[Version, tuple[ix.DistFile, ...]]] = {}
    missing: list[str] = []
    failed: list[RefreshError] = []
    for i, name in enumerate(names, 1):
        progress(f"reading {name} ({i}/{len(names)})")
        try:
            pages[name] = ix.releases(client.project(name))
        except RefreshError as e:
            # one page that cannot be read (a companion the index lacks, an error that outlived the
            # retries) costs only its own facts; the rest of the survey goes on
            failed.append(e)
            what = "a companion of the frameworks asked for" if name not in asked else "asked for"
            missing.append(f"{name} ({what}) was not read: {e.message}")
    if not pages and failed:
        raise failed[0]
    names = [n for n in names if n in pages]
    pythons = sorted({p for r in m.releases for p in r.python}, key=parse_python_minor)
    s = _Survey(client=client, m=m, pages=pages, known_pythons=tuple(pythons))
    for fw in FRAMEWORKS:
        if fw in pages and fw in [canonicalize_name(p) for p in packages]:
            _framework(s, fw, progress)
    for name in names:
        _cuda_package(s, name)
    newest = tuple((n, str(max(pages[n])) if pages[n] else "", _known_newest(m, n)) for n in names)
    return Plan(index_url=client.index_url, newest=newest, rows=tuple(s.rows), findings=tuple(s.findings),
                warnings=tuple(missing + client.warnings))


def _known_newest(m: Matrices, name: str) -> str:
    """The newest version of ``name`` the matrices mention ("" when none)."""
    found: list[Version] = []
    if name in FRAMEWORKS:
        found = [r.version for r in m.releases if r.package == name]
    elif re.fullmatch(r"nvidia-cudnn-cu(\d+)", name):
        major = int(name.rsplit("cu", 1)[1])
        found = [Version(c.version.raw) for c in m.cudnn if c.cuda_major == major]
    elif name == "cuda-toolkit" or name.startswith("nvidia-cuda-runtime"):
        suffix = re.fullmatch(r"nvidia-cuda-runtime-cu(\d+)", name)
        found = [Version(t.version.raw) for t in m.toolkits
                 if not suffix or t.version.major == int(suffix.group(1))]
    else:
        raw = [v for r in m.releases for c, v in r.companions if c == name]
        raw += [v for b in m.builds for p, v in b.pins if p == name]
        raw += [b.dist_version or b.raw for b in m.builds if b.dist == name]  # onnxruntime-gpu, cupy-cuda12x
        for v in raw:
            try:
                found.append(Version(v))
            except ValueError:
                continue
    return str(max(found)) if found else ""


def _pythons(s: _Survey, fw: str, v: Version) -> tuple[str, ...]:
    files = s.pages[fw].get(v, ())
    source = PYTHONS_FROM.get(fw)
    if source:
        rp = next((f.requires_python for f in files if f.requires_python), "")
        return ix.cpython_minors(s.pages.get(source, {}).get(v, ()), s.known_pythons, rp)
    return ix.cpython_minors(files, s.known_pythons)


def _show(pythons: Sequence[str]) -> str:
    return ", ".join(pythons) if pythons else "none"


def _framework(s: _Survey, fw: str, progress: Callable[[str], None]) -> None:
    known = {r.version: r for r in s.m.releases if r.package == fw}
    on_index = {v: fs for v, fs in s.pages[fw].items() if not all(f.yanked for f in fs)}
    for v, fs in s.pages[fw].items():
        if v in known and all(f.yanked for f in fs):
            s.note(fw, "changed", f"{fw} {known[v].raw} is yanked on the index")
    for v, rel in sorted(known.items()):
        # pure wheels (keras) admit every known Python: the rows list the released ones by hand
        if v not in on_index or (fw not in PYTHONS_FROM and not _has_cp_tags(on_index[v])):
            continue
        now = _pythons(s, fw, v)
        if now and set(now) != set(rel.python):
            s.note(fw, "changed", f"{fw} {rel.raw}: the index has Linux x86_64 wheels for Python {_show(now)}; "
                                  f"the matrices say {_show(rel.python)}")
    floor = min(known) if known else None
    new = [v for v in on_index if v not in known and (v > floor if floor else v == max(on_index))]
    companions = _companion_map(s, fw, progress) if new else {}
    for v in new:
        _new_release(s, fw, v, companions.get(str(v), {}))


def _has_cp_tags(files: Iterable[ix.DistFile]) -> bool:
    return any(re.search(r"-cp\d+-cp\d+-", f.filename) for f in files)


def _companion_map(s: _Survey, fw: str, progress: Callable[[str], None]) -> dict[str, dict[str, str]]:
    """framework version -> {companion: version}, from the companions' own ``fw==X`` pins."""
    out: dict[str, dict[str, str]] = {}
    for comp in COMPANIONS_OF["torch"] if fw == "torch" else ():  # jaxlib follows jax's own pin
        known = {v for r in s.m.releases if r.package == fw for c, v in r.companions if c == comp}
        top = max((Version(v) for v in known), default=None)
        for cv, files in s.pages.get(comp, {}).items():
            if str(cv) in known or (top is not None and cv <= top) or all(f.yanked for f in files):
                continue
            got = s.client.first_metadata(files)
            if got is None:
                s.note(comp, "curate", f"{comp} {cv}: the index serves no metadata file, so which {fw} "
                                       f"release it pairs with needs curation")
                continue
            req = ix.requirement_of(ix.requirements(got[1], python=_wheel_python(got[0], s)), fw)
            exact = ix.exact_version(req.specifier) if req is not None else ""
            if exact:
                out.setdefault(exact, {})[comp] = str(cv)
    return out


def _wheel_python(f: ix.DistFile, s: _Survey) -> str:
    m = re.search(r"-cp(\d)(\d+)-", f.filename)
    return f"{m.group(1)}.{m.group(2)}" if m else (s.known_pythons[-1] if s.known_pythons else "3.12")


def _new_release(s: _Survey, fw: str, v: Version, companions: dict[str, str]) -> None:
    raw = str(v)
    label = f"{fw} {raw}"
    source = f"package metadata of {fw}=={raw}"
    pythons = _pythons(s, fw, v)
    if not pythons:
        s.note(fw, "curate", f"{label}: no Linux x86_64 CPython wheel on the index; not added")
        return
    got = s.client.first_metadata(s.pages[fw][v])
    curate: list[str] = []
    release: list[tuple[str, Any]] = [("version", raw), ("python", list(pythons))]
    md = got[1] if got else None
    py = _wheel_python(got[0], s) if got else pythons[-1]
    reqs = ix.requirements(md, python=py) if md else ()
    if md is None:
        curate.append("the index serves no metadata file for its wheels: pins and requirements need curation")
    if fw == "torch":
        for comp in COMPANIONS_OF["torch"]:
            if comp not in companions and comp in s.pages:
                curate.append(f"no {comp} release on the index pins torch=={raw}")
        if companions:
            release.append(("companions", dict(sorted(companions.items()))))
    if fw == "jax" and md is not None:
        req = ix.requirement_of(reqs, "jaxlib")
        if req is not None and v in s.pages.get("jaxlib", {}) and req.specifier.contains(v, prereleases=True):
            release.append(("companions", {"jaxlib": raw}))
        else:
            curate.append("its jaxlib companion is not on the index")
    if fw == "tensorflow" and md is not None:
        req = ix.requirement_of(reqs, "keras")
        if req is not None and str(req.specifier):
            release.append(("requires", {"keras": str(req.specifier)}))
    if fw == "keras":
        curate.append("its minimum backend versions (backends) are not in the package metadata")
    builds = _builds(s, fw, raw, md, py, reqs, source, curate)
    if fw != "keras":
        curate.append("its GPU builds (CUDA version, arch list) are listed by `envsolve refresh` for curation"
                      if md is not None else "its builds")
    if curate:
        release.append(("note", "added by envsolve refresh; needs curation: " + "; ".join(curate)))
    release.append(("source", source))
    s.rows.append(Row(file=f"{fw}.toml", table="release", label=label, fields=tuple(release)))
    s.rows.extend(builds)


def _facts_text(f: ix.BundledFacts) -> str:
    parts = [f"CUDA {f.cuda}" if f.cuda else (f"CUDA runtime {f.cuda_runtime}" if f.cuda_runtime else "")]
    parts += [f"cuDNN {f.cudnn}" if f.cudnn else "", f"NCCL {f.nccl}" if f.nccl else "",
              f"triton {f.triton}" if f.triton else ""]
    return ", ".join(p for p in parts if p) or "no CUDA libraries"


def _builds(s: _Survey, fw: str, raw: str, md: ix.Metadata | None, py: str,
            reqs: Sequence[Any], source: str, curate: list[str]) -> list[Row]:
    """The build rows the metadata fully determines; every other build goes to curation."""
    label = f"{fw} {raw}"
    rows: list[Row] = []
    if md is None or fw == "keras":
        return rows
    facts = ix.bundled_facts(reqs)
    if fw == "torch":
        if facts.cuda:
            variant = variant_of_cuda(facts.cuda)
            pins = ", ".join(f"{k}=={v}" for k, v in facts.pins)
            s.note(fw, "curate", f"{label} {variant} (the default build): {_facts_text(facts)}; pins {pins}; "
                                 "its arch list is not in the package metadata")
        elif facts.empty:
            rows.append(Row(file=f"{fw}.toml", table="build", label=f"{label} cpu", fields=(
                ("version", raw), ("variant", "cpu"), ("accelerator", "cpu"), ("default", True),
                ("index", "pypi"), ("source", source))))
        else:
            s.note(fw, "curate", f"{label} (the default build): {_facts_text(facts)}; no exact CUDA runtime pin")
        s.note(fw, "curate", f"{label}: the builds on the PyTorch index (CPU, other CUDA and ROCm variants) "
                             "are not on this index")
    if fw == "jax":
        req = ix.requirement_of(reqs, "jaxlib")
        cpu: list[tuple[str, Any]] = [("version", raw), ("variant", "cpu"), ("accelerator", "cpu"),
                                      ("default", True), ("index", "pypi")]
        if req is not None and str(req.specifier):
            cpu.append(("pins", {"jaxlib": ix.exact_version(req.specifier) or str(req.specifier)}))
        cpu.append(("source", source))
        rows.append(Row(file=f"{fw}.toml", table="build", label=f"{label} cpu", fields=tuple(cpu)))
    for extra in ix.gpu_extras(md, py):
        extra_reqs = set(ix.requirements(md, python=py, extra=extra)) - set(reqs)
        shown = ", ".join(sorted(f"{r.name}{r.specifier}" for r in extra_reqs
                                 if ix.is_bundled(r.name)
                                 or "plugin" in r.name or canonicalize_name(r.name) == "jaxlib"))
        what = _facts_text(ix.bundled_facts(extra_reqs))
        detail = f"{what}; requires {shown}" if what != "no CUDA libraries" else f"requires {shown}"
        s.note(fw, "curate", f"{label} [{extra}]: {detail}; its CUDA build and arch list are not in the "
                             "package metadata")
    return rows


def _cuda_package(s: _Survey, name: str) -> None:
    """New cuDNN, CUDA runtime and toolkit releases: facts the matrices need from NVIDIA's documents."""
    rels = [v for v, fs in s.pages[name].items() if not all(f.yanked for f in fs)]
    cudnn = re.fullmatch(r"nvidia-cudnn-cu(\d+)", name)
    if cudnn:
        major = int(cudnn.group(1))
        known = [c.version.prefix(3) for c in s.m.cudnn if c.cuda_major == major]
        top = max(known, default=None)
        seen: set[tuple[int, ...]] = set()
        for v in rels if top is not None else rels[-1:]:  # no row of that CUDA major: the newest only
            key = (v.release + (0, 0))[:3]
            if (top is None or key > top) and key not in seen:
                seen.add(key)
                s.note(name, "curate", f"cuDNN {'.'.join(map(str, key))} for CUDA {major} ({name} {v}) is not "
                                       "in cudnn.toml: its supported archs come from the cuDNN support matrix")
        return
    toolkits = {Version(t.version.raw) for t in s.m.toolkits}
    if not toolkits:
        return
    oldest = min(toolkits)
    if name == "cuda-toolkit":
        for v in rels:
            if v not in toolkits and v > oldest:
                s.note(name, "curate", f"CUDA toolkit {v} is not in cuda.toml: its driver floor and archs come "
                                       "from the CUDA release notes")
    runtime = re.fullmatch(r"nvidia-cuda-runtime(?:-cu(\d+))?", name)
    if runtime:
        minors = {t.release[:2] for t in toolkits}
        seen_minor: set[tuple[int, ...]] = set()
        for v in rels:
            mm = v.release[:2]
            if runtime.group(1) and mm[0] != int(runtime.group(1)):
                continue  # placeholders and mislabelled uploads
            if mm not in minors and mm > oldest.release[:2] and mm not in seen_minor:
                seen_minor.add(mm)
                s.note(name, "curate", f"CUDA {mm[0]}.{mm[1]} ({name} {v}): cuda.toml has no {mm[0]}.{mm[1]} "
                                       "toolkit; its driver floor and archs come from the CUDA release notes")


# ---------------------------------------------------------------------------- report


def render(plan: Plan) -> str:
    """The report ``envsolve refresh`` prints (deterministic: rows and findings in survey order)."""
    lines = [f"index: {plan.index_url}", "newest on the index (matrices):"]
    for name, newest, known in plan.newest:
        lines.append(f"  {name} {newest or '-'} ({known or '-'})")
    if plan.rows:
        lines.append("new rows:")
        for r in plan.rows:
            lines.append(f"  + {r.file} [[{r.table}]] {r.label}: {_row_summary(r)}")
    for kind, title in (("changed", "changed on the index (not rewritten):"),
                        ("curate", "needs curation (not in the package metadata):"), ("info", "notes:")):
        found = [f for f in plan.findings if f.kind == kind]
        if found:
            lines.append(title)
            lines += [f"  - {f.text}" for f in found]
    if not plan.rows and not any(f.kind != "info" for f in plan.findings):
        lines.append("the matrices are up to date with the index")
    return "\n".join(lines) + "\n"


def _row_summary(r: Row) -> str:
    skip = {"version", "source", "note"}
    parts = []
    for k, v in r.fields:
        if k in skip:
            continue
        if isinstance(v, list):
            v = ", ".join(v)
        elif isinstance(v, dict):
            v = ", ".join(f"{a} {b}" for a, b in v.items())
        parts.append(f"{k} {str(v).lower() if isinstance(v, bool) else v}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------- writing


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_]+", k) else json.dumps(k)


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{_key(k)} = {_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"cannot write {v!r} as TOML")  # pragma: no cover - rows hold these types only


def row_text(r: Row) -> str:
    """The row as a TOML array-of-tables entry, in the matrices' style."""
    return f"[[{r.table}]]\n" + "".join(f"{_key(k)} = {_value(v)}\n" for k, v in r.fields)


def _insert(text: str, table: str, blocks: Sequence[str]) -> str:
    """Insert ``blocks`` after the last ``[[table]]`` entry (sub-tables included), else at the end."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    last = max((i for i, line in enumerate(lines) if line.strip() == f"[[{table}]]"), default=None)
    if last is None:
        at = len(lines)
    else:
        at = last + 1
        while at < len(lines):
            head = lines[at].strip()
            if head.startswith("[") and not head.startswith((f"[{table}.", f"[[{table}.")):
                break
            at += 1
        while at > last + 1 and (not lines[at - 1].strip() or lines[at - 1].lstrip().startswith("#")):
            at -= 1
    new = "".join("\n" + b for b in blocks)
    after = lines[at:]
    if after and after[0].strip():
        new += "\n"
    return "".join(lines[:at]) + new + "".join(after)


def _bump(text: str, data_version: str) -> str:
    def repl(m: re.Match[str]) -> str:
        return f'data_version = "{max(m.group(1), data_version)}"'

    return re.sub(r'^data_version\s*=\s*"([^"]*)"', repl, text, count=1, flags=re.MULTILINE)


def apply(plan: Plan, root: Path, data_version: str) -> list[Path]:
    """Add the plan's rows to the matrices under ``root`` as data version ``data_version``.

    Every changed file is validated together with the rest (``load_dir``) before any is written;
    each is then replaced atomically. Returns the files written.
    """

    by_file: dict[str, list[Row]] = {}
    for r in plan.rows:
        by_file.setdefault(r.file, []).append(r)
    texts: dict[Path, str] = {}
    for name, rows in by_file.items():
        path = root / name
        if path.exists():
            text = path.read_text(encoding="utf-8")
        else:
            text = (f'schema = 1\ndata_version = "{data_version}"\nkind = "framework"\n'
                    f'package = "{name.removesuffix(".toml")}"\n')
        for table in ("release", "build"):
            blocks = [row_text(r) for r in rows if r.table == table]
            if blocks:
                text = _insert(text, table, blocks)
        texts[path] = _bump(text, data_version)
    if not texts:
        return []
    with tempfile.TemporaryDirectory(prefix="envsolve-refresh-") as tmp:
        for p in root.glob("*.toml"):
            shutil.copyfile(p, Path(tmp) / p.name)
        for path, text in texts.items():
            (Path(tmp) / path.name).write_text(text, encoding="utf-8")
        try:
            load_dir(Path(tmp))
        except MatrixError as e:
            raise RefreshError(f"the new rows would not validate, so nothing was written:\n  {e.message}",
                               tip=f"fix the rows named above in {root}, then run refresh again") from None
    for path, text in texts.items():
        write_atomic(path, text)
    return sorted(texts)
