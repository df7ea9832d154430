"""The digest of a container image's tag, read from its registry (the registry HTTP API v2).

``GET /v2/<name>/manifests/<tag>``, accepting an OCI image index, a Docker manifest list, an OCI
manifest and a Docker v2 manifest: the digest is the answer's ``Docker-Content-Digest`` (checked
against the body's sha256), else the body's sha256. A multi-platform tag answers its index (or
manifest list), whose digest is what ``FROM image:tag@sha256:...`` pins on every platform.

Registries that hand out anonymous bearer tokens (Docker Hub, nvcr.io) answer 401 with
``WWW-Authenticate: Bearer realm=...,service=...,scope=...``: the realm is asked for a token with
that service and scope, and the manifest again with it. A login for the registry's host in the
netrc pip and uv read (``NETRC``, else ``~/.netrc``; see :mod:`envsolve.config`) is sent to the
realm over https only; nothing is written anywhere, and no token is kept.

HTTP goes through :class:`~envsolve.index.client.IndexClient`'s session: TLS with the CA bundle
pip is configured with, urllib3's retries with backoff, the timeouts of :mod:`.policy`; manifests
through its HTTP cache (a cache-first client answers from it), tokens through a session with no
cache. Plain http only for a registry on this machine (``localhost``, ``127.0.0.1``, ``[::1]``)
or one the user names in ``ENVSOLVE_INSECURE_REGISTRIES`` (host[:port], comma-separated).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..domain import qualified_image, registry_of
from ..errors import RefreshError
from ..voice import silent
from .policy import BACKOFF, REFUSED_STATUS, RETRIES, TIMEOUT

if TYPE_CHECKING:
    import requests

    from .client import IndexClient

__all__ = ["ACCEPT", "DOCKER_HUB", "INSECURE_VARIABLE", "RegistryClient", "Repository", "insecure_registries",
           "repository_of"]

# Docker Hub's registry host: a short name (`ubuntu`, `nvidia/cuda`) and docker.io mean it
DOCKER_HUB = "registry-1.docker.io"
_HUB_NAMES = frozenset({"docker.io", "index.docker.io", "registry.hub.docker.com", DOCKER_HUB})
# the manifests a tag may answer, a multi-platform index first
ACCEPT = ", ".join((
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
))
INSECURE_VARIABLE = "ENVSOLVE_INSECURE_REGISTRIES"
_LOCAL = frozenset({"localhost", "127.0.0.1", "::1"})
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_MANIFEST_CAP = 4 << 20  # an index or manifest: a few KB
_AGENT = "envsolve-registry"
_TIP = ("check the network or proxy (`envsolve lock --upgrade-images` records the digest once the registry answers); "
        "a private registry takes a `machine HOST login USER password TOKEN` line in ~/.netrc")


class Repository:
    """Where an image's manifests are: the registry's base URL, the repository's path there and the
    tag (``nvidia/cuda:12.8.1-base-ubuntu24.04`` -> ``https://registry-1.docker.io``,
    ``nvidia/cuda``, ``12.8.1-base-ubuntu24.04``)."""

    __slots__ = ("base", "host", "path", "tag")

    def __init__(self, base: str, path: str, tag: str) -> None:
        self.base, self.path, self.tag = base, path, tag
        self.host = urlsplit(base).hostname or ""

    @property
    def manifest_url(self) -> str:
        return f"{self.base}/v2/{self.path}/manifests/{self.tag}"


def insecure_registries(environ: Mapping[str, str] | None = None) -> frozenset[str]:
    """The registries (host[:port]) the user allows over plain http: ``ENVSOLVE_INSECURE_REGISTRIES``."""
    env = os.environ if environ is None else environ
    named = (x.strip().lower() for x in env.get(INSECURE_VARIABLE, "").split(","))
    return frozenset(x.partition("://")[2] if "://" in x else x for x in named if x)  # "http://h:5000" is h:5000


def repository_of(ref: str, insecure: frozenset[str] = frozenset()) -> Repository:
    """The registry, path and tag of the image reference ``ref`` (domain's one rule of an image
    reference: a first component with a dot, a port or ``localhost`` is a host, else Docker Hub,
    whose one-word names are ``library/``'s); ``latest`` when it has no tag."""
    ref = ref.partition("@")[0]
    full = qualified_image(ref)
    host = registry_of(full)
    rest = full[len(host) + 1:]
    name, colon, tag = rest.rpartition(":") if ":" in rest.rpartition("/")[2] else (rest, "", "")
    hostname = urlsplit(f"//{host}").hostname or host  # without its port; an IPv6 address without brackets
    if host.lower() in _HUB_NAMES:
        host = DOCKER_HUB
    plain = _plain_ok(hostname, host, insecure)
    return Repository(f"{'http' if plain else 'https'}://{host}", name, tag if colon else "latest")


def _challenge(header: str) -> dict[str, str]:
    """The parameters of a ``Bearer`` challenge (``realm``, ``service``, ``scope``); {} for another."""
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return {k.lower(): v for k, v in re.findall(r'([A-Za-z]+)="([^"]*)"', params)}


def _sha256(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


class _Bearer:
    """A bearer token as a request's auth (it replaces the session's netrc login for that request)."""

    def __init__(self, token: str) -> None:
        self.token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        r.headers["Authorization"] = f"Bearer {self.token}"
        return r


class RegistryClient:
    """Reads the digest of an image's tag from its registry (:meth:`digest`)."""

    def __init__(self, *, cache_dir: Path | None = None, timeout: float = TIMEOUT, retries: int = RETRIES,
                 backoff: float = BACKOFF, warn: Callable[[str], None] = silent, offline: bool = False,
                 revalidate: bool = True, cert: str | None = None, environ: Mapping[str, str] | None = None) -> None:
        self.cache_dir = cache_dir
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.warn = warn
        self.offline = offline
        self.revalidate = revalidate
        self.cert = cert
        self.insecure = insecure_registries(environ)
        self._clients: dict[tuple[str, bool], IndexClient] = {}
        self._tokens: dict[tuple[str, str], str] = {}  # (registry, scope) -> token, for this run only

    def _client(self, base: str, *, cached: bool) -> IndexClient:
        """The index client whose session asks ``base`` (with envsolve's HTTP cache when ``cached``)."""
        from .client import IndexClient

        key = (base, cached)
        if key not in self._clients:
            self._clients[key] = IndexClient(base, cache_dir=self.cache_dir if cached else None,
                                             timeout=self.timeout, retries=self.retries, backoff=self.backoff,
                                             warn=self.warn, offline=self.offline and cached,
                                             revalidate=self.revalidate, cert=self.cert)
        return self._clients[key]

    def _get(self, client: IndexClient, url: str, headers: Mapping[str, str], auth: object = None
             ) -> requests.Response:
        import requests

        try:
            return client.session.get(url, headers={"User-Agent": _AGENT, **headers}, auth=auth,  # type: ignore[arg-type]
                                      timeout=(self.timeout, self.timeout))
        except requests.RequestException as e:
            raise RefreshError(f"cannot reach the registry at {client.shown_url} "
                               f"({'not in the cache, and --offline asks nothing else' if self.offline else _why(e)})",
                               tip=_TIP) from None

    def digest(self, ref: str) -> str:
        """The digest (``sha256:...``) of the manifest ``ref``'s tag names on its registry;
        :class:`~envsolve.errors.RefreshError` saying why when it cannot be read."""
        repo = repository_of(ref, self.insecure)
        client = self._client(repo.base, cached=True)
        headers = {"Accept": ACCEPT, **({"Cache-Control": "max-age=0"} if self.revalidate else {})}
        scope = f"repository:{repo.path}:pull"
        token = self._tokens.get((repo.base, scope))
        resp = self._get(client, repo.manifest_url, headers, _Bearer(token) if token else None)
        if resp.status_code == 401:
            token = self._token(repo, resp.headers.get("WWW-Authenticate", ""), scope)
            resp = self._get(client, repo.manifest_url, {**headers, "Cache-Control": "max-age=0"}, _Bearer(token))
        return _digest_of(ref, repo, resp)

    def _token(self, repo: Repository, header: str, scope: str) -> str:
        """An anonymous (or, with a netrc login for the registry, a logged-in) bearer token from the
        realm the registry's challenge names."""
        challenge = _challenge(header)
        realm = challenge.get("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise RefreshError(f"the registry at {repo.base} refused {repo.path} (HTTP 401) without a bearer "
                               "challenge envsolve can answer", tip=_TIP)
        realm_parts = urlsplit(realm)
        if realm_parts.scheme == "http" and not _plain_ok(realm_parts.hostname or "", realm_parts.netloc,
                                                          self.insecure):
            raise RefreshError(f"the registry at {repo.base} names a token service over plain http ({realm})",
                               tip="envsolve asks for tokens over https only (or a registry named in "
                                   f"{INSECURE_VARIABLE})")
        params = {"service": challenge.get("service", ""), "scope": challenge.get("scope", scope)}
        base = f"{realm_parts.scheme}://{realm_parts.netloc}"
        client = self._client(base, cached=False)
        login = _login(repo.host) if realm_parts.scheme == "https" else None
        query = "&".join(f"{k}={_quoted(v)}" for k, v in params.items() if v)
        resp = self._get(client, f"{realm}{'&' if '?' in realm else '?'}{query}", {"Accept": "application/json"},
                         login)
        if resp.status_code != 200:
            what = REFUSED_STATUS.get(resp.status_code, f"HTTP {resp.status_code}")
            raise RefreshError(f"the token service of {repo.base} answered {what} for {repo.path}", tip=_TIP)
        try:
            answer = json.loads(resp.content[:_MANIFEST_CAP])
            token = answer.get("token") or answer.get("access_token")
        except (ValueError, AttributeError):
            token = None
        if not isinstance(token, str) or not token:
            raise RefreshError(f"the token service of {repo.base} gave no token for {repo.path}", tip=_TIP)
        self._tokens[repo.base, scope] = token
        return token


def _digest_of(ref: str, repo: Repository, resp: requests.Response) -> str:
    """The digest of a manifest answer: its ``Docker-Content-Digest``, which the body must match,
    else the body's sha256."""
    if resp.status_code == 404:
        raise RefreshError(f"the registry at {repo.base} has no {repo.path}:{repo.tag} (HTTP 404): the tag was "
                           "deleted, or never published", tip="lock again with the data's newer image, or check the "
                                                               "name")
    if resp.status_code != 200:
        what = REFUSED_STATUS.get(resp.status_code, f"HTTP {resp.status_code}")
        raise RefreshError(f"the registry at {repo.base} answered {what} for {ref}", tip=_TIP)
    body = resp.content
    if len(body) > _MANIFEST_CAP:
        raise RefreshError(f"the registry at {repo.base} answered {len(body)} bytes for the manifest of {ref}: "
                           "no manifest is that large", tip=_TIP)
    said = resp.headers.get("Docker-Content-Digest", "").strip()
    got = _sha256(body)
    if said and _DIGEST.fullmatch(said) and said != got:
        raise RefreshError(f"the manifest of {ref} does not match the digest its registry gives ({said})",
                           tip="the registry or a proxy altered it; nothing was recorded. Try again later")
    return got


def _plain_ok(hostname: str, netloc: str, insecure: frozenset[str]) -> bool:
    """Plain http to ``netloc`` (host[:port]; ``hostname`` its host): this machine's, or a registry
    ``ENVSOLVE_INSECURE_REGISTRIES`` names (as host:port, or as the host alone for every port)."""
    return hostname.lower() in _LOCAL or netloc.lower() in insecure or hostname.lower() in insecure


def _login(host: str) -> object:
    """The basic auth of the netrc's login for ``host`` (None without one): what the realm gets."""
    from requests.auth import HTTPBasicAuth

    from ..config import netrc_logins

    login = netrc_logins(()).get(host)
    return HTTPBasicAuth(*login) if login is not None else None


def _quoted(value: str) -> str:
    from urllib.parse import quote

    return quote(value, safe=":/")


def _why(e: Exception) -> str:
    text = str(e)
    m = re.search(r"(Connection refused|Name or service not known|No route to host|timed out|Max retries exceeded)",
                  text)
    return m.group(1).lower() if m else type(e).__name__
