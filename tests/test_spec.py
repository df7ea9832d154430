from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsolve.cli import main
from envsolve.errors import SpecError
from envsolve.provider import Provider
from envsolve.spec import parse_spec

GOOD = '''
[project]
name = "demo"
python = ">=3.10,<3.13"

[frameworks]
torch = ">=2.4"
torchvision = "*"
keras = { version = ">=3.5", backend = "torch" }

[hardware]
gpus = ["A100", "NVIDIA H100 80GB HBM3", "sm_86", "8.9"]
driver = "535.104.05"

[packages]
pip = ["numpy<2", "einops"]
conda = ["ffmpeg"]
apt = ["libgl1"]

[container]
os = "ubuntu22.04"
flavor = "runtime"

[targets.amd]
gpus = ["MI300X"]
'''


def test_full_spec_parses(fixture_graph: Provider) -> None:
    s = parse_spec(GOOD, "project.toml", fixture_graph)
    assert s.name == "demo"
    assert [f.name for f in s.frameworks] == ["keras", "torch", "torchvision"]
    assert s.framework("keras").backend == "torch"  # type: ignore[union-attr]
    default, amd = s.targets
    assert default.vendor == "nvidia"
    assert [g.name for g in default.gpus] == ["A100", "H100", "sm_86", "sm_89"]
    assert [g.arch.name for g in default.gpus] == ["sm_80", "sm_90", "sm_86", "sm_89"]
    assert str(default.driver) == "535.104.05"
    assert amd.name == "amd" and amd.vendor == "amd" and amd.driver is None
    assert s.pip == ("einops", "numpy<2")


def test_no_gpus_means_cpu(fixture_graph: Provider) -> None:
    s = parse_spec('[frameworks]\ntorch = "*"\n', "p.toml", fixture_graph)
    assert s.targets[0].vendor == "cpu"


def problems(text: str, graph: Provider) -> str:
    with pytest.raises(SpecError) as e:
        parse_spec(text, "project.toml", graph)
    return str(e.value)


@pytest.mark.parametrize("text,expected", [
    ("[frameworks\n", "project.toml: is not valid TOML"),
    ("[hardwere]\n", "project.toml: hardwere: unknown section (allowed: project, frameworks, hardware, packages, container, targets, indexes); did you mean [hardware]?"),
    ("[hardware]\ngpu = ['A100']\n", "project.toml: hardware.gpu: unknown key"),
    ("[frameworks]\npytorch = '*'\n", "project.toml: frameworks.pytorch: unknown framework 'pytorch'"),
    ("[frameworks]\npytorch = '*'\n", "did you mean 'torch'?"),
    ("[frameworks]\ntorch = '>=2.x'\n", "frameworks.torch: '>=2.x' is not a version specifier"),
    ("[hardware]\ngpus = ['A1000']\n", "hardware.gpus[0]: unknown GPU 'A1000'; did you mean 'A100'"),
    ("[hardware]\ngpus = ['H100']\ndriver = '535'\n", "hardware.driver: driver version '535' is not an NVIDIA driver version"),
    ("[hardware]\ngpus = 'A100'\ndriver = 535.1\n", "hardware.driver: must be a string such as '535.104.05'"),
    ("[packages]\npip = ['numpy<<2']\n", "packages.pip[0]: 'numpy<<2' is not a valid PEP 508 requirement"),
    ('[packages]\npip = ["numpy\\n--index-url http://evil"]\n', "packages.pip[0]: 'numpy\\n--index-url http://evil' contains a line break"),
    ("[packages]\napt = ['Lib GL']\n", "packages.apt[0]: 'Lib GL' is not a Debian package name"),
    ("[hardware]\ngpus = ['A100', 'MI300X']\n", "hardware.gpus: mixes NVIDIA and AMD GPUs"),
    ("[hardware]\nvendor = 'qualcomm'\n", "hardware.vendor: 'qualcomm' must be one of nvidia, amd, intel, apple, cpu"),
    ("[container]\nflavor = 'fat'\n", "container.flavor: 'fat' must be one of base, runtime, devel"),
    ("[frameworks]\nkeras = { version = '>=3', backend = 'mxnet' }\n", "frameworks.keras.backend: 'mxnet' is not a Keras backend"),
    ("[hardware]\ngpus = ['sm_81']\n", "architecture 'sm_81' (sm_81) is not in the data"),
    ("[hardware]\nvendor = 'amd'\ndriver = '535.104.05'\n", "'driver' and 'cuda' apply to NVIDIA GPUs only"),
])
def test_bad_input_names_file_key_and_value(text: str, expected: str, fixture_graph: Provider) -> None:
    assert expected in problems(text, fixture_graph)


