"""The one reader of the files a person hands envsolve, and the one writer of the files it
generates.

Reading: an input (a spec, a lock, a matrix file, an images file, a file of ``matrices/``) is a
regular file of at most its kind's cap, read whole: a FIFO, a device (``/dev/zero``), a folder or
a socket is refused by :func:`os.stat` before it is opened (and it is opened non-blocking, should
it change in between), so a read never hangs and never fills the memory. A UTF-8 byte-order mark
is dropped; a file that is not UTF-8 is named with what to do.

Caches: :func:`read_cache` reads a file envsolve wrote for itself (the compiled data, a lock
replay's entry) by the same rules, and also refuses one that another user owns or that others
may write; it answers None for any file it refuses, and the cache is made again, never believed.
A cache's contents are sealed (:func:`seal`) with this user's secret key (:func:`cache_key`),
kept outside the cache folder: a cache file made elsewhere (copied, restored from a CI cache a
pull request filled) does not verify, and is made again.

Writing: atomic, and with the mode the umask asks for, or the mode of the file it replaces (a
cache's: private). A failure never leaves a partial file behind and never truncates the file
that was there: the text goes to a hidden temporary file beside the target, which then replaces
it in one rename. :func:`write_all` writes every temporary file first and renames them only when
all are written, so a batch is written whole or not at all; a run killed on the way leaves only
temporary files, which the next write into that folder removes (only regular files whose names envsolve
made: each carries a checksum of itself keyed with this user's secret key, so a person's file of
the same shape, or one named to look like envsolve's, is never touched). An
output that exists and is not a regular file (``/dev/full``, a FIFO, a folder) is refused, and a
file's folder must exist (:func:`check_output`); an output folder is created. A folder of
generated files (render, site, matrix --render, a workflow, ``matrices/``) is written only inside
itself: :func:`under` refuses a path that a link (or ``..``) leads out of it, and a folder that is
itself a link.

Standard library only, errors imported where raised: the lock replay reads and writes through
this module and stays light.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the lock replay imports this
if TYPE_CHECKING:  # no pathlib (nor contextlib) at import: the lock replay reads and writes through here
    from collections.abc import Iterable, Iterator, Mapping
    from contextlib import AbstractContextManager
    from pathlib import Path


__all__ = ["IMAGES_CAP", "LOCK_CAP", "MATRIX_CAP", "MATRIX_CELLS_CAP", "NO_SPEC_TIP", "SPEC_CAP", "NotAnInput", "alive",
           "cache_key", "check_output", "check_output_dir", "decoded", "folder_lock", "read_bytes", "read_cache",
           "read_text", "refused", "seal", "sweep", "under", "user_input", "write_all", "write_atomic"]

MiB = 1 << 20
SPEC_CAP = 16 * MiB  # project.toml, an images.toml matrix file, a file of matrices/
# what to do when no project.toml is found (here, or in a folder above: envsolve.paths.project_folder)
NO_SPEC_TIP = ("write one with `envsolve init` (then `envsolve add torch`), or give its path or --project DIR; "
               "envsolve looks in this folder and the folders above it, up to the repository root")
MATRIX_CAP = 16 * MiB
IMAGES_CAP = 64 * MiB  # `matrix --check-images` JSON
# a lock of many environments, every package with its hashes, is a few MB. The cap is what the TOML
# parsers take safely: measured (rtoml 0.14, Python 3.11, a 24 GiB machine) a lock-shaped 256 MiB file
# peaks at 2.1 GB in rtoml (10 s) and 0.95 GB in tomllib (31 s), one of inline tables at 249 MiB at
# 6.2 GB in rtoml (31 s), and rtoml aborts the process (SIGABRT, no Python error) when an allocation
# fails; at 64 MiB the worst shape peaks near 1.6 GB, which a CI runner has
LOCK_CAP = 64 * MiB
# the cells of an images.toml product `envsolve matrix` solves (--max-cells raises it): a few axes
# of many values multiply fast (nine lines made 64.5 million cells and 6.7 GB of JSON in a minute);
# two million cells are already hundreds of MB of JSON, far more than a CI matrix or a bake file takes
MATRIX_CELLS_CAP = 2_000_000

_KINDS = ((stat.S_ISDIR, "is a folder, not a file"), (stat.S_ISFIFO, "is a FIFO (named pipe), not a file"),
          (stat.S_ISSOCK, "is a socket, not a file"), (stat.S_ISCHR, "is a device, not a file"),
          (stat.S_ISBLK, "is a device, not a file"))


class NotAnInput(OSError):
    """An input that is not a regular file of its kind's size, or not UTF-8: ``reason`` says
    which, ``tip`` what to do."""

    def __init__(self, reason: str, tip: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.tip = tip


def _kind(mode: int) -> str | None:
    """Why a file of ``mode`` is no regular file; None for one."""
    return next((why for test, why in _KINDS if test(mode)), None if stat.S_ISREG(mode) else "is not a regular file")


def _cap_text(cap: int) -> str:
    return f"{cap // MiB} MiB" if cap >= MiB else f"{cap} bytes"


def _untrusted(st: os.stat_result) -> str | None:
    """Why a cache file of status ``st`` is not to be believed: another user's (root's aside), or
    writable by its group or by others; None for one only its owner could have written."""
    if st.st_uid not in (os.geteuid(), 0):
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by other users"
    return None


def read_bytes(path: str | os.PathLike[str], cap: int, *, private: bool = False) -> bytes:
    """The bytes of the regular file ``path``; :class:`NotAnInput` for anything else or for more
    than ``cap`` bytes (and, when ``private``, for a file another user owns or may write),
    FileNotFoundError and the other OSErrors as the system raises them."""
    why = _kind(os.stat(path).st_mode)
    if why is not None:
        raise NotAnInput(why, "pass the path of a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        why = _kind(st.st_mode) or (_untrusted(st) if private else None)  # what was opened, should the path change
        if why is not None:
            raise NotAnInput(why, "pass the path of a regular file")
        # the size it has, and one byte more to see it grow: a read of cap + 1 bytes made a buffer
        # of the cap first, ten times the cost of reading the matrices
        blob = f.read(min(st.st_size, cap) + 1)
        if st.st_size < len(blob) <= cap:  # it grew while being read: the rest, up to the cap
            blob += f.read(cap + 1 - len(blob))
    if len(blob) > cap:
        raise NotAnInput(f"is larger than {_cap_text(cap)}, more than any such file needs",
                         "pass the right file; envsolve reads inputs of up to that size")
    return blob


def read_cache(path: str | os.PathLike[str], cap: int) -> bytes | None:
    """The bytes of the cache file ``path`` (see :func:`read_bytes`, ``private``); None when it is
    absent, not a regular file, over ``cap``, another user's or writable by others: the cache is
    then made again, never read."""
    try:
        return read_bytes(path, cap, private=True)
    except OSError:
        return None


_KEY = "cache.key"  # the file of the key, in the state folder
_KEY_SIZE = 32


def cache_key(folder: str) -> bytes | None:
    """This user's secret key that seals the caches (:func:`seal`), kept in ``folder`` (the state
    folder, :func:`envsolve.paths.state_folder`) as a private file and made on first use; None
    when it can be neither read nor made (the caches are then neither read nor written)."""
    path = os.path.join(folder, _KEY)
    key = read_cache(path, _KEY_SIZE)
    if key is None or len(key) != _KEY_SIZE:
        key = _made_key(path)
    return key if key is not None and len(key) == _KEY_SIZE else None


def _made_key(path: str) -> bytes | None:
    """A new key at ``path``, unless one is there (another process's, made meanwhile: that one)."""
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        tmp = _temporary(path, os.urandom(_KEY_SIZE), True, 0o600, keyed=False)  # no key yet to name it by
        try:
            os.link(tmp, path)  # never replaces a key: the caches it sealed would all be made again
        finally:
            _remove(tmp)
    except OSError:  # there already (a wrong one stays: no cache then), or an unwritable home
        pass
    return read_cache(path, _KEY_SIZE)


def seal(blob: bytes, key: bytes) -> bytes:
    """The keyed digest of a cache's contents ``blob`` (BLAKE2b keyed with ``key``, 32 bytes)."""
    import hashlib

    return hashlib.blake2b(blob, key=key, digest_size=32).digest()


def decoded(blob: bytes, path: Path) -> str:
    """The UTF-8 text of ``blob`` read from ``path``, a byte-order mark dropped; :class:`NotAnInput`
    naming the first byte that is not UTF-8."""
    try:
        return blob.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        name = os.path.basename(path)
        raise NotAnInput(f"is not UTF-8 text (byte {e.start} is {blob[e.start:e.start + 1]!r})",
                         f"save {name} as UTF-8 (e.g. `iconv -f latin1 -t utf-8 {name}`)") from None


def read_text(path: Path, cap: int) -> str:
    """The text of the regular UTF-8 file ``path`` (see :func:`read_bytes` and :func:`decoded`)."""
    return decoded(read_bytes(path, cap), path)


def refused(path: Path, e: OSError) -> tuple[str, str]:
    """(why, what to do) of an input that could not be read."""
    if isinstance(e, FileNotFoundError):
        return "no such file", ""
    if isinstance(e, NotAnInput):
        return e.reason, e.tip
    return f"cannot be read: {e.strerror or e}", ""


def user_input(path: Path, cap: int, tip: str) -> tuple[str, bytes]:
    """(text, bytes) of a person's file (see :func:`read_bytes`), a problem being a SpecError
    (exit 2) naming the file, with ``tip`` unless the problem has its own."""
    from .errors import Problem, SpecError

    try:
        blob = read_bytes(path, cap)
        return decoded(blob, path), blob
    except OSError as e:
        why, own = refused(path, e)
        raise SpecError([Problem(str(path), "", why)], tip=own or tip) from None


def _output_problem(path: Path, file: bool) -> str | None:
    """Why ``path`` cannot take an output (a file when ``file``, else a folder); None when it can."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if file and not path.parent.is_dir():
            return f"its folder {path.parent} does not exist"
        return None
    except OSError as e:
        return f"cannot be used: {e.strerror or e}"
    if file:
        return None if stat.S_ISREG(mode) else f"exists and {_kind(mode)}; envsolve replaces only regular files"
    return None if stat.S_ISDIR(mode) else "exists and is not a folder"


def check_output(path: Path, option: str, *, folder_made: bool = False) -> None:
    """Refuse (SpecError, exit 2) an output file that exists and is not a regular file, or whose
    folder does not exist (a lock's folder is never created: a typo in a path is not a new tree);
    ``folder_made`` for a generated file whose folder is made (a workflow's .github/workflows)."""
    why = _output_problem(path, True)
    if why is not None and not (folder_made and "does not exist" in why):
        raise _output_refused(path, why, option, f"mkdir -p {path.parent}, or choose another path with {option}"
                              if "does not exist" in why else f"choose another path with {option}")


def check_output_dir(path: Path, option: str) -> None:
    """Refuse an output folder that exists and is not a folder (a missing one is created)."""
    if (why := _output_problem(path, False)) is not None:
        raise _output_refused(path, why, option, f"choose another folder with {option}")


def _output_refused(path: Path, why: str, option: str, tip: str) -> Exception:
    from .errors import Problem, SpecError

    return SpecError([Problem(str(path), "", f"cannot be written ({option}): {why}")], tip=tip)


def _inside(real: str, root: str) -> bool:
    """Whether the resolved path ``real`` is the resolved folder ``root`` or lies under it."""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _link_out(folder: Path, relative: str, root: str) -> tuple[str, str] | None:
    """(the link, its target) that takes ``folder``/``relative`` out of ``root`` (``folder``
    resolved): the first on the way whose target lies outside; None when no link does (a ``..``)."""
    here = os.fspath(folder)
    for part in relative.split(os.sep):
        here = os.path.join(here, part)
        if os.path.islink(here) and not _inside(os.path.realpath(here), root):
            return here, os.readlink(here)
    return None


def under(folder: Path, relative: str | os.PathLike[str], option: str) -> Path:
    """``folder``/``relative``, an output path of a folder of generated files; refused (SpecError,
    exit 2) when resolving it (its links followed, its ``..`` taken) leaves ``folder``: envsolve
    writes a folder's files inside it, never through a link to elsewhere (``DIR/gpu ->
    /tmp/elsewhere``, ``DIR/index.html -> ~/.bashrc``), nor into a ``folder`` that is itself a link
    (``envsolve-out -> ~/project``; links higher up its path, ``/tmp -> /private/tmp``, are the
    system's and followed). ``option`` names the folder's option in the tip."""
    from pathlib import Path

    from .errors import Problem, SpecError

    path = Path(folder, relative)
    if os.path.islink(folder):  # the folder as given (its last component; links above it are the system's)
        target = os.path.realpath(folder)
        given = target if option != "--workflow" else os.path.join(target, relative)  # that option takes a file
        raise SpecError([Problem(str(folder), "", f"cannot be written ({option}): the output folder is a link to "
                                 f"{os.readlink(folder)}; envsolve writes only into a folder, never through a link")],
                        tip=f"pass the link's target ({option} {given}) if that is where you mean to write")
    root = os.path.realpath(folder)
    if _inside(os.path.realpath(path), root):
        return path
    tip = f"choose another folder with {option}"
    how = "its name climbs out of it with .."
    if (link := _link_out(folder, os.fspath(relative), root)) is not None:
        how = f"{link[0]} is a link to {link[1]}"
        tip = f"remove the link {link[0]} (envsolve writes only inside its output folder), or {tip}"
    raise SpecError([Problem(str(path), "", f"cannot be written: it lies outside the output folder {folder} ({how})")],
                    tip=tip)


def folder_lock(folder: Path) -> AbstractContextManager[None]:
    """Hold an exclusive lock on ``folder`` (``flock`` on the folder itself, no lock file): runs that
    read, change and write the files of one folder (``refresh --write``) take turns, so a run never
    writes from what another has since replaced."""
    import contextlib

    return contextlib.contextmanager(_held)(folder)


def _held(folder: Path) -> Iterator[None]:
    import fcntl

    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # (releases the lock)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _mode(path: str | os.PathLike[str]) -> int:
    """The mode of the file ``path`` replaces (a read-only lock stays read-only), else 0666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running (another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def sweep(folder: str | os.PathLike[str]) -> None:
    """Remove the temporary files that runs killed on the way left in ``folder``: those whose
    names verify as envsolve's own (:func:`_writer`, keyed with this user's key), of processes no
    longer running; a person's file of the same shape stays. Only regular files are removed (a
    folder or a link of that name stays), and one that cannot be removed is left: a sweep never
    fails the write it comes before."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        shape = _shape(name)
        if shape is None or int(shape[2]) == os.getpid() or alive(int(shape[2])) or not _verifies(shape):
            continue
        path = os.path.join(folder, name)
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                os.unlink(path)
        except OSError:  # gone meanwhile, another user's (a sticky folder), a read-only folder
            pass


def prune(folder: str | os.PathLike[str], suffix: str, keep: int, written: str | os.PathLike[str] = "") -> None:
    """Keep the ``keep`` most recently used files of ``folder`` whose names end in ``suffix`` (their
    readers touch them on a hit) and remove the rest, never ``written``: a cache folder stays
    bounded (one entry per spec, one compiled file per envsolve and data version would otherwise
    pile up for ever). A file it cannot stat or remove is left: a cache costs speed, never an answer."""
    spared = os.path.basename(written)
    try:
        names = [n for n in os.listdir(folder) if n.endswith(suffix) and n[0] != "." and n != spared]
    except OSError:
        return
    if len(names) + bool(spared) <= keep:
        return
    found = []
    for name in names:
        try:
            found.append((os.stat(os.path.join(folder, name)).st_mtime_ns, name))
        except OSError:  # gone meanwhile
            pass
    for _, name in sorted(found, reverse=True)[max(keep - bool(spared), 0):]:
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:  # another user's (a sticky folder), a folder of that name, gone meanwhile
            pass


def touch(path: str | os.PathLike[str]) -> None:
    """Mark a cache file used now (for :func:`prune`); nothing when it cannot be."""
    try:
        os.utime(path)
    except OSError:
        pass


def _remove(path: str | os.PathLike[str]) -> None:
    """Remove the file ``path`` if it is there and can be (a cleanup never raises)."""
    try:
        os.unlink(path)
    except OSError:
        pass


# The key of the temporaries' checksums (:func:`_token`): this user's secret key (:func:`cache_key`,
# in the state folder), read once per process and only when a temporary is made or a leftover of a
# dead process is checked. A name of the temporaries' shape whose checksum does not verify under it
# was not made by this user's envsolve (a person's own file, a name made to look like one), and the
# sweep leaves it. False: not read yet; None: none could be had, and then no name verifies (a
# leftover stays, never swept).
_temporary_key: bytes | bool | None = False
_UNKEYED = "unkeyed"  # the token of a temporary made without a key: no hex digest, so it never verifies


def _key() -> bytes | None:
    """This user's key of the temporaries' checksums, read (or made) on first use."""
    global _temporary_key
    if _temporary_key is False:
        from .paths import state_folder  # standard library only, as this module

        _temporary_key = cache_key(state_folder())
    return _temporary_key if isinstance(_temporary_key, bytes) else None


def _token(name: str, nonce: str, pid: str, keyed: bool = True) -> str:
    """The keyed checksum that marks ``.NAME.NONCE.PID.TOKEN.tmp`` as a temporary this user's
    envsolve made; :data:`_UNKEYED`, which never verifies, when no key can be had (or, ``keyed``
    False, for the key's own temporary, made before there is a key)."""
    key = _key() if keyed else None
    if key is None:
        return _UNKEYED
    import hashlib

    return hashlib.blake2s(f"{name}\0{nonce}\0{pid}".encode("utf-8", "surrogateescape"), key=key,
                           person=b"tmpname", digest_size=4).hexdigest()


def _temporary_name(name: str, keyed: bool = True) -> str:
    """A new temporary's name for the file ``name``: ``.NAME.NONCE.PID.TOKEN.tmp``, NONCE random,
    TOKEN the checksum of the rest (:func:`_token`)."""
    nonce, pid = os.urandom(4).hex(), str(os.getpid())
    return f".{name}.{nonce}.{pid}.{_token(name, nonce, pid, keyed)}.tmp"


def _shape(name: str) -> tuple[str, str, str, str] | None:
    """(NAME, NONCE, PID, TOKEN) of a name of the temporaries' shape; None for any other."""
    parts = name.split(".")
    pid = parts[-3] if len(parts) >= 6 else ""
    if parts[0] or parts[-1] != "tmp" or not (pid.isascii() and pid.isdigit() and len(pid) <= 10):
        return None
    return ".".join(parts[1:-4]), parts[-4], pid, parts[-2]


def _verifies(shape: tuple[str, str, str, str]) -> bool:
    name, nonce, pid, token = shape
    return token != _UNKEYED and token == _token(name, nonce, pid)


def _writer(name: str) -> int | None:
    """The process that wrote the temporary file ``name`` (see :func:`_temporary_name`); None for
    any other name, and for a name of that shape whose checksum does not verify under this user's
    key (not envsolve's, or no key to tell)."""
    shape = _shape(name)
    return int(shape[2]) if shape is not None and _verifies(shape) else None


def _temporary(path: str | os.PathLike[str], data: str | bytes, durable: bool = True, mode: int | None = None,
               keyed: bool = True) -> str:
    """A temporary file beside ``path`` holding ``data`` (on disk, when ``durable``), with the mode
    ``path`` will have (``mode``, else :func:`_mode`); its name unkeyed (never swept) unless ``keyed``."""
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, _temporary_name(name, keyed))
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, _mode(path) if mode is None else mode)
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, durable: bool = True,
                 private: bool = False) -> None:
    """Write ``data`` to ``path`` atomically; the file gets the mode of the file it replaces,
    else 0666 less the umask (0644 under the usual 022), like any file a program creates, not the
    temporary file's 0600. Its folder is created (a cache's; commands check theirs first), and
    cleared of what killed runs left there (:func:`sweep`).

    ``durable=False`` skips the fsync (a millisecond, at times a hundred on a busy disk): for a
    cache file whose reader checks what it reads and makes it again when a crash left it short.
    ``private``: mode 0600 whatever the umask, as :func:`read_cache` believes no file others may write."""
    folder = os.path.dirname(os.fspath(path)) or "."
    os.makedirs(folder, exist_ok=True)
    sweep(folder)
    tmp = _temporary(path, data, durable, 0o600 if private else None)
    try:
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _replace_all(temps: Mapping[Path, str]) -> None:
    done: list[Path] = []
    try:
        for path, tmp in temps.items():
            os.replace(tmp, path)
            done.append(path)
    finally:
        for path, tmp in temps.items():
            if path not in done:
                _remove(tmp)


