"""`envsolve lock` as its two ways in run it: the click command line (:mod:`envsolve.cli`) and the
plain lock of ``envsolve.__main__``, without click.

The command starts in ``envsolve.__main__``: a lock whose inputs are unchanged is replayed
(:mod:`envsolve.lock.replay`) before anything else is imported; any other plain lock (the spec
and the options the replay reads, no option from the environment) runs here (:func:`plain_lock`)
without click, whose parser and twenty commands cost a changed spec more than its solve;
everything else goes to :mod:`envsolve.cli`. The plain lock reads its options by the same table
click's are made from (:data:`envsolve.lock.options.LOCK_OPTIONS`, through the replay's reader)
and both run :func:`lock`, so the two answer alike, byte for byte.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the replay runs before anything is imported: this module imports nothing else first
    from . import ui
    from .lock.job import Render, Said
    from .provider import Provider
    from .spec import ProjectSpec
    from .voice import Voice

__all__ = ["lock", "plain_lock", "say_lock_line"]


def say_lock_line(line: str, kind: Said, err: bool) -> None:
    """A line of `envsolve lock` through the console: the product always, the rest as -q/-v say."""
    from . import ui

    console = ui.console()
    console.done()  # the lock's own lines come once its long work is over
    if kind == "out":
        console.out(line)
    elif kind == "warn":
        console.warn(line)
    else:
        console.say(line, err=err)


def lock(provider: Provider, spec_path: Path, chosen: Mapping[str, Any], typed: Collection[str], *,
         render: Render, voice: Voice, host: Callable[[ProjectSpec, Provider], ProjectSpec] | None = None) -> None:
    """`envsolve lock SPEC_PATH` with the options' values ``chosen`` (by ``dest``; ``typed`` those
    given on the command line), the spec made for this machine by ``host`` with ``--host``."""
    from .files import NO_SPEC_TIP, SPEC_CAP, user_input
    from .lock.job import Request, lock_command
    from .spec import parse_spec
    from .ui import console

    console().detail(f"spec: {spec_path}")
    text, blob = user_input(spec_path, SPEC_CAP, NO_SPEC_TIP)
    spec = parse_spec(text, str(spec_path), provider)
    if chosen["host"] and host is not None:
        spec = host(spec, provider)
    request = Request.of(spec_path, chosen, typed=typed)
    lock_command(provider, spec, blob, request, say=say_lock_line, render=render, voice=voice)


def plain_lock(argv: list[str], environ: Mapping[str, str] | None = None) -> bool:
    """Run ``argv`` when it is a plain `envsolve lock` (see the module docstring); False when it is
    anything else, which the click command line then answers."""
    from . import ui
    from .lock.options import LOCK_OPTIONS
    from .lock.replay import given

    env = os.environ if environ is None else environ
    if env.get("ENVSOLVE_MATRICES") or any(o.envvar and env.get(o.envvar) for o in LOCK_OPTIONS):
        return False
    found = given(argv)
    if found is None:
        return False
    spec_path, typed = found
    chosen = {o.dest: typed.get(o.dest, o.unset) for o in LOCK_OPTIONS}
    console = ui.reset()
    console.color = not env.get("NO_COLOR") and sys.stderr.isatty()
    _run(spec_path, chosen, typed, console)
    return True


def _run(spec_path: Path, chosen: Mapping[str, Any], typed: Collection[str], console: ui.Console) -> None:
    """The lock, its errors as the click command line reports them: ERROR, TIP and the exit code;
    an interrupt (Ctrl-C) as click's "Aborted!", exit 1."""
    from .errors import EnvsolveError
    from .provider import load_provider
    from .voice import Voice

    try:
        provider = load_provider(fresh=bool(chosen.get("check")))  # a check believes no cache
        lock(provider, spec_path, chosen, typed, render=_never,
             voice=Voice(progress=lambda line: console.progress(f"lock: {line}"), detail=console.detail,
                         warn=console.warn))
    except EnvsolveError as e:
        console.error(e.message, e.tip or "")
        sys.exit(e.exit_code)
    except (EOFError, KeyboardInterrupt):  # Ctrl-C: as click answers it, no traceback
        console.done()
        sys.stderr.write(f"\n{ABORTED}\n")  # the blank line closes the terminal's ^C echo
        sys.exit(ABORTED_EXIT)
    finally:
        console.done()


# what click's command line answers an interrupt with (click.core: a blank line, "Aborted!" on
# stderr, exit 1); the plain lock answers the same, so the two ways in end a Ctrl-C alike
ABORTED = "Aborted!"
ABORTED_EXIT = 1


def _never(*_: object) -> Mapping[Path, str]:
    raise AssertionError("a plain lock has no --render")  # --render is no option the replay reads
