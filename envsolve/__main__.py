"""The ``envsolve`` command: a lock whose inputs are unchanged is replayed (:mod:`envsolve.lock.replay`)
before anything else is imported; any other plain lock runs without click
(:func:`envsolve.command.plain_lock`); everything else goes to :mod:`envsolve.cli`.

The cyclic garbage collector runs over a hundred times less often than Python's default: a command
makes many objects (modules, the compiled data, a matrix's cells) and almost no cycles, and the
default thresholds spent a tenth of a lock's and a matrix's time walking them (`bench/`).
Memory stays flat (a million-cell matrix streams). When the command is over, every object is
frozen (``gc.freeze``): the interpreter's exit then runs no last collection over all of them, which
took a changed spec's lock a tenth of its time freeing what the process is about to give back.

msgspec (every record is a msgspec struct) is imported without typing_extensions, which it only
tries: that module imports inspect, ast, dis and tokenize (with the dataclasses no record on the
lock path is any more, about a tenth of a changed spec's lock: `bench/`), for type forms envsolve's
records do not use; msgspec then takes them from typing. A msgspec that cannot do without it is
imported as it is."""

from __future__ import annotations

import gc
import sys

GC_THRESHOLDS = (100_000, 50, 1_000)  # Python's are (700, 10, 10)


def main() -> None:
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        _command()
    finally:
        gc.freeze()  # see the module docstring: the exit then walks no object to free cycles


def _command() -> None:
    from .lock.replay import replay

    argv = sys.argv[1:]
    if replay(argv):
        sys.exit(0)
    import_msgspec()
    from .command import plain_lock

    if plain_lock(argv):
        sys.exit(0)
    from .cli import main as cli

    cli()


def import_msgspec() -> None:
    """Import msgspec without typing_extensions (see the module docstring), unless either is
    imported already; a later ``import typing_extensions`` works as before."""
    if "msgspec" in sys.modules or "typing_extensions" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment]  # `import` of it raises ImportError
    try:
        import msgspec  # noqa: F401, PLC0415 - only its import is wanted here
    except ImportError:  # a msgspec that needs it: its failed modules are gone; import it as it is below
        pass
    finally:
        del sys.modules["typing_extensions"]
    import msgspec  # noqa: F401, PLC0415


if __name__ == "__main__":
    main()
