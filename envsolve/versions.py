"""Parsing of driver, CUDA/ROCm and architecture strings.

Each parsed value keeps the raw text for display (``str(Version("535.104.05"))`` would print
``535.104.5``) and an integer key for comparison. Architectures are names, never versions;
:class:`Arch` says where SASS runs and where PTX JIT-compiles (``domain.kernels`` applies it to a
build). :func:`python_admits_minor` is the one rule for a Python range admitting a minor.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, NamedTuple

import msgspec
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

if TYPE_CHECKING:  # packaging's requirement parser: imported only for a line of more than a name and versions
    from packaging.requirements import Requirement

__all__ = [
    "Arch",
    "same_version",
    "Dotted",
    "parse_arch",
    "parse_dotted",
    "parse_driver",
    "parse_python_minor",
    "admits_any",
    "parse_range",
    "python_admits_minor",
    "arch_from_compute_capability",
    "PACKAGE_NAME",
    "PipRequirement",
    "parse_requirement",
    "MAX_DIGITS",
    "LongNumber",
    "long_number",
]

# a version's number of more digits than this is refused before int() reads it: no version has one,
# and int() of a 4300-digit text raises (sys.int_info.str_digits_check_threshold), slowly before that
MAX_DIGITS = 16
_LONG = re.compile(rf"\d{{{MAX_DIGITS + 1},}}")
_DOTTED = re.compile(rf"^\d{{1,{MAX_DIGITS}}}(\.\d{{1,{MAX_DIGITS}}}){{0,3}}$")
_SM = re.compile(rf"^(?:sm|compute)_(\d{{1,{MAX_DIGITS}}})(\d)([af]?)$")
_CC = re.compile(r"^(\d{1,2})\.(\d)([af]?)$")
_GFX = re.compile(r"^gfx[0-9a-f]{3,4}$")
# Intel's GPU targets as its offline compiler (ocloc) names them and torch.xpu.get_arch_list() prints
# them: pvc (Data Center GPU Max), dg2 (Arc A), bmg (Arc B), mtl-h / arl-h / lnl-m / ptl-h (Core Ultra
# graphics), ats-m150 (Flex 170), xe2-hpg and the like.
_INTEL = re.compile(r"^(?:pvc|dg2|bmg|cri|ats-m\d+|(?:mtl|arl|lnl|ptl|wcl|nvl)(?:-[a-z])?|xe\d?-[a-z]+)$")
# Apple's GPUs by chip generation (apple-m1 ... apple-m5): Metal compiles for each at run time.
_APPLE = re.compile(rf"^apple-m\d{{1,{MAX_DIGITS}}}$")


class LongNumber(InvalidSpecifier):
    """A version, range or requirement with a number of more than :data:`MAX_DIGITS` digits
    (a ``ValueError``, and packaging's ``InvalidSpecifier`` for whoever reads a range)."""


def _shown(text: str) -> str:
    """``text`` quoted, shortened to its ends when long (a message never prints 5000 digits)."""
    return repr(text) if len(text) <= 40 else f"{text[:24]!r}...{text[-8:]!r} ({len(text)} characters)"


def long_number(text: str, what: str) -> LongNumber | None:
    """The error of ``text`` (a ``what``) when it has a number of more than :data:`MAX_DIGITS`
    digits, naming it shortened; None for any other text."""
    m = _LONG.search(text)
    if m is None:
        return None
    return LongNumber(f"{what} {_shown(text.strip())} has a number of {len(m.group())} digits; a version's numbers "
                      f"have at most {MAX_DIGITS}: write the version you mean")


class Dotted(msgspec.Struct, frozen=True, eq=False, array_like=True):
    """A dotted numeric version (driver, CUDA, ROCm, cuDNN) compared numerically: equal, ordered
    and hashed by ``key`` alone, whatever ``raw`` writes (535.104.05 is 535.104.5). A struct, as
    :class:`Arch`; these comparisons are its own since a struct compares every field. Kept in the
    compiled data cache as the array ``[key, raw]``."""

    key: tuple[int, ...]
    raw: str

    def __eq__(self, other: object) -> bool:
        return self.key == other.key if isinstance(other, Dotted) else NotImplemented

    def __ne__(self, other: object) -> bool:
        return self.key != other.key if isinstance(other, Dotted) else NotImplemented

    def __hash__(self) -> int:
        return hash(self.key)

    def __lt__(self, other: Dotted) -> bool:
        return self.key < other.key if isinstance(other, Dotted) else NotImplemented

    def __le__(self, other: Dotted) -> bool:
        return self.key <= other.key if isinstance(other, Dotted) else NotImplemented

    def __gt__(self, other: Dotted) -> bool:
        return self.key > other.key if isinstance(other, Dotted) else NotImplemented

    def __ge__(self, other: Dotted) -> bool:
        return self.key >= other.key if isinstance(other, Dotted) else NotImplemented

    def __str__(self) -> str:
        return self.raw

    @property
    def major(self) -> int:
        return self.key[0]

    @property
    def minor(self) -> int:
        return self.key[1] if len(self.key) > 1 else 0

    def prefix(self, n: int) -> tuple[int, ...]:
        """The first ``n`` components, zero-padded (``12.8.1`` -> ``(12, 8)`` for n=2)."""
        return (self.key + (0,) * n)[:n]


def parse_dotted(text: str, what: str = "version") -> Dotted:
    """Parse ``"535.104.05"`` or ``"12.8"``; raise ValueError naming ``what`` otherwise."""
    raw = text.strip()
    if not _DOTTED.match(raw):
        if (long := long_number(raw, what)) is not None:
            raise long
        raise ValueError(f"{what} {_shown(text)} is not a dotted number such as 12.8 or 535.104.05")
    return Dotted(key=tuple(int(p) for p in raw.split(".")), raw=raw)


def parse_driver(text: str) -> Dotted:
    """Parse an NVIDIA driver version such as ``"535.104.05"`` (branch.minor[.patch]); Windows'
    own form of it (``32.0.15.7216``, as Device Manager shows it) is read as NVIDIA writes it
    (``572.16``: the last five digits of the last two fields)."""
    d = parse_dotted(text, "driver version")
    if len(d.key) == 4 and 10 <= d.key[0] < 100:
        digits = f"{d.key[2]}{d.key[3]:04d}"[-5:]
        d = parse_dotted(f"{int(digits[:3])}.{digits[3:]}", "driver version")
    if len(d.key) < 2 or d.key[0] < 100:
        raise ValueError(
            f"driver version {text!r} is not an NVIDIA driver version such as 535.104.05"
        )
    return d


_PYTHON_MINOR = re.compile(rf"^(\d{{1,{MAX_DIGITS}}})\.(\d{{1,{MAX_DIGITS}}})$")


@functools.cache
def parse_python_minor(text: str) -> tuple[int, int]:
    """Parse ``"3.12"`` into ``(3, 12)``; remembered (a solve sorts the same few minors thousands
    of times)."""
    m = _PYTHON_MINOR.match(text.strip())
    if not m:
        raise long_number(text, "Python version") or ValueError(
            f"Python version {_shown(text)} is not of the form 3.12")
    return int(m.group(1)), int(m.group(2))


def admits_any(raw: str) -> bool:
    """Whether a range as written admits every version: ``""`` or ``"*"`` (the spec's "any")."""
    return raw.strip() in ("", "*")


def parse_range(raw: str) -> SpecifierSet:
    """The specifier a range as written stands for, ``"*"`` admitting everything; raises
    ``InvalidSpecifier`` as packaging does, and :class:`LongNumber` (one) for a number of more
    than :data:`MAX_DIGITS` digits, which packaging reads only when it compares, with a traceback."""
    if (long := long_number(raw, "range")) is not None:
        raise long
    return SpecifierSet("" if admits_any(raw) else raw.strip())


class PipRequirement(NamedTuple):
    """A ``[packages] pip`` line of the simple kind: a name and version specifiers, nothing else
    (what packaging's ``Requirement`` gives for it: no extras, marker or URL)."""

    name: str
    specifier: SpecifierSet
    extras: frozenset[str] = frozenset()
    marker: None = None
    url: None = None


PACKAGE_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")  # a project's name (PEP 508 / PEP 503)
# a project name and version specifiers only, with PEP 508's white space (spaces and tabs): a
# subset of its grammar, read without packaging's requirement parser (which costs a lock more to
# import than it takes to solve); the versions are packaging's SpecifierSet's to check
_SPECIFIER = r"[ \t]*(?:===|~=|==|!=|<=|>=|<|>)[ \t]*[A-Za-z0-9._*+!-]+[ \t]*"
_SIMPLE_REQUIREMENT = re.compile(rf"[ \t]*({PACKAGE_NAME.pattern})[ \t]*((?:{_SPECIFIER})(?:,{_SPECIFIER})*)?")


def parse_requirement(line: str) -> Requirement | PipRequirement:
    """A pip requirement line as packaging reads it; raises packaging's ``InvalidRequirement`` (a
    ``ValueError``) as packaging does. A line of the simple kind (a name and version specifiers:
    ``numpy<2``) is read here, its specifiers by packaging's ``SpecifierSet``; any other goes to
    packaging's ``Requirement`` (``tests/test_properties.py`` holds both to the same answers). A
    range with a number of more than :data:`MAX_DIGITS` digits raises :class:`LongNumber`."""
    m = _SIMPLE_REQUIREMENT.fullmatch(line)
    if m is not None:
        if (long := long_number(m.group(2) or "", f"requirement {m.group(1)}: range")) is not None:
            raise long
        try:
            return PipRequirement(m.group(1), SpecifierSet(m.group(2) or ""))
        except InvalidSpecifier:
            pass  # packaging's parser says what is wrong
    from packaging.requirements import Requirement

    req = Requirement(line)
    if (long := long_number(str(req.specifier), f"requirement {req.name}: range")) is not None:
        raise long  # (a URL's digits are its own: only the versions are compared)
    return req


def python_admits_minor(spec: SpecifierSet | str, minor: str) -> bool:
    """Whether a Python range admits the CPython minor ``X.Y``: it does when it admits any patch of
    it (``>=3.12.1,<3.13`` admits 3.12; so does ``==3.12.5``). The solver, the index readers, the
    steering and the image matrix all ask this one question; an unreadable range admits everything
    (whoever parsed it has reported it)."""
    if isinstance(spec, str):
        try:
            spec = parse_range(spec)
        except InvalidSpecifier:
            return True
    return any(spec.contains(f"{minor}.{patch}", prereleases=True) for patch in _patches_to_try(spec, minor))


def _patches_to_try(spec: SpecifierSet, minor: str) -> set[int]:
    """Patch numbers of ``minor`` at which the answer of ``spec`` can change: 0, a patch above every
    bound, and each patch a specifier names for this minor with its two neighbours."""
    key = parse_python_minor(minor)
    patches = {0, 10_000}
    for s in spec:
        try:
            v = Version(s.version.rstrip(".*"))
        except InvalidVersion:
            continue
        if v.release[:2] == key and len(v.release) > 2:
            patches.update(p for p in (v.release[2] - 1, v.release[2], v.release[2] + 1) if p >= 0)
    return patches


class Arch(msgspec.Struct, frozen=True, order=True):
    """A GPU architecture: ``sm_XY`` (NVIDIA compute capability X.Y), ``gfxNNN`` (AMD), an Intel
    AOT target (``bmg``) or an Apple chip generation (``apple-m4``). Compared and ordered by its
    fields in turn (a struct: defined and compared in C, where a dataclass took
    milliseconds to define).

    ``suffix`` is ``"a"`` for arch-specific code (runs on exactly that compute capability) or
    ``"f"`` for family-specific code; plain SASS runs on the same major at an equal or higher
    minor.
    """

    vendor: str
    major: int
    minor: int
    suffix: str
    name: str

    @property
    def compute_capability(self) -> str:
        return f"{self.major}.{self.minor}" if self.vendor == "nvidia" else ""

    def __str__(self) -> str:
        return self.name

    def sass_runs_on(self, gpu: Arch) -> bool:
        """Whether SASS compiled for this arch executes on ``gpu``."""
        if self.vendor != "nvidia" or gpu.vendor != "nvidia" or self.major != gpu.major:
            return False
        if self.suffix == "a":
            return self.minor == gpu.minor
        return self.minor <= gpu.minor

    def ptx_jits_to(self, gpu: Arch) -> bool:
        """Whether PTX for this arch can be JIT-compiled for ``gpu``: plain PTX for its arch and any
        newer one, whatever CUDA made it; arch-specific PTX (``compute_90a``) for exactly its
        compute capability; family-specific PTX (``compute_100f``) for its major at an equal or
        higher minor."""
        if self.vendor != "nvidia" or gpu.vendor != "nvidia":
            return False
        if self.suffix == "a":
            return (self.major, self.minor) == (gpu.major, gpu.minor)
        if self.suffix == "f":
            return self.major == gpu.major and self.minor <= gpu.minor
        return (self.major, self.minor) <= (gpu.major, gpu.minor)


def arch_from_compute_capability(major: int, minor: int, suffix: str = "") -> Arch:
    return Arch(
        vendor="nvidia", major=major, minor=minor, suffix=suffix, name=f"sm_{major}{minor}{suffix}"
    )


@functools.lru_cache(maxsize=1024)
def parse_arch(text: str) -> Arch:
    """Parse ``sm_80``, ``compute_90``, ``8.0``, ``9.0a``, ``gfx942``, ``bmg`` or ``apple-m4`` into an :class:`Arch`.

    ``compute_XY`` names the same architecture as ``sm_XY`` (whether the code is PTX is the
    caller's business). Remembered by its text: the data names a few dozen archs ten thousand
    times, and an :class:`Arch` is frozen.
    """
    raw = text.strip().lower()
    m = _SM.match(raw)
    if m:
        return arch_from_compute_capability(int(m.group(1)), int(m.group(2)), m.group(3))
    m = _CC.match(raw)
    if m:
        return arch_from_compute_capability(int(m.group(1)), int(m.group(2)), m.group(3))
    if _GFX.match(raw):
        # gfx942 -> major 9, the rest as an opaque stepping; AMD code objects are per target.
        digits = raw[3:]
        return Arch(vendor="amd", major=int(digits[:-2], 16), minor=int(digits[-2:], 16),
                    suffix="", name=raw)
    if _INTEL.match(raw):
        return Arch(vendor="intel", major=0, minor=0, suffix="", name=raw)
    if _APPLE.match(raw):
        return Arch(vendor="apple", major=int(raw[7:]), minor=0, suffix="", name=raw)
    raise ValueError(
        f"{_shown(text)} is not a GPU architecture: write sm_80, a compute capability such as 8.0, "
        "an AMD target such as gfx942, an Intel one such as bmg, or apple-m4"
    )


def same_version(have: str, want: str) -> bool:
    """PEP 440 equality of an installed and a locked version, local labels included (``2.8.0+cpu``
    is not ``2.8.0+cu128``; ``4.12`` is ``4.12.0``); text that is no version compared as text.
    What `envsolve sync` installs by and `envsolve doctor` checks by."""
    try:
        return Version(have) == Version(want)
    except InvalidVersion:
        return have == want
