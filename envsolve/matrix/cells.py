"""Solving a matrix: each cell stands for a project spec with exact pins and is solved by the same
solver as `envsolve lock`, all cells sharing one solver cache, so cells that share a sub-problem
(a framework range, the Python range, the target) share its work. Pure: no host, no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..domain import DEFAULT_PLATFORM, FRAMEWORKS, PLATFORMS, cuda_of_variant
from ..errors import Unsatisfiable
from ..provider import Provider
from ..solve import Cache, Resolution
from ..solve.search import try_solve_target
from ..spec import FrameworkReq, ProjectSpec, Target
from ..tables import word
from ..versions import parse_dotted, parse_driver
from .parse import Cell, MatrixSpec

__all__ = ["CellResult", "cell_spec", "check_includes", "iter_cells", "solve_cells"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CellResult:
    cell: Cell
    resolution: Resolution | None
    reason: str = ""  # why the cell was pruned

    @property
    def valid(self) -> bool:
        return self.resolution is not None



def _target(ms: MatrixSpec, accelerator: str, cell_platform: str) -> Target:
    """The hardware of a cell: the accelerator's vendor, its pin, the matrix GPUs of that vendor,
    and the platform (the cell's, else the one of [image] platforms when it names one)."""
    platform = word(cell_platform, PLATFORMS) or DEFAULT_PLATFORM  # a platform axis value, checked when parsing
    if accelerator == "cpu":
        return Target(name="default", vendor="cpu", platform=platform)
    if accelerator.startswith("cu"):
        digits = accelerator[2:]  # cu128: CUDA 12.8; cu12: any CUDA 12; cuda: any
        cuda = cuda_of_variant(accelerator) if len(digits) >= 3 else digits if digits.isdigit() else ""
        return Target(name="default", vendor="nvidia", gpus=tuple(g for g in ms.gpus if g.vendor == "nvidia"),
                      driver=parse_driver(ms.driver) if ms.driver else None,
                      cuda=parse_dotted(cuda, "CUDA version") if cuda else None, platform=platform)
    rocm = parse_dotted(accelerator[4:], "ROCm version") if accelerator != "rocm" else None
    return Target(name="default", vendor="amd", gpus=tuple(g for g in ms.gpus if g.vendor == "amd"), rocm=rocm,
                  platform=platform)


def cell_spec(ms: MatrixSpec, cell: Cell, cache: Cache, platform: str = "") -> ProjectSpec:
    """The project spec a cell stands for: exact pins for every axis it names. Its pieces (each
    framework pin, the target of each accelerator) are made once per matrix, so cells share them."""
    parts = cache.table("cell parts")
    values = dict(cell.values)
    frameworks = []
    for name in FRAMEWORKS:
        if v := values.get(name):
            if (name, v) not in parts:
                backend = ms.keras_backend if name == "keras" else ""
                parts[(name, v)] = FrameworkReq(name=name, specifier=cache.range(f"=={v}"), raw=f"=={v}",
                                                backend=backend)
            frameworks.append(parts[(name, v)])
    accelerator = values.get("accelerator") or "cpu"
    platform = values.get("platform") or platform or ms.platforms[0]
    if ("accelerator", accelerator, platform) not in parts:
        parts[("accelerator", accelerator, platform)] = _target(ms, accelerator, platform)
    py = values.get("python")
    python_raw = f"=={py}.*" if py else "*"
    return ProjectSpec(
        path=ms.path, name="matrix", python=cache.range(python_raw), python_raw=python_raw,
        frameworks=tuple(sorted(frameworks, key=lambda f: f.name)),
        targets=(parts[("accelerator", accelerator, platform)],),
        os=values.get("os", ""), flavor=values.get("flavor", ""),
    )


def solve_cells(provider: Provider, ms: MatrixSpec, cells: Iterable[Cell]) -> list[CellResult]:
    """Solve every cell; a pruned cell carries its reason in GPU terms."""
    return list(iter_cells(provider, ms, cells))


def iter_cells(provider: Provider, ms: MatrixSpec, cells: Iterable[Cell]) -> Iterator[CellResult]:
    """:func:`solve_cells` one cell at a time, for output that streams."""
    cache = Cache()
    reasons: dict[int, str] = {}  # one text per shared answer (each is kept alive by the cache)
    # without a platform axis, an image of several [image] platforms is one tag for all of them:
    # its cell must solve for each, the same way
    each = () if any(a == "platform" for a, _ in ms.axes) else ms.platforms[1:]
    for cell in cells:
        spec = cell_spec(ms, cell, cache)
        r = try_solve_target(provider, spec, spec.targets[0], cache=cache)
        for platform in each if isinstance(r, Resolution) else ():
            other = cell_spec(ms, cell, cache, platform)
            o = try_solve_target(provider, other, other.targets[0], cache=cache)
            if isinstance(o, Unsatisfiable):
                yield CellResult(cell=cell, resolution=None,
                                 reason=f"{platform}: " + "; ".join(c.reason for c in o.clashes))
                break
            if isinstance(r, Resolution) and (o.packages, o.base_image, o.python) != (r.packages, r.base_image,
                                                                                      r.python):
                yield CellResult(cell=cell, resolution=None, reason=(
                    f"{platform} gets other builds or another base image than {ms.platforms[0]} "
                    f"({o.base_image}); one image tag cannot hold both: add a platform axis"))
                break
        else:
            yield _result(cell, r, reasons)


def _result(cell: Cell, r: Resolution | Unsatisfiable, reasons: dict[int, str]) -> CellResult:
    if isinstance(r, Unsatisfiable):
        if id(r) not in reasons:
            reasons[id(r)] = "; ".join(c.reason for c in r.clashes)
        return CellResult(cell=cell, resolution=None, reason=reasons[id(r)])
    if variant := _variant_problem(cell, r):
        return CellResult(cell=cell, resolution=None, reason=variant)
    if not r.base_image:
        return CellResult(cell=cell, resolution=None, reason=r.warnings[0] if r.warnings else "no base image")
    return CellResult(cell=cell, resolution=r)


def _variant_problem(cell: Cell, r: Resolution) -> str:
    """A cell naming a torch variant (cu128, rocm6.2) gets exactly that variant, not a neighbour."""
    accel = cell.get("accelerator")
    torch = next((p for p in r.packages if p.name == "torch"), None)
    if torch is None or not re.match(r"^(cu\d{3}|rocm\d)", accel):
        return ""
    if torch.variant == accel or torch.variant.startswith(accel + "."):
        return ""
    return f"torch {torch.version} has no {accel} build (it has {torch.variant} for this CUDA/ROCm)"



def check_includes(results: list[CellResult]) -> list[CellResult]:
    """The [[include]] cells that are invalid."""
    return [r for r in results if r.cell.included and not r.valid]
