"""Pure reading of package-index answers: project pages, their files, and which Pythons a release has.

Project pages come in the JSON simple API (PEP 691) or the HTML one (PEP 503, with the PEP 658 /
PEP 714 metadata attributes); wheel filenames give CPython minors through their tags, parsed by
packaging (:func:`cpython_minors` is the one rule steering, ``data --verify`` and ``refresh`` use).
Nothing here touches the network (see ``client.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urldefrag, urljoin

import msgspec
from packaging.tags import Tag
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ..domain import DEFAULT_PLATFORM, WHEEL_TAGS
from ..versions import parse_python_minor, python_admits_minor

__all__ = [
    "ACCEPT",
    "DistFile",
    "IndexFormatError",
    "cpython_minors",
    "cpython_tag_minors",
    "file_version",
    "admitted",
    "has_cpython_wheels",
    "installable_pythons",
    "metadata_candidates",
    "parse_project_page",
    "project_url",
    "release_pythons",
    "releases",
    "requires_python_of",
    "wheel_python",
]

JSON_TYPE = "application/vnd.pypi.simple.v1+json"
# JSON first; the HTML forms for indexes that predate PEP 691 (pip asks the same way).
ACCEPT = f"{JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01"


class IndexFormatError(ValueError):
    """An index answer that is neither a PEP 691 JSON page nor a PEP 503 HTML page."""


class DistFile(msgspec.Struct, frozen=True, kw_only=True):
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


def _is_json(ctype: str) -> bool:
    return ctype in (JSON_TYPE, "application/json") or ctype.endswith("+json")


def _is_html(ctype: str, text: str) -> bool:
    return "html" in ctype or text.lstrip().lower().startswith(("<!doctype html", "<html"))


def parse_project_page(body: bytes, content_type: str, page_url: str) -> tuple[DistFile, ...]:
    """The files of a project page, by the answer's content type (JSON, else HTML)."""
    ctype = content_type.split(";")[0].strip().lower()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise IndexFormatError(f"the page is not UTF-8 text ({e})") from None
    if _is_json(ctype):
        return _parse_json(text, page_url)
    if _is_html(ctype, text):
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


def _json_file(f: Any, page_url: str) -> DistFile:
    """One PEP 691 file entry (PEP 714: ``core-metadata`` is the current key, ``dist-info-metadata``
    the older one)."""
    if not (isinstance(f, dict) and isinstance(f.get("filename"), str) and isinstance(f.get("url"), str)):
        raise IndexFormatError("a file entry lacks 'filename' or 'url' (PEP 691)")
    has_meta, meta_sha = _meta_hash(f.get("core-metadata", f.get("dist-info-metadata")))
    hashes = f.get("hashes")
    return DistFile(
        filename=f["filename"],
        url=urldefrag(urljoin(page_url, f["url"])).url,
        sha256=str(hashes.get("sha256", "") if isinstance(hashes, dict) else "").lower(),
        requires_python=str(f.get("requires-python") or ""),
        metadata=has_meta,
        metadata_sha256=meta_sha,
        yanked=bool(f.get("yanked", False)),
    )


def _parse_json(text: str, page_url: str) -> tuple[DistFile, ...]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise IndexFormatError(f"the JSON page does not parse ({e})") from None
    if not (isinstance(data, dict) and isinstance(data.get("files"), list)):
        raise IndexFormatError("the JSON page has no 'files' list (PEP 691)")
    return tuple(_json_file(f, page_url) for f in data["files"])


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


def _wanted(v: Version, pre: bool) -> bool:
    return pre or not (v.is_prerelease or v.is_devrelease)


def releases(files: Iterable[DistFile], *, pre: bool = False) -> dict[Version, tuple[DistFile, ...]]:
    """Files by release version; pre- and dev releases only with ``pre``."""
    out: dict[Version, list[DistFile]] = {}
    for v, f in ((file_version(f.filename), f) for f in files):
        if v is not None and _wanted(v, pre):
            out.setdefault(v, []).append(f)
    return {v: tuple(fs) for v, fs in sorted(out.items())}


def _tags(f: DistFile) -> frozenset[Tag]:
    try:
        return parse_wheel_filename(f.filename)[3]
    except InvalidWheelFilename:
        return frozenset()


def _wheel_tag_for(tag: Tag, platform: str = DEFAULT_PLATFORM) -> bool:
    """A wheel tag for ``platform`` (linux/amd64 unless said: a glibc Linux one), or a pure one
    (:data:`~envsolve.domain.WHEEL_TAGS`)."""
    prefixes, suffixes = WHEEL_TAGS[platform]  # type: ignore[index]
    return tag.platform == "any" or (tag.platform.startswith(prefixes) and tag.platform.endswith(suffixes))


def _own_abi(tag: Tag) -> bool:
    """A CPython minor's own ABI: ``cp312``, or ``cp37m`` / ``cp27mu`` before Python 3.8 dropped the
    pymalloc suffix (a free-threaded ``cp313t`` is another ABI)."""
    return tag.abi == tag.interpreter or tag.abi in (f"{tag.interpreter}m", f"{tag.interpreter}mu")


def _cp_minor(tag: Tag) -> str:
    """The CPython minor a ``cpXY`` interpreter tag names ("" for another interpreter)."""
    digits = tag.interpreter.removeprefix("cp")
    return f"{digits[0]}.{digits[1:]}" if tag.interpreter.startswith("cp") and digits.isdigit() else ""


