"""PTX forward compatibility, one rule for every framework: PTX for compute capability X JIT-compiles
on a GPU of capability >= X whatever CUDA made the build (the driver knowing the GPU and running
the build's CUDA natively); arch-specific PTX (``compute_90a``) only on its own compute capability.
A JIT-only fit is said in the lock (``jit_archs``) and in ``envsolve explain``; a refusal says
what the build carries and why none of it runs. Cases from public reports: tests/cases/
rtx3090-tensorflow-2.4.1, rtx5090-onnxruntime-1.22, rtx5090-onnxruntime-1.23, b200-onnxruntime-1.23."""

import json
from pathlib import Path

import msgspec.structs
import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.data import Build
from envsolve.domain import kernels
from envsolve.errors import LockError
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from envsolve.solve.cache import Cache
from envsolve.solve.fit import fit
from envsolve.solve.model import Candidate, No
from envsolve.versions import parse_arch
from tests.conftest import pkg, resolve, spec_of
from tests.test_solve import unsat

CASES = Path(__file__).parent / "cases"


def test_plain_ptx_jits_to_its_arch_and_every_newer_one() -> None:
    compute_80 = parse_arch("compute_80")
    assert all(compute_80.ptx_jits_to(parse_arch(g)) for g in ("sm_80", "sm_86", "sm_90", "sm_100", "sm_120"))
    assert not compute_80.ptx_jits_to(parse_arch("sm_75"))


def test_arch_specific_ptx_jits_to_its_own_compute_capability_only() -> None:
    compute_90a = parse_arch("compute_90a")
    assert compute_90a.ptx_jits_to(parse_arch("sm_90"))
    assert not any(compute_90a.ptx_jits_to(parse_arch(g)) for g in ("sm_89", "sm_100", "sm_103", "sm_120"))


def test_family_specific_ptx_jits_within_its_family_at_an_equal_or_higher_minor() -> None:
    compute_100f = parse_arch("compute_100f")
    assert compute_100f.ptx_jits_to(parse_arch("sm_100")) and compute_100f.ptx_jits_to(parse_arch("sm_103"))
    assert not compute_100f.ptx_jits_to(parse_arch("sm_120")) and not compute_100f.ptx_jits_to(parse_arch("sm_90"))


def _build(real_graph: Provider, package: str, version: str, variant: str) -> Build:
    return next(b for b in real_graph.m.builds if (b.package, b.raw, b.variant) == (package, version, variant))


def _fit_on(real_graph: Provider, b: Build, gpu: str, driver: str = "") -> Candidate | No:
    text = f'[frameworks]\n{b.package} = "=={b.raw}"\n[hardware]\ngpus = ["{gpu}"]\n'
    spec = spec_of(text + (f'driver = "{driver}"\n' if driver else ""), real_graph)
    (t,) = spec.targets
    rel = next(r for r in real_graph.releases(b.package) if r.raw == b.raw)
    return fit(real_graph, Cache(), spec, t, rel, b)


def test_a_compute_90a_only_build_runs_on_an_h100_by_jit_and_nowhere_newer(real_graph: Provider) -> None:
    only_90a = msgspec.structs.replace(_build(real_graph, "onnxruntime", "1.23.0", "cuda12"), archs=(), ptx=("sm_90a",))
    assert kernels(only_90a, parse_arch("sm_90")) == "ptx" and kernels(only_90a, parse_arch("sm_100")) == ""
    on_h100 = _fit_on(real_graph, only_90a, "H100")
    assert isinstance(on_h100, Candidate) and on_h100.jit == ("sm_90",)
    on_b200 = _fit_on(real_graph, only_90a, "B200")
    assert isinstance(on_b200, No) and on_b200.code == "arch"
    assert on_b200.text == ("no kernels for B200 (sm_100): compiled for none; PTX compute_90a, arch-specific PTX that "
                            "JIT-compiles for sm_90 only: no SASS for sm_100 and no plain PTX at or below it")


