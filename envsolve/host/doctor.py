"""Pure checks of a host's facts against a lock: each finding says what is wrong and the fix.

:func:`check` takes the host's facts (:mod:`envsolve.host.facts`, which :mod:`envsolve.host.detect` fills: the
driver, the GPUs, the installed frameworks, the container tools) and the provider for the driver
and CUDA facts
(toolkit driver floors, the minor-version compatibility floor of each CUDA major, the arch lists
of the locked builds). It reads nothing itself.

The packages are those of one Python (:class:`Interpreter`: the venv beside the lock, ``--python``,
else the one envsolve runs in), which :func:`envsolve.host.detect.python_site` lists: of a full lock,
every package is compared with what is installed (missing, another version or build: a failure;
installed and not locked: a warning, except in the Python envsolve runs in); of a frameworks-only
lock, the locked frameworks and the other distributions of each.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any, Literal

import msgspec
from packaging.version import InvalidVersion, Version

from ..data import Build
from ..domain import ACCELERATOR, VENDOR_NAME, VENDOR_OF, canonical_name, kernels, serves, stack_text
from ..lock.model import Environment, Lock, Package
from ..provider import Provider
from ..solve import PackagePin
from ..solve.fit import compiler_on, cudnn_refusal
from ..solve.model import No
from ..versions import Arch, Dotted, parse_arch, parse_dotted, parse_driver, same_version
from .facts import GpuInfo, HostFacts, host_platform, model_name, model_of

__all__ = ["FORMAT", "Checkup", "Chosen", "Finding", "Interpreter", "Level", "Subject", "check", "check_host",
           "compat_libraries_finding", "distributions", "looked_for", "pick_environment", "report_lines", "where"]

FORMAT = 1  # the version of `envsolve doctor --format json`'s keys

# A finding's level: ``fail`` would break the environment, ``warn`` might.
Level = Literal["ok", "warn", "fail"]
# What a finding is about.
Subject = Literal["host", "driver", "gpu", "package", "container"]


class Finding(msgspec.Struct, frozen=True, kw_only=True):
    """One result of the doctor: what it found about one subject, and the fix when it is not ok."""

    level: Level
    check: Subject
    message: str
    fix: str = ""

    def to_dict(self) -> dict[str, str]:
        """The finding as `envsolve doctor --format json` gives it (no fix when it is ok, as in the text)."""
        return {"level": self.level, "check": self.check, "message": self.message,
                "fix": self.fix if self.level != "ok" else ""}


# How the doctor came to the Python it checked: ``--python``, the venv beside the lock (``.venv``,
# where `envsolve sync` puts it), or the Python envsolve runs in.
Chosen = Literal["--python", "venv", "envsolve"]


class Interpreter(msgspec.Struct, frozen=True, kw_only=True):
    """The Python whose installed distributions the doctor checked, and why that one."""

    path: str  # its executable ("" when not said)
    version: str  # "3.12.3" ("" when not said)
    chosen: Chosen = "envsolve"
    own: bool = True  # the Python envsolve runs in: envsolve's own distributions are there, no extras are named
    marker: bool = False  # its venv carries `envsolve sync`'s marker: sync made it
    synced: str = ""  # the environment of this lock, as it is now, that the marker says the venv holds

    def text(self, environment: str) -> str:
        """``python: /p/.venv/bin/python, Python 3.12.3 (the venv envsolve sync made for this lock)``."""
        why = {"--python": "chosen with --python", "venv": "the venv beside the lock",
               "envsolve": "the Python envsolve runs in: no .venv beside the lock"}[self.chosen]
        if self.synced == environment and self.chosen == "venv":
            why = "the venv envsolve sync made for this lock"
        elif self.synced == environment:
            why += ", a venv envsolve sync made for this lock"
        elif self.synced:
            why += f", a venv envsolve sync made for environment '{self.synced}' of this lock"
        elif self.marker:
            why += ", made by envsolve sync but not for this lock as it is now"
        elif self.chosen == "venv":
            why += ", not made by envsolve sync"
        if self.own and self.chosen != "envsolve":
            why += "; envsolve runs in it"
        version = f", Python {self.version}" if self.version else ""
        return f"python: {self.path or '(this Python)'}{version} ({why})"

    def to_dict(self, environment: str) -> dict[str, Any]:
        """The ``python`` key of `envsolve doctor --format json`."""
        return {"path": self.path, "version": self.version, "chosen_by": self.chosen,
                "synced": self.synced == environment, "extras_checked": not self.own}


_OWN = Interpreter(path="", version="")  # the Python envsolve runs in, not described


def pick_environment(lock: Lock, facts: HostFacts, target: str | None = None) -> Environment | None:
    """The lock environment to check: ``target``, else the first for this host's accelerator,
    else the only one; None when ``target`` names none."""
    if target is not None:
        return lock.environment(target)
    want = ACCELERATOR.get(facts.vendor, "cpu")
    return next((e for e in lock.environments if e.accelerator == want), lock.environments[0])


def check(env: Environment, facts: HostFacts, provider: Provider, *, installed: Mapping[str, str],
          tools: Mapping[str, bool], python: Interpreter = _OWN, full: bool = False) -> list[Finding]:
    """Every finding for environment ``env`` of a lock on the host ``facts`` describes, with what
    the Python ``python`` has ``installed``: of a full lock (``full``), every locked package
    (:func:`looked_for`); else the locked frameworks (:func:`distributions`)."""
    packages = _locked_packages(env, installed, python) if full else _packages(env, installed, provider)
    return check_host(env, facts, provider) + packages + _container(env, facts, tools) + \
        compat_libraries_finding(env, facts)


def check_host(env: Environment, facts: HostFacts, provider: Provider) -> list[Finding]:
    """The findings about the machine alone (accelerator, platform, driver, GPUs), nothing about
    what is installed: what `envsolve sync` checks before it installs."""
    out = [Finding(level="warn", check="host", message=w) for w in facts.warnings]
    out += _accelerator(env, facts, provider)
    out += _platform(env, facts)
    out += _driver(env, facts, provider)
    out += _level_zero(env, facts)
    out += _macos(env, facts)
    out += _gpus(env, facts, provider)
    return out


def report_lines(findings: list[Finding]) -> list[str]:
    """The findings as `envsolve doctor` prints them: level, subject, message, and the fix of each
    that is not ok."""
    return [line for f in findings for line in _report(f)]


def _report(f: Finding) -> list[str]:
    fix = [f"      fix: {f.fix}"] if f.fix and f.level != "ok" else []
    return [f"{f.level.upper():4}  {f.check}: {f.message}", *fix]


class Checkup(msgspec.Struct, frozen=True, kw_only=True):
    """What `envsolve doctor` says: which environment of which lock it checked, on what, what it
    found installed, and each finding; its text and its JSON are made from these."""

    lock: str  # the lock file's path as given
    environment: str
    facts: HostFacts
    installed: Mapping[str, str]  # distribution -> version, of those looked for
    findings: tuple[Finding, ...]
    python: Interpreter | None = None  # the Python whose distributions were checked

    @property
    def fails(self) -> int:
        return sum(f.level == "fail" for f in self.findings)

    @property
    def warns(self) -> int:
        return sum(f.level == "warn" for f in self.findings)

    def text_lines(self) -> list[str]:
        """What was checked, each finding with its fix, and, when none failed, that all passed."""
        head = (f"checking environment '{self.environment}' of {self.lock} on this {where(self.facts)} "
                f"({self.facts.vendor}, from {self.facts.source})")
        passed = [] if self.fails else [f"all checks passed ({self.warns} warning(s))"]
        python = [self.python.text(self.environment)] if self.python else []
        return [head, *python, *report_lines(list(self.findings)), *passed]

    def to_dict(self) -> dict[str, Any]:
        """The checkup as `envsolve doctor --format json` prints it (README: Machine-readable output)."""
        return {"format": FORMAT, "lock": self.lock, "environment": self.environment, "on": where(self.facts),
                "host": self.facts.to_dict(),
                "python": self.python.to_dict(self.environment) if self.python else None,
                "installed": dict(sorted(self.installed.items())),
                "findings": [f.to_dict() for f in self.findings],
                "summary": {"fails": self.fails, "warns": self.warns, "passed": not self.fails}}


def where(facts: HostFacts) -> str:
    """``container`` or ``host``: what the doctor runs on."""
    return "container" if facts.container else "host"


def _accelerator(env: Environment, facts: HostFacts, provider: Provider) -> list[Finding]:
    if env.accelerator == "cpu":
        return [Finding(level="ok", check="host",
                        message=f"environment '{env.name}' runs on the CPU; any host will do")]
    if _gpu_reachable(env, facts):
        return []
    return [Finding(level="fail", check="host", message=_missing_gpu(env, facts),
                    fix=_no_gpu_fix(env, facts, provider))]


def _gpu_reachable(env: Environment, facts: HostFacts) -> bool:
    """Whether the host has a GPU of the environment's accelerator (a Jetson's integrated GPU is
    listed by no tool: its board is enough)."""
    jetson = env.accelerator == "cuda" and facts.platform == "jetson"
    return jetson or (ACCELERATOR.get(facts.vendor) == env.accelerator and bool(facts.gpus))


# how a stack's GPUs are hidden from a program (Intel's: the Level Zero specification's ZE_AFFINITY_MASK)
_HIDING = {"cuda": "CUDA_VISIBLE_DEVICES", "rocm": "ROCR_VISIBLE_DEVICES", "xpu": "ZE_AFFINITY_MASK"}


def _missing_gpu(env: Environment, facts: HostFacts) -> str:
    vendor = VENDOR_NAME[VENDOR_OF[env.accelerator]]
    if ACCELERATOR.get(facts.vendor) == env.accelerator:
        return f"the {vendor} driver is present ({facts.source}) but no GPU is visible"
    stack = {"cuda": f"CUDA {env.cuda}", "rocm": f"ROCm {env.rocm}", "xpu": "PyTorch's XPU builds"}.get(
        env.accelerator, "MPS")
    has = "no GPU" if facts.vendor == "cpu" else f"{VENDOR_NAME.get(facts.vendor, '')} GPUs"
    return f"environment '{env.name}' needs an {vendor} GPU ({stack}) but this {where(facts)} has {has}"


def _platform(env: Environment, facts: HostFacts) -> list[Finding]:
    have = host_platform(facts)
    if not have or have == env.platform:
        return []
    return [Finding(level="fail", check="host",
                    message=f"environment '{env.name}' is built for {env.platform}, but this host is {have} "
                            f"({facts.machine})",
                    fix=f"run it on a {env.platform} machine, or lock a target for this one (`envsolve lock --host`)")]


def _run_flags(env: Environment) -> str:
    """The container-engine arguments that give ``env``'s container its GPUs."""
    return " ".join(env.run_flags)


