"""Solver rules on the fixture universe (tests/fixtures/matrices)."""

import shutil
from pathlib import Path

import pytest

from envsolve.data import load_dir
from envsolve.errors import Unsatisfiable
from envsolve.provider import Provider
from envsolve.solve import solve_explained
from envsolve.solve.report import ExplainReporter
from tests.conftest import FIXTURE, pkg, resolve, spec_of


def one(text: str, g: Provider):  # type: ignore[no-untyped-def]
    (r,) = resolve(text, g)
    return r


def unsat(text: str, g: Provider) -> Unsatisfiable:
    with pytest.raises(Unsatisfiable) as e:
        solve_explained(g, spec_of(text, g))
    return e.value


def test_newest_torch_default_build_when_it_serves_every_gpu(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100", "H100"]', fixture_graph)
    assert pkg(r, "torch") == ("2.7.1", "cu126")
    assert (r.python, r.cuda, r.cudnn, r.compat, r.driver_min) == ("3.13", "12.6", "9.5.1.17", "native", "560.28.03")
    assert r.gpu_archs == ("sm_80", "sm_90")
    assert r.base_image == "nvidia/cuda:12.6.3-base-ubuntu24.04"


def test_new_gpu_on_old_framework_is_explained_in_gpu_terms(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "==2.5.1"\n[hardware]\ngpus = ["RTX 5090"]', fixture_graph)
    assert e.exit_code == 1
    assert e.clashes[0].reason == ("torch 2.5.1 has no build for RTX 5090 (sm_120): sm_120 needs CUDA >= 12.8, "
                                   "and torch 2.5.1 builds stop at cu124 (CUDA 12.4)")
    assert e.fixes[0] == "torch >= 2.7.1 works (for example torch 2.7.1 cu128)"


def test_ptx_of_an_older_cuda_does_not_serve_a_gpu_that_cuda_does_not_know(fixture_graph: Provider) -> None:
    # cu126 carries sm_90 PTX, but CUDA 12.6 knows no sm_120: the cu128 build is taken.
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]', fixture_graph)
    assert pkg(r, "torch") == ("2.7.1", "cu128")
    assert r.driver_min == "570.26"


def test_ptx_serves_a_newer_gpu_only_with_native_driver_support(fixture_graph: Provider) -> None:
    # jax 0.4.30 cuda12 has SASS up to sm_80 and PTX for sm_90: H100 runs it through the JIT.
    r = one('[frameworks]\njax = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "535.104.05"', fixture_graph)
    assert pkg(r, "jax") == ("0.4.30", "cuda12") and r.compat == "native"
    e = unsat('[frameworks]\njax = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "528.24.02"', fixture_graph)
    assert "runs CUDA 12.1 only by minor-version compatibility; needs >= 530.30.02 " \
           "(H100 (sm_90) runs only through PTX JIT, which needs a driver that runs CUDA 12.1 natively)" in e.clashes[0].reason
    assert "a driver >= 530.30.02 (R530 or newer; with it: jax 0.4.30 cuda12)" in e.fixes


def test_old_driver_takes_minor_version_compatibility_and_a_runnable_image(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\ndriver = "535.104.05"', fixture_graph)
    assert pkg(r, "torch") == ("2.7.1", "cu126")
    assert (r.compat, r.driver_min) == ("minor-version", "525.60.13")
    # the container toolkit would refuse a CUDA 12.6 image on 535: the newest image it runs
    assert r.base_image == "nvidia/cuda:12.2.2-base-ubuntu22.04" or r.base_image.startswith("nvidia/cuda:12.1.1-")


def test_driver_too_old_for_any_build(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\ndriver = "450.51.06"', fixture_graph)
    assert "driver 450.51.06 is too old for CUDA 12.6: needs >= 560.28.03 " \
           "(or >= 525.60.13 by minor-version compatibility)" in e.clashes[0].reason


def test_driver_that_predates_the_gpu(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\ndriver = "560.35.03"', fixture_graph)
    assert e.clashes[0].reason == ("predates RTX 5090 (sm_120): the first driver that knows sm_120 is 570.26 "
                                   "(shipped with CUDA 12.8.0)")
    assert e.fixes == ("a driver >= 570.26 (R570 or newer)",)


def test_driver_branch_that_dropped_the_generation(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["P100"]\ndriver = "590.44.01"', fixture_graph)
    assert e.clashes[0].reason == "driver branch R590 no longer supports Pascal GPUs (P100 (sm_60))"
    assert e.fixes == ("run those GPUs on a driver of branch R570 or older",)


def test_kepler_takes_the_last_build_with_its_sass_under_minor_version(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["K80"]', fixture_graph)
    assert pkg(r, "torch") == ("2.3.1", "cu118")
    assert (r.compat, r.driver_min) == ("minor-version", "450.80.02")
    assert r.base_image == "nvidia/cuda:11.4.3-base-ubuntu22.04"  # runs on R470, the last for Kepler


def test_every_gpu_of_a_target_is_served_by_one_build(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["K80", "RTX 5090"]', fixture_graph)
    assert any("K80" in f for f in e.fixes) and any("RTX 5090" in f for f in e.fixes)


def test_cuda_pin_is_honoured(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\ncuda = "11.8"', fixture_graph)
    assert pkg(r, "torch") == ("2.7.1", "cu118") and r.cuda == "11.8"


def test_amd_gets_a_rocm_build_that_lists_the_gfx_target(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["MI300X"]', fixture_graph)
    assert pkg(r, "torch") == ("2.7.1", "rocm6.3") and r.accelerator == "rocm" and r.rocm == "6.3"
    assert r.base_image == "rocm/dev-ubuntu-22.04:6.3.3"
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["MI250X"]\nrocm = "6.2"', fixture_graph)
    assert pkg(r, "torch") == ("2.5.1", "rocm6.2")


def test_amd_without_a_rocm_build_is_not_silently_given_cpu(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntensorflow = "*"\n[hardware]\ngpus = ["MI300X"]', fixture_graph)
    assert e.clashes[0].reason == "tensorflow 2.18.0 has no ROCm build (its builds: cpu, cuda)"


def test_cpu_only(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\ntorchvision = "*"', fixture_graph)
    assert pkg(r, "torch") == ("2.7.1", "cpu") and pkg(r, "torchvision") == ("0.22.1", "cpu")
    assert (r.accelerator, r.cuda, r.compat) == ("cpu", "", "")
    assert r.base_image == "python:3.13.0-slim-bookworm"


def test_companion_range_moves_torch(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\ntorchvision = "<0.20"', fixture_graph)
    assert pkg(r, "torch")[0] == "2.3.1" and pkg(r, "torchvision")[0] == "0.18.1"


def test_python_range_picks_the_newest_python_and_moves_releases(fixture_graph: Provider) -> None:
    r = one('[project]\npython = "<3.9"\n[frameworks]\ntorch = "*"', fixture_graph)
    assert (r.python, pkg(r, "torch")[0]) == ("3.8", "2.3.1")
    e = unsat('[project]\npython = ">=3.14"\n[frameworks]\ntorch = "*"', fixture_graph)
    assert "has no wheel for Python >=3.14" in e.clashes[0].reason
    assert "Python 3.13 (with it: torch 2.7.1 cpu)" in e.fixes


def test_bundled_cudnn_clash_between_torch_and_tensorflow(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "*"\ntensorflow = "*"\n[hardware]\ngpus = ["A100"]', fixture_graph)
    assert any("bundles cuDNN 9.5.1.17 but tensorflow 2.18.0 (cuda) bundles cuDNN 9.3.0.75" in c.reason
               for c in e.clashes)


def test_tensorflow_2_15_wants_keras_2(fixture_graph: Provider) -> None:
    e = unsat('[frameworks]\ntensorflow = "==2.15.*"\nkeras = ">=3"\n[hardware]\ngpus = ["T4"]', fixture_graph)
    assert e.clashes[0].reason == "tensorflow 2.15.1 (cuda) requires keras<2.16,>=2.15.0, not 3.6.0"
    assert e.fixes[0] == "tensorflow >= 2.17.0 works (for example tensorflow 2.18.0 cuda)"


def test_keras_backend_brings_its_framework(fixture_graph: Provider) -> None:
    r = one('[frameworks]\nkeras = { version = ">=3", backend = "torch" }\n[hardware]\ngpus = ["T4"]', fixture_graph)
    assert pkg(r, "keras") == ("3.6.0", "any") and pkg(r, "torch") == ("2.7.1", "cu126")
    assert r.keras_backend == "torch"


def test_frameworks_share_one_cuda_major(fixture_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\njax = "*"\n[hardware]\ngpus = ["A100"]\ncuda = "12"', fixture_graph)
    assert pkg(r, "jax") == ("0.4.30", "cuda12") and pkg(r, "torch")[1].startswith("cu12")


def test_several_targets_resolve_independently(fixture_graph: Provider) -> None:
    rs = resolve('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n[targets.amd]\ngpus = ["MI300X"]\n'
                 '[targets.cpu]\nvendor = "cpu"', fixture_graph)
    assert [(r.target.name, pkg(r, "torch")[1]) for r in rs] == [("default", "cu126"), ("amd", "rocm6.3"), ("cpu", "cpu")]


def test_solving_is_deterministic(fixture_graph: Provider) -> None:
    text = '[frameworks]\ntorch = "*"\nkeras = ">=3"\n[hardware]\ngpus = ["A100", "RTX 4090"]'
    assert resolve(text, fixture_graph) == resolve(text, fixture_graph)


def test_explain_lists_choices_and_rejections(fixture_graph: Provider) -> None:
    rep = ExplainReporter()
    rs = solve_explained(fixture_graph, spec_of('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]', fixture_graph), rep)
    text = rep.text(rs, verbose=True)
    assert "chose torch 2.7.1 (cu128): newest release that fits, the newest usable build (the default build does not fit)" in text
    assert ("torch 2.7.1 (cu118): no kernels for RTX 5090 (sm_120): compiled for sm_50, sm_60, sm_70, sm_75, sm_80, "
            "sm_86, sm_89, sm_90: no SASS for sm_120 and no PTX at or below it (sm_120 needs CUDA >= 12.8; this build "
            "is CUDA 11.8)") in text


# ---------------------------------------------------------------------------- legacy and data-only frameworks


def test_a_bundled_cuda_build_whose_image_was_removed_gets_the_nearest_image_the_driver_runs(
        real_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "==1.8.1"\n[hardware]\ngpus = ["T4"]', real_graph)
    assert pkg(r, "torch") == ("1.8.1", "cu102") and r.cuda == "10.2"
    assert r.base_image == "nvidia/cuda:11.0.3-base-ubuntu20.04"
    assert any("CUDA 10.2 (its tags were removed from the registry" in w and "needs a driver >= 450" in w
               for w in r.warnings)


def test_a_removed_image_and_a_driver_too_old_for_any_other_leave_no_image_and_say_which_driver(
        real_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "==1.8.1"\n[hardware]\ngpus = ["T4"]\ndriver = "440.33.01"', real_graph)
    assert r.base_image == ""
    assert any("no newer CUDA image runs on driver 440.33.01" in w and "a driver >= 450" in w for w in r.warnings)


def test_a_system_cuda_build_whose_image_was_removed_has_no_image_and_says_so(real_graph: Provider) -> None:
    # an R470 driver cannot run NVIDIA's CUDA 12.1 build, so the upstream one (compute_70 PTX: JIT)
    r = one('[frameworks]\ntensorflow = "==1.15.*"\n[hardware]\ngpus = ["V100"]\ndriver = "470.82.01"', real_graph)
    assert pkg(r, "tensorflow-gpu") == ("1.15.5", "cuda") and r.cuda == "10.0"
    assert r.base_image == ""
    assert any("needs that CUDA and its cuDNN in the image: no image can be built" in w for w in r.warnings)


def test_tensorflow_115_on_ampere_is_nvidias_build_from_nvidias_index(real_graph: Provider) -> None:
    r = one('[frameworks]\ntensorflow = "==1.15.*"\n[hardware]\ngpus = ["A100"]', real_graph)
    assert pkg(r, "nvidia-tensorflow") == ("1.15.5+nv23.3", "nv23.3")
    assert (r.python, r.cuda) == ("3.8", "12.1")


def test_onnxruntime_on_hopper_with_r535_takes_a_cuda_12_8_build_with_sm_90a_sass_by_minor_version(
        real_graph: Provider) -> None:
    r = one('[frameworks]\nonnxruntime = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "535.104.05"', real_graph)
    assert pkg(r, "onnxruntime-gpu") == ("1.26.0", "cuda12")
    assert (r.cuda, r.compat, r.jit_archs) == ("12.8", "minor-version", ())


def test_paddle_gpu_builds_come_from_paddles_index_by_cuda_version(real_graph: Provider) -> None:
    r = one('[frameworks]\npaddlepaddle = "==3.3.1"\n[hardware]\ngpus = ["A100"]\ncuda = "11.8"', real_graph)
    (p,) = [p for p in r.packages if p.name == "paddlepaddle-gpu"]
    assert (p.version, p.variant, p.index, p.index_path) == ("3.3.1", "cu118", "paddle", "cu118")


def test_an_old_torch_pin_gets_the_gpu_reason_not_an_unknown_release(real_graph: Provider) -> None:
    """1.6.0 carries no PTX: refused on the GPU's terms. 1.4.0's compute_37 PTX JIT-compiles for sm_80,
    as a maintainer explains a 1.4 user's slow first CUDA call on an RTX 3090
    (https://github.com/pytorch/pytorch/issues/45822), but the cuDNN 7.6 it loads ships SASS up to
    Turing and no PTX, so its convolutions fail there (CUDNN_STATUS_EXECUTION_FAILED with torch
    1.4.0 on an RTX 3090, https://github.com/uci-cbcl/UFold/issues/20): refused, saying cuDNN."""
    e = unsat('[frameworks]\ntorch = "==1.6.0"\n[hardware]\ngpus = ["A100"]', real_graph)
    assert "no release matches" not in str(e)
    assert "torch 1.6.0 has no build for A100 (sm_80): sm_80 needs CUDA >= 11.0" in str(e)
    e = unsat('[frameworks]\ntorch = "==1.4"\n[hardware]\ngpus = ["A100"]', real_graph)
    assert "its cuDNN 7.6.3.30 has no kernels for A100 (sm_80)" in str(e)


def test_torch_1_7_on_an_rtx_3090_is_the_cu110_build_whose_sm_80_sass_runs_on_sm_86(real_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "==1.7.1"\n[hardware]\ngpus = ["RTX 3090"]', real_graph)
    (p,) = [p for p in r.packages if p.name == "torch"]
    assert (p.version, p.variant, p.index, r.cuda) == ("1.7.1", "cu110", "pytorch", "11.0")


def test_an_old_jax_pin_whose_jaxlib_is_on_no_index_says_it_would_run_and_how_to_install_it(
        real_graph: Provider) -> None:
    e = str(unsat('[frameworks]\njax = "==0.3.7"\n[hardware]\ngpus = ["A100"]', real_graph))
    assert "no release matches" not in e and "has no CUDA build" not in e
    assert ("cuda11.cudnn82: it would run (driver >= 455.23), but jaxlib==0.3.7+cuda11.cudnn82 is on no index, "
            "only on a find-links page (by hand: pip install jax==0.3.7 jaxlib==0.3.7+cuda11.cudnn82 -f "
            "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html") in e
    # a CUDA 11.4 jaxlib cannot target Hopper; its compute_80 PTX JIT-compiles for it, but the cuDNN 8.2
    # it loads has no Hopper kernels and no PTX (issue 39): that is the reason, before the page
    e = str(unsat('[frameworks]\njax = "==0.4.7"\n[hardware]\ngpus = ["H100"]\ncuda = "11.4"', real_graph))
    assert "sm_90 needs CUDA >= 11.8" not in e and "cuda11.cudnn82: its cuDNN 8.2 has no kernels for H100" in e


def test_jax_0_4_13_on_a_cpu_is_the_one_old_jaxlib_the_default_index_still_has(real_graph: Provider) -> None:
    r = one('[frameworks]\njax = "==0.4.13"', real_graph)
    (p,) = [p for p in r.packages if p.name == "jax"]
    assert (p.version, p.variant, p.index, p.extra, dict(p.pins)) == ("0.4.13", "cpu", "pypi", "cpu", {"jaxlib": "0.4.13"})


def _cuda_128_floor(tmp_path: Path, extra: str) -> Provider:
    """The fixture universe with CUDA 12.8.0's floor written as 525.60.13 (below 12.6's), plus ``extra``."""
    root = tmp_path / "matrices"
    shutil.copytree(FIXTURE, root)
    cuda = root / "cuda.toml"
    text = cuda.read_text()
    assert text.count('version = "12.8.0"\ndriver_min = "570.26"\n') == 1
    cuda.write_text(text.replace('version = "12.8.0"\ndriver_min = "570.26"\n',
                                 f'version = "12.8.0"\ndriver_min = "525.60.13"\n{extra}'))
    return Provider(load_dir(root))


def test_a_native_driver_floor_never_goes_down_within_a_major(tmp_path: Path) -> None:
    graph = _cuda_128_floor(tmp_path, "")
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]', graph)
    assert pkg(r, "torch") == ("2.7.1", "cu128")
    assert (r.compat, r.driver_min) == ("native", "560.28.03")  # CUDA 12.6's, not the 525.60.13 written
    old = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\ndriver = "550.54.14"', graph)
    assert (pkg(old, "torch"), old.compat) == (("2.7.1", "cu128"), "minor-version")  # not "native"


def test_an_unknown_native_driver_floor_is_not_claimed_and_the_lock_says_so(tmp_path: Path) -> None:
    # marked low (not known): no driver of a branch that drivers.toml stops at an older CUDA runs it
    graph = _cuda_128_floor(tmp_path, 'confidence = "low"\n')
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]', graph)
    assert (pkg(r, "torch"), r.compat, r.driver_min) == (("2.7.1", "cu128"), "native", "570.00")
    assert ("the native minimum driver of CUDA 12.8 is not known (cuda.toml marks it low); taken as R570 or "
            "newer, since drivers.toml gives R550 CUDA up to 12.4") in r.warnings
    old = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\ndriver = "560.35.03"', graph)
    assert old.compat == "minor-version"
    reporter = ExplainReporter()
    found = solve_explained(graph, spec_of('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]', graph),
                            reporter)
    assert ("  driver >= 570.00 (native support of CUDA 12.8)\n  note: the native minimum driver of CUDA 12.8 is "
            "not known (cuda.toml marks it low); taken as R570 or newer") in reporter.text(found)


def test_a_python_range_from_a_patch_admits_that_minor(real_graph: Provider) -> None:
    # >=3.12.1 admits Python 3.12 (3.12.1 and later): the solver must not test 3.12 as 3.12.0
    r = one('[project]\npython = ">=3.12.1,<3.13"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]', real_graph)
    assert r.python == "3.12"


def test_a_shared_cache_gives_the_answers_of_fresh_ones(real_graph: Provider) -> None:
    """A matrix solves thousands of cells with one solve.cache.Cache: every answer (resolution or
    the clashes of an unsatisfiable cell) must be the one a solve with a fresh Cache gives."""
    import itertools

    from envsolve.solve import Cache
    from envsolve.solve.search import try_solve_target

    frameworks = ['torch = "*"', 'torch = "<2.4"', 'tensorflow = "*"', 'jax = "*"\nkeras = "*"', 'cupy = "*"']
    hardware = ['gpus = ["H100"]', 'gpus = ["RTX 5090"]', 'gpus = ["H100"]\ndriver = "525.60.13"',
                'gpus = ["V100", "A100"]\ndriver = "535.104.05"', 'gpus = ["MI300X"]', "gpus = []"]
    pythons = ['python = "*"', 'python = ">=3.12.1,<3.13"', 'python = "==3.10.*"']
    oses = ["", '[container]\nos = "ubuntu22.04"']
    shared = Cache()
    answers = 0
    for fw, hw, py, os in itertools.product(frameworks, hardware, pythons, oses):
        spec = spec_of(f"[project]\n{py}\n[frameworks]\n{fw}\n[hardware]\n{hw}\n{os}", real_graph)
        for t in spec.targets:
            fast = try_solve_target(real_graph, spec, t, cache=shared)
            alone = try_solve_target(real_graph, spec, t, cache=Cache())
            if isinstance(alone, Unsatisfiable):
                assert isinstance(fast, Unsatisfiable) and fast.clashes == alone.clashes, (fw, hw, py, os)
            else:
                assert fast == alone, (fw, hw, py, os)
                answers += 1
    assert answers > 20  # the matrix reaches resolutions, not only refusals


# -- ROCm support windows (matrices/rocm.toml: what each release supports and ships kernels for) --


def test_rocm_window_of_a_target_is_the_releases_that_list_it(real_graph: Provider) -> None:
    last = {gfx: [str(r.version) for r in real_graph.rocm_shipping(gfx)][-1] for gfx in ("gfx906", "gfx900", "gfx803")}
    assert last == {"gfx906": "6.3", "gfx900": "6.3", "gfx803": "3.10"}
    assert [str(r.version) for r in real_graph.rocm_supporting("gfx803")] == ["3.10"]
    assert real_graph.rocm_supporting("gfx1010") == [] and real_graph.rocm_supporting("gfx1031") == []
    assert str(real_graph.rocm_supporting("gfx1200")[0].version) == "6.4"


def test_mi50_gets_the_last_rocm_that_ships_its_kernels(real_graph: Provider) -> None:
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["MI50"]', real_graph)
    assert r.rocm == "6.3" and pkg(r, "torch")[1] == "rocm6.3"


def test_a_build_past_the_window_names_the_last_release(real_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = ">=2.10"\n[hardware]\ngpus = ["MI50"]', real_graph)
    assert "ROCm 6.3 was the last release with gfx906 kernels in its libraries (rocBLAS); this build is ROCm 7.2" \
        in e.clashes[0].reason
    assert any("rocm6.3" in f for f in e.fixes)


def test_a_target_never_supported_says_so(real_graph: Provider) -> None:
    for gpu, gfx in (("RX 5700 XT", "gfx1010"), ("RX 6700 XT", "gfx1031")):
        e = unsat(f'[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["{gpu}"]', real_graph)
        assert f"{gfx} was never a supported target of AMD's official ROCm releases" in e.clashes[0].reason


def test_a_target_whose_support_ended_names_the_last_release(real_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = ">=2"\n[hardware]\ngpus = ["RX 580"]', real_graph)
    assert "ROCm 3.10 was the last release to support gfx803" in e.clashes[0].reason


# ---------------------------------------------------------------------------- the Jetson family

def test_a_jetson_nano_never_gets_an_x86_or_default_index_cuda_build(real_graph: Provider) -> None:
    """A Nano runs JetPack 4.6.x (CUDA 10.2, Python 3.6): NVIDIA's Jetson build, for linux/arm64."""
    r = one('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["Jetson Nano"]', real_graph)
    assert pkg(r, "torch") == ("1.11.0a0+17540c5", "jp4-cu102")
    assert (r.platform, r.jetpack, r.cuda, r.python) == ("linux/arm64", "4.6.6", "10.2", "3.6")
    assert r.base_image == "nvcr.io/nvidia/l4t-base:r32.7.1"


def test_a_release_the_jetpack_cannot_run_is_refused_naming_the_jetpack_it_needs(real_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "==2.5.*"\n[hardware]\ngpus = ["Jetson Nano"]', real_graph)
    # 2.5.1 has no Jetson build of its own: its minor's (2.5.0's) tell the JetPack
    assert "torch 2.5.1 needs JetPack 6.1 (Jetson Linux 36.4.0) or newer of JetPack 6: Jetson Nano's newest JetPack is 4.6.6" in str(e)
    # a module that could run the JetPack needed is told to set it
    e = unsat('[frameworks]\ntorch = "==2.5.*"\n[hardware]\ngpus = ["Jetson AGX Orin"]\njetpack = "5.1.2"', real_graph)
    assert "needs JetPack 6.1 (Jetson Linux 36.4.0) or newer of JetPack 6: the target's JetPack is 5.1.2 (set jetpack = '6.2.1' to use it)" \
        in str(e)
    # a JetPack 6 build linked against another CUDA than the JetPack's (6.0 brings CUDA 12.2)
    e = unsat('[frameworks]\ntorch = "==2.5.*"\n[hardware]\ngpus = ["Jetson AGX Orin"]\njetpack = "6.0"', real_graph)
    assert ("torch 2.5.1 needs JetPack 6.1 (Jetson Linux 36.4.0) or newer of JetPack 6: the target's JetPack is 6.0 "
            "(set jetpack = '6.2.1' to use it)") in str(e)


def test_a_jetson_build_runs_only_on_the_jetpack_releases_it_names(real_graph: Provider) -> None:
    """torch 2.0.0+nv23.05 is NVIDIA's for JetPack 5.1.x; on 5.0.2 (L4T 35.1) it is refused."""
    r = one('[frameworks]\ntorch = "==2.0.*"\n[hardware]\ngpus = ["Jetson AGX Xavier"]\njetpack = "5.1.1"', real_graph)
    assert pkg(r, "torch") == ("2.0.0+nv23.05", "jp5-cu114")
    e = unsat('[frameworks]\ntorch = "==2.0.*"\n[hardware]\ngpus = ["Jetson AGX Xavier"]\njetpack = "5.0.2"',
              real_graph)
    assert ("torch 2.0.1 needs JetPack 5.1 (Jetson Linux 35.2.1) or newer of JetPack 5: the target's JetPack is "
            "5.0.2 (set jetpack = '5.1.5' to use it)") in str(e)
    e = unsat('[frameworks]\ntorch = "==2.0.0"\n[hardware]\ngpus = ["Jetson AGX Xavier"]\njetpack = "5.0.2"',
              real_graph)
    assert "no torch 2.0.0 build serves Jetson AGX Xavier (sm_72): jp5-cu114: built for JetPack 5.1 only, not 5.0.2" \
        in str(e)


def test_a_release_nvidia_built_for_no_jetpack_names_the_newest_that_runs(real_graph: Provider) -> None:
    e = unsat('[frameworks]\ntorch = "==2.9.0"\n[hardware]\ngpus = ["Jetson Orin Nano"]', real_graph)
    assert ("NVIDIA published no Jetson build of torch 2.9.0; for JetPack 6.2.1 the nearest is torch 2.8.0 "
            "(jp6-cu126)") in str(e)


def test_explain_says_when_a_release_has_no_default_build(real_graph: Provider) -> None:
    """CuPy is always cupy-cudaXXx: no build is what `pip install cupy` alone gets, so its choice is
    not "the default build does not fit" (as explain said on an H200)."""
    rep = ExplainReporter()
    spec = spec_of('[frameworks]\ncupy = "==14.2.0"\n[hardware]\ngpus = ["H200"]\ndriver = "580.159.04"', real_graph)
    text = rep.text(solve_explained(real_graph, spec, rep), verbose=True)
    assert ("chose cupy 14.2.0 (cuda12x): newest release that fits, the first usable build (none is the default: "
            "SASS for every GPU before PTX JIT, then native driver support, then the newest CUDA/ROCm; forward "
            "compatibility (cuda-compat) last)") in text
    assert "the default build does not fit" not in text
