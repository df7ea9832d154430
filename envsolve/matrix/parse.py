"""A matrix file (``images.toml`` of `envsolve matrix`) into a frozen :class:`MatrixSpec`: axes,
optional fixed GPUs and driver, ``[[include]]`` cells that must be valid, ``[[exclude]]``
patterns, and ``[image]`` settings. Each section has its own small parser, all reading through
one :class:`~envsolve.tables.TableReader`; every problem is collected and raised at once as one
:class:`~envsolve.errors.SpecError`.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

import msgspec
import msgspec.structs

from ..domain import (
    APPLE_PLATFORM,
    DEFAULT_PLATFORM,
    FRAMEWORKS,
    KERAS_BACKENDS,
    LINUX_PLATFORMS,
    PLATFORMS,
    Platform,
    Vendor,
)
from ..errors import Problem, SpecError
from ..provider import Provider
from ..spec import FLAVORS, GpuReq, SectionParser, host_problem
from ..tables import closest, load_toml, word
from ..versions import parse_driver, parse_python_minor

__all__ = ["AXES", "Cell", "MatrixSpec", "Memo", "cell_vendor", "check_size", "keys", "parse_matrix"]

_REPOSITORY_DEFAULT = "envsolve-matrix"

# Every key of a matrix file with what it means, once: the parser reads by these tables (anything
# else is an unknown key) and `envsolve matrix --help` lists them (see :func:`keys`).
_SECTION_MEANINGS = {
    "matrix": "the axes (each a list of values; the cells are their product) and the hardware every cell serves",
    "include": "a cell that must be valid, as axis = value pairs (one outside the product names every axis); "
               "--check exits 1 when one is not",
    "exclude": "axis = value pairs; the cells matching all of them are left out",
    "image": "how the images are named and for which platforms they are built",
}
_AXIS_MEANINGS = {
    "python": 'axis: Python minors, e.g. ["3.11", "3.12"]',
    **{fw: f"axis: {fw} releases, as the data writes them (e.g. 2.7.1 for torch)"
       for fw in FRAMEWORKS},
    "accelerator": "axis: cpu, cuda, cuXYZ (cu128), rocm, rocmX.Y (rocm6.2), xpu (Intel GPUs) or mps (Apple's GPU); "
                   f"without it a cell is cpu, on {APPLE_PLATFORM} mps",
    "os": "axis: the base image's OS, e.g. ubuntu22.04",
    "flavor": f"axis: the base image's flavor: {', '.join(FLAVORS)}",
    "platform": f"axis: {' or '.join(PLATFORMS)} (Docker's names); a Windows or macOS cell gets no image: "
                "CI runs its smoke test on GitHub's runner of that platform",
}
_HARDWARE_MEANINGS = {  # keys of [matrix] that are no axis
    "gpus": 'the GPUs every cell must run on, e.g. ["A100", "H100"] (models, sm_90 or gfx942)',
    "driver": "the oldest driver of the machines that run the images, e.g. 535.104.05",
    "keras_backend": f"the Keras backend of the keras cells: {', '.join(KERAS_BACKENDS)}",
}
_IMAGE_MEANINGS = {
    "repository": f"the image repository, lower case, no tag (default {_REPOSITORY_DEFAULT})",
    "platforms": f"the platforms each image is built for: {' and/or '.join(LINUX_PLATFORMS)} "
                 f"(default {DEFAULT_PLATFORM})",
}

AXES = tuple(_AXIS_MEANINGS)
_SECTIONS = tuple(_SECTION_MEANINGS)
_HARDWARE = tuple(_HARDWARE_MEANINGS)
_IMAGE_KEYS = tuple(_IMAGE_MEANINGS)


def keys() -> list[tuple[str, str]]:
    """Every key of a matrix file, as the parser names it in its messages (``matrix.python``), with
    its meaning: the sections, then each section's keys."""
    brackets = {"include": "[[include]]", "exclude": "[[exclude]]"}
    out: list[tuple[str, str]] = []
    for section, meaning in _SECTION_MEANINGS.items():
        out.append((brackets.get(section, f"[{section}]"), meaning))
        inner = {"matrix": {**_AXIS_MEANINGS, **_HARDWARE_MEANINGS}, "image": _IMAGE_MEANINGS}.get(section, {})
        out += [(f"{section}.{key}", text) for key, text in inner.items()]
    return out


