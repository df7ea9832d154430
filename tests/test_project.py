"""`envsolve init`, `add`, `remove`, the project found from any folder, and a lock that goes
stale on the spec's meaning only: the workflow uv and pixi users expect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from envsolve.cli import main
from envsolve.lock import model as lockfile
from envsolve.paths import project_folder
from envsolve.tables import parse_toml
from tests.test_sync import PY, _host, index  # noqa: F401 - index is a fixture used by name

_ = index


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository (``.git``) holding a new project, the working folder two folders down in it."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "src" / "deep").mkdir(parents=True)
    monkeypatch.chdir(root / "src" / "deep")
    _host(monkeypatch, "no-gpu")
    return root


# ---------------------------------------------------------------------------- finding the project

def test_the_nearest_project_folder_is_found_upward_and_the_search_ends_at_the_repository_root(
        tmp_path: Path) -> None:
    repo = tmp_path / "outer" / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "a" / "b").mkdir(parents=True)
    (tmp_path / "outer" / "project.toml").write_text("")  # above the repository root: never found from inside
    environ = {"HOME": str(tmp_path / "nohome")}
    assert project_folder(str(repo / "a" / "b"), environ) is None
    (repo / "envsolve.lock").write_text("")  # a lock alone makes a project folder too
    assert project_folder(str(repo / "a" / "b"), environ) == os.path.join("..", "..")
    (repo / "a" / "project.toml").write_text("")
    assert project_folder(str(repo / "a" / "b"), environ) == ".."
    assert project_folder(str(repo / "a"), environ) == "."
    home = tmp_path / "home"
    (home / "work").mkdir(parents=True)
    (tmp_path / "project.toml").write_text("")  # above the home folder: never found from inside it
    assert project_folder(str(home / "work"), {"HOME": str(home)}) is None


def test_every_command_finds_the_project_from_a_subfolder(project: Path) -> None:
    (project / "project.toml").write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n'
                                          '[hardware]\ngpus = ["A100"]\n')
    r = _run("lock")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"wrote {os.path.join('..', '..', 'envsolve.lock')}\n")
    assert (project / "envsolve.lock").is_file() and not Path("envsolve.lock").exists()
    assert _run("lock", "--check").exit_code == 0
    assert _run("explain").exit_code == 0
    r = _run("render")
    assert r.exit_code == 0, r.output
    assert (project / "envsolve-out" / "default" / "Dockerfile").is_file()
    r = _run("doctor")
    assert "envsolve.lock" in r.stdout and "no such lock file" not in r.output


def test_project_chooses_the_folder_and_a_missing_spec_says_how_to_start(project: Path, tmp_path: Path) -> None:
    r = _run("lock")
    assert r.exit_code == 2
    assert r.stderr == ("ERROR: project.toml: no such file\n"
                        "TIP: write one with `envsolve init` (then `envsolve add torch`), or give its path or "
                        "--project DIR; envsolve looks in this folder and the folders above it, up to the "
                        "repository root\n")
    other = tmp_path / "other"
    other.mkdir()
    (other / "project.toml").write_text('[frameworks]\ntorch = "*"\n')
    r = _run("lock", "--project", str(other))
    assert r.exit_code == 0, r.output
    assert (other / "envsolve.lock").is_file()
    r = _run("render", "--project", str(other / "nowhere"))
    assert r.exit_code == 2 and f"ERROR: --project: {other / 'nowhere'}: no such folder" in r.stderr
    r = _run("lock", "project.toml", "--project", str(other))
    assert r.exit_code == 2 and "both name the file to use" in r.stderr


# ---------------------------------------------------------------------------- init

def test_init_writes_a_commented_spec_that_locks_as_written_and_never_writes_over_one(project: Path) -> None:
    r = _run("init", str(project), "--gpus", "H100, A10G", "--driver", "535.104.05")
    assert r.exit_code == 0, r.output
    text = (project / "project.toml").read_text()
    assert 'name = "repo"' in text and 'python = ">=3.11"  # a range' in text
    assert 'gpus = ["H100", "A10G"]' in text and 'driver = "535.104.05"' in text
    assert "# the hardware given to `envsolve init`" in text and "# pip: other packages" in text
    r = _run("lock")
    assert r.exit_code == 0, r.output
    assert "no frameworks" in r.stdout
    again = _run("init", str(project))
    assert again.exit_code == 2
    assert f"ERROR: {project / 'project.toml'}: exists; envsolve init never writes over a project" in again.stderr
    assert (project / "project.toml").read_text() == text


def test_init_describes_this_machine_and_refuses_a_gpu_it_does_not_know(project: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _host(monkeypatch, "h100")
    r = _run("init", "--name", "mine")
    assert r.exit_code == 0, r.output
    text = Path("project.toml").read_text()
    assert 'name = "mine"' in text and 'gpus = ["H100"]' in text and "as `envsolve detect` sees it (nvidia" in text
    r = _run("init", str(project), "--gpus", "H1000")
    assert r.exit_code == 2 and "H1000" in r.stderr
    assert not (project / "project.toml").exists()
    r = _run("init", str(project), "--host", "--gpus", "H100")
    assert r.exit_code == 2 and "--host" in r.stderr and not (project / "project.toml").exists()


# ---------------------------------------------------------------------------- add, remove

SPEC = """\
# my project
[project]
name = 'demo'   # its name
python = "3.11"

