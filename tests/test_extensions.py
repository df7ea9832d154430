"""CUDA extension packages in the solve (envsolve/solve/extensions.py, matrices/extensions.toml).

The facts these tests lean on, and where they come from (each row's ``source`` names it too):
- flash-attn 2.x has kernels for sm_80 and newer only (README "Ampere, Ada, or Hopper GPUs";
  setup.py at v2.8.3: FLASH_ATTN_CUDA_ARCHS defaults to 80;90;100;120), and its GitHub release
  publishes wheels for torch 2.4-2.8 x CUDA 12 x cp39-cp313 x cxx11abi TRUE/FALSE
  (.github/workflows/publish.yml at v2.8.3.post1);
- FlashAttention-3 (hopper/) needs an H100/H800 and CUDA 12.3 (README; hopper/setup.py: sm_90a);
- vLLM needs compute capability 7.0+ (docs.vllm.ai GPU installation), its FlashAttention backend 8.0+;
  its kernels are the fatbins of the default-index wheels (sm_120 from 0.9.2, sm_70 until 0.19.x);
- xformers and vLLM wheels pin one torch each (their Requires-Dist on the index: xformers 0.0.30
  asks torch==2.7.0, vllm 0.19.1 torch==2.10.0);
- xformers' default-index wheels are built with TORCH_CUDA_ARCH_LIST "6.0+PTX 7.0 7.5 8.0+PTX" + "9.0a"
  up to 0.0.30 and "7.5 8.0+PTX" + "9.0a" from 0.0.31 (.github/workflows/wheels_build.yml at each
  tag): 0.0.30 is the last with Pascal (sm_60) and Volta (sm_70) kernels, and no release has Blackwell
  SASS in its CUDA 12 wheel (Blackwell runs its compute_80 PTX);
- mamba-ssm and causal-conv1d compile the -gencode list of their setup.py at each tag (not
  TORCH_CUDA_ARCH_LIST); mamba 2.3.2 and causal-conv1d 1.6.2 start it at sm_75;
- triton compiles for the GPU it runs on: torch's inductor accepts compute capability 7.0 and up
  (torch/_inductor/scheduler.py), Triton's README supports 8.0+;
- bitsandbytes: Compute Capability 6.0+ from 0.48, LLM.int8() 7.5+ (its installation docs);
- TensorRT 10: Turing (SM 7.5) and newer (NVIDIA's support matrix);
- PyG's companions: wheels per torch and CUDA on data.pyg.org/whl/torch-{torch}+{cuda}.html.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from packaging.version import Version
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.errors import LockError
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from tests.smokerun import run_smoke

ISSUE_PACKAGES = {"flash-attn", "flash-attn-3", "xformers", "vllm", "bitsandbytes", "triton", "deepspeed",
                  "mamba-ssm", "causal-conv1d", "torch-scatter", "torch-sparse", "pyg-lib", "apex", "tensorrt"}


def _lock(tmp_path: Path, body: str, *args: str) -> Result:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n' + body)
    return CliRunner().invoke(main, ["lock", str(spec), "--format", "json", *args])


def _spec(gpus: str, pip: str, torch: str = "*", python: str = "") -> str:
    project = f'python = "{python}"\n' if python else ""  # under _lock's [project]
    hardware = f'[hardware]\ngpus = [{gpus}]\n' if gpus else ""
    return f'{project}[frameworks]\ntorch = "{torch}"\n{hardware}[packages]\npip = [{pip}]\n'


def _env(r: Result) -> dict:  # type: ignore[type-arg]
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["environments"][0]  # type: ignore[no-any-return]


def _lock_body(tmp_path: Path, body: str, *args: str) -> Result:
    spec = tmp_path / "project.toml"
    spec.write_text(body)
    return CliRunner().invoke(main, ["lock", str(spec), "--format", "json", *args])


def _torch(env: dict) -> str:  # type: ignore[type-arg]
    return next(p["version"] for p in env["frameworks"] if p["name"] == "torch")  # type: ignore[no-any-return]


# ----------------------------------------------------------------------------- the data


def test_every_package_of_the_issue_has_rows_each_with_its_source(real_graph: Provider) -> None:
    rows = real_graph.m.extensions
    assert {x.package for x in rows} == ISSUE_PACKAGES
    for x in (*rows, *real_graph.m.extension_wheels):
        assert x.source, x
        assert x.confidence == "high" or x.note, f"{x.package} {x.versions}: a low-confidence row says how"


def test_a_row_whose_newest_release_is_outside_its_range_is_refused(tmp_path: Path) -> None:
    from envsolve.data import data_dir, load_dir
    from envsolve.errors import MatrixError

    shutil.copytree(data_dir(), tmp_path / "m")
    path = tmp_path / "m" / "extensions.toml"
    path.write_text(path.read_text().replace('newest = "2.8.3.post1"', 'newest = "3.1"', 1))
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path / "m")
    assert "extensions.toml: extension[1] (flash-attn >=2.7.3,<3).newest: '3.1' is outside versions" in e.value.message


# ----------------------------------------------------------------------------- each package locks (frameworks only)

# package, a GPU it serves, how it installs there (the newest torch with a prebuilt wheel where one exists)
LOCKS = [
    ("flash-attn", "H100", "github"),
    ("flash-attn-3", "H100", "source"),
    ("xformers", "A100", "index"),
    ("vllm", "L4", "index"),
    ("bitsandbytes", "T4", "index"),
    ("triton", "A100", "index"),
    ("deepspeed", "A100", "index"),
    ("mamba-ssm", "A100", "source"),
    ("causal-conv1d", "A100", "source"),
    ("torch-scatter", "A100", "pyg"),
    ("torch-sparse", "L4", "pyg"),
    ("pyg-lib", "A100", "pyg"),
    ("apex", "A100", "source"),
    ("tensorrt", "L4", "index"),
]


@pytest.mark.parametrize(("package", "gpu", "install"), LOCKS)
def test_each_extension_package_locks_with_how_it_installs(tmp_path: Path, real_graph: Provider, package: str,
                                                           gpu: str, install: str) -> None:
    from packaging.specifiers import SpecifierSet

    env = _env(_lock(tmp_path, _spec(f'"{gpu}"', f'"{package}"')))
    [x] = env["extensions"]
    assert (x["name"], x["install"]) == (package, install)
    row = next(r for r in real_graph.extensions(package) if SpecifierSet(r.versions).contains(x["version"], True))
    assert not row.torch or SpecifierSet(row.torch).contains(_torch(env), True)  # the torch it works with
    again = lockfile.read(tmp_path / "envsolve.lock").environments[0].extensions
    assert [e.name for e in again] == [package]  # the lock reads back


def test_the_lock_of_a_spec_without_extensions_has_no_extensions_key(tmp_path: Path) -> None:
    assert "extensions" not in _env(_lock(tmp_path, _spec('"H100"', '"numpy<2"')))


# ----------------------------------------------------------------------------- GPUs a package cannot serve

REFUSED = [
    ("flash-attn", '"V100"', "flash-attn 2.8.3.post1 needs sm_80 or newer; V100 is sm_70: use xformers' "
     "memory-efficient attention or PyTorch SDPA (torch.nn.functional.scaled_dot_product_attention), or a GPU of "
     "Ampere or later"),
    ("flash-attn", '"T4"', "flash-attn 2.8.3.post1 needs sm_80 or newer; T4 is sm_75"),
    ("flash-attn-3", '"A100"', "flash-attn-3 3.0.0b1 needs sm_90 exactly (its sm_90a code runs on no other GPU); "
     "A100 is sm_80"),
    ("flash-attn-3", '"B200"', "flash-attn-3 3.0.0b1 has kernels for sm_90a only; B200 is sm_100"),
    ("tensorrt", '"GTX 1080"', "tensorrt 10.16.1.11 needs sm_75 or newer; GTX 1080 is sm_61"),
    ("vllm", '"P100"', "vllm 0.33.0 needs sm_75 or newer; P100 is sm_60"),
    ("flash-attn", '"MI300X"', "flash-attn 2.8.3.post1 has no build for MI300X (gfx942)"),
    ("flash-attn", "", "flash-attn 2.8.3.post1 needs a GPU (it has no CPU build); target 'default' has none"),
]


@pytest.mark.parametrize(("package", "gpus", "reason"), REFUSED)
def test_a_gpu_the_package_cannot_serve_is_refused_in_gpu_terms(tmp_path: Path, package: str, gpus: str,
                                                                reason: str) -> None:
    r = _lock(tmp_path, _spec(gpus, f'"{package}"'))
    assert r.exit_code == 1, r.output
    assert f"[packages] pip '{package}': {reason}" in r.output
    assert "TIP: what would work: " in r.output and f"drop {package} from [packages] pip" in r.output
    assert "Traceback" not in r.output


def test_an_older_release_that_serves_the_gpu_is_the_nearest_fix(tmp_path: Path) -> None:
    r = _lock(tmp_path, _spec('"P100"', '"xformers>=0.0.33"'))
    assert r.exit_code == 1
    assert "xformers 0.0.35 needs sm_75 or newer; P100 is sm_60" in r.output
    # 0.0.31 dropped 6.0 and 7.0 from TORCH_CUDA_ARCH_LIST (wheels_build.yml at v0.0.31 vs v0.0.30)
    assert '[packages] pip "xformers==0.0.30" (it serves P100 (sm_60))' in r.output


def test_an_open_line_takes_the_newest_release_that_serves_the_gpu_and_its_torch(tmp_path: Path) -> None:
    env = _env(_lock(tmp_path, _spec('"P100"', '"xformers"')))
    assert env["extensions"][0]["version"] == "0.0.30" and _torch(env) == "2.7.0"  # its Requires-Dist pin


def test_xformers_on_a_volta_locks_the_last_release_built_with_sm_70(tmp_path: Path) -> None:
    # wheels_build.yml at v0.0.31 builds "7.5 8.0+PTX 9.0a": no SASS and no PTX a V100 can run
    env = _env(_lock(tmp_path, _spec('"V100"', '"xformers"')))
    assert env["extensions"][0]["version"] == "0.0.30" and _torch(env) == "2.7.0"


def test_mamba_on_a_volta_builds_the_last_release_whose_setup_py_lists_sm_70(tmp_path: Path) -> None:
    # state-spaces/mamba setup.py: v2.3.1 passes -gencode sm_70, v2.3.2 starts its list at sm_75
    assert _env(_lock(tmp_path, _spec('"A100"', '"mamba-ssm"')))["extensions"][0]["version"] == "2.3.2.post1"
    env = _env(_lock(tmp_path, _spec('"V100"', '"mamba-ssm"')))
    assert env["extensions"][0]["version"] == "2.3.1" and env["extensions"][0]["install"] == "source"


def test_triton_on_a_turing_locks_and_warns_that_upstream_supports_8_0_and_up(tmp_path: Path) -> None:
    # torch/_inductor/scheduler.py (in the torch wheel): "Triton only supports devices of CUDA Capability >= 7.0";
    # Triton's README: supported hardware NVIDIA GPUs of compute capability 8.0+
    env = _env(_lock(tmp_path, _spec('"T4"', '"triton"')))
    assert env["extensions"][0]["version"] == "3.7.1"
    why = CliRunner().invoke(main, ["explain", str(tmp_path / "project.toml"), "--format", "json"])
    assert any(w.startswith("triton 3.7.1 on T4 (sm_75): Triton's README supports")
               for w in json.loads(why.stdout)["targets"][0]["warnings"])
    r = _lock(tmp_path, _spec('"P100"', '"triton"'))
    assert r.exit_code == 1 and "triton 3.7.1 needs sm_70 or newer; P100 is sm_60" in r.output


def test_vllm_before_0_9_2_has_no_kernels_for_an_rtx_5090(tmp_path: Path) -> None:
    # the fatbins of the default-index wheels: 0.9.1 carries sm_100 SASS but no sm_120, 0.9.2 adds sm_120
    r = _lock(tmp_path, _spec('"RTX 5090"', '"vllm==0.9.1"'))
    assert r.exit_code == 1
    assert "vllm 0.9.1 has kernels for sm_70, sm_75, sm_80, sm_89, sm_90, sm_100 only; RTX 5090 is sm_120" in r.output
    assert _env(_lock(tmp_path, _spec('"RTX 5090"', '"vllm==0.9.2"')))["extensions"][0]["version"] == "0.9.2"


def test_vllm_on_a_volta_locks_a_release_with_sm_70_kernels_and_warns_of_its_attention_backend(
        tmp_path: Path) -> None:
    env = _env(_lock(tmp_path, _spec('"V100"', '"vllm"')))
    assert env["extensions"][0]["version"] == "0.19.1" and _torch(env) == "2.10.0"
    why = CliRunner().invoke(main, ["explain", str(tmp_path / "project.toml"), "--format", "json"])
    warnings = json.loads(why.stdout)["targets"][0]["warnings"]
    assert "vllm 0.19.1 on V100 (sm_70): its FlashAttention backend needs sm_80 or newer; vLLM falls back to a " \
           "slower attention backend" in warnings


def test_bitsandbytes_locks_on_a_cpu_target_flash_attn_does_not(tmp_path: Path) -> None:
    env = _env(_lock(tmp_path, _spec("", '"bitsandbytes"')))
    assert env["accelerator"] == "cpu" and env["extensions"][0]["install"] == "index"


def test_a_torch_range_no_release_of_the_package_works_with_is_told(tmp_path: Path) -> None:
    r = _lock(tmp_path, _spec('"A100"', '"vllm==0.11.0"', torch="==2.9.1"))
    assert r.exit_code == 1
    assert "vllm (vllm==0.11.0) works with torch ==2.8.0 with CUDA >=12.0,<13" in r.output


# ----------------------------------------------------------------------------- a prebuilt wheel is preferred

FA_WHEEL = ("https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3.post1/"
            "flash_attn-2.8.3.post1+cu12torch{torch}cxx11abi{abi}-cp{py}-cp{py}-linux_x86_64.whl")


def test_flash_attn_moves_torch_to_the_newest_release_with_a_prebuilt_wheel_and_explain_says_so(
        tmp_path: Path) -> None:
    alone = _env(_lock(tmp_path, _spec('"H100"', '"numpy<2"')))
    env = _env(_lock(tmp_path, _spec('"H100"', '"flash-attn"')))
    assert Version(_torch(alone)) > Version("2.8.0") and _torch(env) == "2.8.0"
    [x] = env["extensions"]
    assert x["url"] == FA_WHEEL.format(torch="2.8", abi="TRUE", py="313")  # torch 2.8's wheels use the C++11 ABI
    why = CliRunner().invoke(main, ["explain", str(tmp_path / "project.toml")])
    assert "chose torch 2.8.0 (cu128): newest release that fits, the default build; driver >= 570.26 (native); " \
           "first among those with a prebuilt flash-attn wheel" in why.output
    assert ("extension flash-attn 2.8.3.post1 (GitHub release wheel): needs sm_80 or newer, torch >=2.2 (chose 2.8.0), "
            "CUDA >=12.0; a prebuilt wheel from its GitHub release for torch 2.8, CUDA 12, Python 3.13") in why.output
    data = json.loads(CliRunner().invoke(main, ["explain", str(tmp_path / "project.toml"), "--format", "json"]).stdout)
    assert data["targets"][0]["extensions"][0]["install"] == "github"


def test_the_wheel_follows_the_locked_python_and_torch_abi(tmp_path: Path) -> None:
    env = _env(_lock(tmp_path, _spec('"A100"', '"flash-attn"', torch="==2.6.0", python="==3.10.*")))
    assert env["extensions"][0]["url"] == FA_WHEEL.format(torch="2.6", abi="FALSE", py="310")


# ----------------------------------------------------------------------------- a source build for the target's archs


def _dockerfile(tmp_path: Path, body: str) -> str:
    r = _lock(tmp_path, body, "--render")
    assert r.exit_code == 0, r.output
    return (tmp_path / "envsolve-out" / "default" / "Dockerfile").read_text()


def _parsed(text: str, tmp_path: Path) -> list[dict]:  # type: ignore[type-arg]
    from dockerfile_parse import DockerfileParser

    (tmp_path / "parse").mkdir()
    parser = DockerfileParser(path=str(tmp_path / "parse"))  # it writes what it parses
    parser.content = text
    return parser.structure  # type: ignore[no-any-return]


def _hadolint(text: str, tmp_path: Path) -> None:
    exe = shutil.which("hadolint")
    if exe is None:
        return
    path = tmp_path / "lint" / "Dockerfile"
    path.parent.mkdir()
    path.write_text(text)
    out = subprocess.run([exe, "--failure-threshold", "error", "--no-color", str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


def _envs(structure: list[dict]) -> dict[str, str]:  # type: ignore[type-arg]
    """Every ENV of the Dockerfile, NAME -> value as written."""
    import shlex

    out = {}
    for i in structure:
        if i["instruction"] == "ENV":
            out.update(dict(w.split("=", 1) for w in shlex.split(i["value"])))
    return out


def test_flash_attn_without_a_wheel_is_built_on_the_devel_image_for_the_one_gpu_arch(tmp_path: Path) -> None:
    text = _dockerfile(tmp_path, _spec('"H100"', '"flash-attn"', torch=">=2.9"))  # no release wheel for 2.9+
    structure = _parsed(text, tmp_path)
    [base] = [i["value"] for i in structure if i["instruction"] == "FROM"]
    assert "-devel-" in base  # nvcc is in the devel image of the chosen CUDA
    envs = _envs(structure)
    assert envs["FLASH_ATTN_CUDA_ARCHS"] == "90"  # H100 only, not the default 80;90;100;120
    assert envs["FLASH_ATTENTION_FORCE_BUILD"] == "TRUE"  # no download of a wheel that does not fit
    args = [i["value"] for i in structure if i["instruction"] == "ARG"]
    assert "MAX_JOBS=4" in args
    build = next(i["value"] for i in structure if i["instruction"] == "RUN" and "--no-build-isolation" in i["value"])
    assert "flash-attn==2.8.3.post1" in build and "ninja" in build
    _hadolint(text, tmp_path)
    [x] = lockfile.read(tmp_path / "envsolve.lock").environments[0].extensions
    assert (x.install, x.build_env, x.build_archs) == ("source", "FLASH_ATTN_CUDA_ARCHS", "90")


def test_an_ampere_gpu_is_built_for_the_arch_whose_code_runs_on_it(tmp_path: Path) -> None:
    envs = _envs(_parsed(_dockerfile(tmp_path, _spec('"A10G"', '"flash-attn"', torch=">=2.9")), tmp_path))
    assert envs["FLASH_ATTN_CUDA_ARCHS"] == "80"  # flash-attn takes 80;90;100;120 only: sm_80 code runs on sm_86


def test_apex_builds_for_torch_cuda_arch_list_of_the_gpu_with_its_settings(tmp_path: Path) -> None:
    text = _dockerfile(tmp_path, _spec('"L4"', '"apex"'))
    envs = _envs(_parsed(text, tmp_path))
    assert (envs["TORCH_CUDA_ARCH_LIST"], envs["APEX_CPP_EXT"], envs["APEX_CUDA_EXT"]) == ("8.9", "1", "1")
    assert "'apex @ git+https://github.com/NVIDIA/apex.git'" in text
    _hadolint(text, tmp_path)


def test_a_release_wheel_and_a_pyg_page_install_in_their_own_step(tmp_path: Path) -> None:
    text = _dockerfile(tmp_path, _spec('"A100"', '"flash-attn", "torch-scatter", "einops"'))
    assert "'flash-attn @ " + FA_WHEEL.format(torch="2.8", abi="TRUE", py="313") + "'" in text
    assert "--find-links https://data.pyg.org/whl/torch-2.8.0+cu128.html" in text and "torch-scatter==2.1.2" in text
    project_step = text.split("# 4. the project's packages")[1]
    assert "einops" in project_step and "flash-attn" not in project_step and "torch-scatter" not in project_step
    assert "-devel-" not in text  # nothing compiles
    _hadolint(text, tmp_path)


# ----------------------------------------------------------------------------- the lock checks what reaches a Dockerfile


def test_a_hand_edited_arch_list_is_refused_naming_the_key(tmp_path: Path) -> None:
    _env(_lock(tmp_path, _spec('"H100"', '"flash-attn"', torch=">=2.9")))
    path = tmp_path / "envsolve.lock"
    path.write_text(path.read_text().replace('build_archs = "90"', 'build_archs = "90; rm -rf /"'))
    with pytest.raises(LockError) as e:
        lockfile.read(path)
    assert "environments[0].extensions[0].build_archs must be an arch list such as '8.0;9.0' or '80;90', not " \
           "'90; rm -rf /'" in str(e.value)


def _forged(tmp_path: Path, key: str, value: object) -> Path:
    """A frameworks-only lock of flash-attn built for an H100, its extension entry's ``key`` set to
    ``value`` and its digest computed again (as anyone who can edit a lock can)."""
    import tomllib

    from tests.test_lock import redigested

    _env(_lock(tmp_path, _spec('"H100"', '"flash-attn"', torch=">=2.9")))
    path = tmp_path / "envsolve.lock"
    data = tomllib.loads(path.read_text())
    data["environments"][0]["extensions"][0][key] = value
    path.write_text(redigested(data))
    return path


@pytest.mark.parametrize("variable", ["PATH", "LD_PRELOAD", "HTTPS_PROXY", "PYTHONPATH", "TORCH_CUDA_ARCH_LIST"])
def test_a_lock_naming_a_variable_its_package_does_not_read_is_refused(tmp_path: Path, variable: str) -> None:
    path = _forged(tmp_path, "build_env", variable)
    r = CliRunner().invoke(main, ["render", str(path)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert (f"{path}: environments[0].extensions[0].build_env names {variable!r}, which is not a variable "
            "flash-attn's build reads (the data has: FLASH_ATTENTION_FORCE_BUILD, FLASH_ATTN_CUDA_ARCHS)") in r.stderr
    assert not (tmp_path / "envsolve-out").exists()


@pytest.mark.parametrize(("key", "value", "message"), [
    ("build_vars", ["HTTPS_PROXY=proxy.example"],
     "build_vars[0] = 'HTTPS_PROXY=proxy.example' is not a setting of flash-attn's build (the data has: "
     "'FLASH_ATTENTION_FORCE_BUILD=TRUE')"),
    ("build_vars", ["LD_PRELOAD=x.so"], "build_vars[0] = 'LD_PRELOAD=x.so' is not a setting of flash-attn's build"),
    ("build_archs", "9.0", "build_archs = '9.0' is not an arch list as FLASH_ATTN_CUDA_ARCHS takes it (such as '80;90')"),
    ("build_requires", ["ninja", "evil-package"],
     "build_requires[1] = 'evil-package' is not what flash-attn's build installs first"),
    ("build_from", "flash-attn @ https://evil.example/x.tar.gz", "build_from = 'flash-attn @ "
     "https://evil.example/x.tar.gz' is not how flash-attn is built (the data has: none)"),
])
def test_a_build_setting_outside_the_packages_closed_list_is_refused(tmp_path: Path, key: str, value: object,
                                                                     message: str) -> None:
    path = _forged(tmp_path, key, value)
    r = CliRunner().invoke(main, ["render", str(path)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"{path}: environments[0].extensions[0].{message}" in r.stderr
    assert "TIP" in r.stderr


def test_the_renderer_refuses_a_variable_the_reader_never_saw(tmp_path: Path) -> None:
    from msgspec.structs import replace

    from envsolve.render.artifacts import render_environment

    lock = lockfile.read(_forged(tmp_path, "build_archs", "90"))
    env = lock.environments[0]
    for edit in ({"build_env": "LD_PRELOAD"}, {"build_vars": ("PATH=/tmp",)}, {"build_archs": "90;$(id)"}):
        forged = replace(env, extensions=(replace(env.extensions[0], **edit),))
        with pytest.raises(LockError) as e:
            render_environment(replace(lock, environments=(forged,)), forged)
        assert "environments[0].extensions[0].build_" in str(e.value)


def test_every_build_setting_of_the_data_passes_the_lock_reader(real_graph: Provider) -> None:
    """What the solve writes for each row (its arch variable, an arch list of its format, its
    settings, what it installs first, what it builds) is what the reader's closed lists accept."""
    from envsolve.solve import ExtensionPin

    rules = lockfile.data_build_rules()
    archs = {"dotted": "8.0;9.0", "nodot": "80;90"}
    for package in sorted(ISSUE_PACKAGES):
        for row in real_graph.extensions(package):
            x = ExtensionPin(name=row.package, version=row.newest, install=row.install, build_env=row.build_env,
                             build_archs=archs[row.build_format] if row.build_env else "",
                             build_from=row.build_from, build_requires=row.build_requires, build_vars=row.build_vars)
            assert lockfile.build_problems(x, rules) == [], (package, row.versions)