_ACCEL = re.compile(r"cpu|cuda|cu\d{2,3}|rocm|rocm\d+(\.\d+){0,2}|xpu|mps")
_ACCEL_TEXT = "cpu, cuda, cuXYZ (cu128), rocm, rocmX.Y (rocm6.2), xpu or mps"
# an accelerator value's first letters -> whose GPU the cell runs on
_ACCEL_VENDOR: tuple[tuple[str, Vendor], ...] = (("cpu", "cpu"), ("cu", "nvidia"), ("rocm", "amd"), ("xpu", "intel"),
                                                 ("mps", "apple"))
# an image repository: registry host[:port]/path segments, lower case (Docker's reference grammar)
_REPOSITORY = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*")
_OS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")

Pattern = tuple[tuple[str, str], ...]  # (axis, value) pairs in axis order


class Cell(msgspec.Struct, frozen=True):
    """One combination of axis values, in axis order."""

    values: tuple[tuple[str, str], ...]
    included: bool = False  # named by an [[include]]: must be valid

    def get(self, axis: str) -> str:
        return next((value for name, value in self.values if name == axis), "")

    @property
    def id(self) -> str:
        """Stable and usable as a bake target name and a folder: ``py3_12-torch2_7_1-cu128``."""
        return "-".join(map(_ID_PARTS.__getitem__, self.values))


_K = TypeVar("_K")
_V = TypeVar("_V")


class Memo(dict[_K, _V]):
    """``make(key)``, made once per key: ``memo[key]`` makes a missing value and keeps it. The table
    is emptied when it holds ``limit`` entries, so memory stays flat whatever the keys. A matrix
    has few values and many cells: ``map(memo.__getitem__, keys)`` looks up a cell's parts with
    no Python call per hit."""

    def __init__(self, make: Callable[[_K], _V], limit: int) -> None:
        super().__init__()
        self._make, self._limit = make, limit

    def __missing__(self, key: _K) -> _V:
        if len(self) >= self._limit:
            self.clear()
        value = self[key] = self._make(key)
        return value


def _id_part(pair: tuple[str, str]) -> str:
    """One axis value in a cell's id."""
    axis, value = pair
    prefix = "py" if axis == "python" else axis if axis in FRAMEWORKS else ""
    return re.sub(r"[^A-Za-z0-9_-]", "_", f"{prefix}{value}")


_ID_PARTS: Memo[tuple[str, str], str] = Memo(_id_part, 256)  # (axis, value) -> its part of a cell id