def test_a_framework_is_named_by_its_canonical_project_name(fixture_graph: Provider) -> None:
    s = parse_spec("[frameworks]\nTorch = '*'\nTorchVision = '*'\n", "project.toml", fixture_graph)
    assert [f.name for f in s.frameworks] == ["torch", "torchvision"]
    # cupy_cuda12x is the project cupy-cuda12x (PEP 503), an alias of cupy
    assert problems("[frameworks]\ncupy_cuda12x = '*'\n", fixture_graph) == (
        "project.toml: frameworks.cupy_cuda12x: unknown framework 'cupy_cuda12x' (known: torch, tensorflow, jax, keras, "
        "onnxruntime, paddlepaddle, cupy, torchvision, torchaudio, jaxlib); did you mean 'cupy'?")


def test_every_problem_is_listed_together(fixture_graph: Provider) -> None:
    msg = problems("[frameworks]\npytorch = '*'\n[hardware]\ngpus = ['A1000']\n", fixture_graph)
    assert msg.startswith("2 problems:")


keys = st.sampled_from(["project", "frameworks", "hardware", "packages", "container", "targets",
                        "torch", "gpus", "driver", "python", "pip", "name", "x"])
values = st.recursive(st.one_of(st.text(max_size=12), st.integers(), st.booleans(), st.floats(allow_nan=False)),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
                      max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.dictionaries(keys, values, max_size=5))
def test_no_generated_spec_crashes_the_parser(data: dict, fixture_graph: Provider) -> None:  # type: ignore[type-arg]
    import tomli_w

    try:
        text = tomli_w.dumps(data)
    except (TypeError, ValueError):
        return
    try:
        parse_spec(text, "project.toml", fixture_graph)
    except SpecError as e:
        assert e.problems and all(p.file == "project.toml" for p in e.problems)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_arbitrary_text_gives_spec_error_or_spec(text: str, fixture_graph: Provider) -> None:
    try:
        parse_spec(text, "project.toml", fixture_graph)
    except SpecError:
        pass


def _platform_errors(text: str, graph: Provider) -> str:
    with pytest.raises(SpecError) as e:
        parse_spec(text, "project.toml", graph)
    return e.value.message


def test_the_platform_follows_the_gpus(real_graph: Provider) -> None:
    s = parse_spec('[hardware]\ngpus = ["GH200"]\n[targets.x86]\ngpus = ["H100"]\n'
                   '[targets.arm]\ngpus = ["H100"]\nplatform = "linux/arm64"\n', "project.toml", real_graph)
    got = {t.name: (t.platform, t.platform_why) for t in s.targets}
    assert got == {"default": ("linux/arm64", "GH200 comes with an Arm CPU (linux/arm64)"),
                   "x86": ("linux/amd64", "linux/amd64, the default (no GPU listed implies another platform)"),
                   "arm": ("linux/arm64", "linux/arm64 as written in [targets.arm]")}


def test_gpus_of_two_platforms_in_one_target_are_named(real_graph: Provider) -> None:
    from msgspec.structs import replace

    # no NVIDIA model in the data is x86-only; make the H100 one to see the message
    m = real_graph.m
    graph = Provider(replace(m, gpus=tuple(replace(g, platform="linux/amd64") if g.name == "H100" else g
                                           for g in m.gpus)))
    msg = _platform_errors('[hardware]\ngpus = ["H100", "GH200"]\n', graph)
    assert msg == ("project.toml: hardware.gpus: GPUs of different platforms in one target (H100 is linux/amd64; "
                   "GH200 is linux/arm64); put each platform's GPUs in its own [targets.NAME]")


