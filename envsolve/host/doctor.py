"""Pure checks of a host's facts against a lock: each finding says what is wrong and the fix.

:func:`check` takes the host's facts (:mod:`envsolve.host`, which :mod:`envsolve.detect` fills: the
driver, the GPUs, the installed frameworks, the container tools) and the provider for the driver
and CUDA facts
(toolkit driver floors, the minor-version compatibility floor of each CUDA major, the arch lists
of the locked builds). It reads nothing itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from ..data import Build
from ..domain import ACCELERATOR, DOCKER_PLATFORM, serves
from ..lock.model import Environment, Lock
from ..provider import Provider
from ..versions import parse_arch, parse_dotted, parse_driver
from .facts import GpuInfo, HostFacts, model_name

__all__ = ["Finding", "check", "pick_environment"]

LEVELS = ("ok", "warn", "fail")


@dataclass(frozen=True, kw_only=True, slots=True)
class Finding:
    """One result of the doctor: ``fail`` would break the environment, ``warn`` might."""

    level: str  # ok | warn | fail
    check: str  # host | driver | gpu | package | container
    message: str
    fix: str = ""


def pick_environment(lock: Lock, facts: HostFacts, target: str | None = None) -> Environment | None:
    """The lock environment to check: ``target``, else the first for this host's accelerator,
    else the only one; None when ``target`` names none."""
    if target is not None:
        return lock.environment(target)
    want = ACCELERATOR.get(facts.vendor, "cpu")
    return next((e for e in lock.environments if e.accelerator == want), lock.environments[0])


def check(env: Environment, facts: HostFacts, graph: Provider, *,
          installed: Mapping[str, str], tools: Mapping[str, bool]) -> list[Finding]:
    """Every finding for environment ``env`` of a lock on the host ``facts`` describes."""
    out = [Finding(level="warn", check="host", message=w) for w in facts.warnings]
    out += _accelerator(env, facts)
    out += _platform(env, facts)
    if env.accelerator == "cuda" and (facts.vendor == "nvidia" or facts.platform == "jetson"):
        out += _driver(env, facts, graph)
    if env.accelerator != "cpu" and ACCELERATOR.get(facts.vendor) == env.accelerator:
        for g in facts.gpus:
            out.append(_gpu(env, g, facts, graph))
    out += _packages(env, installed, graph)
    out += _container(env, facts, tools)
    return out


def _accelerator(env: Environment, facts: HostFacts) -> list[Finding]:
    acc = env.accelerator
    name = env.name
    if acc == "cpu":
        return [Finding(level="ok", check="host", message=f"environment '{name}' runs on the CPU; any host will do")]
    have = ACCELERATOR.get(facts.vendor, facts.vendor)
    stack = f"CUDA {env.cuda}" if acc == "cuda" else f"ROCm {env.rocm}"
    vendor = "NVIDIA" if acc == "cuda" else "AMD"
    if have == acc and facts.gpus or acc == "cuda" and facts.platform == "jetson":
        return []  # a Jetson's integrated GPU is listed by no tool
    if have == acc:
        return [Finding(level="fail", check="host",
                        message=f"the {vendor} driver is present ({facts.source}) but no GPU is visible",
                        fix=_no_gpu_fix(facts, acc))]
    return [Finding(level="fail", check="host",
                    message=f"environment '{name}' needs an {vendor} GPU ({stack}) but this "
                            f"{'container' if facts.container else 'host'} has "
                            f"{'no GPU' if facts.vendor == 'cpu' else facts.vendor.upper() + ' GPUs'}",
                    fix=_no_gpu_fix(facts, acc))]


def _platform(env: Environment, facts: HostFacts) -> list[Finding]:
    have = DOCKER_PLATFORM.get(facts.machine, "")
    if not have or have == env.platform:
        return []
    return [Finding(level="fail", check="host",
                    message=f"environment '{env.name}' is built for {env.platform}, but this host is {have} "
                            f"({facts.machine})",
                    fix=f"run it on a {env.platform} machine, or lock a target for this one (`envsolve lock --host`)")]


def _no_gpu_fix(facts: HostFacts, acc: str) -> str:
    if facts.container:
        return ("start the container with `--gpus all` (NVIDIA container toolkit)" if acc == "cuda" else
                "start the container with `--device /dev/kfd --device /dev/dri`")
    var = "CUDA_VISIBLE_DEVICES" if acc == "cuda" else "ROCR_VISIBLE_DEVICES"
    return (f"check that the driver is loaded and {var} is not hiding the GPUs; or run on a machine with "
            "the GPUs, or lock a target for this one (`envsolve lock --host`)")


def _jetpack(env: Environment, facts: HostFacts, graph: Provider) -> list[Finding]:
    """A Jetson's CUDA is its JetPack's: the board's (from L4T) against the lock's."""
    have = graph.jetpack_of_l4t(facts.l4t)
    want = graph.jetpack(parse_dotted(env.jetpack, "JetPack version")) if env.jetpack else None
    if have is None or want is None:
        what = (f"L4T {facts.l4t or '(unknown)'} is no JetPack release in envsolve's data" if have is None
                else f"environment '{env.name}' was not locked for a Jetson (no jetpack)")
        return [Finding(level="warn", check="driver", message=f"Jetson: {what}; the CUDA this board runs is "
                        "fixed by its JetPack release, not checked",
                        fix="lock a target for this board: gpus = ['Jetson ...'] and jetpack = '...' in "
                            "[hardware] (or `envsolve lock --host`)")]
    if have.cuda.prefix(2) == want.cuda.prefix(2) and have.version.major == want.version.major:
        return [Finding(level="ok", check="driver",
                        message=f"JetPack {have.version} (L4T {facts.l4t}) brings CUDA {have.cuda}, as the lock's "
                                f"JetPack {env.jetpack} does")]
    return [Finding(level="fail", check="driver",
                    message=f"this board runs JetPack {have.version} (L4T {facts.l4t}, CUDA {have.cuda}); the "
                            f"environment was locked for JetPack {env.jetpack} (CUDA {want.cuda})",
                    fix=f"re-lock with jetpack = '{have.version}' in [hardware] (or `envsolve lock --host`), or "
                        f"flash JetPack {env.jetpack}")]


def _driver(env: Environment, facts: HostFacts, graph: Provider) -> list[Finding]:
    if facts.platform == "jetson":
        return _jetpack(env, facts, graph)
    if not facts.driver:
        return [Finding(level="warn", check="driver", message="the NVIDIA driver version is unknown",
                        fix="set ENVSOLVE_DRIVER to the driver version, or install nvidia-smi")]
    try:
        have = parse_driver(facts.driver)
        cuda = parse_dotted(env.cuda, "CUDA version")
    except ValueError as e:
        return [Finding(level="warn", check="driver", message=str(e))]
    native = graph.native_driver_min(cuda)
    major = graph.cuda_major(cuda.major)
    minor_floor = major.minor_compat_driver_min if major is not None else None
    cu = "{}.{}".format(*cuda.prefix(2))
    relock = f"or re-lock for this driver: `envsolve lock --host` (or driver = '{facts.driver}' in [hardware])"
    if native is not None and have >= native:
        return [Finding(level="ok", check="driver",
                        message=f"driver {facts.driver} runs CUDA {cu} natively (needs >= {native})")]
    if minor_floor is not None and have >= minor_floor:
        if env.compat == "minor-version":
            return [Finding(level="ok", check="driver",
                            message=f"driver {facts.driver} runs CUDA {cu} by minor-version compatibility "
                                    f"(CUDA {cuda.major}.x needs >= {minor_floor}), as the lock expects")]
        return [Finding(level="warn", check="driver",
                        message=f"driver {facts.driver} runs CUDA {cu} only by minor-version compatibility "
                                f"(>= {minor_floor}), not natively (>= {native}); the lock assumed native, so "
                                "PTX JIT for newer GPUs will not work",
                        fix=f"upgrade the NVIDIA driver to >= {native}, {relock}")]
    floors = [f"{native} (native)" if native else "", f"{minor_floor} (minor-version compatibility)"
              if minor_floor and minor_floor != native else ""]
    return [Finding(level="fail", check="driver",
                    message=f"driver {facts.driver} is too old for CUDA {cu}: it needs "
                            f"{' or '.join(f for f in floors if f) or 'a newer driver'}",
                    fix=f"upgrade the NVIDIA driver to >= {native or minor_floor}, {relock}")]


def _builds(env: Environment, graph: Provider) -> list[Build]:
    """The graph's records of the locked builds (those the data knows)."""
    found = []
    for p in env.frameworks:
        for r in graph.releases(p.name):
            if r.raw == p.version:
                found += [b for b in graph.builds(r) if b.variant == p.variant]
    return found


