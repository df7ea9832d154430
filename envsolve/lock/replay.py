"""The warm path of `envsolve lock`: the same inputs give the same bytes, so when every input is
byte-for-byte what it was for an earlier lock, that lock is written again without solving.

The inputs are everything the lock command reads: its arguments and working folder, the spec's
bytes, the matrices' bytes, envsolve's own code and that of the libraries that shape the lock's
text, the Python version, the environment variables it consults (``ENVSOLVE_*``, ``PIP_*``,
``HOME``, ``XDG_CONFIG_HOME``) and pip's configuration files. Their digest names a cache entry
holding the lock text and what the command printed; an entry is written only by a full solve
that succeeded. Anything this path does not handle (other options, ``--host``, an unreadable
input, a lock on disk made with other data, a missing or corrupt entry) falls through to the
full command, which answers the same way. Standard library only, so a replay costs little more
than the interpreter's start; ``ENVSOLVE_NO_CACHE=1`` turns it off.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..paths import cache_dir, data_dir, pip_config_files

__all__ = ["Request", "data_version_of", "parse", "replay", "store"]

_FORMAT = b"envsolve-replay-1\0"
_ENV = ("ENVSOLVE_", "PIP_")
_ENV_NAMES = ("HOME", "XDG_CONFIG_HOME")
_CODE = Path(__file__).resolve().parent.parent  # the whole envsolve package
_LIBRARIES = ("packaging", "tomli_w")  # whose code shapes the lock's bytes besides envsolve's own

# (spec path, output path or "", format, "frameworks" with --frameworks-only else ""), as the lock command reads them
Request = tuple[str, str, str, str]


def parse(argv: Sequence[str]) -> Request | None:
    """``lock [SPEC] [-o OUT] [--format toml|json] [--frameworks-only]``, normalised as click reads
    it; None for anything else (other commands and options go to the full command)."""
    if not argv or argv[0] != "lock":
        return None
    spec, output, fmt, scope = "", "", "toml", ""
    args = list(argv[1:])
    while args:
        arg = args.pop(0)
        if arg == "--frameworks-only":
            scope = "frameworks"
            continue
        if arg in ("-o", "--output", "--format") and args:
            value = args.pop(0)
        elif arg.startswith(("--output=", "--format=")):
            arg, value = arg.split("=", 1)
        elif not arg.startswith("-") and not spec:
            spec = arg
            continue
        else:
            return None
        if arg == "--format":
            if value not in ("toml", "json"):
                return None
            fmt = value
        else:
            output = str(Path(value))
    return str(Path(spec or "project.toml")), output, fmt, scope


def _digest(request: Request, environ: Mapping[str, str], lock: bytes | None) -> str:
    h = hashlib.sha256(_FORMAT)

    def add(label: str, data: bytes) -> None:
        h.update(label.encode() + b"\0" + len(data).to_bytes(8, "little") + data)

    add("python", sys.version.encode())
    add("cwd", os.getcwd().encode())
    add("request", "\0".join(request).encode())
    for name in sorted(environ):
        if name.startswith(_ENV) or name in _ENV_NAMES:
            add(f"env {name}", environ[name].encode())
    add("spec", Path(request[0]).read_bytes())
    add("lock on disk", b"\0absent" if lock is None else lock)  # a re-lock keeps its versions
    matrices = Path(environ.get("ENVSOLVE_MATRICES") or data_dir())
    for path in sorted(matrices.glob("*.toml")):
        add(f"data {path.name}", path.read_bytes())
    for path in sorted(_CODE.rglob("*.py")):
        add(f"code {path.relative_to(_CODE)}", path.read_bytes())
    for name in _LIBRARIES:
        spec = importlib.util.find_spec(name)
        where = Path(spec.origin).parent if spec is not None and spec.origin else None
        for path in sorted(where.glob("*.py")) if where is not None else ():
            add(f"library {name} {path.name}", path.read_bytes())
    for path in pip_config_files(environ):
        try:
            add(f"pip {path}", path.read_bytes())
        except OSError:
            add(f"pip {path}", b"\0absent")
    return h.hexdigest()


def _entry_path(request: Request, environ: Mapping[str, str], lock: bytes | None) -> Path:
    return cache_dir(environ) / "locks" / f"{_digest(request, environ, lock)[:40]}.marshal"


def _lock_path(request: Request) -> Path:
    return Path(request[1]) if request[1] else Path(request[0]).parent / "envsolve.lock"


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
    from ..files import write_atomic

    try:
        entry = {"text": text, "data_version": data_version, "messages": [list(m) for m in messages]}
        write_atomic(_entry_path(request, env, text.encode("utf-8")), marshal.dumps(entry))
    except (OSError, ValueError):  # a cache that cannot be written costs the next run a solve
        pass


def replay(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> bool:
    """Write the lock and print what the full command printed, when the inputs are unchanged;
    False (nothing written, nothing printed) when the full command must run."""
    env = os.environ if environ is None else environ
    request = parse(argv)
    if request is None or env.get("ENVSOLVE_NO_CACHE"):
        return False
    out = _lock_path(request)
    try:
        on_disk: bytes | None = out.read_bytes()
    except FileNotFoundError:
        on_disk = None
    except OSError:
        return False
    try:
        entry = marshal.loads(_entry_path(request, env, on_disk).read_bytes())
        text, data_version, messages = entry["text"], entry["data_version"], entry["messages"]
    except Exception:  # no entry, an unreadable input, a corrupt entry: solve
        return False
    try:
        old = data_version if on_disk is None else data_version_of(on_disk.decode("utf-8"))
    except UnicodeDecodeError:
        return False
    if old != data_version:  # the full command warns about a lock made with other data
        return False
    from ..files import write_atomic

    try:
        write_atomic(out, text)
    except OSError:
        return False
    for to_stderr, line in messages:
        print(line, file=sys.stderr if to_stderr else sys.stdout)
    return True
