import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from msgspec.structs import replace

from envsolve.cli import main
from envsolve.host import detect as det
from envsolve.host.doctor import Finding, check, distributions, pick_environment
from envsolve.host.facts import GpuInfo, HostFacts
from envsolve.lock import model as lockfile
from envsolve.lock.model import Environment
from envsolve.provider import Provider
from tests.conftest import resolve
from tests.test_detect import _DETECT, HOSTS, host

H100_TORCH = '[frameworks]\ntorch = "==2.7.1"\n[hardware]\ngpus = ["H100"]\n'


def environment(text: str, graph: Provider) -> Environment:
    data = lockfile.build(project="p", spec_name="project.toml", spec_bytes=b"", data_version="", data_digest="",
                          resolutions=resolve(text, graph))
    return data.environments[0]


def by(findings: list[Finding], kind: str) -> list[tuple[str, str]]:
    return [(f.level, f.message) for f in findings if f.check == kind]


def test_driver_native_minor_version_or_too_old(real_graph: Provider) -> None:
    native_lock = environment(H100_TORCH, real_graph)  # CUDA 12.6, native (driver >= 560.28.03)
    assert (native_lock.cuda, native_lock.compat) == ("12.6", "native")
    [(level, msg)] = by(check(native_lock, host("h100", real_graph), real_graph, installed={}, tools={}), "driver")
    assert level == "warn" and msg.startswith("driver 535.129.03 runs CUDA 12.6 only by minor-version "
                                              "compatibility (>= 525.60.13), not natively (>= 560.28.03)")
    minor_lock = environment(H100_TORCH + 'driver = "535.129.03"\n', real_graph)
    assert by(check(minor_lock, host("h100", real_graph), real_graph, installed={}, tools={}), "driver") == [
        ("ok", "driver 535.129.03 runs CUDA 12.6 by minor-version compatibility (CUDA 12.x needs >= 525.60.13), "
               "as the lock expects")]
    assert by(check(native_lock, host("driver-only", real_graph), real_graph, installed={}, tools={}), "driver") == [
        ("ok", "driver 580.173.02 runs CUDA 12.6 natively (needs >= 560.28.03)")]
    old = check(native_lock, host("t4-driver460", real_graph), real_graph, installed={}, tools={})
    assert by(old, "driver") == [("fail", "driver 460.32.03 is too old for CUDA 12.6: it needs 560.28.03 (native) "
                                          "or 525.60.13 (minor-version compatibility)")]
    assert next(f.fix for f in old if f.check == "driver").startswith("upgrade the NVIDIA driver to >= 560.28.03")


CASES = Path(__file__).parent / "cases"


