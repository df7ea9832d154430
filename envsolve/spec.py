"""``project.toml`` into a frozen :class:`ProjectSpec`.

Each section has its own small parser; all of them read through one
:class:`~envsolve.tables.TableReader`, and every problem (file, key, value, what to do) is raised
at once as one :class:`SpecError`. GPU names are resolved through the provider, with a "did you
mean" for near misses.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from .config import Credential, check_url, index_credentials, requirement_credentials, scrub, url_problem
from .domain import (
    APPLE_ACCELERATORS,
    APPLE_PLATFORM,
    COMPANIONS,
    DEFAULT_INDEXES,
    DEFAULT_PLATFORM,
    FRAMEWORKS,
    KERAS_BACKENDS,
    PLATFORMS,
    VENDOR_NAME,
    VENDORS,
    AppleAccelerator,
    Platform,
    Vendor,
    canonical_name,
    os_of,
)
from .errors import Problem, SpecError
from .tables import TableReader, closest, load_toml, parse_toml, unknown_key, word
from .versions import Arch, Dotted, LongNumber, parse_arch, parse_dotted, parse_driver, parse_range, parse_requirement

if TYPE_CHECKING:
    from packaging.markers import Marker

    from .data import Gpu, JetPack
    from .provider import Provider

__all__ = ["FLAVORS", "FrameworkReq", "GpuReq", "ProjectSpec", "SectionParser", "Target", "digest", "host_problem",
           "is_name", "package_problem", "parse_gpus", "parse_spec", "unknown_gpu", "url_credentials"]

ALIASES = {"pytorch": "torch", "tf": "tensorflow", "tensorflow-gpu": "tensorflow",
           "jax[cuda12]": "jax", "keras3": "keras", "tf-keras": "keras", "onnxruntime-gpu": "onnxruntime",
           "ort": "onnxruntime", "paddle": "paddlepaddle", "paddlepaddle-gpu": "paddlepaddle",
           "cupy-cuda12x": "cupy", "cupy-cuda13x": "cupy", "cupy-cuda11x": "cupy"}
FLAVORS = ("base", "runtime", "devel")
_APT = re.compile(r"^[a-z0-9][a-z0-9+.-]*(=[A-Za-z0-9.+~:-]+)?$")
_CONDA = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*(::[A-Za-z0-9_.\-]+)?([ =<>!~*,.|0-9A-Za-z_+]*)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
INDEX_NAMES = ("pypi", *sorted(DEFAULT_INDEXES))  # the names [indexes] may set: the default and the routed ones


class FrameworkReq(msgspec.Struct, frozen=True, kw_only=True):
    """One entry of ``[frameworks]``."""

    name: str
    specifier: SpecifierSet
    raw: str
    backend: str = ""  # keras only
    asked_by: str = ""  # the [packages] pip releases whose Requires-Dist narrowed the range (see steer.py)


class GpuReq(msgspec.Struct, frozen=True, kw_only=True):
    """A GPU the target must serve: a model (``H100``) or a bare architecture (``sm_90``)."""

    label: str  # as the user wrote it
    name: str  # the model's canonical name, or the architecture's name
    arch: Arch
    family: str
    vendor: Vendor
    platform: Platform | Literal[""] = ""  # the platform the model implies (a Grace superchip, a Jetson): "" for none


class Target(msgspec.Struct, frozen=True, kw_only=True, cache_hash=True):
    """The hardware one environment must run on. The solver keys its memo tables by target: its
    hash is worked out once (``cache_hash``), not on every look-up."""

    name: str
    vendor: Vendor
    gpus: tuple[GpuReq, ...] = ()
    driver: Dotted | None = None
    cuda: Dotted | None = None
    rocm: Dotted | None = None
    platform: Platform = DEFAULT_PLATFORM
    jetpack: Dotted | None = None  # a Jetson target: the JetPack release (its driver and CUDA)
    rocm_driver: Dotted | None = None  # the ROCm release of the host's amdgpu kernel driver
    wsl: bool = False  # Linux under WSL2 on a Windows host: ``driver`` is the Windows driver's number
    platform_why: str = ""  # why this platform (envsolve explain)
    # Apple silicon's ``accelerator`` as written ("" when not: the vendor's, and the lock warns when the
    # Metal plugins hold a framework back); ``cpu`` makes the target a CPU one (vendor cpu, no GPUs)
    accelerator: AppleAccelerator | Literal[""] = ""

    @property
    def windows_driver(self) -> bool:
        """Whether the NVIDIA driver is Windows' (native Windows, or WSL2's, which is the host's)."""
        return self.wsl or os_of(self.platform) == "windows"


