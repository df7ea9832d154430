"""CUDA extension packages in the solve: a ``[packages] pip`` line naming flash-attn, xformers,
vllm, bitsandbytes and the like (``matrices/extensions.toml``) takes part in the solve, with
``--frameworks-only`` too.

* The GPUs: a target whose GPUs no admitted release of the package has kernels for is
  unsatisfiable, said in GPU terms with what to use instead (:func:`refusal`).
* torch: its candidates are kept to those some release works with (torch range, the CUDA of the
  build, the Pythons), and those for which a prebuilt wheel exists come first (:func:`narrow`).
* How it installs: from the default index, as a prebuilt wheel from a GitHub release or PyG's
  pages, or compiled in the image for the target's GPUs only (:func:`pins`); a source build
  moves the image to the devel flavour of its CUDA. What it installs first goes to the full
  resolve with everything else (:func:`resolvable_lines`: pinned and hashed), and the variables,
  settings and requirements a lock may give a build are the data's closed lists of its package
  (:func:`build_rules`, which the lock reader holds every entry to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec
import msgspec.structs
from packaging.specifiers import SpecifierSet

from ..data import Extension, ExtensionWheel
from ..domain import DEFAULT_PLATFORM, LINUX_PLATFORMS, PLATFORMS, canonical_name, kernels, os_of
from ..errors import Clash, Unsatisfiable
from ..provider import Provider
from ..spec import FrameworkReq, GpuReq, ProjectSpec, Target
from ..versions import Arch, PipRequirement, parse_arch, parse_requirement
from .model import Candidate, ExtensionPin, Reporter

if TYPE_CHECKING:  # packaging's requirement parser: imported only when [packages] pip lists something
    from packaging.requirements import Requirement

__all__ = ["ARCH_LISTS", "Asked", "BuildRules", "asked", "build_archs", "build_rules", "degraded", "devel_flavor",
           "narrow", "pins", "refusal", "resolvable_lines", "wheel_note", "with_torch"]

_TORCH = "torch"


class Asked(msgspec.Struct, frozen=True, kw_only=True):
    """An extension package a ``[packages] pip`` line names, and the data rows of the releases it
    admits (newest first), each with the release it would lock."""

    package: str
    line: str
    rows: tuple[tuple[Extension, str], ...]


def _requirement(line: str) -> Requirement | PipRequirement | None:
    """``line`` as a requirement; None for a direct reference (the user chose the file) or no requirement."""
    try:
        req = parse_requirement(line)
    except ValueError:  # packaging's InvalidRequirement
        return None
    return None if req.url else req


def _version_in(row: Extension, req: Requirement | PipRequirement) -> str:
    """The release of ``row`` that ``req`` locks: its newest, else an exact pin in its range ("" for none)."""
    pins = [s.version for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    in_row = SpecifierSet(row.versions)
    return next((v for v in (row.newest, *pins)
                 if in_row.contains(v, prereleases=True) and req.specifier.contains(v, prereleases=True)), "")


def _steered(spec: ProjectSpec) -> dict[str, str]:
    """Package -> the release the full lock read on the index for its pip line, where that release's
    Requires-Dist narrowed a framework (``asked_by = "vllm==0.11.0"``, see lock/steer.py)."""
    named = (p.partition("==") for f in spec.frameworks for p in f.asked_by.split(", ") if "==" in p)
    return {canonical_name(name): version for name, _, version in named}


def _admitted(rows: Sequence[Extension], req: Requirement | PipRequirement,
              steered: str) -> tuple[tuple[Extension, str], ...]:
    """The rows the line admits, each with the release it locks: the release the index gave when
    the full lock read one, else the newest the line admits."""
    if steered:
        return tuple((row, steered) for row in rows if SpecifierSet(row.versions).contains(steered, prereleases=True))
    return tuple((row, v) for row in rows if (v := _version_in(row, req)))


def asked(provider: Provider, spec: ProjectSpec) -> tuple[Asked, ...]:
    """The extension packages the spec's pip lines name, in the spec's order; a line that admits
    no release the data knows asks nothing (the index's own Requires-Dist still steers it)."""
    if not spec.pip:
        return ()
    out = []
    steered = _steered(spec)
    for line in spec.pip:
        req = _requirement(line)
        if req is not None and not spec.applies(req.marker, provider.pythons()):
            continue  # its marker is true on no target: not installed there, so it asks nothing
        name = canonical_name(req.name) if req is not None else ""
        rows = _admitted(provider.extensions(name), req, steered.get(name, "")) if req is not None else ()
        if rows:
            out.append(Asked(package=name, line=line, rows=rows))
    return tuple(out)


# ---------------------------------------------------------------------------- the GPUs


def _serves(row: Extension, t: Target, gpu: GpuReq | None) -> bool:
    """Whether ``row``'s code runs on ``gpu`` of ``t`` (None: a target without GPUs)."""
    if gpu is None:
        return row.cpu or t.vendor != "cpu"
    return kernels(row, gpu.arch) != ""


def _serves_all(row: Extension, t: Target) -> bool:
    return all(_serves(row, t, g) for g in (t.gpus or (None,)))


def _code(row: Extension) -> list[Arch]:
    return sorted((parse_arch(a) for a in (*row.archs, *row.ptx)), key=lambda a: (a.major, a.minor))


def _needs(row: Extension) -> str:
    """``sm_80 or newer`` (or ``sm_90 exactly`` for arch-specific code): what ``row``'s code runs on."""
    code = _code(row)
    if not code:
        return "an NVIDIA GPU"
    floor = code[0]
    if floor.suffix == "a" and len(code) == 1:
        return f"sm_{floor.major}{floor.minor} exactly (its {floor.name} code runs on no other GPU)"
    return f"{floor.name.removesuffix(floor.suffix)} or newer"


def _why_not(row: Extension, version: str, t: Target, gpu: GpuReq | None) -> str:
    """Why release ``version`` of ``row`` cannot serve ``gpu``, in GPU terms."""
    label = f"{row.package} {version}"
    if gpu is None:
        return f"{label} needs a GPU (it has no CPU build); target '{t.name}' has none"
    if gpu.vendor != "nvidia":
        return f"{label} has no build for {gpu.name} ({gpu.arch.name}): the data knows CUDA builds only"
    older = [c for c in _code(row) if (c.major, c.minor) > (gpu.arch.major, gpu.arch.minor)]
    if older and len(older) == len(_code(row)):
        return f"{label} needs {_needs(row)}; {gpu.name} is {gpu.arch.name}"
    listed = ", ".join(row.archs + tuple(f"{p} (PTX)" for p in row.ptx))
    return f"{label} has kernels for {listed} only; {gpu.name} is {gpu.arch.name}"


def _family(provider: Provider, row: Extension) -> str:
    """``Ampere``: the generation of the oldest GPU ``row`` serves ("" when unknown)."""
    code = _code(row)
    info = provider.arch_info(f"sm_{code[0].major}{code[0].minor}") if code else None
    return info.family.capitalize() if info is not None else ""


def _instead(provider: Provider, row: Extension) -> str:
    family = _family(provider, row)
    later = f"a GPU of {family} or later" if family else ""
    return ", or ".join(filter(None, (f"use {row.instead}" if row.instead else "", later)))


def _older_release(provider: Provider, a: Asked, t: Target) -> str:
    """A fix: the newest release of the package in the data (outside the line's range) that serves ``t``."""
    fits = next((row for row in provider.extensions(a.package) if _serves_all(row, t)), None)
    if fits is None or any(row is fits for row, _ in a.rows):
        return ""
    return f'[packages] pip "{a.package}=={fits.newest}" (it serves {_gpus_text(t)})'


def _gpus_text(t: Target) -> str:
    return ", ".join(f"{g.name} ({g.arch.name})" for g in t.gpus) or "a CPU"


def _installs_on(row: Extension, platform: str) -> bool:
    """Whether ``row``'s releases install on ``platform``: one its ``platforms`` lists (the platforms of
    its wheels on the default index, or of its prebuilt wheels and image builds), if it lists any; and
    from the default index's wheels, or (a source-install row) as a prebuilt wheel, which the [[wheel]]
    rows publish for Linux x86_64 only, or compiled in the image, which runs Linux
    (``domain.LINUX_PLATFORMS``)."""
    if row.platforms and platform not in row.platforms:
        return False
    return row.install == "index" or platform in LINUX_PLATFORMS


def _platforms_text(platforms: Sequence[str]) -> str:
    return " and ".join(filter(None, (", ".join(platforms[:-1]), platforms[-1]))) if platforms else ""


def _elsewhere(row: Extension, t: Target) -> str:
    """Where ``row`` installs instead of ``t``'s platform, as a fix: WSL2 for a Windows target where
    it installs on Linux x86_64, else a target of the first platform it installs on."""
    where = [p for p in PLATFORMS if _installs_on(row, p)]
    how = "installs its Linux wheel" + (" or builds it in the image" if row.install == "source" else "")
    if os_of(t.platform) == "windows" and DEFAULT_PLATFORM in where:
        return f"WSL2 ([hardware] platform = '{DEFAULT_PLATFORM}', wsl = true), which {how}"
    other = next((p for p in (DEFAULT_PLATFORM, *where) if p in where), "")
    if not other:
        return ""
    if os_of(other) == "linux":
        return f"a Linux target ([hardware] platform = '{other}'), which {how}"
    return f"a {other} target ([hardware] platform = '{other}'), which installs its wheel"


def _release_for_platform(provider: Provider, a: Asked, t: Target) -> str:
    """A fix: the newest release of the package in the data (outside the line's range) that serves
    ``t``'s GPUs and installs on its platform."""
    fits = next((row for row in provider.extensions(a.package)
                 if _serves_all(row, t) and _installs_on(row, t.platform)), None)
    if fits is None or any(row is fits for row, _ in a.rows):
        return ""
    return f'[packages] pip "{a.package}=={fits.newest}" (it has a wheel for {t.platform})'


def _platform_refusal(provider: Provider, a: Asked, t: Target) -> Unsatisfiable | None:
    """The :class:`Unsatisfiable` of a target on whose platform no release the line admits (that
    serves its GPUs) installs: no wheel for it and no image to build it in; None when one does."""
    rows = [(row, v) for row, v in a.rows if _serves_all(row, t)] or list(a.rows)
    if any(_installs_on(row, t.platform) for row, _ in rows):
        return None
    row, version = rows[0]
    if row.install == "source":
        reason = (f"{row.package} {version} has no wheel for {t.platform} (its prebuilt wheels are Linux x86_64 "
                  f"builds) and builds from source only in a Linux image (a {t.platform} target has no Dockerfile)")
    else:
        reason = (f"{row.package} {version} has no wheel for {t.platform} (the default index has its wheels for "
                  f"{_platforms_text(row.platforms)} only)")
    fixes = [_release_for_platform(provider, a, t), _elsewhere(row, t),
             *([f"use {row.instead}"] if row.instead else []), f"drop {a.package} from [packages] pip"]
    return Unsatisfiable(t.name, [Clash(subject=f"[packages] pip {a.line!r}", reason=reason)],
                         [f for f in fixes if f])


def refusal(provider: Provider, t: Target, found: Sequence[Asked]) -> Unsatisfiable | None:
    """The :class:`Unsatisfiable` of a target whose GPUs an asked package cannot serve (no release
    the line admits has code for one of them), or on whose platform it cannot install (no wheel
    for it, no image to build it in), with what would work; None when every one can."""
    for a in found:
        if any(_serves_all(row, t) for row, _ in a.rows):
            if (refused := _platform_refusal(provider, a, t)) is not None:
                return refused
            continue
        row, version = a.rows[0]
        gpu = next(g for g in (t.gpus or (None,)) if not _serves(row, t, g))
        reason = ": ".join(filter(None, (_why_not(row, version, t, gpu), _instead(provider, row))))
        fixes = [_older_release(provider, a, t), f"drop {a.package} from [packages] pip"]
        return Unsatisfiable(t.name, [Clash(subject=f"[packages] pip {a.line!r}", reason=reason)],
                             [f for f in fixes if f])
    return None


# ---------------------------------------------------------------------------- torch


def _needs_torch(found: Sequence[Asked]) -> str:
    """The first asked package whose releases name a torch range ("" for none)."""
    return next((a.package for a in found if any(row.torch for row, _ in a.rows)), "")


def with_torch(spec: ProjectSpec, found: Sequence[Asked]) -> ProjectSpec:
    """``spec`` with torch among its frameworks when an asked package works with torch only (it is
    then chosen for the GPUs as any framework is)."""
    package = _needs_torch(found)
    if not package or spec.framework(_TORCH) is not None:
        return spec
    torch = FrameworkReq(name=_TORCH, specifier=SpecifierSet(), raw="*", asked_by=package)
    return msgspec.structs.replace(spec, frameworks=(*spec.frameworks, torch))


def _cuda_text(c: Candidate) -> str:
    return c.build.cuda.raw if c.build is not None and c.build.cuda is not None else ""


def _pythons(row: Extension, c: Candidate) -> frozenset[str]:
    """The Pythons of ``c`` that ``row`` installs on."""
    if not row.python:
        return c.pythons
    rng = SpecifierSet(row.python)
    return frozenset(p for p in c.pythons if rng.contains(f"{p}.0"))


def _works_with(row: Extension, c: Candidate) -> bool:
    """Whether ``row`` works with torch candidate ``c``: its torch range, the CUDA of its build, a Python."""
    if row.torch and not SpecifierSet(row.torch).contains(c.release.version, prereleases=True):
        return False
    cuda = _cuda_text(c)
    if row.cuda and cuda and not SpecifierSet(row.cuda).contains(cuda, prereleases=True):
        return False
    return bool(_pythons(row, c))


def _rows_for(a: Asked, t: Target, c: Candidate) -> list[tuple[Extension, str]]:
    """The rows the line admits that serve ``t``'s GPUs, install on its platform and work with ``c``."""
    return [(row, v) for row, v in a.rows
            if _serves_all(row, t) and _installs_on(row, t.platform) and _works_with(row, c)]


def _kept(found: Sequence[Asked], t: Target, c: Candidate) -> Candidate | str:
    """``c`` with its Pythons narrowed to those every asked package installs on with it, or why
    one of them does not work with it."""
    pythons = c.pythons
    for a in found:
        rows = _rows_for(a, t, c)
        if not rows:
            return _torch_misfit(a, t)
        pythons &= frozenset().union(*(_pythons(row, c) for row, _ in rows))
    if not pythons:
        return "no Python that the extension packages share with it"
    return msgspec.structs.replace(c, pythons=pythons)


def _torch_misfit(a: Asked, t: Target) -> str:
    ranges = sorted({f"torch {row.torch}" + (f" with CUDA {row.cuda}" if row.cuda else "")
                     for row, _ in a.rows if _serves_all(row, t) and _installs_on(row, t.platform)})
    return f"{a.package} ({a.line}) works with {' or '.join(ranges[:3])}{' or ...' if len(ranges) > 3 else ''}"


def _has_wheel(provider: Provider, found: Sequence[Asked], t: Target, c: Candidate) -> bool:
    """Whether every asked package has a prebuilt wheel for torch candidate ``c``."""
    return all(any(row.install == "index" or _wheel(provider, row, v, c, c.pythons, t) is not None
                   for row, v in _rows_for(a, t, c)) for a in found)


def wheel_note(provider: Provider, found: Sequence[Asked], t: Target, c: Candidate) -> str:
    """``; first among those with a prebuilt flash-attn wheel`` for a torch candidate that the
    preference for prebuilt wheels put first ("" otherwise)."""
    built = [a.package for a in found if any(row.install == "source" for row, _ in a.rows)]
    if c.package != _TORCH or not built or not _has_wheel(provider, found, t, c):
        return ""
    return f"; first among those with a prebuilt {' and '.join(built)} wheel"


def narrow(provider: Provider, found: Sequence[Asked], t: Target, lists: dict[str, list[Candidate]],
           reporter: Reporter) -> list[str]:
    """Keep the torch candidates some release of every asked package works with (the others told
    to ``reporter``), those with a prebuilt wheel of each first; the reasons, each once."""
    if not found or _TORCH not in lists:
        return []
    kept: list[Candidate] = []
    why: dict[str, None] = {}
    for c in lists[_TORCH]:
        got = _kept(found, t, c)
        if isinstance(got, str):
            reporter.rejected(t.name, c.label, got)
            why.setdefault(got)
        else:
            kept.append(got)
    lists[_TORCH] = sorted(kept, key=lambda c: not _has_wheel(provider, found, t, c))
    return list(why)


# ---------------------------------------------------------------------------- how each installs


def _cuda_names(cuda: str) -> tuple[str, ...]:
    """How wheel names write CUDA ``12.8``: ``128`` or ``12``."""
    parts = cuda.split(".")
    return ("".join(parts[:2]), parts[0]) if len(parts) > 1 else (parts[0],)


def _minor(c: Candidate) -> str:
    return ".".join(c.release.raw.split(".")[:2])


def _wheel(provider: Provider, row: Extension, version: str, c: Candidate | None,
           pythons: Iterable[str], t: Target) -> tuple[ExtensionWheel, str, str] | None:
    """The prebuilt wheel row of ``row``'s release ``version`` for torch ``c`` and one of ``pythons``,
    with its CUDA as the file names write it and that Python (None when none). The [[wheel]] rows
    are Linux x86_64 wheels: another platform builds the package."""
    if c is None or t.platform != DEFAULT_PLATFORM:
        return None
    names = _cuda_names(_cuda_text(c))
    for w in provider.extension_wheels(row.package, version):
        cuda = next((n for n in w.cuda if n in names), "")
        py = next((p for p in sorted(pythons, reverse=True) if p in w.python), "")
        if cuda and py and _minor(c) in w.torch:
            return w, cuda, py
    return None


def _wheel_url(w: ExtensionWheel, version: str, c: Candidate, cuda: str, python: str) -> str:
    abi = "TRUE" if w.abi_true and SpecifierSet(w.abi_true).contains(c.release.version, prereleases=True) else "FALSE"
    return w.url.format(version=version, cuda=cuda, torch=_minor(c), abi=abi, py=python.replace(".", ""))


def _arch_value(a: Arch, fmt: str) -> str:
    return f"{a.major}{a.minor}" if fmt == "nodot" else f"{a.major}.{a.minor}"


# the shape of an arch list as each build_format writes it (:func:`_arch_value`, joined by ";"):
# a lock's value must have its variable's shape before it reaches a Dockerfile
ARCH_LISTS = {"dotted": re.compile(r"[0-9]{1,2}\.[0-9]{1,2}(;[0-9]{1,2}\.[0-9]{1,2}){0,31}"),
              "nodot": re.compile(r"[0-9]{2,4}(;[0-9]{2,4}){0,31}")}


class BuildRules(msgspec.Struct, frozen=True, kw_only=True):
    """What a source build of one package may be given, as the data's rows of it name it (each
    row's ``source`` is the setup.py or CI script that reads them): a closed list, so a lock can
    set no other variable in an image."""

    archs: tuple[tuple[str, str], ...] = ()  # the variable that takes the arch list -> its build_format
    settings: tuple[str, ...] = ()  # the NAME=VALUE settings of its builds
    requires: tuple[str, ...] = ()  # what its builds install first
    build_from: tuple[str, ...] = ()  # the requirements its builds install ("" for name==version)
    # its prebuilt wheels' URLs ([[wheel]] rows: {version} {cuda} {torch} {abi} {py} to fill), each with
    # ``page`` (True: a PyG find-links page, "pyg"; False: a GitHub release wheel, "github")
    urls: tuple[tuple[str, bool], ...] = ()

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable a build of the package may be given, sorted."""
        return tuple(sorted({v for v, _ in self.archs} | {s.partition("=")[0] for s in self.settings}))


def build_rules(rows: Iterable[Extension], wheels: Iterable[ExtensionWheel] = ()) -> BuildRules:
    """The closed lists of a package's source builds, from its data rows, and the URLs of its
    prebuilt wheels, from its ``[[wheel]]`` rows."""
    rows = list(rows)
    return BuildRules(archs=tuple(sorted({(r.build_env, r.build_format) for r in rows if r.build_env})),
                      settings=tuple(sorted({s for r in rows for s in r.build_vars})),
                      requires=tuple(sorted({q for r in rows for q in r.build_requires})),
                      build_from=tuple(sorted({r.build_from for r in rows})),
                      urls=tuple(sorted({(w.url, w.page) for w in wheels})))


def build_archs(row: Extension, t: Target) -> tuple[str, ...]:
    """The arch list of a source build for the target's GPUs only: each GPU's own arch for
    TORCH_CUDA_ARCH_LIST (``8.6``); for a package that takes only the values of its own list
    (flash-attn: ``80;90;100;120``), the one whose SASS runs on the GPU (``80`` for an sm_86)."""
    out: list[str] = []
    for gpu in t.gpus:
        own = gpu.arch if row.build_format == "dotted" else next(
            (a for a in map(parse_arch, row.archs) if a.sass_runs_on(gpu.arch)), gpu.arch)
        value = _arch_value(own, row.build_format)
        if value not in out:
            out.append(value)
    return tuple(out)


def _source_pin(row: Extension, version: str, t: Target, why: str) -> ExtensionPin:
    archs = ";".join(build_archs(row, t)) if row.build_env else ""
    return ExtensionPin(name=row.package, version=version, install="source", build_env=row.build_env if archs else "",
                        build_archs=archs, build_from=row.build_from, build_requires=row.build_requires,
                        build_vars=row.build_vars, reason=why)


def _chosen_torch(choices: Sequence[Candidate]) -> Candidate | None:
    return next((c for c in choices if c.package == _TORCH), None)


def _pin(provider: Provider, a: Asked, t: Target, torch: Candidate | None, python: str) -> ExtensionPin:
    """How the asked package installs with the chosen torch and Python."""
    rows = _rows_for(a, t, torch) if torch is not None else [(r, v) for r, v in a.rows if _serves_all(r, t)]
    row, version = (rows or list(a.rows))[0]
    why = _constraint(row, t, torch)
    hit = _wheel(provider, row, version, torch, [python], t)
    if hit is not None and torch is not None:
        w, cuda, py = hit
        where = "PyG's wheel page" if w.page else "its GitHub release"
        return ExtensionPin(name=row.package, version=version, install="pyg" if w.page else "github",
                            url=_wheel_url(w, version, torch, cuda, py),
                            reason=f"{why}; a prebuilt wheel from {where} for torch {_minor(torch)}, CUDA {cuda}, "
                                   f"Python {py}")
    if row.install == "index":
        return ExtensionPin(name=row.package, version=version, install="index", reason=f"{why}; wheels on the index")
    return _source_pin(row, version, t, f"{why}; built from source in the image (no prebuilt wheel for "
                                       f"{_stack_text(torch, python)})")


def _stack_text(torch: Candidate | None, python: str) -> str:
    if torch is None:
        return f"Python {python}"
    return f"torch {torch.release.raw} ({torch.build.variant if torch.build else 'any'}), Python {python}"


def _constraint(row: Extension, t: Target, torch: Candidate | None) -> str:
    """What the package asks of the choice: its GPUs, its torch and CUDA."""
    parts = [f"needs {_needs(row)}" if t.vendor != "cpu" else "runs on the CPU"]
    if row.torch:
        parts.append(f"torch {row.torch}" + (f" (chose {torch.release.raw})" if torch is not None else ""))
    if row.cuda:
        parts.append(f"CUDA {row.cuda}")
    return ", ".join(parts)


def pins(provider: Provider, found: Sequence[Asked], t: Target, choices: Sequence[Candidate],
         python: str) -> tuple[ExtensionPin, ...]:
    """How each asked package installs in the resolved environment, in the spec's order."""
    torch = _chosen_torch(choices)
    return tuple(_pin(provider, a, t, torch, python) for a in found)


def degraded(provider: Provider, found: Sequence[Asked], t: Target, extensions: Sequence[ExtensionPin]
             ) -> tuple[str, ...]:
    """A warning per GPU that runs a locked package without one of its features (vLLM's
    FlashAttention backend below sm_80, bitsandbytes' LLM.int8() below sm_75)."""
    rows = {(x.name, x.version): _row_of(found, x) for x in extensions}
    return tuple(f"{x.name} {x.version} on {g.name} ({g.arch.name}): {row.degraded}" for x in extensions
                 if (row := rows[x.name, x.version]) is not None and row.degraded_below
                 for g in t.gpus if _older_than(g, parse_arch(row.degraded_below)))


def _row_of(found: Sequence[Asked], x: ExtensionPin) -> Extension | None:
    """The row ``x`` was locked from."""
    return next((r for a in found for r, v in a.rows if r.package == x.name and v == x.version), None)


def _older_than(gpu: GpuReq, floor: Arch) -> bool:
    return gpu.vendor == "nvidia" and (gpu.arch.major, gpu.arch.minor) < (floor.major, floor.minor)


def devel_flavor(spec: ProjectSpec, extensions: Sequence[ExtensionPin], found: Sequence[Asked]) -> str:
    """The image flavour the environment needs: devel when a package compiles (at build or at run
    time), else the spec's own ("" when it does not change)."""
    compiles = any(x.install == "source" for x in extensions) or any(row.nvcc for a in found for row, _ in a.rows[:1])
    if not compiles or "devel" in spec.flavor:
        return ""
    return "cudnn-devel" if spec.flavor.startswith("cudnn") else "devel"


def resolvable_lines(pip: Sequence[str], extensions: Sequence[ExtensionPin]) -> tuple[str, ...]:
    """``[packages] pip`` as the full resolve takes it: a GitHub release wheel's line as its direct
    URL (the lock then holds its hash), a package built in the image or taken from PyG's pages left
    to the Dockerfile's own step, and what a source build installs first (ninja, packaging,
    setuptools, ...), resolved with everything else so that the lock pins and hashes them too."""
    how = {x.name: x for x in extensions}
    out = []
    for line in pip:
        req = _requirement(line)
        x = how.get(canonical_name(req.name)) if req is not None else None
        if x is None or x.install == "index":
            out.append(line)
        elif x.install == "github":
            out.append(x.requirement)
    return (*out, *_build_lines(extensions, out))


def _build_lines(extensions: Sequence[ExtensionPin], taken: Sequence[str]) -> tuple[str, ...]:
    """What the source builds install first, each once, less the lines already ``taken``."""
    built = dict.fromkeys(r for x in extensions if x.install == "source" for r in x.build_requires)
    return tuple(r for r in built if r not in taken)