[frameworks]
torch = ">=2.4"  # the model
keras = { version = ">=3.5", backend = "torch" }

[packages]
pip = [
    "einops",  # tensor reshapes
    "numpy<2",
]

[hardware]
gpus = ["A100"]
"""


def test_add_puts_each_name_where_it_belongs_and_keeps_comments_and_layout(project: Path) -> None:
    spec = project / "project.toml"
    spec.write_text(SPEC)
    r = _run("add", "pytorch>=2.5", "keras>=3.6", "numpy<2.1", "xformers", "ffmpeg", "--no-lock")
    assert r.exit_code == 0, r.output
    assert spec.read_text() == SPEC.replace('torch = ">=2.4"', 'torch = ">=2.5"').replace(
        'version = ">=3.5"', 'version = ">=3.6"').replace('"numpy<2",', '"numpy<2.1",').replace(
        '"numpy<2.1",\n]', '"numpy<2.1",\n    "xformers",\n    "ffmpeg",\n]')
    r = _run("add", "--conda", "cudatoolkit", "--no-lock")
    assert r.exit_code == 0 and 'conda = ["cudatoolkit"]' in spec.read_text()
    r = _run("remove", "ffmpeg", "torch", "--no-lock")
    assert r.exit_code == 0, r.output
    text = spec.read_text()
    assert "torch =" not in text and "ffmpeg" not in text and "# the model" not in text
    assert "# my project" in text and '"einops",  # tensor reshapes' in text
    r = _run("remove", "tensorflow", "--no-lock")
    assert r.exit_code == 2
    assert f"ERROR: {os.path.join('..', '..', 'project.toml')}: has no framework or package named 'tensorflow'" \
        in r.stderr
    assert spec.read_text() == text


def test_add_locks_and_a_lock_that_fails_puts_the_spec_back_byte_for_byte(project: Path) -> None:
    spec = project / "project.toml"
    spec.write_bytes(SPEC.replace("A100", "sm_86").encode())
    r = _run("add", "torch>=2.5")
    assert r.exit_code == 0, r.output
    assert "wrote" in r.stdout and (project / "envsolve.lock").is_file()
    before, lock = spec.read_bytes(), (project / "envsolve.lock").read_bytes()
    r = _run("add", "torch==1.0")  # no torch 1.0 build serves sm_86 with Python 3.11
    assert r.exit_code == 1
    assert "project.toml: put back as it was, since the lock failed" in r.stderr
    assert spec.read_bytes() == before and (project / "envsolve.lock").read_bytes() == lock
    r = _run("add", "torch>=", "--no-lock")  # not a requirement: named, nothing written
    assert r.exit_code == 2 and spec.read_bytes() == before
    assert r.stderr.startswith("ERROR: argument 'torch>=': '>=' is not a version range; write e.g. 'torch>=2.4'")


def test_add_target_limits_a_pip_line_to_that_targets_platform(project: Path) -> None:
    spec = project / "project.toml"
    spec.write_text(SPEC + '\n[targets.laptop]\ngpus = ["RTX 4080 Laptop GPU"]\nplatform = "windows/amd64"\n')
    r = _run("add", "triton-windows", "--target", "laptop", "--no-lock")
    assert r.exit_code == 0, r.output
    r = _run("add", "triton", "pkg @ https://example.com/pkg-1.0-py3-none-any.whl", "numpy<2; python_version < '3.13'",
             "--target", "default", "--no-lock")
    assert r.exit_code == 0, r.output
    linux = 'sys_platform == "linux" and platform_machine == "x86_64"'
    assert parse_toml(spec.read_text())["packages"]["pip"] == [
        "einops", f'numpy<2; python_version < "3.13" and ({linux})',
        'triton-windows; sys_platform == "win32" and platform_machine == "AMD64"', f"triton; {linux}",
        f"pkg @ https://example.com/pkg-1.0-py3-none-any.whl ; {linux}"]
    r = _run("add", "torch", "--target", "laptop", "--no-lock")
    assert r.exit_code == 2 and "a framework is the whole project's" in r.stderr
    r = _run("add", "triton", "--target", "nope", "--no-lock")
    assert r.exit_code == 2 and "has no target 'nope' (it has: default, laptop)" in r.stderr


# ---------------------------------------------------------------------------- staleness by meaning

def _full_lock(project: Path) -> Path:
    """A full lock of a CPU spec asking for requests (from the tests' index), in ``project``; its spec."""
    spec = project / "project.toml"
    spec.write_text(f'[project]\nname = "demo"\npython = "=={PY}.*"\n[hardware]\nvendor = "cpu"\n'
                    '[packages]\npip = ["requests"]\n')
    assert _run("lock").exit_code == 0
    return spec


def test_a_comment_or_a_new_layout_leaves_the_lock_current_a_new_range_does_not(index: str, project: Path) -> None:
    spec = _full_lock(project)
    spec.write_text(f"# a comment\n[packages]\npip = [ 'requests' ]  # http\n\n[hardware]\nvendor = 'cpu'\n"
                    f'[project]\npython = "=={PY}.*"\nname = "demo"\n')
    r = _run("lock", "--check")
    assert r.exit_code == 0, r.output
    spec.write_text(spec.read_text().replace("'requests'", "'requests<2.32'"))
    r = _run("lock", "--check")
    assert r.exit_code == 1 and "its spec changed since it was locked" in r.stderr


def test_a_lock_written_with_the_digest_of_the_specs_bytes_is_still_current(index: str, project: Path) -> None:
    spec = _full_lock(project)
    lock = project / "envsolve.lock"
    old = lockfile.read(lock)
    text = lock.read_text()
    assert text.count(old.spec_digest) == 1
    lock.write_text(text.replace(old.spec_digest, lockfile.sha256(spec.read_bytes())))  # as locks before this were
    assert _run("lock", "--check").exit_code == 0


# ---------------------------------------------------------------------------- the whole path

def test_init_add_sync_run_and_doctor_from_any_folder_of_the_project(index: str, project: Path) -> None:
    r = _run("init", str(project), "--python", PY)
    assert r.exit_code == 0, r.output
    r = _run("add", "requests")
    assert r.exit_code == 0, r.output
    assert "requests" in (project / "envsolve.lock").read_text()
    r = _run("sync")
    assert r.exit_code == 0, r.output
    venv = project / ".venv"
    assert (venv / "bin" / "python").exists()
    done = subprocess.run([sys.executable, "-m", "envsolve", "run", "--", "python", "-c", "import sys; print(sys.prefix)"],
                          capture_output=True, text=True, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).resolve() == venv.resolve()
    r = _run("doctor")
    assert str(Path("..", "..", "envsolve.lock")) in r.stdout


def test_init_for_a_gpu_fleet_then_add_torch_and_flash_attn_locks_and_renders_both(project: Path) -> None:
    assert _run("init", str(project), "--gpus", "A100").exit_code == 0
    r = _run("add", "torch", "flash-attn", "--frameworks-only")
    assert r.exit_code == 0, r.output
    text = (project / "project.toml").read_text()
    assert 'torch = "*"' in text and 'pip = ["flash-attn"]' in text
    lock = lockfile.read(project / "envsolve.lock")
    [env] = lock.environments
    assert [p.name for p in env.frameworks] == ["torch"] and [e.name for e in env.extensions] == ["flash-attn"]
    assert _run("render").exit_code == 0
    requirements = (project / "envsolve-out" / "default" / "requirements.txt").read_text()
    assert f"\nflash-attn @ {env.extensions[0].url}\n" in requirements  # its prebuilt wheel, for this torch


# ---------------------------------------------------------------------------- what a hostile review found

def test_add_and_remove_edit_sections_written_as_inline_tables(project: Path) -> None:
    spec = project / "project.toml"
    spec.write_text('frameworks = { torch = "*" }\npackages = { pip = ["numpy"] }\n[project]\nname = "x"\n'
                    '[hardware]\ngpus = ["H100"]\n')
    assert _run("add", "requests", "jax", "--no-lock").exit_code == 0
    assert parse_toml(spec.read_text())["frameworks"] == {"torch": "*", "jax": "*"}
    assert _run("remove", "numpy", "torch", "numpy", "--no-lock").exit_code == 0  # a name twice is one
    data = parse_toml(spec.read_text())
    assert data["frameworks"] == {"jax": "*"} and data["packages"] == {"pip": ["requests"]}


def test_conda_and_apt_entries_are_named_by_their_own_rules(project: Path) -> None:
    spec = project / "project.toml"
    spec.write_text('[project]\nname = "x"\n[packages]\nconda = ["conda-forge::numpy", "pytorch::pytorch"]\n'
                    'apt = ["libstdc++6", "g++"]\n')
    assert _run("remove", "conda-forge", "--no-lock").exit_code == 2  # a channel is no package
    assert _run("add", "--conda", "numpy>=2", "--no-lock").exit_code == 0
    assert _run("add", "--apt", "libstdc", "--no-lock").exit_code == 0
    assert _run("remove", "g++", "--no-lock").exit_code == 0
    packages = parse_toml(spec.read_text())["packages"]
    assert packages == {"conda": ["numpy>=2", "pytorch::pytorch"], "apt": ["libstdc++6", "libstdc"]}
    r = _run("add", "--conda", "--apt", "x", "--no-lock")
    assert r.exit_code == 2 and "--apt --conda: say one place for the packages" in r.stderr


def test_a_framework_with_extras_is_the_framework_and_a_url_is_refused(project: Path) -> None:
    spec = project / "project.toml"
    spec.write_text('[project]\nname = "x"\n')
    r = _run("add", "jax[cuda12]>=0.5", "torch[opt-einsum]", "--no-lock")
    assert r.exit_code == 0, r.output
    assert parse_toml(spec.read_text())["frameworks"] == {"jax": ">=0.5", "torch": "*"}
    assert "torch[opt-einsum]: envsolve chooses torch's build for the GPUs, so [opt-einsum] is not needed" in r.stdout
    assert _run("remove", "jax[cuda12]", "--no-lock").exit_code == 0
    r = _run("add", "torch @ https://example.com/torch.whl", "--no-lock")
    assert r.exit_code == 2 and "a framework takes a version range only" in r.stderr


def test_a_spec_init_wrote_locks_again_and_the_last_framework_can_be_removed(project: Path) -> None:
    assert _run("init", str(project), "--gpus", "H100").exit_code == 0
    assert _run("lock").exit_code == 0
    assert _run("lock").exit_code == 0  # its empty tables are what the project asks: no refusal the second time
    assert _run("add", "torch").exit_code == 0
    r = _run("remove", "torch")
    assert r.exit_code == 0, r.output


def test_a_spec_that_cannot_be_written_is_exit_2_and_left_as_it_was(project: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from envsolve import files

    spec = project / "project.toml"
    spec.write_bytes(b"\xef\xbb\xbf" + SPEC.encode())
    assert _run("add", "einops>=0.8", "--no-lock").exit_code == 0
    assert spec.read_bytes().startswith(b"\xef\xbb\xbf# my project")  # the BOM kept
    before = spec.read_bytes()

    def refused(*_: object, **__: object) -> str:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(files, "_temporary", refused)
    r = _run("add", "xformers", "--no-lock")
    assert r.exit_code == 2 and "Traceback" not in r.output and "make the file (or its folder) writable" in r.stderr
    assert spec.read_bytes() == before


def test_init_names_the_option_at_fault_and_says_where_to_go_next(project: Path) -> None:
    r = _run("init", str(project / "new"), "--name", "bad name", "--gpus", "H100")
    assert r.exit_code == 2 and r.stderr.startswith("ERROR: --name: 'bad name' must be letters, digits")
    assert "TIP: fix the options named above; nothing was written" in r.stderr
    assert not (project / "new" / "project.toml").exists()
    for args in (["--gpus", ","], ["--name", ""]):
        r = _run("init", str(project / "new"), *args)
        assert r.exit_code == 2 and "is empty" in r.stderr
    r = _run("init", str(project / "new"), "--gpus", "H100")
    assert r.exit_code == 0 and f"next: `cd {project / 'new'}`, then `envsolve add torch`" in r.stdout


def test_a_removed_working_folder_or_a_project_file_given_as_folder_is_said(project: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "project.toml").write_text('[frameworks]\ntorch = "*"\n')
    r = _run("lock", "--project", str(project / "project.toml"))
    assert r.exit_code == 2 and f"--project: {project / 'project.toml'}: is a file, not a folder" in r.stderr

    def gone() -> str:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(os, "getcwd", gone)
    assert project_folder() is None