def test_the_driver_is_checked_against_the_locks_own_driver_min(real_graph: Provider) -> None:
    """nvidia-tensorflow's row raises the floor of CUDA 12.1 to 530.30.02 (native and minor-version
    alike): the solver refuses a 525 driver, and so does the doctor."""
    env = lockfile.read(CASES / "a100-tensorflow-1.15" / "expected.lock").environments[0]
    assert (env.cuda, env.driver_min, env.compat) == ("12.1", "530.30.02", "native")
    a100 = HostFacts(vendor="nvidia", driver="525.85.12", source="test",
                     gpus=(GpuInfo(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0"),))
    findings = check(env, a100, real_graph, installed={}, tools={})
    assert by(findings, "driver") == [
        ("fail", "driver 525.85.12 is too old for CUDA 12.1: it needs 530.30.02 (native); the lock's driver_min "
                 "530.30.02: nvidia-tensorflow 1.15.5+nv23.3 needs driver >= 530.30.02")]
    assert next(f.fix for f in findings if f.check == "driver").startswith("upgrade the NVIDIA driver to >= 530.30.02")
    newer = HostFacts(vendor="nvidia", driver="535.104.05", source="test", gpus=a100.gpus)
    assert by(check(env, newer, real_graph, installed={}, tools={}), "driver")[0][0] == "ok"


def test_a_gpu_newer_than_the_locked_cuda_raises_the_floor_as_in_the_lock(real_graph: Provider) -> None:
    """torch 1.8.1 (CUDA 11.1) on an RTX 4090: CUDA 11.1 alone runs on 455.23, but a driver that
    knows the 4090 is 520.61.05 or newer, and the lock says so."""
    env = lockfile.read(CASES / "rtx4090-torch-1.8.1" / "expected.lock").environments[0]
    assert (env.cuda, env.driver_min) == ("11.1", "520.61.05")
    rtx4090 = HostFacts(vendor="nvidia", driver="470.82.01", source="test",
                        gpus=(GpuInfo(index=0, name="NVIDIA GeForce RTX 4090", compute_capability="8.9"),))
    assert by(check(env, rtx4090, real_graph, installed={}, tools={}), "driver") == [
        ("fail", "driver 470.82.01 is too old for CUDA 11.1: it needs 520.61.05 (native); the lock's driver_min "
                 "520.61.05: the RTX 4090 (sm_89) needs a driver >= 520.61.05, the first that knows it")]


def test_a_jetson_lock_says_how_a_jetson_container_gets_its_gpu(real_graph: Provider) -> None:
    env = lockfile.read(CASES / "jetson-agx-orin-jetpack6" / "expected.lock").environments[0]
    inside = HostFacts(vendor="cpu", source="no GPU tool found", container=True, machine="aarch64")
    [fix] = [f.fix for f in check(env, inside, real_graph, installed={}, tools={}) if f.level == "fail"]
    assert fix == "start the container with `--runtime nvidia` (NVIDIA container toolkit)"
    board = HostFacts(vendor="nvidia", source="test", platform="jetson", machine="aarch64")
    [toolkit] = by(check(env, board, real_graph, installed={}, tools={"docker": True}), "container")
    assert toolkit[0] == "fail" and "`docker run --runtime nvidia` will fail" in toolkit[1]
    desktop = environment(H100_TORCH, real_graph)
    [fix] = [f.fix for f in check(desktop, replace(inside, machine=""), real_graph, installed={}, tools={}) if f.check == "host"
             and f.level == "fail"]
    assert fix == "start the container with `--gpus all` (NVIDIA container toolkit)"


def test_a_lock_of_another_platform_fails_on_this_host(real_graph: Provider) -> None:
    x86 = environment(H100_TORCH, real_graph)
    assert ("fail", "environment 'default' is built for linux/amd64, but this host is linux/arm64 (aarch64)") in by(
        check(x86, host("gh200", real_graph), real_graph, installed={}, tools={}), "host")
    arm = environment('[frameworks]\ntorch = "==2.11.0"\n[hardware]\ngpus = ["GH200"]\n', real_graph)
    assert arm.platform == "linux/arm64"
    assert [f for f in by(check(arm, host("gh200", real_graph), real_graph, installed={}, tools={}), "host")
            if f[0] == "fail"] == []


def test_a_jetson_is_checked_by_its_jetpack(real_graph: Provider) -> None:
    jp62 = environment('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["Jetson Orin NX"]\njetpack = "6.2"\n',
                       real_graph)
    board = host("jetson-orin-nx-jp62", real_graph)
    findings = check(jp62, board, real_graph, installed={}, tools={})
    assert by(findings, "driver") == [("ok", "JetPack 6.2 (L4T R36.4.3) brings CUDA 12.6, as the lock's JetPack 6.2 "
                                             "does")]
    assert by(findings, "host") == []  # no tool lists a Jetson's GPU: that is no failure
    jp60 = environment('[hardware]\ngpus = ["Jetson Orin NX"]\njetpack = "6.0"\n',
                       real_graph)
    [(level, msg)] = by(check(jp60, board, real_graph, installed={}, tools={}), "driver")
    assert level == "fail" and msg == ("this board runs JetPack 6.2 (L4T R36.4.3, CUDA 12.6); the environment was "
                                       "locked for JetPack 6.0 (CUDA 12.2)")


def test_each_gpu_against_the_locked_builds(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)
    assert by(check(lock, host("h100", real_graph), real_graph, installed={}, tools={}), "gpu") == [
        ("ok", "GPU 0 NVIDIA H100 80GB HBM3 (sm_90) is served by torch 2.7.1 (cu126)")]
    t4 = check(lock, host("t4-driver460", real_graph), real_graph, installed={}, tools={})
    assert by(t4, "gpu") == [("warn", "GPU 0 Tesla T4 (sm_75) is not among the lock's GPUs (sm_90), but the locked "
                                      "builds carry code for it (torch 2.7.1 (cu126))")]
    old = environment('[frameworks]\ntorch = "==2.5.1"\n[hardware]\ngpus = ["A100"]\n', real_graph)
    blackwell = host("no-gpu", real_graph, {"ENVSOLVE_GPUS": "RTX 5090", "ENVSOLVE_DRIVER": "570.86.15"})
    findings = check(old, blackwell, real_graph, installed={}, tools={})
    assert by(findings, "gpu") == [("fail", "GPU 0 RTX 5090 (sm_120) is not served by torch 2.5.1 (cu124): it "
                                            "carries code for sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90")]
    assert "add 'RTX 5090' to [hardware] gpus and re-lock" in next(f.fix for f in findings if f.check == "gpu")


def test_wrong_accelerator_or_no_gpu(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)
    assert by(check(lock, host("mi300x", real_graph), real_graph, installed={}, tools={}), "host") == [
        ("fail", "environment 'default' needs an NVIDIA GPU (CUDA 12.6) but this host has AMD GPUs")]
    only = by(check(lock, host("driver-only", real_graph), real_graph, installed={}, tools={}), "host")
    assert ("fail", "the NVIDIA driver is present (/proc/driver/nvidia/version) but no GPU is visible") in only
    amd = environment('[frameworks]\ntorch = "==2.7.1"\n[hardware]\ngpus = ["MI300X"]\n', real_graph)
    assert by(check(amd, host("mi300x", real_graph), real_graph, installed={}, tools={}), "gpu")[0][0] == "ok"


def test_installed_versions_and_variants(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)  # torch 2.7.1 cu126, the default index's build
    facts = host("h100", real_graph)

    def pkg(installed: dict[str, str]) -> list[tuple[str, str]]:
        return by(check(lock, facts, real_graph, installed=installed, tools={}), "package")

    assert pkg({"torch": "2.7.1"}) == [("ok", "torch 2.7.1 matches the lock")]
    assert pkg({"torch": "2.7.1+cu118"}) == [("fail", "torch 2.7.1+cu118 is the cu118 build; the lock has cu126")]
    assert pkg({"torch": "2.6.0"}) == [("fail", "torch 2.6.0 is installed; the lock has 2.7.1")]
    assert pkg({}) == [("warn", "none of the locked frameworks is installed in this Python; checked the machine only")]


def test_container_toolkit_when_docker_is_there(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)
    facts = host("h100", real_graph)
    missing = check(lock, facts, real_graph, installed={}, tools={"docker": True})
    assert by(missing, "container")[0][0] == "fail"
    assert by(check(lock, facts, real_graph, installed={}, tools={"docker": True, "nvidia-ctk": True}),
              "container") == [("ok", "Docker and the NVIDIA container toolkit are installed")]
    assert by(check(lock, facts, real_graph, installed={}, tools={}), "container") == []


def test_pick_environment_by_accelerator(real_graph: Provider) -> None:
    text = H100_TORCH + '[targets.amd]\ngpus = ["MI300X"]\n'
    data = lockfile.build(project="p", spec_name="project.toml", spec_bytes=b"", data_version="", data_digest="",
                          resolutions=resolve(text, real_graph))
    assert pick_environment(data, host("mi300x", real_graph)).name == "amd"  # type: ignore[union-attr]
    assert pick_environment(data, host("h100", real_graph)).name == "default"  # type: ignore[union-attr]
    assert pick_environment(data, host("h100", real_graph), "nope") is None


@pytest.fixture
def h100_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = HOSTS / "h100"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))
    monkeypatch.setattr(det, "docker_tools", lambda: {"docker": False})
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "==2.7.1"\n')
    assert CliRunner().invoke(main, ["lock", "--host", str(spec)]).exit_code == 0
    return tmp_path / "envsolve.lock"


def test_cli_doctor_passes_on_the_host_it_was_locked_for(h100_lock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(det, "installed_versions", lambda names, site=None: {"torch": "2.7.1"})
    r = CliRunner().invoke(main, ["doctor", str(h100_lock)])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[0] == (f"checking environment 'default' of {h100_lock} on this host "
                                        "(nvidia, from nvidia-smi --query-gpu)")
    assert "OK    driver: driver 535.129.03 runs CUDA 12.6 by minor-version compatibility" in r.stdout
    assert r.stdout.endswith("all checks passed (1 warning(s))\n")


def test_cli_doctor_exit_1_with_each_fix(h100_lock: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(det, "installed_versions", lambda names, site=None: {"torch": "2.7.1+cu118"})
    monkeypatch.setattr(det, "docker_tools", lambda: {"docker": True})
    r = CliRunner().invoke(main, ["doctor", str(h100_lock)])
    assert r.exit_code == 1
    assert "fail  package: torch 2.7.1+cu118 is the cu118 build; the lock has cu126\n" in r.stdout.lower()
    assert "      fix: install nvidia-container-toolkit" in r.stdout
    assert r.stderr == ("ERROR: 2 check(s) failed, 1 warning(s)\n"
                        "TIP: apply the fixes above, then run `envsolve doctor` again\n")
    r = CliRunner().invoke(main, ["doctor", str(h100_lock), "--target", "gpu"])
    assert r.exit_code == 2 and "has no environment 'gpu' (it has: default)" in r.stderr
    assert CliRunner().invoke(main, ["doctor", str(h100_lock.parent / "missing.lock")]).exit_code == 2


CUPY_12 = '[frameworks]\ncupy = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "535.129.03"\n'


def test_the_distributions_looked_for_are_the_datas_of_each_locked_framework(real_graph: Provider) -> None:
    """cupy's builds name cupy-cuda11x/12x/13x; tensorflow's tensorflow-cpu, -gpu, -rocm and nvidia-tensorflow;
    torch has one distribution."""
    cupy = environment(CUPY_12, real_graph)
    assert [p.name for p in cupy.frameworks] == ["cupy-cuda12x"]
    assert distributions(cupy, real_graph) == ["cupy", "cupy-cuda11x", "cupy-cuda12x", "cupy-cuda13x"]
    cpu_tf = environment('[frameworks]\ntensorflow = "*"\n[hardware]\nvendor = "cpu"\n', real_graph)
    assert distributions(cpu_tf, real_graph) == ["nvidia-tensorflow", "tensorflow", "tensorflow-cpu",
                                                 "tensorflow-gpu", "tensorflow-macos", "tensorflow-rocm"]
    assert distributions(environment(H100_TORCH, real_graph), real_graph) == ["torch"]


def test_another_distribution_of_a_locked_framework_is_named_with_the_fix(real_graph: Provider) -> None:
    facts = host("h100", real_graph)

    def pkg(text: str, installed: dict[str, str]) -> list[Finding]:
        env = environment(text, real_graph)
        return [f for f in check(env, facts, real_graph, installed=installed, tools={}) if f.check == "package"]

    [cupy] = pkg(CUPY_12, {"cupy-cuda13x": "13.6.0"})
    assert (cupy.level, cupy.message) == ("fail", "cupy-cuda13x 13.6.0 is installed; the lock has cupy-cuda12x 14.2.0 "
                                                  "(another distribution of the same framework)")
    assert cupy.fix == "pip uninstall -y cupy-cuda13x && pip install 'cupy-cuda12x[ctk]==14.2.0'"
    [ort] = pkg('[frameworks]\nonnxruntime = "*"\n[hardware]\ngpus = ["H100"]\n', {"onnxruntime": "1.22.0"})
    assert ort.message.startswith("onnxruntime 1.22.0 is installed; the lock has onnxruntime-gpu 1.31.1")
    [tf] = pkg('[frameworks]\ntensorflow = "*"\n[hardware]\ngpus = ["H100"]\n', {"tensorflow-cpu": "2.21.0"})
    assert tf.message.startswith("tensorflow-cpu 2.21.0 is installed; the lock has tensorflow 2.21.0")
    assert tf.fix == "pip uninstall -y tensorflow-cpu && pip install 'tensorflow[and-cuda]==2.21.0'"
    # the locked one with another beside it: its check, and a warning about the other
    both = pkg(CUPY_12, {"cupy-cuda12x": "14.2.0", "cupy-cuda13x": "13.6.0"})
    assert [(f.level, f.message) for f in both] == [
        ("ok", "cupy-cuda12x 14.2.0 matches the lock"),
        ("warn", "cupy-cuda13x 13.6.0 is installed beside cupy-cuda12x: another distribution of the same "
                 "framework, whose files overwrite each other's")]
    # nothing of the framework at all: the machine only
    assert [(f.level, f.message) for f in pkg(CUPY_12, {"torch": "2.7.1"})] == [
        ("warn", "none of the locked frameworks is installed in this Python; checked the machine only")]


def test_cli_doctor_json_has_the_environment_host_findings_and_summary(h100_lock: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []

    def installed(names: list[str], site: object = None) -> dict[str, str]:
        asked.append(list(names))
        return {"torch": "2.7.1"}

    monkeypatch.setattr(det, "installed_versions", installed)
    r = CliRunner().invoke(main, ["doctor", str(h100_lock), "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert asked == [["torch"]]
    assert (data["format"], data["lock"], data["environment"], data["on"]) == (1, str(h100_lock), "default", "host")
    assert data["host"]["vendor"] == "nvidia" and data["host"]["driver"] == "535.129.03"
    assert data["host"]["source"] == "nvidia-smi --query-gpu"
    assert [g["name"] for g in data["host"]["gpus"]] == ["NVIDIA H100 80GB HBM3"]
    assert data["installed"] == {"torch": "2.7.1"}
    assert {"level": "ok", "check": "package", "message": "torch 2.7.1 matches the lock", "fix": ""} in data["findings"]
    assert all(sorted(f) == ["check", "fix", "level", "message"] for f in data["findings"])
    assert data["summary"] == {"fails": 0, "warns": 1, "passed": True}


def test_cli_doctor_json_of_a_failing_check_exits_1_with_the_json_on_stdout(h100_lock: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(det, "installed_versions", lambda names, site=None: {"torch": "2.7.1+cu118"})
    monkeypatch.setattr(det, "docker_tools", lambda: {"docker": True})
    r = CliRunner().invoke(main, ["doctor", str(h100_lock), "--format", "json"])
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    assert data["summary"] == {"fails": 2, "warns": 1, "passed": False}
    [package] = [f for f in data["findings"] if f["check"] == "package"]
    assert (package["level"], package["message"]) == ("fail", "torch 2.7.1+cu118 is the cu118 build; the lock has cu126")
    assert package["fix"].startswith("pip install 'torch==2.7.1'")
    assert r.stderr.startswith("ERROR: 2 check(s) failed, 1 warning(s)\n")


def test_cli_doctor_names_the_other_distribution_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The H100 of the 2026 session: cupy-cuda13x installed where the lock (driver 535: CUDA 12) has cupy-cuda12x."""
    d = HOSTS / "h100"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))
    monkeypatch.setattr(det, "docker_tools", lambda: {"docker": False})
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ncupy = "*"\n')
    assert CliRunner().invoke(main, ["lock", "--host", "--frameworks-only", str(spec)]).exit_code == 0
    here = {"cupy-cuda13x": "13.6.0", "numpy": "2.3.0"}
    monkeypatch.setattr(det, "installed_versions", lambda names, site=None: {n: here[n] for n in names if n in here})
    r = CliRunner().invoke(main, ["doctor", str(tmp_path / "envsolve.lock")])
    assert r.exit_code == 1
    assert ("FAIL  package: cupy-cuda13x 13.6.0 is installed; the lock has cupy-cuda12x 14.2.0 (another distribution "
            "of the same framework)\n      fix: pip uninstall -y cupy-cuda13x && pip install 'cupy-cuda12x[ctk]==14.2.0'"
            ) in r.stdout
    assert "none of the locked frameworks" not in r.stdout


# -- issue 23: WSL 2, native Windows, macOS, Intel GPUs ------------------------------------------------------


def _xpu(graph: Provider) -> Environment:
    """An XPU environment (the shape a torch XPU lock has: no CUDA, Intel archs) made from a CUDA one."""
    return replace(environment(H100_TORCH, graph), accelerator="xpu", cuda="", cudnn="", driver_min="", compat="",
                   gpus=("Arc A770",), gpu_archs=("dg2",), gpu_models=())


def test_under_wsl2_the_windows_driver_is_held_to_the_windows_floors(real_graph: Provider) -> None:
    """CUDA 12.6's Windows floor is 560.76 and CUDA 12.x's minor-version one 528.33 (NVIDIA's Windows
    columns): the WSL 2 host's 555.99 is a Windows driver, held to those, not to the Linux 560.28.03."""
    lock = environment(H100_TORCH, real_graph)  # CUDA 12.6, native
    wsl = host("wsl2-rtx4070", real_graph)
    [(level, msg)] = by(check(lock, wsl, real_graph, installed={}, tools={}), "driver")
    assert level == "warn" and msg.startswith("Windows driver 555.99 runs CUDA 12.6 only by minor-version "
                                              "compatibility (>= 528.33), not natively (>= 560.76)")
    old = replace(wsl, driver="527.41")  # CUDA 12.0 GA's Windows driver: under 12.x's Windows floor
    findings = check(lock, old, real_graph, installed={}, tools={})
    assert by(findings, "driver") == [("fail", "Windows driver 527.41 is too old for CUDA 12.6: it needs 560.76 "
                                               "(native) or 528.33 (minor-version compatibility)")]
    assert next(f.fix for f in findings if f.check == "driver").startswith("upgrade the NVIDIA Windows driver to "
                                                                           ">= 560.76")
    # CUDA reaches WSL 2 from R495 on (NVIDIA's CUDA on WSL guide), whatever CUDA's own floors say
    cu114 = replace(lock, cuda="11.4", driver_min="", compat="native", gpu_archs=("sm_86",), gpu_models=())
    r470 = by(check(cu114, replace(wsl, driver="472.50"), real_graph, installed={}, tools={}), "driver")
    assert r470[0][0] == "ok" and r470[1] == ("fail", "Windows driver 472.50 is older than R495, the first branch "
                                                      "whose CUDA reaches WSL 2 (NVIDIA's CUDA on WSL guide)")
    # the same number on Linux is a Linux driver, held to the Linux floors
    linux = replace(old, platform="linux")
    assert by(check(lock, linux, real_graph, installed={}, tools={}), "driver")[0][1].startswith(
        "driver 527.41 runs CUDA 12.6 only by minor-version compatibility (>= 525.60.13)")


def test_wsl2_without_the_windows_driver_says_to_install_it_on_windows(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)
    findings = check(lock, host("wsl2-no-driver", real_graph), real_graph, installed={}, tools={})
    [fix] = [f.fix for f in findings if f.check == "host" and f.level == "fail"]
    assert fix.startswith("install or update the NVIDIA driver on Windows (R495 or newer runs CUDA in WSL 2), never "
                          "a Linux driver inside WSL")


def test_docker_under_wsl2_is_docker_desktops_wsl2_backend(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)
    wsl = host("wsl2-rtx4070", real_graph)
    [(level, msg)] = by(check(lock, wsl, real_graph, installed={}, tools={"docker": True}), "container")
    assert level == "warn" and msg == ("Docker is installed but the NVIDIA container toolkit is not: on wsl2 GPU "
                                       "containers run under Docker Desktop with the WSL2 backend "
                                       "(`docker run --gpus all`)")
    inside = replace(wsl, container=True, gpus=(), vendor="cpu")
    [fix] = [f.fix for f in check(lock, inside, real_graph, installed={}, tools={})
             if f.check == "host" and f.level == "fail"]
    assert fix == "start the container with `--gpus all` (Docker Desktop with the WSL2 backend gives containers the GPU)"


def test_a_linux_lock_on_native_windows_fails_naming_both_platforms(real_graph: Provider) -> None:
    lock = environment(H100_TORCH, real_graph)
    host_ = by(check(lock, host("windows-rtx2080s-591", real_graph), real_graph, installed={}, tools={}), "host")
    assert ("fail", "environment 'default' is built for linux/amd64, but this host is windows/amd64 (AMD64)") in host_


def test_an_xpu_lock_checks_level_zero_and_the_intel_gpus(real_graph: Provider) -> None:
    env = _xpu(real_graph)
    arc = check(env, host("linux-arc-a770", real_graph), real_graph, installed={}, tools={})
    assert by(arc, "driver") == [("ok", "Intel's GPU driver answers through Level Zero (xpu-smi discovery 17013219), "
                                        "as torch.xpu needs")]
    assert by(arc, "gpu") == [("ok", "GPU 0 Intel(R) Arc(TM) A770 Graphics (dg2) runs the xpu builds: SPIR-V the "
                                     "driver compiles on first use")]
    assert [f for f in arc if f.level == "fail"] == []
    b580 = check(env, host("linux-arc-b580", real_graph), real_graph, installed={}, tools={})
    [(level, msg)] = by(b580, "driver")
    assert level == "warn" and msg.startswith("the Intel GPU is there (lspci -nn) but no Level Zero runtime answered")
    none = check(env, host("no-gpu", real_graph), real_graph, installed={}, tools={})
    [failed] = [f for f in none if f.level == "fail"]
    assert failed.message == ("environment 'default' needs an Intel GPU (PyTorch's XPU builds) but this host has "
                              "no GPU")
    assert "ZE_AFFINITY_MASK" in failed.fix
    uhd = by(check(env, host("windows-arc-a770-sycl", real_graph), real_graph, installed={}, tools={}), "gpu")
    assert uhd[0][0] == "warn" and uhd[0][1].startswith("GPU 0 Intel(R) UHD Graphics 770 is not in envsolve's data")


def test_an_mps_lock_on_apple_silicon_and_on_an_intel_mac(real_graph: Provider) -> None:
    env = replace(environment(H100_TORCH, real_graph), accelerator="mps", platform="darwin/arm64", cuda="", cudnn="",
                  driver_min="", compat="", gpus=(), gpu_archs=(), gpu_models=())
    mac = check(env, host("macos-m2pro", real_graph), real_graph, installed={}, tools={})
    assert by(mac, "host") == [("ok", "this Mac (Apple M2 Pro, macOS 26.4) runs MPS on its GPU; the data names no "
                                      "macOS floor for the locked builds, not checked")]
    assert by(mac, "gpu") == [("ok", "GPU 0 Apple M2 Pro (apple-m2) runs the mps builds through MPS")]
    intel = by(check(env, host("macos-intel", real_graph), real_graph, installed={}, tools={}), "host")
    assert ("fail", "environment 'default' is built for darwin/arm64, but this host is darwin/amd64 (x86_64)") in intel
    assert ("fail", "environment 'default' needs an Apple GPU (MPS) but this host has no GPU") in intel


def test_cli_doctor_on_an_intel_host_never_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       real_graph: Provider) -> None:
    data = lockfile.build(project="p", spec_name="project.toml", spec_bytes=b"", data_version="test",
                          data_digest="sha256:" + "0" * 64, resolutions=resolve(H100_TORCH, real_graph))
    path = tmp_path / "envsolve.lock"
    envs = (_xpu(real_graph),)  # sealed as the lock writer seals it (lock_digest over the environments)
    path.write_text(lockfile.dumps(replace(data, environments=envs,
                                           lock_digest=lockfile._digest_of(data.indexes, envs))))
    d = HOSTS / "linux-arc-b580"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))
    monkeypatch.setattr(det, "docker_tools", lambda: {"docker": False})
    monkeypatch.setattr(det, "installed_versions", lambda names, site=None: {})
    r = CliRunner().invoke(main, ["doctor", str(path), "--format", "json"])
    assert "Traceback" not in r.output and r.exit_code in (0, 1), r.output
    out = json.loads(r.stdout)
    assert out["host"]["vendor"] == "intel" and out["host"]["level_zero"] is False
    assert any(f["message"].startswith("the Intel GPU is there (lspci -nn)") for f in out["findings"])


def test_every_refusal_of_a_gpu_less_host_or_container_has_a_fix_that_can_be_done(real_graph: Provider) -> None:
    """An MPS environment in a container: no `docker run` flag gives a container Apple's GPU, so the
    fix is to run it on the Mac itself, never an empty "start the container with ``"."""
    base = environment(H100_TORCH, real_graph)
    mps = replace(base, accelerator="mps", platform="darwin/arm64", cuda="", cudnn="", driver_min="", compat="",
                  gpus=(), gpu_archs=(), gpu_models=())
    inside = HostFacts(vendor="cpu", source="no GPU tool found", container=True, machine="aarch64")
    [fix] = [f.fix for f in check(mps, inside, real_graph, installed={}, tools={})
             if f.check == "host" and f.level == "fail" and "needs an Apple GPU" in f.message]
    assert fix == ("run it on the machine itself, outside any container: no `docker run` flag gives a container "
                   "MPS (Apple GPU); or lock a target for this container (`envsolve lock --host`)")
    envs = [base, mps, _xpu(real_graph), environment('[frameworks]\ntorch = "==2.7.1"\n[hardware]\ngpus = ["MI300X"]\n',
                                                     real_graph)]
    for env in envs:
        for container in (False, True):
            for os in ("linux", "wsl2", "darwin"):
                facts = replace(inside, container=container, platform=os)
                for f in check(env, facts, real_graph, installed={}, tools={"docker": True}):
                    if f.level == "fail":
                        assert f.fix.strip() and "``" not in f.fix, (env.accelerator, container, os, f)
