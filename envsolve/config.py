"""User settings envsolve reads: the package index URLs, from project.toml's ``[indexes]``,
``ENVSOLVE_INDEX_<NAME>`` and pip's own configuration.

Two different questions, two functions:

- :func:`index_urls` gives the *canonical* indexes a lock records: the PyTorch index's public
  URL (``domain.DEFAULT_INDEXES``) unless ``ENVSOLVE_INDEX_<NAME>`` or ``[indexes]`` override it,
  and nothing at all for the default index unless one of those names it. pip's configuration
  never enters a lock, so the same spec gives the same lock on every machine; a mirror is an
  install-time concern (pip's configuration where the artifacts are installed).
- :func:`pip_index_url` gives the index pip itself would use here (``envsolve refresh``).

The default index's host is never written into envsolve: pip's configuration files,
``PIP_INDEX_URL``, or pip's built-in default (read from pip itself) supply it. Every URL is
checked before it can reach a generated file, and credentials in it are dropped.

One credential policy, for every URL a user writes (``[indexes]``, ``ENVSOLVE_INDEX_<NAME>``, a
PEP 508 direct reference in ``[packages] pip``): its credentials (``user:password@``) never reach
a lock, a generated file or an image layer. They are taken out of the URL into a
:class:`Credential`, kept in memory, and reach the installers as a netrc (:func:`netrc_text`: the
user's own netrc, plus each taken-out login for a host it does not name), which pip and uv both
read: uv through ``NETRC`` during the full lock and ``envsolve sync``, pip in an image through the
``netrc`` BuildKit secret ``envsolve build`` passes. That netrc is written only into a private
temporary folder, readable by its owner alone, and removed after the run. pip's own configured
index is pip's setting on this machine and stays as pip has it (never in a lock).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import msgspec

from .domain import DEFAULT_INDEXES
from .errors import Problem, SpecError
from .files import read_text
from .paths import pip_config_files

_NETRC_CAP = 1 << 20  # a netrc or an install's direct_url.json: a few lines

__all__ = ["Credential", "check_url", "credential_warnings", "forget_tokens", "index_credentials", "index_urls",
           "netrc_logins", "netrc_text", "pip_config", "pip_config_files", "pip_index_url", "private_cache",
           "public_url", "requirement_credentials", "scrub", "strip_credentials", "url_problem", "user_netrc",
           "with_tokens", "write_netrc"]

_ENV_PREFIX = "ENVSOLVE_INDEX_"
_INDEX_NAME = re.compile(r"[a-z0-9][a-z0-9_]*")


_PIP_KEYS = ("index-url", "extra-index-url", "cert")
_PIP_VARIABLES = (("index-url", "PIP_INDEX_URL"), ("extra-index-url", "PIP_EXTRA_INDEX_URL"), ("cert", "PIP_CERT"))


def _pip_file_settings(path: Path) -> dict[str, tuple[str, str, str]]:
    """The settings one pip configuration file gives ({} when it cannot be read)."""
    import configparser

    parser = configparser.RawConfigParser()
    try:
        parser.read(path, encoding="utf-8")
    except (OSError, configparser.Error, UnicodeDecodeError):
        return {}
    return {key: (parser.get(section, key).strip(), f"{path} [{section}]", key)
            for section in ("global", "install") for key in _PIP_KEYS if parser.has_option(section, key)}


def _pip_settings(env: Mapping[str, str]) -> dict[str, tuple[str, str, str]]:
    """``index-url`` / ``extra-index-url`` / ``cert`` -> (value, the file or variable pip read it
    from, key)."""
    out: dict[str, tuple[str, str, str]] = {}
    for path in pip_config_files(env) if env.get("PIP_CONFIG_FILE") != os.devnull else ():
        out.update(_pip_file_settings(path))
    out.update({key: (env[var].strip(), var, "") for key, var in _PIP_VARIABLES if env.get(var)})
    return out


def pip_config(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """``index-url``, ``extra-index-url`` and ``cert`` as pip would see them."""
    env = os.environ if environ is None else environ
    return {k: v for k, (v, _, _) in _pip_settings(env).items()}


def _pip_default_index() -> str:
    """pip's built-in default index, read from pip itself (never written here)."""
    try:
        from pip._internal.models.index import PyPI  # noqa: PLC0415 - only when needed

        return str(PyPI.simple_url)
    except Exception:  # pip absent or reorganised: the caller says none is configured
        return ""


