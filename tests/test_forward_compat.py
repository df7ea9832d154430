"""CUDA forward compatibility (issue 43): a data-center fleet on an older driver branch runs a newer
CUDA through NVIDIA's cuda-compat package in the image; a GeForce card, a branch the package does
not support, Windows and WSL2 never do; native and minor-version compatibility come first."""

import shutil
import subprocess
from pathlib import Path

import msgspec.structs
import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.data import load_dir
from envsolve.errors import MatrixError, Unsatisfiable
from envsolve.host.detect import detect
from envsolve.host.doctor import check, compat_libraries_finding
from envsolve.host.facts import GpuInfo, HostFacts
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from envsolve.render.artifacts import render_environment
from envsolve.solve.report import ExplainReporter, answers
from tests.conftest import resolve, spec_of

MATRICES = Path(__file__).parent.parent / "matrices"
# torch 2.15.0 is the first release with CUDA 13 builds only (cu132 default, cu130)
R535 = '[frameworks]\ntorch = ">=2.15"\n[hardware]\ngpus = ["{gpu}"]\ndriver = "535.104.05"\n'


def _lock(text: str, graph: Provider, *, full: bool = False) -> lockfile.Lock:
    resolutions = resolve(text, graph)
    return lockfile.build(project="p", spec_name="project.toml", spec_bytes=text.encode(),
                          data_version=graph.data_version, data_digest=graph.digest, resolutions=resolutions,
                          full={r.target.name: () for r in resolutions} if full else None)


def test_h100_on_r535_runs_cuda_13_by_forward_compatibility(real_graph: Provider) -> None:
    [r] = resolve(R535.format(gpu="H100"), real_graph)
    assert (r.cuda, r.compat, r.driver_min) == ("13.2", "forward", "535.54.03")
    assert r.base_image.startswith("nvidia/cuda:13.2.")
    note = next(w for w in r.warnings if w.startswith("forward compatibility"))
    assert "cuda-compat-13-2" in note and "R535, R570, R580, R590" in note and "data-center GPUs only" in note


def test_the_lock_keeps_forward_frameworks_only_and_full_and_reads_it_back(real_graph: Provider,
                                                                             tmp_path: Path) -> None:
    for full in (False, True):
        lock = _lock(R535.format(gpu="H100"), real_graph, full=full)
        path = tmp_path / f"{full}.lock"
        path.write_text(lockfile.dumps(lock))
        env = lockfile.read(path).environments[0]
        assert (lock.scope, env.compat, env.cuda) == ("full" if full else "frameworks", "forward", "13.2")


