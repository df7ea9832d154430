"""The stack model (issue 39): an environment runs when every component does: the build's platform
and Pythons, the container OS's glibc under its wheels, the driver in its OS's column, the build's
kernels, the CUDA libraries it loads (cuDNN), and the compiler it runs on the user's machine. Each
case is a user's report or NVIDIA's own document, settled by a maintainer, a fix or the
reporter's verified result; each failed on the code before the model had the component."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.data import load
from envsolve.errors import Unsatisfiable
from envsolve.provider import Provider
from envsolve.solve.fixes import solve_explained
from envsolve.spec import parse_spec

P = Provider(load())

# (spec, "ok" or "refused", what the answer must say, the report or document that settles it)
CASES = [
    # CUDA libraries: a cuDNN 7 (CUDA 9/10 builds) ships SASS up to Turing only and no PTX: PTX of
    # the framework's own kernels does not make cuDNN run on Ampere
    ('[frameworks]\ntorch = "==1.5.1"\n[hardware]\ngpus = ["RTX 3080 Ti"]\n', "refused",
     "its cuDNN 7.6.3.30 has no kernels for RTX 3080 Ti (sm_86)",
     "https://github.com/zzhang1987/Factor-Graph-Neural-Network/issues/4"),
    # run-time compiler: XLA compiles every kernel; jaxlib 0.4.30's XLA targets up to sm_90a
    ('[frameworks]\njax = "==0.4.30"\n[hardware]\ngpus = ["RTX 5090"]\n', "refused",
     "compiles its GPU kernels at run time", "https://github.com/google-deepmind/alphafold/issues/1085"),
    ('[frameworks]\njax = "<=0.5.1"\n[hardware]\ngpus = ["RTX 5090"]\n', "ok", "jax 0.5.1",
     "https://github.com/openxla/xla/pull/21822"),
    # a cuDNN named by its line (TensorFlow's tested configurations say 8.1): cuDNN 8.1 has no
    # Blackwell kernels and no PTX
    ('[frameworks]\ntensorflow = "==2.10.0"\n[hardware]\ngpus = ["RTX PRO 6000 Blackwell"]\n', "refused",
     "its cuDNN 8.1 has no kernels", "https://docs.nvidia.com/deeplearning/cudnn/archives/cudnn-811/support-matrix/index.html"),
    # torch 1.2's statically linked cuDNN 7 no more lets it pass where 1.3-1.5 are refused
    ('[frameworks]\ntorch = "<2.7"\n[hardware]\ngpus = ["RTX 5090"]\n', "refused", "sm_120 needs CUDA >= 12.8",
     "https://github.com/uci-cbcl/UFold/issues/20"),
    # Triton 3.4/3.5's ptxas knows sm_120 but not B300's sm_103
    ('[frameworks]\ntorch = "==2.8.*"\n[hardware]\ngpus = ["GB300"]\n', "ok", "Value 'sm_103a' is not defined",
     "https://github.com/triton-lang/triton/issues/8539"),
    # WSL 2: the lock's floor is the first Windows driver whose CUDA reaches WSL 2, not below it
    ('[frameworks]\ntorch = "==1.10.*"\n[hardware]\ngpus = ["RTX 3060"]\nwsl = true\n', "ok", "driver >= 496.04",
     "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"),
    # a release with no build for the platform names one whose build there has code for the GPU
    ('[frameworks]\ntorch = "==2.6.0"\n[hardware]\ngpus = ["GTX 1080"]\nplatform = "linux/arm64"\n', "refused",
     "none of torch's builds for linux/arm64 has code for GTX 1080 (sm_61)",
     "https://github.com/pytorch/test-infra/blob/release/2.7/tools/scripts/generate_binary_build_matrix.py"),
    ('[frameworks]\ntorch = "==2.6.0"\n[hardware]\ngpus = ["GH200"]\nplatform = "linux/arm64"\n', "refused",
     "the first torch release after it with one is 2.7.0 (cu128)",
     "https://github.com/pytorch/test-infra/blob/release/2.7/tools/scripts/generate_binary_build_matrix.py"),
    # a glibc refusal's fix names an OS whose glibc the wheels install on
    ('[frameworks]\ntorch = ">=2.7"\n[hardware]\ngpus = ["A100"]\n[container]\nos = "centos7"\n', "refused",
     "[container] os = 'ubuntu", "https://github.com/pytorch/pytorch/issues/123649"),
    # run-time compiler that only torch.compile uses: Triton 3.5's ptxas does not know sm_121 (GB10)
    ('[frameworks]\ntorch = "==2.9.1"\n[hardware]\ngpus = ["DGX Spark"]\nplatform = "linux/arm64"\n', "ok",
     "run-time compiler (Triton", "https://github.com/triton-lang/triton/issues/8539"),
    # WSL 2: R495 is the first Windows driver branch whose CUDA reaches WSL 2
    ('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 3090"]\nwsl = true\ndriver = "472.12"\n', "refused",
     "the first branch whose CUDA reaches WSL 2", "https://docs.nvidia.com/cuda/wsl-user-guide/index.html"),
    # Windows: the first Windows driver that knows Blackwell is CUDA 12.8's Windows floor, 570.65
    ('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\nplatform = "windows/amd64"\ndriver = "570.50"\n',
     "refused", "the first driver that knows sm_120 is 570.65",
     "https://docs.nvidia.com/cuda/archive/12.8.0/cuda-toolkit-release-notes/index.html"),
    # the OS under the wheels: torch 2.7's wheels are manylinux_2_28; Ubuntu 18.04 has glibc 2.27
    ('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 4090"]\n[container]\nos = "ubuntu18.04"\n', "ok",
     "torch 2.6.0", "https://github.com/pytorch/pytorch/issues/123649"),
    # the wrong reason: the Python is not what decides when no release in range serves the GPU
    ('[project]\npython = "3.14"\n[frameworks]\ntorch = "<2.7"\n[hardware]\ngpus = ["RX 9070 XT"]\n', "refused",
     "gfx1201 needs ROCm >= 6.4", "https://rocm.docs.amd.com/en/docs-6.4.1/compatibility/compatibility-matrix.html"),
    # shared libraries: two frameworks must load one cuDNN (a pin against another's minimum)
    ('[frameworks]\ntorch = "==2.3.1"\njax = "==0.4.30"\n[hardware]\ngpus = ["RTX 4090"]\n', "refused",
     "pins nvidia-cudnn-cu12==8.9.2.26", "package metadata of torch==2.3.1 and jax-cuda12-plugin==0.4.30"),
]


def _answer(text: str) -> tuple[str, str]:
    spec = parse_spec(text, "project.toml", P)
    try:
        [r] = solve_explained(P, spec)
    except Unsatisfiable as e:
        return "refused", e.message + "\n" + "; ".join(e.fixes)
    return "ok", " ".join([*(f"{p.name} {p.version}" for p in r.packages), *r.warnings, f"driver >= {r.driver_min}"])


@pytest.mark.parametrize(("text", "status", "says", "source"), CASES, ids=[c[2][:40] for c in CASES])
def test_case_from_a_report(text: str, status: str, says: str, source: str) -> None:
    got, message = _answer(text)
    assert (got, says in message) == (status, True), f"{source}\n{message}"


def test_the_refusal_names_the_component_and_its_tip_works(tmp_path: Path) -> None:
    """The command line says the component that decides and a change that works: the TIP's
    release locks."""
    spec = tmp_path / "project.toml"
    spec.write_text(CASES[1][0])
    got = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)])
    assert got.exit_code == 1 and "compiles its GPU kernels at run time" in got.output
    tip = next(line for line in got.output.splitlines() if line.startswith("TIP:"))
    assert "jax >= 0.5.1 works" in tip
    spec.write_text('[frameworks]\njax = ">=0.5.1"\n[hardware]\ngpus = ["RTX 5090"]\n')
    assert CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)]).exit_code == 0


def test_a_cudnn_with_ptx_runs_on_a_newer_gpu_where_the_build_does() -> None:
    """cuDNN 9 for CUDA 12 is hardware forward compatible (its PTX JIT-compiles for a newer GPU):
    the row's ``ptx`` says so, and the rule takes it; a cuDNN 8 has none."""
    assert P.cudnn_row("9.1.0.70", 12) is not None and P.cudnn_row("9.1.0.70", 12).ptx  # type: ignore[union-attr]
    assert not P.cudnn_row("8.9.2.26", 12).ptx  # type: ignore[union-attr]


