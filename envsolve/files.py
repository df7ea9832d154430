"""The one writer of files envsolve generates: atomic, and with the mode the umask asks for.

A failure never leaves a partial file behind and never truncates the file that was there: the
text goes to a temporary file beside the target, which then replaces it in one rename.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["write_all", "write_atomic"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``data`` to ``path`` atomically; the file gets mode 0666 less the umask (0644 under
    the usual 022), like any file a program creates, not the temporary file's 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_all(texts: Mapping[Path, str], tip: str) -> None:
    """Write generated files; an unwritable path is a user error (exit 2), not a traceback."""
    from .errors import Problem, SpecError  # here: the replay writes through this module and stays light
    for path, text in texts.items():
        try:
            write_atomic(path, text)
        except OSError as e:
            raise SpecError([Problem(str(path), "", f"cannot be written: {e.strerror or e}")], tip=tip) from None