def _no_gpu_fix(env: Environment, facts: HostFacts, provider: Provider) -> str:
    if facts.container and env.run_flags:
        toolkit = (_DOCKER_DESKTOP if facts.wsl else " (NVIDIA container toolkit)") if env.accelerator == "cuda" else ""
        return f"start the container with `{_run_flags(env)}`{toolkit}"
    if facts.container:  # no container flags give this stack its GPU: Apple's MPS runs on macOS itself only
        return (f"run it on the machine itself, outside any container: no `docker run` flag gives a container "
                f"{stack_text(env.accelerator)}; or lock a target for this container (`envsolve lock --host`)")
    if env.accelerator == "mps":
        return "run it on a Mac with Apple silicon, or lock a target for this host (`envsolve lock --host`)"
    if facts.wsl and env.accelerator == "cuda":
        # NVIDIA's CUDA on WSL guide: the Windows driver is the only one ("Do not install any Linux
        # display driver in WSL")
        return (f"install or update the NVIDIA driver on Windows (R{provider.wsl_cuda_branch()} or newer runs CUDA in "
                f"WSL 2), never a Linux driver inside WSL; check that {_HIDING['cuda']} is not hiding the GPUs")
    return (f"check that the driver is loaded and {_HIDING[env.accelerator]} is not hiding the GPUs; or run on a "
            "machine with the GPUs, or lock a target for this one (`envsolve lock --host`)")


