"""The ``envsolve`` command: a lock whose inputs are unchanged is replayed (:mod:`envsolve.lock.replay`)
before anything else is imported; any other plain lock runs without click
(:func:`envsolve.command.plain_lock`); everything else goes to :mod:`envsolve.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    from .lock.replay import replay

    argv = sys.argv[1:]
    if replay(argv):
        sys.exit(0)
    from .command import plain_lock

    if plain_lock(argv):
        sys.exit(0)
    from .cli import main as cli

    cli()


if __name__ == "__main__":
    main()
