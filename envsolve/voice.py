"""How the layers below the command line talk without printing: a :class:`Voice` of callables
that the command fills from its console (``ui.Console``); the default says nothing.

- ``say``: what was done; ``warn``: a warning (a retry, a check that failed but was forced);
- ``progress``: the long work now (shown on a terminal); ``detail``: what is read (``-v``).
"""

from __future__ import annotations

from collections.abc import Callable

import msgspec

__all__ = ["SILENT", "Line", "Voice", "silent"]

Line = Callable[[str], None]


def silent(_: str) -> None:
    """Say nothing (the default of every line)."""


class Voice(msgspec.Struct, frozen=True, kw_only=True):
    say: Line = silent
    warn: Line = silent
    progress: Line = silent
    detail: Line = silent


SILENT = Voice()  # the default of a function that may be given a voice