@pytest.mark.parametrize(("text", "expected"), [
    ('[hardware]\ngpus = ["GB200"]\nplatform = "linux/amd64"\n',
     "hardware.platform: is 'linux/amd64' but GB200 runs on linux/arm64; drop the key or move those GPUs"),
    ('[hardware]\ngpus = ["H100"]\nplatform = "arm64"\n',
     "hardware.platform: 'arm64' must be one of linux/amd64, linux/arm64, windows/amd64, windows/arm64, darwin/arm64, darwin/amd64 (Docker's names)"),
    ('[hardware]\ngpus = ["H100"]\njetpack = "6.2"\n',
     "hardware.jetpack: applies to Jetson modules only (e.g. gpus = ['Jetson AGX Orin'])"),
    ('[hardware]\ngpus = ["Jetson AGX Orin"]\njetpack = "3.3"\n',
     "hardware.jetpack: JetPack 3.3 is not in the data (known: 4.2 .. 4.6.6, 5.0 .. 5.1.5, 6.0 .. 6.2.1, 7.0 .. 7.1)"),
    ('[hardware]\ngpus = ["Jetson AGX Orin"]\njetpack = "4.6"\n',
     "hardware.jetpack: JetPack 4.6 does not support Jetson AGX Orin (JetPack releases that do: 5.0 .. 5.1.5, "
     "6.0 .. 6.2.1)"),
    ('[hardware]\ngpus = ["Jetson AGX Orin"]\ndriver = "540.4.0"\n',
     "hardware: a Jetson's driver and CUDA come with its JetPack release: write jetpack = '6.2' instead of driver "
     "or cuda"),
    ('[hardware]\ngpus = ["Jetson AGX Orin", "Jetson T5000"]\n',
     "hardware.gpus: no JetPack release in the data supports Jetson AGX Orin, Jetson T5000 together"),
    ('[hardware]\ngpus = ["MI300X"]\nrocm_driver = "4.5"\n',
     "hardware.rocm_driver: '4.5': the data has no kernel-driver row for it (known: 5.3, 5.4, 5.5, 5.6, 5.7, "
     "6.0, 6.1, 6.2, 6.3, 6.4, 7.0, 7.1, 7.2); write the ROCm release of the amdgpu driver, e.g. '6.4'"),
    ('[hardware]\ngpus = ["H100"]\nrocm_driver = "6.4"\n',
     "hardware.rocm_driver: applies to AMD GPUs only (the ROCm release of the amdgpu kernel driver)"),
])
def test_platform_keys_name_file_key_and_value(text: str, expected: str, real_graph: Provider) -> None:
    assert f"project.toml: {expected}" in _platform_errors(text, real_graph).splitlines()


def test_a_jetson_target_takes_the_newest_jetpack_of_its_modules(real_graph: Provider) -> None:
    s = parse_spec('[hardware]\ngpus = ["Jetson AGX Xavier"]\n[targets.thor]\ngpus = ["Jetson T4000"]\n',
                   "project.toml", real_graph)
    got = {t.name: (t.platform, t.jetpack.raw if t.jetpack else "") for t in s.targets}
    assert got == {"default": ("linux/arm64", "5.1.5"), "thor": ("linux/arm64", "7.1")}


def test_every_problem_of_the_targets_is_named_at_once_in_the_order_of_the_keys(real_graph: Provider) -> None:
    text = ('[hardware]\ngpus = ["A100", "B1000"]\nvendor = "qualcomm"\ndriver = "535"\nrocm = "6.2"\nrocm_driver = "4.5"\n'
            'platform = "arm64"\njetpack = "6.2"\ncolour = "red"\n'
            '[targets.jet]\ngpus = ["Jetson AGX Orin"]\njetpack = "3.3"\n[targets.cpu]\nvendor = "cpu"\ncuda = \"12.8\"\n')
    assert _platform_errors(text, real_graph).splitlines() == [
        "14 problems:",
        "  project.toml: hardware.colour: unknown key (allowed: accelerator, cuda, driver, gpus, jetpack, platform, rocm, "
        "rocm_driver, vendor, wsl)",
        "  project.toml: hardware.gpus[1]: unknown GPU 'B1000'; did you mean 'B100' or 'T1000'? (or write an architecture: "
        "sm_80, "
        "8.0, gfx942)",
        "  project.toml: hardware.vendor: 'qualcomm' must be one of nvidia, amd, intel, apple, cpu",
        "  project.toml: hardware.vendor: is 'qualcomm' but the GPUs listed are nvidia",
        "  project.toml: hardware.driver: driver version '535' is not an NVIDIA driver version such as 535.104.05",
        "  project.toml: hardware.rocm: applies to AMD GPUs only (set vendor = 'amd' or AMD gpus)",
        "  project.toml: hardware.rocm_driver: applies to AMD GPUs only (the ROCm release of the amdgpu kernel driver)",
        "  project.toml: hardware.rocm_driver: '4.5': the data has no kernel-driver row for it (known: 5.3, 5.4, 5.5, "
        "5.6, 5.7, 6.0, 6.1, 6.2, 6.3, 6.4, 7.0, 7.1, 7.2); write the ROCm release of the amdgpu driver, e.g. '6.4'",
        "  project.toml: hardware.platform: 'arm64' must be one of linux/amd64, linux/arm64, windows/amd64, windows/arm64, darwin/arm64, darwin/amd64 (Docker's names)",
        "  project.toml: hardware.jetpack: applies to Jetson modules only (e.g. gpus = ['Jetson AGX Orin'])",
        "  project.toml: targets.cpu: 'driver' and 'cuda' apply to NVIDIA GPUs only (set vendor or gpus)",
        "  project.toml: targets.cpu.platform: 'arm64' must be one of linux/amd64, linux/arm64, windows/amd64, windows/arm64, darwin/arm64, darwin/amd64 (Docker's names)",
        "  project.toml: targets.jet.driver: driver version '535' is not an NVIDIA driver version such as 535.104.05",
        "  project.toml: targets.jet.jetpack: JetPack 3.3 is not in the data (known: 4.2 .. 4.6.6, 5.0 .. 5.1.5, "
        "6.0 .. 6.2.1, 7.0 .. 7.1)",
    ]


