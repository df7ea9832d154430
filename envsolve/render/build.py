"""`envsolve build`: the rendered images built by the container engine on this machine, and their
smoke test run. The only module that runs a container engine.

The engine is Docker with BuildKit (``docker buildx``) when its daemon answers, else podman, else
buildah. pip's settings reach a build only as BuildKit secrets (``pip.conf``, ``netrc``,
``ca.pem``; the rendered Dockerfile mounts them), never in a layer: the index URL pip is
configured with and its certificate bundle, so a build works behind a private mirror or a
TLS-intercepting proxy as the host does. A CPU image's smoke test runs at build time (its
``smoke`` stage); a GPU image's runs in a container with the GPUs (``--gpus all`` for NVIDIA,
``/dev/kfd`` and ``/dev/dri`` for AMD).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import EnvsolveError

__all__ = ["BuildError", "Built", "Engine", "Plan", "find_engine", "pip_secrets", "plan", "run"]

ENGINES = ("docker", "podman", "buildah")
_STEP = re.compile(r"^(STEP \d+/\d+: .*|#\d+ \[[^\]]+\] .*)$")  # podman/buildah, BuildKit


class BuildError(EnvsolveError):
    """No engine, an engine that refused, or a failing build step."""

    exit_code = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class Engine:
    name: str  # docker | podman | buildah
    path: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Plan:
    """The commands that build (and check) one environment's image."""

    environment: str
    tag: str
    build: tuple[str, ...]
    smoke: tuple[str, ...] = ()  # a second build of the smoke stage (CPU) or a run with the GPUs
    push: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Built:
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
    found = []
    for name in ([wanted] if wanted else ENGINES):
        exe = shutil.which(name, path=path)
        if exe is None:
            continue
        if name == "docker" and not (answers([exe, "buildx", "version"]) and answers([exe, "info"])):
            found.append("docker (no BuildKit, or no daemon answering)")
            continue
        return Engine(name=name, path=exe)
    seen = f" (found: {', '.join(found)})" if found else ""
    raise BuildError(f"no container engine to build with: {wanted or ', '.join(ENGINES)} not usable here{seen}",
                     tip="install Docker with BuildKit (docker buildx) and start its daemon, or podman; "
                         "`envsolve build --print` shows the commands to run elsewhere")


def pip_secrets(environ: Mapping[str, str], folder: Path) -> dict[str, Path]:
    """The BuildKit secrets that carry this machine's pip settings into a build: ``pip.conf``
    (the configured index, pointed at the secret CA bundle), ``ca.pem`` (pip's certificate bundle)
    and ``netrc`` (``~/.netrc``), each only where the host has one. Files go under ``folder``."""
    from ..config import pip_config

    cfg = pip_config(environ)
    secrets: dict[str, Path] = {}
    cert = cfg.get("cert") or environ.get("REQUESTS_CA_BUNDLE") or environ.get("SSL_CERT_FILE") or ""
    if cert and Path(cert).is_file():
        secrets["ca.pem"] = Path(cert)
    lines = []
    if cfg.get("index-url"):
        lines.append(f"index-url = {cfg['index-url']}")
    if "ca.pem" in secrets:
        lines.append("cert = /run/secrets/ca.pem")
    if lines:
        conf = folder / "pip.conf"
        conf.write_text("[global]\n" + "\n".join(lines) + "\n", encoding="utf-8")
        conf.chmod(0o600)
        secrets["pip.conf"] = conf
    netrc = Path(environ.get("HOME") or Path.home()) / ".netrc"
    if netrc.is_file():
        secrets["netrc"] = netrc
    return secrets


def plan(engine: Engine, *, environment: str, accelerator: str, context: Path, tag: str,
         secrets: Mapping[str, Path], platform: str = "", smoke: bool = False, push: bool = False) -> Plan:
    """The engine commands for one environment (pure: nothing runs)."""
    exe = engine.path
    head = [exe, "buildx", "build", "--load"] if engine.name == "docker" else [exe, "build"]
    if engine.name == "podman":
        head.append("--format=docker")  # OCI images drop SHELL, which the Dockerfile sets
    if engine.name == "buildah":
        head = [exe, "bud", "--format=docker"]
    for name, src in sorted(secrets.items()):
        head.append(f"--secret=id={name},src={src}")
    if platform:
        head.append(f"--platform={platform}")
    build = (*head, "--target=runtime", f"--tag={tag}", str(context))
    check: tuple[str, ...] = ()
    if smoke and accelerator == "cpu":
        check = (*head, "--target=smoke", f"--tag={tag}-smoke", str(context))
    elif smoke and engine.name != "buildah":
        devices = ["--gpus=all"] if accelerator == "cuda" else ["--device=/dev/kfd", "--device=/dev/dri",
                                                                "--group-add=video", "--group-add=render"]
        check = (exe, "run", "--rm", *devices, tag, "python", "smoke_test.py")
    pusher = (exe, "push", tag) if push else ()
    return Plan(environment=environment, tag=tag, build=build, smoke=check, push=pusher)


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: int
    steps: tuple[str, ...]  # the step lines the engine printed
    tail: tuple[str, ...]  # its last lines


def _stream(argv: Sequence[str], echo: Callable[[str], None]) -> _Outcome:
    """Run ``argv``, echoing its output line by line."""
    try:
        proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                errors="replace")
    except OSError as e:
        raise BuildError(f"could not start {argv[0]}: {e.strerror or e}") from None
    steps: list[str] = []
    tail: list[str] = []
    assert proc.stdout is not None
    for raw in proc.stdout:
        line = raw.rstrip("\n")
        echo(line)
        if _STEP.match(line):
            steps.append(line)
        if line.strip():
            tail = (tail + [line])[-20:]
    return _Outcome(proc.wait(), tuple(steps), tuple(tail))


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


def run(engine: Engine, p: Plan, echo: Callable[[str], None]) -> Built:
    """Build, smoke-test and push as planned; raise :class:`BuildError` naming the failing step."""
    t0 = time.perf_counter()
    out = _stream(p.build, echo)
    if out.status != 0:
        raise _failure(f"building the image of environment '{p.environment}'", out)
    seconds = time.perf_counter() - t0
    smoke = "not run"
    if p.smoke:
        out = _stream(p.smoke, echo)
        if out.status != 0:
            raise _failure(f"the smoke test of environment '{p.environment}'", out)
        smoke = "passed"
    if p.push and (out := _stream(p.push, echo)).status != 0:
        raise _failure(f"pushing {p.tag}", out)
    digest, size = _inspect(engine, p.tag)
    return Built(environment=p.environment, tag=p.tag, digest=digest, size_mb=size, seconds=seconds, smoke=smoke)


def secrets_folder() -> tempfile.TemporaryDirectory[str]:
    """A private folder for the generated pip.conf secret (removed after the build)."""
    d = tempfile.TemporaryDirectory(prefix="envsolve-build-")
    os.chmod(d.name, 0o700)
    return d
