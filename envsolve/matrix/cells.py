"""Solving a matrix: each cell stands for a project spec with exact pins and is solved by the same
solver as `envsolve lock`, the cells a process solves sharing one solver cache (:class:`Solving`),
so cells that share a sub-problem (a framework range, the Python range, the target) share its
work. Pure: no host, no network.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import msgspec
import msgspec.structs

from ..data import Build
from ..domain import DEFAULT_PLATFORM, FRAMEWORKS, LINUX_PLATFORMS, PLATFORMS, Platform, Vendor, cuda_of_variant
from ..errors import Unsatisfiable
from ..provider import Provider
from ..solve import Cache, Resolution
from ..solve.fit import of_pin
from ..solve.search import try_solve_target
from ..spec import FrameworkReq, GpuReq, ProjectSpec, Target, host_problem
from ..tables import word
from ..versions import Dotted, parse_dotted, parse_driver
from .parse import Cell, MatrixSpec, cell_vendor

__all__ = ["CellResult", "Solving", "cell_spec", "check_includes", "iter_cells", "solve_cells"]

# the axes that choose a cell's base image; the OS's glibc also decides which wheels install, so a
# group of cells is also keyed by it (:meth:`Solving.group`)
_IMAGE_AXES = ("os", "flavor")
_VARIANT = re.compile(r"cu\d{3}|rocm\d")  # an accelerator value naming one torch variant (cu128, rocm6.2)


class CellResult(msgspec.Struct, frozen=True, kw_only=True):
    cell: Cell
    resolution: Resolution | None
    reason: str = ""  # why the cell was pruned

    @property
    def valid(self) -> bool:
        return self.resolution is not None


def _jetpack(provider: Provider, gpus: Iterable[GpuReq]) -> Dotted | None:
    """The JetPack of a matrix whose NVIDIA GPUs are all Jetson modules: the newest release that
    supports them all, as for a project's target without ``jetpack``; None for any other GPUs."""
    names = [g.name for g in gpus]
    if not names or not all(provider.is_jetson(n) for n in names):
        return None
    fits = provider.jetpacks_for(names)
    return fits[-1].version if fits else None


def _cuda_pin(accelerator: str) -> Dotted | None:
    """The CUDA an accelerator value pins: cu128 CUDA 12.8, cu12 any CUDA 12, cuda any."""
    digits = accelerator[2:]
    text = cuda_of_variant(accelerator) if len(digits) >= 3 else digits if digits.isdigit() else ""
    return parse_dotted(text, "CUDA version") if text else None


def _rocm_pin(accelerator: str) -> Dotted | None:
    """The ROCm an accelerator value pins: rocm6.2 ROCm 6.2, rocm any."""
    return parse_dotted(accelerator[4:], "ROCm version") if accelerator != "rocm" else None


def _target(provider: Provider, ms: MatrixSpec, accelerator: str, cell_platform: str) -> Target:
    """The hardware of a cell: the accelerator's vendor (:func:`~.parse.cell_vendor`: Apple's on
    Apple silicon without an accelerator axis), its pin, the matrix GPUs of that vendor, and the
    platform (a platform axis value, checked when parsing). A Windows cell's driver is a Windows
    driver (``Target.windows_driver``)."""
    platform = word(cell_platform, PLATFORMS) or DEFAULT_PLATFORM
    vendor = cell_vendor(accelerator, platform)
    if vendor == "nvidia":
        return _nvidia_target(provider, ms, accelerator, platform)
    return Target(name="default", vendor=vendor, gpus=_gpus_of(ms, vendor),
                  rocm=_rocm_pin(accelerator) if vendor == "amd" else None, platform=platform)


def _gpus_of(ms: MatrixSpec, vendor: Vendor) -> tuple[GpuReq, ...]:
    return tuple(g for g in ms.gpus if g.vendor == vendor) if vendor != "cpu" else ()


def _nvidia_target(provider: Provider, ms: MatrixSpec, accelerator: str, platform: Platform) -> Target:
    """A CUDA cell's hardware: the matrix's NVIDIA GPUs (with their JetPack when they are Jetson
    modules), its driver, the CUDA the accelerator pins."""
    gpus = _gpus_of(ms, "nvidia")
    return Target(name="default", vendor="nvidia", gpus=gpus, driver=parse_driver(ms.driver) if ms.driver else None,
                  cuda=_cuda_pin(accelerator), platform=platform, jetpack=_jetpack(provider, gpus))


