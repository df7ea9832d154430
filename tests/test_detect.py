"""Accelerators: recorded outputs of real machines, served by fake tools on PATH."""

import json
import shutil
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.host import detect as det
from envsolve.host.facts import (
    GpuInfo,
    HostFacts,
    MigDevice,
    complete,
    describe,
    hardware_table,
    host_platform,
    jetson_module,
)
from envsolve.host.target import for_host
from envsolve.provider import Provider
from envsolve.spec import parse_spec
from envsolve.versions import parse_driver

HOSTS = Path(__file__).parent / "fixtures" / "hosts"
_DETECT = det.detect


def python_platform(d: Path) -> dict[str, str]:
    """What Python said on a recorded host (``python-platform.txt``: sys.platform, platform.machine());
    a host without that file is Linux, its CPU read from its root."""
    f = d / "python-platform.txt"
    said = dict(line.split(": ", 1) for line in f.read_text().splitlines()) if f.exists() else {}
    return {"system": said.get("sys.platform", "linux"), "machine": said.get("platform.machine", "")}


def recorded(d: Path, env: dict[str, str] | None = None, timeout: float = 5.0) -> HostFacts:
    """The facts detect() finds on a recorded host, its tools and files served from ``d``."""
    return det.detect(environ=env or {}, path=str(d / "bin"), root=d / "root", timeout=timeout, nvml=False,
                      **python_platform(d))


def host(machine: str, graph: Provider, env: dict[str, str] | None = None,
         timeout: float = 5.0) -> HostFacts:
    return complete(recorded(HOSTS / machine, env, timeout), graph)


def test_h100_from_the_csv_query_and_the_table(real_graph: Provider) -> None:
    f = host("h100", real_graph)
    assert (f.vendor, f.driver, f.cuda_driver_max, f.cuda_driver_max_from) == ("nvidia", "535.129.03", "12.2",
                                                                              "nvidia-smi")
    (g,) = f.gpus
    assert (g.name, g.compute_capability, g.memory_mib, g.uuid) == ("NVIDIA H100 80GB HBM3", "9.0", 81559, "")
    # the fake has no `nvidia-smi -L` recording and exits 127: reported, not raised
    assert f.warnings == ("`nvidia-smi -L` exited with status 127: nvidia-smi: no recording for '-L'",)
    assert hardware_table(f, real_graph) == {"gpus": ["H100"], "driver": "535.129.03", "vendor": "nvidia"}


def test_a100_reports_its_mig_instances(real_graph: Provider) -> None:
    f = host("a100-mig", real_graph)
    (g,) = f.gpus
    assert g.uuid == "GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16" and len(g.mig) == 7
    assert g.mig[0] == MigDevice(profile="1g.10gb", uuid="MIG-feb88891-0321-5fef-9c87-d4af3b54259e")
    assert f.warnings == ()
    # a container given one MIG instance sees that GPU with that instance only
    one = host("a100-mig", real_graph, {"CUDA_VISIBLE_DEVICES": "MIG-a25704ba-3a06-5299-a795-fd7cf4d13973"})
    assert [m.uuid for m in one.gpus[0].mig] == ["MIG-a25704ba-3a06-5299-a795-fd7cf4d13973"]


def test_old_driver_without_compute_cap_falls_back_to_the_xml(real_graph: Provider) -> None:
    f = host("t4-driver460", real_graph)
    assert (f.source, f.driver, f.cuda_driver_max) == ("nvidia-smi -q -x", "460.32.03", "11.2")
    (g,) = f.gpus
    assert (g.name, g.compute_capability, g.uuid) == ("Tesla T4", "7.5", "GPU-1b965d81-1d0f-6501-027c-1ecc1437f5ea")
    assert f.warnings[0].endswith('exited with status 2: Field "compute_cap" is not a valid field to query.')


def test_wsl2_finds_nvidia_smi_outside_path(real_graph: Provider) -> None:
    f = host("rtx4090-wsl", real_graph)
    assert (f.platform, f.driver, f.cuda_driver_max) == ("wsl2", "591.74", "13.1")
    assert hardware_table(f, real_graph)["gpus"] == ["RTX 4090"]


def test_driver_only_host_uses_proc_and_derives_cuda_from_the_data(real_graph: Provider) -> None:
    f = host("driver-only", real_graph)
    assert (f.vendor, f.driver, f.source, f.gpus) == ("nvidia", "580.173.02", "/proc/driver/nvidia/version", ())
    assert f.cuda_driver_max_from == "toolkit driver floors"
    assert f.cuda_driver_max == "{}.{}".format(*real_graph.cuda_max_for_driver(
        parse_driver("580.173.02")).prefix(2))
    assert any("exited with status 18: Failed to initialize NVML: Driver/library version mismatch" in w
               for w in f.warnings)


def test_mi300x_from_rocminfo(real_graph: Provider) -> None:
    f = host("mi300x", real_graph)
    (g,) = f.gpus
    assert (f.vendor, f.driver, g.name, g.gfx, g.memory_mib, g.uuid) == (
        "amd", "6.12.12", "AMD Instinct MI300X", "gfx942", 196592, "GPU-8af705259683161c")
    assert hardware_table(f, real_graph) == {"gpus": ["MI300X"], "vendor": "amd"}
    assert host("mi300x", real_graph, {"ROCR_VISIBLE_DEVICES": "1"}).gpus == ()


def test_mi350x_from_amd_smi_json(real_graph: Provider) -> None:
    f = host("mi350x-amdsmi", real_graph)
    (g,) = f.gpus
    assert (f.source, f.driver, g.name, g.gfx) == ("amd-smi", "6.18.3", "AMD Instinct MI350X", "gfx950")


def test_jetson_and_no_gpu(real_graph: Provider) -> None:
    j = host("jetson-orin", real_graph)
    assert (j.platform, j.l4t, j.driver, j.cuda_driver_max) == ("jetson", "R35.3.1", "35.3.1", "")
    assert "driver" not in hardware_table(j, real_graph)  # an L4T version is not a desktop driver
    cpu = host("no-gpu", real_graph)
    assert (cpu.vendor, cpu.gpus, cpu.warnings) == ("cpu", (), ())
    assert hardware_table(cpu, real_graph) == {"vendor": "cpu"}


