"""The ``envsolve`` command (and ``python -m envsolve``): see :mod:`envsolve.entry` (the replay, a
plain lock without click, else the click command line)."""

from __future__ import annotations

from .entry import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