class ProjectSpec(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    name: str
    python: SpecifierSet
    python_raw: str
    frameworks: tuple[FrameworkReq, ...]
    targets: tuple[Target, ...]
    pip: tuple[str, ...] = ()
    conda: tuple[str, ...] = ()
    apt: tuple[str, ...] = ()
    os: str = ""
    flavor: str = ""
    indexes: tuple[tuple[str, str], ...] = ()
    same_versions: bool = False  # one version of each framework on every target
    # the logins taken out of [packages] pip's direct references (``pip`` holds them without): in
    # memory only, for the installers' netrc (see envsolve.config)
    credentials: tuple[Credential, ...] = ()

    def framework(self, name: str) -> FrameworkReq | None:
        return next((f for f in self.frameworks if f.name == name), None)

    def applies(self, marker: Marker | None, pythons: Sequence[str]) -> bool:
        """Whether a ``[packages] pip`` line's marker (None: it has none) is true on one of the
        targets: its platform's PEP 508 environment (``domain.MARKERS``, through
        ``index.metadata.marker_environment``) with one of ``pythons`` (CPython minors) that the
        spec's range admits. A line that applies nowhere (``foo>=2; sys_platform == "win32"`` for
        linux/amd64) asks nothing of the solve; uv leaves it out of the environment the same way."""
        if marker is None:
            return True
        from .index.metadata import marker_environment
        from .versions import python_admits_minor

        minors = [p for p in pythons if python_admits_minor(self.python, p)] or list(pythons)
        return any(_marker_true(marker, marker_environment(p, t.platform)) for t in self.targets for p in minors)


_HARDWARE = {"gpus", "driver", "vendor", "cuda", "rocm", "platform", "jetpack", "rocm_driver", "wsl", "accelerator"}
# a [hardware] key -> the vendor it applies to; a target of another vendor does not inherit it
_KEY_VENDOR = {"driver": "nvidia", "cuda": "nvidia", "rocm": "amd", "rocm_driver": "amd", "jetpack": "nvidia"}
_SECTIONS = {
    "project": {"name", "python", "description", "same-versions"},
    "frameworks": None,  # free keys, checked against FRAMEWORKS and COMPANIONS
    "hardware": None,  # checked with each target, so a typo is reported once
    "packages": {"pip", "conda", "apt"},
    "container": {"os", "flavor"},
    "targets": None,
    "indexes": None,
}
_BARE_VERSION = re.compile(r"[0-9]+\.[0-9]+")  # a Python minor with no operator ("3.11"): that release line
_CUDA = partial(parse_dotted, what="CUDA version")
_ROCM = partial(parse_dotted, what="ROCm version")
_ROCM_DRIVER = partial(parse_dotted, what="ROCm kernel driver")
_JETPACK = partial(parse_dotted, what="JetPack version")


def _agree(names: list[str], one: str, many: str) -> str:
    """``one`` for a single name, ``many`` for several (``is``/``are``)."""
    return one if len(names) == 1 else many


class SectionParser(TableReader):
    """Base of the section parsers of a person's file: one reader of its tables, and the provider
    its GPU names resolve against."""

    def __init__(self, path: str, provider: Provider) -> None:
        super().__init__(path)
        self.provider = provider

    def gpus(self, names: list[Any], key: str) -> tuple[GpuReq, ...]:
        """Each GPU name or architecture of the list at ``key``; the ones it cannot place are problems."""
        return tuple(g for i, name in enumerate(names) if (g := self.gpu(name, f"{key}[{i}]")) is not None)

    def gpu(self, label: Any, key: str) -> GpuReq | None:
        """A GPU model of the data, or else an architecture the data knows."""
        if not isinstance(label, str) or not label.strip():
            self.bad(key, f"{label!r} is not a GPU name")
            return None
        model = self.provider.gpu(label)
        return self._bare_arch(label, key) if model is None else self._model(label, model)

    def _model(self, label: str, model: Gpu) -> GpuReq:
        info = self.provider.arch_info(model.arch)
        return GpuReq(label=label, name=model.name, arch=parse_arch(model.arch),
                      family=info.family if info else "", vendor=model.vendor, platform=model.platform)

    def _bare_arch(self, label: str, key: str) -> GpuReq | None:
        try:
            a = parse_arch(label)
        except ValueError:
            self.bad(key, unknown_gpu(self.provider, label))
            return None
        info = self.provider.arch_info(a.name)
        if info is None:
            self.bad(key, f"architecture {label!r} ({a.name}) is not in the data (matrices/gpus.toml)")
            return None
        return GpuReq(label=label, name=a.name, arch=a, family=info.family, vendor=info.vendor)


class _ProjectParser(SectionParser):
    """The section parsers of project.toml; each adds what is wrong to one collector."""

    def _str(self, table: dict[str, Any], key: str, where: str) -> str:
        v = table.get(key, "")
        if not isinstance(v, str):
            self.bad(f"{where}.{key}", f"must be a string, not {type(v).__name__} {v!r}")
            return ""
        return v.strip()

    def _specifier(self, raw: str, key: str, example: str = "'>=2.4', '==2.7.*' or '*'") -> SpecifierSet:
        try:
            return parse_range(raw)
        except LongNumber as e:  # (before int() reads it: a traceback when the solver compared)
            self.bad(key, str(e))
            return SpecifierSet()
        except InvalidSpecifier:
            self.bad(key, f"{raw!r} is not a version specifier; write e.g. {example}")
            return SpecifierSet()

    def sections(self, data: dict[str, Any]) -> None:
        """Unknown sections, sections that are not tables, unknown keys of fixed sections."""
        for section, value in data.items():
            if self.unknown_section(section, _SECTIONS):
                continue
            if not isinstance(value, dict):
                self.bad(section, f"must be a table [{section}], not {value!r}")
            elif (allowed := _SECTIONS[section]) is not None:
                self.unknown_keys(value, section, allowed)

    def project(self, table: dict[str, Any]) -> tuple[str, str, SpecifierSet]:
        """(name, Python range as written, Python range)."""
        self._str(table, "description", "project")
        name = self._str(table, "name", "project") or "project"
        if not _NAME.fullmatch(name):
            self.bad("project.name", f"{name!r} must be letters, digits, '.', '_' or '-'")
        python_raw = self._str(table, "python", "project") or "*"
        if _BARE_VERSION.fullmatch(python_raw.strip()):  # "3.11" as pixi and conda read it: any patch of 3.11
            python_raw = f"=={python_raw.strip()}.*"
        return name, python_raw, self._specifier(python_raw, "project.python", "'>=3.10,<3.13', '==3.11.*' or '3.11'")

    def same_versions(self, table: dict[str, Any]) -> bool:
        value = table.get("same-versions", False)
        if not isinstance(value, bool):
            self.bad("project.same-versions", f"must be true or false, not {value!r}")
            return False
        return value

    def targets(self, hardware: dict[str, Any], extra: Any) -> list[Target]:
        """The default target from [hardware], then each [targets.NAME] in name order."""
        named = extra if isinstance(extra, dict) else {}
        targets = [self.target("default", hardware, {}, "hardware")]
        targets += [self._named_target(name, named[name], hardware) for name in sorted(named)]
        return [t for t in targets if t is not None]

    def _named_target(self, name: str, table: Any, hardware: dict[str, Any]) -> Target | None:
        if not _NAME.fullmatch(name) or name == "default":
            self.bad(f"targets.{name}", f"{name!r}: target names are letters, digits, '.', '_' or '-' "
                     "and not 'default'")
            return None
        return self.target(name, table, hardware, f"targets.{name}")

    def container(self, table: dict[str, Any]) -> tuple[str, str]:
        """(os, flavor)."""
        os_ = self._str(table, "os", "container")
        known = self._oses()
        if os_ and os_ not in known:
            near = closest(os_, known)
            tip = f"; did you mean '{near}'?" if near else ""
            self.bad("container.os", f"{os_!r} is not an OS of the data's base images (known: {', '.join(known)}){tip}")
        flavor = self._str(table, "flavor", "container")
        if flavor and flavor not in FLAVORS:
            self.bad("container.flavor", f"{flavor!r} must be one of {', '.join(FLAVORS)}")
        return os_, flavor

    def _oses(self) -> list[str]:
        """The OS names of the data's base images and JetPack releases, sorted."""
        m = self.provider.m
        return sorted({o for i in m.images for o in i.os} | {j.os for j in m.jetpacks})

    def indexes(self, table: Any) -> tuple[tuple[str, str], ...]:
        """[indexes] name = URL, each name one envsolve routes packages to (``pypi``, the default,
        and those of :data:`~envsolve.domain.DEFAULT_INDEXES`), each URL checked before it can
        reach a generated file."""
        if not isinstance(table, dict):
            return ()
        return tuple(index for key, value in sorted(table.items()) if (index := self._index(key, value)) is not None)

    def _index(self, key: str, value: Any) -> tuple[str, str] | None:
        if key.lower() not in INDEX_NAMES:
            self.bad(f"indexes.{key}", unknown_key(key.lower(), INDEX_NAMES))
            return None
        if (why := check_url(value)) is not None:
            self.bad(f"indexes.{key}", why)
            return None
        return key.lower(), value.rstrip("/")

    # ------------------------------------------------------------------ [frameworks]

    def frameworks(self, table: Any) -> list[FrameworkReq]:
        if not isinstance(table, dict):
            self.bad("frameworks", "must be a table such as [frameworks] torch = '>=2.4'")
            return []
        return [req for name, value in table.items() if (req := self._framework(name, value)) is not None]

    def _framework(self, name: str, value: Any) -> FrameworkReq | None:
        key = f"frameworks.{name}"
        canon = self._framework_name(name, key)
        written = None if canon is None else self._framework_value(canon, value, key)
        if canon is None or written is None:
            return None
        raw, backend = written
        return FrameworkReq(name=canon, specifier=self._specifier(raw, key), raw=raw.strip() or "*", backend=backend)

    def _framework_name(self, name: str, key: str) -> str | None:
        """The framework or companion ``name`` is (its canonical project name), or None."""
        canon = canonical_name(name)
        if canon in FRAMEWORKS or canon in COMPANIONS:
            return canon
        known = [*FRAMEWORKS, *COMPANIONS]
        hint = ALIASES.get(canon) or closest(canon, known)
        tip = f"; did you mean '{hint}'?" if hint else ""
        self.bad(key, f"unknown framework {name!r} (known: {', '.join(known)}){tip}")
        return None

    def _framework_value(self, canon: str, value: Any, key: str) -> tuple[str, str] | None:
        """(range as written, Keras backend) of ``torch = '>=2.4'`` or ``keras = {version, backend}``."""
        if isinstance(value, str):
            return value, ""
        if isinstance(value, dict):
            return self._framework_table(canon, value, key)
        self.bad(key, f"must be a version specifier string or a table, not {value!r}")
        return None

    def _framework_table(self, canon: str, value: dict[str, Any], key: str) -> tuple[str, str]:
        extra = sorted(set(value) - {"version", "backend"})
        if extra:
            self.bad(f"{key}.{extra[0]}", "unknown key (allowed: version, backend)")
        raw = value.get("version", "*")
        if not isinstance(raw, str):
            self.bad(f"{key}.version", f"must be a string, not {raw!r}")
            raw = "*"
        return raw, self._backend(canon, value.get("backend", ""), key)

    def _backend(self, canon: str, backend: Any, key: str) -> str:
        if backend and canon != "keras":
            self.bad(f"{key}.backend", "only keras takes a backend")
        if backend and backend not in KERAS_BACKENDS:
            self.bad(f"{key}.backend", f"{backend!r} is not a Keras backend (use {', '.join(KERAS_BACKENDS)})")
            return ""
        return backend if isinstance(backend, str) else ""

    # ------------------------------------------------------------------ [hardware], [targets.NAME]

    def target(self, name: str, table: Any, base: dict[str, Any], where: str) -> Target | None:
        """The target ``name`` of ``table`` at ``where``, the keys of ``base`` ([hardware]) inherited."""
        if not isinstance(table, dict):
            self.bad(where, "must be a table")
            return None
        self.unknown_keys(table, where, _HARDWARE)
        merged, inherited = _merged(table, base)
        gpus = self._target_gpus(merged, where)
        vendor = self._vendor(merged, gpus, where)
        if vendor is None:
            return None
        for key, applies in _KEY_VENDOR.items():
            if key in inherited and vendor != applies:
                merged.pop(key)  # a [hardware] key of another vendor does not carry over
        driver, cuda, rocm, rocm_driver = self._stack(merged, where, vendor)
        platform, why = self._platform(merged, gpus, where, inherited)
        jetpack = self._jetpack(merged, gpus, where, driver, cuda)
        wsl = self._wsl(merged, where, platform, jetpack)
        vendor = self._host_vendor(merged, where, platform, vendor, wsl)
        vendor, gpus, accelerator = self._accelerator(merged, where, platform, vendor, gpus, inherited)
        return Target(name=name, vendor=word(vendor, VENDORS) or "cpu", gpus=tuple(gpus), driver=driver, cuda=cuda,
                      rocm=rocm, platform=platform, jetpack=jetpack, rocm_driver=rocm_driver, wsl=wsl,
                      platform_why=why, accelerator=accelerator)

    def _accelerator(self, table: dict[str, Any], where: str, platform: Platform, vendor: str, gpus: list[GpuReq],
                     inherited: set[str]) -> tuple[str, list[GpuReq], AppleAccelerator | Literal[""]]:
        """(vendor, GPUs, accelerator) of ``accelerator``, which chooses what a Mac on Apple silicon
        runs: ``mps`` its GPU (JAX and TensorFlow through Apple's Metal plugins, which pin older
        releases), ``cpu`` its CPU (the newest releases; the target's GPUs are then left out). A
        [hardware] key that a target of another platform, or of no Apple GPU, inherits does not apply."""
        if "accelerator" not in table:
            return vendor, gpus, ""
        raw, key = table["accelerator"], f"{where}.accelerator"
        if "accelerator" in inherited and (platform != APPLE_PLATFORM or (raw == "mps" and vendor != "apple")):
            return vendor, gpus, ""
        accelerator = word(raw, APPLE_ACCELERATORS)
        if accelerator is None:
            self.bad(key, f"{raw!r} must be one of {', '.join(APPLE_ACCELERATORS)} (mps: the Apple GPU, through "
                     "Apple's Metal plugins for JAX and TensorFlow; cpu: the CPU builds, the newest releases)")
        elif platform != APPLE_PLATFORM:
            self.bad(key, f"{raw!r} applies to Apple silicon only (platform = '{APPLE_PLATFORM}'); elsewhere "
                     "vendor and gpus choose the builds")
        elif accelerator == "mps" and vendor != "apple":
            self.bad(key, f"is 'mps' (Apple's GPU) but vendor is {vendor!r}; drop one of them")
        else:
            return ("apple", gpus, "mps") if accelerator == "mps" else ("cpu", [], "cpu")
        return vendor, gpus, ""

    def _wsl(self, table: dict[str, Any], where: str, platform: Platform, jetpack: Dotted | None) -> bool:
        """``wsl = true``: Linux under WSL2, which is x86_64 Linux on a Windows host's driver."""
        raw: object = table.get("wsl", False)
        if not isinstance(raw, bool):
            self.bad(f"{where}.wsl", f"{raw!r} must be true or false (true: Linux under WSL2 on a Windows host)")
            return False
        if raw and platform != DEFAULT_PLATFORM:
            self.bad(f"{where}.wsl", f"is true but the platform is {platform!r}: WSL2 runs {DEFAULT_PLATFORM} "
                     f"Linux (set platform = '{DEFAULT_PLATFORM}', or drop wsl)")
        if raw and jetpack is not None:
            self.bad(f"{where}.wsl", "is true but the GPUs are Jetson modules, which run JetPack's Linux, not WSL2")
        return raw

    def _host_vendor(self, table: dict[str, Any], where: str, platform: Platform, vendor: str, wsl: bool) -> str:
        """The vendor, checked against what the host's OS drives: Apple's GPU on Apple silicon only
        (implied there when no vendor or GPU is written: ``gpus = []`` names none, as on every other
        platform, where it is the same as no ``gpus``), no GPU stack on an Intel Mac, no AMD or Intel
        GPU on Windows on Arm, no ROCm on native Windows (:func:`host_problem`)."""
        if platform == APPLE_PLATFORM and "vendor" not in table and table.get("gpus", []) == []:
            vendor = "apple"
        why = host_problem(platform, vendor)
        if why:
            key = "gpus" if "gpus" in table and "vendor" not in table else "vendor"
            self.bad(f"{where}.{key}", f"{table.get(key, vendor)!r} on {platform}: {why}")
        if vendor in ("nvidia", "amd"):
            self._stack_keys(table, where, os_of(platform), wsl and vendor == "amd")
        return vendor

    def _stack_keys(self, table: dict[str, Any], where: str, host: str, amd_under_wsl: bool) -> None:
        """The keys of a GPU stack the host lacks: CUDA or ROCm on macOS, ROCm on native Windows, the
        amdgpu kernel driver's release under WSL2 (the Windows host's driver runs the GPU)."""
        for key in ("driver", "cuda", "rocm", "rocm_driver"):
            if key in table and host == "darwin":
                self.bad(f"{where}.{key}", f"{table[key]!r}: macOS has no CUDA or ROCm; drop the key (a Mac's GPU "
                         "is Apple's, through MPS)")
            elif key in table and host == "windows" and key.startswith("rocm"):
                self.bad(f"{where}.{key}", f"{table[key]!r}: ROCm builds of these frameworks are for Linux; drop the "
                         "key, or use WSL2 (platform = 'linux/amd64', wsl = true)")
        if amd_under_wsl and "rocm_driver" in table:
            self.bad(f"{where}.rocm_driver", "does not apply under WSL2, which runs the Windows host's AMD driver")

    def _target_gpus(self, table: dict[str, Any], where: str) -> list[GpuReq]:
        raw = table.get("gpus", [])
        if isinstance(raw, str):
            raw = [raw]
        if not isinstance(raw, list):
            self.bad(f"{where}.gpus", "must be a list of GPU names, e.g. ['A100', 'H100']")
            raw = []
        return list(self.gpus(raw, f"{where}.gpus"))

    def _vendor(self, table: dict[str, Any], gpus: list[GpuReq], where: str) -> str | None:
        """The vendor as written (checked against the GPUs), else the GPUs', else cpu; None when the
        GPUs are of two vendors."""
        vendor = self._written_vendor(table, where)
        vendors = {g.vendor for g in gpus}
        if len(vendors) > 1:
            names = " and ".join(VENDOR_NAME[v] for v in VENDORS if v in vendors)
            self.bad(f"{where}.gpus", f"mixes {names} GPUs; put each vendor in its own [targets.NAME]")
            return None
        if not vendor:
            return vendors.pop() if vendors else "cpu"
        self._vendor_fits(vendor, vendors, where)
        return vendor

    def _written_vendor(self, table: dict[str, Any], where: str) -> str:
        vendor = self._str(table, "vendor", where).lower()
        if vendor and vendor not in VENDORS:
            self.bad(f"{where}.vendor", f"{vendor!r} must be one of {', '.join(VENDORS)}")
        return vendor

    def _vendor_fits(self, vendor: str, vendors: set[Vendor], where: str) -> None:
        """The vendor written fits the GPUs listed."""
        if vendors and vendor not in vendors:
            self.bad(f"{where}.vendor", f"is {vendor!r} but the GPUs listed are {', '.join(sorted(vendors))}")
        if vendor == "cpu" and vendors:
            self.bad(f"{where}.vendor", "is 'cpu' but GPUs are listed; drop one of them")

    def _stack(self, table: dict[str, Any], where: str,
               vendor: str) -> tuple[Dotted | None, Dotted | None, Dotted | None, Dotted | None]:
        """(driver, CUDA, ROCm, ROCm kernel driver), each checked against the vendor."""
        driver = self._version(table, "driver", where, parse_driver)
        cuda = self._version(table, "cuda", where, _CUDA)
        rocm = self._version(table, "rocm", where, _ROCM)
        if vendor != "nvidia" and (driver or cuda):
            self.bad(where, "'driver' and 'cuda' apply to NVIDIA GPUs only (set vendor or gpus)")
        if vendor != "amd" and rocm:
            self.bad(f"{where}.rocm", "applies to AMD GPUs only (set vendor = 'amd' or AMD gpus)")
        return driver, cuda, rocm, self._rocm_driver(table, where, vendor)

    def _rocm_driver(self, table: dict[str, Any], where: str, vendor: str) -> Dotted | None:
        rocm_driver = self._version(table, "rocm_driver", where, _ROCM_DRIVER)
        if vendor != "amd" and rocm_driver:
            self.bad(f"{where}.rocm_driver", "applies to AMD GPUs only (the ROCm release of the amdgpu kernel driver)")
        if rocm_driver is not None and self.provider.kmd(rocm_driver) is None:
            known = ", ".join(k.version.raw for k in self.provider.m.kmds)
            self.bad(f"{where}.rocm_driver", f"{rocm_driver.raw!r}: the data has no kernel-driver row for it "
                     f"(known: {known}); write the ROCm release of the amdgpu driver, e.g. '6.4'")
        return rocm_driver

    def _platform(self, table: dict[str, Any], gpus: list[GpuReq], where: str,
                  inherited: set[str]) -> tuple[Platform, str]:
        """(platform, why): as written, else the one the GPUs imply, else the default. GPUs that
        imply different platforms, or a platform the GPUs contradict, are errors naming them."""
        implied = _implied_platforms(gpus)
        if len(implied) > 1:
            parts = "; ".join(f"{', '.join(n)} {_agree(n, 'is', 'are')} {p}" for p, n in sorted(implied.items()))
            self.bad(f"{where}.gpus", f"GPUs of different platforms in one target ({parts}); "
                     "put each platform's GPUs in its own [targets.NAME]")
            return DEFAULT_PLATFORM, ""
        inherits = "platform" in inherited
        if "platform" in table and not (inherits and implied):  # a target's own GPUs outrank [hardware]'s platform
            return self._written_platform(table["platform"], implied, where, "hardware" if inherits else where)
        if implied:
            ((p, names),) = implied.items()
            kind = "Apple silicon" if p == APPLE_PLATFORM else "an Arm CPU"
            return p, f"{', '.join(names)} {_agree(names, 'comes', 'come')} with {kind} ({p})"
        return DEFAULT_PLATFORM, f"{DEFAULT_PLATFORM}, the default (no GPU listed implies another platform)"

    def _written_platform(self, raw: Any, implied: dict[Platform, list[str]], where: str,
                          source: str) -> tuple[Platform, str]:
        platform = word(raw, PLATFORMS)
        if platform is None:
            self.bad(f"{where}.platform", f"{raw!r} must be one of {', '.join(PLATFORMS)} (Docker's names)")
            return DEFAULT_PLATFORM, ""
        for p, names in implied.items():
            if p != platform:
                self.bad(f"{where}.platform", f"is {platform!r} but {', '.join(names)} "
                         f"{_agree(names, 'runs', 'run')} on {p}; drop the key or move those GPUs")
        return platform, f"{platform} as written in [{source}]"

    def _jetpack(self, table: dict[str, Any], gpus: list[GpuReq], where: str, driver: Dotted | None,
                 cuda: Dotted | None) -> Dotted | None:
        """The JetPack release of a Jetson target: as written (checked against its modules), else
        the newest that supports them all. None for a target without Jetson modules."""
        jetsons = [g.name for g in gpus if self.provider.is_jetson(g.name)]
        if not self._all_jetsons(table, gpus, jetsons, where):
            return None
        if driver is not None or cuda is not None:
            self.bad(where, "a Jetson's driver and CUDA come with its JetPack release: write jetpack = '6.2' "
                     "instead of driver or cuda")
        fits = self.provider.jetpacks_for(jetsons)
        if "jetpack" in table:
            return self._written_jetpack(table, jetsons, fits, where)
        if not fits:
            self.bad(f"{where}.gpus", f"no JetPack release in the data supports {', '.join(jetsons)} together")
            return None
        return fits[-1].version

    def _all_jetsons(self, table: dict[str, Any], gpus: list[GpuReq], jetsons: list[str], where: str) -> bool:
        """Whether the target is a Jetson's: some GPUs, all of them Jetson modules (a jetpack key on
        another target, or modules mixed with other GPUs, are problems)."""
        if not jetsons:
            if "jetpack" in table:
                self.bad(f"{where}.jetpack", "applies to Jetson modules only (e.g. gpus = ['Jetson AGX Orin'])")
            return False
        if len(jetsons) != len(gpus):
            others = [g.name for g in gpus if g.name not in jetsons]
            self.bad(f"{where}.gpus", f"mixes Jetson modules ({', '.join(jetsons)}) with other GPUs "
                     f"({', '.join(others)}); put them in separate [targets.NAME]")
            return False
        return True

    def _written_jetpack(self, table: dict[str, Any], jetsons: list[str], fits: list[JetPack],
                         where: str) -> Dotted | None:
        row = self._jetpack_row(self._version(table, "jetpack", where, _JETPACK), where)
        if row is None:
            return None
        missing = [n for n in jetsons if n not in row.gpus]
        if missing:
            ok = _jetpack_span(fits) or "none"
            self.bad(f"{where}.jetpack", f"JetPack {row.version.raw} does not support {', '.join(missing)} "
                     f"(JetPack releases that do: {ok})")
            return None
        return row.version

    def _jetpack_row(self, version: Dotted | None, where: str) -> JetPack | None:
        """The data's row of a JetPack release written; None (and the problem) when it has none."""
        if version is None:
            return None
        row = self.provider.jetpack(version)
        if row is None:
            known = _jetpack_span(self.provider.m.jetpacks)
            self.bad(f"{where}.jetpack", f"JetPack {version.raw} is not in the data (known: {known})")
        return row

    def _version(self, table: dict[str, Any], key: str, where: str, parse: Callable[[str], Dotted]) -> Dotted | None:
        """The version at ``key`` (a string; a whole number for all but the driver), parsed. A
        decimal number is refused: TOML reads ``cuda = 12.10`` as 12.1."""
        raw = _number_as_text(table.get(key), key)
        if raw is None:
            return None
        if not isinstance(raw, str):
            example = "'535.104.05'" if key == "driver" else "'12.4'"
            self.bad(f"{where}.{key}", f"must be a string such as {example}, not {type(raw).__name__} {raw!r}"
                     + ("; quote it: TOML reads a decimal number, so 12.10 is 12.1" if isinstance(raw, float) else ""))
            return None
        return self.check(raw, f"{where}.{key}", parse)

    # ------------------------------------------------------------------ [packages]

    def pip_lines(self, table: dict[str, Any]) -> tuple[tuple[str, ...], tuple[Credential, ...]]:
        """``[packages] pip``: the requirements, each direct reference without its credentials, and
        the logins taken out (a login a netrc cannot carry is a problem)."""
        where = f"{self.file} [packages] pip"
        lines, credentials = set(), []
        for item in self.str_list(table, "pip", _check_pip, "requirement"):
            clean, credential, why = requirement_credentials(item, where)
            if why is not None:
                self.bad("packages.pip", why)
            lines.add(clean)
            credentials += [credential] if credential is not None else []
        return tuple(sorted(lines)), tuple(credentials)

    def str_list(self, table: dict[str, Any], key: str, check: Callable[[str], str | None], what: str) -> list[str]:
        raw = table.get(key, [])
        if not isinstance(raw, list):
            self.bad(f"packages.{key}", f"must be a list of strings, not {raw!r}")
            return []
        items = (self._list_item(item, f"packages.{key}[{i}]", check, what) for i, item in enumerate(raw))
        return sorted({item for item in items if item is not None})

    def _list_item(self, item: Any, where: str, check: Callable[[str], str | None], what: str) -> str | None:
        if (msg := _entry_problem(item, check, what)) is not None:
            self.bad(where, msg)
            return None
        return str(item).strip()


def _entry_problem(item: Any, check: Callable[[str], str | None], what: str) -> str | None:
    """Why ``item`` is no entry of a [packages] list (one ``what`` that ``check`` accepts); None when it is one."""
    if not isinstance(item, str) or not item.strip():
        return f"{item!r} must be a non-empty string"
    if "\n" in item or "\r" in item:
        return f"{item!r} contains a line break; write one {what} per list entry"
    return check(item)


def _merged(table: dict[str, Any], base: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """A target's keys over [hardware]'s, and the keys it inherits: its own GPUs decide its vendor,
    and a CPU target drops the GPUs of [hardware]."""
    merged = {**base, **table}
    if "gpus" in table and "vendor" not in table:
        merged.pop("vendor", None)
    if table.get("vendor") == "cpu" and "gpus" not in table:
        merged.pop("gpus", None)
    return merged, set(base) - set(table)


def host_problem(platform: Platform, vendor: str) -> str:
    """Why ``platform`` cannot drive ``vendor``'s GPUs ("" when it can): what each OS's frameworks run on."""
    host = os_of(platform)
    if vendor == "apple" and platform != APPLE_PLATFORM:
        return f"Apple's GPU (MPS) is on Apple silicon only: set platform = '{APPLE_PLATFORM}'"
    if host == "darwin" and vendor not in ("apple", "cpu"):
        return ("macOS has no CUDA, ROCm or XPU builds of these frameworks; on Apple silicon the GPU is "
                f"vendor = 'apple' (platform = '{APPLE_PLATFORM}'), else vendor = 'cpu'")
    if platform == "darwin/amd64" and vendor != "cpu":
        return "PyTorch's MPS builds need Apple silicon; an Intel Mac runs vendor = 'cpu'"
    if platform == "windows/arm64" and vendor not in ("nvidia", "cpu"):
        return "no framework publishes AMD or Intel GPU builds for Windows on Arm; use vendor = 'cpu'"
    if host == "windows" and vendor == "amd":
        return ("the ROCm builds of these frameworks are Linux wheels; use WSL2 (platform = 'linux/amd64', "
                "wsl = true), or vendor = 'cpu'")
    return ""


def _implied_platforms(gpus: list[GpuReq]) -> dict[Platform, list[str]]:
    """Platform -> the GPUs that come only on it (a superchip's Arm CPU, a Jetson module)."""
    implied: dict[Platform, list[str]] = {}
    for g in gpus:
        if g.platform:
            implied.setdefault(g.platform, []).append(g.name)
    return implied


def _number_as_text(raw: Any, key: str) -> Any:
    """``cuda = 12`` is unambiguous; a decimal number is not (``12.10`` reads as 12.1) and a driver
    as a number loses digits, so they stay numbers (and problems)."""
    is_whole = isinstance(raw, int) and not isinstance(raw, bool)
    return str(raw) if is_whole and key != "driver" else raw


def _check_pip(item: str) -> str | None:
    try:
        url = parse_requirement(item).url
    except LongNumber as e:
        return str(e)
    except ValueError as e:  # packaging's InvalidRequirement
        return f"{scrub(item)!r} is not a valid PEP 508 requirement ({scrub(str(e))}); write e.g. 'numpy<2'"
    return url_problem(url) if url else None


def _check_conda(item: str) -> str | None:
    return None if _CONDA.match(item.strip()) else (
        f"{item!r} is not a conda package spec; write e.g. 'ffmpeg' or 'ffmpeg>=6'")


def _check_apt(item: str) -> str | None:
    return None if _APT.match(item.strip()) else (
        f"{item!r} is not a Debian package name; write e.g. 'libgl1' or 'libgl1=1.7.0-1'")


# [packages] key -> (the check of one entry, what an entry is): the spec's rule, and a lock's (lock.model)
_PACKAGES: dict[str, tuple[Callable[[str], str | None], str]] = {
    "pip": (_check_pip, "requirement"), "conda": (_check_conda, "package"), "apt": (_check_apt, "package")}


def package_problem(key: str, item: Any) -> str | None:
    """Why ``item`` is no entry of ``[packages] key`` (pip, conda or apt); None when it is one."""
    return _entry_problem(item, *_PACKAGES[key])


def is_name(text: str) -> bool:
    """The one rule for a name that becomes a folder, a file or an image tag (a project, a target,
    an index): letters, digits, '.', '_' or '-', from a letter or digit (never a path)."""
    return bool(_NAME.fullmatch(text))


def _table(data: dict[str, Any], section: str) -> dict[str, Any]:
    value = data.get(section, {})
    return value if isinstance(value, dict) else {}


# the keys only a lock has at its top (lock/model.py writes them; no section of a spec has these names)
_LOCK_KEYS = ("lock_digest", "spec_digest", "environments")


def _not_a_lock(data: dict[str, Any], path: str) -> None:
    """A lock passed where its spec belongs is said once, not as a problem per key of the lock."""
    if not any(k in data for k in _LOCK_KEYS):
        return
    made_from = data.get("spec")
    source = f"{Path(path).with_name(made_from)} (its `spec` key names it), " if (
        isinstance(made_from, str) and is_name(made_from)) else ""
    raise SpecError([Problem(path, "", "is a lock (envsolve.lock), not a project spec")],
                    tip=f"pass the project.toml it was made from: {source or 'the spec beside it, '}or, to use "
                        f"the lock itself, `envsolve sync {path}` or `envsolve render {path}`")


def parse_spec(text: str, path: str, provider: Provider) -> ProjectSpec:
    """Parse project.toml text; raise :class:`SpecError` listing every problem."""
    data = load_toml(text, path)
    _not_a_lock(data, path)
    parser = _ProjectParser(path, provider)
    parser.sections(data)
    name, python_raw, python = parser.project(_table(data, "project"))
    frameworks = parser.frameworks(data.get("frameworks", {}))
    targets = parser.targets(_table(data, "hardware"), data.get("targets", {}))
    pkgs = _table(data, "packages")
    os_, flavor = parser.container(_table(data, "container"))
    pip, credentials = parser.pip_lines(pkgs)
    spec = ProjectSpec(
        path=path,
        name=name,
        python=python,
        python_raw=python_raw,
        frameworks=tuple(sorted(frameworks, key=lambda f: f.name)),
        targets=tuple(targets),
        pip=pip,
        credentials=credentials,
        conda=tuple(parser.str_list(pkgs, "conda", _check_conda, "package")),
        apt=tuple(parser.str_list(pkgs, "apt", _check_apt, "package")),
        os=os_,
        flavor=flavor,
        indexes=parser.indexes(data.get("indexes", {})),
        same_versions=parser.same_versions(_table(data, "project")),
    )
    parser.problems.raise_if_any(SpecError, tip=f"edit {path} at the keys named above, then run envsolve again")
    return spec


def _marker_true(marker: Marker, environment: dict[str, str]) -> bool:
    """``marker`` on ``environment``; a comparison packaging cannot make is false, as uv takes it."""
    from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName

    try:
        return marker.evaluate(environment)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def unknown_gpu(provider: Provider, label: str) -> str:
    """What is said of a GPU name the data does not know (a spec's, a matrix file's, ENVSOLVE_GPUS):
    the nearest names (:meth:`Provider.gpu_suggestions`) and the way round it, an architecture."""
    near = provider.gpu_suggestions(label)
    tip = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
    return f"unknown GPU {label!r}{tip} (or write an architecture: sm_80, 8.0, gfx942)"


def parse_gpus(provider: Provider, names: list[Any], path: str, key: str) -> tuple[GpuReq, ...]:
    """GPU names or architectures as [hardware] gpus reads them; raise :class:`SpecError`."""
    parser = SectionParser(path, provider)
    gpus = parser.gpus(names, key)
    parser.problems.raise_if_any(SpecError, tip=f"edit {path} at the keys named above")
    return gpus


_SPEC_CAP = 1 << 20  # a spec beside a lock is read for its logins only up to this size


def _lenient_table(path: Path) -> dict[str, Any]:
    """The spec at ``path`` as a table; {} when it is not a regular file (never a FIFO or a device,
    which could block or never end) or cannot be read."""
    from .files import read_text

    try:
        return load_toml(read_text(path, _SPEC_CAP), str(path))
    except (OSError, SpecError):  # (files.NotAnInput, for what is no regular UTF-8 file, is an OSError)
        return {}


def url_credentials(path: Path, environ: Mapping[str, str] | None = None) -> tuple[Credential, ...]:
    """The logins of every URL the spec at ``path`` writes (``[packages] pip``'s direct references,
    ``[indexes]``) and of ``ENVSOLVE_INDEX_<NAME>``: what `envsolve build` and `envsolve sync` give
    the installers as a netrc beside the lock, which holds none. Lenient: a spec that is missing
    or cannot be read gives none of its own (the lock, not the spec, is what they install)."""
    data = _lenient_table(path)
    pip = _table(data, "packages").get("pip", [])
    lines = [line for line in pip if isinstance(line, str)] if isinstance(pip, list) else []
    found = [requirement_credentials(line, f"{path} [packages] pip")[1] for line in lines]
    indexes = {k: v for k, v in _table(data, "indexes").items() if isinstance(v, str)}
    return tuple(c for c in found if c is not None) + index_credentials(indexes, environ, str(path))


def _jetpack_span(rows: Sequence[JetPack]) -> str:
    """``4.2 .. 4.6.6, 5.0 .. 5.1.5``: JetPack releases (oldest first), each major's first and last."""
    majors: dict[int, list[str]] = {}
    for j in rows:
        majors.setdefault(j.version.major, []).append(j.version.raw)
    return ", ".join(v[0] if len(v) == 1 else f"{v[0]} .. {v[-1]}" for v in majors.values())


def digest(blob: bytes) -> str:
    """The digest of a spec by what it means (the lock's ``spec_digest``): its TOML parsed and
    written out canonically, so comments, blank lines, key order and quoting do not make a lock
    stale; text that is no TOML is digested as its bytes (its lock is then stale until it parses)."""
    import hashlib
    import json

    try:
        data = parse_toml(blob.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return "sha256:" + hashlib.sha256(blob).hexdigest()
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=repr)
    return "sha256:" + hashlib.sha256(b"envsolve spec meaning 1\0" + canonical.encode()).hexdigest()
