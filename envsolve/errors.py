"""The one error tree of envsolve.

User errors carry a message that says what is wrong and where, and a tip that says what to
do next; the CLI prints them without a traceback and maps them to exit codes.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

__all__ = [
    "EnvsolveError",
    "SpecError",
    "MatrixError",
    "LockError",
    "RefreshError",
    "MissingProject",
    "Unsatisfiable",
    "Clash",
    "Problem",
    "Problems",
    "ResolveError",
    "CheckFailed",
]


class EnvsolveError(Exception):
    """Base of every error envsolve raises on purpose."""

    exit_code = 2

    def __init__(self, message: str, tip: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.tip = tip

    def __str__(self) -> str:
        return self.message


class Problem(msgspec.Struct, frozen=True):
    """One problem found while validating a file: where, and what."""

    file: str
    where: str
    message: str

    def __str__(self) -> str:
        # a key with a line break (a TOML quoted key) is shown escaped, on one line
        where = self.where if self.where.isprintable() else repr(self.where)[1:-1]
        loc = f"{self.file}: {where}" if where else self.file
        return f"{loc}: {self.message}"


class Problems:
    """The one problem collector: parsers add every problem they find, then raise them at once."""

    def __init__(self, file: str = "") -> None:
        self.file = file
        self.items: list[Problem] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        """How many problems so far (a reader compares it before and after one row)."""
        return len(self.items)

    def add(self, file: str, where: str, message: str) -> None:
        """A problem in ``file`` at ``where`` (a key path such as ``hardware.gpus[0]``)."""
        self.items.append(Problem(file, where, message))

    def bad(self, where: str, message: str) -> None:
        """A problem in this collector's own file."""
        self.add(self.file, where, message)

    def extend(self, problems: Sequence[Problem]) -> None:
        self.items.extend(problems)

    def raise_if_any(self, cls: type[_ManyProblems], tip: str | None = None) -> None:
        if self.items:
            raise cls(self.items, tip=tip)


class _ManyProblems(EnvsolveError):
    def __init__(self, problems: Sequence[Problem], tip: str | None = None) -> None:
        self.problems = tuple(problems)
        lines = [str(p) for p in self.problems]
        head = lines[0] if len(lines) == 1 else f"{len(lines)} problems:\n  " + "\n  ".join(lines)
        super().__init__(head, tip)


class SpecError(_ManyProblems):
    """project.toml (or another user input) is malformed or names unknown things."""


class MatrixError(_ManyProblems):
    """The compatibility data under matrices/ is malformed or inconsistent."""


class LockError(EnvsolveError):
    """A lock file is missing, hand-edited, or of another format version: one message, or every
    problem one read of the lock found. A lock's problem reads on from its key path, without a
    colon (``envsolve.lock: environments[0].python must be a string, not 3``)."""

    def __init__(self, message: str | Sequence[Problem], tip: str | None = None) -> None:
        self.problems: tuple[Problem, ...] = () if isinstance(message, str) else tuple(message)
        super().__init__(message if isinstance(message, str) else _lock_lines(self.problems), tip)


def _lock_lines(problems: Sequence[Problem]) -> str:
    """A lock's problems as the message: the one problem, or their count and one a line."""
    lines = [_lock_line(p) for p in problems]
    return lines[0] if len(lines) == 1 else f"{len(lines)} problems:\n  " + "\n  ".join(lines)


def _lock_line(problem: Problem) -> str:
    """One problem of a lock: ``file: where message`` (``file: message`` for the file as a whole)."""
    where = problem.where if problem.where.isprintable() else repr(problem.where)[1:-1]
    return f"{problem.file}: {where} {problem.message}" if where else f"{problem.file}: {problem.message}"


class RefreshError(EnvsolveError):
    """The package index could not be read (unreachable, missing project, altered file)."""

    exit_code = 1


class ResolveError(EnvsolveError):
    """The full resolve failed: a conflict among the packages, an index that cannot be reached,
    or (offline) a package missing from the cache."""

    exit_code = 1


class CheckFailed(EnvsolveError):
    """A check found what it looks for (exit 1): a stale lock, an invalid matrix cell or image,
    data that disagrees with the index, a host that does not meet its lock."""

    exit_code = 1


class MissingProject(RefreshError):
    """The package index has no page for a project (HTTP 404)."""


class Clash(msgspec.Struct, frozen=True):
    """A fact that rules candidates out, in GPU terms."""

    subject: str  # what was rejected, e.g. "torch 2.5.1"
    reason: str  # why, e.g. "no build for RTX 5090 (sm_120): ..."


class Unsatisfiable(EnvsolveError):
    """No resolution meets the spec; carries the clashing facts and the nearest changes."""

    exit_code = 1

    def __init__(
        self,
        target: str,
        clashes: Sequence[Clash],
        fixes: Sequence[str] = (),
    ) -> None:
        self.target = target
        self.clashes = tuple(clashes)
        self.fixes = tuple(fixes)
        lines = [f"target '{target}' cannot be satisfied:"]
        lines += [f"  - {c.subject}: {c.reason}" for c in self.clashes]
        tip = None
        if self.fixes:
            tip = "what would work: " + "; ".join(self.fixes)
        super().__init__("\n".join(lines), tip)
