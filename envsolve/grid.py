"""The image matrix of `envsolve matrix`: axes, cells, and which cells the graph allows.

A matrix file names axes (python, frameworks, accelerator, os, flavor), optional fixed GPUs and
driver, ``[[include]]`` cells that must be valid and ``[[exclude]]`` patterns. Every cell is
solved by the same solver as `envsolve lock`; cells that share a sub-problem share its work
(see ``solve._candidates_shared``). Pure: no host, no network.
"""

from __future__ import annotations

import itertools
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from packaging.specifiers import SpecifierSet

from .errors import Problem, SpecError, Unsatisfiable
from .graph import CompatGraph
from .matrix import Build, Release
from .solve import Candidate, No, Resolution, clash, fit, solve_target
from .spec import FLAVORS, FRAMEWORK_NAMES, FrameworkReq, GpuReq, ProjectSpec, Target, parse_gpus
from .versions import parse_dotted, parse_driver, parse_python_minor

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["Cell", "CellResult", "MatrixSpec", "parse_matrix", "solve_cells", "GITHUB_JOB_LIMIT"]

AXES = ("python", *FRAMEWORK_NAMES, "accelerator", "os", "flavor")
GITHUB_JOB_LIMIT = 256
_ACCEL = re.compile(r"^(cpu|cuda|cu\d{2,3}|rocm|rocm\d+(\.\d+){0,2})$")


@dataclass(frozen=True, slots=True)
class Cell:
    """One combination of axis values, in axis order."""

    values: tuple[tuple[str, str], ...]
    included: bool = False  # named by an [[include]]: must be valid

    def get(self, axis: str) -> str:
        return dict(self.values).get(axis, "")

    @property
    def id(self) -> str:
        """Stable and usable as a bake target name and a folder: ``py3_12-torch2_7_1-cu128``."""
        parts = []
        for axis, value in self.values:
            prefix = "py" if axis == "python" else axis if axis in FRAMEWORK_NAMES else ""
            parts.append(re.sub(r"[^A-Za-z0-9_-]", "_", f"{prefix}{value}"))
        return "-".join(parts)


@dataclass(frozen=True, kw_only=True, slots=True)
class CellResult:
    cell: Cell
    resolution: Resolution | None
    reason: str = ""  # why the cell was pruned

    @property
    def valid(self) -> bool:
        return self.resolution is not None


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
        names = [a for a, _ in self.axes]
        product = [Cell(tuple(zip(names, combo, strict=True)))
                   for combo in itertools.product(*(vs for _, vs in self.axes))]
        kept = [c for c in product if not any(_matches(c, ex) for ex in self.excludes)]
        out: dict[tuple[tuple[str, str], ...], Cell] = {c.values: c for c in kept}
        for inc in self.includes:
            hits = [c for c in product if _matches(c, inc)]
            if not hits:  # a cell outside the product: it names every axis (checked when parsing)
                order = dict(inc)
                hits = [Cell(tuple((a, order[a]) for a in names))]
            for c in hits:
                out[c.values] = replace(c, included=True)
        return list(out.values())


def _matches(cell: Cell, pattern: Iterable[tuple[str, str]]) -> bool:
    return all(cell.get(k) == v for k, v in pattern)


# ----------------------------------------------------------------------------- parsing