# Docker under WSL 2 or on Windows: Docker Desktop's WSL2 backend passes the GPU to Linux containers
_DOCKER_DESKTOP = " (Docker Desktop with the WSL2 backend gives containers the GPU)"


def _jetpack(env: Environment, facts: HostFacts, provider: Provider) -> list[Finding]:
    """A Jetson's CUDA is its JetPack's: the board's (from L4T) against the lock's."""
    have = provider.jetpack_of_l4t(facts.l4t)
    want = provider.jetpack(parse_dotted(env.jetpack, "JetPack version")) if env.jetpack else None
    if have is None or want is None:
        return [_jetpack_unknown(env, facts, known_board=have is not None)]
    if have.cuda.prefix(2) == want.cuda.prefix(2) and have.version.major == want.version.major:
        return [Finding(level="ok", check="driver",
                        message=f"JetPack {have.version} (L4T {facts.l4t}) brings CUDA {have.cuda}, as the lock's "
                                f"JetPack {env.jetpack} does")]
    return [Finding(level="fail", check="driver",
                    message=f"this board runs JetPack {have.version} (L4T {facts.l4t}, CUDA {have.cuda}); the "
                            f"environment was locked for JetPack {env.jetpack} (CUDA {want.cuda})",
                    fix=f"re-lock with jetpack = '{have.version}' in [hardware] (or `envsolve lock --host`), or "
                        f"flash JetPack {env.jetpack}")]


class _Floors(msgspec.Struct, frozen=True, kw_only=True):
    """The drivers that run an environment's CUDA: natively and by minor-version compatibility,
    each raised to the lock's ``driver_min`` where a locked build or GPU asked for more."""

    cuda: str  # "12.6"
    major: int
    native: Dotted | None
    minor: Dotted | None
    native_raised_by: str = ""  # why the native floor is above CUDA's own ("" when it is not)
    minor_raised_by: str = ""  # why the minor-version floor is
    windows: bool = False  # the floors are NVIDIA's Windows ones (native Windows, WSL 2)

    @property
    def driver(self) -> str:
        """What the messages call the driver: ``Windows driver`` for a Windows one."""
        return "Windows driver" if self.windows else "driver"

    @property
    def native_note(self) -> str:
        """What a message about the native floor adds: ``; the lock's driver_min ...`` or ""."""
        return f"; {self.native_raised_by}" if self.native_raised_by else ""

    @property
    def minor_note(self) -> str:
        return f"; {self.minor_raised_by}" if self.minor_raised_by else ""


def _jetpack_unknown(env: Environment, facts: HostFacts, *, known_board: bool) -> Finding:
    """A board or a lock the data cannot match to a JetPack release: not checked."""
    what = (f"environment '{env.name}' was not locked for a Jetson (no jetpack)" if known_board
            else f"L4T {facts.l4t or '(unknown)'} is no JetPack release in envsolve's data")
    return Finding(level="warn", check="driver", message=f"Jetson: {what}; the CUDA this board runs is "
                   "fixed by its JetPack release, not checked",
                   fix="lock a target for this board: gpus = ['Jetson ...'] and jetpack = '...' in "
                       "[hardware] (or `envsolve lock --host`)")


def _driver(env: Environment, facts: HostFacts, provider: Provider) -> list[Finding]:
    """A CUDA environment's driver: a Jetson's JetPack, else the NVIDIA driver's version."""
    if env.accelerator != "cuda":
        return []
    if facts.platform == "jetson":
        return _jetpack(env, facts, provider)
    return [_nvidia_driver(env, facts, provider), *_wsl_branch(facts, provider)] if facts.vendor == "nvidia" else []


def _wsl_branch(facts: HostFacts, provider: Provider) -> list[Finding]:
    """Under WSL 2, a Windows driver older than the first branch that brings CUDA into WSL 2
    (matrices/drivers.toml's ``wsl_cuda``)."""
    first = provider.wsl_cuda_branch()
    try:
        old = facts.wsl and first is not None and parse_driver(facts.driver).major < first
    except ValueError:
        return []
    if not old:
        return []
    return [Finding(level="fail", check="driver",
                    message=f"Windows driver {facts.driver} is older than R{first}, the first branch "
                            "whose CUDA reaches WSL 2 (NVIDIA's CUDA on WSL guide)",
                    fix=f"install an NVIDIA Windows driver of R{first} or newer on Windows (never a Linux "
                        "driver inside WSL)")]


def _nvidia_driver(env: Environment, facts: HostFacts, provider: Provider) -> Finding:
    if not facts.driver:
        return Finding(level="warn", check="driver", message="the NVIDIA driver version is unknown",
                       fix="set ENVSOLVE_DRIVER to the driver version, or install nvidia-smi")
    try:
        have = parse_driver(facts.driver)
        floors = _floors(env, parse_dotted(env.cuda, "CUDA version"), provider, windows=facts.windows_driver)
    except ValueError as e:
        return Finding(level="warn", check="driver", message=str(e))
    if env.compat == "forward":
        return _forward_driver(env, facts, provider, have, floors)
    return _driver_finding(env, facts.driver, have, floors)