def _gpu(env: Environment, g: GpuInfo, facts: HostFacts, graph: Provider) -> Finding:
    label = model_name(g, graph) or g.name
    shown = f"GPU {g.index} {g.name}"
    if not g.arch:
        return Finding(level="warn", check="gpu",
                       message=f"{shown}: its architecture is unknown (not in the data, and the tool did not say)",
                       fix="set ENVSOLVE_GPUS to its architecture (e.g. sm_90 or gfx942), or update envsolve's data")
    a = parse_arch(g.arch)
    locked = list(env.gpu_archs)
    builds = [b for b in _builds(env, graph) if b.accelerator == env.accelerator]
    relock = f"add '{label}' to [hardware] gpus and re-lock (or `envsolve lock --host`)"
    if builds:
        native = env.compat == "native"
        missing = [b for b in builds if not serves(b, a, native=native)]
        if missing:
            b = missing[0]
            code = ", ".join((*b.archs, *b.gfx)) or "none"
            return Finding(level="fail", check="gpu",
                           message=f"{shown} ({a.name}) is not served by {b.package} {b.raw} ({b.variant}): "
                                   f"it carries code for {code}" + (f", PTX {', '.join(b.ptx)}" if b.ptx else ""),
                           fix=relock)
        names = ", ".join(f"{b.package} {b.raw} ({b.variant})" for b in builds)
        if a.name not in locked:
            return Finding(level="warn", check="gpu",
                           message=f"{shown} ({a.name}) is not among the lock's GPUs ({', '.join(locked)}), "
                                   f"but the locked builds carry code for it ({names})", fix=relock)
        return Finding(level="ok", check="gpu", message=f"{shown} ({a.name}) is served by {names}")
    if a.name in locked or any(parse_arch(x).sass_runs_on(a) for x in locked if x.startswith("sm_")):
        return Finding(level="ok", check="gpu", message=f"{shown} ({a.name}) is among the GPUs the lock was solved for")
    return Finding(level="fail", check="gpu",
                   message=f"{shown} ({a.name}) is not among the GPUs the lock was solved for "
                           f"({', '.join(locked) or 'none'}), and the data has no arch list for the locked builds",
                   fix=relock)