def parse_matrix(text: str, path: str, graph: CompatGraph) -> MatrixSpec:
    """Parse a matrix file; raise :class:`SpecError` listing every problem."""
    problems: list[Problem] = []

    def bad(key: str, msg: str) -> None:
        problems.append(Problem(path, key, msg))

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError([Problem(path, "", f"is not valid TOML: {e}")]) from None
    for key in data:
        if key not in ("matrix", "include", "exclude", "image"):
            bad(key, "unknown section (allowed: matrix, include, exclude, image)")
    m = data.get("matrix")
    if not isinstance(m, dict):
        raise SpecError([Problem(path, "matrix", "missing: a [matrix] table with at least one axis")],
                        tip="see README.md, 'envsolve matrix'")
    axes: list[tuple[str, tuple[str, ...]]] = []
    for key, value in m.items():
        if key in ("gpus", "driver", "keras_backend"):
            continue
        if key not in AXES:
            bad(f"matrix.{key}", f"unknown axis (axes: {', '.join(AXES)}; also gpus, driver, keras_backend)")
            continue
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
            bad(f"matrix.{key}", f"must be a non-empty list of strings, not {value!r}")
            continue
        for v in value:
            if (msg := _check_value(key, v, graph)) is not None:
                bad(f"matrix.{key}", msg)
        axes.append((key, tuple(dict.fromkeys(value))))
    axes.sort(key=lambda av: AXES.index(av[0]))
    if not any(a in FRAMEWORK_NAMES for a, _ in axes):
        bad("matrix", "names no framework axis (torch, tensorflow, jax or keras)")
    names = [a for a, _ in axes]
    patterns: dict[str, list[tuple[tuple[str, str], ...]]] = {"include": [], "exclude": []}
    for section in ("include", "exclude"):
        rows = data.get(section, [])
        if not isinstance(rows, list):
            bad(section, f"must be an array of tables ([[{section}]])")
            continue
        for i, row in enumerate(rows):
            where = f"{section}[{i}]"
            if not isinstance(row, dict) or not row:
                bad(where, "must be a table of axis = value")
                continue
            pattern = []
            for k, v in row.items():
                if k not in names:
                    bad(f"{where}.{k}", f"is not an axis of [matrix] (axes: {', '.join(names)})")
                elif not isinstance(v, str):
                    bad(f"{where}.{k}", f"must be a string, not {v!r}")
                elif (msg := _check_value(k, v, graph)) is not None:
                    bad(f"{where}.{k}", msg)
                else:
                    pattern.append((k, v))
            patterns[section].append(tuple(sorted(pattern, key=lambda kv: names.index(kv[0]))))
    for i, inc in enumerate(patterns["include"]):
        inside = all(v in dict(axes)[k] for k, v in inc)
        if not inside and {k for k, _ in inc} != set(names):
            missing = sorted(set(names) - {k for k, _ in inc})
            bad(f"include[{i}]", f"is outside the product, so it must name every axis (missing: {', '.join(missing)})")
    gpus: list[GpuReq] = []
    raw_gpus = m.get("gpus", [])
    if not isinstance(raw_gpus, list):
        bad("matrix.gpus", "must be a list of GPU names")
        raw_gpus = []
    try:
        gpus.extend(parse_gpus(graph, raw_gpus, path, "matrix.gpus"))
    except SpecError as e:
        problems.extend(e.problems)
    driver = m.get("driver", "")
    if driver:
        try:
            parse_driver(str(driver))
        except ValueError as e:
            bad("matrix.driver", str(e))
    backend = m.get("keras_backend", "")
    if backend and backend not in ("tensorflow", "jax", "torch"):
        bad("matrix.keras_backend", f"{backend!r} is not a Keras backend (tensorflow, jax, torch)")
    image = data.get("image", {})
    repository = image.get("repository", "envsolve-matrix") if isinstance(image, dict) else "envsolve-matrix"
    platforms = image.get("platforms", ["linux/amd64"]) if isinstance(image, dict) else ["linux/amd64"]
    if problems:
        raise SpecError(problems, tip=f"edit {path} at the keys named above")
    return MatrixSpec(path=path, axes=tuple(axes), includes=tuple(patterns["include"]),
                      excludes=tuple(patterns["exclude"]), gpus=tuple(gpus), driver=str(driver),
                      keras_backend=str(backend), repository=str(repository), platforms=tuple(platforms))


def _check_value(axis: str, value: str, graph: CompatGraph) -> str | None:
    if axis == "python":
        try:
            parse_python_minor(value)
        except ValueError as e:
            return str(e)
    elif axis in FRAMEWORK_NAMES:
        if not any(r.raw == value for r in graph.releases(axis)):
            known = [r.raw for r in graph.releases(axis)]
            near = [k for k in known if k.startswith(value.rsplit(".", 1)[0])][:3]
            tip = f"; did you mean {', '.join(near)}?" if near else ""
            return f"{axis} {value!r} is not a release in the data{tip}"
    elif axis == "accelerator":
        if not _ACCEL.match(value):
            return f"{value!r} is not an accelerator: cpu, cuda, cuXYZ (cu128), rocm or rocmX.Y (rocm6.2)"
    elif axis == "flavor" and value not in FLAVORS:
        return f"{value!r} is not one of {', '.join(FLAVORS)}"
    return None


