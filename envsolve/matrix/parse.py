"""A matrix file (``images.toml`` of `envsolve matrix`) into a frozen :class:`MatrixSpec`: axes,
optional fixed GPUs and driver, ``[[include]]`` cells that must be valid, ``[[exclude]]``
patterns, and ``[image]`` settings. Each section has its own small parser; every problem is
collected and raised at once as one :class:`~envsolve.errors.SpecError`.
"""

from __future__ import annotations

import difflib
import itertools
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from ..domain import FRAMEWORKS, KERAS_BACKENDS
from ..errors import Problem, SpecError
from ..provider import Provider
from ..spec import FLAVORS, GpuReq, SectionParser, load_toml, parse_gpus, unknown_key
from ..versions import parse_driver, parse_python_minor

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover
    pass

__all__ = ["AXES", "Cell", "MatrixSpec", "parse_matrix"]

AXES = ("python", *FRAMEWORKS, "accelerator", "os", "flavor", "platform")
_ACCEL = re.compile(r"cpu|cuda|cu\d{2,3}|rocm|rocm\d+(\.\d+){0,2}")
# an image repository: registry host[:port]/path segments, lower case (Docker's reference grammar)
_REPOSITORY = re.compile(r"[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]{1,2}[a-z0-9]+)*)*")
_PLATFORM = re.compile(r"linux/(amd64|arm64)")
_OS = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


@dataclass(frozen=True, slots=True)
class Cell:
    """One combination of axis values, in axis order."""

    values: tuple[tuple[str, str], ...]
    included: bool = False  # named by an [[include]]: must be valid

    def get(self, axis: str) -> str:
        for name, value in self.values:
            if name == axis:
                return value
        return ""

    @property
    def id(self) -> str:
        """Stable and usable as a bake target name and a folder: ``py3_12-torch2_7_1-cu128``."""
        parts = []
        for axis, value in self.values:
            prefix = "py" if axis == "python" else axis if axis in FRAMEWORKS else ""
            parts.append(re.sub(r"[^A-Za-z0-9_-]", "_", f"{prefix}{value}"))
        return "-".join(parts)


@dataclass(frozen=True, kw_only=True, slots=True)
class MatrixSpec:
    path: str
    axes: tuple[tuple[str, tuple[str, ...]], ...]
    includes: tuple[tuple[tuple[str, str], ...], ...] = ()
    excludes: tuple[tuple[tuple[str, str], ...], ...] = ()
    gpus: tuple[GpuReq, ...] = ()
    driver: str = ""
    keras_backend: str = ""
    repository: str = "envsolve-matrix"
    platforms: tuple[str, ...] = ("linux/amd64",)

    def cells(self) -> list[Cell]:
        """The product of the axes, minus excludes, plus includes (marked must-be-valid)."""
        return list(self.iter_cells())

    def iter_cells(self) -> Iterator[Cell]:
        """:meth:`cells` one at a time, in the same order; without ``[[include]]`` rows nothing
        is held, so a matrix of a million cells streams."""
        names = [a for a, _ in self.axes]
        product = (Cell(tuple(zip(names, combo, strict=True)))
                   for combo in itertools.product(*(vs for _, vs in self.axes)))
        kept = (c for c in product if not any(_matches(c, ex) for ex in self.excludes))
        if not self.includes:
            yield from kept
            return
        out: dict[tuple[tuple[str, str], ...], Cell] = {c.values: c for c in kept}
        for inc in self.includes:
            hits = [c for combo in itertools.product(*(vs for _, vs in self.axes))
                    if _matches(c := Cell(tuple(zip(names, combo, strict=True))), inc)]
            if not hits:  # a cell outside the product: it names every axis (checked when parsing)
                order = dict(inc)
                hits = [Cell(tuple((a, order[a]) for a in names))]
            for c in hits:
                out[c.values] = replace(c, included=True)
        yield from out.values()


def _matches(cell: Cell, pattern: Iterable[tuple[str, str]]) -> bool:
    return all(cell.get(k) == v for k, v in pattern)