def pip_index_url(environ: Mapping[str, str] | None = None) -> str:
    """The index pip would use on this machine ("" when none can be found), checked like every
    URL envsolve reads: a bad value raises :class:`SpecError` naming where pip read it."""
    env = os.environ if environ is None else environ
    value, where, key = _pip_settings(env).get("index-url", ("", "", ""))
    if value:
        if (why := check_url(value)) is not None:
            raise SpecError([Problem(where, key, why)],
                            tip=f"fix the index URL in {where}, or pass --index-url URL")
        return value.rstrip("/")
    return _pip_default_index().rstrip("/")


def strip_credentials(url: str) -> tuple[str, bool]:
    """``url`` without user, password, query or fragment (where tokens travel), and whether
    anything was dropped. ``https://bot:S3CRET@mirror/simple?token=x`` -> ``https://mirror/simple``."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError:  # no URL (check_url says so where it is read): nothing that may be a secret shown
        shown = public_url(url)
        return shown, shown != url
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    if "@" in parts.netloc or parts.query or parts.fragment:
        return urlunsplit((parts.scheme, host, parts.path, "", "")), True
    return url, False


def _env_sources(env: Mapping[str, str], problems: list[Problem]) -> dict[str, tuple[str, str]]:
    """``ENVSOLVE_INDEX_<NAME>`` variables: name -> (URL, where it was read); a bad name is a problem."""
    out: dict[str, tuple[str, str]] = {}
    for key in (k for k in sorted(env) if k.startswith(_ENV_PREFIX) and env[k].strip()):
        name = key[len(_ENV_PREFIX):].lower()
        if _INDEX_NAME.fullmatch(name):
            out[name] = (env[key].strip(), f"environment variable {key}")
        else:
            problems.append(Problem("environment", key, "is not an index variable such as ENVSOLVE_INDEX_PYTORCH"))
    return out


_DROPPED = ("credentials (user, password, query or fragment) were dropped from the index URL; nothing generated "
            "carries them. A user and password reach uv (the full lock, sync) and `envsolve build` as a netrc; a "
            "token in the query or fragment does not: give it to pip at install time (pip.conf). See README "
            "'Credentials'")


def _checked(sources: Mapping[str, tuple[str, str]], problems: list[Problem],
             warnings: list[str]) -> dict[str, str]:
    """Each source's URL, checked (a bad one is a problem) and without its credentials (a warning)."""
    urls: dict[str, str] = {}
    for name, (value, where) in sorted(sources.items()):
        if (why := check_url(value)) is not None:
            problems.append(Problem(where.removeprefix("environment variable "), "", why))
            continue
        clean, dropped = strip_credentials(value)
        warnings += [f"{where}: {_DROPPED}"] if dropped else []
        urls[name] = clean.rstrip("/")
    return urls


def index_urls(spec_indexes: Mapping[str, str], environ: Mapping[str, str] | None = None,
               spec_path: str = "project.toml") -> tuple[dict[str, str], list[str]]:
    """(symbolic index name -> URL for the lock, warnings).

    The PyTorch index's public URL, overridden by ``ENVSOLVE_INDEX_<NAME>``, overridden by
    ``[indexes]``. pip's configuration is not read: the default index is pip's at install time.
    Each value is checked (a bad one raises :class:`SpecError` naming the variable or key and
    the value) and loses its credentials, with a warning saying so."""
    env = os.environ if environ is None else environ
    problems: list[Problem] = []
    warnings: list[str] = []
    sources = {k: (v, "") for k, v in DEFAULT_INDEXES.items()} | _env_sources(env, problems)
    sources |= {name: (value, f"{spec_path} [indexes] {name}") for name, value in spec_indexes.items()}
    urls = _checked(sources, problems, warnings)
    if problems:
        raise SpecError(problems, tip="set each index to an http(s) URL without whitespace, quotes or shell "
                                      "metacharacters, e.g. ENVSOLVE_INDEX_PYTORCH=https://your.mirror/whl")
    return urls, warnings


# Characters a URL may carry into a RUN line, a requirements file or YAML: no whitespace, no
# quotes, no shell metacharacters ($ ; | & ` < > ( ) { } \ ' " and newlines).
_SAFE_URL = re.compile(r"(?:https?|file)://[A-Za-z0-9._~:/?#@%=+,\[\]-]+")


def check_url(value: object) -> str | None:
    """Why ``value`` is not an index URL envsolve will write into a file; None when it is fine."""
    if not isinstance(value, str) or not _SAFE_URL.fullmatch(value):
        shown = _hidden(value) if isinstance(value, str) else value
        return (f"{shown!r} must be an index URL (http, https or file) without whitespace, quotes or "
                "shell metacharacters")
    return url_problem(value)