# ----------------------------------------------------------------------------- issue 22: values misread or passed silently


@pytest.mark.parametrize("text,expected", [
    # TOML reads 12.10 as the float 12.1: it was CUDA 12.1
    ("[hardware]\ngpus = ['A100']\ncuda = 12.10\n",
     "hardware.cuda: must be a string such as '12.4', not float 12.1; quote it: TOML reads a decimal number, "
     "so 12.10 is 12.1"),
    ("[targets.mi]\ngpus = ['MI300X']\nrocm = 6.2\n", "targets.mi.rocm: must be a string such as '12.4', not float 6.2"),
    ("[indexes]\npytroch = 'https://mirror.example/whl'\n",
     "indexes.pytroch: unknown key (allowed: jetson, jetson-redist, nvidia, paddle, pypi, pytorch); did you mean "
     "'pytorch'?"),
    ("[container]\nos = 'windows11'\n", "container.os: 'windows11' is not an OS of the data's base images (known: "),
    ("[container]\nos = 'ubuntu22.4'\n", "did you mean 'ubuntu22.04'?"),
    ("[project]\nname = 'x'\ndescription = 5\n", "project.description: must be a string, not int 5"),
])
def test_values_that_were_misread_or_ignored_are_refused(text: str, expected: str, fixture_graph: Provider) -> None:
    assert expected in problems(text, fixture_graph)


def test_a_whole_number_is_still_a_cuda_version_and_a_known_os_is_taken(fixture_graph: Provider) -> None:
    spec = parse_spec("[hardware]\ngpus = ['A100']\ncuda = 12\n[container]\nos = 'ubuntu22.04'\n"
                      "[indexes]\npytorch = 'https://mirror.example/whl'\n", "project.toml", fixture_graph)
    assert spec.targets[0].cuda is not None and spec.targets[0].cuda.raw == "12"
    assert spec.os == "ubuntu22.04" and spec.indexes == (("pytorch", "https://mirror.example/whl"),)


@pytest.mark.parametrize("written,model", [
    ("NVIDIA A100-SXM4-64GB", "A100"),  # a memory size and form factor the aliases lack
    ("Tesla V100-DGXS-32GB", "V100"),
    ("NVIDIA GeForce GTX 1060 6GB", "GTX 1060"),
    ("RTX 3060 Mobile", "RTX 3060 Laptop GPU"),  # a laptop part as people write it
    ("rtx 4090 laptop", "RTX 4090 Laptop GPU"),
    ("NVIDIA GeForce GTX 1070 Mobile", "GTX 1070"),  # Pascal laptop parts carry the desktop name
    ("NVIDIA GeForce RTX 2080 Super with Max-Q Design", "RTX 2080 SUPER"),
])
def test_a_gpu_is_found_as_the_driver_or_a_person_spells_it(written: str, model: str, real_graph: Provider) -> None:
    spec = parse_spec(f'[hardware]\ngpus = ["{written}"]\n', "project.toml", real_graph)
    assert [g.name for g in spec.targets[0].gpus] == [model]


