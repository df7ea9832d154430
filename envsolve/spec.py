"""``project.toml`` into a frozen :class:`ProjectSpec`.

Each section has its own small parser; all of them add to one problem collector, and every
problem (file, key, value, what to do) is raised at once as one :class:`SpecError`. GPU names
are resolved through the provider, with a "did you mean" for near misses.
"""

from __future__ import annotations

import difflib
import re
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from .config import check_url
from .domain import COMPANIONS, DOCKER_PLATFORM, FRAMEWORKS, KERAS_BACKENDS
from .errors import Problem, Problems, SpecError
from .versions import Arch, Dotted, parse_arch, parse_dotted, parse_driver

if TYPE_CHECKING:
    from .host.facts import HostFacts
    from .provider import Provider

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["FLAVORS", "FrameworkReq", "GpuReq", "ProjectSpec", "SectionParser", "Target", "for_host", "load_toml",
           "parse_gpus", "parse_spec", "unknown_key"]

ALIASES = {"pytorch": "torch", "tf": "tensorflow", "tensorflow-gpu": "tensorflow",
           "jax[cuda12]": "jax", "keras3": "keras", "tf-keras": "keras", "onnxruntime-gpu": "onnxruntime",
           "ort": "onnxruntime", "paddle": "paddlepaddle", "paddlepaddle-gpu": "paddlepaddle",
           "cupy-cuda12x": "cupy", "cupy-cuda13x": "cupy", "cupy-cuda11x": "cupy"}
VENDORS = ("nvidia", "amd", "cpu")
FLAVORS = ("base", "runtime", "devel")
_APT = re.compile(r"^[a-z0-9][a-z0-9+.-]*(=[A-Za-z0-9.+~:-]+)?$")
_CONDA = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*(::[A-Za-z0-9_.\-]+)?([ =<>!~*,.|0-9A-Za-z_+]*)$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


@dataclass(frozen=True, kw_only=True, slots=True)
class FrameworkReq:
    """One entry of ``[frameworks]``."""

    name: str
    specifier: SpecifierSet
    raw: str
    backend: str = ""  # keras only
    asked_by: str = ""  # the [packages] pip releases whose Requires-Dist narrowed the range (see steer.py)


@dataclass(frozen=True, kw_only=True, slots=True)
class GpuReq:
    """A GPU the target must serve: a model (``H100``) or a bare architecture (``sm_90``)."""

    label: str  # as the user wrote it
    name: str  # the model's canonical name, or the architecture's name
    arch: Arch
    family: str
    vendor: str
    platform: str = ""  # the platform the model implies (a Grace superchip, a Jetson): "" for none


@dataclass(frozen=True, kw_only=True, slots=True)
class Target:
    """The hardware one environment must run on."""

    name: str
    vendor: str
    gpus: tuple[GpuReq, ...] = ()
    driver: Dotted | None = None
    cuda: Dotted | None = None
    rocm: Dotted | None = None
    platform: str = "linux/amd64"
    jetpack: Dotted | None = None  # a Jetson target: the JetPack release (its driver and CUDA)
    rocm_driver: Dotted | None = None  # the ROCm release of the host's amdgpu kernel driver
    platform_why: str = field(default="", compare=False)  # why this platform (envsolve explain)
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # the solver keys its memo tables by target: hash the GPUs once, not on every look-up
        object.__setattr__(self, "_hash", hash((self.name, self.vendor, self.gpus, self.driver, self.cuda, self.rocm,
                                                self.platform, self.jetpack, self.rocm_driver)))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, kw_only=True, slots=True)
class ProjectSpec:
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
    raw_text: str = field(default="", repr=False)

    def framework(self, name: str) -> FrameworkReq | None:
        return next((f for f in self.frameworks if f.name == name), None)