def _forward_driver(env: Environment, facts: HostFacts, provider: Provider, have: Dotted, f: _Floors) -> Finding:
    """A forward-compatibility environment's driver: a Linux one (not WSL 2's, not Windows'), of a
    branch the image's cuda-compat package supports, at the lock's floor, on data-center GPUs only."""
    row = provider.cuda_compat(parse_dotted(env.cuda, "CUDA version"))
    package = row.package if row is not None else f"CUDA {f.cuda}'s cuda-compat"
    if (refused := _never_forward(facts, provider, package, f)) is not None:
        return refused
    # the floor on the host's branch: the lock's where it was made for that branch, else the branch's own
    locked = parse_driver(env.driver_min) if env.driver_min else None
    need = locked if locked is not None and locked.major == have.major else provider.branch_floor(have.major)
    if row is not None and have.major in row.branches and (need is None or have >= need):
        return Finding(level="ok", check="driver",
                       message=f"driver {facts.driver} (R{have.major}) runs CUDA {f.cuda} by forward compatibility "
                               f"through {package} in the image (it supports {row.branches_text}), as the lock "
                               "expects")
    if f.native is not None and have >= f.native:
        return Finding(level="warn", check="driver",
                       message=f"driver {facts.driver} runs CUDA {f.cuda} natively (needs >= {f.native}), but the "
                               f"image brings {package} for an older driver, which a newer branch may refuse "
                               "(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, 803)",
                       fix=f"re-lock for this driver: `envsolve lock --host` (or driver = '{facts.driver}' in "
                           "[hardware]), which needs no cuda-compat")
    supported = f" (it supports {row.branches_text})" if row is not None else ""
    if row is not None and have.major in row.branches and need is not None:
        supported = f" (on R{have.major} from {need})"
    return Finding(level="fail", check="driver",
                   message=f"driver {facts.driver} (R{have.major}) is not one {package} runs on{supported}: the "
                           f"environment runs CUDA {f.cuda} by forward compatibility",
                   fix=f"install a driver of a supported branch, or >= {f.native or f.minor} (native), "
                       f"{_relock(facts.driver)}")


def _never_forward(facts: HostFacts, provider: Provider, package: str, f: _Floors) -> Finding | None:
    """The failure of a host forward compatibility never serves, whatever its driver: a Windows
    driver (native or WSL 2's), or a GPU that is not a data-center one; None for another host."""
    if facts.windows_driver:
        return Finding(level="fail", check="driver",
                       message=f"{f.driver} {facts.driver}: the environment runs CUDA {f.cuda} by forward "
                               f"compatibility ({package}), which runs on Linux only, not "
                               f"{'WSL 2' if facts.wsl else 'Windows'}",
                       fix=f"run it on a Linux host, {_relock(facts.driver)}")
    outsider = next((g for g in facts.gpus if not _data_center(g, provider)), None)
    if outsider is None:
        return None
    return Finding(level="fail", check="driver",
                   message=f"{outsider.name} is not a data-center GPU: forward compatibility ({package}) serves "
                           "data-center GPUs only (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, 804)",
                   fix=f"run it on data-center GPUs; on this one, a driver >= {f.native or f.minor} runs CUDA "
                       f"{f.cuda}, or lock a release whose CUDA this driver runs (`envsolve explain` names them)")


def _data_center(g: GpuInfo, provider: Provider) -> bool:
    """Whether the data knows ``g`` as a data-center GPU (``forward_compat`` of its row)."""
    model = model_of(g, provider)
    return model is not None and model.forward_compat


def compat_libraries_finding(env: Environment, facts: HostFacts) -> list[Finding]:
    """Inside a container of a forward-compatibility environment: whether the image's cuda-compat
    libraries are there and load (the ``libcuda.so.*`` files detect found in
    /usr/local/cuda-X.Y/compat, and what the dynamic loader said of each); nothing to say for
    another environment or outside a container."""
    if env.compat != "forward" or not facts.container:
        return []
    where = f"/usr/local/cuda-{'.'.join(env.cuda.split('.')[:2])}/compat"
    libraries = [(p.rsplit("/", 1)[-1], why) for p, why in facts.cuda_compat if p.startswith(where + "/")]
    if loading := [name for name, why in libraries if not why]:
        return [Finding(level="ok", check="container",
                        message=f"the CUDA forward-compatibility libraries in {where} load ({', '.join(loading)})")]
    if libraries:
        name, why = libraries[0]
        return [Finding(level="fail", check="container",
                        message=f"{where}/{name} does not load: {why}",
                        fix="build the image again from the rendered Dockerfile (its cuda-compat package is "
                            "damaged or for another platform)")]
    return [Finding(level="fail", check="container",
                    message=f"no libcuda.so.* in {where}: this container lacks the cuda-compat package the environment "
                            f"needs to run CUDA {env.cuda} on this driver",
                    fix="build the image from the rendered Dockerfile (it installs cuda-compat and sets "
                        f"LD_LIBRARY_PATH={where}:$LD_LIBRARY_PATH)")]


def _floors(env: Environment, cuda: Dotted, provider: Provider, *, windows: bool) -> _Floors:
    """CUDA's own floors (matrices/cuda.toml; NVIDIA's Windows columns for a Windows driver, native
    or WSL 2's host's), raised as the solver raised them: to what the data says the locked builds and
    GPUs need, and to the lock's ``driver_min`` when it is above the floor of the lock's compatibility."""
    native = provider.windows_driver_min(cuda) if windows else provider.native_driver_min(cuda)
    minor = provider.minor_compat_driver_min(cuda.major, windows=windows)
    cu = "{}.{}".format(*cuda.prefix(2))
    top = _highest_raise(env, native, minor, provider, windows=windows)
    if top is None:
        return _Floors(cuda=cu, major=cuda.major, native=native, minor=minor, windows=windows)
    floor, cause = top
    locked = env.driver_min and parse_driver(env.driver_min) == floor
    why = f"the lock's driver_min {env.driver_min}: {cause}" if locked else cause
    return _Floors(cuda=cu, major=cuda.major, native=max(native or floor, floor), minor=floor if minor else None,
                   native_raised_by=why if native is None or floor > native else "", minor_raised_by=why,
                   windows=windows)


