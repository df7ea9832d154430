"""The solver's look-up interface over the matrices (resolvelib's provider, for GPU stacks).

:class:`Provider` is the only way the solver, the spec parser, the matrix feature and the doctor
see the data: indexed, read-only look-ups over the records (GPU names, toolkits, driver
branches, cuDNN and ROCm rows, framework releases and builds, images). Its only state is memos
of its own look-ups, each a function of the records alone; the solver's memo tables live in
:class:`envsolve.solve.cache.Cache`.
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import msgspec.structs
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from .data import (
    ArchInfo,
    Build,
    Compiler,
    CondaBuild,
    CudaCompat,
    CudaMajor,
    Cudnn,
    Extension,
    ExtensionWheel,
    Gpu,
    Image,
    ImageEndOfLife,
    JetPack,
    Kmd,
    Library,
    Matrices,
    PlatformWheel,
    Release,
    Rocm,
    Toolkit,
    data_dir,
    fold,
    load,
    load_dir,
    shared_of,
)
from .domain import DEFAULT_PLATFORM, JETSON_PLATFORM, Accelerator
from .versions import Arch, Dotted, parse_arch, parse_driver

__all__ = ["Provider", "load_provider"]

_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


def _grouped(rows: Iterable[_V], key: Callable[[_V], _K]) -> dict[_K, list[_V]]:
    """``rows`` by ``key``, each group in the order of ``rows``."""
    out: dict[_K, list[_V]] = defaultdict(list)
    for row in rows:
        out[key(row)].append(row)
    return out


def _all_low(toolkits: list[Toolkit]) -> bool:
    """Whether every row of a CUDA minor is marked confidence = low (its driver floor is not known)."""
    return all(t.confidence == "low" for t in toolkits)


def _parts(text: str) -> tuple[int, ...]:
    """The numbers of a dotted release (``R36.4.3`` -> (36, 4, 3); non-numbers skipped)."""
    return tuple(int(p) for p in text.lstrip("Rr").split(".") if p.isdigit())


_GPU_PREFIXES = ("nvidia", "nvidiageforce", "geforce", "amd", "amdinstinct", "amdradeon", "radeon", "tesla")
_GPU_PREFIXES_LONGEST_FIRST = sorted(_GPU_PREFIXES, key=len, reverse=True)
# what a driver adds to a model's name: its memory ("-32GB", " 80GB"), its form factor ("-SXM2",
# " PCIe", " NVL", "-DGXS") and the Max-Q badge; a name the data lacks is tried without them
_MEMORY = re.compile(r"[-\s]\d+(\.\d+)?\s?GB\b", re.IGNORECASE)
_FORM = re.compile(r"[-\s](PCIE|SXM\d*|NVL\d*|HBM\d?E?|DGXS|FHHL|with Max-Q Design|Max-Q)\b", re.IGNORECASE)
# a laptop part as people write it ("RTX 3060 Laptop", "RTX 3060 Mobile") and as the driver does
_LAPTOP = re.compile(r"\s+(laptop|mobile)(\s+gpu)?\s*$", re.IGNORECASE)


def _publishes(w: PlatformWheel, b: Build) -> bool:
    """Whether platform row ``w`` lists ``b`` (package, index, a variant pattern, the version range)."""
    return (w.package == b.package and w.index == b.index
            and any(fnmatch.fnmatchcase(b.variant, v) for v in w.variants)
            and SpecifierSet(w.versions).contains(b.version, prereleases=True))


def _conda_spec(rows: list[CondaBuild], name: str, version: str, cuda: str | None, python: str) -> str:
    """The MatchSpec of conda package ``name`` at ``version`` for ``cuda`` and ``python`` ("" when none)."""
    row = next((r for r in rows if r.name == name and r.version == version), None)
    return row.spec(cuda, python) if row is not None else ""


def _without_prefix(key: str) -> str:
    """A folded GPU name without the vendor's prefix it starts with ("nvidiageforcertx3090": "rtx3090")."""
    return next((key[len(p):] for p in _GPU_PREFIXES_LONGEST_FIRST if key.startswith(p) and len(key) > len(p)), key)