def _locked(text: str) -> object:
    from envsolve.lock import model as lockfile

    spec = parse_spec(text, "project.toml", P)
    lock = lockfile.build(project=spec.name, spec_name="project.toml", spec_bytes=text.encode(),
                          data_version=P.data_version, data_digest=P.digest, resolutions=solve_explained(P, spec),
                          pip=(), conda=(), apt=(), urls={}, full=None)
    return lock.environments[0]


def test_doctor_asks_the_same_components_of_the_host() -> None:
    """A jax 0.4.30 environment locked for an H100, on a host with an RTX 5090: its PTX reaches the
    GPU, but XLA cannot compile for it, so doctor fails it as the lock would have refused it; a
    torch 2.9.1 environment on a GB10 gets the torch.compile warning the lock gives."""
    from envsolve.host.doctor import check
    from envsolve.host.facts import GpuInfo, HostFacts

    rtx5090 = HostFacts(vendor="nvidia", driver="580.65.06", source="test",
                        gpus=(GpuInfo(index=0, name="NVIDIA GeForce RTX 5090", compute_capability="12.0"),))
    env = _locked('[frameworks]\njax = "==0.4.30"\n[hardware]\ngpus = ["H100"]\n')
    gpu = [(f.level, f.message) for f in check(env, rtx5090, P, installed={}, tools={}) if f.check == "gpu"]  # type: ignore[arg-type]
    assert gpu[0][0] == "fail" and "compiles its GPU kernels at run time" in gpu[0][1], gpu
    gb10 = HostFacts(vendor="nvidia", driver="580.95.05", source="test", machine="aarch64",
                     gpus=(GpuInfo(index=0, name="NVIDIA GB10", compute_capability="12.1"),))
    env = _locked('[frameworks]\ntorch = "==2.9.1"\n[hardware]\ngpus = ["DGX Spark"]\nplatform = "linux/arm64"\n')
    gpu = [(f.level, f.message) for f in check(env, gb10, P, installed={}, tools={}) if f.check == "gpu"]  # type: ignore[arg-type]
    assert gpu[0][0] == "warn" and "run-time compiler (Triton" in gpu[0][1], gpu


