"""How the commands talk to the person running them: how much (``-q``, normal, ``-v``), in colour
or not, and transient progress lines on a terminal.

One :class:`Console` per run, set by the options every command shares (see ``cli.EnvsolveCommand``).
Lower layers never import this module: they take ``progress``/``say`` callables, and the command
hands them the console's methods.

- ``out``: the command's product (a lock as JSON, a table, a report): always printed, to stdout.
- ``say``: what was done (``wrote envsolve.lock``, a summary): hidden by ``-q``.
- ``warn``: a ``WARNING:`` line on stderr: hidden by ``-q`` ("errors only").
- ``error``: the ``ERROR:``/``TIP:`` lines on stderr: always.
- ``detail``: what it reads, which index, which cache: only with ``-v``, on stderr.
- ``progress``: what long work is doing now: on a terminal (stderr), one line rewritten in place
  (and drawn again under any line printed meanwhile; ``done()`` or an error ends it); elsewhere
  nothing, unless ``-v`` (then a plain line).

Colour follows click's rule (only on a terminal) and is off with ``NO_COLOR`` (any non-empty
value, see https://no-color.org) or ``--no-color``. click is imported only when it decides (a
console whose colour is not yet known, as under the click command line): a plain lock, which
runs without click (:mod:`envsolve.command`), knows its colour from the start.
"""

from __future__ import annotations

import os
import sys
from typing import Literal

import msgspec

__all__ = ["EXIT_CODES", "Console", "Level", "console", "reset"]

Level = Literal["quiet", "normal", "verbose"]

# the one statement of what envsolve's exit codes mean (errors.py raises them; --help shows this)
EXIT_CODES = ("Exit codes: 0 success; 1 unsatisfiable spec or a failed check; "
              "2 bad input (the message names the file, key and value, with a TIP).")

_STYLES = {"ERROR:": {"fg": "red", "bold": True}, "TIP:": {"fg": "cyan"}, "WARNING:": {"fg": "yellow"}}
_SGR = {"red": 31, "yellow": 33, "cyan": 36, "bold": 1, "dim": 2}  # ANSI select-graphic-rendition codes


def style(text: str, *, fg: str = "", bold: bool = False, dim: bool = False) -> str:
    """``text`` in ANSI colour, byte for byte as ``click.style`` writes it (foreground, bold, dim,
    then a reset)."""
    codes = [c for c, on in ((fg, bool(fg)), ("bold", bold), ("dim", dim)) if on]
    return "".join(f"\x1b[{_SGR[c]}m" for c in codes) + text + "\x1b[0m"


class Console(msgspec.Struct):
    level: Level = "normal"
    color: bool | None = None  # None: click decides (a terminal gets colour); False: never
    _live: bool = False  # a progress line is on the terminal now
    _status: str = ""  # the progress line of the work going on (a terminal only)

    # ------------------------------------------------------------------ settings

    @property
    def quiet(self) -> bool:
        return self.level == "quiet"

    @property
    def verbose(self) -> bool:
        return self.level == "verbose"

    def no_color(self) -> None:
        self.color = False

    # ------------------------------------------------------------------ lines

    def out(self, text: str, nl: bool = True) -> None:
        """The command's product, on stdout, whatever the level."""
        self._echo(text, nl=nl)

    def say(self, text: str, err: bool = False) -> None:
        """What was done; hidden by ``-q``."""
        if not self.quiet:
            self._echo(self._styled(text), err=err)

    def warn(self, text: str) -> None:
        """A warning (``WARNING:`` is added when missing); hidden by ``-q``."""
        self.say(text if text.startswith("WARNING:") else f"WARNING: {text}", err=True)

    def error(self, message: str, tip: str = "") -> None:
        """The lines of a failure, always on stderr (the work stopped: its progress line goes)."""
        self.done()
        self._echo(self._styled(f"ERROR: {message}"), err=True)
        if tip:
            self._echo(self._styled(f"TIP: {tip}"), err=True)

    def detail(self, text: str) -> None:
        """What the command reads and from where; only with ``-v``."""
        if self.verbose:
            self._echo(self._paint(text, dim=True), err=True)

    def progress(self, text: str) -> None:
        """What long work is doing now: rewritten in place on a terminal (and written again under
        any line printed meanwhile), else only with ``-v``."""
        if self.quiet:
            return
        if _terminal():
            self._status = text.splitlines()[0] if text else ""
            self._draw()
        else:
            self.detail(text)

    def done(self) -> None:
        """The long work is over: its progress line goes."""
        self._clear()
        self._status = ""

    # ------------------------------------------------------------------ helpers

    def _echo(self, text: str, *, err: bool = False, nl: bool = True) -> None:
        """One line, with the progress line moved out of its way and drawn again under it."""
        self._clear()
        if self.color is None:  # click decides (it strips colour off a terminal, unless told not to)
            import click

            click.echo(text, nl=nl, err=err)
        else:
            stream = sys.stderr if err else sys.stdout
            stream.write(text + "\n" if nl else text)
            stream.flush()
        if self._status and (nl or text.endswith("\n")):
            self._draw()

    def _draw(self) -> None:
        width = max(20, _columns() - 1)
        sys.stderr.write("\r\x1b[K" + self._status[:width])
        sys.stderr.flush()
        self._live = True

    def _clear(self) -> None:
        if self._live:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._live = False

    def _styled(self, text: str) -> str:
        for prefix, how in _STYLES.items():
            if text.startswith(prefix):
                return self._paint(prefix, **how) + text[len(prefix):]  # type: ignore[arg-type]
        return text

    def _paint(self, text: str, **how: str | bool) -> str:
        """``text`` styled, unless colour is off."""
        return text if self.color is False else style(text, **how)  # type: ignore[arg-type]


def _terminal() -> bool:
    return sys.stderr.isatty()


def _columns() -> int:
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns or 80  # 0 when the terminal has no size
    except (OSError, ValueError):
        return 80


_CONSOLE = Console()


def console() -> Console:
    """The console of this run."""
    return _CONSOLE


def reset() -> Console:
    """A fresh console for a new run (the group's start), colour off when ``NO_COLOR`` is set."""
    global _CONSOLE
    _CONSOLE = Console(color=False if os.environ.get("NO_COLOR") else None)
    return _CONSOLE
