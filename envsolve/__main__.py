"""The ``envsolve`` command: a lock whose inputs are unchanged is replayed (:mod:`envsolve.lock.replay`)
before click and the solver are imported; everything else goes to :mod:`envsolve.cli`."""

from __future__ import annotations

import sys


def main() -> None:
    from .lock.replay import replay

    if replay(sys.argv[1:]):
        sys.exit(0)
    from .cli import main as cli

    cli()


if __name__ == "__main__":
    main()
