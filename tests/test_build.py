"""`envsolve build`: engine choice, commands, and real image builds with podman (marker
``container``; `.ci/run` installs podman, so in CI these never skip).

No container registry is reachable here, so the tests make a stand-in for a base image that
cannot be pulled: a Debian root filesystem (debootstrap, as apt is configured) with the Python the
lock asks for, imported under the name the Dockerfile's FROM uses. That is test scaffolding only:
envsolve itself never fakes a base image. This machine's podman also needs the cgroupfs manager
and chroot isolation (set through CONTAINERS_CONF and BUILDAH_ISOLATION below).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.domain import qualified_image
from envsolve.render import build as builder

HERE = Path(__file__).parent


def _fake_tool(folder: Path, name: str, status: int) -> None:
    exe = folder / name
    exe.write_text(f"#!/bin/sh\nexit {status}\n")
    exe.chmod(0o755)


def test_engine_choice_prefers_docker_with_a_daemon_then_podman(tmp_path: Path) -> None:
    _fake_tool(tmp_path, "docker", 1)  # a client without a daemon
    _fake_tool(tmp_path, "podman", 0)
    assert builder.find_engine(path=str(tmp_path)).name == "podman"
    (tmp_path / "docker").unlink()
    _fake_tool(tmp_path, "docker", 0)
    assert builder.find_engine(path=str(tmp_path)).name == "docker"
    with pytest.raises(builder.BuildError, match="no container engine to build with: buildah not usable here"):
        builder.find_engine("buildah", path=str(tmp_path))


def test_no_engine_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "p"\n[packages]\npip = ["six"]\n')
    assert CliRunner().invoke(main, ["lock", str(spec)]).exit_code == 0
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    r = CliRunner().invoke(main, ["build", str(tmp_path / "envsolve.lock")])
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "ERROR: no container engine to build with: docker, podman, buildah not usable here" in r.output
    assert "TIP: install Docker with BuildKit" in r.output


def test_print_shows_the_commands_for_cpu_and_gpu_images(tmp_path: Path) -> None:
    lock = tmp_path / "envsolve.lock"
    lock.write_bytes((HERE / "cases" / "fleet-three-targets" / "expected.lock").read_bytes())
    r = CliRunner().invoke(main, ["build", str(lock), "--engine", "docker", "--smoke", "--print", "--tag",
                                  "registry.example/ml:1"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    ci = next(ln for ln in lines if "--target=smoke" in ln)  # the CPU image tests itself at build time
    assert ci.endswith("--target=smoke --tag=registry.example/ml-ci:1-smoke " + str(tmp_path / "envsolve-out" / "ci"))
    assert any(ln.endswith("run --rm --gpus=all registry.example/ml-default:1 python smoke_test.py") for ln in lines)
    assert any("--device=/dev/kfd --device=/dev/dri" in ln for ln in lines)
    assert all("buildx build --load" in ln for ln in lines if "--target=" in ln)


def test_a_jetson_image_is_smoke_tested_with_the_nvidia_runtime(tmp_path: Path) -> None:
    """A Jetson's integrated GPU is reached through the NVIDIA container runtime, not --gpus, as the
    rendered artifacts say (domain.gpu_run_flags)."""
    lock = tmp_path / "envsolve.lock"
    lock.write_bytes((HERE / "cases" / "jetson-agx-orin-jetpack6" / "expected.lock").read_bytes())
    r = CliRunner().invoke(main, ["build", str(lock), "--engine", "podman", "--smoke", "--print", "--tag", "jp:1"])
    assert r.exit_code == 0, r.output
    [smoke] = [ln for ln in r.output.splitlines() if " run --rm " in ln]
    assert smoke.endswith(" run --rm --runtime=nvidia jp:1 python smoke_test.py")
    assert "--runtime nvidia" in (tmp_path / "envsolve-out" / "default" / "Dockerfile").read_text()
    engine = builder.Engine(name="docker", path="docker")
    rocm = builder.plan(engine, environment="amd", accelerator="rocm", context=tmp_path, tag="t", secrets={}, smoke=True)
    assert rocm.smoke == ("docker", "run", "--rm", "--device=/dev/kfd", "--device=/dev/dri", "--group-add=video",
                          "--group-add=render", "t", "python", "smoke_test.py")


def test_pip_settings_reach_the_build_as_secrets_only(tmp_path: Path) -> None:
    conf = tmp_path / "user-pip.conf"
    ca = tmp_path / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    conf.write_text(f"[global]\nindex-url = https://bot:S3CRET@mirror.invalid/simple\ncert = {ca}\n")
    out = tmp_path / "secrets"
    out.mkdir()
    secrets = builder.pip_secrets({"PIP_CONFIG_FILE": str(conf), "HOME": str(tmp_path)}, out)
    assert secrets["ca.pem"] == ca
    assert secrets["pip.conf"].read_text() == ("[global]\nindex-url = https://bot:S3CRET@mirror.invalid/simple\n"
                                               "cert = /run/secrets/ca.pem\n")
    p = builder.plan(builder.Engine(name="podman", path="podman"), environment="default", accelerator="cpu",
                     context=tmp_path, tag="t", secrets=secrets)
    assert f"--secret=id=pip.conf,src={out / 'pip.conf'}" in p.build and "S3CRET" not in " ".join(p.build)


# ----------------------------------------------------------------------------- real builds

container = pytest.mark.container


@pytest.fixture(scope="session")
def podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """The environment under which podman builds on this machine."""
    if shutil.which("podman") is None or shutil.which("debootstrap") is None:
        if os.environ.get("CI"):
            pytest.fail("podman and debootstrap are needed for the container tests (.ci/run installs them)")
        pytest.skip("podman and debootstrap are not installed (`apt-get install podman debootstrap`; CI has them)")
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text('[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n')
    yield {"CONTAINERS_CONF": str(conf), "BUILDAH_ISOLATION": "chroot"}


@pytest.fixture
def built(podman: dict[str, str]) -> Iterator[list[str]]:
    """The image repositories a test builds (it adds them), removed after it: each run names its
    own, and a machine that runs the suite again and again kept about 2 GB a run until its disk
    was full."""
    repositories: list[str] = []
    yield repositories
    env = podman | dict(os.environ)
    listed = subprocess.run(["podman", "images", "--format", "{{.Repository}}:{{.Tag}}"], env=env,
                            capture_output=True, text=True).stdout.split()
    refs = [ref for ref in listed if ref.rsplit(":", 1)[0].removeprefix("localhost/") in repositories]
    if refs:
        subprocess.run(["podman", "rmi", "--force", *refs], env=env, capture_output=True)


@pytest.fixture(autouse=True)
def _real_indexes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Builds install from the index pip is configured with, not the tests' invalid stand-ins."""
    for name in [k for k in os.environ if k.startswith("ENVSOLVE_INDEX_")]:
        monkeypatch.delenv(name)


