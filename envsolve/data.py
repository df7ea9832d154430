"""Load and validate the compatibility data under ``matrices/`` into frozen records.

Every file is checked against the schema in ``matrices/README.md``; every problem in every
file is collected and reported at once (file, row, key) as one :class:`MatrixError`.

Parsing the TOML and checking every row costs more than everything else `envsolve lock`
does, so the checked records are kept in a compiled cache (msgpack in the user's cache folder)
keyed by the digest of the matrix files and of the code that reads them: a change to either
rebuilds it, a corrupt or unwritable cache is ignored, and nothing ever requires it. A compiled
file carries what it was made from (envsolve's version, the matrices' and the code's digests, the
digest of its records, keyed in the user's cache with the user's secret key), checked on every
read, and is read only when it is a regular file of this user's that nobody else may write: a
forged, stale or spoilt file, or one made elsewhere, is made again, never believed.
``data --validate`` reads the TOML itself (:func:`load_dir`), never a cache. Reads package data,
that cache and the key that seals it only.
"""

# No `from __future__ import annotations` here: msgspec reads this module's record types when it
# first decodes the compiled cache, and types written as strings it compiles one by one (about 6 ms a run).
import fnmatch
import hashlib
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec
from packaging.version import InvalidVersion, Version

from .domain import (
    ACCELERATORS,
    DEFAULT_INDEXES,
    DEFAULT_PLATFORM,
    FRAMEWORKS,
    LINUX_PLATFORMS,
    PLATFORMS,
    SHARED_NAMES,
    SHARED_PREFIXES,
    Accelerator,
    Platform,
    Vendor,
    canonical_name,
    shared_name,
)
from .errors import MatrixError, Problem, Problems
from .paths import SHIPPED_COMPILED, cache_dir, data_dir, state_folder
from .tables import Check, TableReader
from .versions import Dotted, parse_arch, parse_dotted, parse_driver, parse_python_minor

__all__ = [
    "SCHEMA",
    "ArchInfo",
    "Build",
    "Cudnn",
    "Extension",
    "ExtensionWheel",
    "CondaBuild",
    "Compiler",
    "CudaCompat",
    "CudaMajor",
    "DriverBranch",
    "Gpu",
    "Image",
    "ImageEndOfLife",
    "JetPack",
    "Kmd",
    "Library",
    "Manylinux",
    "Matrices",
    "OsRelease",
    "PlatformImage",
    "PlatformWheel",
    "Release",
    "Rocm",
    "Tool",
    "Toolkit",
    "cache_dir",
    "compat_package",
    "compile_into",
    "data_dir",
    "fold",
    "load",
    "load_dir",
    "low_confidence",
    "shared_of",
]

SCHEMA = 1
_GPU_VENDORS: tuple[Vendor, ...] = ("nvidia", "amd", "intel", "apple")  # the vendors of GPUs and architectures


# ---------------------------------------------------------------------------- records