def _highest_raise(env: Environment, native: Dotted | None, minor: Dotted | None,
                   provider: Provider, *, windows: bool) -> tuple[Dotted, str] | None:
    """The highest floor a locked build, a locked GPU or the lock itself sets, when it is above
    CUDA's own lowest floor."""
    own = native if env.compat == "native" else minor
    top = max([*_raises(env, provider, windows=windows), *_locked_raise(env, own)], key=lambda r: r[0], default=None)
    if top is None or top[0] <= (minor or native or top[0]):
        return None
    return top


def _locked_raise(env: Environment, own: Dotted | None) -> list[tuple[Dotted, str]]:
    """The lock's ``driver_min``, when it is above CUDA's floor for the lock's compatibility
    (a lock from data that no longer says why)."""
    locked = parse_driver(env.driver_min) if env.driver_min else None
    return [(locked, "what the lock was solved for")] if locked is not None and own is not None and locked > own else []


def _raises(env: Environment, provider: Provider, *, windows: bool) -> list[tuple[Dotted, str]]:
    """The driver floors the locked builds (their rows' ``driver_min``) and GPUs (the first driver
    that knows each) set, each with what sets it."""
    builds = [(b.driver_min, f"{b.dist or b.package} {b.dist_version or b.raw} needs driver >= {b.driver_min}")
              for b in _builds(env, provider) if b.driver_min is not None]
    return builds + _gpu_floors(env, provider, windows=windows)


def _gpu_floors(env: Environment, provider: Provider, *, windows: bool) -> list[tuple[Dotted, str]]:
    """The first driver that knows each locked GPU (``the RTX 4090 (sm_89) needs ...``), in the
    host driver's OS column."""
    models = {m.arch: m.name for m in env.gpu_models}
    firsts = [(name, provider.gpu_driver_floor(parse_arch(name), windows=windows)) for name in env.gpu_archs]
    return [(floor, f"{_gpu_text(models.get(name, ''), name)} needs a driver >= {floor}, the first "
             "that knows it") for name, floor in firsts if floor]


def _gpu_text(model: str, arch: str) -> str:
    return f"the {model} ({arch})" if model else arch


def _driver_finding(env: Environment, driver: str, have: Dotted, f: _Floors) -> Finding:
    if f.native is not None and have >= f.native:
        return Finding(level="ok", check="driver",
                       message=f"{f.driver} {driver} runs CUDA {f.cuda} natively (needs >= {f.native}){f.native_note}")
    if f.minor is not None and have >= f.minor:
        return _by_minor_version(env, driver, f)
    return Finding(level="fail", check="driver",
                   message=f"{f.driver} {driver} is too old for CUDA {f.cuda}: it needs {_needs(f)}"
                           + (f.native_note or f.minor_note),
                   fix=f"upgrade the NVIDIA {f.driver} to >= {f.native or f.minor}, {_relock(driver)}")


def _needs(f: _Floors) -> str:
    """``560.28.03 (native) or 525.60.13 (minor-version compatibility)``."""
    needs = [f"{f.native} (native)" if f.native else "",
             f"{f.minor} (minor-version compatibility)" if f.minor and f.minor != f.native else ""]
    return " or ".join(n for n in needs if n) or "a newer driver"


def _by_minor_version(env: Environment, driver: str, f: _Floors) -> Finding:
    """A driver that runs the environment's CUDA by minor-version compatibility only: as locked,
    or short of the native support the lock assumed (no PTX JIT)."""
    if env.compat == "minor-version":
        return Finding(level="ok", check="driver",
                       message=f"{f.driver} {driver} runs CUDA {f.cuda} by minor-version compatibility "
                               f"(CUDA {f.major}.x needs >= {f.minor}){f.minor_note}, as the lock expects")
    return Finding(level="warn", check="driver",
                   message=f"{f.driver} {driver} runs CUDA {f.cuda} only by minor-version compatibility "
                           f"(>= {f.minor}), not natively (>= {f.native}); the lock assumed native, so "
                           "PTX JIT for newer GPUs will not work",
                   fix=f"upgrade the NVIDIA {f.driver} to >= {f.native}, {_relock(driver)}")


def _relock(driver: str) -> str:
    return f"or re-lock for this driver: `envsolve lock --host` (or driver = '{driver}' in [hardware])"


def _builds(env: Environment, provider: Provider) -> list[Build]:
    """The provider's records of the locked builds (those the data knows)."""
    return [b for p in env.frameworks for b in provider.m.builds if _pins(p, b)]


def _pins(p: PackagePin, b: Build) -> bool:
    """Whether ``p`` is the lock's pin of ``b``: by its framework's name and release, or by the
    distribution it installs (nvidia-tensorflow 1.15.5+nv23.3 is a tensorflow 1.15.5 build)."""
    return b.variant == p.variant and p.name in (b.package, b.dist) and p.version in (b.raw, b.dist_version)


def _level_zero(env: Environment, facts: HostFacts) -> list[Finding]:
    """An XPU environment on an Intel GPU: PyTorch reaches it through Level Zero, which xpu-smi and
    sycl-ls answer through; a GPU seen by its PCI id (or OpenCL) only has no driver torch.xpu can use."""
    if env.accelerator != "xpu" or facts.vendor != "intel":
        return []
    if facts.level_zero:
        version = f" {facts.driver}" if facts.driver else ""
        return [Finding(level="ok", check="driver",
                        message=f"Intel's GPU driver answers through Level Zero ({facts.source}{version}), as "
                                "torch.xpu needs")]
    return [Finding(level="warn", check="driver",
                    message=f"the Intel GPU is there ({facts.source}) but no Level Zero runtime answered (xpu-smi, "
                            "sycl-ls): torch.xpu.is_available() will be False without Intel's GPU driver",
                    fix="install Intel's GPU driver with its Level Zero runtime (the compute runtime), then check "
                        "that `sycl-ls` lists the GPU as level_zero:gpu")]