def _check_targets(paths: Iterable[Path], tip: str, folder: Path | None, option: str) -> None:
    """Refuse (SpecError, exit 2) before anything is written: a path outside ``folder`` (when
    given, :func:`under`), or one that exists and is not a regular file."""
    from .errors import Problem, SpecError

    for path in paths:
        if folder is not None:
            under(folder, os.path.relpath(path, folder), option)
        if (why := _output_problem(path, True)) is not None and "does not exist" not in why:
            raise SpecError([Problem(str(path), "", f"cannot be written: {why}")], tip=tip)


def write_all(texts: Mapping[Path, str], tip: str, *, folder: Path | None = None, option: str = "-o") -> None:
    """Write generated files together: every one to its temporary file, then, when all are on
    disk, each renamed over its target; an unwritable path (or one that exists and is not a
    regular file) is a user error (exit 2) and leaves every target as it was. With ``folder``
    (a folder of generated files, given by ``option``), every path must lie inside it once its
    links are followed (:func:`under`), checked before anything is written."""
    from pathlib import Path

    from .errors import Problem, SpecError  # here: the replay writes through this module and stays light

    _check_targets(texts, tip, folder, option)
    temps: dict[Path, str] = {}
    current = Path()
    try:
        for current in dict.fromkeys(path.parent for path in texts):
            current.mkdir(parents=True, exist_ok=True)
            sweep(current)
        for current in texts:
            temps[current] = _temporary(current, texts[current])
        _replace_all(temps)
    except OSError as e:
        raise SpecError([Problem(str(current), "", f"cannot be written: {e.strerror or e}")], tip=tip) from None
    finally:
        for tmp in temps.values():
            _remove(tmp)