# ----------------------------------------------------------------------------- solving


def _target(ms: MatrixSpec, accelerator: str) -> Target:
    """The hardware of a cell: the accelerator's vendor, its pin, and the matrix GPUs of that vendor."""
    if accelerator == "cpu":
        return Target(name="default", vendor="cpu")
    if accelerator.startswith("cu"):
        digits = accelerator[2:]
        cuda = None
        if digits.isdigit():
            cuda = parse_dotted(f"{digits[:-1]}.{digits[-1]}" if len(digits) >= 3 else digits, "CUDA version")
        return Target(name="default", vendor="nvidia", gpus=tuple(g for g in ms.gpus if g.vendor == "nvidia"),
                      driver=parse_driver(ms.driver) if ms.driver else None, cuda=cuda)
    rocm = parse_dotted(accelerator[4:], "ROCm version") if accelerator != "rocm" else None
    return Target(name="default", vendor="amd", gpus=tuple(g for g in ms.gpus if g.vendor == "amd"), rocm=rocm)


@lru_cache(maxsize=4096)
def _pinned(raw: str) -> SpecifierSet:
    return SpecifierSet(raw)


def cell_spec(ms: MatrixSpec, cell: Cell) -> ProjectSpec:
    """The project spec a cell stands for: exact pins for every axis it names."""
    frameworks = []
    for name in FRAMEWORK_NAMES:
        if v := cell.get(name):
            backend = ms.keras_backend if name == "keras" else ""
            frameworks.append(FrameworkReq(name=name, specifier=_pinned(f"=={v}"), raw=f"=={v}", backend=backend))
    py = cell.get("python")
    return ProjectSpec(
        path=ms.path, name="matrix",
        python=_pinned(f"=={py}.*" if py else ""), python_raw=f"=={py}.*" if py else "*",
        frameworks=tuple(sorted(frameworks, key=lambda f: f.name)),
        targets=(_target(ms, cell.get("accelerator") or "cpu"),),
        os=cell.get("os"), flavor=cell.get("flavor"),
    )


def solve_cells(graph: CompatGraph, ms: MatrixSpec, cells: Iterable[Cell]) -> list[CellResult]:
    """Solve every cell; a pruned cell carries its reason in GPU terms."""
    out = []
    for cell in cells:
        spec = cell_spec(ms, cell)
        try:
            r = solve_target(graph, spec, spec.targets[0])
        except Unsatisfiable as e:
            out.append(CellResult(cell=cell, resolution=None, reason="; ".join(c.reason for c in e.clashes)))
            continue
        variant = _variant_problem(cell, r)
        if variant:
            out.append(CellResult(cell=cell, resolution=None, reason=variant))
        elif not r.base_image:
            out.append(CellResult(cell=cell, resolution=None, reason=r.warnings[0] if r.warnings else "no base image"))
        else:
            out.append(CellResult(cell=cell, resolution=r))
    return out


def _variant_problem(cell: Cell, r: Resolution) -> str:
    """A cell naming a torch variant (cu128, rocm6.2) gets exactly that variant, not a neighbour."""
    accel = cell.get("accelerator")
    torch = next((p for p in r.packages if p.name == "torch"), None)
    if torch is None or not re.match(r"^(cu\d{3}|rocm\d)", accel):
        return ""
    if torch.variant == accel or torch.variant.startswith(accel + "."):
        return ""
    return f"torch {torch.version} has no {accel} build (it has {torch.variant} for this CUDA/ROCm)"


# ----------------------------------------------------------------------------- output


def image_tag(ms: MatrixSpec, cell: Cell) -> str:
    return f"{ms.repository}:{cell.id}"