def test_a_matrix_cell_is_answered_for_its_own_container_os() -> None:
    """Cells that differ only in OS share their builds only when the OSes' glibc is the same: the
    first OS of the axis no longer answers for the others (torch 2.7's manylinux_2_28 wheels)."""
    from envsolve.matrix.cells import solve_cells
    from envsolve.matrix.parse import parse_matrix

    for oses in (["ubuntu18.04", "ubuntu22.04"], ["ubuntu22.04", "ubuntu18.04"]):
        text = ('[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\naccelerator = ["cu126"]\ngpus = ["RTX 4090"]\n'
                f"os = {oses!r}\n".replace("'", '"'))
        ms = parse_matrix(text, "m.toml", P)
        got = {r.cell.get("os"): r.valid for r in solve_cells(P, ms, ms.cells())}
        assert got == {"ubuntu18.04": False, "ubuntu22.04": True}, oses


def test_a_pinned_cublas_is_a_component_of_its_own() -> None:
    """A build that pins its cuBLAS wheel loads that release's kernels: cuBLAS 12.4 has SASS up to
    sm_90 and PTX of sm_90 (the wheel's fatbins, libraries.toml), so a build with Blackwell SASS of
    its own but cuBLAS 12.4 does not serve an RTX 5090 unless the driver JIT-compiles that PTX."""
    import msgspec.structs

    from envsolve.solve.fit import fit
    from envsolve.solve.model import No

    spec = parse_spec('[frameworks]\ntorch = "==2.6.0"\n[hardware]\ngpus = ["RTX 5090"]\n', "project.toml", P)
    rel = next(r for r in P.releases("torch") if r.raw == "2.6.0")
    b = next(x for x in P.builds(rel) if x.variant == "cu124")
    assert dict(b.pins)["nvidia-cublas-cu12"] == "12.4.5.8"
    with_sass = msgspec.structs.replace(b, archs=(*b.archs, "sm_120"), cudnn="")  # cuDNN aside
    from envsolve.solve.cache import Cache

    got = fit(P, Cache(), spec, spec.targets[0], rel, with_sass)
    assert isinstance(got, No) and got.code == "cublas" and "its cuBLAS 12.4.5.8 has no kernels for RTX 5090" in got.text
    assert not isinstance(fit(P, Cache(), spec, spec.targets[0], rel, msgspec.structs.replace(
        with_sass, pins=tuple(p for p in b.pins if p[0] != "nvidia-cublas-cu12"))), No)


def test_an_accelerator_naming_builds_of_two_stacks_is_said_so() -> None:
    """A matrix cell's accelerator value names each framework's own variant: where those builds are
    of different ROCm (torch 2.4.1's rocm6.0 is ROCm 6.0, jax 0.5.0's 6.2) the cell says so, and a
    cell of one of them is that build."""
    from envsolve.matrix.cells import solve_cells
    from envsolve.matrix.parse import parse_matrix

    both = parse_matrix('[matrix]\npython = ["3.11"]\ntorch = ["2.4.1"]\njax = ["0.5.0"]\naccelerator = ["rocm6.0"]\n'
                        'gpus = ["MI300X"]\n', "m.toml", P)
    [cell] = solve_cells(P, both, both.cells())
    assert cell.resolution is None and "names builds of different ROCm (jax's is ROCm 6.2, torch's is ROCm 6.0)" in cell.reason
    alone = parse_matrix('[matrix]\npython = ["3.11"]\njax = ["0.5.0"]\naccelerator = ["rocm6.0"]\ngpus = ["MI300X"]\n',
                         "m.toml", P)
    [cell] = solve_cells(P, alone, alone.cells())
    assert cell.resolution is not None and [(p.name, p.variant) for p in cell.resolution.packages
                                           if p.name == "jax"] == [("jax", "rocm6.0")]
