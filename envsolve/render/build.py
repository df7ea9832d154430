"""`envsolve build`: the rendered images built by the container engine on this machine, and their
smoke test run. The only module that runs a container engine.

The engine is Docker with BuildKit (``docker buildx``) when its daemon answers, else podman, else
buildah. pip's settings reach a build only as BuildKit secrets (``pip.conf``, ``netrc``,
``ca.pem``; the rendered Dockerfile mounts them), never in a layer: the index URL pip is
configured with and its certificate bundle, so a build works behind a private mirror or a
TLS-intercepting proxy as the host does. The ``netrc`` secret is the user's netrc plus the
logins taken out of the spec's URLs (:attr:`BuildOptions.credentials`; the lock holds none), as
:func:`envsolve.config.netrc_text` writes it, in the private folder removed after the build.
A CPU image's smoke test runs at build time (its
``smoke`` stage); a GPU image's runs in a container with the GPUs, as :func:`envsolve.domain.gpu_run_flags`
says (``--gpus all`` for NVIDIA, ``--runtime nvidia`` on a Jetson, ``/dev/kfd`` and ``/dev/dri`` for AMD).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

from .. import scratch
from ..config import Credential
from ..domain import Accelerator, gpu_run_flags, image_problem
from ..errors import EnvsolveError
from ..lock.model import Environment, Lock
from ..voice import silent

__all__ = ["PRINT_NOTE", "BuildError", "BuildOptions", "BuildPlan", "Built", "Engine", "build_all", "buildable",
           "commands", "engine_to_print", "failure", "find_engine", "image_tag", "pip_secrets", "plan", "build_image",
           "summary"]

ENGINES = ("docker", "podman", "buildah")
_STEP = re.compile(r"^(STEP \d+/\d+: .*|#\d+ \[[^\]]+\] .*)$")  # podman/buildah, BuildKit
# What `envsolve build --print` says before the commands.
PRINT_NOTE = ("# pip's settings reach a build as secrets: add --secret=id=pip.conf,src=FILE "
              "(and id=netrc, id=ca.pem) where a mirror or a proxy's CA needs them")


class BuildError(EnvsolveError):
    """No engine, an engine that refused, or a failing build step."""

    exit_code = 1


class Engine(msgspec.Struct, frozen=True, kw_only=True):
    name: str  # docker | podman | buildah
    path: str


@dataclass(frozen=True, kw_only=True, slots=True)
class BuildOptions:
    """What `envsolve build` was asked for, the same for every environment."""

    root: Path  # the rendered build contexts, one folder per environment
    tag: str | None = None  # --tag: image name[:tag]
    platform: str = ""
    smoke: bool = False
    push: bool = False
    # the logins of the spec's URLs (envsolve.spec.url_credentials), for the netrc secret
    credentials: tuple[Credential, ...] = field(default=(), repr=False)


class BuildPlan(msgspec.Struct, frozen=True, kw_only=True):
    """The commands that build (and check) one environment's image."""

    environment: str
    tag: str
    context: Path
    build: tuple[str, ...]
    smoke: tuple[str, ...] = ()  # a second build of the smoke stage (CPU) or a run with the GPUs
    push: tuple[str, ...] = ()


class Built(msgspec.Struct, frozen=True, kw_only=True):
    environment: str
    tag: str
    digest: str
    size_mb: float
    seconds: float
    smoke: str  # passed | failed | not run