def test_gh200_is_an_arm_host(real_graph: Provider) -> None:
    f = host("gh200", real_graph)
    (g,) = f.gpus
    assert (f.machine, f.driver, g.name, g.compute_capability) == ("aarch64", "570.124.06", "NVIDIA GH200 480GB", "9.0")
    assert hardware_table(f, real_graph) == {"gpus": ["GH200"], "driver": "570.124.06", "vendor": "nvidia",
                                             "platform": "linux/arm64"}


def test_a_jetson_names_its_jetpack_from_l4t(real_graph: Provider) -> None:
    f = host("jetson-orin-nx-jp62", real_graph)
    assert (f.platform, f.l4t, f.machine, f.gpus) == ("jetson", "R36.4.3", "aarch64", ())
    assert hardware_table(f, real_graph) == {"vendor": "cpu", "platform": "linux/arm64", "jetpack": "6.2"}
    # an L4T release the data has no JetPack for names none
    # L4T R35.3.1 is JetPack 5.1.1's (platforms.toml), so a board of it is solved for that JetPack
    assert hardware_table(host("jetson-orin", real_graph), real_graph)["jetpack"] == "5.1.1"


def test_cli_lock_host_on_a_gh200_locks_arm64(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n')
    r = _cli(monkeypatch, "gh200", "lock", "--host", str(spec))
    assert r.exit_code == 0, r.output
    lock = (tmp_path / "envsolve.lock").read_text()
    assert 'platform = "linux/arm64"' in lock and '"GH200"' in lock


def test_cli_lock_host_on_a_jetson_keeps_its_modules_and_takes_jetpack_from_l4t(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["Jetson Orin NX"]\njetpack = "6.1"\n')
    r = _cli(monkeypatch, "jetson-orin-nx-jp62", "lock", "--host", str(spec))
    assert r.exit_code == 0, r.output
    lock = (tmp_path / "envsolve.lock").read_text()
    assert 'jetpack = "6.2"' in lock and 'base_image = "nvcr.io/nvidia/l4t-jetpack:r36.4.0"' in lock
    assert 'platform = "linux/arm64"' in lock and 'variant = "jp6-cu126"' in lock


def test_overrides_for_build_hosts(real_graph: Provider) -> None:
    f = host("no-gpu", real_graph, {"ENVSOLVE_GPUS": "H100, sm_80", "ENVSOLVE_DRIVER": "550.54.15"})
    assert (f.vendor, f.driver, f.source) == ("nvidia", "550.54.15", "ENVSOLVE_GPUS, ENVSOLVE_DRIVER")
    assert [g.compute_capability for g in f.gpus] == ["9.0", "8.0"]
    assert hardware_table(f, real_graph)["gpus"] == ["H100", "sm_80"]
    amd = host("h100", real_graph, {"ENVSOLVE_GPUS": "gfx942"})
    assert (amd.vendor, amd.gpus[0].gfx) == ("amd", "gfx942")


def test_cuda_visible_devices_by_index_and_uuid(real_graph: Provider) -> None:
    assert host("h100", real_graph, {"CUDA_VISIBLE_DEVICES": ""}).gpus == ()
    hidden = host("a100-mig", real_graph, {"CUDA_VISIBLE_DEVICES": "3,0"})
    assert hidden.gpus == () and "CUDA_VISIBLE_DEVICES='3,0' leaves 0 of 1 GPUs visible" in hidden.warnings
    assert len(host("a100-mig", real_graph, {"CUDA_VISIBLE_DEVICES": "GPU-7fdaf0a5"}).gpus) == 1


def _machine(tmp_path: Path, tool: str, files: dict[str, str]) -> Path:
    (tmp_path / "bin").mkdir()
    shutil.copy(HOSTS / "fake-tool", tmp_path / "bin" / tool)
    (tmp_path / "SOURCES.md").write_text("made up by the test\n")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_a_hung_tool_is_stopped_and_reported(tmp_path: Path, real_graph: Provider) -> None:
    import time

    d = _machine(tmp_path, "nvidia-smi", {"nvidia-smi.query-gpu.hang": "", "nvidia-smi.q_x.hang": ""})
    start = time.monotonic()
    f = det.detect(environ={}, path=str(d / "bin"), root=d, timeout=0.5, nvml=False)
    assert time.monotonic() - start < 10
    assert f.vendor == "cpu"
    assert f.warnings == (
        "`nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,uuid --format=csv,noheader,nounits` "
        "did not answer within 0.5 s and was stopped",
        "`nvidia-smi -q -x` did not answer within 0.5 s and was stopped",
        "`nvidia-smi` exited with status 127: nvidia-smi: no recording for ''")  # its table, the last source


def test_garbage_output_is_a_warning_then_the_next_source(tmp_path: Path) -> None:
    d = _machine(tmp_path, "nvidia-smi", {"nvidia-smi.query-gpu.out": "NVIDIA H100, 535.1\n",
                                          "nvidia-smi.q_x.out": "<html>oops</html>\n"})
    (d / "proc/driver/nvidia").mkdir(parents=True)
    (d / "proc/driver/nvidia/version").write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  x\n")
    f = det.detect(environ={}, path=str(d / "bin"), root=d, nvml=False)
    assert (f.driver, f.source) == ("550.54.15", "/proc/driver/nvidia/version")
    assert f.warnings == (
        "nvidia-smi --query-gpu output could not be read: line 1 has 2 fields, expected 5 "
        "(name,driver_version,compute_cap,memory.total,uuid): 'NVIDIA H100,535.1'",
        "nvidia-smi -q -x output could not be read: root element is <html>, not <nvidia_smi_log>",
        "`nvidia-smi` exited with status 127: nvidia-smi: no recording for ''")


@pytest.mark.parametrize("text", ["", "{}", "[1]", "not json"])
def test_amd_smi_parse_errors(text: str) -> None:
    with pytest.raises(ValueError):
        det.parse_amd_smi(text)


def test_parsers_reject_what_they_cannot_read() -> None:
    with pytest.raises(ValueError, match="compute capability 'x' is not of the form 9.0"):
        det.parse_smi_csv("A, 1, x, 2, u\n")
    with pytest.raises(ValueError, match="no agent with Device Type: GPU"):
        det.parse_rocminfo("ROCk module is loaded\n")
    with pytest.raises(ValueError):
        det.parse_proc_version("nothing here")
    assert det.parse_proc_version(
        "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build  (x)  Thu\n") == "565.57.01"
    assert [det.gfx_from_target_version(v) for v in (90402, 90010, 110000, 100300, 0)] == [
        "gfx942", "gfx90a", "gfx1100", "gfx1030", ""]


def test_kfd_topology_is_the_last_amd_source(tmp_path: Path) -> None:
    for node, version in (("0", "0"), ("1", "90402")):
        p = tmp_path / "sys/class/kfd/kfd/topology/nodes" / node
        p.mkdir(parents=True)
        (p / "properties").write_text(f"cpu_cores_count 0\ngfx_target_version {version}\nvendor_id 4098\n")
    f = det.detect(environ={}, path="", root=tmp_path, nvml=False)
    assert (f.vendor, f.source, [g.gfx for g in f.gpus]) == ("amd", "/sys/class/kfd", ["gfx942"])


def _cli(monkeypatch: pytest.MonkeyPatch, machine: str, *args: str) -> object:
    d = HOSTS / machine
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False,
                                                       **python_platform(d)))
    return CliRunner().invoke(main, list(args))