def _framework_reqs(ms: MatrixSpec, values: dict[str, str], cache: Cache, parts: dict[Any, Any]) -> list[FrameworkReq]:
    """An exact pin for each framework the cell names, made once per matrix and shared."""
    reqs = []
    for name in FRAMEWORKS:
        if v := values.get(name):
            if (name, v) not in parts:
                parts[(name, v)] = FrameworkReq(name=name, specifier=cache.range(f"=={v}"), raw=f"=={v}",
                                                backend=ms.keras_backend if name == "keras" else "")
            reqs.append(parts[(name, v)])
    return reqs


def _cell_target(provider: Provider, ms: MatrixSpec, values: dict[str, str], platform: str,
                 parts: dict[Any, Any]) -> Target:
    """The cell's target (its platform's, else ``platform``, else [image]'s first), made once per matrix."""
    accelerator = values.get("accelerator", "")
    platform = values.get("platform") or platform or ms.platforms[0]
    if ("accelerator", accelerator, platform) not in parts:
        parts[("accelerator", accelerator, platform)] = _target(provider, ms, accelerator, platform)
    target: Target = parts[("accelerator", accelerator, platform)]
    return target


def _named_build(provider: Provider, values: dict[str, str], target: Target, parts: dict[Any, Any]) -> Target:
    """``target`` pinned to the CUDA/ROCm of the build the accelerator value names, where a
    framework of the cell has a build of that very variant whose stack is not the word's (jax
    0.5.0's ``rocm6.0`` build is ROCm 6.2): the cell means that build, as the lock would take it."""
    accelerator = values.get("accelerator", "")
    key = ("named build", accelerator, target, tuple(sorted((n, values[n]) for n in FRAMEWORKS if values.get(n))))
    if key not in parts:
        parts[key] = _pinned_to_named(target, _named(provider, values))
    named_target: Target = parts[key]
    return named_target


def _named(provider: Provider, values: dict[str, str]) -> list[Build]:
    """The builds of the cell's frameworks (at its versions) whose variant is the accelerator value."""
    accelerator = values.get("accelerator", "")
    return [b for n in FRAMEWORKS if (v := values.get(n)) for r in provider.releases(n) if r.raw == v
            for b in provider.builds(r) if b.variant == accelerator]


def _named_conflict(provider: Provider, cell: Cell) -> str:
    """Why the builds an accelerator value names cannot share an environment ("" when they can):
    one word, builds of different CUDA/ROCm (torch 2.4.1's rocm6.0 is ROCm 6.0, jax 0.5.0's 6.2)."""
    named = _named(provider, dict(cell.values))
    for field, stack in (("rocm", "ROCm"), ("cuda", "CUDA")):
        of = {b.package: s for b in named if (s := getattr(b, field)) is not None}
        if len({s.prefix(2) for s in of.values()}) > 1:
            told = ", ".join(f"{name}'s is {stack} {'.'.join(map(str, s.prefix(2)))}" for name, s in sorted(of.items()))
            return (f"accelerator {cell.get('accelerator')} names builds of different {stack} ({told}): one "
                    f"environment holds one {stack}")
    return ""


def _pinned_to_named(target: Target, named: list[Build]) -> Target:
    """``target``'s CUDA/ROCm pin moved to the stack of the builds the accelerator names, where they
    agree on one that is not the word's; where they disagree (torch's rocm6.0 is ROCm 6.0, jax's
    ROCm 6.2) no version is pinned, and the variant check holds each to its name."""
    for field, pin in (("rocm", target.rocm), ("cuda", target.cuda)):
        stacks = [s for b in named if (s := getattr(b, field)) is not None]
        if all(of_pin(s, pin) for s in stacks):  # the word's own stack, or no pin
            continue
        one = len({s.prefix(2) for s in stacks}) == 1
        return msgspec.structs.replace(target, **{field: stacks[0] if one else None})
    return target


def cell_spec(provider: Provider, ms: MatrixSpec, cell: Cell, cache: Cache, platform: str = "") -> ProjectSpec:
    """The project spec a cell stands for: exact pins for every axis it names. Its pieces (each
    framework pin, the target of each accelerator) are made once per matrix, so cells share them."""
    parts = cache.table("cell parts")
    values = dict(cell.values)
    py = values.get("python")
    python_raw = f"=={py}.*" if py else "*"
    target = _named_build(provider, values, _cell_target(provider, ms, values, platform, parts), parts)
    linux = target.platform in LINUX_PLATFORMS  # the OS and flavour of a base image: Linux cells only
    return ProjectSpec(
        path=ms.path, name="matrix", python=cache.range(python_raw), python_raw=python_raw,
        frameworks=tuple(sorted(_framework_reqs(ms, values, cache, parts), key=lambda f: f.name)),
        targets=(target,), os=values.get("os", "") if linux else "", flavor=values.get("flavor", "") if linux else "",
    )