_HARDWARE = {"gpus", "driver", "vendor", "cuda", "rocm", "platform", "jetpack", "rocm_driver"}
PLATFORMS = ("linux/amd64", "linux/arm64")
_SECTIONS = {
    "project": {"name", "python", "description", "same-versions"},
    "frameworks": None,  # free keys, checked against FRAMEWORKS and COMPANIONS
    "hardware": None,  # checked with each target, so a typo is reported once
    "packages": {"pip", "conda", "apt"},
    "container": {"os", "flavor"},
    "targets": None,
    "indexes": None,
}


def unknown_key(key: str, allowed: Any) -> str:
    """"unknown key (allowed: ...)", with a "did you mean" for a near miss."""
    names = sorted(allowed)
    near = difflib.get_close_matches(key, names, 1)
    return f"unknown key (allowed: {', '.join(names)})" + (f"; did you mean '{near[0]}'?" if near else "")


class SectionParser:
    """Base of the section parsers of a user's file: one problem collector for the file, and the
    provider to resolve names against."""

    def __init__(self, path: str, provider: Provider) -> None:
        self.path = path
        self.provider = provider
        self.problems = Problems(path)
        self.bad = self.problems.bad


class _Parser(SectionParser):
    """The section parsers of project.toml; each adds what is wrong to one collector."""

    def _str(self, table: dict[str, Any], key: str, where: str) -> str:
        v = table.get(key, "")
        if not isinstance(v, str):
            self.bad(f"{where}.{key}", f"must be a string, not {type(v).__name__} {v!r}")
            return ""
        return v.strip()

    def _specifier(self, raw: str, key: str) -> SpecifierSet:
        text = "" if raw.strip() in ("", "*") else raw.strip()
        try:
            spec = SpecifierSet(text)
        except InvalidSpecifier:
            self.bad(key, f"{raw!r} is not a version specifier; write e.g. '>=2.4', '==2.7.*' or '*'")
            return SpecifierSet()
        return spec

    def sections(self, data: dict[str, Any]) -> None:
        """Unknown sections, sections that are not tables, unknown keys of fixed sections."""
        for section, value in data.items():
            if section not in _SECTIONS:
                near = difflib.get_close_matches(section, list(_SECTIONS), 1)
                tip = f"; did you mean [{near[0]}]?" if near else ""
                self.bad(section, f"unknown section (allowed: {', '.join(_SECTIONS)}){tip}")
            elif not isinstance(value, dict):
                self.bad(section, f"must be a table [{section}], not {value!r}")
            elif (allowed := _SECTIONS[section]) is not None:
                for key in value:
                    if key not in allowed:
                        self.bad(f"{section}.{key}", unknown_key(key, allowed))

    def project(self, table: dict[str, Any]) -> tuple[str, str, SpecifierSet]:
        """(name, Python range as written, Python range)."""
        name = self._str(table, "name", "project") or "project"
        if not _NAME.fullmatch(name):
            self.bad("project.name", f"{name!r} must be letters, digits, '.', '_' or '-'")
        python_raw = self._str(table, "python", "project") or "*"
        return name, python_raw, self._specifier(python_raw, "project.python")

    def same_versions(self, table: dict[str, Any]) -> bool:
        value = table.get("same-versions", False)
        if not isinstance(value, bool):
            self.bad("project.same-versions", f"must be true or false, not {value!r}")
            return False
        return value

    def targets(self, hardware: dict[str, Any], extra: Any) -> list[Target]:
        """The default target from [hardware], then each [targets.NAME] in name order."""
        out = []
        if (t := self.target("default", hardware, {}, "hardware")) is not None:
            out.append(t)
        if not isinstance(extra, dict):
            return out
        for name in sorted(extra):
            if not _NAME.fullmatch(name) or name == "default":
                self.bad(f"targets.{name}", f"{name!r}: target names are letters, digits, '.', '_' or '-' "
                         "and not 'default'")
            elif (t := self.target(name, extra[name], hardware, f"targets.{name}")) is not None:
                out.append(t)
        return out

    def container(self, table: dict[str, Any]) -> tuple[str, str]:
        """(os, flavor)."""
        os_ = self._str(table, "os", "container")
        if os_ and not _NAME.fullmatch(os_):
            self.bad("container.os", f"{os_!r} is not an OS name such as ubuntu22.04")
        flavor = self._str(table, "flavor", "container")
        if flavor and flavor not in FLAVORS:
            self.bad("container.flavor", f"{flavor!r} must be one of {', '.join(FLAVORS)}")
        return os_, flavor

    def indexes(self, table: Any) -> tuple[tuple[str, str], ...]:
        """[indexes] name = URL, each URL checked before it can reach a generated file."""
        out: list[tuple[str, str]] = []
        if not isinstance(table, dict):
            return ()
        for key, value in sorted(table.items()):
            if not _NAME.fullmatch(key):
                self.bad(f"indexes.{key}", f"{key!r}: index names are letters, digits, '.', '_' or '-'")
            elif (why := check_url(value)) is not None:
                self.bad(f"indexes.{key}", why)
            else:
                out.append((key.lower(), value.rstrip("/")))
        return tuple(out)

    def frameworks(self, table: Any) -> list[FrameworkReq]:
        if not isinstance(table, dict):
            self.bad("frameworks", "must be a table such as [frameworks] torch = '>=2.4'")
            return []
        out: list[FrameworkReq] = []
        for name, value in table.items():
            key = f"frameworks.{name}"
            canon = name.lower()
            if canon not in FRAMEWORKS and canon not in COMPANIONS:
                known = list(FRAMEWORKS) + list(COMPANIONS)
                hint = ALIASES.get(canon) or next(iter(difflib.get_close_matches(canon, known, 1)), None)
                tip = f"; did you mean '{hint}'?" if hint else ""
                self.bad(key, f"unknown framework {name!r} (known: {', '.join(known)}){tip}")
                continue
            backend = ""
            if isinstance(value, str):
                raw = value
            elif isinstance(value, dict):
                extra = set(value) - {"version", "backend"}
                if extra:
                    self.bad(f"{key}.{sorted(extra)[0]}", "unknown key (allowed: version, backend)")
                raw = value.get("version", "*")
                if not isinstance(raw, str):
                    self.bad(f"{key}.version", f"must be a string, not {raw!r}")
                    raw = "*"
                backend = value.get("backend", "")
                if backend and canon != "keras":
                    self.bad(f"{key}.backend", "only keras takes a backend")
                if backend and backend not in KERAS_BACKENDS:
                    self.bad(f"{key}.backend",
                             f"{backend!r} is not a Keras backend (use {', '.join(KERAS_BACKENDS)})")
                    backend = ""
            else:
                self.bad(key, f"must be a version specifier string or a table, not {value!r}")
                continue
            out.append(FrameworkReq(name=canon, specifier=self._specifier(raw, key),
                                    raw=raw.strip() or "*", backend=backend))
        return out

    def gpu(self, label: Any, key: str) -> GpuReq | None:
        if not isinstance(label, str) or not label.strip():
            self.bad(key, f"{label!r} is not a GPU name")
            return None
        model = self.provider.gpu(label)
        if model is not None:
            info = self.provider.arch_info(model.arch)
            return GpuReq(label=label, name=model.name, arch=parse_arch(model.arch),
                          family=info.family if info else "", vendor=model.vendor, platform=model.platform)
        try:
            a = parse_arch(label)
        except ValueError:
            near = self.provider.gpu_suggestions(label)
            tip = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
            self.bad(key, f"unknown GPU {label!r}{tip} (or write an architecture: sm_80, 8.0, gfx942)")
            return None
        info = self.provider.arch_info(a.name)
        if info is None:
            self.bad(key, f"architecture {label!r} ({a.name}) is not in the data (matrices/gpus.toml)")
            return None
        return GpuReq(label=label, name=a.name, arch=a, family=info.family, vendor=info.vendor)

    def target(self, name: str, table: Any, base: dict[str, Any], where: str) -> Target | None:
        if not isinstance(table, dict):
            self.bad(where, "must be a table")
            return None
        for key in table:
            if key not in _HARDWARE:
                self.bad(f"{where}.{key}", unknown_key(key, _HARDWARE))
        merged = {**base, **table}
        if "gpus" in table and "vendor" not in table:
            merged.pop("vendor", None)  # the target's own GPUs decide its vendor
        if table.get("vendor") == "cpu" and "gpus" not in table:
            merged.pop("gpus", None)  # a CPU target drops the GPUs of [hardware]
        inherited = set(base) - set(table)
        gpus_raw = merged.get("gpus", [])
        if isinstance(gpus_raw, str):
            gpus_raw = [gpus_raw]
        if not isinstance(gpus_raw, list):
            self.bad(f"{where}.gpus", "must be a list of GPU names, e.g. ['A100', 'H100']")
            gpus_raw = []
        gpus = [g for i, x in enumerate(gpus_raw) if (g := self.gpu(x, f"{where}.gpus[{i}]"))]
        vendor = self._str(merged, "vendor", where).lower()
        if vendor and vendor not in VENDORS:
            self.bad(f"{where}.vendor", f"{vendor!r} must be one of {', '.join(VENDORS)}")
        vendors = {g.vendor for g in gpus}
        if len(vendors) > 1:
            self.bad(f"{where}.gpus", "mixes NVIDIA and AMD GPUs; put each vendor in its own [targets.NAME]")
            return None
        if not vendor:
            vendor = vendors.pop() if vendors else "cpu"
        elif vendors and vendor not in vendors:
            self.bad(f"{where}.vendor", f"is {vendor!r} but the GPUs listed are {', '.join(sorted(vendors))}")
        if vendor == "cpu" and gpus:
            self.bad(f"{where}.vendor", "is 'cpu' but GPUs are listed; drop one of them")
        for key, applies in (("driver", "nvidia"), ("cuda", "nvidia"), ("rocm", "amd"), ("rocm_driver", "amd"),
                             ("jetpack", "nvidia")):
            if key in inherited and vendor != applies:
                merged.pop(key)  # a [hardware] key of another vendor does not carry over
        driver = self._version(merged, "driver", where, parse_driver)
        cuda = self._version(merged, "cuda", where, lambda s: parse_dotted(s, "CUDA version"))
        rocm = self._version(merged, "rocm", where, lambda s: parse_dotted(s, "ROCm version"))
        if vendor != "nvidia" and (driver or cuda):
            self.bad(where, "'driver' and 'cuda' apply to NVIDIA GPUs only (set vendor or gpus)")
        if vendor != "amd" and rocm:
            self.bad(f"{where}.rocm", "applies to AMD GPUs only (set vendor = 'amd' or AMD gpus)")
        rocm_driver = self._version(merged, "rocm_driver", where, lambda s: parse_dotted(s, "ROCm kernel driver"))
        if vendor != "amd" and rocm_driver:
            self.bad(f"{where}.rocm_driver", "applies to AMD GPUs only (the ROCm release of the amdgpu kernel driver)")
        if rocm_driver is not None and self.provider.kmd(rocm_driver) is None:
            known = ", ".join(k.version.raw for k in self.provider.m.kmds)
            self.bad(f"{where}.rocm_driver", f"{rocm_driver.raw!r}: the data has no kernel-driver row for it "
                     f"(known: {known}); write the ROCm release of the amdgpu driver, e.g. '6.4'")
        platform, why = self._platform(merged, gpus, where, inherited)
        jetpack = self._jetpack(merged, gpus, where, driver, cuda)
        return Target(name=name, vendor=vendor, gpus=tuple(gpus), driver=driver, cuda=cuda, rocm=rocm,
                      platform=platform, jetpack=jetpack, rocm_driver=rocm_driver, platform_why=why)

    def _platform(self, table: dict[str, Any], gpus: list[GpuReq], where: str,
                  inherited: set[str]) -> tuple[str, str]:
        """(platform, why): as written, else the one the GPUs imply, else linux/amd64. GPUs that
        imply different platforms, or a platform the GPUs contradict, are errors naming them."""
        implied: dict[str, list[str]] = {}
        for g in gpus:
            if g.platform:
                implied.setdefault(g.platform, []).append(g.name)
        if len(implied) > 1:
            parts = "; ".join(f"{', '.join(n)} {'is' if len(n) == 1 else 'are'} {p}"
                              for p, n in sorted(implied.items()))
            self.bad(f"{where}.gpus", f"GPUs of different platforms in one target ({parts}); "
                     "put each platform's GPUs in its own [targets.NAME]")
            return "linux/amd64", ""
        raw = table.get("platform")
        if raw is not None and "platform" in inherited and implied:
            raw = None  # the target's own GPUs decide its platform, not [hardware]'s
        if raw is not None:
            if raw not in PLATFORMS:
                self.bad(f"{where}.platform", f"{raw!r} must be one of {', '.join(PLATFORMS)} (Docker's names)")
                return "linux/amd64", ""
            for p, names in implied.items():
                if p != raw:
                    self.bad(f"{where}.platform", f"is {raw!r} but {', '.join(names)} "
                             f"{'runs' if len(names) == 1 else 'run'} on {p}; drop the key or move those GPUs")
            return str(raw), f"{raw} as written in [{'hardware' if 'platform' in inherited else where}]"
        if implied:
            ((p, names),) = implied.items()
            return p, f"{', '.join(names)} {'comes' if len(names) == 1 else 'come'} with an Arm CPU ({p})"
        return "linux/amd64", "linux/amd64, the default (no GPU listed implies another platform)"

    def _jetpack(self, table: dict[str, Any], gpus: list[GpuReq], where: str, driver: Dotted | None,
                 cuda: Dotted | None) -> Dotted | None:
        """The JetPack release of a Jetson target: as written (checked against its modules), else
        the newest that supports them all. None for a target without Jetson modules."""
        jetsons = [g.name for g in gpus if self.provider.is_jetson(g.name)]
        raw = table.get("jetpack")
        if not jetsons:
            if raw is not None:
                self.bad(f"{where}.jetpack", "applies to Jetson modules only (e.g. gpus = ['Jetson AGX Orin'])")
            return None
        if len(jetsons) != len(gpus):
            others = [g.name for g in gpus if g.name not in jetsons]
            self.bad(f"{where}.gpus", f"mixes Jetson modules ({', '.join(jetsons)}) with other GPUs "
                     f"({', '.join(others)}); put them in separate [targets.NAME]")
            return None
        if driver is not None or cuda is not None:
            self.bad(where, "a Jetson's driver and CUDA come with its JetPack release: write jetpack = '6.2' "
                     "instead of driver or cuda")
        fits = self.provider.jetpacks_for(jetsons)
        if raw is None:
            if not fits:
                self.bad(f"{where}.gpus", f"no JetPack release in the data supports {', '.join(jetsons)} together")
                return None
            return fits[-1].version
        version = self._version(table, "jetpack", where, lambda s: parse_dotted(s, "JetPack version"))
        if version is None:
            return None
        row = self.provider.jetpack(version)
        if row is None:
            known = ", ".join(j.version.raw for j in self.provider.m.jetpacks)
            self.bad(f"{where}.jetpack", f"JetPack {version.raw} is not in the data (known: {known})")
            return None
        missing = [n for n in jetsons if n not in row.gpus]
        if missing:
            ok = ", ".join(j.version.raw for j in fits) or "none"
            self.bad(f"{where}.jetpack", f"JetPack {row.version.raw} does not support {', '.join(missing)} "
                     f"(JetPack releases that do: {ok})")
            return None
        return row.version

    def _version(self, table: dict[str, Any], key: str, where: str, parse: Any) -> Dotted | None:
        raw = table.get(key)
        if raw is None:
            return None
        if isinstance(raw, (int, float)) and not isinstance(raw, bool) and key != "driver":
            raw = str(raw)  # cuda = 12.4 is unambiguous; a driver as a number loses digits
        if not isinstance(raw, str):
            example = "'535.104.05'" if key == "driver" else "'12.4'"
            self.bad(f"{where}.{key}", f"must be a string such as {example}, not {raw!r}")
            return None
        try:
            return parse(raw)  # type: ignore[no-any-return]
        except ValueError as e:
            self.bad(f"{where}.{key}", str(e))
            return None

    def str_list(self, table: dict[str, Any], key: str, check: Any, what: str) -> list[str]:
        raw = table.get(key, [])
        if not isinstance(raw, list):
            self.bad(f"packages.{key}", f"must be a list of strings, not {raw!r}")
            return []
        out = []
        for i, item in enumerate(raw):
            where = f"packages.{key}[{i}]"
            if not isinstance(item, str) or not item.strip():
                self.bad(where, f"{item!r} must be a non-empty string")
            elif "\n" in item or "\r" in item:
                self.bad(where, f"{item!r} contains a line break; write one {what} per list entry")
            elif (msg := check(item)) is not None:
                self.bad(where, msg)
            else:
                out.append(item.strip())
        return sorted(set(out))