def _spellings(name: str) -> list[str]:
    """The spellings of a GPU name to look up, in order: as written, a laptop part as the driver
    names it, without the memory size, without the form factor too, and last a laptop part as
    its desktop model (the driver names Pascal and Turing laptop parts as the desktop ones)."""
    laptop = _LAPTOP.sub(" Laptop GPU", name)
    bare = _FORM.sub("", _MEMORY.sub("", laptop))
    return list(dict.fromkeys((name, laptop, _MEMORY.sub("", laptop), bare, _LAPTOP.sub("", bare))))


class Provider:
    """Indexed, read-only view of the matrices; see the module docstring."""

    def __init__(self, m: Matrices) -> None:
        self.m = m
        self.data_version = m.data_version
        self.digest = m.digest
        self._arch = {a.name: a for a in m.archs}
        self._gpu = {fold(n): gpu for gpu in m.gpus for n in (gpu.name, *gpu.aliases)}
        self._majors = {c.major: c for c in m.cuda_majors}
        # releases newest first, builds by variant: the order the solver prefers and reports
        self._releases = _grouped(sorted(m.releases, key=lambda r: r.version, reverse=True), lambda r: r.package)
        self._builds = _grouped(sorted(m.builds, key=lambda b: b.variant), lambda b: (b.package, b.version))
        self._images = _grouped(m.images, lambda i: i.accelerator)
        self._conda = _grouped(m.conda, lambda c: c.framework)
        self._extensions = _grouped(m.extensions, lambda x: x.package)
        self._extension_wheels = _grouped(m.extension_wheels, lambda w: w.package)
        self._toolkits = _grouped(m.toolkits, lambda t: t.version.prefix(2))
        self._native: dict[tuple[int, ...], Dotted | None] = {}  # native_driver_min by CUDA major.minor
        self._first: dict[str, Toolkit | None] = {}  # first_toolkit_for by arch: each fit asks for its GPUs
        self._cudnn: dict[tuple[str, int], Cudnn | None] = {}  # cudnn_row by its arguments
        self._compiler: dict[tuple[str, Version], Compiler | None] = {}  # compiler by release
        self._library: dict[tuple[str, str, int], Library | None] = {}  # library by its arguments
        self._os_glibc = {o.name: o.glibc for o in m.oses if o.glibc is not None}
        self._newest_wheel_glibc = max((w.glibc for w in m.manylinux), default=None)
        self._glibc: dict[tuple[str, Version, str, str], Dotted | None] = {}  # wheel_glibc by build and platform
        # shared requirements by (package, version, variant), made when first asked: a solve asks for
        # few of them, and all of them took longer than the rest of the indexes
        self._shared: dict[tuple[str, Version, str], tuple[tuple[str, str], ...]] = {}

    # -- hardware ------------------------------------------------------------------

    def gpu(self, name: str) -> Gpu | None:
        """The GPU model a user or nvidia-smi names, matched ignoring case and punctuation: as
        written, else as the driver spells a laptop part ("... Laptop GPU"), else without the
        memory size and form factor the driver adds ("Tesla V100-SXM2-32GB": V100)."""
        return next((g for s in _spellings(name) if (g := self._gpu_named(s)) is not None), None)

    def _gpu_named(self, name: str) -> Gpu | None:
        key = fold(name)
        # as written, with a vendor's prefix added, or the vendor's own spelling of a row's name
        # ("NVIDIA V100", "Tesla P100", "NVIDIA RTX 6000 Ada") with it taken off
        added = (fold(prefix + key) for prefix in _GPU_PREFIXES)
        removed = (key[len(prefix):] for prefix in _GPU_PREFIXES_LONGEST_FIRST if key.startswith(prefix))
        return next((self._gpu[k] for k in itertools.chain((key,), added, removed) if k in self._gpu), None)

    @staticmethod
    def gpu_resolver() -> dict[str, Any]:
        """The rules :meth:`gpu` reads a name by, as data (the explorer's look-up follows them
        line for line, so it takes every name the command line takes): the vendors' prefixes it
        adds and takes off (longest first), and the patterns of a laptop part, a memory size and a
        form factor (case-insensitive)."""
        return {"prefixes": list(_GPU_PREFIXES), "longest": _GPU_PREFIXES_LONGEST_FIRST,
                "laptop": _LAPTOP.pattern, "memory": _MEMORY.pattern, "form": _FORM.pattern}

    def gpu_suggestions(self, name: str) -> list[str]:
        """The GPU names closest to a misspelt or unknown ``name``: the models of its series (the
        letters and first number: "RTX 3090 Super" -> RTX 3090, RTX 3090 Ti), then the near misses
        of the best spelling match; at most four."""
        import difflib  # only an unknown name gets here

        by_fold = {fold(n): n for n in sorted({gpu.name for gpu in self.m.gpus})}
        key = _without_prefix(fold(name))
        stem = re.match(r"[a-z]*\d+", key)
        series = sorted((n for k, n in by_fold.items() if stem and k.startswith(stem.group())), key=len)
        close = difflib.get_close_matches(key, list(by_fold), n=3, cutoff=0.6)
        ratio = {c: difflib.SequenceMatcher(None, key, c).ratio() for c in close}
        near = [by_fold[c] for c in close if ratio[c] >= max(ratio.values()) - 0.1]  # near misses of the best only
        return list(dict.fromkeys((*series, *near)))[:4]

    def arch_info(self, name: str) -> ArchInfo | None:
        a = parse_arch(name)
        return self._arch.get(a.name.removesuffix(a.suffix))

    # -- CUDA, drivers, libraries ----------------------------------------------------

    def cuda_major(self, major: int) -> CudaMajor | None:
        return self._majors.get(major)

    def toolkits(self, version: Dotted) -> list[Toolkit]:
        """Toolkit releases of a CUDA major.minor (``12.8`` -> 12.8.0, 12.8.1), oldest first."""
        return self._toolkits.get(version.prefix(2), [])

    def native_driver_min(self, cuda: Dotted) -> Dotted | None:
        """The oldest driver that runs CUDA ``major.minor`` natively (its GA release's floor), never
        below an earlier minor's of the same major: a floor that is not known (a low row) cannot
        claim native support older drivers lack. Worked out once per minor (each asks every
        earlier one)."""
        key = cuda.prefix(2)
        if key not in self._native:
            self._native[key] = self._native_driver_min(cuda)
        return self._native[key]

    def windows_driver_min(self, cuda: Dotted) -> Dotted | None:
        """The oldest Windows driver (WSL2's too: the host's) that runs CUDA ``major.minor`` natively:
        NVIDIA's Windows column where cuda.toml has it, else the Linux floor (the same branch; NVIDIA
        publishes no Windows minimum for CUDA 13)."""
        own = [t.driver_min_windows for t in self.toolkits(cuda) if t.driver_min_windows is not None]
        return min(own) if own else self.native_driver_min(cuda)

    def minor_compat_driver_min(self, major: int, *, windows: bool) -> Dotted | None:
        """The oldest driver that runs CUDA ``major``'s later minors by minor-version compatibility
        (None: none does), on Windows from NVIDIA's Windows column where cuda.toml has it."""
        row = self.cuda_major(major)
        if row is None:
            return None
        return (row.minor_compat_driver_min_windows if windows else None) or row.minor_compat_driver_min

    def _native_driver_min(self, cuda: Dotted) -> Dotted | None:
        ts = self.toolkits(cuda)
        own = min((t.driver_min for t in ts), default=None)
        if own is None:
            return None
        before = self._previous_minor_floor(cuda)
        floor = max(own, before) if before is not None else own
        branch = self._first_branch_for(cuda) if _all_low(ts) else None
        if branch is not None and floor.major < branch:
            # drivers.toml: older branches stop at an older CUDA, so none of their drivers runs it natively
            return parse_driver(f"{branch}.00")
        return floor

    def _previous_minor_floor(self, cuda: Dotted) -> Dotted | None:
        """The native driver floor of the minor before CUDA ``major.minor`` (None: the first of its major)."""
        earlier = self._previous_minor(cuda)
        return self.native_driver_min(earlier) if earlier is not None else None

    def _first_branch_for(self, cuda: Dotted) -> int | None:
        """The oldest driver branch whose ``cuda_max`` reaches CUDA ``major.minor`` (same major)."""
        key = cuda.prefix(2)
        return min((b.branch for b in self.m.branches if b.cuda_max.major == cuda.major
                    and b.cuda_max.prefix(2) >= key), default=None)

    def _previous_minor(self, cuda: Dotted) -> Dotted | None:
        key = cuda.prefix(2)
        older = [t.version for t in self.m.toolkits if t.version.major == cuda.major and t.version.prefix(2) < key]
        return max(older, default=None)

    def driver_floor_note(self, cuda: Dotted) -> str:
        """Why the native driver floor of CUDA ``major.minor`` is uncertain ("" when its rows are sourced)."""
        ts = self.toolkits(cuda)
        if not ts or not _all_low(ts):
            return ""
        mm = "{}.{}".format(*cuda.prefix(2))
        floor = self.native_driver_min(cuda)
        taken = self._raised_to_branch(cuda, ts, floor) or self._raised_to_earlier(cuda, floor)
        if taken:
            return f"the native minimum driver of CUDA {mm} is not known (cuda.toml marks it low); taken as {taken}"
        return f"the native minimum driver of CUDA {mm} ({floor}) rests on data marked confidence = low"

    def _raised_to_branch(self, cuda: Dotted, ts: list[Toolkit], floor: Dotted | None) -> str:
        """``R570 or newer, since ...`` when the floor is the first branch that reaches CUDA ``cuda``."""
        branch = self._first_branch_for(cuda)
        if floor is None or floor.raw != f"{branch}.00" or min(t.driver_min for t in ts).major >= floor.major:
            return ""
        return f"R{branch} or newer" + self._older_branch_text(floor.major)

    def _raised_to_earlier(self, cuda: Dotted, floor: Dotted | None) -> str:
        """``at least CUDA 12.8's 570.26`` when the floor is the previous minor's."""
        earlier = self._previous_minor(cuda)
        prev = self._previous_minor_floor(cuda)
        if earlier is None or prev is None or floor != prev:
            return ""
        return f"at least CUDA {earlier.major}.{earlier.minor}'s {prev}"

    def _older_branch_text(self, branch: int) -> str:
        """``, since drivers.toml gives R535 CUDA up to 12.2``: the newest branch before ``branch``."""
        older = max((b for b in self.m.branches if b.branch < branch), key=lambda b: b.branch, default=None)
        return f", since drivers.toml gives R{older.branch} CUDA up to {older.cuda_max}" if older else ""

    def toolkit_knows(self, cuda: Dotted, gpu: Arch) -> bool:
        """Whether CUDA ``major.minor`` can target ``gpu`` at all."""
        return any(gpu.name in t.archs for t in self.toolkits(cuda))

    def first_toolkit_for(self, gpu: Arch) -> Toolkit | None:
        """The oldest toolkit that can target ``gpu``."""
        if gpu.name not in self._first:
            self._first[gpu.name] = next((t for t in self.m.toolkits if gpu.name in t.archs), None)
        return self._first[gpu.name]

    def last_toolkit_for(self, gpu: Arch) -> Toolkit | None:
        """The newest toolkit that can target ``gpu``."""
        return next((t for t in reversed(self.m.toolkits) if gpu.name in t.archs), None)

    def introduced_by(self, gpu: Arch) -> Toolkit | None:
        """The toolkit that introduced ``gpu``; None when it predates the oldest in the data."""
        first = self.first_toolkit_for(gpu)
        if first is None or (self.m.toolkits and first is self.m.toolkits[0]):
            return None
        return first

    def driver_floors(self, *, windows: bool) -> list[Dotted]:
        """Every driver floor the data names (toolkits' native floors, majors' minor-version
        floors), oldest first, in the OS column asked: with ``windows``, the Windows driver's
        (native Windows and WSL 2), where NVIDIA publishes them (else the Linux floor stands, as
        the fit takes it)."""
        if windows:
            floors = {f for tk in self.m.toolkits if (f := self.windows_driver_min(tk.version))}
            floors |= {f for m in self.m.cuda_majors if (f := self.minor_compat_driver_min(m.major, windows=True))}
            return sorted(floors)
        floors = {tk.driver_min for tk in self.m.toolkits}
        floors |= {m.minor_compat_driver_min for m in self.m.cuda_majors if m.minor_compat_driver_min}
        return sorted(floors)

    def gpu_driver_floor(self, gpu: Arch, *, windows: bool) -> Dotted | None:
        """The oldest driver that knows ``gpu``: the floor of the first CUDA toolkit targeting it,
        in the OS column asked (``windows``: a Windows driver's, native or WSL 2's host's); None when
        it predates the data. The OS is always asked: no column is a default."""
        first = self.introduced_by(gpu)
        if first is None:
            return None
        return self.windows_driver_min(first.version) if windows else first.driver_min

    def cuda_max_for_driver(self, driver: Dotted) -> Dotted | None:
        """The newest CUDA major.minor a driver runs natively, from the toolkit floors."""
        best: Dotted | None = None
        for t in self.m.toolkits:
            if t.driver_min <= driver and (best is None or t.version > best):
                best = t.version
        return best

    def cuda_compat(self, cuda: Dotted) -> CudaCompat | None:
        """The CUDA forward-compatibility package (``cuda-compat-13-0``) of CUDA ``major.minor``
        and the driver branches it runs on (cuda.toml ``[[compat]]``); None: NVIDIA publishes none
        for it, or the data does not say."""
        key = cuda.prefix(2)
        return next((c for c in self.m.cuda_compats if c.cuda.prefix(2) == key), None)

    def branch_floor(self, branch: int) -> Dotted | None:
        """The first driver of branch ``branch`` that runs the branch's own CUDA (its ``cuda_max``)
        natively: where a driver of the branch starts to count (None: the data has no such branch)."""
        row = next((b for b in self.m.branches if b.branch == branch), None)
        return self.native_driver_min(row.cuda_max) if row is not None else None

    def wsl_cuda_branch(self) -> int | None:
        """The first driver branch whose Windows driver runs CUDA under WSL 2 (None: the data does not say)."""
        return min((b.branch for b in self.m.branches if b.wsl_cuda), default=None)

    def wsl_driver_floor(self) -> Dotted | None:
        """The oldest Windows driver whose CUDA reaches WSL 2: the first of :meth:`wsl_cuda_branch`
        that runs that branch's own CUDA natively, in NVIDIA's Windows column (None: not known)."""
        first = self.wsl_cuda_branch()
        row = next((b for b in self.m.branches if b.branch == first), None)
        return self.windows_driver_min(row.cuda_max) if row is not None else None

    def newest_branch_for(self, families: set[str]) -> int | None:
        """The newest driver branch that still supports every family; None: no limit known."""
        limit = min((b.branch for b in self.m.branches if families & set(b.unsupported_families)), default=None)
        if limit is None:
            return None
        return max((b.branch for b in self.m.branches if b.branch < limit), default=None)

    def branch_drops(self, branch: int, families: set[str]) -> set[str]:
        """The families a driver branch no longer supports, among ``families``."""
        rows = [b for b in self.m.branches if b.branch <= branch]
        if not rows:
            return set()
        return families & set(rows[-1].unsupported_families)

    def cudnn_row(self, version: str, cuda_major: int) -> Cudnn | None:
        """The support-matrix row for a cuDNN version as pinned (``9.1.0.70`` -> 9.1.0), or, for a
        version named by its line only (``8.6``, ``9``: what TensorFlow's tested configurations and
        onnxruntime-gpu's requirement say), the newest row of that line, which pip installs."""
        if (version, cuda_major) not in self._cudnn:
            parts = _parts(version)
            rows = [row for row in self.m.cudnn
                    if row.cuda_major == cuda_major and parts[: len(row.version.key)] == row.version.key]
            line = [row for row in self.m.cudnn
                    if row.cuda_major == cuda_major and row.version.key[: len(parts)] == parts]
            # the most specific row (the first of equally specific ones); else the newest of the line
            self._cudnn[version, cuda_major] = (max(rows, key=lambda row: len(row.version.key)) if rows
                                                else max(line, key=lambda row: row.version, default=None))
        return self._cudnn[version, cuda_major]

    def newest_rocm(self) -> Dotted | None:
        """The newest ROCm release the data knows (None: none)."""
        return self.m.rocm[-1].version if self.m.rocm else None

    def tools(self) -> tuple[tuple[str, str], ...]:
        """The tools the images install (uv), name -> version."""
        return tuple((tool.name, tool.version) for tool in self.m.tools)

    def rocm_row(self, version: Dotted) -> Rocm | None:
        return next((r for r in self.m.rocm if r.version.prefix(2) == version.prefix(2)), None)

    def rocm_supporting(self, gfx: str) -> list[Rocm]:
        """The ROCm releases that support target ``gfx`` (AMD's lists), oldest first: its window."""
        return [r for r in self.m.rocm if gfx in r.gfx]

    def compiled_for(self, gfx: str) -> bool:
        """Whether some framework build in the data is compiled for target ``gfx`` (its ``gfx`` list)."""
        return any(gfx in b.gfx for b in self.m.builds)

    def rocm_shipping(self, gfx: str) -> list[Rocm]:
        """The ROCm releases whose libraries ship kernels for ``gfx``, supported or not, oldest first."""
        return [r for r in self.m.rocm if gfx in r.shipped]

    # -- platforms (linux/arm64, Jetson, the AMD kernel driver) ----------------------------

    def platform_wheel(self, b: Build, platform: str) -> PlatformWheel | None:
        """The row that publishes ``b`` for ``platform`` (None: not published there, or amd64)."""
        return next((w for w in self.m.platform_wheels if w.platform == platform and _publishes(w, b)), None)

    def for_platform(self, b: Build, platform: str) -> Build:
        """``b`` as published for ``platform``: the kernels of that platform's build where
        matrices/platforms.toml lists them (PyTorch's aarch64 CUDA builds target other archs), and
        its index there when it is not the build's own (``on_index``)."""
        w = self.platform_wheel(b, platform) if platform != DEFAULT_PLATFORM else None
        if w is None:
            return b
        if w.on_index:  # on another index there, in its variant's folder; its Requires-Dist pins (nvidia-*,
            # triton) are the Linux wheel's, so none there, as no build of the PyTorch index has them
            b = msgspec.structs.replace(b, index=w.on_index, index_path=b.variant, default=False, pins=(), shared=())
        if w.xpu:
            return msgspec.structs.replace(b, xpu=w.xpu)
        if w.archs:
            return msgspec.structs.replace(b, archs=w.archs, ptx=w.ptx)
        return b

    def on_platform(self, b: Build, platform: str) -> bool:
        """Whether ``b`` is published for ``platform``: a build that names its platforms (the macOS
        and Windows builds of the default index) for those; a Jetson build for linux/arm64 only;
        every other for linux/amd64, and elsewhere as matrices/platforms.toml says."""
        if b.platforms:
            return platform in b.platforms
        if b.jetpack:
            return platform == JETSON_PLATFORM
        return platform == DEFAULT_PLATFORM or self.platform_wheel(b, platform) is not None

    def image_on_platform(self, image: Image, platform: str) -> bool:
        """Whether ``image``'s tags are published for ``platform``."""
        if platform == DEFAULT_PLATFORM:
            return not image.repository.startswith("nvcr.io/nvidia/l4t")
        return any(r.repository == image.repository and r.platform == platform
                   and SpecifierSet(r.versions).contains(image.version.raw, prereleases=True)
                   for r in self.m.platform_images)

    def jetpacks_for(self, gpu_names: list[str]) -> list[JetPack]:
        """The JetPack releases that support every one of these GPU models, oldest first."""
        return [j for j in self.m.jetpacks if all(n in j.gpus for n in gpu_names)]

    def is_jetson(self, gpu_name: str) -> bool:
        """Whether a GPU model is a Jetson module (some JetPack release supports it)."""
        return any(gpu_name in j.gpus for j in self.m.jetpacks)

    def jetpack_releases(self) -> tuple[JetPack, ...]:
        """Every JetPack release the data knows, oldest first."""
        return self.m.jetpacks

    def jetpack(self, version: Dotted) -> JetPack | None:
        """The JetPack row of ``version`` (``6`` -> the newest 6.x; ``6.2`` -> 6.2, not 6.2.1)."""
        rows = [j for j in self.m.jetpacks if j.version.key[: len(version.key)] == version.key]
        exact = [j for j in rows if j.version == version]
        return (exact or rows)[-1] if rows else None

    def jetpack_of_l4t(self, l4t: str) -> JetPack | None:
        """The JetPack release of a Jetson's L4T release (``R36.4.3``): the one that ships it, else
        the newest of the same L4T major.minor (whose containers serve it); None when unknown."""
        parts = _parts(l4t)
        exact = [j for j in self.m.jetpacks if _parts(j.l4t) == parts]
        near = [j for j in self.m.jetpacks if _parts(j.l4t)[:2] == parts[:2]]
        found = exact or near
        return found[-1] if found else None

    def kmd(self, version: Dotted) -> Kmd | None:
        """The kernel-driver row of a ROCm release (by major.minor)."""
        return next((k for k in self.m.kmds if k.version.prefix(2) == version.prefix(2)), None)

    # -- frameworks --------------------------------------------------------------------

    def releases(self, package: str) -> list[Release]:
        """Releases of a framework, newest first."""
        return self._releases.get(package, [])

    def builds(self, release: Release) -> list[Build]:
        return self._builds.get((release.package, release.version), [])

    def shared(self, release: Release, build: Build | None) -> tuple[tuple[str, str], ...]:
        """The requirements other frameworks also have that ``release`` installed as ``build`` (None:
        the release itself, pure Python) brings: canonical name -> specifier (:func:`~envsolve.data.shared_of`),
        by the build's variant (a build made for another platform has the data's own)."""
        key = (release.package, release.version, build.variant if build is not None else "")
        made = self._shared.get(key)
        if made is None:  # of the data's own build of that variant, not of a copy for a platform (for_platform)
            own = None if build is None else next((b for b in self.builds(release) if b.variant == build.variant), None)
            made = self._shared[key] = () if build is not None and own is None else shared_of(release, own)
        return made

    def conda_specs(self, release: Release, cuda: Dotted | None, python: str) -> tuple[str, ...]:
        """conda-forge's MatchSpecs for a framework build; () unless conda-forge has every piece.

        A framework may be several conda packages (jax is noarch ``jax`` plus ``jaxlib``, whose
        version is the release's jaxlib companion)."""
        want = "{}.{}".format(*cuda.prefix(2)) if cuda is not None else None
        rows = self._conda.get(release.package, [])
        versions = {name: dict(release.companions).get(name, release.raw) for name in {r.name for r in rows}}
        specs = tuple(_conda_spec(rows, name, version, want, python) for name, version in sorted(versions.items()))
        return specs if all(specs) else ()

    def os_python(self, os: str) -> str:
        """The Python minor the OS's own ``python3`` package is ("" when the data does not say)."""
        return next((o.python for o in self.m.oses if o.name == os), "")

    def os_glibc(self, os: str) -> Dotted | None:
        """The glibc of a container OS (None when the data does not say)."""
        return self._os_glibc.get(os)

    def glibc_class(self, os: str) -> Dotted | None:
        """What a container OS means to the wheels: its glibc where some wheel needs a newer one,
        else None (no wheel of the data is refused there, as with no OS asked). Solves that differ
        only in OSes of one class share their answers (``envsolve matrix`` cells, the memo tables)."""
        have = self._os_glibc.get(os) if os else None
        if have is None or self._newest_wheel_glibc is None or have >= self._newest_wheel_glibc:
            return None
        return have

    def wheel_glibc(self, b: Build, platform: str) -> Dotted | None:
        """The glibc ``b``'s wheels for Linux ``platform`` need: their ``manylinux_X_Y`` tag
        (platforms.toml ``[[manylinux]]``); None when the data does not say."""
        key = (b.package, b.version, b.variant, platform)
        if key not in self._glibc:  # asked of every build a spec with [container] os fits
            self._glibc[key] = next((w.glibc for w in self.m.manylinux if w.package == b.package
                                     and w.platform == platform
                                     and (not w.variants or any(fnmatch.fnmatchcase(b.variant, v) for v in w.variants))
                                     and SpecifierSet(w.versions).contains(b.version, prereleases=True)), None)
        return self._glibc[key]

    def images(self, accelerator: Accelerator) -> list[Image]:
        return self._images.get(accelerator, [])

    def image_line(self, ref: str) -> tuple[Image, str, str] | None:
        """The row, flavour and OS of the image reference ``ref`` as the solver writes it
        (:meth:`Image.ref`), or None when no row of the data makes it."""
        repository, _, tag = ref.partition(":")
        for i in (i for i in self.m.images if i.repository == repository and not i.removed):
            for flavor in i.flavors:
                os = next((o for o in i.os if i.ref(flavor, o) == ref), None)
                if os is not None:
                    return i, flavor, os
        return None

    def end_of_life(self, image: Image) -> ImageEndOfLife | None:
        """When the registry deletes ``image``'s tags: the earliest ``[[eol]]`` row of images.toml
        that covers its version (None when the data gives no date)."""
        rows = [e for e in self.m.image_eols if e.repository == image.repository
                and SpecifierSet(e.versions).contains(image.version.raw, prereleases=True)]
        return min(rows, key=lambda e: e.deleted, default=None)

    def pythons(self) -> list[str]:
        """Every Python minor the data knows, oldest first."""
        seen = {p for r in self.m.releases for p in r.python}
        seen |= {i.python for i in self.m.images if i.python}
        return sorted(seen, key=_parts)

    # -- extension packages ----------------------------------------------------------

    def library(self, name: str, version: str, cuda_major: int) -> Library | None:
        """The row of CUDA library ``name`` (``cublas``) at ``version`` (its own numbering, as a
        build pins its wheel: 12.4.5.8) for CUDA ``cuda_major``; None when the data has none."""
        key = (name, version, cuda_major)
        if key not in self._library:  # asked by every fit of a build that pins the library
            try:
                v = Version(version)
            except InvalidVersion:
                v = None
            self._library[key] = next((row for row in self.m.libraries if v is not None and row.name == name
                                       and row.cuda_major == cuda_major
                                       and SpecifierSet(row.versions).contains(v, prereleases=True)), None)
        return self._library[key]

    def compiler(self, release: Release) -> Compiler | None:
        """The compiler ``release`` runs on the user's machine to make GPU code, with the newest
        arch it targets (compilers.toml); None: it compiles none there, or the data does not say."""
        key = (release.package, release.version)
        if key not in self._compiler:  # every fit asks: each release is looked up once
            self._compiler[key] = next((c for c in self.m.compilers if c.package == release.package
                                        and SpecifierSet(c.versions).contains(release.version, prereleases=True)), None)
        return self._compiler[key]

    def extensions(self, package: str) -> list[Extension]:
        """The rows of CUDA extension package ``package`` (canonical name), newest release first."""
        return sorted(self._extensions.get(package, ()), key=lambda x: Version(x.newest), reverse=True)

    def extension_wheels(self, package: str, version: str) -> list[ExtensionWheel]:
        """The prebuilt wheel rows of ``package`` at ``version`` outside the default index."""
        return [w for w in self._extension_wheels.get(package, ())
                if SpecifierSet(w.versions).contains(version, prereleases=True)]


def load_provider(root: Path | None = None, *, fresh: bool = False) -> Provider:
    """The provider of the matrices under ``root`` (default: the shipped ones), their records read
    through the compiled cache (:func:`envsolve.data.load`), or from the TOML itself when ``fresh``
    (a check, such as `lock --check`, believes no cache); its indexes are made again each time
    (a few milliseconds, less than unpickling them took)."""
    return Provider(load_dir(root or data_dir()) if fresh else load(root))
