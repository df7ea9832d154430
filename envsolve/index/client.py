"""The one client that reads a package index over HTTP: project pages, metadata files, wheel members.

Requests go through one requests session with urllib3's ``Retry`` (connection errors, timeouts
and 429/5xx, with exponential backoff) and CacheControl's HTTP cache on disk (ETag /
Last-Modified revalidation, ``max-age``, as pip and uv do). Every 200 answer is kept, so a lock
that reads the cache first (``revalidate=False``) and ``--offline`` read them back. Files the
index names by hash (metadata files with their sha256, members of a wheel by the wheel's sha256)
are kept by that hash and never asked for again. TLS is verified with the CA bundle pip is
configured with (``cert``, ``REQUESTS_CA_BUNDLE``), so an intercepting proxy's system bundle works.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import requests
from cachecontrol import CacheControlAdapter
from cachecontrol.caches import FileCache
from cachecontrol.controller import CacheController
from requests.adapters import HTTPAdapter
from urllib3 import BaseHTTPResponse
from urllib3.connectionpool import ConnectionPool
from urllib3.exceptions import MaxRetryError, NewConnectionError
from urllib3.exceptions import TimeoutError as Urllib3Timeout
from urllib3.util.retry import Retry

from ..config import Credential, netrc_logins, pip_config, strip_credentials
from ..errors import EnvsolveError, MissingProject, RefreshError
from ..files import read_cache, write_atomic
from ..voice import silent
from . import pages as ix
from . import wheel
from .metadata import Metadata, parse_metadata
from .policy import BACKOFF, CREDENTIALS_TIP, REFUSED_STATUS, RETRIES, RETRY_STATUS, TIMEOUT

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["IndexClient"]

METADATA_TRIES = 3  # wheels of one release whose metadata file is tried before giving up
_AGENT = "envsolve-refresh"
_OTHER_INDEX = "try again later, or use another index with --index-url"
# where an unreachable index leaves a user (`envsolve lock` says its own: lock.resolve.WAYS_OUT)
_WAYS_OUT = "or use another index: --index-url URL, or PIP_INDEX_URL / pip's configuration"
_OFFLINE_TIP = "lock once with the network to fill the cache, or use --frameworks-only"




class _Refused(RefreshError):
    """The index refused the credentials (HTTP 401 or 403): said once, never skipped as one bad file."""


class _Uncached(requests.RequestException):
    """An answer ``--offline`` would have to ask the network for."""


class _Retry(Retry):
    """urllib3's retries, each one said through ``warn`` before it waits (what failed, when it
    tries again, which retry of how many), waiting ``backoff`` before the first, doubled for each
    further one (urllib3's own first retry waits nothing)."""

    warn: Callable[[str], None] = silent
    where = ""
    most = 0  # the retries allowed in all

    def new(self, **kw: Any) -> Self:
        out = super().new(**kw)
        out.warn, out.where, out.most = self.warn, self.where, self.most
        return out

    def increment(self, method: str | None = None, url: str | None = None, response: BaseHTTPResponse | None = None,
                  error: Exception | None = None, _pool: ConnectionPool | None = None,
                  _stacktrace: TracebackType | None = None) -> Self:
        out = super().increment(method, url, response, error, _pool, _stacktrace)
        where = f"{_pool.scheme}://{_pool.host}:{_pool.port}{url}" if _pool is not None else str(url)
        out.where = strip_credentials(where)[0]
        return out

    def get_backoff_time(self) -> float:
        return min(self.backoff_max, self.backoff_factor * 2 ** (len(self.history) - 1)) if self.history else 0.0

    def sleep(self, response: BaseHTTPResponse | None = None) -> None:
        self.warn(retry_text(self.where, self.history[-1].error if self.history else None,
                             self.history[-1].status if self.history else None,
                             self.get_backoff_time(), len(self.history), self.most))
        super().sleep(response)


def retry_text(where: str, error: Exception | None, status: int | None, wait: float, retry: int, most: int) -> str:
    """The warning before a retry: ``URL did not answer (connection refused); trying again in 2 s
    (retry 1 of 3)``."""
    if status:
        what = f"answered HTTP {status}"
    elif isinstance(error, Urllib3Timeout) and not isinstance(error, NewConnectionError):  # refused: a "timeout" too
        what = "did not answer (timed out)"
    else:
        what = f"did not answer ({_reason_text(str(error), type(error).__name__).lower()})"
    return f"{where} {what}; trying again in {wait:g} s (retry {retry} of {most})"


class _Controller(CacheController):
    """CacheControl's rules, plus: keep every 200 answer (``--offline`` reads them back), and, when
    reading the cache first, answer from any kept one unless the request asks ``max-age=0``."""

    cache_first = False

    def cached_request(self, request: requests.PreparedRequest) -> Any:
        if self.cache_first and "max-age=0" not in request.headers.get("Cache-Control", ""):
            return self._load_from_cache(request) or False
        return super().cached_request(request)

    def cache_response(self, request: requests.PreparedRequest, response_or_ref: Any, body: bytes | None = None,
                       status_codes: Any = None) -> None:
        response = response_or_ref() if isinstance(response_or_ref, weakref.ReferenceType) else response_or_ref
        if response is not None and _keep_anyway(request, response, body, self.parse_cache_control(response.headers)):
            self._cache_set(self.cache_url(str(request.url)), request, response, body)
            return
        super().cache_response(request, response_or_ref, body, status_codes)


def _keep_anyway(request: requests.PreparedRequest, response: Any, body: bytes | None,
                 cc: Mapping[str, Any]) -> bool:
    """A whole 200 answer HTTP caching would drop for want of validators: kept all the same."""
    if response.status != 200 or body is None or "no-store" in cc:
        return False
    length = response.headers.get("Content-Length", "")
    return "Range" not in request.headers and (not length.isdigit() or int(length) == len(body))


class _NoNetwork(HTTPAdapter):
    def send(self, request: requests.PreparedRequest, *args: Any, **kw: Any) -> requests.Response:
        raise _Uncached(str(request.url))


class _OfflineAdapter(CacheControlAdapter, _NoNetwork):
    """The cache, and nothing behind it (CacheControl's send falls through to ``_NoNetwork``)."""


def _adapter(cache: Path | None, retry: Retry, *, offline: bool, cache_first: bool) -> HTTPAdapter:
    """The cache in front of the network (nothing behind it offline), or the network alone."""
    if cache is None:
        return _NoNetwork() if offline else HTTPAdapter(max_retries=retry)
    kind = _OfflineAdapter if offline else CacheControlAdapter
    adapter = kind(cache=FileCache(str(cache)), controller_class=_Controller, max_retries=retry)
    adapter.controller.cache_first = cache_first or offline  # type: ignore[attr-defined]
    return adapter


class _Logins(requests.auth.AuthBase):
    """The login a request carries: the URL's own (``user:password@``, as requests takes it),
    else its host's among ``logins`` (the spec's, then the user's netrc: config.netrc_logins).
    Set as the session's auth, it also keeps requests from reading ``~/.netrc`` itself on every
    request, unchecked (a FIFO there would hang the lock)."""

    def __init__(self, logins: Mapping[str, tuple[str, str]]) -> None:
        self.logins = dict(logins)

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        from requests.auth import HTTPBasicAuth
        from requests.utils import get_auth_from_url

        user, password = get_auth_from_url(str(r.url))
        host = urlparse(str(r.url)).hostname or ""
        login = (user, password) if user else self.logins.get(host)
        return HTTPBasicAuth(*login)(r) if login is not None else r


def _session(adapter: HTTPAdapter, cert: str, logins: Mapping[str, tuple[str, str]]) -> requests.Session:
    session = requests.Session()
    session.auth = _Logins(logins)
    if cert:
        session.verify = cert  # pip's ``cert``; REQUESTS_CA_BUNDLE still wins, as requests does
    for scheme in ("http://", "https://"):
        session.mount(scheme, adapter)
    return session


def _reason_text(text: str, fallback: str) -> str:
    m = re.search(r"\[Errno -?\d+\] ([^'\")]+)", text) or re.search(r"(Connection refused|Name or service "
                                                                     r"not known|No route to host)", text)
    return m.group(1).strip() if m else fallback


def _reason(e: requests.RequestException) -> str:
    return _reason_text(str(e), type(e).__name__)


def _timed_out(e: requests.RequestException) -> bool:
    reason = e.args[0].reason if e.args and isinstance(e.args[0], MaxRetryError) else None
    refused = isinstance(reason, NewConnectionError)  # urllib3 counts it as a connect timeout
    return isinstance(e, requests.Timeout) or (isinstance(reason, Urllib3Timeout) and not refused)


def _shown(url: str) -> str:
    """``url`` as a message shows it: without user, password or query (where tokens travel)."""
    return strip_credentials(url)[0]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _content_range_total(header: str) -> int | None:
    m = re.fullmatch(r"bytes (\d+)-(\d+)/(\d+)", header.strip())
    return int(m.group(3)) if m else None


_BLOB_CAP = 64 << 20  # a metadata file or a wheel member envsolve reads: far less


class _Blobs:
    """Files named by a hash the index gives: written once, read back without asking."""

    def __init__(self, root: Path | None) -> None:
        self.root = root

    def path(self, kind: str, key: str) -> Path | None:
        return self.root / kind / key if self.root is not None and key else None

    def load(self, kind: str, key: str) -> bytes | None:
        """The kept file (a private regular file of this user's, of a sane size: else none); a
        metadata file whose bytes are not the sha256 it is named by is none either."""
        path = self.path(kind, key)
        body = read_cache(path, _BLOB_CAP) if path is not None else None
        if body is not None and kind == "metadata" and _sha256(body) != key:
            return None  # spoilt or forged: read from the index again
        return body

    def store(self, kind: str, key: str, body: bytes) -> None:
        path = self.path(kind, key)
        if path is None:
            return
        try:  # a cache that cannot be written only costs a later request
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, body)
        except OSError:
            pass


