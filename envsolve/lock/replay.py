"""The warm path of `envsolve lock`: the same inputs give the same bytes, so when every input is
byte-for-byte what it was for an earlier lock, that lock is written again without solving.

The inputs are everything the lock command reads: its arguments and working folder, the spec's
bytes, the matrices' bytes, envsolve's own code and that of the libraries that shape the lock's
text (each code file by its size, modification time and inode, as Python's bytecode cache
tells a changed source), the Python version, the environment variables it consults (``ENVSOLVE_*``, ``PIP_*``,
``HOME``, ``XDG_CONFIG_HOME``), pip's configuration files and the day (a base image's end-of-life
warning depends on it). Their digest names a cache entry
holding the lock text and what the command printed; an entry is written only by a full solve
that succeeded, private, with the digest of its contents keyed with the user's secret key
(:func:`envsolve.files.seal`), and is read only when it is a regular file of this user's that
nobody else may write (:func:`envsolve.files.read_cache`), its digest verifies and its fields are
of their types. Anything this path does not handle (other options, ``--host``, an unreadable
input, a lock on disk made with other data, a missing or corrupt entry) falls through to the
full command, which answers the same way. Standard library only, so a replay costs little more
than the interpreter's start; ``ENVSOLVE_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import time

from ..files import LOCK_CAP, MATRIX_CAP, SPEC_CAP, cache_key, read_bytes, read_cache, seal, touch
from ..paths import cache_folder, data_folder, found, pip_config_paths, state_folder
from .options import LOCK_OPTIONS, Option, option_named

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the lock replay imports this
if TYPE_CHECKING:  # paths are text here: pathlib and what it loads cost a replay a third of its time
    from collections.abc import Iterable, Iterator, Mapping, Sequence
    from pathlib import Path

__all__ = ["Request", "data_version_of", "given", "parse", "replay", "request_of", "store"]

_FORMAT = b"envsolve-replay-3\0"
_ENTRY = b"envsolve-replay-entry-1\0"  # an entry's first bytes; the seal of its marshalled contents follows
_ENTRY_CAP = LOCK_CAP + (1 << 20)  # the lock's text and what was printed
_ENV = ("ENVSOLVE_", "PIP_")
_ENV_NAMES = ("HOME", "XDG_CONFIG_HOME")
_CODE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the whole envsolve package
_LIBRARIES = ("packaging", "tomli_w")  # whose code shapes the lock's bytes besides envsolve's own
KEEP_ENTRIES = 256  # the entries kept, the most recently used (one per spec and inputs; a lock's text each)

# The spec path, then the text of each option LOCK_OPTIONS marks as replayed, in the table's order:
# a path as pathlib writes it (see _normal), a choice or text as given (else its default), a flag "yes" or "".
Request = tuple[str, ...]
_REPLAYED = tuple(o for o in LOCK_OPTIONS if o.replayed)
_OUTPUT = 1 + [o.dest for o in _REPLAYED].index("output")


def _value(opt: Option, value: str | None, args: list[str]) -> str | None:
    """What ``opt`` takes: "yes" for a flag (which takes no value), else its ``=`` value or the
    next argument, one of its choices; None when it cannot be read so."""
    if opt.kind == "flag":
        return "yes" if value is None else None
    if value is None and args:
        value = args.pop(0)
    return value if value is not None and (not opt.choices or value in opt.choices) else None


def _values(args: list[str]) -> dict[str, str] | None:
    """The replayed options' values and the spec (key ""), read by :data:`~envsolve.lock.options.LOCK_OPTIONS`; None for
    anything the replay does not handle (another option, a second spec, a missing value)."""
    chosen: dict[str, str] = {}
    while args:
        arg = args.pop(0)
        opt, value = option_named(arg)
        if opt is None and not arg.startswith("-") and "" not in chosen:
            chosen[""] = arg
            continue
        if opt is None or not opt.replayed or (taken := _value(opt, value, args)) is None:
            return None
        chosen[opt.dest] = taken
    return chosen


def parse(argv: Sequence[str]) -> Request | None:
    """``lock [SPEC]`` with the options :data:`~envsolve.lock.options.LOCK_OPTIONS` marks as replayed, normalised as
    click reads them; None for anything else (other commands and options go to the full command)."""
    if not argv or argv[0] != "lock":
        return None
    chosen = _values(list(argv[1:]))
    if chosen is None:
        return None
    return request_of(chosen.pop("", "") or found("project.toml"), chosen)


def given(argv: Sequence[str]) -> tuple[Path, dict[str, object]] | None:
    """``lock [SPEC]`` with only the options the replay reads: the spec's path and the options
    given, by ``dest``, as click's options of the same table hold them (a flag True, a path a
    ``Path``, a choice its text); None for anything else."""
    if not argv or argv[0] != "lock":
        return None
    chosen = _values(list(argv[1:]))
    if chosen is None:
        return None
    from pathlib import Path  # a plain lock's, not the replay's

    kinds = {o.dest: o.kind for o in _REPLAYED}
    values: dict[str, object] = {dest: True if kinds[dest] == "flag" else Path(text) if kinds[dest] == "path" else text
                                 for dest, text in chosen.items() if dest}
    return Path(chosen.get("", "") or found("project.toml")), values


def request_of(spec: str, given: Mapping[str, object]) -> Request:
    """The request of a spec path and the replayed options given on the command line (by ``dest``:
    argv's text or click's value, the same request either way)."""
    return (_normal(spec or "project.toml"), *(_text(o, given.get(o.dest)) for o in _REPLAYED))


def _normal(path: str) -> str:
    """``path`` as ``str(pathlib.PurePosixPath(path))`` writes it (empty and ``.`` parts and a
    trailing slash dropped, ``..`` kept, two leading slashes kept), without importing pathlib."""
    lead = "//" if path.startswith("//") and not path.startswith("///") else "/" if path.startswith("/") else ""
    return (lead + "/".join(p for p in path.split("/") if p not in ("", "."))) or "."


def _text(opt: Option, value: object) -> str:
    if opt.kind == "flag":
        return "yes" if value in (True, "yes") else ""
    if opt.kind == "path":
        return _normal(str(value)) if value else ""
    return str(value) if value else opt.default


def _add(h: hashlib._Hash, label: str, data: bytes) -> None:
    h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)


def _files(label: str, paths: Iterable[str], root: str = "") -> Iterator[tuple[str, bytes]]:
    """(label, bytes) of each file, named relative to ``root`` (else by its name); a file that is
    not a regular one, or too large, raises (and the full command says why)."""
    for path in paths:
        yield f"{label} {os.path.relpath(path, root) if root else os.path.basename(path)}", read_bytes(path, MATRIX_CAP)


def _code(label: str, paths: Iterable[str], root: str = "") -> Iterator[tuple[str, bytes]]:
    """(label, signature) of each code file: its size, modification time (nanoseconds) and inode,
    as Python's own bytecode cache tells a changed source (reading and hashing a megabyte of
    code took the replay as long as the rest of it)."""
    for path in paths:
        st = os.stat(path)
        yield (f"{label} {os.path.relpath(path, root) if root else os.path.basename(path)}",
               f"{st.st_size} {st.st_mtime_ns} {st.st_ino}".encode())


def _named(folder: str, suffix: str) -> list[str]:
    """The files of ``folder`` whose names end in ``suffix``, hidden ones left out (as ``glob``)."""
    try:
        return sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(suffix) and n[0] != ".")
    except OSError:
        return []


def _tree(root: str, suffix: str) -> list[str]:
    """The files under ``root`` whose names end in ``suffix`` (as ``rglob``), sorted."""
    return sorted(os.path.join(top, n) for top, _, names in os.walk(root) for n in names
                  if n.endswith(suffix) and n[0] != ".")


def _library_files(name: str) -> list[str]:
    """The modules of the regular package ``name``, from the first ``sys.path`` entry holding it
    (where the import system finds it)."""
    for entry in sys.path:
        where = os.path.join(entry or ".", name)
        if os.path.isfile(os.path.join(where, "__init__.py")):
            return _named(where, ".py")
    return []


def _pip_files(environ: Mapping[str, str]) -> Iterator[tuple[str, bytes]]:
    for path in pip_config_paths(environ):
        try:
            yield f"pip {path}", read_bytes(path, SPEC_CAP)
        except OSError:
            yield f"pip {path}", b"\0absent"


def _settled(request: Request, environ: Mapping[str, str]) -> Iterator[tuple[str, bytes]]:
    """Every input but the spec and the lock on disk, labelled, in a fixed order."""
    yield "python", sys.version.encode()
    yield "cwd", os.getcwd().encode()
    yield "request", "\0".join(request).encode()
    yield from ((f"env {name}", environ[name].encode()) for name in sorted(environ)
                if name.startswith(_ENV) or name in _ENV_NAMES)
    yield from _files("data", _named(environ.get("ENVSOLVE_MATRICES") or data_folder(), ".toml"))
    yield from _code("code", _tree(_CODE, ".py"), _CODE)
    for name in _LIBRARIES:
        yield from _code(f"library {name}", _library_files(name))
    yield from _pip_files(environ)


def _digest(request: Request, environ: Mapping[str, str], lock: bytes | None) -> str:
    """The digest of everything the lock command reads: :func:`_settled`'s inputs, the spec's bytes,
    the lock on disk (a re-lock keeps its versions) and the day (the base images' end-of-life
    warnings are told against it)."""
    h = hashlib.sha256(_FORMAT)
    _add(h, "day", time.strftime("%Y-%m-%d").encode())  # the day `datetime.date.today()` gives the lock
    for label, data in _settled(request, environ):
        _add(h, label, data)
    _add(h, "spec", read_bytes(request[0], SPEC_CAP))
    _add(h, "lock on disk", b"\0absent" if lock is None else lock)
    return h.hexdigest()


def _entry_path(request: Request, environ: Mapping[str, str], lock: bytes | None) -> str:
    return os.path.join(cache_folder(environ), "locks", f"{_digest(request, environ, lock)[:40]}.marshal")


def _lock_path(request: Request) -> str:
    return request[_OUTPUT] or os.path.join(os.path.dirname(request[0]), "envsolve.lock")


def data_version_of(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("data_version = "):
            return line.split("=", 1)[1].strip().strip('"')
    return ""


def store(request: Request, text: str, data_version: str, messages: Sequence[tuple[bool, str]],
          environ: Mapping[str, str] | None = None) -> None:
    """Remember what a successful full `envsolve lock` wrote and printed (``(to stderr, line)``),
    for the next run, which finds ``text`` on disk: a lock of the same inputs whose lock on disk is
    its own output gives that output again (the full lock keeps the versions on disk)."""
    env = os.environ if environ is None else environ
    if env.get("ENVSOLVE_NO_CACHE"):
        return
    from ..files import prune, write_atomic

    key = cache_key(state_folder(env))
    if key is None:  # nothing to seal an entry with: no replay
        return
    try:
        entry = marshal.dumps({"text": text, "data_version": data_version, "messages": [list(m) for m in messages]})
        path = _entry_path(request, env, text.encode("utf-8"))
        # private, and no fsync: _entry refuses an entry a crash spoilt
        write_atomic(path, _ENTRY + seal(entry, key) + entry, durable=False, private=True)
    except (OSError, ValueError):  # a cache that cannot be written costs the next run a solve
        return
    prune(os.path.dirname(path), ".marshal", KEEP_ENTRIES, path)


def _on_disk(out: str) -> tuple[bool, bytes | None]:
    """(readable, the lock at ``out`` or None when there is none); a FIFO, a device (``-o
    /dev/full``) or a folder is not readable, and the full command refuses it."""
    try:
        return True, read_bytes(out, LOCK_CAP)
    except FileNotFoundError:
        return True, None
    except OSError:
        return False, None


# (lock text, data version, what was printed: (to stderr, line) each)
_Entry = tuple[str, str, list[tuple[bool, str]]]


def _contents(blob: bytes | None, key: bytes | None) -> _Entry | None:
    """(lock text, data version, messages) of an entry's bytes whose seal verifies with ``key`` and
    whose fields are of their types; None for anything else."""
    head = len(_ENTRY) + 32
    if blob is None or key is None or not blob.startswith(_ENTRY) or blob[len(_ENTRY):head] != seal(blob[head:], key):
        return None
    entry = marshal.loads(blob[head:])
    text, data_version, messages = entry["text"], entry["data_version"], entry["messages"]
    if not (isinstance(text, str) and isinstance(data_version, str) and _printed(messages)):
        return None
    return text, data_version, [(m[0], m[1]) for m in messages]


def _printed(messages: object) -> bool:
    """Whether ``messages`` is what an entry keeps of what was printed: [to stderr, line] pairs."""
    return isinstance(messages, list) and all(
        isinstance(m, list) and len(m) == 2 and isinstance(m[0], bool) and isinstance(m[1], str) for m in messages)


def _entry(request: Request, env: Mapping[str, str], on_disk: bytes | None) -> _Entry | None:
    """The cache entry for these inputs; None for none. An entry is stored under the digest of its
    own text as the lock on disk, so its text must be those bytes: an entry a crash spoilt (written
    without an fsync: cut short, or with blocks of zeros), one that is not a private regular file
    of this user's, or one whose contents are not what its digest says, is refused."""
    try:
        path = _entry_path(request, env, on_disk)
        entry = _contents(read_cache(path, _ENTRY_CAP), cache_key(state_folder(env)))
        if entry is None or on_disk is None or entry[0].encode("utf-8") != on_disk:
            return None
    except Exception:  # an unreadable input, a corrupt entry: solve
        return None
    touch(path)  # used: the last kept by store's prune
    return entry


def _same_data(on_disk: bytes | None, data_version: str) -> bool:
    """Whether the lock on disk was made with the entry's data (the full command warns otherwise)."""
    try:
        return on_disk is None or data_version_of(on_disk.decode("utf-8")) == data_version
    except UnicodeDecodeError:
        return False


def replay(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> bool:
    """Write the lock and print what the full command printed, when the inputs are unchanged;
    False (nothing written, nothing printed) when the full command must run."""
    env = os.environ if environ is None else environ
    request = parse(argv)
    if request is None or env.get("ENVSOLVE_NO_CACHE"):
        return False
    out = _lock_path(request)
    readable, on_disk = _on_disk(out)
    entry = _entry(request, env, on_disk) if readable else None
    return entry is not None and _same_data(on_disk, entry[1]) and _replayed(out, entry[0], entry[2])


def _replayed(out: str, text: str, messages: list[tuple[bool, str]]) -> bool:
    """Write ``text`` to ``out`` and print the messages; False when it cannot be written."""
    from ..files import write_atomic

    try:
        write_atomic(out, text)
    except OSError:
        return False
    for to_stderr, line in messages:
        print(line, file=sys.stderr if to_stderr else sys.stdout)
    return True