def test_cli_detect_json_text_and_toml(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _cli(monkeypatch, "t4-driver460", "detect", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert (data["vendor"], data["driver"], data["cuda_driver_max"]) == ("nvidia", "460.32.03", "11.2")
    assert data["gpus"][0] == {"index": 0, "name": "Tesla T4", "compute_capability": "7.5", "memory_mib": None,
                               "uuid": "GPU-1b965d81-1d0f-6501-027c-1ecc1437f5ea"}
    r = _cli(monkeypatch, "mi300x", "detect", "--format", "toml")
    assert r.stdout == ('# amd host, from rocminfo, driver 6.12.12\n[hardware]\ngpus = [\n    "MI300X",\n]\n'
                        'vendor = "amd"\n')
    r = _cli(monkeypatch, "h100", "detect")
    assert r.exit_code == 0
    assert "GPU 0: NVIDIA H100 80GB HBM3 (compute capability 9.0, 81559 MiB) -> H100" in r.stdout
    assert "CUDA the driver runs: up to 12.2 (from nvidia-smi)" in r.stdout
    assert "WARNING: `nvidia-smi -L` exited with status 127" in r.stderr
    r = _cli(monkeypatch, "no-gpu", "detect")
    assert (r.exit_code, r.stdout) == (0, "vendor: cpu (from no GPU tool found)\nno GPU\n")


def test_cli_lock_host_solves_for_this_machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\n')
    r = _cli(monkeypatch, "h100", "lock", "--host", str(spec))
    assert r.exit_code == 0, r.output
    assert "host: gpus = ['H100'], driver = 535.129.03, vendor = nvidia" in r.stderr
    lock = (tmp_path / "envsolve.lock").read_text()
    assert 'gpu_archs = [\n    "sm_90",\n]' in lock and '"A100"' not in lock.split("[[environments.gpu_models]]")[0]


def test_cli_lock_host_names_a_gpu_it_cannot_place(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\n')
    d = HOSTS / "no-gpu"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={"ENVSOLVE_GPUS": "Z9000"}, path=str(d / "bin"),
                                                       root=d / "root", nvml=False))
    r = CliRunner().invoke(main, ["lock", "--host", str(spec)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "ERROR: ENVSOLVE_GPUS: GPU 0: unknown GPU 'Z9000'" in r.stderr  # not blamed on project.toml, not dropped
    assert "ENVSOLVE_GPUS=sm_90" in r.stderr
    assert not (tmp_path / "envsolve.lock").exists()


def test_a_gpu_unknown_by_name_is_solved_for_its_reported_architecture(real_graph: Provider) -> None:
    facts = HostFacts(vendor="nvidia", driver="580.65.06", source="nvidia-smi",
                      gpus=(GpuInfo(index=0, name="NVIDIA Future X1", compute_capability="9.0"),))
    spec = parse_spec('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\ncuda = "12.8"\n', "p.toml", real_graph)
    got, warnings = for_host(spec, facts, real_graph)
    t = got.targets[0]
    assert [g.arch.name for g in t.gpus] == ["sm_90"] and str(t.driver) == "580.65.06" and str(t.cuda) == "12.8"
    assert warnings == ["GPU 0 'NVIDIA Future X1' is not in envsolve's data; solving for its architecture sm_90 "
                        "as the driver reported it"]


class _Mem:
    def __init__(self, mib: int) -> None:
        self.total = mib << 20


def _fake_pynvml(fail_init: Exception | None = None) -> object:
    """A stand-in for nvidia-ml-py answering with the H100 recording's values (tests/fixtures/hosts/h100)."""
    import types

    m = types.ModuleType("pynvml")

    def init() -> None:
        if fail_init is not None:
            raise fail_init

    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: None  # type: ignore[attr-defined]
    m.nvmlSystemGetDriverVersion = lambda: b"535.129.03"  # type: ignore[attr-defined]  # old bindings return bytes
    m.nvmlSystemGetCudaDriverVersion_v2 = lambda: 12020  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: 1  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: ("gpu", i)  # type: ignore[attr-defined]
    m.nvmlDeviceGetCudaComputeCapability = lambda h: (9, 0)  # type: ignore[attr-defined]
    m.nvmlDeviceGetMigMode = lambda h: (0, 0)  # type: ignore[attr-defined]
    m.nvmlDeviceGetName = lambda h: "NVIDIA H100 80GB HBM3"  # type: ignore[attr-defined]
    m.nvmlDeviceGetMemoryInfo = lambda h: _Mem(81559)  # type: ignore[attr-defined]
    m.nvmlDeviceGetUUID = lambda h: "GPU-00000000-0000-0000-0000-000000000000"  # type: ignore[attr-defined]
    return m


def test_nvml_is_the_first_source_when_it_loads(monkeypatch: pytest.MonkeyPatch, real_graph: Provider) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pynvml", _fake_pynvml())
    f = complete(det.detect(environ={}, path="", root=HOSTS / "no-gpu" / "root"), real_graph)
    assert (f.vendor, f.source, f.driver, f.cuda_driver_max, f.cuda_driver_max_from) == (
        "nvidia", "NVML", "535.129.03", "12.2", "NVML")
    (g,) = f.gpus
    assert (g.name, g.compute_capability, g.memory_mib) == ("NVIDIA H100 80GB HBM3", "9.0", 81559)
    assert hardware_table(f, real_graph)["gpus"] == ["H100"]


def test_nvml_that_cannot_start_falls_back_to_nvidia_smi(monkeypatch: pytest.MonkeyPatch,
                                                         real_graph: Provider) -> None:
    monkeypatch.setitem(__import__("sys").modules, "pynvml", _fake_pynvml(RuntimeError("NVML Shared Library Not Found")))
    d = HOSTS / "h100"
    f = complete(det.detect(environ={}, path=str(d / "bin"), root=d / "root"), real_graph)
    assert f.vendor == "nvidia" and f.driver == "535.129.03" and f.source != "NVML"
    assert "NVML could not start: NVML Shared Library Not Found" in f.warnings


def test_a_jetson_board_names_its_module(real_graph: Provider) -> None:
    f = host("jetson-orin-nx-board", real_graph)
    assert [g.name for g in f.gpus] == ["Jetson Orin NX"] and f.vendor == "nvidia"
    assert [g.compute_capability for g in f.gpus] == ["8.7"]
    assert hardware_table(f, real_graph) == {"gpus": ["Jetson Orin NX"], "vendor": "nvidia",
                                             "platform": "linux/arm64", "jetpack": "6.2"}


def test_cli_lock_host_on_a_jetson_board_needs_no_module_in_the_spec(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n')  # written for the data centre
    r = _cli(monkeypatch, "jetson-orin-nx-board", "lock", "--host", str(spec))
    assert r.exit_code == 0, r.output
    lock = (tmp_path / "envsolve.lock").read_text()
    assert '"Jetson Orin NX"' in lock and 'jetpack = "6.2"' in lock and 'variant = "jp6-cu126"' in lock


def test_cli_lock_host_with_a_gpu_name_the_data_lacks_uses_its_compute_capability(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # a name no catalog row or alias has (a future or renamed board), as nvidia-smi could print it;
    # the compute capability nvidia-smi reports beside it is what the lock is solved for
    facts = HostFacts(vendor="nvidia", driver="580.65.06", source="nvidia-smi",
                      gpus=(GpuInfo(index=0, name="NVIDIA Future X1", compute_capability="9.0"),))
    monkeypatch.setattr(det, "detect", lambda: facts)
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n')
    r = CliRunner().invoke(main, ["lock", "--host", str(spec)])
    assert r.exit_code == 0, r.output
    assert ("WARNING: host: GPU 0 'NVIDIA Future X1' is not in envsolve's data; solving for its architecture "
            "sm_90 as the driver reported it\n") in r.stderr
    assert 'gpu_archs = [\n    "sm_90",\n]' in (tmp_path / "envsolve.lock").read_text()


def test_h200_recorded_on_the_lent_gpu_machine(real_graph: Provider, tmp_path: Path) -> None:
    """Real recordings (tests/fixtures/hosts/h200): the query, -L and -q -x agree, and the host's target
    is the H200 with its driver."""
    f = host("h200", real_graph)
    assert (f.vendor, f.driver, f.cuda_driver_max, f.source) == ("nvidia", "580.159.04", "13.0",
                                                                 "nvidia-smi --query-gpu")
    (g,) = f.gpus
    assert (g.name, g.compute_capability, g.memory_mib) == ("NVIDIA H200", "9.0", 143771)
    assert g.uuid == "GPU-6eec35e2-cc74-704b-6239-30cebbaf9584" and f.warnings == ()
    assert hardware_table(f, real_graph) == {"gpus": ["H200"], "driver": "580.159.04", "vendor": "nvidia"}
    # the same machine through nvidia-smi -q -x alone (as an old driver without compute_cap is read)
    d = tmp_path / "h200-xml"
    shutil.copytree(HOSTS / "h200", d)
    (d / "nvidia-smi.query-gpu.out").unlink()
    (d / "nvidia-smi.query-gpu.rc").write_text("2\n")
    x = complete(det.detect(environ={}, path=str(d / "bin"), root=d / "root", timeout=5.0, nvml=False), real_graph)
    assert (x.source, x.driver, x.cuda_driver_max) == ("nvidia-smi -q -x", "580.159.04", "13.0")
    assert [(y.name, y.compute_capability, y.uuid) for y in x.gpus] == [(g.name, "9.0", g.uuid)]


@pytest.mark.parametrize(("printed", "model", "gfx"), [
    ("AMD Radeon RX 5700 XT", "RX 5700 XT", "gfx1010"),
    ("Radeon RX 580 Series", "RX 580", "gfx803"),
    ("AMD Radeon RX Vega 64", "RX Vega 64", "gfx900"),
    ("AMD Radeon RX 6500 XT", "RX 6500 XT", "gfx1034"),
    ("AMD Instinct MI308X", "MI308X", "gfx942"),
    ("AMD Radeon PRO W7600", "Radeon PRO W7600", "gfx1102"),
])
def test_amd_names_the_tools_print_are_known_with_their_target(printed: str, model: str, gfx: str,
                                                               real_graph: Provider) -> None:
    # a tool that names the GPU but not its target (rocm-smi's product name, an old amd-smi's market_name)
    f = complete(HostFacts(vendor="amd", gpus=(GpuInfo(index=0, name=printed),), source="rocm-smi"), real_graph)
    assert f.gpus[0].gfx == gfx and hardware_table(f, real_graph)["gpus"] == [model]


# `nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,uuid --format=csv,noheader,nounits`
# on old and new GPUs, with the names and capabilities users posted (the URLs say where)
@pytest.mark.parametrize("row,model,arch", [
    # https://github.com/pytorch/pytorch/issues/31319 (a Tesla K80 and two K40c in one box, driver 470 era)
    ("Tesla K80, 470.256.02, 3.7, 11441, GPU-0a1b", "K80", "sm_37"),
    ("Tesla K40c, 470.256.02, 3.5, 11441, GPU-0a1c", "K40", "sm_35"),
    # https://github.com/AUTOMATIC1111/stable-diffusion-webui/issues/3003
    ("NVIDIA GeForce GTX TITAN Black, 470.256.02, 3.5, 6083, GPU-0a1d", "GTX TITAN Black", "sm_35"),
    # https://github.com/pytorch/pytorch/issues/53164 (GeForce GTX 1070 Ti, sm_61)
    ("NVIDIA GeForce GTX 1070 Ti, 535.183.01, 6.1, 8192, GPU-0a1e", "GTX 1070 Ti", "sm_61"),
    # https://github.com/meituan/YOLOv6/issues/350
    ("NVIDIA GeForce RTX 3080 Laptop GPU, 515.48.07, 8.6, 16384, GPU-0a1f", "RTX 3080 Laptop GPU", "sm_86"),
    # https://github.com/astra-vision/MonoScene/issues/80
    ("NVIDIA GeForce RTX 4060 Laptop GPU, 545.29.06, 8.9, 8188, GPU-0a20", "RTX 4060 Laptop GPU", "sm_89"),
    # https://github.com/RetroUpgrade-YouTube/Hi3DGen_1Click_installer/issues/5
    ("NVIDIA GeForce RTX 5080 Laptop GPU, 576.02, 12.0, 16303, GPU-0a21", "RTX 5080 Laptop GPU", "sm_120"),
    # https://github.com/pytorch/pytorch/issues/150733
    ("NVIDIA GeForce RTX 5090 D, 572.83, 12.0, 32607, GPU-0a22", "RTX 5090 D", "sm_120"),
])
def test_nvidia_smi_names_of_old_and_new_gpus_are_models_of_the_data(row: str, model: str, arch: str,
                                                                      real_graph: Provider) -> None:
    driver, gpus = det.parse_smi_csv(row + "\n")
    facts = complete(HostFacts(vendor="nvidia", driver=driver, source="nvidia-smi", gpus=tuple(gpus)), real_graph)
    assert hardware_table(facts, real_graph)["gpus"] == [model]
    spec = parse_spec('[frameworks]\ntorch = "*"\n', "p.toml", real_graph)
    got, warnings = for_host(spec, facts, real_graph)
    assert [(g.name, g.arch.name) for g in got.targets[0].gpus] == [(model, arch)] and warnings == []


def test_an_old_driver_that_does_not_say_the_capability_gets_it_from_the_model(real_graph: Provider) -> None:
    # drivers before 510 have no compute_cap field (the XML fallback): the model's row supplies it
    facts = complete(HostFacts(vendor="nvidia", driver="470.256.02", source="nvidia-smi -q -x",
                               gpus=(GpuInfo(index=0, name="NVIDIA GeForce GTX 770"),
                                     GpuInfo(index=1, name="Quadro K2200"))), real_graph)
    assert [g.compute_capability for g in facts.gpus] == ["3.0", "5.0"]


def _host_archs(graph: Provider, smi_csv: str) -> tuple[list[str], list[str]]:
    """The archs `lock --host` solves for on a host whose nvidia-smi query printed ``smi_csv``, and its warnings."""
    driver, gpus = det.parse_smi_csv(smi_csv)
    facts = complete(HostFacts(vendor="nvidia", driver=driver, source="nvidia-smi", gpus=tuple(gpus)), graph)
    got, warnings = for_host(parse_spec('[frameworks]\ntorch = "*"\n', "p.toml", graph), facts, graph)
    return [g.arch.name for g in got.targets[0].gpus], list(warnings)


def test_a_name_of_two_architectures_is_solved_for_the_capability_the_driver_reports(real_graph: Provider) -> None:
    # "GeForce GT 730" is a Fermi, a GK107 or a GK208 card: the name alone cannot say which
    archs, warnings = _host_archs(real_graph, "NVIDIA GeForce GT 730, 470.256.02, 3.5, 2002, GPU-0a23\n")
    assert archs == ["sm_35"]
    assert warnings == ["GPU 0 'NVIDIA GeForce GT 730' is not in envsolve's data; solving for its architecture "
                        "sm_35 as the driver reported it"]


def test_the_architecture_the_driver_reports_wins_over_a_catalog_row_that_disagrees(real_graph: Provider) -> None:
    # the catalog's row of a name is a fact about most GPUs of that name; the driver knows this one
    # (GeForce 910M: NVIDIA's legacy page lists 5.2, the PCI ID repository a GK208, 3.5)
    archs, warnings = _host_archs(real_graph, "NVIDIA GeForce 910M, 470.256.02, 3.5, 2048, GPU-0a24\n")
    assert archs == ["sm_35"]
    assert warnings == ["GPU 0 'NVIDIA GeForce 910M' is GeForce 910M (sm_52) in envsolve's data but the driver "
                        "reports sm_35; solving for sm_35"]


def test_a_jetson_nano_board_on_jetpack_4_names_its_module_and_jetpack(real_graph: Provider) -> None:
    """A Nano (JetPack 4.6.1, L4T R32.7.1) is known by /etc/nv_tegra_release and its board's model:
    a linux/arm64 Jetson whose JetPack is 4.6.1, never an x86 GPU."""
    f = host("jetson-nano-jp461", real_graph)
    assert (f.platform, f.l4t, f.vendor) == ("jetson", "R32.7.1", "nvidia")
    assert [(g.name, g.compute_capability) for g in f.gpus] == [("Jetson Nano", "5.3")]
    assert hardware_table(f, real_graph)["jetpack"] == "4.6.1"


def test_a_jetson_board_is_named_by_its_modules_aliases(real_graph: Provider) -> None:
    """Boards whose model is no module name: the AGX Xavier developer kit under L4T R32 prints
    "Jetson-AGX", the Orin Nano in JetPack 6.2's Super mode ends its model in "Super"."""
    assert jetson_module("Jetson-AGX", real_graph) == "Jetson AGX Xavier"
    assert jetson_module("NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super",
                         real_graph) == "Jetson Orin Nano Super"
    assert jetson_module("NVIDIA Jetson TX2 NX Developer Kit", real_graph) == "Jetson TX2 NX"
    assert jetson_module("NVIDIA Jetson AGX Thor Developer Kit", real_graph) == "Jetson T5000"


def test_cli_lock_host_on_a_jetson_nano_refuses_torch_2_naming_the_jetpack(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "==2.5.*"\n')
    r = _cli(monkeypatch, "jetson-nano-jp461", "lock", "--host", str(spec))
    assert r.exit_code == 1, r.output
    assert "torch 2.5.1 needs JetPack 6.1 (Jetson Linux 36.4.0) or newer of JetPack 6: Jetson Nano's newest JetPack is 4.6.6" in r.output


# -- issue 23: WSL 2, native Windows, macOS, Intel GPUs (recordings: each fixture's SOURCES.md) ---------------


def test_wsl2_is_known_by_its_kernel_dxg_and_driver_folder(real_graph: Provider) -> None:
    """microsoft/WSL#11277: nvidia-smi in /usr/lib/wsl/lib (not on PATH) prints the Windows driver
    (555.99); its table cuts the GPU's name and nothing else names it."""
    f = host("wsl2-rtx4070", real_graph)
    assert (f.platform, f.wsl, f.driver, f.cuda_driver_max, f.source) == ("wsl2", True, "555.99", "12.5", "nvidia-smi")
    (g,) = f.gpus
    assert (g.name, g.memory_mib) == ("NVIDIA GeForce RTX 4070 ...", 12282)
    assert ("nvidia-smi's table cuts the name of GPU 0 'NVIDIA GeForce RTX 4070 ...'; name it in ENVSOLVE_GPUS"
            in f.warnings)
    assert f.to_dict()["wsl"] is True and host_platform(f) == "linux/amd64"
    table = hardware_table(f, real_graph)  # a cut name is no model's: "RTX 4070 ..." may be a 4070 Ti
    assert table == {"driver": "555.99", "vendor": "cpu", "wsl": True}


def test_wsl2_by_its_kernel_release_alone_and_cuda_err(real_graph: Provider) -> None:
    """microsoft/WSL#11589: "CUDA Version: ERR!" is no CUDA; the Windows driver's own floors say it."""
    f = host("wsl2-rtx3060-cuda-err", real_graph)
    assert (f.platform, f.driver, f.cuda_driver_max, f.cuda_driver_max_from) == (
        "wsl2", "546.80", "12.3", "toolkit driver floors")
    assert not (HOSTS / "wsl2-rtx3060-cuda-err" / "root" / "dev").exists()


def test_wsl2_without_the_windows_driver_is_a_wsl2_host_without_gpus(real_graph: Provider) -> None:
    f = host("wsl2-no-driver", real_graph)
    assert (f.platform, f.vendor, f.gpus) == ("wsl2", "cpu", ())
    assert any("exited with status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver"
               in w for w in f.warnings)


def test_wsl1_is_not_wsl2(tmp_path: Path) -> None:
    (tmp_path / "root/proc").mkdir(parents=True)
    (tmp_path / "root/proc/version").write_text(  # https://github.com/microsoft/WSL/issues/1090
        "Linux version 3.4.0-Microsoft (Microsoft@Microsoft.com) (gcc version 4.7 (GCC) ) #1 SMP PREEMPT "
        "Wed Dec 31 14:42:53 PST 2014\n")
    assert recorded(tmp_path).platform == "linux"


def test_native_windows_finds_nvidia_smi_exe_in_system32(real_graph: Provider) -> None:
    f = host("windows-rtx2080s-591", real_graph)
    assert (f.platform, f.machine, f.driver, f.cuda_driver_max, f.source) == (
        "windows", "AMD64", "591.86", "13.1", "nvidia-smi --query-gpu")
    assert [(g.name, g.compute_capability, g.memory_mib) for g in f.gpus] == [
        ("NVIDIA GeForce RTX 2080 SUPER", "7.5", 8192)]
    assert f.warnings == () and not f.wsl
    assert hardware_table(f, real_graph) == {"gpus": ["RTX 2080 SUPER"], "driver": "591.86", "vendor": "nvidia",
                                             "platform": "windows/amd64"}
    assert host_platform(msgspec.structs.replace(f, machine="ARM64")) == "windows/arm64"  # Windows on Arm's Python


def test_the_r610_table_says_kmd_version_and_cuda_umd_version(real_graph: Provider) -> None:
    """From R610 the table's header is "KMD Version: 610.62  CUDA UMD Version: 13.3"; -L names the GPU
    the table cuts."""
    f = host("windows-rtx2080s-610", real_graph)
    assert (f.platform, f.driver, f.cuda_driver_max, f.source) == ("windows", "610.62", "13.3", "nvidia-smi")
    (g,) = f.gpus
    assert (g.name, g.compute_capability, g.memory_mib, g.uuid) == (
        "NVIDIA GeForce RTX 2080 SUPER", "7.5", 8192, "GPU-00000000-0000-0000-0000-000000000000")
    assert det.parse_smi_table("| NVIDIA-SMI 610.57.04              KMD Version: 610.57.04     CUDA UMD Version: "
                               "13.3     |\n")[:2] == ("610.57.04", "13.3")  # the same header on Linux
    # the Linux layout (Persistence-M), as recorded on the lent H200 machine
    driver, cuda, (h200,) = det.parse_smi_table((HOSTS / "h200" / "nvidia-smi.plain.out").read_text())
    assert (driver, cuda, h200.name, h200.memory_mib) == ("580.159.04", "13.0", "NVIDIA H200", 143771)
    with pytest.raises(ValueError, match="no 'Driver Version:' or 'KMD Version:'"):
        det.parse_smi_table("NVIDIA-SMI has failed\n")


def test_apple_silicon_is_an_apple_gpu_on_darwin_arm64(real_graph: Provider) -> None:
    f = host("macos-m3", real_graph)
    assert (f.vendor, f.platform, f.machine, f.chip, f.source) == (
        "apple", "darwin", "arm64", "Apple M3", "system_profiler SPDisplaysDataType")
    assert [g.name for g in f.gpus] == ["Apple M3"] and host_platform(f) == "darwin/arm64"
    assert {k: v for k, v in hardware_table(f, real_graph).items() if k != "gpus"} == {
        "vendor": "apple", "platform": "darwin/arm64"}
    known = host("macos-m3", real_graph)  # with the data's Apple rows, the chip's model and arch
    assert [g.arch for g in known.gpus] == ["apple-m3"]
    assert hardware_table(known, real_graph) == {"gpus": ["Apple M3"], "vendor": "apple", "platform": "darwin/arm64"}


def test_a_python_under_rosetta_is_still_on_apple_silicon(real_graph: Provider) -> None:
    f = host("macos-m2pro", real_graph)
    assert (f.vendor, f.machine, f.chip, f.os_version, f.source) == (
        "apple", "arm64", "Apple M2 Pro", "26.4", "sysctl machdep.cpu.brand_string")
    assert [g.name for g in f.gpus] == ["Apple M2 Pro"]
    assert "platform: darwin/arm64 (Apple M2 Pro, macOS 26.4)" in describe(f, real_graph)


def test_an_intel_mac_runs_on_the_cpu(real_graph: Provider) -> None:
    f = host("macos-intel", real_graph)
    assert (f.vendor, f.gpus, f.machine, f.os_version) == ("cpu", (), "x86_64", "10.15.5")
    assert f.warnings == ("this Mac's GPUs (Radeon Pro Vega 64) run no framework's GPU builds: macOS has no CUDA or "
                          "ROCm, and MPS needs Apple silicon; the frameworks run on the CPU",)
    assert hardware_table(f, real_graph) == {"vendor": "cpu", "platform": "darwin/amd64"}


def test_intel_arc_from_xpu_smi_then_sycl_ls(tmp_path: Path, real_graph: Provider) -> None:
    f = recorded(HOSTS / "linux-arc-a770")
    assert (f.vendor, f.source, f.driver, f.level_zero) == ("intel", "xpu-smi discovery", "17013219", True)
    assert [(g.name, g.pci_id) for g in f.gpus] == [("Intel(R) Arc(TM) A770 Graphics", "8086:56a0")]
    d = tmp_path / "no-xpu-smi"
    shutil.copytree(HOSTS / "linux-arc-a770", d)
    (d / "bin" / "xpu-smi").unlink()
    s = complete(recorded(d), real_graph)
    assert (s.source, s.driver, s.level_zero) == ("sycl-ls", "1.3.28454", True)
    assert [(g.name, g.arch) for g in s.gpus] == [("Intel(R) Arc(TM) A770 Graphics", "dg2"),
                                                  ("Intel(R) UHD Graphics 630", "")]
    assert hardware_table(s, real_graph) == {"gpus": ["Arc A770"], "vendor": "intel"}


def test_sycl_ls_of_oneapi_2025_and_opencl_only() -> None:
    f = recorded(HOSTS / "linux-arc-a750-sycl")
    assert (f.vendor, f.driver, f.level_zero, [g.name for g in f.gpus]) == (
        "intel", "1.3.29735", True, ["Intel(R) Arc(TM) A750 Graphics"])
    cl = recorded(HOSTS / "linux-arc-a770-opencl-only")
    assert (cl.vendor, cl.level_zero, [g.name for g in cl.gpus]) == ("intel", False, ["Intel(R) Arc(TM) A770 Graphics"])
    assert cl.warnings == ("sycl-ls lists the Intel GPUs through OpenCL only, not Level Zero, which PyTorch's XPU "
                           "builds need: install Intel's GPU driver (compute runtime with Level Zero)",)
    assert det.parse_sycl_ls("[opencl:cpu][opencl:0] Intel(R) OpenCL, Intel(R) Core(TM) i7-8750H CPU @ 2.20GHz "
                             "OpenCL 3.0 (Build 0) [2024.18.7.0.11_160000]\n") == ("", [], False)


def test_an_arc_b580_known_by_its_pci_id_only(real_graph: Provider) -> None:
    f = recorded(HOSTS / "linux-arc-b580")
    assert (f.vendor, f.source, f.level_zero) == ("intel", "lspci -nn", False)
    assert [(g.name, g.pci_id) for g in f.gpus] == [("Arc B580", "8086:e20b")]  # the audio function is no GPU
    assert "Level Zero: not found" in describe(complete(f, real_graph), real_graph)
    # pci.ids older than the GPU names it "Device e20b": the data's PCI id alias still knows it
    old = HostFacts(vendor="intel", source="lspci -nn", gpus=(GpuInfo(index=0, name="Intel Corporation Device e20b",
                                                                       pci_id="8086:e20b"),))
    assert [g.arch for g in complete(old, real_graph).gpus] == ["bmg"]
    assert hardware_table(complete(old, real_graph), real_graph)["gpus"] == ["Arc B580"]


def test_an_arc_b580_without_lspci_is_known_by_the_kernels_pci_devices(real_graph: Provider) -> None:
    f = recorded(HOSTS / "linux-arc-b580-sysfs")
    assert (f.vendor, f.source, [(g.name, g.pci_id) for g in f.gpus]) == (
        "intel", "/sys/bus/pci/devices", [("Intel GPU [8086:e20b]", "8086:e20b")])
    assert hardware_table(complete(f, real_graph), real_graph) == {"gpus": ["Arc B580"], "vendor": "intel"}


def test_intel_gpus_on_native_windows_from_sycl_ls_exe() -> None:
    f = recorded(HOSTS / "windows-arc-a770-sycl")
    assert (f.platform, f.vendor, f.driver, f.level_zero) == ("windows", "intel", "1.3.28044", True)
    assert [g.name for g in f.gpus] == ["Intel(R) UHD Graphics 770", "Intel(R) Arc(TM) A770 Graphics"]
    assert host_platform(f) == "windows/amd64"


def test_lock_host_on_wsl2_windows_mac_and_arc(real_graph: Provider) -> None:
    spec = parse_spec('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\ncuda = "12.8"\n', "p.toml", real_graph)
    wsl, _ = for_host(spec, host("rtx4090-wsl", real_graph), real_graph)
    t = wsl.targets[0]
    assert (t.wsl, t.platform, str(t.driver), t.windows_driver, str(t.cuda)) == (
        True, "linux/amd64", "591.74", True, "12.8")
    win, _ = for_host(spec, host("windows-rtx2080s-591", real_graph), real_graph)
    assert (win.targets[0].platform, win.targets[0].wsl, [g.name for g in win.targets[0].gpus]) == (
        "windows/amd64", False, ["RTX 2080 SUPER"])
    mac, _ = for_host(spec, host("macos-m3", real_graph), real_graph)
    t = mac.targets[0]
    assert (t.vendor, t.platform, [g.name for g in t.gpus], t.cuda, t.driver) == (
        "apple", "darwin/arm64", ["Apple M3"], None, None)
    m2pro, warnings = for_host(spec, host("macos-m2pro", real_graph), real_graph)  # the shipped data's Apple rows
    assert (m2pro.targets[0].vendor, [g.name for g in m2pro.targets[0].gpus]) == ("apple", ["Apple M2 Pro"])
    assert warnings == []
    intel_mac, _ = for_host(spec, host("macos-intel", real_graph), real_graph)
    assert (intel_mac.targets[0].vendor, intel_mac.targets[0].platform) == ("cpu", "darwin/amd64")
    arc, warnings = for_host(spec, complete(recorded(HOSTS / "windows-arc-a770-sycl"), real_graph), real_graph)
    assert (arc.targets[0].vendor, [g.name for g in arc.targets[0].gpus], arc.targets[0].platform) == (
        "intel", ["Arc A770"], "windows/amd64")
    assert warnings == ["GPU 0 'Intel(R) UHD Graphics 770' is not in envsolve's data; solving without it"]


def test_envsolve_gpus_names_intel_and_apple_archs(real_graph: Provider) -> None:
    f = host("no-gpu", real_graph, {"ENVSOLVE_GPUS": "bmg"})
    assert (f.vendor, [g.arch for g in f.gpus]) == ("intel", ["bmg"])
    assert host("no-gpu", real_graph, {"ENVSOLVE_GPUS": "apple-m4"}).vendor == "apple"


def test_cli_detect_on_wsl2_and_windows_writes_wsl_and_the_platform(monkeypatch: pytest.MonkeyPatch) -> None:
    r = _cli(monkeypatch, "rtx4090-wsl", "detect", "--format", "toml")
    assert r.exit_code == 0 and "wsl = true\n" in r.stdout and 'driver = "591.74"' in r.stdout
    r = _cli(monkeypatch, "windows-rtx2080s-610", "detect", "--format", "toml")
    assert 'platform = "windows/amd64"' in r.stdout and 'driver = "610.62"' in r.stdout
    r = _cli(monkeypatch, "windows-rtx2080s-610", "detect", "--format", "json")
    data = json.loads(r.stdout)
    assert (data["platform"], data["machine"], data["wsl"], data["driver"]) == ("windows", "AMD64", False, "610.62")
    r = _cli(monkeypatch, "macos-m2pro", "detect")
    assert r.exit_code == 0 and r.stdout.startswith(
        "vendor: apple (from sysctl machdep.cpu.brand_string)\nplatform: darwin/arm64 (Apple M2 Pro, macOS 26.4)\n")


def test_cli_lock_host_on_a_gpu_name_nvidia_smi_cut_is_exit_2(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n')
    r = _cli(monkeypatch, "wsl2-rtx4070", "lock", "--host", str(spec))
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert ("ERROR: nvidia-smi: GPU 0: 'NVIDIA GeForce RTX 4070 ...' is cut short by nvidia-smi's table (and "
            "`nvidia-smi -L` did not name it)") in r.stderr
    assert "ENVSOLVE_GPUS=sm_90" in r.stderr and not (tmp_path / "envsolve.lock").exists()


def test_cli_lock_host_under_wsl2_locks_with_the_windows_driver(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n')
    r = _cli(monkeypatch, "rtx4090-wsl", "lock", "--host", str(spec))
    assert r.exit_code == 0, r.output
    assert "host: gpus = ['RTX 4090'], driver = 591.74, vendor = nvidia, wsl = True" in r.stderr


def test_detect_warns_of_an_envsolve_gpus_name_the_data_does_not_know_with_the_nearest(
        monkeypatch: pytest.MonkeyPatch) -> None:
    d = HOSTS / "no-gpu"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={"ENVSOLVE_GPUS": "A10O, H100, sm_80"},
                                                       path=str(d / "bin"), root=d / "root", nvml=False))
    r = CliRunner().invoke(main, ["detect"])
    assert r.exit_code == 0, r.output
    assert r.stderr == ("WARNING: ENVSOLVE_GPUS: unknown GPU 'A10O'; did you mean 'A10' or 'A100' or 'A10G' or "
                        "'A10M'? (or write an architecture: sm_80, 8.0, gfx942)\n")  # H100 and sm_80 are known