_ROOTFS: dict[str, Path] = {}


def _stand_in(ref: str, env: dict[str, str], tmp: Path) -> None:
    """Import a Debian bookworm root filesystem (Python 3.11) as ``ref`` unless it exists."""
    full = env | dict(os.environ)
    if subprocess.run(["podman", "image", "exists", ref], env=full).returncode == 0:
        return
    if "bookworm" not in _ROOTFS:
        root = tmp / "rootfs"
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv,ca-certificates",
                        "bookworm", str(root)], check=True, capture_output=True, timeout=900)
        _ROOTFS["bookworm"] = root
    tar = subprocess.Popen(["tar", "-C", str(_ROOTFS["bookworm"]), "-c", "."], stdout=subprocess.PIPE)
    subprocess.run(["podman", "import", "-", ref], stdin=tar.stdout, check=True, capture_output=True, env=full)
    tar.wait()


def _lock_and_build(tmp_path: Path, spec_text: str, env: dict[str, str], *args: str,
                    stand_ins: Path, full: bool = True) -> tuple[object, Path]:
    """Lock (in full: every package with hashes, from the real index, unless ``full`` is False),
    then build."""
    from envsolve.lock import model as lockfile

    spec = tmp_path / "project.toml"
    spec.write_text(spec_text)
    r = CliRunner().invoke(main, ["lock", str(spec)] + ([] if full else ["--frameworks-only"]),
                           env={"ENVSOLVE_FRAMEWORKS_ONLY": None})
    assert r.exit_code == 0, r.output
    lock = lockfile.read(tmp_path / "envsolve.lock")
    ref = lock.environments[0].base_image
    _stand_in(qualified_image(ref), env, stand_ins)  # the name the Dockerfile's FROM uses
    return CliRunner(env=env).invoke(main, ["build", str(tmp_path / "envsolve.lock"), *args]), tmp_path


@container
def test_a_jax_keras_image_builds_and_its_smoke_stage_passes(tmp_path: Path, podman: dict[str, str],
                                                             tmp_path_factory: pytest.TempPathFactory,
                                                             built: list[str]) -> None:
    name = f"jaxdemo{os.getpid()}"  # a new lock digest: no layer cached from an earlier run, so the smoke test runs
    built.append(f"{name}-default")
    spec = (f'[project]\nname = "{name}"\npython = "==3.11.*"\n[frameworks]\njax = "*"\n'
            'keras = { version = "*", backend = "jax" }\n')
    r, _ = _lock_and_build(tmp_path, spec, podman, "--smoke", stand_ins=tmp_path_factory.getbasetemp())
    assert r.exit_code == 0, r.output[-3000:]
    assert "--require-hashes --no-deps" in r.stderr  # the image installs exactly the full lock
    assert "PASS  matmul fp32: on CPU (jax)" in r.stderr
    assert "PASS  train keras: model.fit on the jax backend" in r.stderr
    row = r.stdout.splitlines()[-1]
    assert row.startswith(f"| default | {name}-default:") and row.endswith("| passed |")


