"""Pure reading of core metadata: ``Requires-Python``, ``Requires-Dist`` evaluated for a target
platform's Linux CPython install, and the CUDA, cuDNN, NCCL and triton a framework wheel bundles
through its requirements. Nothing here touches the network (see ``client.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from email.message import Message
from email.parser import HeaderParser

import msgspec
from packaging.markers import InvalidMarker, UndefinedComparison, UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from ..domain import DEFAULT_PLATFORM, MARKERS, Platform
from .pages import IndexFormatError

__all__ = [
    "BundledFacts",
    "Metadata",
    "bundled_facts",
    "exact_version",
    "gpu_extras",
    "is_bundled",
    "marker_environment",
    "parse_metadata",
    "requirement_of",
    "requirements",
]


class Metadata(msgspec.Struct, frozen=True, kw_only=True):
    """The parts of a core metadata file envsolve reads."""

    name: str
    version: str
    requires_python: str = ""
    requires_dist: tuple[str, ...] = ()
    provides_extra: tuple[str, ...] = ()


def _header(msg: Message, name: str) -> str:
    return str(msg.get(name) or "").strip()


def _headers(msg: Message, name: str) -> tuple[str, ...]:
    return tuple(str(v).strip() for v in msg.get_all(name) or ())


def parse_metadata(text: str) -> Metadata:
    """Parse a core metadata file (RFC 822 headers); the description body is ignored."""
    msg = HeaderParser().parsestr(text)
    name, version = _header(msg, "Name"), _header(msg, "Version")
    if not (name and version):
        raise IndexFormatError("the metadata file has no Name or Version header")
    return Metadata(name=name, version=version, requires_python=_header(msg, "Requires-Python"),
                    requires_dist=_headers(msg, "Requires-Dist"), provides_extra=_headers(msg, "Provides-Extra"))


def marker_environment(python: str, platform: Platform = DEFAULT_PLATFORM, extra: str = "") -> dict[str, str]:
    """The PEP 508 marker environment of a CPython ``python`` install on ``platform``."""
    return {**MARKERS[platform], "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "python_version": python,
            "python_full_version": f"{python}.0", "implementation_version": f"{python}.0", "extra": extra}


def _applies(req: Requirement, env: dict[str, str]) -> bool:
    try:
        return req.marker is None or req.marker.evaluate(env)
    except (InvalidMarker, UndefinedComparison, UndefinedEnvironmentName):
        return False


def _parsed(raw: str) -> Requirement | None:
    try:
        return Requirement(raw)
    except InvalidRequirement:
        return None


def requirements(md: Metadata, *, python: str, extra: str = "",
                 platform: Platform = DEFAULT_PLATFORM) -> tuple[Requirement, ...]:
    """The requirements a CPython ``python`` install of ``md`` (with ``extra``) pulls on ``platform``."""
    env = marker_environment(python, platform, extra)
    reqs = (_parsed(raw) for raw in md.requires_dist)
    return tuple(r for r in reqs if r is not None and _applies(r, env))


_BUNDLED = re.compile(r"^(nvidia-|cuda-toolkit$|triton$)")
_PLUGIN = re.compile(r"^jax-cuda\d+-plugin$")


def is_bundled(name: str) -> bool:
    """Whether ``name`` is a library a framework wheel pins for its GPU stack (NVIDIA, triton)."""
    return bool(_BUNDLED.match(canonicalize_name(name)))


def _names(reqs: Iterable[Requirement]) -> set[str]:
    return {canonicalize_name(r.name) for r in reqs}


def gpu_extras(md: Metadata, python: str, platform: Platform = DEFAULT_PLATFORM) -> tuple[str, ...]:
    """Extras that add NVIDIA/CUDA packages or a CUDA plugin over the plain install."""
    plain = _names(requirements(md, python=python, platform=platform))

    def adds_gpu(extra: str) -> bool:
        added = _names(requirements(md, python=python, extra=extra, platform=platform)) - plain
        return any(_BUNDLED.match(n) or _PLUGIN.match(n) for n in added)

    return tuple(sorted(e for e in md.provides_extra if adds_gpu(e)))


class BundledFacts(msgspec.Struct, frozen=True, kw_only=True):
    """What a set of requirements says about the CUDA stack it brings."""

    cuda: str = ""  # CUDA major.minor of an exact runtime pin ("12.8"), else ""
    cuda_runtime: str = ""  # the runtime requirement as written, e.g. "cuda-toolkit==13.0.3"
    cudnn: str = ""  # "9.10.2.21", or a range such as ">=9.3.0.75,<10.0"
    nccl: str = ""
    triton: str = ""
    pins: tuple[tuple[str, str], ...] = ()  # exact pins of bundled libraries (name -> version)
    ranges: tuple[tuple[str, str], ...] = ()  # every bundled requirement (name -> spec)

    @property
    def empty(self) -> bool:
        return not self.ranges


def exact_version(spec: SpecifierSet) -> str:
    """The version of an ``==X`` (or ``===X``) specifier set, else ""."""
    specs = list(spec)
    if len(specs) == 1 and specs[0].operator in ("==", "===") and not specs[0].version.endswith(".*"):
        return specs[0].version
    return ""


def _show(spec: SpecifierSet) -> str:
    return exact_version(spec) or str(spec)


# which library of the CUDA stack a bundled requirement is, by its normalised name
_ROLES = (("runtime", re.compile(r"cuda-toolkit|nvidia-cuda-runtime(-cu\d+)?")),
          ("cudnn", re.compile(r"nvidia-cudnn(-cu\d+)?")),
          ("nccl", re.compile(r"nvidia-nccl(-cu\d+)?")),
          ("triton", re.compile(r"triton")))


def _role(name: str) -> str:
    return next((role for role, pattern in _ROLES if pattern.fullmatch(name)), "")


def _runtime_cuda(spec: SpecifierSet) -> str:
    """CUDA major.minor of a runtime pin: ``==12.8.90`` or ``==13.0.*``; "" for a range."""
    specs = list(spec)
    version = specs[0].version.removesuffix(".*") if len(specs) == 1 and specs[0].operator in ("==", "===") else ""
    return ".".join(version.split(".")[:2])


def _runtime(reqs: list[tuple[str, Requirement]]) -> tuple[str, str]:
    """(CUDA, the runtime requirement as written): cuda-toolkit's when pinned, else the first runtime's."""
    runtimes = [(n, r) for n, r in reqs if _role(n) == "runtime"]
    if not runtimes:
        return "", ""
    name, req = next(((n, r) for n, r in reversed(runtimes) if n == "cuda-toolkit"), runtimes[0])
    return _runtime_cuda(req.specifier), f"{name}{req.specifier}"


def bundled_facts(reqs: Iterable[Requirement]) -> BundledFacts:
    """CUDA runtime, cuDNN, NCCL and triton from requirements, in both the ``nvidia-*-cu12``
    style and the ``cuda-toolkit[...]==13.x`` / ``nvidia-cuda-runtime==13.x`` style."""
    bundled = [(str(canonicalize_name(r.name)), r) for r in reqs if is_bundled(r.name)]
    shown = {role: _show(r.specifier) for n, r in bundled if (role := _role(n)) in ("cudnn", "nccl", "triton")}
    cuda, runtime = _runtime(bundled)
    pins = {n: v for n, r in bundled if (v := exact_version(r.specifier))}
    ranges = {n: _show(r.specifier) for n, r in bundled}
    return BundledFacts(cuda=cuda, cuda_runtime=runtime, cudnn=shown.get("cudnn", ""), nccl=shown.get("nccl", ""),
                        triton=shown.get("triton", ""), pins=tuple(sorted(pins.items())),
                        ranges=tuple(sorted(ranges.items())))


def requirement_of(reqs: Iterable[Requirement], name: str) -> Requirement | None:
    """The requirement on ``name`` among ``reqs`` (first match), if any."""
    want = canonicalize_name(name)
    return next((r for r in reqs if canonicalize_name(r.name) == want), None)