def _check_pip(item: str) -> str | None:
    try:
        Requirement(item)
    except InvalidRequirement as e:
        return f"{item!r} is not a valid PEP 508 requirement ({e}); write e.g. 'numpy<2'"
    return None


def _check_conda(item: str) -> str | None:
    return None if _CONDA.match(item.strip()) else (
        f"{item!r} is not a conda package spec; write e.g. 'ffmpeg' or 'ffmpeg>=6'")


def _check_apt(item: str) -> str | None:
    return None if _APT.match(item.strip()) else (
        f"{item!r} is not a Debian package name; write e.g. 'libgl1' or 'libgl1=1.7.0-1'")


def load_toml(text: str, path: str, what: str = "a project file",
              example: str = "a project.toml is a few flat tables; see examples/project.toml") -> dict[str, Any]:
    """A user's TOML file as a table; bad syntax or absurd nesting is a :class:`SpecError`."""
    try:
        data: dict[str, Any] = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError([Problem(path, "", f"is not valid TOML: {e}")],
                        tip="fix the TOML syntax at the line named above") from None
    except RecursionError:
        raise SpecError([Problem(path, "", f"nests tables or arrays too deeply to be {what}")],
                        tip=example) from None
    return data


def _table(data: dict[str, Any], section: str) -> dict[str, Any]:
    value = data.get(section, {})
    return value if isinstance(value, dict) else {}