def _pure(tag: Tag) -> bool:
    return tag.interpreter in ("py3", "py2.py3") or (tag.interpreter.startswith("py3") and tag.abi == "none")


def admitted(known: Sequence[str], requires_python: str) -> list[str]:
    """The minors of ``known`` a ``Requires-Python`` admits (any patch of them)."""
    return [k for k in known if python_admits_minor(requires_python, k)]


def _tag_minors(tag: Tag, known: Sequence[str], requires_python: str) -> set[str]:
    """The minors one Linux wheel tag serves: its own (``cp312-cp312``), every admitted one from
    its own on (``cp39-abi3``), or every admitted one (``py3-none``)."""
    minor = _cp_minor(tag)
    if minor and _own_abi(tag):
        return {minor}
    if minor and tag.abi == "abi3":
        return {k for k in admitted(known, requires_python) if parse_python_minor(k) >= parse_python_minor(minor)}
    return set(admitted(known, requires_python)) if _pure(tag) else set()


def cpython_minors(files: Iterable[DistFile], known: Sequence[str],
                   requires_python: str = "", platform: str = DEFAULT_PLATFORM) -> tuple[str, ...]:
    """THE rule for which Pythons a release has: the CPython minors with a wheel for ``platform``
    (linux/amd64 unless said) among ``files`` (free-threaded builds aside).

    ``cpXY`` tags name their minor; ``abi3`` wheels and pure ``py3`` wheels serve every minor of
    ``known`` from theirs on that ``Requires-Python`` (the file's, else ``requires_python``) admits.
    """
    found: set[str] = set().union(*(_file_minors(f, known, requires_python, platform) for f in files))
    return tuple(admitted(sorted(found, key=parse_python_minor), requires_python))


def _file_minors(f: DistFile, known: Sequence[str], requires_python: str, platform: str) -> set[str]:
    """The minors one file's wheel tags for ``platform`` serve (its own Requires-Python first)."""
    rp = f.requires_python or requires_python
    return {m for tag in _tags(f) if _wheel_tag_for(tag, platform) for m in _tag_minors(tag, known, rp)}


def requires_python_of(files: Iterable[DistFile]) -> str:
    """The first ``Requires-Python`` the page gives for one of ``files`` ("" when none)."""
    return next((f.requires_python for f in files if f.requires_python), "")


def release_pythons(files: Sequence[DistFile], known: Sequence[str],
                    source: Sequence[DistFile] | None = None) -> tuple[str, ...]:
    """The Pythons a framework release has: its wheels' (:func:`cpython_minors`), or, for a release
    whose Pythons are another package's (jax's are its jaxlib's: ``domain.PYTHONS_FROM``), that
    package's wheels of ``source`` within the release's own ``Requires-Python``."""
    if source is None:
        return cpython_minors(files, known)
    return cpython_minors(source, known, requires_python_of(files))


def installable_pythons(files: Sequence[DistFile], known: Sequence[str], requires_python: str,
                        platforms: Sequence[str]) -> tuple[str, ...]:
    """Pythons a release installs on from wheels alone on every one of ``platforms``; for an
    sdist-only release, what ``requires_python`` admits."""
    wheels = [f for f in files if f.filename.endswith(".whl")]
    if not wheels:
        return tuple(admitted(known, requires_python))
    everywhere = set(known).intersection(*(cpython_minors(wheels, known, requires_python, p) for p in platforms))
    return tuple(p for p in known if p in everywhere)


def has_cpython_wheels(files: Iterable[DistFile]) -> bool:
    """Whether any of ``files`` is built for one CPython minor's own ABI (keras's pure wheels are not)."""
    return any(_cp_minor(t) and _own_abi(t) for f in files for t in _tags(f))


def cpython_tag_minors(files: Iterable[DistFile]) -> set[str]:
    """The CPython minors ``files`` are built for, on any platform."""
    return {m for f in files for t in _tags(f) if _own_abi(t) and (m := _cp_minor(t))}


def wheel_python(f: DistFile, fallback: str) -> str:
    """The newest CPython minor wheel ``f`` is tagged for (``fallback`` for a pure wheel): the
    Python whose markers its metadata is read with."""
    minors = [m for t in _tags(f) if (m := _cp_minor(t))]
    return max(minors, key=parse_python_minor) if minors else fallback


def _metadata_rank(f: DistFile) -> tuple[int, int, int, str]:
    """Those the index says have a metadata file first, then the newest regular CPython, then pure."""
    minors = [parse_python_minor(m) for t in _tags(f) if _wheel_tag_for(t) and (m := _cp_minor(t)) and _own_abi(t)]
    newest = max(minors, default=(0, 0))
    return (0 if f.metadata else 1 if f.metadata is None else 2, -newest[0], -newest[1], f.filename)


def _regular_linux_wheel(f: DistFile) -> bool:
    return f.filename.endswith(".whl") and not f.yanked and any(
        _wheel_tag_for(t) and not t.abi.endswith("t") for t in _tags(f))


def metadata_candidates(files: Iterable[DistFile]) -> list[DistFile]:
    """The Linux x86_64 wheels whose metadata says what a default install brings, best first:
    those the index says have a metadata file, then the newest regular CPython, then pure wheels."""
    return sorted((f for f in files if _regular_linux_wheel(f)), key=_metadata_rank)