def _macos(env: Environment, facts: HostFacts) -> list[Finding]:
    """An MPS environment on a Mac: the chip and macOS release (the data names no macOS floor of the
    locked builds yet, so it is said, not checked)."""
    if env.accelerator != "mps" or facts.platform != "darwin":
        return []
    what = ", ".join(x for x in (facts.chip, f"macOS {facts.os_version}" if facts.os_version else "") if x)
    return [Finding(level="ok", check="host",
                    message=f"this Mac ({what or 'chip and macOS release unknown'}) runs MPS on its GPU; the data "
                            "names no macOS floor for the locked builds, not checked")]


def _gpus(env: Environment, facts: HostFacts, provider: Provider) -> list[Finding]:
    """Each visible GPU against the locked builds' code (when the host has the lock's accelerator)."""
    if env.accelerator == "cpu" or ACCELERATOR.get(facts.vendor) != env.accelerator:
        return []
    builds = [b for b in _builds(env, provider) if b.accelerator == env.accelerator]
    if env.accelerator in ("xpu", "mps"):
        return [_jit_gpu(env, g, builds, provider) for g in facts.gpus]
    return [_gpu(env, g, builds, provider) for g in facts.gpus]


def _jit_gpu(env: Environment, g: GpuInfo, builds: list[Build], provider: Provider) -> Finding:
    """An Intel or Apple GPU: every XPU build runs on an Intel GPU (AOT code for its target, else
    SPIR-V the driver compiles on first use); the MPS builds on Apple's."""
    shown = f"GPU {g.index} {g.name}" + (f" ({g.arch})" if g.arch else "")
    names = ", ".join(f"{b.package} {b.raw} ({b.variant})" for b in builds) or f"the {env.accelerator} builds"
    if env.accelerator == "mps":
        return Finding(level="ok", check="gpu", message=f"{shown} runs {names} through MPS")
    arch = parse_arch(g.arch) if g.arch else None
    aot = arch is not None and all(kernels(provider.for_platform(b, env.platform), arch) == "sass" for b in builds)
    how = "AOT code for it" if builds and aot else "SPIR-V the driver compiles on first use"
    if not model_name(g, provider):
        return Finding(level="warn", check="gpu",
                       message=f"{shown} is not in envsolve's data; {names} carry SPIR-V the driver compiles for "
                               "it on first use, if PyTorch supports the GPU at all",
                       fix="check PyTorch's list of supported Intel GPUs, or update envsolve's data")
    return Finding(level="ok", check="gpu", message=f"{shown} runs {names}: {how}")


def _gpu(env: Environment, g: GpuInfo, builds: list[Build], provider: Provider) -> Finding:
    shown = f"GPU {g.index} {g.name}"
    if not g.arch:
        return Finding(level="warn", check="gpu",
                       message=f"{shown}: its architecture is unknown (not in the data, and the tool did not say)",
                       fix="set ENVSOLVE_GPUS to its architecture (e.g. sm_90 or gfx942), or update envsolve's data")
    arch = parse_arch(g.arch)
    relock = f"add '{model_name(g, provider) or g.name}' to [hardware] gpus and re-lock (or `envsolve lock --host`)"
    if builds:
        return _served(env, f"{shown} ({arch.name})", arch, builds, relock, provider)
    if _lock_covers(env, arch):
        return Finding(level="ok", check="gpu",
                       message=f"{shown} ({arch.name}) is among the GPUs the lock was solved for")
    return Finding(level="fail", check="gpu",
                   message=f"{shown} ({arch.name}) is not among the GPUs the lock was solved for "
                           f"({', '.join(env.gpu_archs) or 'none'}), and the data has no arch list for the "
                           "locked builds", fix=relock)


def _served(env: Environment, shown: str, arch: Arch, builds: list[Build], relock: str,
            provider: Provider) -> Finding:
    """Whether every component of every locked build serves ``arch``, by the solver's own rules:
    the build's code (PTX only under a native driver), its cuDNN, the compiler it runs here."""
    native = env.compat == "native"
    missing = next((b for b in builds if not serves(b, arch, native=native)), None)
    if missing is not None:
        return Finding(level="fail", check="gpu", fix=relock, message=f"{shown} is not served by {_code_of(missing)}")
    relock_for = (f"{relock}: the lock then chooses a release whose libraries and compiler serve {arch.name}, "
                  "or names the change that does")
    gaps: list[str] = []
    for b in builds:
        no, gap = _components(provider, b, arch, shown, native=native)
        if no is not None:
            return Finding(level="fail", check="gpu", fix=relock_for,
                           message=f"{shown} is not served by {b.package} {b.raw} ({b.variant}): {no.text}")
        gaps += [gap] if gap else []
    names = ", ".join(f"{b.package} {b.raw} ({b.variant})" for b in builds)
    if gaps:
        among = "" if arch.name in env.gpu_archs else f"; and {shown} is not among the lock's GPUs"
        return Finding(level="warn", check="gpu", fix=relock_for, message="; ".join(gaps) + among)
    if arch.name not in env.gpu_archs:
        return Finding(level="warn", check="gpu", fix=relock,
                       message=f"{shown} is not among the lock's GPUs ({', '.join(env.gpu_archs)}), "
                               f"but the locked builds carry code for it ({names})")
    return Finding(level="ok", check="gpu", message=f"{shown} is served by {names}")


def _components(provider: Provider, b: Build, arch: Arch, shown: str, *, native: bool) -> tuple[No | None, str]:
    """(why a component of ``b`` other than its own code fails ``arch``, or None; what its run-time
    compiler cannot do there, or ""): :func:`envsolve.solve.fit.cudnn_refusal` and
    :func:`~envsolve.solve.fit.compiler_on`, the solver's own questions."""
    if b.cuda is not None and (no := cudnn_refusal(provider, b, b.cuda, arch, shown,
                                                   native=native and kernels(b, arch) == "ptx")) is not None:
        return no, ""
    rel = next((r for r in provider.releases(b.package) if r.version == b.version), None)
    gap = compiler_on(provider, rel, [(arch, shown)]) if rel is not None and arch.vendor == "nvidia" else ""
    return (gap, "") if isinstance(gap, No) else (None, gap)


