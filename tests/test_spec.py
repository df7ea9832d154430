import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
    ("[hardware]\nvendor = 'intel'\n", "hardware.vendor: 'intel' must be one of nvidia, amd, cpu"),
    ("[container]\nflavor = 'fat'\n", "container.flavor: 'fat' must be one of base, runtime, devel"),
    ("[frameworks]\nkeras = { version = '>=3', backend = 'mxnet' }\n", "frameworks.keras.backend: 'mxnet' is not a Keras backend"),
    ("[hardware]\ngpus = ['sm_81']\n", "architecture 'sm_81' (sm_81) is not in the data"),
    ("[hardware]\nvendor = 'amd'\ndriver = '535.104.05'\n", "'driver' and 'cuda' apply to NVIDIA GPUs only"),
])
def test_bad_input_names_file_key_and_value(text: str, expected: str, fixture_graph: Provider) -> None:
    assert expected in problems(text, fixture_graph)


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