@container
def test_a_pip_only_image_builds(tmp_path: Path, podman: dict[str, str],
                                 tmp_path_factory: pytest.TempPathFactory, built: list[str]) -> None:
    built.append("piponly")
    spec = f'[project]\nname = "piponly{os.getpid()}"\npython = "==3.11.*"\n[packages]\npip = ["six==1.16.0"]\napt = ["less"]\n'
    r, _ = _lock_and_build(tmp_path, spec, podman, "--tag", "piponly:test", stand_ins=tmp_path_factory.getbasetemp())
    assert r.exit_code == 0, r.output[-3000:]
    assert "Successfully installed six-1.16.0" in r.stderr
    assert r.stdout.splitlines()[-1].startswith("| default | piponly:test | ")


@container
def test_a_failing_build_is_one_clear_error_naming_the_step(tmp_path: Path, podman: dict[str, str],
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    spec = '[project]\nname = "broken"\npython = "==3.11.*"\n[packages]\npip = ["envsolve-no-such-package==0.0.1"]\n'
    r, _ = _lock_and_build(tmp_path, spec, podman, stand_ins=tmp_path_factory.getbasetemp(), full=False)
    assert r.exit_code == 1 and "Traceback" not in r.output
    err = r.stderr.split("\nERROR: building the image of environment 'default' failed (exit ", 1)[1]
    step = err.splitlines()[0]
    assert " at STEP " in step and "pip install" in step and "envsolve-no-such-package==0.0.1" in step
    assert r.stdout.splitlines()[-1].endswith("| failed |")  # the table still tells every environment


def test_build_says_which_environment_and_step_runs_with_verbose(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tools = tmp_path / "bin"
    tools.mkdir()
    podman = tools / "podman"
    podman.write_text('#!/bin/sh\necho "STEP 1/1: FROM base"\nexit 0\n')  # builds, runs and pushes anything
    podman.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    lock = tmp_path / "envsolve.lock"
    lock.write_bytes((HERE / "cases" / "fleet-three-targets" / "expected.lock").read_bytes())
    args = ["build", str(lock), "--engine", "podman", "--smoke", "--push", "--tag", "registry.example/ml:1"]
    plain = CliRunner().invoke(main, args)
    assert plain.exit_code == 0, plain.output
    assert "build: environment" not in plain.stderr  # stderr is no terminal: no progress lines
    r = CliRunner().invoke(main, [*args, "-v"])
    assert r.exit_code == 0, r.output
    assert f"lock: {lock}\n" in r.stderr and f"output folder: {tmp_path / 'envsolve-out'}\n" in r.stderr
    assert f"engine: podman ({podman})\n" in r.stderr
    steps = [ln for ln in r.stderr.splitlines() if ln.startswith("build: environment ")]
    assert steps[:3] == [f"build: environment default (1 of 3): {step} of registry.example/ml-default:1"
                         for step in ("build", "smoke test", "push")]
    assert len(steps) == 9 and steps[8].startswith("build: environment ") and " (3 of 3): push of " in steps[8]


# ----------------------------------------------------------------------------- Windows, macOS


def _host_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hardware: str, targets: str = "") -> Path:
    from tests.fakehosts import HOSTS, host_matrices

    monkeypatch.setenv("ENVSOLVE_MATRICES", str(host_matrices(tmp_path)))
    spec = tmp_path / "project.toml"
    spec.write_text(f'[project]\nname = "demo"\npython = "==3.12.*"\n[frameworks]\ntorch = "==2.7.1"\n'
                    f"[hardware]\n{HOSTS[hardware]}{targets}")
    assert CliRunner().invoke(main, ["lock", str(spec)]).exit_code == 0
    return tmp_path / "envsolve.lock"


def test_build_refuses_a_macos_or_windows_environment_and_writes_nothing(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    lock = _host_lock(tmp_path, monkeypatch, "darwin-mps")
    r = CliRunner().invoke(main, ["build", str(lock), "--engine", "docker", "--print"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert r.output.startswith("ERROR: environment 'default' has no image to build: no Dockerfile: containers run "
                               "Linux and this environment is for darwin/arm64; on macOS use its requirements files")
    assert "TIP: `envsolve render` writes its requirements files" in r.output
    assert not (tmp_path / "envsolve-out").exists()


def test_build_leaves_the_windows_target_of_a_fleet_out_and_says_so(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lock = _host_lock(tmp_path, monkeypatch, "wsl-cuda", '[targets.laptop]\nplatform = "windows/amd64"\nwsl = false\n')
    r = CliRunner().invoke(main, ["build", str(lock), "--engine", "docker", "--smoke", "--print"])
    assert r.exit_code == 0, r.output
    assert "WARNING: environment 'laptop' is not built: no Dockerfile: containers run Linux" in r.stderr
    commands = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    assert len(commands) == 2 and all("laptop" not in ln for ln in commands)  # the WSL2 image: build, smoke run
    assert commands[1].startswith("docker run --rm --gpus=all demo-default")
    bad = CliRunner().invoke(main, ["build", str(lock), "--platform", "windows/amd64", "--print"])
    assert bad.exit_code == 2 and "'windows/amd64' is not one of 'linux/amd64', 'linux/arm64'" in bad.output