class _Parser(SectionParser):
    """The section parsers of a matrix file; each adds what is wrong to one collector."""

    def sections(self, data: dict[str, Any]) -> None:
        for key in data:
            if key not in ("matrix", "include", "exclude", "image"):
                near = difflib.get_close_matches(key, ["matrix", "include", "exclude", "image"], 1)
                tip = f"; did you mean [{near[0]}]?" if near else ""
                self.bad(key, f"unknown section (allowed: matrix, include, exclude, image){tip}")

    def axes(self, m: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
        axes: list[tuple[str, tuple[str, ...]]] = []
        for key, value in m.items():
            if key in ("gpus", "driver", "keras_backend"):
                continue
            if key not in AXES:
                near = difflib.get_close_matches(key, AXES, 1)
                tip = f"; did you mean '{near[0]}'?" if near else ""
                self.bad(f"matrix.{key}", f"unknown axis (axes: {', '.join(AXES)}; also gpus, driver, "
                         f"keras_backend){tip}")
                continue
            if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
                self.bad(f"matrix.{key}", f"must be a non-empty list of strings, not {value!r}")
                continue
            for v in value:
                if (msg := self.value(key, v)) is not None:
                    self.bad(f"matrix.{key}", msg)
            axes.append((key, tuple(dict.fromkeys(value))))
        axes.sort(key=lambda av: AXES.index(av[0]))
        if not any(a in FRAMEWORKS for a, _ in axes):
            self.bad("matrix", "names no framework axis (torch, tensorflow, jax or keras)")
        return axes

    def patterns(self, data: dict[str, Any], section: str, names: list[str]) -> list[tuple[tuple[str, str], ...]]:
        """The [[include]] or [[exclude]] rows, each as (axis, value) pairs in axis order."""
        rows = data.get(section, [])
        if not isinstance(rows, list):
            self.bad(section, f"must be an array of tables ([[{section}]])")
            return []
        out = []
        for i, row in enumerate(rows):
            where = f"{section}[{i}]"
            if not isinstance(row, dict) or not row:
                self.bad(where, "must be a table of axis = value")
                continue
            pattern = []
            for k, v in row.items():
                if k not in names:
                    self.bad(f"{where}.{k}", f"is not an axis of [matrix] (axes: {', '.join(names)})")
                elif not isinstance(v, str):
                    self.bad(f"{where}.{k}", f"must be a string, not {v!r}")
                elif (msg := self.value(k, v)) is not None:
                    self.bad(f"{where}.{k}", msg)
                else:
                    pattern.append((k, v))
            out.append(tuple(sorted(pattern, key=lambda kv: names.index(kv[0]))))
        return out

    def includes_inside(self, includes: list[tuple[tuple[str, str], ...]],
                        axes: list[tuple[str, tuple[str, ...]]]) -> None:
        names = {a for a, _ in axes}
        for i, inc in enumerate(includes):
            inside = all(v in dict(axes)[k] for k, v in inc)
            if not inside and {k for k, _ in inc} != names:
                missing = sorted(names - {k for k, _ in inc})
                self.bad(f"include[{i}]", f"is outside the product, so it must name every axis "
                         f"(missing: {', '.join(missing)})")

    def hardware(self, m: dict[str, Any]) -> tuple[tuple[GpuReq, ...], str, str]:
        """(gpus, driver, keras_backend) of [matrix]."""
        raw_gpus = m.get("gpus", [])
        gpus: tuple[GpuReq, ...] = ()
        if not isinstance(raw_gpus, list):
            self.bad("matrix.gpus", "must be a list of GPU names")
        else:
            try:
                gpus = parse_gpus(self.provider, raw_gpus, self.path, "matrix.gpus")
            except SpecError as e:
                self.problems.extend(e.problems)
        driver = m.get("driver", "")
        if driver:
            try:
                parse_driver(str(driver))
            except ValueError as e:
                self.bad("matrix.driver", str(e))
        backend = m.get("keras_backend", "")
        if backend and backend not in KERAS_BACKENDS:
            self.bad("matrix.keras_backend", f"{backend!r} is not a Keras backend ({', '.join(KERAS_BACKENDS)})")
        return gpus, str(driver), str(backend)

    def image(self, image: Any) -> tuple[str, tuple[str, ...]]:
        """(repository, platforms) of [image]; both reach generated files, so both are checked."""
        if not isinstance(image, dict):
            self.bad("image", f"must be a table [image], not {image!r}")
            return "envsolve-matrix", ("linux/amd64",)
        for key in image:
            if key not in ("repository", "platforms"):
                self.bad(f"image.{key}", unknown_key(key, ("platforms", "repository")))
        repository = image.get("repository", "envsolve-matrix")
        if not isinstance(repository, str) or not _REPOSITORY.fullmatch(repository):
            self.bad("image.repository", f"{repository!r} is not an image repository such as "
                     "'registry.example/team/ml' (lower case, no tag, no whitespace)")
            repository = "envsolve-matrix"
        platforms = image.get("platforms", ["linux/amd64"])
        if not isinstance(platforms, list) or not platforms or not all(
                isinstance(p, str) and _PLATFORM.fullmatch(p) for p in platforms):
            self.bad("image.platforms", f"{platforms!r} must be a list of linux/amd64 and linux/arm64")
            platforms = ["linux/amd64"]
        return repository, tuple(platforms)

    def value(self, axis: str, value: str) -> str | None:
        """Why ``value`` is not a value of ``axis``; None when it is."""
        if axis == "python":
            try:
                parse_python_minor(value)
            except ValueError as e:
                return str(e)
        elif axis in FRAMEWORKS:
            releases = self.provider.releases(axis)
            if not any(r.raw == value for r in releases):
                near = [r.raw for r in releases if r.raw.startswith(value.rsplit(".", 1)[0])][:3]
                tip = f"; did you mean {', '.join(near)}?" if near else ""
                return f"{axis} {value!r} is not a release in the data{tip}"
        elif axis == "accelerator":
            if not _ACCEL.fullmatch(value):
                return f"{value!r} is not an accelerator: cpu, cuda, cuXYZ (cu128), rocm or rocmX.Y (rocm6.2)"
        elif axis == "flavor" and value not in FLAVORS:
            return f"{value!r} is not one of {', '.join(FLAVORS)}"
        elif axis == "os" and not _OS.fullmatch(value):
            return f"{value!r} is not an OS name such as ubuntu22.04"
        elif axis == "platform" and not _PLATFORM.fullmatch(value):
            return f"{value!r} is not a platform: linux/amd64 or linux/arm64 (Docker's names)"
        return None


def parse_matrix(text: str, path: str, provider: Provider) -> MatrixSpec:
    """Parse a matrix file; raise :class:`SpecError` listing every problem."""
    data = load_toml(text, path, "a matrix file",
                     "a matrix file is a few flat tables; see README.md, 'envsolve matrix'")
    p = _Parser(path, provider)
    p.sections(data)
    m = data.get("matrix")
    if not isinstance(m, dict):
        raise SpecError([Problem(path, "matrix", "missing: a [matrix] table with at least one axis")],
                        tip="see README.md, 'envsolve matrix'")
    axes = p.axes(m)
    names = [a for a, _ in axes]
    includes = p.patterns(data, "include", names)
    excludes = p.patterns(data, "exclude", names)
    p.includes_inside(includes, axes)
    gpus, driver, backend = p.hardware(m)
    repository, platforms = p.image(data.get("image", {}))
    p.problems.raise_if_any(SpecError, tip=f"edit {path} at the keys named above")
    return MatrixSpec(path=path, axes=tuple(axes), includes=tuple(includes), excludes=tuple(excludes),
                      gpus=gpus, driver=driver, keras_backend=backend, repository=repository, platforms=platforms)