def test_tensorflow_2_4_and_2_5_with_one_arch_list_get_one_answer_on_an_rtx_3090(real_graph: Provider) -> None:
    # both carry sm_35 .. sm_80 SASS and compute_80 PTX; CUDA 11.0 (2.4) cannot target sm_86, CUDA 11.2 (2.5) can:
    # sm_80 SASS runs on 8.6 either way
    for version, cuda in (("2.4.1", "11.0"), ("2.5.0", "11.2")):
        (r,) = resolve(f'[frameworks]\ntensorflow = "=={version}"\n[hardware]\ngpus = ["RTX 3090"]', real_graph)
        assert pkg(r, "tensorflow") == (version, "cuda")
        assert (r.cuda, r.compat, r.jit_archs) == (cuda, "native", ())
    (r,) = resolve('[frameworks]\ntensorflow = "==2.4.1"\n[hardware]\ngpus = ["RTX 3090"]', real_graph)
    assert r.driver_min == "455.23"  # the first driver that knows sm_86 (CUDA 11.1's), above CUDA 11.0's own floor


def test_tensorflow_2_4_reaches_an_h100_through_its_cuda_11_0_ptx_but_its_cudnn_does_not(real_graph: Provider) -> None:
    # CUDA 11.0 cannot target sm_90, but its compute_80 PTX JIT-compiles there on a driver that knows
    # the H100; its cuDNN 8.0 ships SASS up to sm_80 and no PTX (hardware forward compatibility came
    # with cuDNN 9 for CUDA 12), so the build does not serve the H100 (issue 39)
    e = unsat('[frameworks]\ntensorflow = "==2.4.1"\n[hardware]\ngpus = ["H100"]', real_graph)
    assert "its cuDNN 8.0 has no kernels for H100 (sm_90)" in str(e) and "no PTX to JIT-compile" in str(e)
    # TensorFlow 2.15 (CUDA 12.2) reaches it through compute_80 PTX too, and its cuDNN 8.9 has sm_90 kernels
    (r,) = resolve('[frameworks]\ntensorflow = "==2.15.0"\n[hardware]\ngpus = ["H100"]', real_graph)
    assert (r.cuda, r.compat, r.jit_archs) == ("12.2", "native", ("sm_90",))
    assert any("has no SASS for sm_90: the driver JIT-compiles its PTX (compute_80 -> sm_90)" in w for w in r.warnings)


def test_a_driver_older_than_the_gpu_is_the_cause_not_the_builds_cuda(real_graph: Provider) -> None:
    e = unsat('[frameworks]\ntensorflow = "==2.4.1"\n[hardware]\ngpus = ["RTX 3090"]\ndriver = "450.80.02"', real_graph)
    assert "predates RTX 3090 (sm_86)" in str(e) and "needs CUDA >= 11.1" not in str(e)


def test_the_jit_needs_a_driver_that_runs_the_builds_cuda_natively(real_graph: Provider) -> None:
    # TensorFlow 2.15 (CUDA 12.2) reaches an H100 only through compute_80 PTX; R525 runs CUDA 12.2 only by
    # minor-version compatibility, which serves SASS but not the JIT
    e = unsat('[frameworks]\ntensorflow = "==2.15.0"\n[hardware]\ngpus = ["H100"]\ndriver = "525.60.13"', real_graph)
    assert ("driver 525.60.13 runs CUDA 12.2 only by minor-version compatibility; needs >= 535.54.03 (H100 (sm_90) "
            "runs only through PTX JIT, which needs a driver that runs CUDA 12.2 natively)") in str(e)


def test_onnxruntime_1_23s_arch_specific_ptx_is_the_true_cause_on_blackwell(real_graph: Provider) -> None:
    e = unsat('[frameworks]\nonnxruntime = "==1.23.0"\n[hardware]\ngpus = ["RTX 5090"]', real_graph)
    assert "PTX compute_90a, arch-specific PTX that JIT-compiles for sm_90 only" in str(e)
    assert "needs CUDA >= 12.8" not in str(e)
    (r,) = resolve('[frameworks]\nonnxruntime = "==1.22.0"\n[hardware]\ngpus = ["RTX 5090"]', real_graph)
    assert (pkg(r, "onnxruntime-gpu"), r.jit_archs, r.driver_min) == (("1.22.0", "cuda12"), ("sm_120",), "570.26")