def parse_spec(text: str, path: str, provider: Provider) -> ProjectSpec:
    """Parse project.toml text; raise :class:`SpecError` listing every problem."""
    data = load_toml(text, path)
    p = _Parser(path, provider)
    p.sections(data)
    name, python_raw, python = p.project(_table(data, "project"))
    frameworks = p.frameworks(data.get("frameworks", {}))
    targets = p.targets(_table(data, "hardware"), data.get("targets", {}))
    pkgs = _table(data, "packages")
    os_, flavor = p.container(_table(data, "container"))
    spec = ProjectSpec(
        path=path,
        name=name,
        python=python,
        python_raw=python_raw,
        frameworks=tuple(sorted(frameworks, key=lambda f: f.name)),
        targets=tuple(targets),
        pip=tuple(p.str_list(pkgs, "pip", _check_pip, "requirement")),
        conda=tuple(p.str_list(pkgs, "conda", _check_conda, "package")),
        apt=tuple(p.str_list(pkgs, "apt", _check_apt, "package")),
        os=os_,
        flavor=flavor,
        indexes=p.indexes(data.get("indexes", {})),
        same_versions=p.same_versions(_table(data, "project")),
        raw_text=text,
    )
    p.problems.raise_if_any(SpecError, tip=f"edit {path} at the keys named above, then run envsolve again")
    return spec


