"""Pure reading of package-index answers: project pages, wheel tags and core metadata.

Project pages come in the JSON simple API (PEP 691) or the HTML one (PEP 503, with the PEP 658 /
PEP 714 metadata attributes); wheel filenames give CPython minors through their tags; a wheel's
core metadata (``Requires-Python``, ``Requires-Dist``) gives the bundled CUDA, cuDNN, NCCL and
triton pins of its Linux x86_64 install. Nothing here touches the network (see ``refresh.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.parser import HeaderParser
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin

from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ..versions import parse_python_minor, python_admits_minor

__all__ = [
    "ACCEPT",
    "BundledFacts",
    "DistFile",
    "IndexFormatError",
    "Metadata",
    "bundled_facts",
    "cpython_minors",
    "exact_version",
    "is_bundled",
    "requirement_of",
    "file_version",
    "gpu_extras",
    "metadata_candidates",
    "parse_metadata",
    "parse_project_page",
    "project_url",
    "releases",
    "requirements",
]

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
# JSON first; the HTML forms for indexes that predate PEP 691 (pip asks the same way).
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"


class IndexFormatError(ValueError):
    """An index answer that is neither a PEP 691 JSON page nor a PEP 503 HTML page."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DistFile:
    """One file of a project page."""

    filename: str
    url: str  # absolute, without the hash fragment
    sha256: str = ""
    requires_python: str = ""
    metadata: bool | None = None  # the index serves <url>.metadata: yes, no, or not said
    metadata_sha256: str = ""
    yanked: bool = False

    @property
    def metadata_url(self) -> str:
        return self.url + ".metadata"


def project_url(index_url: str, name: str) -> str:
    """The simple-API page of ``name`` under ``index_url`` (normalised name, trailing slash)."""
    return f"{index_url.rstrip('/')}/{canonicalize_name(name)}/"


# ---------------------------------------------------------------------------- project pages