def _answers(argv: Sequence[str]) -> bool:
    try:
        return subprocess.run(argv, capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_engine(wanted: str | None = None, path: str | None = None,
                answers: Callable[[Sequence[str]], bool] = _answers) -> Engine:
    """The engine to build with: ``wanted``, else the first of Docker (BuildKit and a daemon that
    answers), podman, buildah found on ``path``."""
    refused = []
    for name in [wanted] if wanted else ENGINES:
        exe = shutil.which(name, path=path)
        if exe is not None and _usable(name, exe, answers):
            return Engine(name=name, path=exe)
        refused += ["docker (no BuildKit, or no daemon answering)"] if exe is not None else []
    seen = f" (found: {', '.join(refused)})" if refused else ""
    raise BuildError(f"no container engine to build with: {wanted or ', '.join(ENGINES)} not usable here{seen}",
                     tip="install Docker with BuildKit (docker buildx) and start its daemon, or podman; "
                         "`envsolve build --print` shows the commands to run elsewhere")


def _usable(name: str, exe: str, answers: Callable[[Sequence[str]], bool]) -> bool:
    """Whether an engine found on PATH builds: Docker needs BuildKit and a daemon that answers."""
    return name != "docker" or (answers([exe, "buildx", "version"]) and answers([exe, "info"]))


def pip_secrets(environ: Mapping[str, str], folder: Path, credentials: Sequence[Credential] = ()
                ) -> dict[str, Path]:
    """The BuildKit secrets that carry this machine's pip settings into a build: ``pip.conf``
    (the configured index, pointed at the secret CA bundle), ``ca.pem`` (pip's certificate bundle)
    and ``netrc`` (``credentials`` with the user's netrc, ``NETRC`` or ``~/.netrc``), each only where
    there is one. Files go under ``folder``, a private folder removed after the build."""
    from ..config import pip_config, user_netrc, write_netrc

    cfg = pip_config(environ)
    ca = _ca_bundle(cfg.get("cert") or environ.get("REQUESTS_CA_BUNDLE") or environ.get("SSL_CERT_FILE") or "")
    found = {"ca.pem": ca, "pip.conf": _pip_conf(cfg.get("index-url", ""), ca is not None, folder),
             "netrc": write_netrc(credentials, folder, environ) or user_netrc(environ)}
    return {name: path for name, path in found.items() if path is not None}


def _ca_bundle(cert: str) -> Path | None:
    return Path(cert) if cert and Path(cert).is_file() else None


def _pip_conf(index_url: str, ca: bool, folder: Path) -> Path | None:
    """A pip.conf with the host's index and the secret CA bundle (None when there is neither)."""
    lines = [f"index-url = {index_url}"] if index_url else []
    lines += ["cert = /run/secrets/ca.pem"] if ca else []
    if not lines:
        return None
    conf = folder / "pip.conf"
    conf.write_text("[global]\n" + "\n".join(lines) + "\n", encoding="utf-8")
    conf.chmod(0o600)
    return conf


# an option and, after a space, its value (``--gpus all``; not ``--device=/dev/kfd --device=...``)
_OPTION_VALUE = re.compile(r"(--[\w-]+) (?=[^-])")
# engine -> the arguments after its path that build an image (podman and buildah: Docker's image
# format, since OCI images drop SHELL, which the Dockerfile sets)
_BUILD = {"docker": ("buildx", "build", "--load"), "podman": ("build", "--format=docker"),
          "buildah": ("bud", "--format=docker")}


def plan(engine: Engine, *, environment: str, accelerator: Accelerator, context: Path, tag: str,
         secrets: Mapping[str, Path], platform: str = "", smoke: bool = False, push: bool = False,
         jetson: bool = False) -> BuildPlan:
    """The engine commands for one environment (pure: nothing runs)."""
    head = _build_head(engine, secrets, platform)
    build = (*head, "--target=runtime", f"--tag={tag}", str(context))
    check = _smoke(engine, head, accelerator=accelerator, jetson=jetson, tag=tag, context=context) if smoke else ()
    pusher = (engine.path, "push", tag) if push else ()
    return BuildPlan(environment=environment, tag=tag, context=context, build=build, smoke=check, push=pusher)


def _build_head(engine: Engine, secrets: Mapping[str, Path], platform: str) -> list[str]:
    """The build command up to its target: the engine, the secrets, the platform."""
    head = [engine.path, *_BUILD[engine.name]]
    head += [f"--secret=id={name},src={src}" for name, src in sorted(secrets.items())]
    head += [f"--platform={platform}"] if platform else []
    return head


def _smoke(engine: Engine, head: list[str], *, accelerator: Accelerator, jetson: bool, tag: str,
           context: Path) -> tuple[str, ...]:
    """A CPU image's smoke stage, built; a GPU image's smoke test, run with the GPUs (buildah
    runs no containers: nothing)."""
    if accelerator == "cpu":
        return (*head, "--target=smoke", f"--tag={tag}-smoke", str(context))
    if engine.name == "buildah":
        return ()
    return (engine.path, "run", "--rm", *_gpu_args(accelerator, jetson), tag, "python", "smoke_test.py")


def _gpu_args(accelerator: Accelerator, jetson: bool) -> list[str]:
    """domain.gpu_run_flags, each option with its value in one argument (``--gpus=all``), as the
    other engine arguments are written."""
    return _OPTION_VALUE.sub(r"\1=", " ".join(gpu_run_flags(accelerator, jetson=jetson))).split()


def image_tag(lock: Lock, environment: str, tag: str | None, several: bool) -> str:
    """The image of ``environment``: ``tag``, with ``-ENVIRONMENT`` after its name when the lock
    builds several; by default PROJECT-ENVIRONMENT:<lock digest>."""
    if tag is None:
        return f"{lock.project}-{environment}:{lock.lock_digest.removeprefix('sha256:')[:12]}".lower()
    if not several:
        return tag
    repo, _, version = tag.rpartition(":") if ":" in tag.rsplit("/", 1)[-1] else (tag, "", "")
    return f"{repo}-{environment}" + (f":{version}" if version else "")


def buildable(lock: Lock, target: str | None, warn: Callable[[str], None] = silent) -> list[Environment]:
    """The environments of ``lock`` (or ``target``) that have an image to build: the Linux ones
    (containers run Linux). A Windows or macOS one is left out, ``warn`` saying why; refused (exit 2)
    when nothing is left to build."""
    from .artifacts import containerised, no_dockerfile

    envs = [e for e in lock.environments if target in (None, e.name)]
    hosts = [e for e in envs if not containerised(e)]
    if envs and len(hosts) == len(envs):
        raise EnvsolveError(f"environment {hosts[0].name!r} has no image to build: {no_dockerfile(hosts[0])}",
                            tip="`envsolve render` writes its requirements files and a README.md that says how to "
                                "install them on its host; `envsolve build` builds Linux and WSL2 targets")
    for e in hosts:
        warn(f"WARNING: environment {e.name!r} is not built: {no_dockerfile(e)}")
    return [e for e in envs if containerised(e)]


def plans(engine: Engine, lock: Lock, envs: Sequence[Environment], options: BuildOptions,
          secrets: Mapping[str, Path]) -> list[BuildPlan]:
    """The plan of each environment in ``envs``."""
    return [plan(engine, environment=e.name, accelerator=e.accelerator, jetson=bool(e.jetpack),
                 context=_context(options.root, e.name), tag=_tag(image_tag(lock, e.name, options.tag, len(envs) > 1)),
                 secrets=secrets, platform=options.platform, smoke=options.smoke, push=options.push)
            for e in envs]


def _context(root: Path, environment: str) -> Path:
    """The build context of ``environment``: its folder, refused (exit 2) unless inside ``root``
    once its links are followed (:func:`envsolve.files.under`, the rule render writes by)."""
    from ..files import under

    return under(root, environment, "-o")


def _tag(tag: str) -> str:
    """An image tag that reaches the engine's command line: an image reference (exit 2 if not)."""
    if (why := image_problem(tag, digest=False)) is not None:
        raise EnvsolveError(f"image tag: {why}", tip="pass --tag NAME[:TAG], e.g. --tag ghcr.io/org/app:1.0")
    return tag


def engine_to_print(wanted: str | None) -> Engine:
    """The engine whose commands `--print` shows: the one this machine would use, else ``wanted``
    (or docker) by name."""
    try:
        return find_engine(wanted)
    except BuildError:
        name = wanted or "docker"
        return Engine(name=name, path=name)


def commands(engine: Engine, lock: Lock, envs: Sequence[Environment], options: BuildOptions) -> list[tuple[str, ...]]:
    """Every command that builds, checks and pushes ``envs`` (pip's settings left out)."""
    return [argv for p in plans(engine, lock, envs, options, {}) for argv in (p.build, p.smoke, p.push) if argv]


class _Outcome(msgspec.Struct, frozen=True):
    status: int
    steps: tuple[str, ...]  # the step lines the engine printed
    tail: tuple[str, ...]  # its last lines


def _stream(argv: Sequence[str], echo: Callable[[str], None]) -> _Outcome:
    """Run ``argv``, echoing its output line by line."""
    try:
        proc = scratch.popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    except OSError as e:
        raise BuildError(f"could not start {argv[0]}: {e.strerror or e}") from None
    steps: list[str] = []
    tail: list[str] = []
    with proc:  # the engine reads the secrets: it ends with envsolve
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            echo(line)
            if _STEP.match(line):
                steps.append(line)
            if line.strip():
                tail = (tail + [line])[-20:]
        status = proc.wait()
    return _Outcome(status, tuple(steps), tuple(tail))


def _failure(what: str, out: _Outcome) -> BuildError:
    step = out.steps[-1] if out.steps else "before the first step"
    last = out.tail[-1] if out.tail else ""
    denied = re.search(r"permission denied.*(docker\.sock|socket)", " ".join(out.tail), re.I)
    return BuildError(f"{what} failed (exit {out.status}) at {step}" + (f"\n  last output: {last}" if last else ""),
                      tip=("add your user to the docker group, or use podman" if denied else
                           "the engine's output above shows the failing step in full"))


def _inspect(engine: Engine, tag: str) -> tuple[str, float]:
    fmt = "{{.Id}} {{.Size}}"
    argv = [engine.path, "image", "inspect", "--format", fmt, tag] if engine.name != "buildah" else \
        [engine.path, "inspect", "--type=image", "--format", "{{.FromImageID}} 0", tag]
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.split()
    except (OSError, subprocess.TimeoutExpired):
        return "", 0.0
    if len(out) < 2:
        return "", 0.0
    try:
        size = float(out[1]) / 1e6
    except ValueError:
        size = 0.0
    return out[0], size




def build_image(engine: Engine, p: BuildPlan, echo: Callable[[str], None],
                step: Callable[[str], None] = silent) -> Built:
    """Build, smoke-test and push as planned, saying each ``step`` as it starts; raise
    :class:`BuildError` naming the failing step."""
    t0 = time.perf_counter()
    step("build")
    out = _stream(p.build, echo)
    if out.status != 0:
        raise _failure(f"building the image of environment '{p.environment}'", out)
    seconds = time.perf_counter() - t0
    smoke = "not run"
    if p.smoke:
        step("smoke test")
        out = _stream(p.smoke, echo)
        if out.status != 0:
            raise _failure(f"the smoke test of environment '{p.environment}'", out)
        smoke = "passed"
    if p.push:
        step("push")
        if (out := _stream(p.push, echo)).status != 0:
            raise _failure(f"pushing {p.tag}", out)
    digest, size = _inspect(engine, p.tag)
    return Built(environment=p.environment, tag=p.tag, digest=digest, size_mb=size, seconds=seconds, smoke=smoke)


# One environment's plan and what came of it.
BuildResult = tuple[BuildPlan, Built | BuildError]


def build_all(engine: Engine, lock: Lock, envs: Sequence[Environment], options: BuildOptions,
              echo: Callable[[str], None], environ: Mapping[str, str] = os.environ,
              progress: Callable[[str], None] = silent) -> list[BuildResult]:
    """Build every environment of ``envs`` (each is tried; a failure does not stop the others),
    with this machine's pip settings as secrets; ``progress`` hears which environment and which
    step (build, smoke test, push) runs now."""
    with scratch.private_folder("build") as folder:  # the secrets: removed on exit and on a signal
        secrets = pip_secrets(environ, folder, options.credentials)
        planned = plans(engine, lock, envs, options, secrets)
        return [(p, _attempt(engine, p, echo, _stepper(progress, p, k, len(planned))))
                for k, p in enumerate(planned, 1)]


def _stepper(progress: Callable[[str], None], p: BuildPlan, k: int, n: int) -> Callable[[str], None]:
    """What ``progress`` says at each step of environment ``k`` of ``n``."""
    return lambda step: progress(f"environment {p.environment} ({k} of {n}): {step} of {p.tag}")


def _attempt(engine: Engine, p: BuildPlan, echo: Callable[[str], None],
             step: Callable[[str], None] = silent) -> Built | BuildError:
    echo(f"building {p.tag} with {engine.name} from {p.context}")
    try:
        return build_image(engine, p, echo, step)
    except BuildError as err:
        return err


def summary(results: Sequence[BuildResult]) -> str:
    """The Markdown table of what was built: image, digest, size, seconds and smoke result."""
    rows = [_row(p, b) for p, b in results]
    return "| environment | image | digest | size | seconds | smoke |\n|---|---|---|---|---|---|\n" + "\n".join(rows)


def _row(p: BuildPlan, b: Built | BuildError) -> str:
    if isinstance(b, BuildError):
        return f"| {p.environment} | {p.tag} | | | | failed |"
    return f"| {b.environment} | {b.tag} | {b.digest[:19] or '?'} | {b.size_mb:.0f} MB | {b.seconds:.0f} | {b.smoke} |"


def failure(results: Sequence[BuildResult]) -> BuildError | None:
    """The one error that tells every failed build (None when all were built)."""
    errors = [b for _, b in results if isinstance(b, BuildError)]
    if len(errors) > 1:
        told = "\n  ".join(e.message for e in errors)
        return BuildError(f"{len(errors)} of {len(results)} images failed:\n  {told}",
                          tip="the engine's output above shows each failing step in full")
    return errors[0] if errors else None