@pytest.mark.parametrize("written,near", [
    ("RTX 3090 Super", "did you mean 'RTX 3090' or 'RTX 3090 Ti'"),  # the models of its series first
    ("NVIDIA GeForce RTX 4080 Ti Laptop GPU", "did you mean 'RTX 4080' or 'RTX 4080 SUPER' or 'RTX 4080 Laptop GPU'"),
    ("Tesla K41", "did you mean 'K40' or 'K10'"),
])
def test_an_unknown_gpu_is_exit_2_naming_the_value_and_the_nearest_known_names(written: str, near: str,
                                                                                real_graph: Provider) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(f'[hardware]\ngpus = ["{written}"]\n', "project.toml", real_graph)
    assert e.value.exit_code == 2
    assert f"project.toml: hardware.gpus[0]: unknown GPU '{written}'; {near}" in str(e.value)


# ----------------------------------------------------------------------------- issue 23: every host


def test_darwin_arm64_implies_apple_and_wsl_is_read(real_graph: Provider) -> None:
    s = parse_spec('[hardware]\nplatform = "darwin/arm64"\n[targets.cpu]\nvendor = "cpu"\n'
                   '[targets.wsl]\nplatform = "linux/amd64"\ngpus = ["RTX 4090"]\nwsl = true\ndriver = "32.0.15.7216"\n'
                   '[targets.win]\nplatform = "windows/amd64"\ngpus = ["RTX 4090"]\n', "project.toml", real_graph)
    got = {t.name: (t.platform, t.vendor, t.wsl, t.windows_driver, str(t.driver)) for t in s.targets}
    assert got == {"default": ("darwin/arm64", "apple", False, False, "None"),
                   "cpu": ("darwin/arm64", "cpu", False, False, "None"),
                   "wsl": ("linux/amd64", "nvidia", True, True, "572.16"),  # Windows' own form of 572.16
                   "win": ("windows/amd64", "nvidia", False, True, "None")}


@pytest.mark.parametrize("text,expected", [
    ('[hardware]\nplatform = "darwin/arm64"\ngpus = ["RTX 4090"]\n',
     "hardware.gpus: ['RTX 4090'] on darwin/arm64: macOS has no CUDA, ROCm or XPU builds of these frameworks"),
    ('[hardware]\nplatform = "darwin/arm64"\nvendor = "nvidia"\ndriver = "570.86.10"\n',
     "hardware.driver: '570.86.10': macOS has no CUDA or ROCm; drop the key"),
    ('[hardware]\nplatform = "windows/amd64"\ngpus = ["MI300X"]\n',
     "hardware.gpus: ['MI300X'] on windows/amd64: the ROCm builds of these frameworks are Linux wheels; use WSL2"),
    ('[hardware]\nplatform = "windows/amd64"\nvendor = "amd"\nrocm = "6.2"\n',
     "hardware.rocm: '6.2': ROCm builds of these frameworks are for Linux"),
    ('[hardware]\nplatform = "linux/amd64"\nvendor = "apple"\n',
     "hardware.vendor: 'apple' on linux/amd64: Apple's GPU (MPS) is on Apple silicon only"),
    ('[hardware]\nplatform = "darwin/amd64"\nvendor = "apple"\n',
     "hardware.vendor: 'apple' on darwin/amd64: Apple's GPU (MPS) is on Apple silicon only"),
    ('[hardware]\nplatform = "windows/arm64"\nvendor = "intel"\n',
     "hardware.vendor: 'intel' on windows/arm64: no framework publishes AMD or Intel GPU builds for Windows on Arm"),
    ('[hardware]\nplatform = "windows/amd64"\ngpus = ["RTX 4090"]\nwsl = true\n',
     "hardware.wsl: is true but the platform is 'windows/amd64': WSL2 runs linux/amd64 Linux"),
    ('[hardware]\ngpus = ["Jetson AGX Orin"]\nwsl = true\n',
     "hardware.wsl: is true but the GPUs are Jetson modules"),
    ('[hardware]\nwsl = "yes"\n', "hardware.wsl: 'yes' must be true or false"),
])
def test_keys_a_host_cannot_have_are_named(real_graph: Provider, text: str, expected: str) -> None:
    assert expected in problems(text, real_graph)


@pytest.mark.parametrize("platform", ["darwin/arm64", "linux/amd64", "windows/amd64"])
def test_an_empty_gpus_list_is_the_same_target_as_no_gpus_on_every_platform(real_graph: Provider,
                                                                           platform: str) -> None:
    def target(hardware: str) -> tuple[str, str, tuple[object, ...]]:
        t = parse_spec(f'[frameworks]\ntorch = "*"\n[hardware]\nplatform = "{platform}"\n{hardware}',
                       "project.toml", real_graph).targets[0]
        return t.platform, t.vendor, t.gpus

    # on Apple silicon both are Apple's GPU (MPS), as for a target without gpus; `vendor = "cpu"` says CPU
    assert target("gpus = []\n") == target("") == (platform, "apple" if platform == "darwin/arm64" else "cpu", ())
    assert target('gpus = []\nvendor = "cpu"\n')[1] == "cpu"