def solve_cells(provider: Provider, ms: MatrixSpec, cells: Iterable[Cell]) -> list[CellResult]:
    """Solve every cell; a pruned cell carries its reason in GPU terms."""
    return list(iter_cells(provider, ms, cells))


def iter_cells(provider: Provider, ms: MatrixSpec, cells: Iterable[Cell]) -> Iterator[CellResult]:
    """:func:`solve_cells` one cell at a time, for output that streams."""
    return Solving(provider, ms).solve(cells)


GROUPS_HELD = 8192  # groups whose answers are kept (see Solving)


class Solving:
    """What the cells of one matrix share as they are solved: the solver's cache, one text per
    shared answer and the answers of refused groups. One instance solves cells in any number of
    calls (a worker of :mod:`~envsolve.matrix.workers` solves its chunks with one). Each group of
    cells asks its own questions, so after :data:`GROUPS_HELD` groups their answers are forgotten.
    A group's cells are near neighbours (the OS and flavour axes come after all others but the
    platform), so few are answered twice."""

    def __init__(self, provider: Provider, ms: MatrixSpec) -> None:
        self.provider, self.ms = provider, ms
        self.cache = Cache()
        self.reasons: dict[int, str] = {}  # one text per shared answer (each is kept alive by the cache)
        self.refused: dict[object, str | None] = {}  # why, by the values of the axes that choose builds
        self.specs: dict[object, ProjectSpec] = {}  # a group's spec, as its first cell's
        self.variants: dict[object, str] = {}  # a solved group's torch variant problem ("" for none)
        self.conflicts: dict[object, str] = {}  # a group's accelerator naming builds of two stacks ("" for none)
        self.by_group = _grouper(ms)
        self.os_of, self.flavor_of = ms.value_of("os"), ms.value_of("flavor")
        # without a platform axis, an image of several [image] platforms is one tag for all of them:
        # its cell must solve for each, the same way
        self.others = () if any(a == "platform" for a, _ in ms.axes) else ms.platforms[1:]

    def _forget(self) -> None:
        """Forget the groups' own answers (each group asks its own questions): memory stays flat
        in the cells. What groups share (candidates, clashes, base images) is kept."""
        self.refused.clear()
        self.specs.clear()
        self.variants.clear()
        self.conflicts.clear()
        self.reasons.clear()  # by the id of an answer the "frameworks" table keeps alive
        self.cache.forget("frameworks", "resolution parts")

    def _conflict(self, group: object, cell: Cell) -> str:
        """:func:`_named_conflict`, once per group (its cells name the same builds)."""
        if group not in self.conflicts:
            self.conflicts[group] = _named_conflict(self.provider, cell)
        return self.conflicts[group]

    def group(self, cell: Cell) -> object:
        """The cells that share their builds: the same values but the image's, and an OS of the
        same glibc class (a manylinux wheel installs on a glibc as new as its tag, ``solve.fit``)."""
        return self.by_group(cell.values), self.provider.glibc_class(self.os_of(cell.values))

    def _spec(self, cell: Cell, group: object) -> ProjectSpec:
        """:func:`cell_spec`, made once per group: the cells of a group differ only in the OS and
        flavour of their base image (set on a Linux cell's spec only)."""
        first = self.specs.get(group)
        if first is None:
            if len(self.specs) >= GROUPS_HELD:  # cells its platform refuses forget nothing else
                self.specs.clear()
            first = self.specs[group] = cell_spec(self.provider, self.ms, cell, self.cache)
            return first
        if first.targets[0].platform not in LINUX_PLATFORMS:
            return first
        return msgspec.structs.replace(first, os=self.os_of(cell.values), flavor=self.flavor_of(cell.values))

    def _variant(self, group: object, cell: Cell, r: Resolution) -> str:
        """:func:`_variant_problem`, once per group: its cells share their builds."""
        got = self.variants.get(group)
        if got is None:
            got = self.variants[group] = _variant_problem(cell, r)
        return got

    def solve(self, cells: Iterable[Cell]) -> Iterator[CellResult]:
        """Each of ``cells`` solved, in order."""
        provider, ms, cache, reasons, refused = self.provider, self.ms, self.cache, self.reasons, self.refused
        for cell in cells:
            # the OS and the flavour choose the base image only: a cell whose builds cannot be found
            # is refused as every cell of its group was, without making its spec
            group = self.group(cell)
            if (why := refused.get(group)) is not None:
                yield CellResult(cell=cell, resolution=None, reason=why)
                continue
            spec = self._spec(cell, group)
            if why := _host_refusal(cell, spec.targets[0]) or self._conflict(group, cell):
                yield CellResult(cell=cell, resolution=None, reason=why)
                continue
            if len(refused) >= GROUPS_HELD:
                self._forget()
            r = try_solve_target(provider, spec, spec.targets[0], cache=cache)
            refused[group] = _reason(r, reasons) if isinstance(r, Unsatisfiable) else None
            if isinstance(r, Unsatisfiable):
                yield CellResult(cell=cell, resolution=None, reason=_reason(r, reasons))
            elif why := _unlike_elsewhere(provider, ms, cell, cache, r, self.others):
                yield CellResult(cell=cell, resolution=None, reason=why)
            else:
                yield _result(cell, r, self._variant(group, cell, r), spec.targets[0].platform in LINUX_PLATFORMS)