def _code_of(b: Build) -> str:
    """``torch 2.7.1 (cu126): it carries code for sm_50, ..., PTX sm_90``."""
    ptx = f", PTX {', '.join(b.ptx)}" if b.ptx else ""
    return f"{b.package} {b.raw} ({b.variant}): it carries code for {', '.join((*b.archs, *b.gfx)) or 'none'}{ptx}"


def _lock_covers(env: Environment, arch: Arch) -> bool:
    """Whether the lock was solved for ``arch``, or for an arch whose SASS runs on it."""
    return arch.name in env.gpu_archs or any(parse_arch(x).sass_runs_on(arch)
                                             for x in env.gpu_archs if x.startswith("sm_"))


def distributions(env: Environment, provider: Provider) -> list[str]:
    """The distributions to look for in this Python, sorted: each locked framework's, and the
    others its framework is published as (a build's ``dist`` in the matrices: cupy-cuda12x and
    cupy-cuda13x, tensorflow and tensorflow-cpu, onnxruntime and onnxruntime-gpu, ...)."""
    return sorted({p.name for p in env.frameworks} | {d for p in env.frameworks for d in _others(p, provider)})


def _others(p: PackagePin, provider: Provider) -> tuple[str, ...]:
    """The other distributions of the framework whose build ``p`` pins, sorted (none for a
    package the data has no build of, such as a companion)."""
    frameworks = {b.package for b in provider.m.builds if p.name in (b.package, b.dist)}
    dists = {b.dist or b.package for b in provider.m.builds if b.package in frameworks}
    dists |= {w.dist for w in provider.m.platform_wheels if w.package in frameworks and w.dist}
    return tuple(sorted((dists | frameworks) - {p.name}))


def _packages(env: Environment, installed: Mapping[str, str], provider: Provider) -> list[Finding]:
    """Each locked framework against what this Python has installed, under its own distribution
    or another of its framework's; one warning when none of them is there at all."""
    pkgs = [(p, _installed_others(p, installed, provider)) for p in env.frameworks]
    if pkgs and not any(p.name in installed or others for p, others in pkgs):
        return [Finding(level="warn", check="package",
                        message="none of the locked frameworks is installed in this Python; checked the "
                                "machine only", fix="run the doctor inside the environment to check it as well")]
    return [f for p, others in pkgs for f in _package(p, installed.get(p.name), others)]


def _installed_others(p: PackagePin, installed: Mapping[str, str], provider: Provider) -> list[tuple[str, str]]:
    """(distribution, version) of each other distribution of ``p``'s framework installed."""
    return [(d, installed[d]) for d in _others(p, provider) if d in installed]


def _install(p: PackagePin | Package, python: Interpreter = _OWN) -> str:
    """The command that installs the locked ``p`` into the Python ``python``."""
    return f"{_pip(python)} install '{p.requirement}'" + (f" --index-url {p.index_url}" if p.index_url else "")


def _package(p: PackagePin, have: str | None, others: list[tuple[str, str]]) -> list[Finding]:
    """The findings of one locked framework: its installed version, and the other distributions
    of its framework beside it or in its place."""
    if have is None:
        return [_instead(p, others) if others else _missing(p)]
    return [_version(p, have), *(_beside(p, d, v) for d, v in others)]


def _locked(p: PackagePin) -> str:
    return p.requirement.split("==", 1)[1]


def _missing(p: PackagePin) -> Finding:
    return Finding(level="fail", check="package", message=f"{p.name} {_locked(p)} is locked but not installed",
                   fix=_install(p))


def _instead(p: PackagePin, others: list[tuple[str, str]]) -> Finding:
    """Another distribution of the framework is installed where the lock has ``p``'s."""
    names = " and ".join(f"{d} {v}" for d, v in others)
    return Finding(level="fail", check="package",
                   message=f"{names} {'is' if len(others) == 1 else 'are'} installed; the lock has {p.name} "
                           f"{_locked(p)} (another distribution of the same framework)",
                   fix=f"pip uninstall -y {' '.join(d for d, _ in others)} && {_install(p)}")


def _beside(p: PackagePin, dist: str, version: str) -> Finding:
    """Another distribution of the framework installed beside the locked one: they share files."""
    return Finding(level="warn", check="package",
                   message=f"{dist} {version} is installed beside {p.name}: another distribution of the same "
                           "framework, whose files overwrite each other's",
                   fix=f"pip uninstall -y {dist}, then `{_install(p)}` again")


def _version(p: PackagePin, have: str) -> Finding:
    """The installed version of ``p``'s own distribution against the locked one."""
    want = _locked(p)
    try:
        problem = _mismatch(p, have, want)
    except InvalidVersion:
        return Finding(level="warn", check="package",
                       message=f"{p.name}: installed version {have!r} is not a valid version")
    if problem:
        return Finding(level="fail", check="package", message=problem, fix=_install(p))
    return Finding(level="ok", check="package", message=f"{p.name} {have} matches the lock")


def _mismatch(p: PackagePin, have: str, want: str) -> str:
    """How the installed build differs from the locked one ("" when it is the locked one);
    InvalidVersion when ``have`` is no version."""
    installed, locked = Version(have), Version(want)
    if installed.public != locked.public:
        return f"{p.name} {have} is installed; the lock has {want}"
    if installed.local and installed.local != p.variant:
        return f"{p.name} {have} is the {installed.local} build; the lock has {p.variant}"
    if not installed.local and p.index == "pytorch":
        return f"{p.name} {have} is the default index's build; the lock has the {p.variant} build"
    return ""