def parse_gpus(provider: Provider, names: list[Any], path: str, key: str) -> tuple[GpuReq, ...]:
    """GPU names or architectures as [hardware] gpus reads them; raise :class:`SpecError`."""
    p = _Parser(path, provider)
    gpus = tuple(g for i, name in enumerate(names) if (g := p.gpu(name, f"{key}[{i}]")) is not None)
    p.problems.raise_if_any(SpecError, tip=f"edit {path} at the keys named above")
    return gpus


def for_host(spec: ProjectSpec, facts: HostFacts, provider: Provider) -> tuple[ProjectSpec, list[str]]:
    """``spec`` with its default target describing this host (GPUs, driver, vendor); a CUDA or
    ROCm pin of ``[hardware]`` is kept when it fits the host's vendor. A GPU the data does not
    know is taken by the architecture the tools reported (with a warning, returned beside the
    spec); one with neither is an error naming where it came from, with a "did you mean"."""
    p = _Parser(facts.source or "this host", provider)
    gpus: list[GpuReq] = []
    warnings = []
    for g in facts.gpus:
        label = g.name if provider.gpu(g.name) is not None or not g.arch else g.arch
        if label != g.name:
            warnings.append(f"GPU {g.index} {g.name!r} is not in envsolve's data; solving for its architecture "
                            f"{label} as the driver reported it")
        if (req := p.gpu(label, f"GPU {g.index}")) is not None and req not in gpus:
            gpus.append(req)
    p.problems.raise_if_any(SpecError, tip="describe the GPUs by architecture instead, e.g. ENVSOLVE_GPUS=sm_90 "
                            "(or gfx942), or update envsolve's data")
    base = spec.targets[0]
    jetson = facts.platform == "jetson"
    if jetson and not gpus:  # a Jetson lists no GPU (no nvidia-smi): the spec's Jetson modules stand
        gpus = [g for g in base.gpus if provider.is_jetson(g.name)]
    vendor = "nvidia" if jetson and gpus else facts.vendor if facts.vendor in ("nvidia", "amd") and gpus else "cpu"
    driver = None
    if vendor == "nvidia" and facts.driver and not jetson:
        try:
            driver = parse_driver(facts.driver)
        except ValueError:
            driver = None
    jetpack = None
    if jetson and gpus:
        row = provider.jetpack_of_l4t(facts.l4t)
        jetpack = row.version if row is not None else base.jetpack
        if row is None:
            warnings.append(f"L4T {facts.l4t or '(unknown)'} is no JetPack release in envsolve's data; "
                            + (f"keeping jetpack = {base.jetpack.raw}" if base.jetpack else "solving for the newest "
                               "JetPack the modules support"))
            if jetpack is None and (fits := provider.jetpacks_for([g.name for g in gpus])):
                jetpack = fits[-1].version
    platform = DOCKER_PLATFORM.get(facts.machine, "") or ("linux/arm64" if jetson else "")
    why = (f"this host's CPU ({facts.machine})" if facts.machine
           else "a Jetson (/etc/nv_tegra_release)" if jetson else "")
    implied = {g.platform for g in gpus if g.platform}
    if not platform:
        platform, why = (implied.pop(), "the host's GPUs") if len(implied) == 1 else (base.platform, base.platform_why)
    host = Target(name=base.name, vendor=vendor, gpus=tuple(gpus), driver=driver,
                  cuda=base.cuda if vendor == "nvidia" and not jetson else None,
                  rocm=base.rocm if vendor == "amd" else None,
                  rocm_driver=base.rocm_driver if vendor == "amd" else None,
                  platform=platform, jetpack=jetpack, platform_why=why)
    return replace(spec, targets=(host, *spec.targets[1:])), warnings