_AFTER = re.compile(r"([?#])[^?#]+")  # a query's or a fragment's text: where a token travels


def _hidden(text: str) -> str:
    """A refused URL as a message shows it: as written (a newline or a quote in it stays to be
    seen), less its login and the text of its query and fragment (``?...``)."""
    return _AFTER.sub(r"\1...", _LOGIN.sub("", text))


def url_problem(url: str) -> str | None:
    """Why ``url`` (an index or a direct reference) cannot be read as a URL (an IPv6 host without its
    ``]``, a port past 65535); None when it can."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError as e:
        return f"{_short(public_url(url))!r} is not a URL ({e})"
    host = parts.hostname or ""
    labels = host.removesuffix(".").split(".") if host and ":" not in host else []
    if len(host) > 253 or any(not label or len(label) > 63 for label in labels):
        return f"{_short(public_url(url))!r} is not a URL (its host name has an empty label or one over 63 characters)"
    return None


def _short(text: str) -> str:
    return text if len(text) <= 100 else f"{text[:60]}...{text[-20:]}"


# ---------------------------------------------------------------------------- credentials


class Credential(msgspec.Struct, frozen=True, kw_only=True):
    """A secret taken out of a URL the user wrote, kept in memory only (``repr`` hides it); ``where``
    names the URL's place. A login (``user:password@``) for ``host`` (netrc's ``machine``: a host
    name, no port) reaches the installers as a netrc; a token in a direct reference's query or
    fragment (``?token=``, ``#token=``) as ``secret_url``, the URL uv fetches in place of ``url``,
    the one every file and message shows (:func:`with_tokens`)."""

    host: str
    login: str
    password: str
    where: str
    url: str = ""  # the direct reference as written everywhere: without the token
    secret_url: str = ""  # the same with its token (never its login: that goes to the netrc)

    def __repr__(self) -> str:  # never the password
        return f"Credential(host={self.host!r}, login={self.login!r}, where={self.where!r})"

    def __rich_repr__(self) -> list[tuple[str, Any]]:  # msgspec's own would list the password
        return [("host", self.host), ("login", self.login), ("where", self.where)]

    @property
    def entry(self) -> str:
        """The netrc line of this login."""
        return f"machine {self.host} login {self.login}" + (f" password {self.password}" if self.password else "")


# netrc words are separated by white space; quotes and '#' are read differently by pip and uv
_NETRC_UNSAFE = re.compile(r"[\s\"'#\\]")
# an SSH URL's user (git+ssh://git@host/...) names the account, not a secret: the key is the secret
_SSH_SCHEMES = frozenset({"ssh", "git+ssh", "hg+ssh", "svn+ssh", "bzr+ssh"})
# what a direct reference's fragment may say in the open: a file's hash, pip's egg and subdirectory
_PUBLIC_FRAGMENT = re.compile(r"(?:sha1|sha224|sha256|sha384|sha512|md5|egg|subdirectory)=[^&]*")


def _ssh_user(url: str) -> bool:
    """Whether ``url``'s user is an SSH account name (an SSH scheme, no password): no credential."""
    parts = urlsplit(url)
    return parts.scheme.lower() in _SSH_SCHEMES and parts.password is None


def _userinfo(url: str) -> tuple[str, str, str] | None:
    """(host, login, password) of a URL's ``user:password@`` (percent-decoded); None without one
    (an SSH account name is none)."""
    parts = urlsplit(url)
    if "@" not in parts.netloc or _ssh_user(url):
        return None
    return parts.hostname or "", unquote(parts.username or ""), unquote(parts.password or "")


def _without_userinfo(url: str) -> str:
    """``url`` without ``user:password@`` (an SSH account name stays), its path, query and
    fragment kept (``#sha256=`` is a hash)."""
    parts = urlsplit(url)
    netloc = parts.netloc if _ssh_user(url) else parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _without_tokens(url: str) -> str:
    """``url`` without its query and, of its fragment, all but a hash, ``egg`` and ``subdirectory``:
    where a direct reference carries a token (``?token=``, ``#token=``)."""
    parts = urlsplit(url)
    kept = "&".join(p for p in parts.fragment.split("&") if _PUBLIC_FRAGMENT.fullmatch(p))
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", kept))


_LOGIN = re.compile(r"(?<=://)[^/@?#]*@")  # a login where urlsplit cannot read the URL


def public_url(url: str) -> str:
    """``url`` as a file or a message may show it: no login (:func:`_without_userinfo`), no token
    (:func:`_without_tokens`); one that cannot be read as a URL loses all that may hold either."""
    try:
        return _without_tokens(_without_userinfo(url))
    except ValueError:  # (an IPv6 host without its ']', a port past 65535)
        return _LOGIN.sub("", re.split(r"[?#]", url, maxsplit=1)[0])


def _credential(url: str, where: str) -> tuple[Credential | None, str | None]:
    """The login in ``url`` (None without one) or why it cannot reach a netrc."""
    found = _userinfo(url)
    if found is None:
        return None, None
    host, login, password = found
    if not host or not login or _NETRC_UNSAFE.search(login + password):
        return None, (f"the user or password in {public_url(url)!r} is empty, or holds white space, a quote, "
                      "'#' or a backslash, which a netrc cannot carry")
    return Credential(host=host, login=login, password=password, where=where), None


def requirement_credentials(line: str, where: str) -> tuple[str, Credential | None, str | None]:
    """A ``[packages] pip`` line without the credentials of its direct reference (PEP 508
    ``name @ URL``), the secret taken out, and why the line cannot be used (else None).

    ``foo @ https://bot:S3CRET@host/foo.whl`` -> (``foo @ https://host/foo.whl``, bot's login, None);
    ``foo @ https://host/foo.whl?token=T`` -> (``foo @ https://host/foo.whl``, the token's URL, None)."""
    from .versions import parse_requirement

    try:
        url = parse_requirement(line).url
    except ValueError:  # packaging's InvalidRequirement
        return line, None, None  # the spec's own check names it
    if not url or url not in line or url_problem(url) is not None:
        return line, None, None  # (the spec's own check names a URL that cannot be read)
    credential, why = _credential(url, where)
    if why is not None:
        return line, None, why
    public, tokened = public_url(url), _without_userinfo(url)
    if public != tokened:  # a token: the URL with it is kept for uv, beside the login (if any)
        login = credential or Credential(host=urlsplit(url).hostname or "", login="", password="", where=where)
        credential = msgspec.structs.replace(login, url=public, secret_url=tokened)
    return line.replace(url, public, 1), credential, None


def private_cache(folder: Path) -> dict[str, str]:
    """The settings that keep a run whose requirements carry a token out of envsolve's cache (uv
    records the URLs it fetched there): a cache in its private ``folder``, gone with it."""
    return {"ENVSOLVE_CACHE_DIR": str(folder / "cache")}


def forget_tokens(folder: Path, credentials: Iterable[Credential]) -> None:
    """Take the tokens out of what an install records under ``folder`` (PEP 610's
    ``direct_url.json`` holds the URL a package came from): each file that names a direct
    reference's URL with its token is written again with the URL without it."""
    secret = {c.secret_url: c.url for c in credentials if c.secret_url}
    if not secret:
        return
    for path in folder.rglob("*.dist-info/direct_url.json"):
        try:
            text = read_text(path, _NETRC_CAP)
        except OSError:
            continue
        clean = text
        for tokened, public in secret.items():
            clean = clean.replace(tokened, public).replace(tokened.replace("/", "\\/"), public)
        if clean != text:
            path.unlink()  # (a link to another copy's file: written anew, never in place)
            path.write_text(clean, encoding="utf-8")


def with_tokens(text: str, credentials: Iterable[Credential]) -> str:
    """``text`` (requirements that uv reads from a private folder) with each direct reference
    whose token was taken out given it back: what uv fetches, never what a file keeps."""
    for c in credentials:
        if c.secret_url:
            secret = c.secret_url.replace("\\", "\\\\")  # (a replacement's backslashes are escapes)
            text = re.sub(re.escape(c.url) + r"(?=\s|$)", secret, text, flags=re.M)
    return text


def index_credentials(spec_indexes: Mapping[str, str], environ: Mapping[str, str] | None = None,
                      spec_path: str = "project.toml") -> tuple[Credential, ...]:
    """The logins in the index URLs :func:`index_urls` reads (``ENVSOLVE_INDEX_<NAME>``, ``[indexes]``),
    which it drops from the URLs; a URL it refuses, or a login a netrc cannot carry, gives none."""
    env = os.environ if environ is None else environ
    sources = _env_sources(env, [])
    sources |= {name: (value, f"{spec_path} [indexes] {name}") for name, value in spec_indexes.items()}
    found = (_credential(value, where)[0] for value, where in sources.values()
             if isinstance(value, str) and check_url(value) is None)
    return tuple(c for c in found if c is not None)


def credential_warnings(credentials: Iterable[Credential]) -> list[str]:
    """The warning each login taken out of a ``[packages] pip`` direct reference gets (an index
    URL's gets :func:`index_urls`'s own)."""
    said = [f"{c.where}: the credentials of {c.login}@{c.host} were taken out of the direct reference; no lock, "
            "generated file or image layer carries them. uv (this lock, `envsolve sync`) and `envsolve build` (its "
            "netrc secret) get them from the spec as a netrc; pip elsewhere needs them in ~/.netrc "
            f"(machine {c.host} login {c.login} password ...): see README 'Credentials'"
            for c in credentials if c.login]
    return said + [f"{c.where}: the token in the query or fragment of {c.url} was taken out; no lock, generated "
                   "file or image layer carries it. uv (this lock, `envsolve sync`) gets the URL with its token from "
                   "the spec at install time; an image build cannot: give that host a login in a netrc instead "
                   "(see README 'Credentials')" for c in credentials if c.secret_url]


def user_netrc(env: Mapping[str, str]) -> Path | None:
    """The netrc pip and uv read here: ``NETRC``, else ``~/.netrc`` (None when there is none)."""
    path = Path(env["NETRC"]) if env.get("NETRC") else Path(env.get("HOME") or Path.home()) / ".netrc"
    return path if path.is_file() else None


def _hosts_of(path: Path) -> set[str]:
    """The machines a netrc names (none when it cannot be read)."""
    import netrc as netrc_module

    try:
        return set(netrc_module.netrc(str(path)).hosts)
    except (OSError, netrc_module.NetrcParseError, UnicodeDecodeError):
        return set()


def netrc_text(credentials: Sequence[Credential], environ: Mapping[str, str] | None = None) -> str:
    """The netrc the installers read: a line for each login of ``credentials`` whose host the
    user's own netrc (``NETRC``, else ``~/.netrc``) does not name (the user's wins; the first
    login of a host wins), then the user's netrc as it is."""
    env = os.environ if environ is None else environ
    user = user_netrc(env)
    taken = _hosts_of(user) if user is not None else set()
    lines = []
    for c in (c for c in credentials if c.login):  # a token has no netrc line
        if c.host not in taken:
            taken.add(c.host)
            lines.append(c.entry + "\n")
    mine = "".join(lines)
    try:
        theirs = read_text(user, _NETRC_CAP) if user is not None else ""
    except OSError:  # gone, unreadable, or no regular UTF-8 file (a FIFO is never waited on)
        theirs = ""
    return mine + theirs


def netrc_logins(credentials: Sequence[Credential], environ: Mapping[str, str] | None = None
                 ) -> dict[str, tuple[str, str]]:
    """Host -> (login, password) of :func:`netrc_text` (the spec's logins, then the user's netrc,
    read once through envsolve's reader): what envsolve's own index client sends, in place of
    requests' look-up, which reads ``~/.netrc`` on every request with no check of what it is. A
    netrc that cannot be parsed gives the spec's logins alone."""
    import io
    import netrc as netrc_module

    parsed = netrc_module.netrc.__new__(netrc_module.netrc)
    parsed.hosts, parsed.macros = {}, {}
    try:  # (the parser of a file, given the text: the file was read through files.read_text)
        parsed._parse("netrc", io.StringIO(netrc_text(credentials, environ)), False)  # type: ignore[attr-defined]
    except (netrc_module.NetrcParseError, ValueError, IndexError):
        parsed.hosts = {c.host: (c.login, "", c.password) for c in credentials if c.login}
    return {host: (entry[0] or "", entry[2] or "") for host, entry in parsed.hosts.items() if entry[0]}


def write_netrc(credentials: Sequence[Credential], folder: Path, environ: Mapping[str, str] | None = None
                ) -> Path | None:
    """:func:`netrc_text` as ``folder``/netrc, readable by its owner alone (``folder`` must be a
    private temporary folder, removed after the run); None when there are no credentials (the
    user's own netrc, if any, serves as it is)."""
    if not any(c.login for c in credentials):
        return None
    path = folder / "netrc"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)  # a new file
    os.fchmod(fd, 0o600)  # whatever the umask
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(netrc_text(credentials, environ))
    return path


_ANY_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")


def scrub(text: str) -> str:
    """``text`` (an installer's message) with every URL in it stripped of its login and token
    (:func:`public_url`)."""
    return _ANY_URL.sub(lambda m: public_url(m.group(0)), text)