def _container(env: Environment, facts: HostFacts, tools: Mapping[str, bool]) -> list[Finding]:
    if env.accelerator != "cuda" or facts.container or not tools.get("docker"):
        return []
    if tools.get("nvidia-ctk") or tools.get("nvidia-container-runtime"):
        return [Finding(level="ok", check="container", message="Docker and the NVIDIA container toolkit are installed")]
    if facts.windows_driver:
        return [Finding(level="warn", check="container",
                        message=f"Docker is installed but the NVIDIA container toolkit is not: on {facts.platform} "
                                f"GPU containers run under Docker Desktop with the WSL2 backend (`docker run "
                                f"{_run_flags(env)}`)",
                        fix="use Docker Desktop with the WSL2 backend, or install nvidia-container-toolkit in the "
                            "WSL distro for a Docker Engine installed there")]
    return [Finding(level="fail", check="container",
                    message="Docker is installed but the NVIDIA container toolkit is not "
                            f"(no nvidia-ctk or nvidia-container-runtime on PATH): `docker run {_run_flags(env)}` "
                            "will fail",
                    fix="install nvidia-container-toolkit, then `sudo nvidia-ctk runtime configure --runtime=docker` "
                        "and restart Docker")]


# ---------------------------------------------------------------------------- a full lock's packages

# what `python -m venv` and virtualenv put in a venv they make: no extras but in a venv of sync's,
# which holds the lock's packages alone
_SEEDS = frozenset({"pip", "setuptools", "wheel"})


def looked_for(env: Environment, distributions: Mapping[str, str], python: Interpreter) -> dict[str, str]:
    """What a full lock's check compares, from every distribution (canonical name -> version) of
    the Python ``python``: all of them, or, in the Python envsolve runs in, the locked ones (the
    rest are envsolve's own)."""
    if not python.own:
        return dict(distributions)
    locked = {canonical_name(p.name) for p in env.packages}
    return {n: v for n, v in distributions.items() if n in locked}


def _locked_packages(env: Environment, installed: Mapping[str, str], python: Interpreter) -> list[Finding]:
    """Every package of a full lock's environment against what ``python`` has installed: each one
    missing or at another version (a failure), each one installed that the lock does not hold (a
    warning; not looked for in the Python envsolve runs in), and the Python's own minor."""
    locked = {canonical_name(p.name): p for p in env.packages}
    asked = [p for p in env.packages if p.direct]
    if python.own and asked and not any(canonical_name(p.name) in installed for p in asked):
        return [Finding(level="warn", check="package",
                        message=f"none of the packages environment '{env.name}' asks for "
                                f"({', '.join(sorted(p.name for p in asked))}) is installed in the Python envsolve "
                                "runs in; checked the machine only",
                        fix="`envsolve sync` makes the lock's venv beside it, which `envsolve doctor` then checks "
                            "(or pass --python PATH)")]
    wrong = [_missing_package(p, python) if n not in installed else _other_version(p, installed[n], python)
             for n, p in sorted(locked.items()) if n not in installed or not same_version(installed[n], p.version)]
    ok = [] if wrong else [Finding(level="ok", check="package",
                                   message=f"all {len(locked)} locked packages are installed at the locked versions")]
    return [*_python_minor(env, python), *wrong, *ok, *_extras(locked, installed, python)]


def _python_minor(env: Environment, python: Interpreter) -> list[Finding]:
    """The checked Python's minor against the environment's: its wheels are built for that one."""
    minor = ".".join(python.version.split(".")[:2])
    if not python.version or not env.python or minor == env.python:
        return []
    fix = (f"`envsolve sync` makes the venv again with Python {env.python}" if python.marker else
           f"check a Python {env.python} (--python PATH), or make the lock's venv with `envsolve sync`")
    return [Finding(level="fail", check="package",
                    message=f"{python.path or 'this Python'} is Python {python.version}; environment '{env.name}' "
                            f"was locked for Python {env.python}", fix=fix)]


# the fix in a venv sync made: it puts the lock back
_SYNC = "`envsolve sync` installs the lock's versions and removes what the lock does not hold"


def _pip(python: Interpreter) -> str:
    """pip of the Python checked: ``'/p/.venv/bin/python' -m pip``, a bare ``pip`` only for envsolve's own."""
    return "pip" if python.own or not python.path else f"{shlex.quote(python.path)} -m pip"


def _missing_package(p: Package, python: Interpreter) -> Finding:
    return Finding(level="fail", check="package", message=f"{p.name} {p.version} is locked but not installed",
                   fix=_SYNC if python.marker else _install(p, python))


def _other_version(p: Package, have: str, python: Interpreter) -> Finding:
    """A locked package installed at another version, or another build of the locked release
    (another local label: ``+cpu`` where the lock has ``+cu128``)."""
    try:
        build = Version(have).public == Version(p.version).public
    except InvalidVersion:
        build = False
    also = " (another build of the same release)" if build else ""
    return Finding(level="fail", check="package",
                   message=f"{p.name} {have} is installed; the lock has {p.version}{also}",
                   fix=_SYNC if python.marker else _install(p, python))


def _extras(locked: Mapping[str, Package], installed: Mapping[str, str], python: Interpreter) -> list[Finding]:
    """Each distribution installed that the lock does not hold (a venv's own pip, setuptools and
    wheel only in a venv of sync's); in the Python envsolve runs in, a line that they were not looked for."""
    if python.own:
        return [Finding(level="ok", check="package",
                        message="packages the lock does not hold are not looked for in the Python envsolve runs in "
                                "(it holds envsolve and its dependencies); pass --python or sync a venv to check one "
                                "exactly")]
    extra = sorted(n for n in installed if n not in locked)
    seeds = [] if python.marker else [n for n in extra if n in _SEEDS]
    named = [Finding(level="warn", check="package", message=f"{n} {installed[n]} is installed but not in the lock",
                     fix=_SYNC if python.marker else f"{_pip(python)} uninstall -y {n}")
             for n in extra if n not in seeds]
    left = [Finding(level="ok", check="package",
                    message=f"{' and '.join(f'{n} {installed[n]}' for n in seeds)}: the tools this venv was made with, "
                            "not counted as extras")] if seeds else []
    return named + left