def _host_refusal(cell: Cell, t: Target) -> str:
    """Why a cell's platform cannot run its accelerator ("" when it can), as a project spec's
    target is refused (spec's ``host_problem``): CUDA on macOS, ROCm on Windows."""
    why = host_problem(t.platform, t.vendor)
    if not why:
        return ""
    accel = cell.get("accelerator")
    return f"{f'accelerator {accel}' if accel else 'no accelerator'} on {t.platform}: {why}"


def _grouper(ms: MatrixSpec) -> Callable[[tuple[tuple[str, str], ...]], object]:
    """A cell's values (every cell has the matrix's axes, in order) but those of the axes that
    choose only its base image."""
    keep = [i for i, (axis, _) in enumerate(ms.axes) if axis not in _IMAGE_AXES]
    if len(keep) == len(ms.axes):
        return lambda values: values
    return operator.itemgetter(*keep) if keep else lambda values: ()


def _unlike_elsewhere(provider: Provider, ms: MatrixSpec, cell: Cell, cache: Cache, here: Resolution,
                      platforms: Iterable[str]) -> str:
    """Why the one image tag of a cell, solved as ``here``, cannot serve each of ``platforms`` as
    well ("" when it can): the cell fails there, or gets other builds or another base image."""
    for platform in platforms:
        spec = cell_spec(provider, ms, cell, cache, platform)
        there = try_solve_target(provider, spec, spec.targets[0], cache=cache)
        if isinstance(there, Unsatisfiable):
            return f"{platform}: " + "; ".join(c.reason for c in there.clashes)
        if (there.packages, there.base_image, there.python) != (here.packages, here.base_image, here.python):
            return (f"{platform} gets other builds or another base image than {ms.platforms[0]} "
                    f"({there.base_image}); one image tag cannot hold both: add a platform axis")
    return ""


def _result(cell: Cell, r: Resolution, variant: str, image: bool) -> CellResult:
    """A solved cell: valid, or pruned because it got a neighbour of the torch variant it names
    (``variant``: :func:`_variant_problem`), or (``image``: a Linux cell, whose image is built) has
    no base image."""
    if variant:
        return CellResult(cell=cell, resolution=None, reason=variant)
    if image and not r.base_image:
        return CellResult(cell=cell, resolution=None, reason=r.warnings[0] if r.warnings else "no base image")
    return CellResult(cell=cell, resolution=r)


def _reason(r: Unsatisfiable, reasons: dict[int, str]) -> str:
    """Why a cell of answer ``r`` is pruned, one text per answer."""
    if id(r) not in reasons:
        reasons[id(r)] = "; ".join(c.reason for c in r.clashes)
    return reasons[id(r)]


def _variant_problem(cell: Cell, r: Resolution) -> str:
    """A cell naming a torch variant (cu128, rocm6.2) gets exactly that variant, not a neighbour."""
    accel = cell.get("accelerator")
    torch = next((p for p in r.packages if p.name == "torch"), None)
    if torch is None or not _VARIANT.match(accel):
        return ""
    if torch.variant == accel or torch.variant.startswith(accel + "."):
        return ""
    return f"torch {torch.version} has no {accel} build (it has {torch.variant} for this CUDA/ROCm)"



def check_includes(results: list[CellResult]) -> str:
    """Why ``--check`` fails: the [[include]] cells that are invalid, each with its reason ("" when
    every one is valid)."""
    bad = [r for r in results if r.cell.included and not r.valid]
    if not bad:
        return ""
    return f"{len(bad)} [[include]] cell(s) invalid: " + "; ".join(f"{r.cell.id}: {r.reason}" for r in bad)