def test_a_frameworks_only_dockerfile_says_a_source_build_is_not_pinned(tmp_path: Path) -> None:
    text = _dockerfile(tmp_path, _spec('"H100"', '"flash-attn"', torch=">=2.9"))
    assert ("#     not pinned: what its build installs first and its sdist come from the index as they are\n"
            "#     (a frameworks-only lock); `envsolve lock` without --frameworks-only pins and hashes them") in text


def test_a_full_lock_whose_source_build_lost_its_hash_or_a_build_requirement_is_refused(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import tomllib

    from tests.test_lock import redigested

    _source_build_index(httpserver, monkeypatch, tmp_path)
    _env(_lock(tmp_path, _spec('"H100"', '"flash-attn"', torch="==2.9.1")))
    path = tmp_path / "envsolve.lock"
    data = tomllib.loads(path.read_text())
    data["environments"][0]["extensions"][0]["hash"] = ""
    data["environments"][0]["packages"] = [p for p in data["environments"][0]["packages"] if p["name"] != "ninja"]
    path.write_text(redigested(data))
    with pytest.raises(LockError) as e:
        lockfile.read(path)
    assert ("environments[0].extensions[0].hash is empty for flash-attn 2.8.3.post1, built from its sdist: a full "
            "lock holds the sdist's URL and sha256") in str(e.value)
    assert ("environments[0].extensions[0].build_requires[0] = 'ninja' is not among the environment's packages: a "
            "full lock pins and hashes what a source build installs first") in str(e.value)


# ----------------------------------------------------------------------------- the graph and the smoke test


def test_the_graph_has_each_extension_row_as_a_node_with_its_archs_and_torch(real_graph: Provider) -> None:
    from envsolve.export import edges, nodes

    found = dict(nodes(real_graph))
    assert found["extension:flash-attn>=2.7.3,<3"]["kind"] == "extension"
    links = set(edges(real_graph))
    assert ("extension:flash-attn>=2.7.3,<3", "arch:sm_80", "compiled-for") in links
    assert ("extension:vllm>=0.10.2,<0.11.1", "release:torch==2.8.0", "works-with") in links


def test_the_smoke_test_checks_each_extension_and_says_what_it_skipped_on_a_cpu(tmp_path: Path) -> None:
    _dockerfile(tmp_path, _spec('"H100"', '"flash-attn", "bitsandbytes"'))
    site = tmp_path / "site"
    (site / "flash_attn").mkdir(parents=True)
    (site / "flash_attn" / "__init__.py").write_text("")
    (site / "flash_attn-2.8.3.post1.dist-info").mkdir()
    (site / "flash_attn-2.8.3.post1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: flash-attn\nVersion: 2.8.3.post1\n")
    script = tmp_path / "envsolve-out" / "default" / "smoke_test.py"
    done = run_smoke(script, "--allow-cpu", "--json", env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"})
    checks = {c["check"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["flash-attn version"]["status"] == "pass"
    assert checks["flash-attn on the GPU"] == {
        "check": "flash-attn on the GPU", "status": "skip",
        "detail": "imported; its GPU operation (flash_attn) was not run: no GPU is in use (it needs CUDA)"}
    assert checks["bitsandbytes version"]["status"] == "fail"  # not installed here: said, not skipped
    assert checks["bitsandbytes import"]["status"] == "fail"


def test_triton_has_a_gpu_kernel_in_the_smoke_test(tmp_path: Path) -> None:
    """Triton's check compiles a kernel for the GPU (run on an H200); here, without one, it is skipped."""
    import importlib.util

    _dockerfile(tmp_path, _spec('"H100"', '"triton"'))
    script = tmp_path / "envsolve-out" / "default" / "smoke_test.py"
    spec = importlib.util.spec_from_file_location("rendered_smoke_triton", script)
    assert spec is not None and spec.loader is not None
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    assert [x["name"] for x in smoke.EXPECTED["extensions"]] == ["triton"]
    smoke._module = lambda name: object() if name == "triton" else None  # imported, not run
    r = smoke.Report()
    smoke.check_extensions(r, on_gpu=False)
    assert r.items[-1] == {"check": "triton on the GPU", "status": "skip",
                           "detail": "imported; its GPU operation (triton) was not run: no GPU is in use (it needs CUDA)"}


def test_a_smoke_test_without_extensions_is_the_template_unchanged(tmp_path: Path) -> None:
    from envsolve.paths import templates_dir

    _dockerfile(tmp_path, _spec('"H100"', '"numpy<2"'))
    smoke = (tmp_path / "envsolve-out" / "default" / "smoke_test.py").read_text()
    assert "check_extensions" not in smoke
    assert smoke.split("EXPECTED: dict")[0] == (templates_dir() / "smoke_test.py").read_text().split("EXPECTED: dict")[0]


# ----------------------------------------------------------------------------- the full lock (a local fake index)


def test_the_full_lock_takes_the_release_wheel_by_its_url_and_records_its_hash(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from envsolve.data import data_dir
    from tests.fakeindex import Wheel, serve

    release = Wheel("flash-attn", "2.8.3.post1+cu12torch2.8cxx11abiTRUE", requires=["torch", "einops"],
                    tag="cp313-cp313-linux_x86_64")
    index = serve(httpserver, [Wheel("torch", "2.8.0"), Wheel("einops", "0.8.1"),
                               Wheel("flash-attn", "2.8.3.post1", requires=["torch", "einops"])])
    httpserver.expect_request(f"/gh/{release.filename}").respond_with_data(release.build())
    shutil.copytree(data_dir(), tmp_path / "m")  # the release's URL pointed at the local server
    rows = tmp_path / "m" / "extensions.toml"
    rows.write_text(rows.read_text().replace("https://github.com/Dao-AILab/flash-attention/releases/download/v{version}",
                                             httpserver.url_for("/gh")))
    monkeypatch.setenv("ENVSOLVE_MATRICES", str(tmp_path / "m"))
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", index)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    env = _env(_lock(tmp_path, _spec('"H100"', '"flash-attn"', torch="==2.8.0")))
    [x] = env["extensions"]
    assert (x["install"], x["url"]) == ("github", httpserver.url_for(f"/gh/{release.filename}"))
    assert x["hash"] == release.sha256  # the file's own digest, read by the full resolve
    packages = {p["name"]: p for p in env["packages"]}
    assert packages["flash-attn"]["hashes"] == [release.sha256] and "einops" in packages
    text = (tmp_path / "envsolve.lock").read_text()
    assert lockfile.loads(text, "envsolve.lock").environments[0].extensions[0].hash == release.sha256


def test_the_full_lock_checks_the_release_the_index_gives_not_the_newest_the_data_knows(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.fakeindex import Wheel, serve

    # the index's newest vllm is 0.10.2 (Requires-Dist torch==2.8.0); the data knows releases up to 0.33
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, [Wheel("torch", "2.8.0"),
                                                                 Wheel("vllm", "0.10.2", requires=["torch==2.8.0"])]))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    env = _env(_lock(tmp_path, _spec('"A100"', '"vllm"')))
    assert _torch(env) == "2.8.0"
    assert [(x["name"], x["version"], x["install"]) for x in env["extensions"]] == [("vllm", "0.10.2", "index")]


def test_an_arm_target_builds_flash_attn_the_release_wheels_are_x86_64_only(tmp_path: Path) -> None:
    env = _env(_lock(tmp_path, _spec('"GH200"', '"flash-attn"')))
    assert env["platform"] == "linux/arm64"
    [x] = env["extensions"]
    assert (x["install"], x["url"], x["build_archs"]) == ("source", "", "90")
    assert "-devel-" in env["base_image"]


_BUILD_REQUIRES = (("ninja", "1.13.0"), ("packaging", "25.0"), ("psutil", "7.1.0"), ("einops", "0.8.1"),
                   ("wheel", "0.45.1"), ("setuptools", "80.9.0"))
SDIST = b"flash_attn-2.8.3.post1/setup.py\n"  # the bytes the fake index serves as flash-attn's sdist


def _source_build_index(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """A local index with torch 2.9.1 (no flash-attn release wheel fits it), flash-attn's build
    requirements as wheels and flash-attn 2.8.3.post1 as an sdist only; the sdist's sha256."""
    import hashlib

    from tests.fakeindex import Wheel, serve

    index = serve(httpserver, [Wheel("torch", "2.9.1"), *(Wheel(n, v) for n, v in _BUILD_REQUIRES)])
    digest = hashlib.sha256(SDIST).hexdigest()
    name = "flash_attn-2.8.3.post1.tar.gz"
    httpserver.expect_request("/simple/flash-attn/").respond_with_data(
        f'<html><body><a href="/simple/files/{name}#sha256={digest}">{name}</a></body></html>', content_type="text/html")
    httpserver.expect_request(f"/simple/files/{name}").respond_with_data(SDIST)
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", index)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    return "sha256:" + digest


def test_the_full_lock_pins_and_hashes_a_source_builds_requirements_and_its_sdist(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    digest = _source_build_index(httpserver, monkeypatch, tmp_path)
    env = _env(_lock(tmp_path, _spec('"H100"', '"flash-attn"', torch="==2.9.1"), "--render"))
    [x] = env["extensions"]
    assert (x["install"], x["hash"]) == ("source", digest)
    assert x["url"] == httpserver.url_for("/simple/files/flash_attn-2.8.3.post1.tar.gz")
    packages = {p["name"]: p for p in env["packages"]}
    for name, version in _BUILD_REQUIRES:  # each pinned for the environment, with the sha256 of its file
        assert packages[name]["version"] == version and packages[name]["hashes"], name
    out = tmp_path / "envsolve-out" / "default"
    requirements = (out / "requirements.txt").read_text()
    assert "ninja==1.13.0 --hash=sha256:" in requirements and "setuptools==80.9.0 --hash=sha256:" in requirements
    dockerfile = (out / "Dockerfile").read_text()
    build = next(i["value"] for i in _parsed(dockerfile, tmp_path)
                 if i["instruction"] == "RUN" and "--no-build-isolation" in i["value"])
    assert f"'flash-attn==2.8.3.post1 --hash={digest}'" in build  # the sdist, checked against its sha256
    assert "--require-hashes --no-deps --no-binary flash-attn" in build
    assert "pip install ninja" not in dockerfile and "pip install --no-build-isolation \\" not in dockerfile
    _hadolint(dockerfile, tmp_path)
    lock = lockfile.read(tmp_path / "envsolve.lock")
    assert lock.environments[0].extensions[0].hash == digest


def test_a_full_lock_refuses_a_source_build_whose_sdist_the_index_does_not_hash(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.fakeindex import Wheel, serve

    index = serve(httpserver, [Wheel("torch", "2.9.1"), *(Wheel(n, v) for n, v in _BUILD_REQUIRES)])
    httpserver.expect_request("/simple/flash-attn/").respond_with_data(  # a link without its #sha256
        '<a href="/simple/files/flash_attn-2.8.3.post1.tar.gz">flash_attn-2.8.3.post1.tar.gz</a>',
        content_type="text/html")
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", index)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    r = _lock(tmp_path, _spec('"H100"', '"flash-attn"', torch="==2.9.1"))
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert "flash-attn 2.8.3.post1 is built from source in the image, but the index at" in r.stderr
    assert "has no sdist of it with a sha256" in r.stderr and not (tmp_path / "envsolve.lock").exists()


# ----------------------------------------------------------------------------- hostile round 3, defect 6

def _forged_wheel(tmp_path: Path, package: str, gpu: str, url: str) -> tuple[Path, str]:
    """A frameworks-only lock of ``package`` for ``gpu`` (a prebuilt wheel), its extension entry's
    url set to ``url`` and its digest computed again; and the url the solve wrote."""
    import tomllib

    from tests.test_lock import redigested

    _env(_lock(tmp_path, _spec(f'"{gpu}"', f'"{package}"')))
    path = tmp_path / "envsolve.lock"
    data = tomllib.loads(path.read_text())
    x = data["environments"][0]["extensions"][0]
    made, x["url"] = x["url"], url
    path.write_text(redigested(data))
    return path, made


@pytest.mark.parametrize(("package", "gpu", "url", "what"), [
    ("torch-scatter", "A100", "https://evil.example/whl/", "PyG's wheel page"),
    ("torch-scatter", "A100", "https://data.pyg.org/whl/../../evil.example/x.html", "PyG's wheel page"),
    ("torch-scatter", "A100", "https://data.pyg.org.evil.example/whl/torch-2.8.0+cu128.html", "PyG's wheel page"),
    ("flash-attn", "H100", "https://evil.example/flash_attn-2.8.3.post1-cp312-cp312-linux_x86_64.whl",
     "a GitHub release wheel"),
    ("flash-attn", "H100", "https://github.com/evil/flash-attention/releases/download/v2.8.3.post1/"
     "flash_attn-2.8.3.post1+cu12torch2.8cxx11abiTRUE-cp312-cp312-linux_x86_64.whl", "a GitHub release wheel"),
    ("flash-attn", "H100", "https://github.com/Dao-AILab/flash-attention/releases/download/v2.8.3.post1/"
     "flash_attn-2.8.3.post1+cu12torch2.8/../../../../evil/x.whl", "a GitHub release wheel"),
])
def test_a_prebuilt_wheels_url_the_data_does_not_give_is_refused(tmp_path: Path, package: str, gpu: str, url: str,
                                                                 what: str) -> None:
    path, made = _forged_wheel(tmp_path, package, gpu, url)
    r = CliRunner().invoke(main, ["render", str(path)])
    assert r.exit_code == 2 and "Traceback" not in r.output, r.output
    assert f"{path}: environments[0].extensions[0].url = {url!r} is not {what} of {package} " in r.stderr
    assert "as the data gives it (the data has: 'https://" in r.stderr and "TIP" in r.stderr
    assert "regenerate" in r.stderr and not (tmp_path / "envsolve-out").exists()
    with pytest.raises(LockError, match=r"extensions\[0\]\.url = "):
        lockfile.read(path)
    (tmp_path / "again").mkdir()
    path, _ = _forged_wheel(tmp_path / "again", package, gpu, made)  # the url the solve wrote reads back
    assert lockfile.read(path).environments[0].extensions[0].url == made


def test_the_renderer_refuses_a_wheel_url_the_reader_never_saw(tmp_path: Path) -> None:
    from msgspec.structs import replace

    from envsolve.render.artifacts import render_environment

    _env(_lock(tmp_path, _spec('"A100"', '"torch-scatter"')))
    lock = lockfile.read(tmp_path / "envsolve.lock")
    env = lock.environments[0]
    forged = replace(env, extensions=(replace(env.extensions[0], url="https://evil.example/whl/"),))
    with pytest.raises(LockError) as e:
        render_environment(replace(lock, environments=(forged,)), forged)
    assert "environments[0].extensions[0].url = 'https://evil.example/whl/'" in str(e.value)


def test_a_source_build_forged_into_a_prebuilt_wheel_is_refused_naming_install(tmp_path: Path) -> None:
    # defect 6: install = "github" (or "pyg") on an entry with a build's settings: no URL the data gives
    for install in ("github", "pyg"):
        (tmp_path / install).mkdir()
        path = _forged(tmp_path / install, "install", install)
        r = CliRunner().invoke(main, ["render", str(path)])
        assert r.exit_code == 2 and "Traceback" not in r.output
        assert (f"{path}: environments[0].extensions[0].install = {install!r} installs a prebuilt wheel, but the "
                "entry holds a source build's settings (build_*)") in r.stderr