def row(ms: MatrixSpec, res: CellResult, render_dir: str) -> dict[str, Any]:
    """A valid cell as GitHub and JSON output show it: axis values under axis names, id, image."""
    out: dict[str, Any] = dict(res.cell.values)
    out["id"] = res.cell.id
    out["image"] = image_tag(ms, res.cell)
    out["dockerfile"] = f"{render_dir}/{res.cell.id}/Dockerfile"
    return out


def github(ms: MatrixSpec, results: list[CellResult], render_dir: str, max_jobs: int | None) -> dict[str, Any]:
    """``{"include": [...]}``, or ``{"shards": [{"include": [...]}, ...]}`` of at most ``max_jobs``."""
    rows = [row(ms, r, render_dir) for r in results if r.valid]
    if not max_jobs:
        return {"include": rows}
    return {"shards": [{"include": rows[i:i + max_jobs]} for i in range(0, len(rows), max_jobs)] or [{"include": []}]}


def bake(ms: MatrixSpec, results: list[CellResult], render_dir: str) -> dict[str, Any]:
    """A docker-bake.json: a target per valid cell and a ``default`` group of them all."""
    targets = {r.cell.id: {"context": f"{render_dir}/{r.cell.id}", "dockerfile": "Dockerfile",
                           "tags": [image_tag(ms, r.cell)], "platforms": list(ms.platforms)}
               for r in results if r.valid}
    return {"group": {"default": {"targets": list(targets)}}, "target": targets}


def everything(ms: MatrixSpec, results: list[CellResult], render_dir: str) -> dict[str, Any]:
    cells = []
    for r in results:
        entry: dict[str, Any] = {**dict(r.cell.values), "id": r.cell.id, "valid": r.valid, "include": r.cell.included}
        if r.resolution is not None:
            res = r.resolution
            entry |= {"image": image_tag(ms, r.cell), "dockerfile": f"{render_dir}/{r.cell.id}/Dockerfile",
                      "python_resolved": res.python, "cuda": res.cuda, "rocm": res.rocm, "cudnn": res.cudnn,
                      "driver_min": res.driver_min, "compat": res.compat, "base_image": res.base_image,
                      "packages": {p.name: f"{p.version} ({p.variant})" for p in res.packages}}
        else:
            entry["reason"] = r.reason
        cells.append(entry)
    valid = sum(1 for r in results if r.valid)
    return {"cells": cells, "valid": valid, "pruned": len(results) - valid}


def table(results: list[CellResult]) -> str:
    """Valid cells, then pruned cells each with its reason."""
    lines = []
    valid = [r for r in results if r.valid]
    pruned = [r for r in results if not r.valid]
    lines.append(f"{len(valid)} valid, {len(pruned)} pruned of {len(results)} cells")
    for r in valid:
        res = r.resolution
        assert res is not None
        stack = f"CUDA {res.cuda} ({res.compat}, driver >= {res.driver_min})" if res.cuda else (
            f"ROCm {res.rocm}" if res.rocm else "CPU")
        pkgs = ", ".join(f"{p.name} {p.version} {p.variant}" for p in res.packages)
        mark = " [include]" if r.cell.included else ""
        lines.append(f"  ok      {r.cell.id}{mark}: {pkgs}; {stack}; {res.base_image}")
    for r in pruned:
        mark = " [include]" if r.cell.included else ""
        lines.append(f"  pruned  {r.cell.id}{mark}: {r.reason}")
    return "\n".join(lines) + "\n"


def check_includes(results: list[CellResult]) -> list[CellResult]:
    """The [[include]] cells that are invalid."""
    return [r for r in results if r.cell.included and not r.valid]


# ----------------------------------------------------------------------------- existing images


@dataclass(frozen=True, kw_only=True, slots=True)
class ImageVerdict:
    name: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_images(graph: CompatGraph, images: Any, path: str) -> list[ImageVerdict]:
    """Validate images described by their stack against the graph, with the solver's own rules.

    Each image: ``{"name", "python", "frameworks": {"torch": "2.7.1+cu128", ...}, "cuda"?,
    "cudnn"?, "rocm"?, "gpus"?: [...], "driver"?}``; a framework without ``+variant`` is its
    default build.
    """
    if not isinstance(images, list):
        raise SpecError([Problem(path, "", 'must be a JSON list of images (or {"images": [...]})')])
    return [_verdict(graph, img, path, i) for i, img in enumerate(images)]