class IndexClient:
    """Reads project pages, metadata files and wheel members from one simple-API index (the
    :class:`envsolve.index.reader.Reader` of steering, ``data --verify`` and ``refresh``)."""

    def __init__(self, index_url: str, *, cache_dir: Path | None = None, timeout: float = TIMEOUT,
                 retries: int = RETRIES, backoff: float = BACKOFF, progress: Callable[[str], None] = silent,
                 warn: Callable[[str], None] = silent, offline: bool = False, revalidate: bool = True,
                 cert: str | None = None, credentials: Sequence[Credential] = ()) -> None:
        scheme = urlparse(index_url).scheme
        if scheme == "file":
            raise EnvsolveError(f"index URL {_shown(index_url)!r} is not an http(s) URL: envsolve reads an index "
                                "itself (refresh, data --verify, [packages] pip) over http(s) only; file:// serves "
                                "uv and pip alone",
                                tip="serve the folder: `python -m http.server -d FOLDER 8000`, then pass "
                                    "http://127.0.0.1:8000/simple (README, 'Index URLs')")
        if scheme not in ("http", "https"):
            raise EnvsolveError(f"index URL {index_url!r} is not an http(s) URL",
                                tip="pass the simple-API root of an index with --index-url")
        if cache_dir is not None and cache_dir.exists() and not cache_dir.is_dir():
            raise EnvsolveError(f"{cache_dir}: envsolve's cache folder (ENVSOLVE_CACHE_DIR, --cache-dir) is not a "
                                "folder",
                                tip="point ENVSOLVE_CACHE_DIR (or --cache-dir) at a folder, or move that file away")
        self.index_url = index_url.rstrip("/")
        self.shown_url = _shown(self.index_url)  # as messages name it: without credentials
        self.timeout = timeout
        self.tries = max(0, retries) + 1
        self.progress = progress
        self.offline = offline  # answers from the cache only; a missing one is an error naming it
        self.warnings: list[str] = []  # files that failed and were skipped (see first_metadata)
        retry = _Retry(total=self.tries - 1, backoff_factor=backoff, status_forcelist=sorted(RETRY_STATUS),
                       raise_on_status=False, respect_retry_after_header=False)
        retry.warn, retry.most = warn, self.tries - 1
        root = cache_dir / "index" if cache_dir is not None else None
        self.blobs = _Blobs(root)
        self.cache_first = not revalidate  # False: a cached answer is used as is, however old
        adapter = _adapter(root / "http" if root is not None else None, retry, offline=offline,
                           cache_first=self.cache_first)
        self.session = _session(adapter, pip_config().get("cert", "") if cert is None else cert,
                                netrc_logins(credentials))  # the spec's logins (``credentials``), then ~/.netrc
        self._checked: dict[str, tuple[ix.DistFile, ...]] = {}  # pages revalidated in this run
        self.answers = {"cache": 0, "network": 0}  # where this run's answers came from (``-v`` says)

    def answered(self) -> str:
        """Where this client's answers came from, for ``-v``."""
        cache, network = self.answers["cache"], self.answers["network"]
        return f"{self.shown_url}: {cache} answer(s) from the cache, {network} from the network"

    # ------------------------------------------------------------------ requests

    def _send(self, url: str, headers: Mapping[str, str], *, stream: bool = False) -> requests.Response:
        try:
            resp = self.session.get(url, headers={"User-Agent": _AGENT, **headers},
                                    timeout=(self.timeout, self.timeout), stream=stream)
        except _Uncached:
            raise RefreshError(f"{_shown(url)} is not in envsolve's cache, and --offline reads nothing else",
                               tip=_OFFLINE_TIP) from None
        except requests.RequestException as e:
            raise self._unreachable(url, e) from None
        self.answers["cache" if getattr(resp, "from_cache", False) else "network"] += 1
        return resp

    def _unreachable(self, url: str, e: requests.RequestException) -> RefreshError:
        tries = f"{self.tries} {'try' if self.tries == 1 else 'tries'}"
        if _timed_out(e):
            return RefreshError(f"the package index at {self.shown_url} did not answer within {self.timeout:g} s "
                                f"({_shown(url)}; {tries})", tip=f"try again later, raise --timeout, {_WAYS_OUT}")
        return RefreshError(f"cannot reach the package index at {self.shown_url} ({_reason(e)}; {tries})",
                            tip=f"check the network or proxy, {_WAYS_OUT}")

    def _failed(self, status: int, url: str, what: str = "") -> RefreshError:
        """The error of an answer that is not the file: the credentials refused (401, 403), else
        what the index answered."""
        if status in REFUSED_STATUS:
            return _Refused(f"the package index at {self.shown_url} refused the credentials (HTTP "
                            f"{REFUSED_STATUS[status]} for {_shown(url)}{what}): none were given for it, or they "
                            "are not valid there", tip=CREDENTIALS_TIP)
        return RefreshError(f"the package index answered HTTP {status} for {_shown(url)}{what}", tip=_OTHER_INDEX)

    def _kept(self, kind: str, key: str) -> bytes | None:
        """A file kept by its hash (counted as an answer of the cache), or None."""
        body = self.blobs.load(kind, key)
        self.answers["cache"] += body is not None
        return body

    # ------------------------------------------------------------------ pages

    def _page_headers(self, revalidate: bool) -> dict[str, str]:
        """A cache-first client asks anew (``max-age=0``) for a page it must revalidate; offline, never."""
        again = revalidate and self.cache_first and not self.offline
        return {"Accept": ix.ACCEPT, **({"Cache-Control": "max-age=0"} if again else {})}

    def project(self, name: str, *, revalidate: bool = False) -> tuple[ix.DistFile, ...]:
        """The files of ``name``'s project page; a missing project is a :class:`MissingProject`.
        ``revalidate``: ask the index even when this client reads its cache first (a page cached
        before the release a line asks for); once per page and run."""
        if revalidate and name in self._checked:
            return self._checked[name]
        url = ix.project_url(self.index_url, name)
        resp = self._send(url, self._page_headers(revalidate))
        if resp.status_code == 404:
            raise MissingProject(f"the package index at {self.shown_url} has no project {name!r}",
                                 tip="check the name given to --package, or use an index that carries it "
                                     "(--index-url)")
        if resp.status_code != 200:
            raise self._failed(resp.status_code, url)
        files = _page_files(name, url, resp)
        if revalidate or not self.cache_first:
            self._checked[name] = files
        return files

    # ------------------------------------------------------------------ metadata

    def metadata(self, f: ix.DistFile) -> Metadata | None:
        """The core metadata of ``f`` (None when the index serves no metadata file for it)."""
        if f.metadata is False:
            return self.wheel_metadata(f)
        body = self._kept("metadata", f.metadata_sha256)
        if body is None:
            self.progress(f"reading metadata of {f.filename}")
            resp = self._send(f.metadata_url, {"Accept": "*/*"})
            if resp.status_code in (404, 410):
                return self.wheel_metadata(f)
            if resp.status_code != 200:
                raise self._failed(resp.status_code, f.metadata_url)
            body = self._checked_body(f, resp.content)
        return _parsed(f"the metadata file of {f.filename}", body.decode("utf-8", errors="replace"))

    def _checked_body(self, f: ix.DistFile, body: bytes) -> bytes:
        got = _sha256(body)
        if f.metadata_sha256 and got != f.metadata_sha256:
            raise RefreshError(
                f"the metadata file of {f.filename} does not match the sha256 the index gives for it "
                f"(index: {f.metadata_sha256[:16]}..., file: {got[:16]}...)",
                tip="the index or a proxy serves altered files; nothing was written. Try again, "
                    "or use another index with --index-url")
        self.blobs.store("metadata", f.metadata_sha256, body)
        return body

    def wheel_metadata(self, f: ix.DistFile) -> Metadata | None:
        """The METADATA member of wheel ``f``, read with HTTP range requests on its zip central
        directory (PEP 658 files are not served for it); cached by the wheel's sha256. None, with a
        warning, when the server does not serve ranges."""
        text = self.wheel_member(f, wheel.METADATA, "no metadata file, so its metadata")
        return None if text is None else _parsed(f"the METADATA of {f.filename}", text)

    def first_metadata(self, files: Iterable[ix.DistFile]) -> tuple[ix.DistFile, Metadata] | None:
        """The metadata of the best Linux wheel whose metadata can be read. A file that fails (HTTP
        error, timeout, hash mismatch) is a warning and the next one is tried."""
        for f in ix.metadata_candidates(files)[:METADATA_TRIES]:
            md = self._metadata_or_warn(f)
            if md is not None:
                return f, md
        return None

    def _metadata_or_warn(self, f: ix.DistFile) -> Metadata | None:
        try:
            return self.metadata(f)
        except RefreshError as e:
            if self.offline or isinstance(e, _Refused):
                raise  # what the cache lacks is the answer; refused credentials refuse every file alike
            self.warnings.append(f"{f.filename}: {e.message}; skipped")
            return None

    # ------------------------------------------------------------------ wheel members

    def wheel_member(self, f: ix.DistFile, pattern: str, what: str = "") -> str | None:
        """The text of the one member of wheel ``f`` whose path matches ``pattern`` (a regular
        expression), read with HTTP range requests (the zip directory, then that member alone) and
        cached by the wheel's sha256. None, with a warning, when the server does not serve ranges."""
        if not f.filename.endswith(".whl"):
            return None
        key = f"{f.sha256}-{_sha256(pattern.encode())[:16]}.txt" if f.sha256 else ""
        kept = self._kept("members", key)
        if kept is not None:
            return kept.decode("utf-8")
        self.progress(f"reading {pattern} out of {f.filename} (range requests)")
        try:
            text = self._range_member(f, pattern)
        except wheel.WheelFormatError as e:
            raise RefreshError(f"{f.filename} cannot be read as a wheel: {e}") from None
        if text is None:
            self.warnings.append(f"{f.filename}: the server does not serve byte ranges and "
                                 f"{what or f'its member {pattern}'} was not read (wheels are never downloaded whole)")
            return None
        self.blobs.store("members", key, text.encode("utf-8"))
        return text

    def _range(self, url: str, spec: str) -> tuple[bytes, int] | None:
        """The bytes of ``Range: bytes=spec`` and the file's full length; None when the server
        ignores ranges (its answer is closed unread: a wheel is never downloaded whole)."""
        resp = self._send(url, {"Range": f"bytes={spec}", "Accept-Encoding": "identity"}, stream=True)
        with resp:
            if resp.status_code == 200:
                return None
            if resp.status_code != 206:
                raise self._failed(resp.status_code, url, f" (bytes {spec})")
            total = _content_range_total(resp.headers.get("Content-Range", ""))
            if total is None:
                raise RefreshError(f"{_shown(url)} answered a range request without a usable Content-Range")
            return resp.content, total

    def _directory(self, url: str, tail: bytes, total: int) -> bytes | None:
        """The zip central directory, out of the tail already read or with one more range."""
        tail_start = total - len(tail)
        offset, size = wheel.central_directory(tail, tail_start)
        if offset >= tail_start:
            return tail[offset - tail_start:offset - tail_start + size]
        more = self._range(url, f"{offset}-{offset + size - 1}")
        return more[0] if more is not None else None

    def _range_member(self, f: ix.DistFile, pattern: str) -> str | None:
        got = self._range(f.url, f"-{wheel.TAIL}")
        directory = self._directory(f.url, *got) if got is not None else None
        if got is None or directory is None:
            return None
        member = wheel.find_member(directory, pattern)
        end = min(member.header_offset + wheel.member_bytes(member), got[1]) - 1
        chunk = self._range(f.url, f"{member.header_offset}-{end}")
        return wheel.member_text(member, chunk[0]) if chunk is not None else None


def _page_files(name: str, url: str, resp: requests.Response) -> tuple[ix.DistFile, ...]:
    try:
        return ix.parse_project_page(resp.content, resp.headers.get("Content-Type", ""), url)
    except ix.IndexFormatError as e:
        raise RefreshError(f"the page of {name!r} at {_shown(url)} is not a simple-API page: {e}",
                           tip="pass the simple-API root of the index with --index-url") from None


def _parsed(what: str, text: str) -> Metadata:
    try:
        return parse_metadata(text)
    except ix.IndexFormatError as e:
        raise RefreshError(f"{what} cannot be read: {e}") from None