class _Row(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A row of a matrix file, checked; kept in the compiled cache without the fields left at their
    defaults (most of a build's thirty are empty)."""

    source: str
    confidence: str = "high"
    note: str = ""


class ArchInfo(_Row, frozen=True, kw_only=True):
    name: str
    vendor: Vendor
    family: str
    compute_capability: str = ""


class Gpu(_Row, frozen=True, kw_only=True):
    name: str
    vendor: Vendor
    arch: str
    aliases: tuple[str, ...] = ()
    memory_gib: float | None = None
    peak_tflops: tuple[tuple[str, float], ...] = ()
    platform: Platform | Literal[""] = ""  # the platform it comes in (a superchip's Arm CPU, a Jetson); "": any
    forward_compat: bool = False  # a data-center GPU: CUDA forward compatibility (cuda-compat) serves it

    @property
    def geforce(self) -> bool:
        """A GeForce card (NVIDIA's consumer line), as its names say: what refusals of forward
        compatibility call it."""
        return any("geforce" in n.lower() for n in (self.name, *self.aliases))


class CudaMajor(_Row, frozen=True, kw_only=True):
    major: int
    minor_compat_driver_min: Dotted | None = None  # None: no minor-version compatibility (CUDA 10 and older)
    minor_compat_driver_min_windows: Dotted | None = None  # the same on Windows (and WSL2: the Windows driver)


class CudaCompat(_Row, frozen=True, kw_only=True):
    """A CUDA forward-compatibility package (``[[compat]]`` of cuda.toml): the CUDA major.minor
    whose user-mode driver it brings, its name in NVIDIA's repositories and the driver branches
    it runs on."""

    cuda: Dotted
    package: str  # cuda-compat-13-0
    branches: tuple[int, ...]

    @property
    def branches_text(self) -> str:
        """``R535, R570, R580``: the branches as messages name them."""
        return ", ".join(f"R{b}" for b in self.branches)


def compat_package(major: int, minor: int) -> str:
    """``cuda-compat-13-0``: the name NVIDIA's repositories give CUDA major.minor's forward-compatibility
    package (``cuda-compat-<major>-<minor>``); ``[[compat]]`` rows are held to it, and the renderer installs it."""
    return f"cuda-compat-{major}-{minor}"


class Toolkit(_Row, frozen=True, kw_only=True):
    version: Dotted
    driver_min: Dotted
    archs: tuple[str, ...]
    driver_min_windows: Dotted | None = None  # NVIDIA's Windows column (WSL2 runs the Windows driver); None: none


class DriverBranch(_Row, frozen=True, kw_only=True):
    branch: int
    cuda_max: Dotted
    unsupported_families: tuple[str, ...] = ()
    wsl_cuda: bool = False  # the first branch whose Windows driver runs CUDA under WSL 2


class Cudnn(_Row, frozen=True, kw_only=True):
    version: Dotted
    cuda_major: int
    archs: tuple[str, ...]  # the compute capabilities it has SASS for (its support matrix)
    ptx: tuple[str, ...] = ()  # the archs whose PTX it ships (JIT-compiled for newer GPUs); (): SASS only


class Rocm(_Row, frozen=True, kw_only=True):
    version: Dotted
    latest: str
    gfx: tuple[str, ...]
    kernels: tuple[str, ...] = ()  # the targets its libraries ship code for, when not ``gfx``

    @property
    def shipped(self) -> tuple[str, ...]:
        """The gfx targets whose kernels this release's libraries (rocBLAS) ship: what a framework
        build linked against it can run on, supported or not."""
        return self.kernels or self.gfx


class Release(_Row, frozen=True, kw_only=True):
    package: str
    version: Version
    raw: str
    python: tuple[str, ...]
    companions: tuple[tuple[str, str], ...] = ()
    # a companion whose wheels cover fewer Pythons than the release's (a spec asking for it gets only these)
    companion_python: tuple[tuple[str, tuple[str, ...]], ...] = ()
    requires: tuple[tuple[str, str], ...] = ()
    backends: tuple[tuple[str, str], ...] = ()
    # Requires-Dist of the requirements frameworks share (domain.shared_name): canonical name -> specifier
    shared: tuple[tuple[str, str], ...] = ()


class Build(_Row, frozen=True, kw_only=True):
    package: str
    version: Version
    raw: str
    variant: str
    accelerator: Accelerator
    index: str
    default: bool = False
    cuda: Dotted | None = None
    rocm: Dotted | None = None
    cudnn: str = ""
    archs: tuple[str, ...] = ()
    ptx: tuple[str, ...] = ()
    gfx: tuple[str, ...] = ()
    xpu: tuple[str, ...] = ()  # Intel AOT targets (ocloc names: bmg, dg2, pvc); SPIR-V covers the rest by JIT
    platforms: tuple[Platform, ...] = ()  # published for these only (macOS, Windows); (): linux/amd64 + platforms.toml
    index_path: str = ""
    dist: str = ""
    extra: str = ""
    python: tuple[str, ...] = ()
    driver_min: Dotted | None = None
    pins: tuple[tuple[str, str], ...] = ()
    plugins: tuple[tuple[str, str], ...] = ()  # installed beside it, not required by it (tensorflow-metal, jax-metal)
    system_cuda: bool = False
    dist_version: str = ""
    jetpack: str = ""  # a Jetson build: the JetPack major it is built for
    find_links: str = ""  # its wheels are only on this find-links page (pip -f), on no index envsolve installs from
    jetpacks: tuple[str, ...] = ()  # the JetPack releases of that major it runs on ("5.1" for 5.1.x); () for all
    shared: tuple[tuple[str, str], ...] = ()  # as its release's; each name here replaces the release's

    def runs_on_jetpack(self, version: Dotted) -> bool:
        """Whether this Jetson build runs on JetPack ``version``: built for its major and, where
        ``jetpacks`` narrows the major, one of those releases (``5.1`` admits 5.1.x)."""
        if self.jetpack != str(version.major):
            return False
        return not self.jetpacks or any(jetpack_is(p, version) for p in self.jetpacks)


def jetpack_is(prefix: str, version: Dotted) -> bool:
    """Whether JetPack ``version`` is the release ``prefix`` names (``5.1`` admits 5.1.2; ``5.1.0`` is 5.1)."""
    parts = tuple(int(x) for x in prefix.split(".") if x.isdigit())
    key = version.key + (0,) * max(0, len(parts) - len(version.key))
    return key[: len(parts)] == parts


class CondaBuild(_Row, frozen=True, kw_only=True):
    """What conda-forge publishes of one framework version."""

    name: str
    framework: str
    version: str
    cuda: tuple[str, ...] = ()
    cpu: bool = False
    build: str = ""
    cpu_build: str = ""
    python: tuple[str, ...] = ()

    def spec(self, cuda: str | None, python: str) -> str:
        """The MatchSpec of the build for ``cuda`` (None: the CPU build), or "" when none exists."""
        if self.python and python not in self.python:
            return ""
        if self.noarch:
            return f"{self.name}={self.version}"
        return self._cpu_spec() if cuda is None else self._cuda_spec(cuda)

    @property
    def noarch(self) -> bool:
        """Whether one build serves CPU and GPU alike (it names no build string and no CUDA)."""
        return not (self.build or self.cpu_build or self.cuda)

    def _cpu_spec(self) -> str:
        if not self.cpu:
            return ""
        return f"{self.name}={self.version}" + (f"={self.cpu_build}" if self.cpu_build else "")

    def _cuda_spec(self, cuda: str) -> str:
        if cuda not in self.cuda or not self.build:
            return ""
        return f"{self.name}={self.version}={self.build.format(cuda_nodot=cuda.replace('.', ''))}"


class Tool(_Row, frozen=True, kw_only=True):
    name: str
    version: str
    purpose: str = ""


class Image(_Row, frozen=True, kw_only=True):
    repository: str
    accelerator: Accelerator
    version: Dotted
    tag: str
    os: tuple[str, ...]
    flavors: tuple[str, ...]
    cudnn: str = ""
    python: str = ""
    removed: bool = False  # the registry deleted these tags (end of life): recorded, never chosen

    def ref(self, flavor: str, os: str) -> str:
        tag = self.tag.format(version=self.version.raw, flavor=flavor, os=os)
        return f"{self.repository}:{tag}"


class ImageEndOfLife(_Row, frozen=True, kw_only=True):
    """When a registry deletes the tags of an image line (``[[eol]]`` of images.toml): the
    versions of ``repository`` it covers, the day they were marked end of life and the day from
    which they may be deleted (ISO dates)."""

    repository: str
    versions: str  # PEP 440 specifier of the image versions (``==12.6.2``, ``>=11,<12``)
    deleted: str  # the first day the tags may be gone
    marked: str = ""  # the day they were marked end of life


class OsRelease(_Row, frozen=True, kw_only=True):
    """A base image OS: the Python minor its own ``python3`` package is, and its glibc (what a
    manylinux wheel needs at least)."""

    name: str
    python: str = ""
    glibc: Dotted | None = None


class Manylinux(_Row, frozen=True, kw_only=True):
    """The glibc a framework's Linux wheels need (``[[manylinux]]`` of platforms.toml): the
    ``manylinux_X_Y`` tag of the wheels of ``package`` in ``versions`` (variants matching one of
    ``variants``; all when empty) for ``platform``."""

    package: str
    versions: str
    platform: Platform
    glibc: Dotted
    variants: tuple[str, ...] = ()


class Library(_Row, frozen=True, kw_only=True):
    """A CUDA library a framework build loads beside its own kernels (``[[library]]`` of
    libraries.toml: cuBLAS): the releases of ``name`` in ``versions`` (its own numbering) for CUDA
    ``cuda_major`` carry SASS for ``archs`` and PTX for ``ptx``."""

    name: str
    versions: str
    cuda_major: int
    archs: tuple[str, ...]
    ptx: tuple[str, ...] = ()


class Compiler(_Row, frozen=True, kw_only=True):
    """A compiler a framework runs on the user's machine to make GPU code (``[[compiler]]`` of
    compilers.toml): XLA's LLVM and ptxas for JAX, Triton for torch.compile. A GPU newer than
    ``newest_arch`` gets no code from it, whatever PTX the wheel carries: with ``every_run``
    (every kernel is compiled so) the environment fails; else only the paths that use it."""

    package: str
    versions: str
    compiler: str
    newest_arch: str
    every_run: bool
    # archs at or below ``newest_arch`` it cannot target all the same (Triton 3.6's ptxas rejects
    # Thor's sm_110 though it knows sm_121)
    rejects: tuple[str, ...] = ()
    error: str = ""  # what the user sees on such a GPU; ``{arch}`` is the GPU's arch


class PlatformWheel(_Row, frozen=True, kw_only=True):
    """Builds published for a platform other than the default one."""

    package: str
    platform: Platform
    index: str
    versions: str
    variants: tuple[str, ...]
    python: tuple[str, ...] = ()
    dist: str = ""
    archs: tuple[str, ...] = ()  # SASS compiled in there, when it differs from the default platform's build
    ptx: tuple[str, ...] = ()
    xpu: tuple[str, ...] = ()  # Intel AOT targets there, when they differ (torch's Windows XPU builds)
    # the index the builds are on for this platform when it is not theirs: the default index's CUDA
    # builds of torch are on the PyTorch index for Windows (under their variant's folder, cu132)
    on_index: str = ""


class PlatformImage(_Row, frozen=True, kw_only=True):
    """Tags of an image repository published for a platform other than the default one."""

    repository: str
    platform: Platform
    versions: str


class JetPack(_Row, frozen=True, kw_only=True):
    """A JetPack release: what it installs on a Jetson and the modules it supports."""

    version: Dotted
    l4t: str
    cuda: Dotted
    cudnn: str
    tensorrt: str
    os: str
    gpus: tuple[str, ...]
    python: str = ""  # the system Python of its Ubuntu, which NVIDIA's Jetson wheels are built for
    image: str = ""
    sbsa: bool = False


class Kmd(_Row, frozen=True, kw_only=True):
    """The amdgpu kernel driver of a ROCm release and the ROCm user spaces tested with it."""

    version: Dotted
    user: tuple[str, ...]


class Extension(_Row, frozen=True, kw_only=True):
    """What a range of releases of a CUDA extension package (flash-attn, xformers, vllm) asks of
    the GPUs, torch and CUDA, and how it installs when no prebuilt wheel fits (``kind = "extensions"``)."""

    package: str  # the distribution name a [packages] pip line names
    versions: str  # PEP 440 specifier of the releases the row covers
    newest: str  # the newest release in that range: what an open pip line locks
    install: str  # index: the default index has its wheels | source: compiled in the image
    archs: tuple[str, ...] = ()  # SASS its kernels carry
    ptx: tuple[str, ...] = ()  # code that compiles for any newer arch (embedded PTX, a JIT such as Triton's)
    gfx: tuple[str, ...] = ()  # AMD targets (none curated yet)
    xpu: tuple[str, ...] = ()  # Intel targets (none: the extensions carried are CUDA's)
    accelerator: str = "cuda"  # what its kernels are for (as a build's)
    torch: str = ""  # PEP 440 specifier of the torch it works with ("" for any)
    cuda: str = ""  # PEP 440 specifier of the CUDA of the torch build it needs ("" for any)
    python: str = ""  # PEP 440 specifier of the Pythons it installs on ("" for any)
    cpu: bool = False  # installs and imports on a target without a GPU
    nvcc: bool = False  # compiles kernels at run time: the image needs the devel flavour
    build_env: str = ""  # the variable that sets a source build's arch list
    build_format: str = "dotted"  # how that list is written: dotted ("8.0;9.0") | nodot ("80;90")
    build_requires: tuple[str, ...] = ()  # what a source build needs installed first
    build_from: str = ""  # the pip requirement a source build installs ("": package==version)
    build_vars: tuple[str, ...] = ()  # other NAME=VALUE settings of a source build
    degraded_below: str = ""  # GPUs older than this arch run it with a feature missing
    degraded: str = ""  # what is missing there
    instead: str = ""  # what to use on a GPU it cannot serve
    platforms: tuple[Platform, ...] = ()  # where its releases install (index wheels, or the image); (): no fact


class ExtensionWheel(_Row, frozen=True, kw_only=True):
    """Prebuilt wheels of one extension release outside the default index (a GitHub release's
    assets, PyG's wheel pages): the torch minors, CUDA and Pythons they exist for."""

    package: str
    versions: str  # PEP 440 specifier of the releases
    url: str  # a wheel's URL ({version} {cuda} {torch} {abi} {py}), or a find-links page with ``page``
    torch: tuple[str, ...]  # torch major.minor
    cuda: tuple[str, ...]  # CUDA as the file names write it: "12" (a major), "128" (12.8)
    python: tuple[str, ...]
    abi_true: str = ""  # the torch releases whose wheels use the C++11 ABI ({abi} = TRUE)
    page: bool = False  # ``url`` is a find-links page that lists the wheels


class Matrices(msgspec.Struct, frozen=True, kw_only=True):
    """Every record of the shipped data, plus its data version and digest."""

    data_version: str
    digest: str
    archs: tuple[ArchInfo, ...]
    gpus: tuple[Gpu, ...]
    cuda_majors: tuple[CudaMajor, ...]
    toolkits: tuple[Toolkit, ...]
    cuda_compats: tuple[CudaCompat, ...] = ()  # forward compatibility's packages, by CUDA
    branches: tuple[DriverBranch, ...]
    cudnn: tuple[Cudnn, ...]
    rocm: tuple[Rocm, ...]
    releases: tuple[Release, ...]
    builds: tuple[Build, ...]
    images: tuple[Image, ...]
    tools: tuple[Tool, ...] = ()
    conda: tuple[CondaBuild, ...] = ()
    oses: tuple[OsRelease, ...] = ()
    image_eols: tuple[ImageEndOfLife, ...] = ()  # when registries delete image lines' tags
    platform_wheels: tuple[PlatformWheel, ...] = ()
    platform_images: tuple[PlatformImage, ...] = ()
    jetpacks: tuple[JetPack, ...] = ()
    kmds: tuple[Kmd, ...] = ()
    extensions: tuple[Extension, ...] = ()
    extension_wheels: tuple[ExtensionWheel, ...] = ()
    manylinux: tuple[Manylinux, ...] = ()
    compilers: tuple[Compiler, ...] = ()
    libraries: tuple[Library, ...] = ()


# ---------------------------------------------------------------------------- schema

def _str(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("must be a non-empty string")
    return v


def _int(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ValueError("must be an integer")
    return v


def _bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ValueError("must be a number")
    return float(v)


def _strs(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or not all(isinstance(x, str) and x for x in v):
        raise ValueError("must be a list of strings")
    return tuple(v)


def _branch(v: Any) -> int:
    """A driver branch, written "570" or 570."""
    if isinstance(v, str) and v.isdigit():
        return int(v)
    return _int(v)


def _branches(v: Any) -> tuple[int, ...]:
    """Driver branches, each written "570" or 570."""
    try:
        if isinstance(v, list) and v:
            return tuple(_branch(x) for x in v)
    except ValueError:
        pass
    raise ValueError('must be a non-empty list of driver branches such as ["535", "570"]')


def _one_of(*allowed: str) -> Check:
    """A closed word: one of ``allowed`` (domain's ``PLATFORMS``, ``ACCELERATORS``, ...)."""

    def check(v: Any) -> str:
        if v not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}")
        return str(v)

    return check


def _dotted(v: Any) -> Dotted:
    return parse_dotted(_str(v))


def _driver(v: Any) -> Dotted:
    return parse_driver(_str(v))


def _arch_name(v: Any) -> str:
    """The name of an ``[[arch]]`` row: an architecture (``sm_90``, ``gfx942``)."""
    parse_arch(_str(v))
    return str(v)


def _version(v: Any) -> Version:
    try:
        return Version(_str(v))
    except InvalidVersion as e:
        raise ValueError(f"{v!r} is not a PEP 440 version") from e


def _date(v: Any) -> str:
    """An ISO date (``2025-06-03``, a TOML date or its text), kept as its text."""
    import datetime

    if isinstance(v, datetime.date) and not isinstance(v, datetime.datetime):
        return v.isoformat()
    try:
        if isinstance(v, str) and datetime.date.fromisoformat(v).isoformat() == v:
            return v
    except ValueError:
        pass
    raise ValueError(f"must be a date such as 2025-06-03, not {v!r}")


def _specifier(v: Any) -> str:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        SpecifierSet(_str(v))
    except InvalidSpecifier as e:
        raise ValueError(f"{v!r} is not a version specifier such as '>=2.7'") from e
    return str(v)


def _version_text(v: Any) -> str:
    """A PEP 440 version, kept as written."""
    _version(v)
    return str(v)


def _archs(v: Any) -> tuple[str, ...]:
    names = _strs(v)
    for n in names:
        parse_arch(n)
    return names


def _platforms(v: Any) -> tuple[str, ...]:
    names = _strs(v)
    for n in names:
        if n not in PLATFORMS:
            raise ValueError(f"{n!r} is not a platform: {', '.join(PLATFORMS)}")
    return names


def _pythons(v: Any) -> tuple[str, ...]:
    names = _strs(v)
    for n in names:
        parse_python_minor(n)
    return tuple(sorted(set(names), key=parse_python_minor))


def _str_map(v: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(v, dict) or not all(isinstance(x, str) for x in v.values()):
        raise ValueError("must be a table of strings")
    return tuple(sorted(v.items()))


def _shared_requirements(v: Any) -> tuple[tuple[str, str], ...]:
    """A framework row's ``shared``: canonical names of shared requirements -> PEP 440 specifiers."""
    pairs = _str_map(v)
    for name, spec in pairs:
        if canonical_name(name) != name:
            raise ValueError(f"{name!r} is not a canonical distribution name (write {canonical_name(name)!r})")
        if not shared_name(name):
            raise ValueError(f"{name!r} is not a requirement frameworks share ({', '.join(SHARED_NAMES)}, "
                             f"{', '.join(p + '*' for p in SHARED_PREFIXES)})")
        try:
            _specifier(spec)
        except ValueError as e:
            raise ValueError(f"{name}: {e}") from None
    return pairs


def _pythons_map(v: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(v, dict):
        raise ValueError("must be a table of Python lists")
    return tuple(sorted((k, _pythons(x)) for k, x in v.items()))


def _num_map(v: Any) -> tuple[tuple[str, float], ...]:
    if not isinstance(v, dict):
        raise ValueError("must be a table of numbers")
    return tuple(sorted((k, _num(x)) for k, x in v.items()))


_COMMON: dict[str, Check] = {"source": _str, "confidence": _one_of("low"), "note": _str}
_OTHER_PLATFORMS = tuple(p for p in PLATFORMS if p != DEFAULT_PLATFORM)


class _Rows:
    """One array of tables of a kind of file (``[[build]]`` of a framework file): the record it
    makes, the checks of its fields in the order its problems are reported, and the keys it must have."""

    def __init__(self, cls: type, required: dict[str, Check], optional: dict[str, Check]) -> None:
        self.cls = cls
        self.checks = {**required, **optional, **_COMMON}
        self.must = (*required, "source")


# kind -> row table -> its rows
_KINDS: dict[str, dict[str, _Rows]] = {
    "gpus": {
        "arch": _Rows(
            ArchInfo,
            {"name": _arch_name, "vendor": _one_of(*_GPU_VENDORS), "family": _str},
            {"compute_capability": _str},
        ),
        "gpu": _Rows(
            Gpu,
            {"name": _str, "vendor": _one_of(*_GPU_VENDORS), "arch": _str},
            {"aliases": _strs, "memory_gib": _num, "peak_tflops": _num_map, "platform": _one_of(*PLATFORMS),
             "forward_compat": _bool},
        ),
    },
    "cuda": {
        "major": _Rows(CudaMajor, {"major": _int}, {"minor_compat_driver_min": _driver,
                                                     "minor_compat_driver_min_windows": _driver}),
        "toolkit": _Rows(
            Toolkit,
            {"version": _dotted, "driver_min": _driver, "archs": _archs},
            {"driver_min_windows": _driver},
        ),
        "compat": _Rows(CudaCompat, {"cuda": _dotted, "package": _str, "branches": _branches}, {}),
    },
    "drivers": {
        "branch": _Rows(
            DriverBranch,
            {"branch": _branch, "cuda_max": _dotted},
            {"unsupported_families": _strs, "wsl_cuda": _bool},
        ),
    },
    "cudnn": {
        "release": _Rows(Cudnn, {"version": _dotted, "cuda_major": _int, "archs": _archs}, {"ptx": _archs}),
    },
    "rocm": {
        "release": _Rows(Rocm, {"version": _dotted, "latest": _str, "gfx": _archs}, {"kernels": _archs}),
    },
    "framework": {
        "release": _Rows(
            Release,
            {"version": _version, "python": _pythons},
            {"companions": _str_map, "companion_python": _pythons_map, "requires": _str_map,
             "backends": _str_map, "shared": _shared_requirements},
        ),
        "build": _Rows(
            Build,
            {
                "version": _version,
                "variant": _str,
                "accelerator": _one_of(*ACCELERATORS),
                "index": _one_of("pypi", *DEFAULT_INDEXES),
            },
            {
                "default": _bool,
                "cuda": _dotted,
                "rocm": _dotted,
                "cudnn": _str,
                "archs": _archs,
                "ptx": _archs,
                "gfx": _archs,
                "xpu": _archs,
                "platforms": _platforms,
                "index_path": _str,
                "dist": _str,
                "extra": _str,
                "python": _pythons,
                "driver_min": _driver,
                "pins": _str_map,
                "plugins": _str_map,
                "system_cuda": _bool,
                "dist_version": _str,
                "jetpack": _str,
                "find_links": _str,
                "jetpacks": _strs,
                "shared": _shared_requirements,
            },
        ),
    },
    "conda": {
        "package": _Rows(
            CondaBuild,
            {"name": _str, "framework": _one_of(*FRAMEWORKS), "version": _str},
            {"cuda": _strs, "cpu": _bool, "build": _str, "cpu_build": _str, "python": _pythons},
        ),
    },
    "platforms": {
        "wheel": _Rows(
            PlatformWheel,
            {"package": _one_of(*FRAMEWORKS), "platform": _one_of(*_OTHER_PLATFORMS),
             "index": _one_of("pypi", *DEFAULT_INDEXES), "versions": _specifier, "variants": _strs},
            {"python": _pythons, "dist": _str, "archs": _archs, "ptx": _archs, "xpu": _archs,
             "on_index": _one_of(*DEFAULT_INDEXES)},
        ),
        "image": _Rows(PlatformImage,
                       {"repository": _str, "platform": _one_of(*_OTHER_PLATFORMS), "versions": _specifier}, {}),
        "jetpack": _Rows(
            JetPack,
            {"version": _dotted, "l4t": _str, "cuda": _dotted, "cudnn": _str, "tensorrt": _str, "os": _str,
             "gpus": _strs},
            {"python": _str, "image": _str, "sbsa": _bool},
        ),
        "kmd": _Rows(Kmd, {"version": _dotted, "user": _strs}, {}),
        "manylinux": _Rows(Manylinux, {"package": _one_of(*FRAMEWORKS), "versions": _specifier,
                                       "platform": _one_of(*LINUX_PLATFORMS), "glibc": _dotted},
                           {"variants": _strs}),
    },
    "libraries": {
        "library": _Rows(Library, {"name": _one_of("cublas"), "versions": _specifier, "cuda_major": _int,
                                   "archs": _archs}, {"ptx": _archs}),
    },
    "compilers": {
        "compiler": _Rows(Compiler, {"package": _one_of(*FRAMEWORKS), "versions": _specifier, "compiler": _str,
                                     "newest_arch": _arch_name, "every_run": _bool},
                          {"error": _str, "rejects": _archs}),
    },
    "tools": {
        "tool": _Rows(Tool, {"name": _str, "version": _str}, {"purpose": _str}),
    },
    "extensions": {
        "extension": _Rows(
            Extension,
            {"package": _str, "versions": _specifier, "newest": _version_text, "install": _one_of("index", "source")},
            {"archs": _archs, "ptx": _archs, "torch": _specifier, "cuda": _specifier, "python": _specifier,
             "cpu": _bool, "nvcc": _bool, "build_env": _str, "build_format": _one_of("dotted", "nodot"),
             "build_requires": _strs, "build_from": _str, "build_vars": _strs, "degraded_below": _arch_name,
             "degraded": _str, "instead": _str, "platforms": _platforms},
        ),
        "wheel": _Rows(
            ExtensionWheel,
            {"package": _str, "versions": _specifier, "url": _str, "torch": _strs, "cuda": _strs,
             "python": _pythons},
            {"abi_true": _specifier, "page": _bool},
        ),
    },
    "images": {
        "image": _Rows(
            Image,
            {
                "repository": _str,
                "accelerator": _one_of(*ACCELERATORS),
                "version": _dotted,
                "tag": _str,
                "os": _strs,
                "flavors": _strs,
            },
            {"cudnn": _str, "python": _str, "removed": _bool},
        ),
        "os": _Rows(OsRelease, {"name": _str}, {"python": _str, "glibc": _dotted}),
        "eol": _Rows(ImageEndOfLife, {"repository": _str, "versions": _specifier, "deleted": _date},
                     {"marked": _date}),
    },
}


# ---------------------------------------------------------------------------- loading

_HEADER = ("schema", "data_version", "kind")


def _kind_rows(reader: TableReader, data: Mapping[str, Any]) -> dict[str, _Rows] | None:
    """The row tables of the file's kind, its header checked; None when no row can be read (another
    schema, an unknown kind, a framework file of no framework)."""
    for key in _HEADER:
        if key not in data:
            reader.bad(key, "missing (every matrix file starts with schema, data_version, kind)")
    if data.get("schema", SCHEMA) != SCHEMA:
        reader.bad("schema", f"is {data.get('schema')!r}; this envsolve reads schema {SCHEMA}")
        return None
    kind = data.get("kind")
    tables = _KINDS.get(kind) if isinstance(kind, str) else None
    if tables is None:
        reader.bad("kind", f"{kind!r} is not one of {', '.join(sorted(_KINDS))}")
        return None
    reader.unknown_keys(data, "", {*_HEADER, "source", "package", *tables},
                        lambda _, allowed: f"unknown key for kind {kind!r} (allowed: {', '.join(sorted(allowed))})")
    return tables if kind != "framework" or _names_a_framework(reader, data) else None


def _names_a_framework(reader: TableReader, data: Mapping[str, Any]) -> bool:
    """Whether a framework file's ``package`` is a framework."""
    package = data.get("package", "")
    if package not in FRAMEWORKS:
        reader.bad("package", f"{package!r} is not one of {', '.join(FRAMEWORKS)}")
        return False
    return True


def _row_where(table: str, i: int, raw: Any) -> str:
    """A row's key path, with the version or name that finds it in the file: ``build[3] (version 2.7.1)``."""
    where = f"{table}[{i}]"
    if isinstance(raw, dict) and isinstance(raw.get("version"), str):
        return f"{where} (version {raw['version']})"
    if isinstance(raw, dict) and "name" in raw:
        return f"{where} ({raw['name']})"
    return where


def _parse_rows(reader: TableReader, data: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Validate one parsed file; return its records by row table."""
    tables = _kind_rows(reader, data)
    if tables is None:
        return {}
    package = data.get("package", "")
    rows: dict[str, list[Any]] = {}
    for table, spec in tables.items():
        records = (_parse_row(reader, _row_where(table, i, raw), raw, spec, package)
                   for i, raw in enumerate(reader.rows(data, table)))
        rows[table] = [r for r in records if r is not None]
    return rows


def _parse_row(reader: TableReader, where: str, raw: Any, rows: _Rows, package: str) -> Any:
    fields = reader.record(raw, where, rows.checks, rows.must)
    if fields is None:
        return None
    for derived in _DERIVED.get(rows.cls, ()):
        fields.update(derived(fields, raw, package))
    return rows.cls(**fields)


def _of_package(fields: dict[str, Any], raw: dict[str, Any], package: str) -> dict[str, Any]:
    """A release or build: its framework and its version as written."""
    return {"package": package, "raw": raw["version"]}


# record class -> the fields the loader sets from the checked ones
_DERIVED: dict[type, tuple[Callable[[dict[str, Any], dict[str, Any], str], dict[str, Any]], ...]] = {
    Release: (_of_package,), Build: (_of_package,),
}


def _files(root: Path) -> list[tuple[str, bytes]]:
    """(file name, bytes) of every ``*.toml`` under ``root``, sorted by name."""
    files = sorted(root.glob("*.toml"))
    if not files:
        raise MatrixError([Problem(str(root), "", "holds no matrix files (*.toml)")])
    return [(path.name, _read(path)) for path in files]


def _read(path: Path) -> bytes:
    """A matrix file's bytes (a regular file of at most :data:`~envsolve.files.MATRIX_CAP`);
    :class:`MatrixError` naming it otherwise."""
    from .files import MATRIX_CAP, read_bytes, refused

    try:
        return read_bytes(path, MATRIX_CAP)
    except OSError as e:
        why, tip = refused(path, e)
        raise MatrixError([Problem(str(path), "", why)], tip=tip or "matrix files are regular TOML files") from None


def _digest(files: list[tuple[str, bytes]]) -> str:
    digest = hashlib.sha256()
    for name, blob in files:
        digest.update(name.encode() + b"\0" + blob + b"\0")
    return "sha256:" + digest.hexdigest()


def _folder(root: Path | None) -> tuple[Path, list[tuple[str, bytes]], str]:
    """The matrices folder ``root`` (default: the shipped one), its files and their digest."""
    path = (root or data_dir()).resolve()
    if not path.is_dir():
        raise MatrixError([Problem(str(path), "", "no such matrices folder")],
                          tip="pass a folder of matrix files (schema: matrices/README.md)")
    files = _files(path)
    return path, files, _digest(files)


def _parse(root: Path, files: list[tuple[str, bytes]], digest: str) -> Matrices:
    out = Problems()
    versions: list[str] = []
    rows: dict[str, list[Any]] = {}
    for name, blob in files:
        reader = TableReader(name, out)
        data = reader.document(blob, "a matrix file")
        if data is None:
            continue
        if isinstance(data.get("data_version"), str):
            versions.append(data["data_version"])
        for table, records in _parse_rows(reader, data).items():
            rows.setdefault(f"{data.get('kind')}.{table}", []).extend(records)
    m = _matrices(rows, max(versions, default="unknown"), digest)
    _cross_check(m, out)
    out.raise_if_any(MatrixError, tip=f"fix the rows named above in {root} (schema: matrices/README.md)")
    return m


def _matrices(rows: dict[str, list[Any]], data_version: str, digest: str) -> Matrices:
    """The records of every file by ``kind.table``, each kind in its order."""
    return Matrices(
        data_version=data_version,
        digest=digest,
        archs=tuple(rows.get("gpus.arch", [])),
        gpus=tuple(rows.get("gpus.gpu", [])),
        cuda_majors=tuple(rows.get("cuda.major", [])),
        toolkits=tuple(sorted(rows.get("cuda.toolkit", []), key=lambda t: t.version)),
        cuda_compats=tuple(sorted(rows.get("cuda.compat", []), key=lambda c: c.cuda)),
        branches=tuple(sorted(rows.get("drivers.branch", []), key=lambda b: b.branch)),
        cudnn=tuple(sorted(rows.get("cudnn.release", []), key=lambda c: (c.version, c.cuda_major))),
        rocm=tuple(sorted(rows.get("rocm.release", []), key=lambda r: r.version)),
        releases=tuple(rows.get("framework.release", [])),
        builds=tuple(rows.get("framework.build", [])),
        images=tuple(rows.get("images.image", [])),
        tools=tuple(sorted(rows.get("tools.tool", []), key=lambda t: t.name)),
        conda=tuple(rows.get("conda.package", [])),
        oses=tuple(sorted(rows.get("images.os", []), key=lambda o: o.name)),
        image_eols=tuple(sorted(rows.get("images.eol", []), key=lambda e: (e.repository, e.deleted))),
        platform_wheels=tuple(rows.get("platforms.wheel", [])),
        platform_images=tuple(rows.get("platforms.image", [])),
        jetpacks=tuple(sorted(rows.get("platforms.jetpack", []), key=lambda j: j.version)),
        kmds=tuple(sorted(rows.get("platforms.kmd", []), key=lambda k: k.version)),
        extensions=tuple(rows.get("extensions.extension", [])),
        extension_wheels=tuple(rows.get("extensions.wheel", [])),
        manylinux=tuple(rows.get("platforms.manylinux", [])),
        compilers=tuple(rows.get("compilers.compiler", [])),
        libraries=tuple(rows.get("libraries.library", [])),
    )


def low_confidence(m: Matrices) -> tuple[int, int]:
    """(rows marked ``confidence = "low"``, all rows): every row of every file, the rows the
    validator reads (each has its ``source``), so the share is of the whole data."""
    rows = [r for name in Matrices.__struct_fields__ for r in _records(getattr(m, name))]
    return sum(r.confidence == "low" for r in rows), len(rows)


def _records(value: object) -> tuple[_Row, ...]:
    return value if isinstance(value, tuple) else ()


def load_dir(root: Path) -> Matrices:
    """Load and validate every ``*.toml`` under ``root`` (no cache); raise :class:`MatrixError`
    listing every problem."""
    return _parse(*_folder(root))


# ---------------------------------------------------------------------------- checks across rows


def _dupes(items: Iterable[tuple[str, str]], file: str, out: Problems) -> None:
    seen: set[str] = set()
    for key, what in items:
        if key in seen:
            out.add(file, what, "appears twice")
        seen.add(key)


def _cross_check(m: Matrices, out: Problems) -> None:
    """Checks that span rows: every reference of a row to another resolves, keys are unique, one
    default per release, and the kinds every solve reads are there."""
    _check_required(m, out)
    arch_names = {a.name for a in m.archs}
    _check_archs(m.archs, out)
    gpu_names = _check_gpus(m.gpus, arch_names, out)
    _check_arch_lists(m, arch_names, out)
    _check_jetpacks(m, gpu_names, out)
    _check_branches(m.branches, {a.family for a in m.archs}, out)
    _check_toolkits(m, out)
    _check_cuda_compats(m, out)
    _check_cudnn(m, out)
    _check_rocm(m.rocm, out)
    _check_images(m, out)
    _check_image_eols(m, out)
    _check_platforms(m, out)
    _check_releases(m.releases, out)
    builds = _BuildChecks(m, arch_names, out)
    for bd in m.builds:
        builds.check(bd)
    _check_extensions(m, arch_names, out)


_Required = tuple[str, Callable[[Matrices], tuple[Any, ...]], str]  # row table, its rows, what they hold

# the rows every solve reads, by kind (and its file as shipped): a folder without them would give
# answers that silently miss their facts
_REQUIRED: tuple[tuple[str, str, tuple[_Required, ...]], ...] = (
    ("gpus", "gpus.toml", (("arch", lambda m: m.archs, "the architectures every GPU, toolkit and build names"),
                           ("gpu", lambda m: m.gpus, "the GPU models a spec names"))),
    ("cuda", "cuda.toml", (("major", lambda m: m.cuda_majors, "each CUDA major's minor-version compatibility"),
                           ("toolkit", lambda m: m.toolkits, "the CUDA releases builds and images name"))),
    ("drivers", "drivers.toml", (("branch", lambda m: m.branches, "the driver branches and the GPUs they drop"),)),
    ("cudnn", "cudnn.toml", (("release", lambda m: m.cudnn, "the GPUs each cuDNN supports"),)),
    ("rocm", "rocm.toml", (("release", lambda m: m.rocm, "the gfx targets of each ROCm"),)),
    ("images", "images.toml", (("image", lambda m: m.images, "the base images"),)),
    ("framework", "<framework>.toml", (("release", lambda m: m.releases, "the framework releases"),)),
)


def _check_required(m: Matrices, out: Problems) -> None:
    """Each kind of row that every solve reads is in the folder (a file of its ``kind``)."""
    for kind, file, tables in _REQUIRED:
        absent = [(table, what) for table, rows, what in tables if not rows(m)]
        if len(absent) == len(tables):
            holds = " and ".join(what for _, what in absent)
            out.add(file, "", f"missing: the folder has no file of kind = {kind!r} ({holds})")
            continue
        for table, what in absent:
            out.add(file, table, f"no [[{table}]] row in the folder ({what})")


def _known_arch(name: str, arch_names: set[str]) -> bool:
    """Whether an architecture as a row names it (``sm_90a``: the row of ``sm_90``) has an [[arch]] row;
    a folder with none is told once, as missing."""
    base = parse_arch(name)
    return not arch_names or base.name.removesuffix(base.suffix) in arch_names


def _unknown_archs(names: Iterable[str], arch_names: set[str]) -> list[str]:
    return [n for n in names if not _known_arch(n, arch_names)]


def _check_arch_lists(m: Matrices, arch_names: set[str], out: Problems) -> None:
    """The architectures toolkits, cuDNN, ROCm and platform wheels list each have an [[arch]] row."""
    lists: list[tuple[str, str, tuple[str, ...]]] = [
        *(("cuda.toml", f"toolkit ({t.version}).archs", t.archs) for t in m.toolkits),
        *(("cudnn.toml", f"release ({c.version}, CUDA {c.cuda_major}).archs", c.archs) for c in m.cudnn),
        *(("rocm.toml", f"release ({r.version}).gfx", r.gfx) for r in m.rocm),
        *(("rocm.toml", f"release ({r.version}).kernels", r.kernels) for r in m.rocm),
        *(("platforms.toml", f"wheel ({w.package} {w.versions}, {w.platform}).archs", (*w.archs, *w.ptx))
          for w in m.platform_wheels),
    ]
    for file, where, names in lists:
        for name in _unknown_archs(names, arch_names):
            out.add(file, where, f"{name!r} has no [[arch]] row in gpus.toml")


def _check_rocm(rows: tuple[Rocm, ...], out: Problems) -> None:
    """A ROCm release ships kernels for every target it supports: ``gfx`` within ``kernels``."""
    for r in rows:
        missing = [g for g in r.gfx if r.kernels and g not in r.kernels]
        if missing:
            out.add("rocm.toml", f"release ({r.version}).kernels",
                    f"lacks {', '.join(missing)}, which its gfx lists as supported")


def _check_archs(archs: tuple[ArchInfo, ...], out: Problems) -> None:
    """Each [[arch]] row's vendor and compute capability fit its name; each name once."""
    for a in archs:
        parsed = parse_arch(a.name)
        if parsed.vendor != a.vendor:
            out.add("gpus.toml", f"arch ({a.name})", f"vendor {a.vendor} does not fit the name")
        if a.vendor == "nvidia" and a.compute_capability != parsed.compute_capability:
            out.add("gpus.toml", f"arch ({a.name}).compute_capability",
                    f"{a.compute_capability!r} does not match the name ({parsed.compute_capability})")
    _dupes(((a.name, f"arch ({a.name})") for a in archs), "gpus.toml", out)


def _check_gpus(gpus: tuple[Gpu, ...], arch_names: set[str], out: Problems) -> dict[str, str]:
    """Each GPU's arch has a row; no name or alias is two GPUs'. Returns folded name -> GPU name."""
    names: dict[str, str] = {}
    for g in gpus:
        if arch_names and g.arch not in arch_names:
            out.add("gpus.toml", f"gpu ({g.name}).arch", f"{g.arch!r} has no [[arch]] row")
        _claim_names(g, names, out)
    return names


def _claim_names(g: Gpu, names: dict[str, str], out: Problems) -> None:
    for n in (g.name, *g.aliases):
        k = fold(n)
        if names.get(k, g.name) != g.name:
            out.add("gpus.toml", f"gpu ({g.name})", f"name or alias {n!r} is also used by {names[k]}")
        names[k] = g.name


def _check_jetpacks(m: Matrices, gpu_names: dict[str, str], out: Problems) -> None:
    """Each JetPack's modules are GPUs of gpus.toml and its CUDA a toolkit of cuda.toml; one before
    SBSA names its l4t image."""
    minors = _cuda_minors(m)
    for j in m.jetpacks:
        where = f"jetpack (version {j.version})"
        for n in j.gpus:
            if gpu_names and fold(n) not in gpu_names:
                out.add("platforms.toml", f"{where}.gpus", f"{n!r} is no GPU of gpus.toml")
        if minors and j.cuda.prefix(2) not in minors:
            out.add("platforms.toml", f"{where}.cuda", f"CUDA {j.cuda} has no [[toolkit]] row in cuda.toml")
        if not (j.sbsa or j.image):
            out.add("platforms.toml", f"{where}.image", "missing (a JetPack before SBSA "
                    "names the l4t image its builds run on)")


def _cuda_minors(m: Matrices) -> set[tuple[int, ...]]:
    """The CUDA major.minor releases cuda.toml has a toolkit of."""
    return {t.version.prefix(2) for t in m.toolkits}


def _check_branches(branches: tuple[DriverBranch, ...], families: set[str], out: Problems) -> None:
    """Each family a driver branch drops is a family of gpus.toml; each branch once."""
    for b in branches:
        for f in b.unsupported_families:
            if families and f not in families:
                out.add("drivers.toml", f"branch ({b.branch}).unsupported_families", f"{f!r} is no family of gpus.toml")
    _dupes(((str(b.branch), f"branch ({b.branch})") for b in branches), "drivers.toml", out)


def _check_toolkits(m: Matrices, out: Problems) -> None:
    """Each toolkit once, each of a CUDA major with a [[major]] row."""
    _dupes(((t.version.raw, f"toolkit ({t.version})") for t in m.toolkits), "cuda.toml", out)
    majors = {c.major for c in m.cuda_majors}
    for t in m.toolkits:
        if majors and t.version.major not in majors:
            out.add("cuda.toml", f"toolkit ({t.version})", f"CUDA major {t.version.major} has no [[major]] row")


def _check_cuda_compats(m: Matrices, out: Problems) -> None:
    """Each forward-compatibility package once, named after its CUDA major.minor (a toolkit of
    cuda.toml), for driver branches of drivers.toml older than that CUDA (a branch that runs it
    natively needs no package)."""
    _dupes(((c.cuda.raw, f"compat ({c.cuda})") for c in m.cuda_compats), "cuda.toml", out)
    known = {t.version.prefix(2) for t in m.toolkits}
    branches = {b.branch: b for b in m.branches}
    for c in m.cuda_compats:
        where, major, minor = f"compat ({c.cuda})", c.cuda.major, c.cuda.minor
        if len(c.cuda.key) != 2 or (known and c.cuda.prefix(2) not in known):
            out.add("cuda.toml", f"{where}.cuda", f"{c.cuda} must be a CUDA major.minor with [[toolkit]] rows")
        if c.package != (named := compat_package(major, minor)):
            out.add("cuda.toml", f"{where}.package", f"{c.package!r} is not CUDA {c.cuda}'s: {named}")
        for n in c.branches:
            b = branches.get(n)
            if branches and b is None:
                out.add("cuda.toml", f"{where}.branches", f"R{n} has no [[branch]] row in drivers.toml")
            elif b is not None and b.cuda_max.prefix(2) >= c.cuda.prefix(2):
                out.add("cuda.toml", f"{where}.branches", f"R{n} runs CUDA {c.cuda} natively (cuda_max {b.cuda_max})")


def _check_cudnn(m: Matrices, out: Problems) -> None:
    """Each cuDNN release is of a CUDA major with a [[major]] row."""
    majors = {c.major for c in m.cuda_majors}
    for c in m.cudnn:
        if majors and c.cuda_major not in majors:
            out.add("cudnn.toml", f"release ({c.version}, CUDA {c.cuda_major}).cuda_major",
                    f"CUDA major {c.cuda_major} has no [[major]] row in cuda.toml")


def _check_images(m: Matrices, out: Problems) -> None:
    """Each CUDA image's version is a CUDA release of cuda.toml, each ROCm image's a ROCm release of
    rocm.toml."""
    known = {"cuda": (_cuda_minors(m), "CUDA", "[[toolkit]] row in cuda.toml"),
             "rocm": ({r.version.prefix(2) for r in m.rocm}, "ROCm", "[[release]] row in rocm.toml")}
    for i in m.images:
        minors, stack, row = known.get(i.accelerator, (set(), "", ""))
        if minors and i.version.prefix(2) not in minors:
            out.add("images.toml", f"image ({i.repository} {i.version}).version", f"{stack} {i.version} has no {row}")


def _check_image_eols(m: Matrices, out: Problems) -> None:
    """Each end-of-life row is of an image repository of images.toml, marked before it is deleted."""
    repositories = {i.repository for i in m.images}
    for e in m.image_eols:
        where = f"eol ({e.repository} {e.versions})"
        if repositories and e.repository not in repositories:
            out.add("images.toml", f"{where}.repository", "is no image repository of images.toml")
        if e.marked and e.marked > e.deleted:
            out.add("images.toml", f"{where}.marked", f"{e.marked} is after the deletion date {e.deleted}")


def _check_platforms(m: Matrices, out: Problems) -> None:
    """Each platform wheel row's variants are builds of its framework on its index; each platform
    image row's repository is an image repository of images.toml."""
    variants = {(b.package, b.index, b.variant) for b in m.builds}
    for w in m.platform_wheels:
        for v in w.variants:
            if not _publishes_any(w, v, variants):
                out.add("platforms.toml", f"wheel ({w.package} {w.versions}, {w.platform}).variants",
                        f"{v!r} matches no {w.package} build on the {w.index} index")
    repositories = {i.repository for i in m.images}
    for r in m.platform_images:
        if repositories and r.repository not in repositories:
            out.add("platforms.toml", f"image ({r.repository}, {r.platform}).repository",
                    "is no image repository of images.toml")


def _publishes_any(w: PlatformWheel, pattern: str, variants: set[tuple[str, str, str]]) -> bool:
    """Whether variant pattern ``pattern`` of platform row ``w`` matches a build (package, index, variant)."""
    return any(p == w.package and i == w.index and fnmatch.fnmatchcase(v, pattern) for p, i, v in variants)


def _check_releases(releases: tuple[Release, ...], out: Problems) -> None:
    """Each release once; the frameworks its ``requires`` and ``backends`` name are frameworks."""
    _dupes(((f"{r.package} {r.raw}", f"release (version {r.raw})") for r in releases), "framework files", out)
    for r in releases:
        for key, names in (("requires", r.requires), ("backends", r.backends)):
            for name, _ in names:
                if name not in FRAMEWORKS:
                    out.add(f"{r.package}.toml", f"release (version {r.raw}).{key}",
                            f"{name!r} is not one of {', '.join(FRAMEWORKS)}")


# accelerator -> the field a build of it must name, and why
_STACK_FIELD = {"cuda": ("cuda", "missing (a cuda build names its CUDA version)"),
                "rocm": ("rocm", "missing (a rocm build names its ROCm version)")}


class _BuildChecks:
    """The checks of [[build]] rows across the data: each of a release, each (version, variant)
    once, one default per release, its CUDA (a toolkit of cuda.toml) or ROCm named, its cuDNN a
    version, its JetPack one of platforms.toml, its architectures known."""

    def __init__(self, m: Matrices, arch_names: set[str], out: Problems) -> None:
        self.releases = {(r.package, r.version) for r in m.releases}
        self.arch_names = arch_names
        self.cuda_minors = _cuda_minors(m)
        self.jetpacks = {str(j.version.major) for j in m.jetpacks}
        self.jetpack_releases = [j.version for j in m.jetpacks]
        self.out = out
        self.seen: set[tuple[str, Version, str]] = set()
        self.defaults: dict[tuple[str, Version], str] = {}

    def check(self, bd: Build) -> None:
        file, where = f"{bd.package}.toml", f"build (version {bd.raw}, {bd.variant})"
        self._release(bd, file, where)
        self._stack(bd, file, where)
        self._libraries(bd, file, where)
        self._archs(bd, file, where)

    def _release(self, bd: Build, file: str, where: str) -> None:
        release = (bd.package, bd.version)
        if release not in self.releases:
            self.out.add(file, where, "has no [[release]] row of that version")
        if (*release, bd.variant) in self.seen:
            self.out.add(file, where, "appears twice")
        self.seen.add((*release, bd.variant))
        if bd.default and release in self.defaults:
            self.out.add(file, where, f"is a second default build (first: {self.defaults[release]})")
        if bd.default:
            self.defaults[release] = bd.variant

    def _stack(self, bd: Build, file: str, where: str) -> None:
        field, missing = _STACK_FIELD.get(bd.accelerator, ("", ""))
        if field and getattr(bd, field) is None:
            self.out.add(file, f"{where}.{field}", missing)
        if bd.cuda is not None and self.cuda_minors and bd.cuda.prefix(2) not in self.cuda_minors:
            self.out.add(file, f"{where}.cuda", f"CUDA {bd.cuda} has no [[toolkit]] row in cuda.toml")

    def _libraries(self, bd: Build, file: str, where: str) -> None:
        """The cuDNN it names is a version; the JetPack it is built for is a release of platforms.toml."""
        if bd.cudnn and not _is_dotted(bd.cudnn):
            self.out.add(file, f"{where}.cudnn", f"{bd.cudnn!r} is not a cuDNN version such as 9.7.1.26")
        if bd.jetpack and bd.jetpack not in self.jetpacks:
            known = ", ".join(sorted(self.jetpacks, key=int)) or "none"
            self.out.add(file, f"{where}.jetpack", f"JetPack {bd.jetpack!r} has no [[jetpack]] row in "
                         f"platforms.toml (majors: {known})")
        for p in bd.jetpacks:
            if not any(jetpack_is(p, v) and str(v.major) == bd.jetpack for v in self.jetpack_releases):
                self.out.add(file, f"{where}.jetpacks", f"JetPack {p!r} is no [[jetpack]] row of platforms.toml "
                             f"of JetPack {bd.jetpack or '(jetpack missing)'}")

    def _archs(self, bd: Build, file: str, where: str) -> None:
        for key, names in (("archs", bd.archs), ("ptx", bd.ptx), ("gfx", bd.gfx), ("xpu", bd.xpu)):
            for name in _unknown_archs(names, self.arch_names):
                self.out.add(file, f"{where}.{key}", f"arch {name!r} has no [[arch]] row in gpus.toml")


def _check_extensions(m: Matrices, arch_names: set[str], out: Problems) -> None:
    """Each extension row's archs are known and its newest release is in its range; each wheel row
    names an extension package and a release of one of its rows."""
    for i, x in enumerate(m.extensions):
        _check_extension(x, f"extension[{i}] ({x.package} {x.versions})", arch_names, out)
    packages = {x.package for x in m.extensions}
    for i, w in enumerate(m.extension_wheels):
        if w.package not in packages:
            out.add("extensions.toml", f"wheel[{i}].package", f"{w.package!r} has no [[extension]] row")


def _check_extension(x: Extension, where: str, arch_names: set[str], out: Problems) -> None:
    from packaging.specifiers import SpecifierSet

    for name in _unknown_archs((*x.archs, *x.ptx, *filter(None, [x.degraded_below])), arch_names):
        out.add("extensions.toml", where, f"arch {name!r} has no [[arch]] row")
    if not SpecifierSet(x.versions).contains(x.newest, prereleases=True):
        out.add("extensions.toml", f"{where}.newest", f"{x.newest!r} is outside versions {x.versions!r}")
    if not (x.archs or x.ptx or x.cpu):
        out.add("extensions.toml", where, "names no archs, no ptx and no cpu: no target could take it")
    if x.install == "source" and (off := [p for p in x.platforms if p not in LINUX_PLATFORMS]):
        out.add("extensions.toml", f"{where}.platforms", f"{', '.join(off)}: a source build installs only in a "
                f"Linux image ({', '.join(LINUX_PLATFORMS)})")


def _is_dotted(text: str) -> bool:
    try:
        parse_dotted(text)
    except ValueError:
        return False
    return True


def shared_of(release: Release, build: Build | None) -> tuple[tuple[str, str], ...]:
    """The shared requirements a release installed as ``build`` brings, by canonical name: the
    release's ``shared``, each name the build's ``shared`` names replaced by the build's, and the
    build's exact ``pins`` of shared names (``==``) added (matrices/README.md)."""
    merged = dict(release.shared)
    if build is not None:
        merged.update(build.shared)
        for name, pin in build.pins:
            if shared_name(name):
                exact = pin if pin[:1] in "<>=!~" else f"=={pin}"
                merged[name] = f"{merged[name]},{exact}" if name in merged else exact
    return tuple(sorted(merged.items()))


def fold(name: str) -> str:
    """Case- and punctuation-insensitive form of a GPU name for lookups."""
    return "".join(filter(str.isalnum, name.lower()))


# ---------------------------------------------------------------------------- compiled cache

# the code that reads and checks the rows: a change to any of it rebuilds the cache
_CODE = tuple(Path(__file__).parent / name for name in ("data.py", "tables.py", "versions.py", "domain.py"))

# compiled files kept in the cache folder: a few for the envsolve and data versions in use; about
# 1.3 MB each
KEEP_COMPILED = 8
_COMPILED = ".msgpack"  # a compiled file's suffix


# The one type of the records msgspec does not know: a PEP 440 version, kept as its text.
def _encode_hook(value: Any) -> Any:
    if isinstance(value, Version):
        return str(value)
    raise NotImplementedError(f"no compiled form for {type(value).__name__}")  # pragma: no cover


def _decode_hook(kind: type, value: Any) -> Any:
    if kind is Version and isinstance(value, str):
        return Version(value)  # InvalidVersion, a ValueError: msgspec's ValidationError, a corrupt file
    raise TypeError(f"no {kind.__name__} is compiled as {type(value).__name__}")  # the same (msgspec wraps it)


class _Made(msgspec.Struct, frozen=True, kw_only=True):
    """A compiled file's header: what its records were made from, checked on every read."""

    version: str  # envsolve's
    data: str  # the matrices' digest
    code: str  # the digest of the code that checked them (see _CODE)
    records: str  # the digest of the records' msgpack that follows the header: keyed (files.seal) in the user's cache


_MAGIC = b"envsolve-compiled-2\0"  # a compiled file's first bytes; its header's length follows, then the header
COMPILED_CAP = 64 << 20  # a compiled file is about 1.3 MB: a larger one is no file envsolve wrote


def _code_digest() -> str:
    """The digest of the code that reads and checks the rows (:data:`_CODE`)."""
    return hashlib.sha256(b"".join(p.read_bytes() for p in _CODE)).hexdigest()[:16]


def _compiled_name(digest: str, code: str) -> str:
    """The compiled file's name: the matrices' digest and that of the code that checks them."""
    return f"{digest.removeprefix('sha256:')[:32]}-{code}{_COMPILED}"


def _made(digest: str, code: str, records: bytes, key: bytes | None) -> _Made:
    """The header of ``records``: sealed with ``key`` (the user's cache), else their sha256 (a wheel's)."""
    from . import __version__
    from .files import seal

    sealed = seal(records, key).hex() if key is not None else hashlib.sha256(records).hexdigest()
    return _Made(version=__version__, data=digest, code=code, records=sealed)


def _compiled_blob(m: Matrices, code: str, key: bytes | None = None) -> bytes:
    """The compiled file of ``m``: its header (:class:`_Made`) and its records, msgpack both."""
    records = msgspec.msgpack.encode(m, enc_hook=_encode_hook)
    head = msgspec.msgpack.encode(_made(m.digest, code, records, key))
    return _MAGIC + len(head).to_bytes(2, "big") + head + records


def _split(blob: bytes) -> tuple[_Made, bytes] | None:
    """(header, records) of a compiled file; None for bytes of another shape."""
    start = len(_MAGIC) + 2
    if not blob.startswith(_MAGIC) or len(blob) < start:
        return None
    end = start + int.from_bytes(blob[len(_MAGIC):start], "big")
    try:
        return msgspec.msgpack.decode(blob[start:end], type=_Made), blob[end:]
    except msgspec.MsgspecError:
        return None


def _made_here(blob: bytes, digest: str, code: str, key: bytes | None) -> bytes | None:
    """The records of a compiled file made by this envsolve from these matrices with this code,
    their digest (sealed with ``key``) as its header says; None for any other file (another
    version's, a forged or spoilt one, one made elsewhere)."""
    parts = _split(blob)
    if parts is None or parts[0] != _made(digest, code, parts[1], key):
        return None
    return parts[1]


def _cached(path: Path, digest: str, code: str, key: bytes | None, *, used: bool = True) -> Matrices | None:
    """The records kept at ``path`` (msgpack: encoded and decoded in C, checked against the
    record types as they are read), or None to make them again: a file that is not a regular
    file of this user's (or root's) that nobody else may write, larger than :data:`COMPILED_CAP`,
    or whose header is not that of these matrices, this code and this envsolve, or whose records
    are not those the header names (sealed with ``key``, the user's; None for a wheel's). ``used``:
    mark the file used."""
    from .files import read_cache, touch

    blob = read_cache(path, COMPILED_CAP)
    records = None if blob is None else _made_here(blob, digest, code, key)
    if records is None:
        return None
    try:
        m = msgspec.msgpack.decode(records, type=Matrices, dec_hook=_decode_hook)
    except (msgspec.MsgspecError, ValueError, TypeError):  # records of another shape
        return None
    if m.digest != digest:
        return None
    if used:
        touch(path)  # the last kept by _store's prune
    return m


def _store(path: Path, m: Matrices, code: str, key: bytes) -> None:
    """Keep ``m`` at ``path``, private (no fsync: :func:`_cached` makes it again from a file a
    crash cut short), and the :data:`KEEP_COMPILED` most recently used files of its folder."""
    from .files import prune, write_atomic

    try:
        write_atomic(path, _compiled_blob(m, code, key), durable=False, private=True)
    except OSError:  # a read-only or full cache folder costs speed, never an answer
        return
    prune(path.parent, _COMPILED, KEEP_COMPILED, path)
    prune(path.parent, ".pickle", 0)  # the compiled files of envsolve before this format, read no more


def compile_into(folder: Path, root: Path | None = None) -> Path:
    """Check the matrices under ``root`` (default: the shipped ones) and write their compiled
    records into ``folder``, named as :func:`load` looks for them there: the wheel's build hook
    (hatch_build.py) ships them in :data:`~envsolve.paths.SHIPPED_COMPILED`. Raises
    :class:`MatrixError` when a row is wrong, as :func:`load_dir` does."""
    from .files import write_atomic

    path, files, digest = _folder(root)
    code = _code_digest()
    out = folder / _compiled_name(digest, code)
    write_atomic(out, _compiled_blob(_parse(path, files, digest), code))
    return out


def load(root: Path | None = None, *, cache: Path | None = None) -> Matrices:
    """The checked records of the matrices under ``root`` (default: the shipped ones), compiled:
    those a wheel ships when the files are its own (same digest, same checking code), else those
    kept in ``cache`` (default :func:`cache_dir`) by the digest of the matrix files and of the code
    that checks them, made again when either changes or the file is not to be believed (see
    :func:`_cached`). ``ENVSOLVE_NO_CACHE=1`` checks the files every time, as :func:`load_dir` does."""
    from .files import cache_key

    path, files, digest = _folder(root)
    if os.environ.get("ENVSOLVE_NO_CACHE"):
        return _parse(path, files, digest)
    code = _code_digest()
    name = _compiled_name(digest, code)
    m = _cached(Path(SHIPPED_COMPILED) / name, digest, code, None, used=False)  # a wheel's, for its own matrices
    if m is not None:
        return m
    key = cache_key(state_folder())
    if key is None:  # no key to seal a cache with: the files checked every time
        return _parse(path, files, digest)
    where = (cache or cache_dir()) / "data" / name
    m = _cached(where, digest, code, key)
    if m is None:
        m = _parse(path, files, digest)
        _store(where, m, code, key)
    return m
