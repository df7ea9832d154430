"""The one reader of the files a person hands envsolve, and the one writer of the files it
generates.

Reading: an input (a spec, a lock, a matrix file, an images file, a file of ``matrices/``) is a
regular file of at most its kind's cap, read whole: a FIFO, a device (``/dev/zero``), a folder or
a socket is refused by :func:`os.stat` before it is opened (and it is opened non-blocking, should
it change in between), so a read never hangs and never fills the memory. A UTF-8 byte-order mark
is dropped; a file that is not UTF-8 is named with what to do.

Writing: atomic, and with the mode the umask asks for, or the mode of the file it replaces. A
failure never leaves a partial file behind and never truncates the file that was there: the
text goes to a hidden temporary file beside the target, which then replaces it in one rename.
:func:`write_all` writes every temporary file first and renames them only when all are written,
so a batch is written whole or not at all; a run killed on the way leaves only temporary files,
which the next write into that folder removes. An output that exists and is not a regular file
(``/dev/full``, a FIFO, a folder) is refused, and a file's folder must exist
(:func:`check_output`); an output folder is created.

Standard library only, errors imported where raised: the lock replay reads and writes through
this module and stays light.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: the lock replay imports this
if TYPE_CHECKING:  # no pathlib (nor contextlib) at import: the lock replay reads and writes through here
    from collections.abc import Iterator, Mapping
    from contextlib import AbstractContextManager
    from pathlib import Path


__all__ = ["IMAGES_CAP", "LOCK_CAP", "MATRIX_CAP", "SPEC_CAP", "NotAnInput", "check_output", "check_output_dir",
           "decoded", "folder_lock", "read_bytes", "read_text", "refused", "sweep", "user_input", "write_all",
           "write_atomic"]

MiB = 1 << 20
SPEC_CAP = 16 * MiB  # project.toml, an images.toml matrix file, a file of matrices/
MATRIX_CAP = 16 * MiB
IMAGES_CAP = 64 * MiB  # `matrix --check-images` JSON
LOCK_CAP = 256 * MiB  # a lock of many environments, every package with its hashes

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


def read_bytes(path: str | os.PathLike[str], cap: int) -> bytes:
    """The bytes of the regular file ``path``; :class:`NotAnInput` for anything else or for more
    than ``cap`` bytes, FileNotFoundError and the other OSErrors as the system raises them."""
    why = _kind(os.stat(path).st_mode)
    if why is not None:
        raise NotAnInput(why, "pass the path of a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        why = _kind(st.st_mode)  # what was opened, should the path have changed
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def sweep(folder: str | os.PathLike[str]) -> None:
    """Remove the temporary files that runs killed on the way left in ``folder`` (those of
    processes no longer running)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = _writer(name)
        if pid is not None and pid != os.getpid() and not _alive(pid):
            _remove(os.path.join(folder, name))


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
    """Remove the file ``path`` if it is there."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _writer(name: str) -> int | None:
    """The process that wrote the temporary file ``name`` (``.NAME.PID.8HEX.tmp``, see
    :func:`_temporary`); None for any other name."""
    parts = name.split(".")
    if len(parts) < 5 or parts[0] or parts[-1] != "tmp" or len(parts[-2]) != 8 or not parts[-3].isdigit():
        return None
    return int(parts[-3]) if all(c in "0123456789abcdef" for c in parts[-2]) else None


def _temporary(path: str | os.PathLike[str], data: str | bytes, durable: bool = True) -> str:
    """A temporary file beside ``path`` holding ``data`` (on disk, when ``durable``), with the mode
    ``path`` will have."""
    folder, name = os.path.split(os.fspath(path))
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, _mode(path))
    except BaseException:
        _remove(tmp)
        raise
    return tmp


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically; the file gets the mode of the file it replaces,
    else 0666 less the umask (0644 under the usual 022), like any file a program creates, not the
    temporary file's 0600. Its folder is created (a cache's; commands check theirs first), and
    cleared of what killed runs left there (:func:`sweep`).

    ``durable=False`` skips the fsync (a millisecond, at times a hundred on a busy disk): for a
    cache file whose reader checks what it reads and makes it again when a crash left it short."""
    folder = os.path.dirname(os.fspath(path)) or "."
    os.makedirs(folder, exist_ok=True)
    sweep(folder)
    tmp = _temporary(path, data, durable)
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


def write_all(texts: Mapping[Path, str], tip: str) -> None:
    """Write generated files together: every one to its temporary file, then, when all are on
    disk, each renamed over its target; an unwritable path (or one that exists and is not a
    regular file) is a user error (exit 2) and leaves every target as it was."""
    from pathlib import Path

    from .errors import Problem, SpecError  # here: the replay writes through this module and stays light

    temps: dict[Path, str] = {}
    current = Path()
    try:
        for current in texts:
            if (why := _output_problem(current, True)) is not None and "does not exist" not in why:
                raise SpecError([Problem(str(current), "", f"cannot be written: {why}")], tip=tip)
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