def test_a_build_with_sass_is_preferred_to_one_that_needs_the_jit(real_graph: Provider) -> None:
    # TensorFlow 1.15: the default build reaches an A100 through compute_70 PTX, NVIDIA's build has sm_80 SASS
    (r,) = resolve('[frameworks]\ntensorflow = "==1.15.*"\n[hardware]\ngpus = ["A100"]', real_graph)
    assert pkg(r, "nvidia-tensorflow") == ("1.15.5+nv23.3", "nv23.3") and r.jit_archs == ()


def _case_lock(tmp_path: Path, name: str) -> str:
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / name / "project.toml").read_bytes())
    r = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)])
    assert r.exit_code == 0, r.output
    return (tmp_path / "envsolve.lock").read_text()


def test_the_lock_records_jit_archs_and_reads_them_back(tmp_path: Path) -> None:
    text = _case_lock(tmp_path, "rtx5090-onnxruntime-1.22")
    lock = lockfile.loads(text, "envsolve.lock")
    assert lock.environments[0].jit_archs == ("sm_120",)
    assert lockfile.dumps(lock) == text


def test_a_lock_whose_jit_archs_are_not_its_gpus_is_refused(tmp_path: Path) -> None:
    text = _case_lock(tmp_path, "rtx5090-onnxruntime-1.22").replace('jit_archs = [\n    "sm_120",', 'jit_archs = [\n    "sm_90",')
    with pytest.raises(LockError, match=r"environments\[0\]\.jit_archs.*sm_90 is not one of the environment's gpu_archs"):
        lockfile.loads(text, "envsolve.lock")
    bad = text.replace('jit_archs = [\n    "sm_90",', 'jit_archs = [\n    "sm_120; rm -rf /",')
    with pytest.raises(LockError, match=r"environments\[0\]\.jit_archs\[0\]"):
        lockfile.loads(bad, "envsolve.lock")


def test_explain_says_a_jit_only_fit_in_text_and_json(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / "rtx5090-onnxruntime-1.22" / "project.toml").read_bytes())
    text = CliRunner().invoke(main, ["explain", str(spec)])
    assert text.exit_code == 0
    assert ("  PTX JIT: onnxruntime 1.22.0 (cuda12) has no SASS for sm_120: the driver JIT-compiles its PTX "
            "(compute_90 -> sm_120), so the first run compiles its kernels, which can take minutes") in text.stdout
    assert "\"Value 'sm_120' is not defined\"" in text.stdout
    out = CliRunner().invoke(main, ["explain", "--format", "json", str(spec)])
    [t] = json.loads(out.stdout)["targets"]
    assert t["chosen"][0]["jit"] == ["sm_120"]
    assert any(w.startswith("onnxruntime 1.22.0 (cuda12) has no SASS for sm_120") for w in t["warnings"])


def test_onnxruntime_1_23_2_is_forward_compatible_again_and_1_29_has_no_kernels_for_a_b200(real_graph: Provider) -> None:
    # read off the wheels: 1.23.2 carries plain compute_90 PTX again; from 1.29 the CUDA 13 wheels carry
    # sm_90a and sm_120a SASS but no sm_100 SASS and no PTX (https://github.com/microsoft/onnxruntime/pull/31992)
    (r,) = resolve('[frameworks]\nonnxruntime = "==1.23.2"\n[hardware]\ngpus = ["RTX 5090"]', real_graph)
    assert r.jit_archs == ("sm_120",)
    (r,) = resolve('[frameworks]\nonnxruntime = "*"\n[hardware]\ngpus = ["B200"]', real_graph)
    assert (pkg(r, "onnxruntime-gpu"), r.jit_archs) == (("1.28.0", "cuda13"), ())
    e = unsat('[frameworks]\nonnxruntime = "==1.31.1"\n[hardware]\ngpus = ["B200"]', real_graph)
    assert ("no kernels for B200 (sm_100): compiled for sm_75, sm_80, sm_86, sm_89, sm_90a, sm_120a: no SASS for "
            "sm_100 and no PTX at or below it") in str(e)