def _verdict(graph: CompatGraph, img: Any, path: str, i: int) -> ImageVerdict:
    if not isinstance(img, dict) or not isinstance(img.get("frameworks"), dict):
        example = '{"torch": "2.7.1+cu128"}'
        raise SpecError([Problem(path, f"[{i}]", f'each image needs a "frameworks" object, e.g. {example}')])
    name = str(img.get("name", f"image {i}"))
    try:
        gpus = parse_gpus(graph, list(img.get("gpus", [])), path, f"[{i}].gpus")
        driver = parse_driver(str(img["driver"])) if img.get("driver") else None
    except ValueError as e:
        raise SpecError([Problem(path, f"[{i}].driver", str(e))]) from None
    py = str(img.get("python", ""))
    spec = ProjectSpec(path=path, name=name, python=SpecifierSet(f"=={py}.*") if py else SpecifierSet(),
                       python_raw=f"=={py}.*" if py else "*", frameworks=(), targets=())
    problems: list[str] = []
    chosen: list[tuple[Release, Build | None]] = []
    for fw, text in sorted(img["frameworks"].items()):
        version, _, variant = str(text).partition("+")
        rel = next((r for r in graph.releases(fw) if r.raw == version), None)
        if rel is None:
            problems.append(f"{fw} {version} is not a release in the data")
            continue
        builds = graph.builds(rel)
        b = next((x for x in builds if (x.variant == variant if variant else x.default)), None)
        if b is None and builds:
            have = ", ".join(x.variant for x in builds)
            problems.append(f"{fw} {version} has no {variant or 'default'} build (it has {have})")
            continue
        chosen.append((rel, b))
    accels = {b.accelerator for _, b in chosen if b is not None}
    vendor = "amd" if "rocm" in accels else "nvidia" if "cuda" in accels else "cpu"
    target = Target(name=name, vendor=vendor, gpus=gpus, driver=driver)
    cands: list[Candidate] = []
    for rel, b in chosen:
        label = f"{rel.package} {rel.raw}" + (f" ({b.variant})" if b else "")
        if b is None:  # pure Python (keras)
            pys = frozenset(p for p in rel.python if spec.python.contains(p, prereleases=True))
            if not pys:
                problems.append(f"{label} has no wheel for Python {py}")
            cands.append(Candidate(release=rel, build=None, pythons=pys))
            continue
        c = fit(graph, spec, target, rel, b)
        if isinstance(c, No):
            problems.append(f"{label}: {c.text}")
            continue
        cands.append(c)
        problems += _stated_facts(img, label, b)
    backend = "torch" if any(c.package == "torch" for c in cands) else ""
    problems += [why for a, b2 in itertools.combinations(cands, 2) if (why := clash(a, b2, backend))]
    return ImageVerdict(name=name, problems=tuple(dict.fromkeys(problems)))


def _stated_facts(img: dict[str, Any], label: str, b: Build) -> list[str]:
    """Where the image's own description disagrees with what the build was made with."""
    out = []
    if img.get("cuda") and b.cuda and b.cuda.prefix(2) != parse_dotted(str(img["cuda"])).prefix(2):
        out.append(f"{label} is built for CUDA {b.cuda}, the image says {img['cuda']}")
    if img.get("cudnn") and b.cudnn and not _same_prefix(b.cudnn, str(img["cudnn"])):
        out.append(f"{label} bundles cuDNN {b.cudnn}, the image says {img['cudnn']}")
    if img.get("rocm") and b.rocm and b.rocm.prefix(2) != parse_dotted(str(img["rocm"])).prefix(2):
        out.append(f"{label} is built for ROCm {b.rocm}, the image says {img['rocm']}")
    return out


def _same_prefix(a: str, b: str) -> bool:
    n = min(len(a.split(".")), len(b.split(".")))
    return a.split(".")[:n] == b.split(".")[:n]