def test_the_cli_lock_says_forward(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text(R535.format(gpu="H100"))
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 0, r.output
    assert 'compat = "forward"' in (tmp_path / "envsolve.lock").read_text()
    assert "driver >= 535.54.03 (forward)" in r.output


def test_the_dockerfile_installs_cuda_compat_and_sets_the_library_path(real_graph: Provider) -> None:
    lock = _lock(R535.format(gpu="H100"), real_graph)
    dockerfile = render_environment(lock, lock.environments[0])["Dockerfile"]
    assert "apt-get install -y --no-install-recommends cuda-compat-13-2 \\\n" in dockerfile
    assert "ENV LD_LIBRARY_PATH=/usr/local/cuda-13.2/compat:${LD_LIBRARY_PATH}\n" in dockerfile
    native = _lock(R535.format(gpu="H100").replace("535.104.05", "595.45.04"), real_graph)
    assert "cuda-compat" not in render_environment(native, native.environments[0])["Dockerfile"]


def test_explain_says_forward_compatibility_and_what_it_costs(real_graph: Provider) -> None:
    reporter = ExplainReporter()
    spec = spec_of(R535.format(gpu="H100"), real_graph)
    text = reporter.explanation(answers(real_graph, spec, reporter)).text()
    assert "driver >= 535.54.03 (forward compatibility through cuda-compat-13-2)" in text
    assert "  driver >= 535.54.03 (forward compatibility support of CUDA 13.2)\n" in text
    assert "  note: forward compatibility: the R535 driver runs CUDA 13.2 through cuda-compat-13-2" in text
    assert "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in text


def test_a_geforce_card_on_the_same_driver_is_refused_naming_the_rule(real_graph: Provider) -> None:
    with pytest.raises(Unsatisfiable) as e:
        resolve(R535.format(gpu="RTX 4090"), real_graph)
    assert ("forward compatibility (cuda-compat-13-2) serves data-center GPUs only; RTX 4090 (sm_89) is a "
            "GeForce card") in str(e.value)
    with pytest.raises(Unsatisfiable) as e:
        resolve(R535.format(gpu="RTX A6000"), real_graph)
    assert "RTX A6000 (sm_86) is not a data-center GPU" in str(e.value)


def test_a_branch_the_package_does_not_support_is_refused(real_graph: Provider) -> None:
    with pytest.raises(Unsatisfiable) as e:
        resolve(R535.format(gpu="H100").replace("535.104.05", "545.23.08"), real_graph)
    assert "forward compatibility (cuda-compat-13-0) supports drivers of R535, R570 only, not R545" in str(e.value)


def test_a_driver_that_serves_natively_or_by_minor_version_never_gets_forward(real_graph: Provider) -> None:
    """Forward compatibility comes last: R595 runs CUDA 13.2 natively, R580 by minor-version."""
    [native] = resolve(R535.format(gpu="H100").replace("535.104.05", "595.45.04"), real_graph)
    assert (native.cuda, native.compat) == ("13.2", "native")
    [minor] = resolve(R535.format(gpu="H100").replace("535.104.05", "580.65.06"), real_graph)
    assert (minor.cuda, minor.compat) == ("13.2", "minor-version")
    assert not [w for w in native.warnings + minor.warnings if w.startswith("forward compatibility")]


def test_a_release_that_runs_by_minor_version_is_taken_before_a_newer_one_by_forward(real_graph: Provider) -> None:
    [r] = resolve(R535.format(gpu="H100").replace(">=2.15", ">=2.9"), real_graph)
    assert (r.cuda, r.compat) == ("12.6", "minor-version")


@pytest.mark.parametrize("driver", ["535.104.05", "537.13"])  # a Windows driver's number is no Linux branch
@pytest.mark.parametrize("where", ['wsl = true\n', 'platform = "windows/amd64"\n'])
def test_windows_and_wsl2_never_get_forward(real_graph: Provider, where: str, driver: str) -> None:
    with pytest.raises(Unsatisfiable) as e:
        resolve(R535.format(gpu="H100").replace("535.104.05", driver) + where, real_graph)
    assert "forward compatibility (cuda-compat-13-2) runs on Linux only, not " in str(e.value)
    assert "only, not R537" not in str(e.value)


def _h100(driver: str, *, container: bool = False, gpu: str = "NVIDIA H100 80GB HBM3") -> HostFacts:
    return HostFacts(vendor="nvidia", driver=driver, source="test", container=container,
                     gpus=(GpuInfo(index=0, name=gpu, compute_capability="9.0"),))


def test_doctor_checks_the_branch_and_the_gpu_of_a_forward_environment(real_graph: Provider) -> None:
    env = _lock(R535.format(gpu="H100"), real_graph).environments[0]

    def driver(facts: HostFacts) -> tuple[str, str]:
        [f] = [f for f in check(env, facts, real_graph, installed={}, tools={}) if f.check == "driver"]
        return f.level, f.message

    assert driver(_h100("535.129.03")) == (
        "ok", "driver 535.129.03 (R535) runs CUDA 13.2 by forward compatibility through cuda-compat-13-2 in the "
              "image (it supports R535, R570, R580, R590), as the lock expects")
    level, msg = driver(_h100("545.23.08"))
    assert level == "fail" and msg.startswith("driver 545.23.08 (R545) is not one cuda-compat-13-2 runs on")
    level, msg = driver(_h100("610.43.02"))
    assert level == "warn" and "runs CUDA 13.2 natively" in msg and "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in msg
    geforce = [f for f in check(env, _h100("535.129.03", gpu="NVIDIA GeForce RTX 4090"), real_graph, installed={},
                                tools={}) if f.check == "driver"]
    assert geforce[0].level == "fail" and geforce[0].message.startswith("NVIDIA GeForce RTX 4090 is not a data-center")
    assert geforce[0].fix.startswith("run it on data-center GPUs; on this one, a driver >= ") and "lock --host" \
        not in geforce[0].fix  # the spec already has this driver: a re-lock for it changes nothing


def test_a_forward_lock_made_on_one_branch_runs_on_another_the_package_supports(real_graph: Provider) -> None:
    """The image is the same for every branch cuda-compat supports: a lock made for an R570 fleet
    (its driver_min on R570) is served on R535 from R535's own floor."""
    env = _lock(R535.format(gpu="H100").replace("535.104.05", "570.86.10"), real_graph).environments[0]
    assert (env.compat, env.driver_min.split(".")[0]) == ("forward", "570")
    [f] = [f for f in check(env, _h100("535.129.03"), real_graph, installed={}, tools={}) if f.check == "driver"]
    assert f.level == "ok", f.message


def test_doctor_inside_a_container_looks_for_the_compat_libraries_and_loads_them(real_graph: Provider,
                                                                                   tmp_path: Path) -> None:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("needs a C compiler to make a shared library the loader takes")
    env = _lock(R535.format(gpu="H100"), real_graph).environments[0]
    root = tmp_path / "root"  # a container of the rendered image: what detect finds in it
    compat = root / "usr/local/cuda-13.2/compat"
    compat.mkdir(parents=True)
    (tmp_path / "lib.c").write_text("int cuInit(unsigned int flags) { return (int)flags; }\n")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(compat / "libcuda.so.595.45.04"), str(tmp_path / "lib.c")],
                   check=True)
    (root / ".dockerenv").write_text("")
    seen = detect(environ={}, path=str(tmp_path / "bin"), root=root, nvml=False)
    assert seen.container and seen.cuda_compat == (("/usr/local/cuda-13.2/compat/libcuda.so.595.45.04", ""),)
    inside = msgspec.structs.replace(_h100("535.129.03", container=True), cuda_compat=seen.cuda_compat)
    [found] = [f for f in check(env, inside, real_graph, installed={}, tools={}) if f.check == "container"]
    assert found.level == "ok" and "/usr/local/cuda-13.2/compat load (libcuda.so.595.45.04)" in found.message
    (compat / "libcuda.so.595.45.04").write_text("")  # damaged: there, but the loader refuses it
    broken = detect(environ={}, path=str(tmp_path / "bin"), root=root, nvml=False).cuda_compat
    assert broken[0][1] != ""
    inside = msgspec.structs.replace(inside, cuda_compat=broken)
    [bad] = [f for f in check(env, inside, real_graph, installed={}, tools={}) if f.check == "container"]
    assert bad.level == "fail" and bad.message.startswith(
        "/usr/local/cuda-13.2/compat/libcuda.so.595.45.04 does not load: ")
    [missing] = compat_libraries_finding(env, _h100("535.129.03", container=True))
    assert missing.level == "fail" and missing.message.startswith("no libcuda.so.* in /usr/local/cuda-13.2/compat")
    assert compat_libraries_finding(env, _h100("535.129.03")) == []  # on the host: the image is not there