@pytest.mark.parametrize("command", ["lock", "explain"])
def test_a_lock_passed_where_the_spec_belongs_is_one_problem_naming_the_spec(tmp_path: Path, command: str) -> None:
    case = Path(__file__).parent / "cases" / "cpu-tensorflow"
    lock = tmp_path / "envsolve.lock"
    lock.write_text((case / "expected.lock").read_text())
    r = CliRunner().invoke(main, [command, str(lock)])
    assert r.exit_code == 2 and "Traceback" not in r.output and "unknown section" not in r.output
    assert r.stderr == (f"ERROR: {lock}: is a lock (envsolve.lock), not a project spec\n"
                        f"TIP: pass the project.toml it was made from: {tmp_path / 'project.toml'} (its `spec` key "
                        f"names it), or, to use the lock itself, `envsolve sync {lock}` or `envsolve render {lock}`\n")


# ------------------------------------------------------------------ hostile round 3, defect 3

LONG = "9" * 5000


@pytest.mark.parametrize(("text", "where", "what"), [
    (f'[project]\nname = "x"\npython = ">=3.{LONG}"\n[frameworks]\ntorch = "*"\n', "project.python", "range"),
    (f'[frameworks]\ntorch = ">=2.{LONG}"\n', "frameworks.torch", "range"),
    (f'[frameworks]\ntorch = "*"\n[hardware]\ndriver = "{LONG}.1"\n', "hardware.driver", "driver version"),
    (f'[frameworks]\ntorch = "*"\n[packages]\npip = ["numpy>=1.{LONG}"]\n', "packages.pip[0]",
     "requirement numpy: range"),
])
def test_a_version_number_of_thousands_of_digits_is_a_problem_not_a_traceback(text: str, where: str, what: str,
                                                                             fixture_graph: Provider) -> None:
    # a 5000-digit number raised int()'s "Exceeds the limit (4300 digits)" ValueError when the solver compared
    got = problems(text, fixture_graph)
    assert f"project.toml: {where}: {what} " in got and "has a number of 5000 digits" in got, got
    assert "at most 16: write the version you mean" in got and LONG not in got and "set_int_max_str_digits" not in got


def test_a_long_number_in_a_range_is_refused_on_the_command_line_without_a_traceback(tmp_path: Path) -> None:
    for body in (f'python = ">=3.{LONG}"\n[frameworks]\ntorch = "*"\n', f'[frameworks]\ntorch = ">=2.{LONG}"\n'):
        spec = tmp_path / "project.toml"
        spec.write_text('[project]\nname = "x"\n' + body if body.startswith("python") else body)
        r = CliRunner().invoke(main, ["lock", str(spec), "-o", str(tmp_path / "envsolve.lock")])
        assert r.exit_code == 2 and "Traceback" not in r.output and "has a number of 5000 digits" in r.output, r.output


@pytest.mark.parametrize(("written", "meant"), [("3.11", "==3.11.*"), (" 3.12 ", "==3.12.*"), (">=3.10", ">=3.10")])
def test_a_bare_python_version_means_that_release_line(written: str, meant: str, fixture_graph: Provider) -> None:
    """pixi and conda users write `python = "3.11"` for any 3.11: it is `==3.11.*`, and the range
    shown (the lock's summary) is the one it means."""
    spec = parse_spec(f'[project]\nname = "x"\npython = "{written}"\n', "project.toml", fixture_graph)
    assert spec.python_raw == meant
    assert ("3.11.9" in spec.python) == (meant in ("==3.11.*", ">=3.10"))


@pytest.mark.parametrize("written", ["3", "311", "3.11.4", "3.11.*"])
def test_a_bare_version_that_is_no_minor_is_refused_with_a_python_example(written: str,
                                                                          fixture_graph: Provider) -> None:
    with pytest.raises(SpecError) as e:
        parse_spec(f'[project]\nname = "x"\npython = "{written}"\n', "project.toml", fixture_graph)
    assert e.value.message == (f"project.toml: project.python: {written!r} is not a version specifier; write e.g. "
                               "'>=3.10,<3.13', '==3.11.*' or '3.11'")
