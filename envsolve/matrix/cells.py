"""Solving a matrix: each cell stands for a project spec with exact pins and is solved by the same
solver as `envsolve lock`, all cells sharing one solver cache, so cells that share a sub-problem
(a framework range, the Python range, the target) share its work. Pure: no host, no network.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from ..domain import FRAMEWORKS
from ..errors import Unsatisfiable
from ..provider import Provider
from ..solve import Cache, Resolution, solve_target
from ..spec import FrameworkReq, ProjectSpec, Target
from ..versions import parse_dotted, parse_driver
from .spec import Cell, MatrixSpec

__all__ = ["CellResult", "cell_spec", "check_includes", "solve_cells"]


@dataclass(frozen=True, kw_only=True, slots=True)
class CellResult:
    cell: Cell
    resolution: Resolution | None
    reason: str = ""  # why the cell was pruned

    @property
    def valid(self) -> bool:
        return self.resolution is not None



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


def cell_spec(ms: MatrixSpec, cell: Cell, cache: Cache) -> ProjectSpec:
    """The project spec a cell stands for: exact pins for every axis it names."""
    frameworks = []
    for name in FRAMEWORKS:
        if v := cell.get(name):
            backend = ms.keras_backend if name == "keras" else ""
            frameworks.append(FrameworkReq(name=name, specifier=cache.range(f"=={v}"), raw=f"=={v}", backend=backend))
    py = cell.get("python")
    return ProjectSpec(
        path=ms.path, name="matrix",
        python=cache.range(f"=={py}.*" if py else ""), python_raw=f"=={py}.*" if py else "*",
        frameworks=tuple(sorted(frameworks, key=lambda f: f.name)),
        targets=(_target(ms, cell.get("accelerator") or "cpu"),),
        os=cell.get("os"), flavor=cell.get("flavor"),
    )


def solve_cells(provider: Provider, ms: MatrixSpec, cells: Iterable[Cell]) -> list[CellResult]:
    """Solve every cell; a pruned cell carries its reason in GPU terms."""
    out = []
    cache = Cache()
    for cell in cells:
        spec = cell_spec(ms, cell, cache)
        try:
            r = solve_target(provider, spec, spec.targets[0], cache=cache)
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



def check_includes(results: list[CellResult]) -> list[CellResult]:
    """The [[include]] cells that are invalid."""
    return [r for r in results if r.cell.included and not r.valid]