def parse_project_page(body: bytes, content_type: str, page_url: str) -> tuple[DistFile, ...]:
    """The files of a project page, by the answer's content type (JSON, else HTML)."""
    ctype = content_type.split(";")[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IndexFormatError(f"the page is not UTF-8 text ({e})") from None
    if ctype == JSON_TYPE or ctype.endswith("+json") or ctype == "application/json":
        return _parse_json(text, page_url)
    if "html" in ctype or text.lstrip().lower().startswith(("<!doctype html", "<html")):
        return _parse_html(text, page_url)
    raise IndexFormatError(f"the page has content type {content_type or 'none'!r}, "
                           "neither the JSON nor the HTML simple API")


def _meta_hash(value: Any) -> tuple[bool | None, str]:
    """PEP 691 ``core-metadata`` / ``dist-info-metadata``: true, false, or a hash table."""
    if value is None:
        return None, ""
    if isinstance(value, dict):
        return True, str(value.get("sha256", "")).lower()
    return bool(value), ""


def _parse_json(text: str, page_url: str) -> tuple[DistFile, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise IndexFormatError(f"the JSON page does not parse ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexFormatError("the JSON page has no 'files' list (PEP 691)")
    out = []
    for f in data["files"]:
        if not isinstance(f, dict) or not isinstance(f.get("filename"), str) or not isinstance(f.get("url"), str):
            raise IndexFormatError("a file entry lacks 'filename' or 'url' (PEP 691)")
        # PEP 714: core-metadata is the current key; dist-info-metadata the older one
        raw_meta = f.get("core-metadata", f.get("dist-info-metadata"))
        has_meta, meta_sha = _meta_hash(raw_meta)
        hashes = f.get("hashes")
        if not isinstance(hashes, dict):
            hashes = {}
        out.append(DistFile(
            filename=f["filename"],
            url=urldefrag(urljoin(page_url, f["url"])).url,
            sha256=str(hashes.get("sha256", "")).lower(),
            requires_python=str(f.get("requires-python") or ""),
            metadata=has_meta,
            metadata_sha256=meta_sha,
            yanked=bool(f.get("yanked", False)),
        ))
    return tuple(out)


class _Anchors(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base = ""
        self.anchors: list[tuple[dict[str, str | None], str]] = []
        self._open: dict[str, str | None] | None = None
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and not self.base:
            self.base = dict(attrs).get("href") or ""
        elif tag == "a":
            self._open, self._text = dict(attrs), []

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open is not None:
            self.anchors.append((self._open, "".join(self._text).strip()))
            self._open = None


def _hash_attr(value: str | None) -> tuple[bool | None, str]:
    """PEP 658 attribute value: "true", or "sha256=<hex>"."""
    if value is None:
        return None, ""
    name, _, digest = value.partition("=")
    if name.strip().lower() == "sha256" and digest:
        return True, digest.strip().lower()
    return value.strip().lower() != "false", ""


def _parse_html(text: str, page_url: str) -> tuple[DistFile, ...]:
    parser = _Anchors()
    parser.feed(text)
    base = urljoin(page_url, parser.base) if parser.base else page_url
    out = []
    for attrs, label in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        url, fragment = urldefrag(urljoin(base, href))
        filename = label or url.rsplit("/", 1)[-1]
        algo, _, digest = fragment.partition("=")
        meta_attr = attrs.get("data-core-metadata", attrs.get("data-dist-info-metadata"))
        has_meta, meta_sha = _hash_attr(meta_attr)
        out.append(DistFile(
            filename=filename,
            url=url,
            sha256=digest.lower() if algo == "sha256" else "",
            requires_python=attrs.get("data-requires-python") or "",
            metadata=has_meta,
            metadata_sha256=meta_sha,
            yanked="data-yanked" in attrs,
        ))
    return tuple(out)


# ---------------------------------------------------------------------------- files and tags


def file_version(filename: str) -> Version | None:
    """The version a wheel or sdist filename carries (None for other files or bad names)."""
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        if filename.endswith((".tar.gz", ".zip")):
            return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None
    return None


def releases(files: Iterable[DistFile], *, pre: bool = False) -> dict[Version, tuple[DistFile, ...]]:
    """Files by release version; pre- and dev releases only with ``pre``."""
    out: dict[Version, list[DistFile]] = {}
    for f in files:
        v = file_version(f.filename)
        if v is None or (not pre and (v.is_prerelease or v.is_devrelease)):
            continue
        out.setdefault(v, []).append(f)
    return {v: tuple(fs) for v, fs in sorted(out.items())}


def _tags(f: DistFile) -> frozenset[Tag]:
    try:
        return parse_wheel_filename(f.filename)[3]
    except InvalidWheelFilename:
        return frozenset()


def _linux_wheel(tag: Tag, machine: str = "x86_64") -> bool:
    """A glibc Linux wheel tag for ``machine`` (x86_64 unless said), or a pure one (musllinux is
    not what the images run)."""
    return tag.platform == "any" or (tag.platform.startswith(("manylinux", "linux_"))
                                     and tag.platform.endswith(f"_{machine}"))


def _own_abi(tag: Tag) -> bool:
    """A CPython minor's own ABI: ``cp312``, or ``cp37m`` / ``cp27mu`` before Python 3.8 dropped the
    pymalloc suffix (a free-threaded ``cp313t`` is another ABI)."""
    return tag.abi == tag.interpreter or tag.abi in (f"{tag.interpreter}m", f"{tag.interpreter}mu")


def _cp_minor(interpreter: str) -> str:
    m = re.fullmatch(r"cp(\d)(\d+)", interpreter)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def cpython_minors(files: Iterable[DistFile], known: Sequence[str],
                   requires_python: str = "", machine: str = "x86_64") -> tuple[str, ...]:
    """CPython minors with a Linux wheel for ``machine`` (x86_64, aarch64) among ``files``
    (free-threaded builds aside).

    ``cpXY`` tags name their minor; ``abi3`` wheels and pure ``py3`` wheels serve every minor of
    ``known`` from theirs on that ``Requires-Python`` (the file's, else ``requires_python``) admits.
    """
    found: set[str] = set()
    for f in files:
        rp = f.requires_python or requires_python
        for tag in _tags(f):
            if not _linux_wheel(tag, machine):
                continue
            minor = _cp_minor(tag.interpreter)
            if minor and _own_abi(tag):
                found.add(minor)
            elif minor and tag.abi == "abi3":
                floor = parse_python_minor(minor)
                found.update(k for k in known if parse_python_minor(k) >= floor and python_admits_minor(rp, k))
            elif tag.interpreter in ("py3", "py2.py3") or (tag.interpreter.startswith("py3") and tag.abi == "none"):
                found.update(k for k in known if python_admits_minor(rp, k))
    return tuple(sorted((p for p in found if python_admits_minor(requires_python, p)), key=parse_python_minor))


def metadata_candidates(files: Iterable[DistFile], pythons: Sequence[str] = ()) -> list[DistFile]:
    """The Linux x86_64 wheels whose metadata says what a default install brings, best first:
    those the index says have a metadata file, then the newest regular CPython, then pure wheels."""
    def rank(f: DistFile) -> tuple[int, int, int, str]:
        tags = [t for t in _tags(f) if _linux_wheel(t)]
        minors = [parse_python_minor(m) for t in tags if (m := _cp_minor(t.interpreter)) and _own_abi(t)]
        newest = max(minors, default=(0, 0))
        return (0 if f.metadata else 1 if f.metadata is None else 2, -newest[0], -newest[1], f.filename)

    wheels = [f for f in files if f.filename.endswith(".whl") and not f.yanked
              and any(_linux_wheel(t) and not t.abi.endswith("t") for t in _tags(f))]
    return sorted(wheels, key=rank)


# ---------------------------------------------------------------------------- core metadata


@dataclass(frozen=True, kw_only=True, slots=True)
class Metadata:
    """The parts of a core metadata file envsolve reads."""

    name: str
    version: str
    requires_python: str = ""
    requires_dist: tuple[str, ...] = ()
    provides_extra: tuple[str, ...] = ()


def parse_metadata(text: str) -> Metadata:
    """Parse a core metadata file (RFC 822 headers); the description body is ignored."""
    msg = HeaderParser().parsestr(text)
    name, version = msg.get("Name"), msg.get("Version")
    if not name or not version:
        raise IndexFormatError("the metadata file has no Name or Version header")
    return Metadata(
        name=str(name).strip(),
        version=str(version).strip(),
        requires_python=str(msg.get("Requires-Python") or "").strip(),
        requires_dist=tuple(str(r).strip() for r in msg.get_all("Requires-Dist") or ()),
        provides_extra=tuple(str(e).strip() for e in msg.get_all("Provides-Extra") or ()),
    )


_LINUX_X86_64 = {"os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
                 "platform_machine": "x86_64", "implementation_name": "cpython",
                 "platform_python_implementation": "CPython"}


def requirements(md: Metadata, *, python: str, extra: str = "") -> tuple[Requirement, ...]:
    """The requirements a Linux x86_64 CPython ``python`` install of ``md`` (with ``extra``) pulls."""
    env = dict(_LINUX_X86_64, python_version=python, python_full_version=f"{python}.0",
               implementation_version=f"{python}.0", extra=extra)
    out = []
    for raw in md.requires_dist:
        try:
            req = Requirement(raw)
        except InvalidRequirement:
            continue
        try:
            if req.marker is not None and not req.marker.evaluate(env):
                continue
        except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
            continue
        out.append(req)
    return tuple(out)


_BUNDLED = re.compile(r"^(nvidia-|cuda-toolkit$|triton$)")


def is_bundled(name: str) -> bool:
    """Whether ``name`` is a library a framework wheel pins for its GPU stack (NVIDIA, triton)."""
    return bool(_BUNDLED.match(canonicalize_name(name)))


def gpu_extras(md: Metadata, python: str) -> tuple[str, ...]:
    """Extras that add NVIDIA/CUDA packages or a CUDA plugin over the plain install."""
    plain = {canonicalize_name(r.name) for r in requirements(md, python=python)}
    out = []
    for extra in md.provides_extra:
        added = {canonicalize_name(r.name) for r in requirements(md, python=python, extra=extra)} - plain
        if any(_BUNDLED.match(n) or re.match(r"^jax-cuda\d+-plugin$", n) for n in added):
            out.append(extra)
    return tuple(sorted(out))


@dataclass(frozen=True, kw_only=True, slots=True)
class BundledFacts:
    """What a set of requirements says about the CUDA stack it brings."""

    cuda: str = ""  # CUDA major.minor of an exact runtime pin ("12.8"), else ""
    cuda_runtime: str = ""  # the runtime requirement as written, e.g. "cuda-toolkit==13.0.3"
    cudnn: str = ""  # "9.10.2.21", or a range such as ">=9.3.0.75,<10.0"
    nccl: str = ""
    triton: str = ""
    pins: tuple[tuple[str, str], ...] = ()  # exact pins of bundled libraries (name -> version)
    ranges: tuple[tuple[str, str], ...] = ()  # every bundled requirement (name -> spec)

    @property
    def empty(self) -> bool:
        return not self.ranges


def exact_version(spec: SpecifierSet) -> str:
    """The version of an ``==X`` (or ``===X``) specifier set, else ""."""
    specs = list(spec)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and not specs[0].version.endswith(".*"):
        return specs[0].version
    return ""


def _show(spec: SpecifierSet) -> str:
    return exact_version(spec) or str(spec)


def bundled_facts(reqs: Iterable[Requirement]) -> BundledFacts:
    """CUDA runtime, cuDNN, NCCL and triton from requirements, in both the ``nvidia-*-cu12``
    style and the ``cuda-toolkit[...]==13.x`` / ``nvidia-cuda-runtime==13.x`` style."""
    pins: dict[str, str] = {}
    ranges: dict[str, str] = {}
    cuda = runtime = cudnn = nccl = triton = ""
    for req in reqs:
        name = canonicalize_name(req.name)
        if not _BUNDLED.match(name):
            continue
        shown = _show(req.specifier)
        ranges[name] = shown
        exact = exact_version(req.specifier)
        if exact:
            pins[name] = exact
        if name == "cuda-toolkit" or re.fullmatch(r"nvidia-cuda-runtime(-cu\d+)?", name):
            if not runtime or name == "cuda-toolkit":
                runtime = f"{name}{req.specifier}"
                version = exact or (list(req.specifier)[0].version.removesuffix(".*")
                                    if len(req.specifier) == 1 and list(req.specifier)[0].operator == "==" else "")
                cuda = ".".join(version.split(".")[:2]) if version else ""
        elif re.fullmatch(r"nvidia-cudnn(-cu\d+)?", name):
            cudnn = shown
        elif re.fullmatch(r"nvidia-nccl(-cu\d+)?", name):
            nccl = shown
        elif name == "triton":
            triton = shown
    return BundledFacts(cuda=cuda, cuda_runtime=runtime, cudnn=cudnn, nccl=nccl, triton=triton,
                        pins=tuple(sorted(pins.items())), ranges=tuple(sorted(ranges.items())))


def requirement_of(reqs: Iterable[Requirement], name: str) -> Requirement | None:
    """The requirement on ``name`` among ``reqs`` (first match), if any."""
    want = canonicalize_name(name)
    return next((r for r in reqs if canonicalize_name(r.name) == want), None)
