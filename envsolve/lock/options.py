"""The options of `envsolve lock`, declared once: the command line (:mod:`envsolve.cli`) makes its
click options from :data:`LOCK_OPTIONS`, and the warm path (:mod:`envsolve.lock.replay`) reads
argv by the same table. The replay imports it before anything else, so it imports nothing: no
dataclasses, no typing (together they cost the warm path about a third of its time).
"""

from __future__ import annotations

__all__ = ["KINDS", "LOCK_OPTIONS", "Option", "option_named"]

# flag: on or off | path: a file path | choice: one of `choices` | text: any string | multiple: repeatable text
KINDS = ("flag", "path", "choice", "text", "multiple")


class Option:
    """One option of `envsolve lock`: its spellings, the parameter it sets, and whether the replay
    reads it (a request it can answer from its cache differs only by those; any other option
    sends the command to a full solve). A value: set once, never changed."""

    __slots__ = ("names", "dest", "help", "kind", "choices", "default", "metavar", "envvar", "replayed")

    def __init__(self, *, names: tuple[str, ...], dest: str, help: str, kind: str = "flag",
                 choices: tuple[str, ...] = (), default: str = "", metavar: str = "", envvar: str = "",
                 replayed: bool = False) -> None:
        assert kind in KINDS, kind
        self.names = names
        self.dest = dest
        self.help = help
        self.kind = kind  # one of KINDS
        self.choices = choices
        self.default = default
        self.metavar = metavar
        self.envvar = envvar
        self.replayed = replayed

    @property
    def unset(self) -> object:
        """What the option holds when the command line does not give it (click's options are made
        with it, and the plain lock fills the options it was not given with it)."""
        return {"flag": False, "path": None, "multiple": ()}.get(self.kind, self.default)

    def __repr__(self) -> str:
        return f"Option({'/'.join(self.names)} -> {self.dest}, {self.kind})"


LOCK_OPTIONS: tuple[Option, ...] = (
    Option(names=("-o", "--output"), dest="output", kind="path", replayed=True,
           help="Lock path (default: envsolve.lock beside the spec)."),
    Option(names=("--format",), dest="fmt", kind="choice", choices=("toml", "json"), default="toml", replayed=True,
           help="json also prints the lock's structure on stdout."),
    Option(names=("--check",), dest="check", help="Exit 1, changing nothing, when the lock on disk is stale."),
    Option(names=("--render",), dest="then_render", help="Then render the lock's artifacts (see `render`)."),
    Option(names=("--host",), dest="host", help="Solve the default target for this machine's GPUs and driver "
           "(see `envsolve detect`)."),
    Option(names=("--frameworks-only",), dest="frameworks_only", envvar="ENVSOLVE_FRAMEWORKS_ONLY", replayed=True,
           help="Lock only the frameworks (the compatibility solve), with no network; the default "
                "locks every package of every environment with hashes (uv, from the package indexes)."),
    Option(names=("--offline",), dest="offline", help="Resolve from the cache only (a second lock of the same spec)."),
    Option(names=("--exclude-newer",), dest="exclude_newer", kind="text", metavar="DATE",
           help="Ignore files uploaded after DATE (RFC 3339, e.g. 2025-06-01T00:00:00Z) in the full resolve."),
    Option(names=("--upgrade-package", "-P"), dest="upgrade_packages", kind="multiple", metavar="NAME",
           help="Move NAME to the newest version that fits and keep every other package of the lock on "
                "disk (repeatable)."),
    Option(names=("-U", "--upgrade"), dest="upgrade", help="Move every package to the newest version that fits."),
    Option(names=("--upgrade-images",), dest="upgrade_images",
           help="Read each base image's digest from its registry anew (the FROM line pins it); by default a "
                "lock keeps the digest the lock on disk recorded for the same image."),
    Option(names=("--same-versions",), dest="same_versions",
           help="One version of each framework on every target (as [project] same-versions = true)."),
)

_BY_NAME = {name: o for o in LOCK_OPTIONS for name in o.names}


def option_named(arg: str) -> tuple[Option | None, str | None]:
    """The option an argument spells and the value it carries (``--format=json``; only a long
    option takes its value after ``=``, as click reads it), or (None, None) for no option."""
    name, eq, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
    return _BY_NAME.get(name), (value if eq else None)