def _matrices(tmp_path: Path) -> Path:
    for f in MATRICES.glob("*.toml"):
        shutil.copy(f, tmp_path)
    return tmp_path


@pytest.mark.parametrize(("old", "new", "message"), [
    ('package = "cuda-compat-13-0"', 'package = "cuda-compat-13-1"',
     "cuda.toml: compat (13.0).package: 'cuda-compat-13-1' is not CUDA 13.0's: cuda-compat-13-0"),
    ('13-0"\nbranches = ["535", "570"]', '13-0"\nbranches = ["535", "580"]',
     "cuda.toml: compat (13.0).branches: R580 runs CUDA 13.0 natively"),
    ('13-0"\nbranches = ["535", "570"]', '13-0"\nbranches = ["535", "536"]',
     "cuda.toml: compat (13.0).branches: R536 has no [[branch]] row in drivers.toml"),
    ('13-0"\nbranches = ["535", "570"]', '13-0"\nbranches = ["R535"]', "cuda.toml: compat[4].branches: must be a non-empty list of driver branches"),
])
def test_a_bad_compat_row_is_a_matrix_error(tmp_path: Path, old: str, new: str, message: str) -> None:
    cuda = _matrices(tmp_path) / "cuda.toml"
    text = cuda.read_text()
    assert text.count(old) == 1
    cuda.write_text(text.replace(old, new))
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    assert message in str(e.value)


def test_a_bad_forward_compat_flag_is_a_matrix_error(tmp_path: Path) -> None:
    gpus = _matrices(tmp_path) / "gpus.toml"
    gpus.write_text(gpus.read_text().replace('arch = "sm_90"\nforward_compat = true', 'arch = "sm_90"\n'
                                             'forward_compat = "yes"', 1))
    with pytest.raises(MatrixError, match=r"gpus.toml: gpu\[\d+\] \(H100\).forward_compat"):
        load_dir(tmp_path)