class MatrixSpec(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    axes: tuple[tuple[str, tuple[str, ...]], ...]
    includes: tuple[Pattern, ...] = ()
    excludes: tuple[Pattern, ...] = ()
    gpus: tuple[GpuReq, ...] = ()
    driver: str = ""
    keras_backend: str = ""
    repository: str = _REPOSITORY_DEFAULT
    platforms: tuple[Platform, ...] = (DEFAULT_PLATFORM,)

    def value_of(self, axis: str) -> Callable[[tuple[tuple[str, str], ...]], str]:
        """:meth:`Cell.get` of ``axis`` by its place in a cell's values (every cell has the
        matrix's axes, in order): no search per cell. "" when the matrix has no such axis."""
        at = next((i for i, (name, _) in enumerate(self.axes) if name == axis), None)
        if at is None:
            return lambda values: ""
        return lambda values: values[at][1]

    def cells(self) -> list[Cell]:
        """The product of the axes, minus excludes, plus includes (marked must-be-valid)."""
        return list(self.iter_cells())

    def iter_cells(self) -> Iterator[Cell]:
        """:meth:`cells` one at a time, in the same order; without ``[[include]]`` rows nothing
        is held, so a matrix of a million cells streams."""
        kept = self.kept(map(Cell, self.product_values()))
        if not self.includes:
            yield from kept
            return
        out: dict[tuple[tuple[str, str], ...], Cell] = {c.values: c for c in kept}
        for inc in self.includes:
            out.update((c.values, msgspec.structs.replace(c, included=True)) for c in self._included(inc))
        yield from out.values()

    def excluded(self, cell: Cell) -> bool:
        """Whether an [[exclude]] pattern leaves ``cell`` out."""
        return any(_matches(cell, ex) for ex in self.excludes)

    def kept(self, cells: Iterable[Cell]) -> Iterator[Cell]:
        """``cells`` less those an [[exclude]] pattern leaves out."""
        return itertools.filterfalse(self.excluded, cells) if self.excludes else iter(cells)

    def product_values(self) -> Iterator[tuple[tuple[str, str], ...]]:
        """The values of each cell of the product, in order (without [[include]] and [[exclude]]);
        each (axis, value) pair made once and shared by the cells: the product makes only the tuples."""
        pairs = [[(axis, v) for v in values] for axis, values in self.axes]
        return itertools.product(*pairs)

    def at_most(self) -> int:
        """How many cells :meth:`iter_cells` gives at most, counted without making one: the product
        of the axes, less the cells of the [[exclude]] that leaves out most (the others may overlap
        it), plus one for each [[include]] outside the product (one inside may bring an excluded
        cell back: with any, nothing is taken off)."""
        values = dict(self.axes)
        outside = sum(1 for inc in self.includes if not all(v in values[k] for k, v in inc))
        excluded = max(map(self._matching, self.excludes), default=0) if not self.includes else 0
        return math.prod(len(v) for _, v in self.axes) - excluded + outside

    def _matching(self, pattern: Pattern) -> int:
        """The cells of the product ``pattern`` matches."""
        named = dict(pattern)
        return math.prod(len(v) if axis not in named else int(named[axis] in v) for axis, v in self.axes)

    def _included(self, inc: Pattern) -> list[Cell]:
        """The cells of the product an [[include]] names, or the one cell outside it that it names
        whole (that it names every axis is checked when parsing)."""
        hits = [c for c in map(Cell, self.product_values()) if _matches(c, inc)]
        order = dict(inc)
        return hits or [Cell(tuple((a, order[a]) for a, _ in self.axes))]


def cell_vendor(accelerator: str, platform: str) -> Vendor:
    """Whose GPU a cell of ``accelerator`` (an axis value, "" without the axis) runs on: the
    accelerator's; without one, Apple's on Apple silicon (as a project's darwin/arm64 target
    without ``vendor``), else none."""
    if not accelerator:
        return "apple" if platform == APPLE_PLATFORM else "cpu"
    return next((v for prefix, v in _ACCEL_VENDOR if accelerator.startswith(prefix)), "cpu")


def _matches(cell: Cell, pattern: Iterable[tuple[str, str]]) -> bool:
    return all(cell.get(k) == v for k, v in pattern)


def _python_value(value: str) -> str | None:
    try:
        parse_python_minor(value)
    except ValueError as e:
        return str(e)
    return None


# axis (but the frameworks, whose values are releases of the data) -> why a value is not one of it
_VALUE_PROBLEM: dict[str, Callable[[str], str | None]] = {
    "python": _python_value,
    "accelerator": lambda v: None if _ACCEL.fullmatch(v) else (
        f"{v!r} is not an accelerator: {_ACCEL_TEXT}"),
    "flavor": lambda v: None if v in FLAVORS else f"{v!r} is not one of {', '.join(FLAVORS)}",
    "os": lambda v: None if _OS.fullmatch(v) else f"{v!r} is not an OS name such as ubuntu22.04",
    "platform": lambda v: None if v in PLATFORMS else (
        f"{v!r} is not a platform: {' or '.join(PLATFORMS)} (Docker's names)"),
}


class _MatrixParser(SectionParser):
    """The section parsers of a matrix file; each adds what is wrong to one collector."""

    def sections(self, data: dict[str, Any]) -> None:
        for key in data:
            self.unknown_section(key, _SECTIONS)

    def axes(self, m: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
        axes = [axis for key, value in m.items() if key not in _HARDWARE and (axis := self._axis(key, value))]
        axes.sort(key=lambda av: AXES.index(av[0]))
        if not any(a in FRAMEWORKS for a, _ in axes):
            self.bad("matrix", "names no framework axis (torch, tensorflow, jax or keras)")
        return axes

    def _axis(self, key: str, value: Any) -> tuple[str, tuple[str, ...]] | None:
        if key not in AXES:
            near = closest(key, AXES)
            tip = f"; did you mean '{near}'?" if near else ""
            self.bad(f"matrix.{key}", f"unknown axis (axes: {', '.join(AXES)}; also {', '.join(_HARDWARE)}){tip}")
            return None
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            self.bad(f"matrix.{key}", f"must be a non-empty list of strings, not {value!r}")
            return None
        for v in value:
            self._value_ok(f"matrix.{key}", key, v)
        return key, tuple(dict.fromkeys(value))

    def _value_ok(self, where: str, axis: str, value: str) -> bool:
        """Whether ``value`` is a value of ``axis``; the problem added at ``where`` when it is not."""
        msg = self._release_problem(axis, value) if axis in FRAMEWORKS else _VALUE_PROBLEM[axis](value)
        if msg is not None:
            self.bad(where, msg)
        return msg is None

    def _release_problem(self, framework: str, value: str) -> str | None:
        releases = self.provider.releases(framework)
        if any(r.raw == value for r in releases):
            return None
        near = [r.raw for r in releases if r.raw.startswith(value.rsplit(".", 1)[0])][:3]
        tip = f"; did you mean {', '.join(near)}?" if near else ""
        return f"{framework} {value!r} is not a release in the data{tip}"

    def patterns(self, data: dict[str, Any], section: str, names: list[str]) -> list[Pattern]:
        """The [[include]] or [[exclude]] rows, each as (axis, value) pairs in axis order."""
        rows = (self._pattern(row, f"{section}[{i}]", names) for i, row in enumerate(self.rows(data, section)))
        return [p for p in rows if p is not None]

    def _pattern(self, row: Any, where: str, names: list[str]) -> Pattern | None:
        if not isinstance(row, dict) or not row:
            self.bad(where, "must be a table of axis = value")
            return None
        pattern = [(k, v) for k, v in row.items() if self._pattern_value(f"{where}.{k}", k, v, names)]
        return tuple(sorted(pattern, key=lambda kv: names.index(kv[0])))

    def _pattern_value(self, where: str, axis: str, value: Any, names: list[str]) -> bool:
        if axis not in names:
            self.bad(where, f"is not an axis of [matrix] (axes: {', '.join(names)})")
            return False
        if not isinstance(value, str):
            self.bad(where, f"must be a string, not {value!r}")
            return False
        return self._value_ok(where, axis, value)

    def includes_inside(self, includes: list[Pattern], axes: list[tuple[str, tuple[str, ...]]]) -> None:
        """Each [[include]] outside the product names every axis."""
        names = {a for a, _ in axes}
        values = dict(axes)
        for i, inc in enumerate(includes):
            named = {k for k, _ in inc}
            if named != names and not all(v in values[k] for k, v in inc):
                self.bad(f"include[{i}]", f"is outside the product, so it must name every axis "
                         f"(missing: {', '.join(sorted(names - named))})")

    def hosts(self, axes: list[tuple[str, tuple[str, ...]]], includes: list[Pattern],
              platforms: tuple[Platform, ...]) -> None:
        """What the file itself makes impossible on a host (the project spec's rule, spec's
        ``host_problem``): an [[include]] naming such a cell, an accelerator or platform value
        that goes with no value of the other axis. A product that merely holds such cells prunes
        them, each with its reason."""
        values = dict(axes)
        plats = tuple(p for p in values.get("platform", platforms[:1]) if p in PLATFORMS)
        accels = tuple(a for a in values.get("accelerator", ("",)) if not a or _ACCEL.fullmatch(a))
        for i, inc in enumerate(includes):
            self._include_host(f"include[{i}]", dict(inc), plats, accels)
        for axis, own, other in (("accelerator", accels, plats), ("platform", plats, accels)):
            if axis in values and other:
                self._axis_hosts(axis, own, other)

    def _include_host(self, where: str, named: dict[str, str], plats: tuple[str, ...],
                      accels: tuple[str, ...]) -> None:
        """An [[include]] whose platform and accelerator (each written, or the axis's only value)
        cannot go together."""
        p = named.get("platform", plats[0] if len(plats) == 1 else None)
        a = named.get("accelerator", accels[0] if len(accels) == 1 else None)
        key = "accelerator" if "accelerator" in named else "platform"
        if p is None or a is None or key not in named:
            return
        if why := host_problem(_platform(p), cell_vendor(a, p)):
            self.bad(f"{where}.{key}", f"{named[key]!r}: {_pair_text(a, p)}: {why}")

    def _axis_hosts(self, axis: str, own: tuple[str, ...], other: tuple[str, ...]) -> None:
        """Each value of ``axis`` that goes with no value of the other axis (platform <-> accelerator)."""
        for v in own:
            pairs = [(v, o) if axis == "platform" else (o, v) for o in other]
            whys = [host_problem(_platform(p), cell_vendor(a, p)) for p, a in pairs]
            if all(whys):
                self.bad(f"matrix.{axis}", f"{v!r} makes no valid cell with {', '.join(map(repr, other))}: {whys[0]}")

    def hardware(self, m: dict[str, Any]) -> tuple[tuple[GpuReq, ...], str, str]:
        """(gpus, driver, keras_backend) of [matrix]."""
        raw_gpus = m.get("gpus", [])
        gpus: tuple[GpuReq, ...] = ()
        if isinstance(raw_gpus, list):
            gpus = self.gpus(raw_gpus, "matrix.gpus")
        else:
            self.bad("matrix.gpus", "must be a list of GPU names")
        return gpus, self._driver(m.get("driver", "")), self._keras_backend(m.get("keras_backend", ""))

    def _driver(self, driver: Any) -> str:
        if driver:
            self.check(str(driver), "matrix.driver", parse_driver)
        return str(driver)

    def _keras_backend(self, backend: Any) -> str:
        if backend and backend not in KERAS_BACKENDS:
            self.bad("matrix.keras_backend", f"{backend!r} is not a Keras backend ({', '.join(KERAS_BACKENDS)})")
        return str(backend)

    def image(self, image: Any) -> tuple[str, tuple[Platform, ...]]:
        """(repository, platforms) of [image]; both reach generated files, so both are checked."""
        if not isinstance(image, dict):
            self.bad("image", f"must be a table [image], not {image!r}")
            return _REPOSITORY_DEFAULT, (DEFAULT_PLATFORM,)
        self.unknown_keys(image, "image", _IMAGE_KEYS)
        return self._repository(image.get("repository", _REPOSITORY_DEFAULT)), self._platforms(image)

    def _repository(self, repository: Any) -> str:
        if isinstance(repository, str) and _REPOSITORY.fullmatch(repository):
            return repository
        self.bad("image.repository", f"{repository!r} is not an image repository such as "
                 "'registry.example/team/ml' (lower case, no tag, no whitespace)")
        return _REPOSITORY_DEFAULT

    def _platforms(self, image: dict[str, Any]) -> tuple[Platform, ...]:
        """Images are Linux: a Windows or macOS cell is a value of the platform axis."""
        raw = image.get("platforms", [DEFAULT_PLATFORM])
        platforms = [word(p, LINUX_PLATFORMS) for p in raw] if isinstance(raw, list) else []
        if platforms and all(platforms):
            return tuple(p for p in platforms if p is not None)
        self.bad("image.platforms", f"{raw!r} must be a list of {' and '.join(LINUX_PLATFORMS)}{_linux_tip(raw)}")
        return (DEFAULT_PLATFORM,)


def _linux_tip(raw: Any) -> str:
    """What to write instead of Windows or macOS platforms in [image] platforms."""
    other = [p for p in raw if p in PLATFORMS and p not in LINUX_PLATFORMS] if isinstance(raw, list) else []
    return (f" (images are Linux; for {', '.join(other)} cells add a platform axis: "
            "their smoke tests run on GitHub's runners of that platform)") if other else ""


def _platform(value: str) -> Platform:
    """A platform axis value (checked when parsing) as a Platform."""
    return word(value, PLATFORMS) or DEFAULT_PLATFORM


def _pair_text(accelerator: str, platform: str) -> str:
    return f"accelerator {accelerator} on {platform}" if accelerator else f"no accelerator on {platform}"


def check_size(ms: MatrixSpec, cap: int) -> None:
    """Refuse, before a cell is solved, a matrix of more than ``cap`` cells (at most: see
    :meth:`MatrixSpec.at_most`), with the size of each axis; a :class:`SpecError` (exit 2)."""
    cells = ms.at_most()
    if cells <= cap:
        return
    sizes = " x ".join(f"{len(values)} {axis}" for axis, values in ms.axes)
    up_to = "" if len(ms.excludes) <= 1 and not ms.includes else "up to "  # else at_most's count is exact
    raise SpecError([Problem(ms.path, "matrix", f"has {up_to}{cells:,} cells ({sizes}), more than the {cap:,} "
                             "envsolve solves without being asked")],
                    tip=f"drop values from the largest axes or add [[exclude]] rows; to solve them all, "
                        f"pass --max-cells {cells}")


def parse_matrix(text: str, path: str, provider: Provider) -> MatrixSpec:
    """Parse a matrix file; raise :class:`SpecError` listing every problem."""
    data = load_toml(text, path, "a matrix file",
                     "a matrix file is a few flat tables; see README.md, 'envsolve matrix'")
    parser = _MatrixParser(path, provider)
    parser.sections(data)
    m = data.get("matrix")
    if not isinstance(m, dict):
        raise SpecError([Problem(path, "matrix", "missing: a [matrix] table with at least one axis")],
                        tip="see README.md, 'envsolve matrix'")
    axes = parser.axes(m)
    names = [a for a, _ in axes]
    includes = parser.patterns(data, "include", names)
    excludes = parser.patterns(data, "exclude", names)
    parser.includes_inside(includes, axes)
    gpus, driver, backend = parser.hardware(m)
    repository, platforms = parser.image(data.get("image", {}))
    parser.hosts(axes, includes, platforms)
    parser.problems.raise_if_any(SpecError, tip=f"edit {path} at the keys named above")
    return MatrixSpec(path=path, axes=tuple(axes), includes=tuple(includes), excludes=tuple(excludes),
                      gpus=gpus, driver=driver, keras_backend=backend, repository=repository, platforms=platforms)