def _packages(env: Environment, installed: Mapping[str, str], graph: Provider) -> list[Finding]:
    pkgs = list(env.frameworks)
    if pkgs and not any(p.name in installed for p in pkgs):
        return [Finding(level="warn", check="package",
                        message="none of the locked frameworks is installed in this Python; checked the "
                                "machine only", fix="run the doctor inside the environment to check it as well")]
    out = []
    for p in pkgs:
        want = p.requirement.split("==", 1)[1]
        install = f"pip install '{p.requirement}'" + (f" --index-url {p.index_url}" if p.index_url else "")
        have = installed.get(p.name)
        if have is None:
            out.append(Finding(level="fail", check="package", message=f"{p.name} {want} is locked but not installed",
                               fix=install))
            continue
        try:
            hv, wv = Version(have), Version(want)
        except InvalidVersion:
            out.append(Finding(level="warn", check="package",
                               message=f"{p.name}: installed version {have!r} is not a valid version"))
            continue
        if hv.public != wv.public:
            out.append(Finding(level="fail", check="package",
                               message=f"{p.name} {have} is installed; the lock has {want}", fix=install))
        elif hv.local and hv.local != p.variant:
            out.append(Finding(level="fail", check="package",
                               message=f"{p.name} {have} is the {hv.local} build; the lock has {p.variant}",
                               fix=install))
        elif not hv.local and p.index == "pytorch":
            out.append(Finding(level="fail", check="package",
                               message=f"{p.name} {have} is the default index's build; the lock has the "
                                       f"{p.variant} build", fix=install))
        else:
            out.append(Finding(level="ok", check="package", message=f"{p.name} {have} matches the lock"))
    return out


def _container(env: Environment, facts: HostFacts, tools: Mapping[str, bool]) -> list[Finding]:
    if env.accelerator != "cuda" or facts.container or not tools.get("docker"):
        return []
    if tools.get("nvidia-ctk") or tools.get("nvidia-container-runtime"):
        return [Finding(level="ok", check="container", message="Docker and the NVIDIA container toolkit are installed")]
    return [Finding(level="fail", check="container",
                    message="Docker is installed but the NVIDIA container toolkit is not "
                            "(no nvidia-ctk or nvidia-container-runtime on PATH): `docker run --gpus all` will fail",
                    fix="install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker` "
                        "and restart Docker")]
