"""`envsolve matrix` for CI: the generated GitHub Actions workflow passes the real linters
(actionlint, zizmor, the workflow JSON schema) and keeps its security promises; the Markdown
summary cannot break its tables; bake files follow buildx's format, with smoke targets for CPU
cells only; errors exit 2 naming what is wrong."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import cmarkgfm
import jsonschema
import pytest
import yaml
from click.testing import CliRunner

import envsolve
from envsolve.cli import main
from envsolve.domain import gpu_run_flags, registry_of
from envsolve.errors import MatrixError
from envsolve.matrix import formats
from envsolve.matrix.cells import CellResult, solve_cells
from envsolve.matrix.parse import Cell, parse_matrix
from envsolve.matrix.workflow import load_actions, runner_label, workflow
from envsolve.provider import Provider
from tests.matrix_hosts import hosts_data
from tests.test_matrix import ISSUE_EXAMPLE

GOLDEN = Path(__file__).parent / "goldens" / "matrix"

MATRICES = {
    # GHCR (GITHUB_TOKEN, packages: write), two platforms (QEMU), GPUs of both vendors
    "ghcr-gpus": '''
[matrix]
python = ["3.11", "3.12"]
torch = ["2.7.1"]
accelerator = ["cpu", "cu128", "rocm6.2"]
gpus = ["A100", "RTX 5090", "MI300X"]

[[include]]
python = "3.12"
torch = "2.7.1"
accelerator = "cu128"

[image]
repository = "ghcr.io/acme/ml"
platforms = ["linux/amd64", "linux/arm64"]
''',
    # no [image]: nothing to push to, no GPUs: no self-hosted job
    "plain-cpu": '''
[matrix]
python = ["3.12"]
torch = ["2.6.0", "2.7.1"]
''',
    # a private registry (secrets), NVIDIA GPUs only
    "registry-nvidia": '''
[matrix]
python = ["3.12"]
jax = ["0.6.2"]
accelerator = ["cpu", "cuda"]
gpus = ["H100"]

[image]
repository = "registry.example:5000/team/jax"
''',
    # a platform axis: each cell built natively, linux/arm64 ones on GitHub's Arm runners
    "arm-axis": '''
[matrix]
python = ["3.12"]
torch = ["2.7.1", "2.10.0"]
accelerator = ["cpu", "cu128"]
platform = ["linux/amd64", "linux/arm64"]
gpus = ["H100"]

[image]
repository = "ghcr.io/acme/arm"
''',
    # Jetson modules: the CUDA cell is solved for their JetPack and smoke-tested with its runtime
    "jetson": '''
[matrix]
python = ["3.10"]
torch = ["2.8.0"]
accelerator = ["cpu", "cuda"]
gpus = ["Jetson AGX Orin"]

[image]
repository = "ghcr.io/acme/jetson"
platforms = ["linux/arm64"]
''',
    # --pages: the compatibility explorer and the matrix report published to GitHub Pages
    "pages": '''
[matrix]
python = ["3.12"]
torch = ["2.7.1"]
accelerator = ["cpu", "cu128"]
gpus = ["H100"]

[image]
repository = "ghcr.io/acme/site"
''',
    # Docker Hub (no host), a matrix whose every cell is pruned
    "hub-nothing-valid": '''
[matrix]
python = ["3.12"]
torch = ["2.4.1"]
accelerator = ["cu128"]

[image]
repository = "acme/ml"
''',    # Windows and macOS cells beside Linux ones: no image, smoke tests on GitHub's runners (CPU,
    # MPS) or on self-hosted Windows GPU runners; Linux GPU cells on self-hosted Linux runners
    "hosts": '''
[matrix]
python = ["3.12"]
torch = ["2.7.1"]
accelerator = ["cpu", "cu128", "mps"]
platform = ["linux/amd64", "windows/amd64", "darwin/arm64"]
gpus = ["H100", "RTX 5090"]

[image]
repository = "ghcr.io/acme/hosts"
''',
}


def _tool(name: str) -> str:
    """A linter installed with the test extra (the scripts folder of this interpreter first)."""
    found = shutil.which(name, path=sysconfig.get_path("scripts")) or shutil.which(name)
    assert found, f"{name} is missing: pip install -e '.[test]'"
    return found


def _lint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def workflows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each matrix's workflow, written by the CLI into a repository-like folder."""
    out = {}
    for name, text in MATRICES.items():
        repo = tmp_path_factory.mktemp(name)
        (repo / "ci").mkdir()
        (repo / "ci" / "images.toml").write_text(text)
        r = subprocess.run([sys.executable, "-m", "envsolve", "matrix", "ci/images.toml",
                            "--workflow", ".github/workflows/images.yml", *(["--pages"] if name == "pages" else [])],
                           cwd=repo, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "wrote .github/workflows/images.yml" in r.stderr
        out[name] = repo / ".github" / "workflows" / "images.yml"
    return out


@pytest.mark.parametrize("name", list(MATRICES))
def test_actionlint_passes(workflows: dict[str, Path], name: str) -> None:
    wf = workflows[name]
    labels = ["gpu", *[runner_label(g) for g in ("A100", "RTX 5090", "MI300X", "H100", "Jetson AGX Orin")]]
    config = wf.parent.parent / "actionlint.yaml"  # how a repository declares its runner labels
    config.write_text(yaml.safe_dump({"self-hosted-runner": {"labels": labels}}))
    r = _lint(_tool("actionlint"), "-config-file", str(config), "-no-color", str(wf), cwd=wf.parent)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.parametrize("name", list(MATRICES))
def test_zizmor_finds_nothing_at_medium_or_above(workflows: dict[str, Path], name: str) -> None:
    wf = workflows[name]
    r = _lint(_tool("zizmor"), "--offline", "--no-progress", "--min-severity", "medium", "--format", "json",
              str(wf), cwd=wf.parent)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == []
    # the auditor persona (false positives welcome) flags only the self-hosted GPU runners and the
    # registry secrets used outside a deployment environment (GHCR's GITHUB_TOKEN is not one)
    r = _lint(_tool("zizmor"), "--offline", "--no-progress", "--persona", "auditor", "--format", "json",
              str(wf), cwd=wf.parent)
    found = {f["ident"] for f in json.loads(r.stdout)}
    assert found <= {"self-hosted-runner", "secrets-outside-env"}, r.stdout
    assert ("self-hosted-runner" in found) == ("gpus" in MATRICES[name])


@pytest.mark.parametrize("name", list(MATRICES))
def test_github_workflow_schema_passes(workflows: dict[str, Path], name: str) -> None:
    wf = workflows[name]
    r = _lint(_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(wf), cwd=wf.parent)
    assert r.returncode == 0, r.stdout + r.stderr


def _doc(path: Path) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True)  # YAML 1.1 reads the key `on` as true
    return doc


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for job in doc["jobs"].values() for s in job["steps"]]


@pytest.mark.parametrize("name", list(MATRICES))
def test_workflow_keeps_its_security_promises(workflows: dict[str, Path], name: str) -> None:
    text = workflows[name].read_text()
    doc = _doc(workflows[name])
    assert doc["permissions"] == {"contents": "read"}
    pinned = {a.name: a for a in load_actions().values()}
    for step in _steps(doc):
        if "uses" in step:  # every action by the full commit of the release in actions.toml
            action, _, sha = step["uses"].partition("@")
            assert sha == pinned[action].commit
            assert f"{step['uses']} # {pinned[action].tag}" in text
        if "run" in step:  # no expression in a script: values come through env
            assert "${{" not in step["run"]
        if step.get("uses", "").startswith("actions/checkout@"):
            assert step["with"]["persist-credentials"] is False
    widened = {"build": {"contents": "read", "packages": "write"}, "pages": {"pages": "write", "id-token": "write"}}
    for job_name, job in doc["jobs"].items():
        if job.get("permissions"):
            assert job["permissions"] == widened.get(job_name)
    assert 'python -m pip install "envsolve==${ENVSOLVE_VERSION}"' in text
    assert doc["env"]["ENVSOLVE_VERSION"] == envsolve.__version__
    assert doc["env"]["MATRIX_FILE"] == "ci/images.toml"


def test_pages_publishes_the_site_from_the_default_branch_only(workflows: dict[str, Path]) -> None:
    jobs = _doc(workflows["pages"])["jobs"]
    site, pages = jobs["site"], jobs["pages"]
    assert site["if"] == "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"
    runs = "\n".join(s.get("run", "") for s in site["steps"])
    assert 'envsolve site -o "envsolve-site"' in runs
    assert 'envsolve matrix "$MATRIX_FILE" --format html > "envsolve-site/matrix.html"' in runs
    assert site["steps"][-1]["with"] == {"path": "envsolve-site"}
    assert pages["needs"] == "site" and pages["environment"]["name"] == "github-pages"
    assert pages["steps"][0]["uses"].startswith("actions/deploy-pages@")
    assert "site" not in _doc(workflows["ghcr-gpus"])["jobs"]  # only when asked


def test_pages_needs_a_workflow(tmp_path: Path) -> None:
    (tmp_path / "images.toml").write_text(MATRICES["plain-cpu"])
    r = CliRunner().invoke(main, ["matrix", str(tmp_path / "images.toml"), "--pages"])
    assert r.exit_code == 2 and "--pages" in r.output and "--workflow" in r.output


def test_solve_job_checks_renders_summarises_and_uploads(workflows: dict[str, Path]) -> None:
    doc = _doc(workflows["ghcr-gpus"])
    solve = doc["jobs"]["solve"]
    runs = "\n".join(s.get("run", "") for s in solve["steps"])
    assert 'envsolve matrix "$MATRIX_FILE" --format markdown >> "$GITHUB_STEP_SUMMARY"' in runs
    assert 'envsolve matrix "$MATRIX_FILE" --check --render "$RENDER_DIR" --format github > matrix.json' in runs
    upload = solve["steps"][-1]
    assert upload["uses"].startswith("actions/upload-artifact@") and upload["with"]["path"] == "envsolve-matrix"
    build = doc["jobs"]["build"]
    assert build["strategy"]["matrix"] == "${{ fromJSON(needs.solve.outputs.matrix) }}"
    steps = {s["name"]: s for s in build["steps"]}
    smoke = steps["smoke test (CPU cells: the smoke stage runs smoke_test.py)"]
    assert smoke["if"] == "matrix.vendor == 'cpu'" and smoke["with"]["target"] == "smoke"
    assert smoke["with"]["push"] is False
    image = steps["build the image (pushed from the default branch)"]
    publish = "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"
    assert image["with"]["push"] == "${{ " + publish + " }}"
    assert image["with"]["cache-from"] == "type=gha,scope=${{ matrix.id }}"
    assert image["with"]["cache-to"] == "type=gha,mode=max,scope=${{ matrix.id }}"
    assert image["with"]["platforms"] == "linux/amd64,linux/arm64"
    login = steps["log in to the registry (default branch only)"]
    assert login["if"] == publish and login["with"]["registry"] == "ghcr.io"
    assert login["with"]["password"] == "${{ secrets.GITHUB_TOKEN }}"
    assert "set up QEMU (other platforms)" in steps


def test_gpu_smoke_jobs_only_for_the_named_gpus_on_their_runners(workflows: dict[str, Path]) -> None:
    both = _doc(workflows["ghcr-gpus"])["jobs"]
    assert set(both) == {"solve", "build", "smoke-nvidia", "smoke-amd"}
    nv = both["smoke-nvidia"]
    assert nv["runs-on"] == ["self-hosted", "linux", "gpu", "${{ matrix.gpu }}"]
    assert nv["steps"][-1]["run"] == 'docker run --rm --gpus all "$IMAGE" python smoke_test.py'
    assert nv["steps"][-1]["env"] == {"IMAGE": "${{ matrix.image }}"}
    assert "head.repo.full_name == github.repository" in nv["if"]  # no fork reaches a self-hosted runner
    assert "--device=/dev/kfd --device=/dev/dri" in both["smoke-amd"]["steps"][-1]["run"]
    doc = _doc(workflows["ghcr-gpus"])
    assert json.loads(doc["env"]["NVIDIA_RUNNERS"]) == ["a100", "rtx-5090"]
    assert json.loads(doc["env"]["AMD_RUNNERS"]) == ["mi300x"]
    assert set(_doc(workflows["registry-nvidia"])["jobs"]) == {"solve", "build", "smoke-nvidia"}
    assert set(_doc(workflows["plain-cpu"])["jobs"]) == {"solve", "build"}


def test_gpu_matrix_of_the_solve_step_crosses_cells_with_gpus(workflows: dict[str, Path], tmp_path: Path) -> None:
    """The jq program of the solve step, run on the real `--format github` output."""
    jq = shutil.which("jq")
    script = next(s["run"] for s in _doc(workflows["ghcr-gpus"])["jobs"]["solve"]["steps"] if s.get("id") == "cells")
    repo = workflows["ghcr-gpus"].parent.parent.parent
    if jq is None:  # the runner has jq; this machine may not: check the program's shape instead
        assert "select(.vendor == \"nvidia\")" in script
        return
    out = tmp_path / "out"
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "MATRIX_FILE": "ci/images.toml",
           "RENDER_DIR": str(tmp_path / "cells"), "NVIDIA_RUNNERS": '["a100", "rtx-5090"]',
           "AMD_RUNNERS": '["mi300x"]', "GITHUB_OUTPUT": str(out)}
    r = subprocess.run(["bash", "-e", "-c", script.replace("envsolve matrix", f"{sys.executable} -m envsolve matrix")],
                       cwd=repo, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert outputs["cells"] == "4"  # the ROCm cells: no rocm image or wheel for linux/arm64
    nvidia = json.loads(outputs["nvidia-matrix"])["include"]
    assert sorted((j["id"], j["gpu"]) for j in nvidia) == [
        ("py3_11-torch2_7_1-cu128", "a100"), ("py3_11-torch2_7_1-cu128", "rtx-5090"),
        ("py3_12-torch2_7_1-cu128", "a100"), ("py3_12-torch2_7_1-cu128", "rtx-5090")]
    assert outputs["nvidia-jobs"] == "4" and outputs["amd-jobs"] == "0"


def test_pushing_follows_the_image_repository(workflows: dict[str, Path]) -> None:
    def build_steps(name: str) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in _doc(workflows[name])["jobs"]["build"]["steps"]}

    plain = build_steps("plain-cpu")  # envsolve-matrix:<id> has no namespace: built, never pushed
    assert not any("log in" in n for n in plain) and plain["build the image"]["with"]["push"] is False
    assert "packages" not in str(_doc(workflows["plain-cpu"])["jobs"]["build"].get("permissions"))
    private = build_steps("registry-nvidia")
    login = private["log in to the registry (default branch only)"]["with"]
    assert login == {"registry": "registry.example:5000", "username": "${{ secrets.REGISTRY_USERNAME }}",
                     "password": "${{ secrets.REGISTRY_PASSWORD }}"}
    assert "permissions" not in _doc(workflows["registry-nvidia"])["jobs"]["build"]
    hub = build_steps("hub-nothing-valid")["log in to the registry (default branch only)"]["with"]
    assert "registry" not in hub
    assert registry_of("acme/ml") == "" and registry_of("localhost/ml") == "localhost"


def test_workflow_is_the_same_bytes_every_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("images.toml").write_text(MATRICES["ghcr-gpus"])
    for out in ("a.yml", "b.yml"):
        assert CliRunner().invoke(main, ["matrix", "images.toml", "--workflow", out]).exit_code == 0
    assert Path("a.yml").read_text().replace("a.yml", "b.yml") == Path("b.yml").read_text()


def test_workflow_errors_exit_2_naming_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("images.toml").write_text(MATRICES["plain-cpu"])
    Path("file").write_text("x")
    r = CliRunner().invoke(main, ["matrix", "images.toml", "--workflow", "file/images.yml"])
    assert r.exit_code == 2 and "ERROR: file/images.yml: cannot be written" in r.output
    assert "TIP: choose another path with --workflow" in r.output and "Traceback" not in r.output
    Path("wf").mkdir()
    r = CliRunner().invoke(main, ["matrix", "images.toml", "--workflow", "wf"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    outside = tmp_path.parent / f"{tmp_path.name}-outside.toml"
    outside.write_text(MATRICES["plain-cpu"])
    r = CliRunner().invoke(main, ["matrix", str(outside), "--workflow", "images.yml"])
    assert r.exit_code == 2 and "is outside the current directory" in r.output
    assert not Path("images.yml").exists()


def test_bad_actions_file_names_row_and_key() -> None:
    text = '[[action]]\nname = "actions/checkout"\ntag = "v7"\ncommit = "main"\nsource = "x"\nurl = 1\n'
    with pytest.raises(MatrixError) as e:
        load_actions(text, "actions.toml")
    msg = str(e.value)
    assert "actions.toml: action[0].url: unknown key" in msg
    assert "action[0].commit: 'main' is not a full 40-hex commit SHA" in msg
    assert "no row for docker/build-push-action" in msg
    assert all(a.source.startswith("https://github.com/") for a in load_actions().values())


def test_check_fails_the_workflow_run_when_an_include_became_impossible(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What the solve job runs: exit 1 with the reason, after the summary and files are written."""
    monkeypatch.chdir(tmp_path)
    bad = MATRICES["ghcr-gpus"].replace('torch = "2.7.1"\naccelerator = "cu128"', 'torch = "2.4.1"\naccelerator = "cu128"')
    Path("images.toml").write_text(bad)
    r = CliRunner().invoke(main, ["matrix", "images.toml", "--check", "--render", "out", "--format", "github",
                                  "--workflow", "images.yml"])
    assert r.exit_code == 1
    assert "ERROR: 1 [[include]] cell(s) invalid: py3_12-torch2_4_1-cu128: torch 2.4.1 has no CUDA 12.8 build" in r.output
    assert Path("images.yml").is_file() and Path("out").is_dir()
    r = CliRunner().invoke(main, ["matrix", "images.toml", "--format", "markdown"])
    assert r.exit_code == 0 and "**1 [[include]] cell(s) invalid**" in r.output
    r = CliRunner().invoke(main, ["matrix", "images.toml", "--format", "markdown", "--check"])
    assert r.exit_code == 1


# ---------------------------------------------------------------- markdown


def _cells_of(html_text: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", html_text, re.S)
    return [re.findall(r"<t[hd]>(.*?)</t[hd]>", row, re.S) for row in rows]


def _gfm(text: str) -> str:
    return cmarkgfm.github_flavored_markdown_to_html(text, options=cmarkgfm.Options.CMARK_OPT_UNSAFE)


@pytest.mark.parametrize("value", ["a | b", "a\\|b", "ends with \\", "two\nlines\r\nthree", "<script>x</script>",
                                   "| --- |", "`|`", "&amp;"])
def test_markdown_escape_keeps_a_value_in_its_cell(value: str) -> None:
    table = f"| a | b |\n|---|---|\n| {formats.md_escape(value)} | after |\n"
    cells = _cells_of(_gfm(table))
    assert len(cells) == 2 and len(cells[1]) == 2 and cells[1][1] == "after"
    assert "<script>" not in cells[1][0]


def test_markdown_summary_renders_as_github_tables(real_graph: Provider) -> None:
    text = '[matrix]\npython = ["3.11", "3.12"]\ntorch = ["2.7.1", "2.9.1"]\naccelerator = ["cpu", "cu118", "cu128"]\n' \
           'gpus = ["RTX 5090"]\n'
    ms = parse_matrix(text, "ci/im|ages.toml", real_graph)
    results = solve_cells(real_graph, ms, ms.cells())
    hostile = CellResult(cell=Cell((("python", "3.12"), ("torch", "2.7.1")), included=True), resolution=None,
                         reason="line one | with a pipe\nline two <b>bold</b>")
    md = formats.markdown(ms, [*results, hostile])
    valid = sum(r.valid for r in results)
    assert f"**{valid} valid**, {len(results) + 1 - valid} pruned of {len(results) + 1} cells" in md
    page = _gfm(md)
    tables = re.findall(r"<table>.*?</table>", page, re.S)
    assert len(tables) == 2
    valid_rows, pruned_rows = (_cells_of(t) for t in tables)
    assert valid_rows[0] == ["cell", "packages", "CUDA / ROCm", "base image"]
    assert all(len(r) == 4 for r in valid_rows) and len(valid_rows) == valid + 1
    cu128 = next(r for r in valid_rows if r[0] == "py3_12-torch2_7_1-cu128")
    assert cu128[1] == "torch 2.7.1 (cu128)" and cu128[2].startswith("CUDA 12.8 (native, driver &gt;= ")
    assert cu128[3].startswith("nvidia/cuda:12.8")
    assert all(len(r) == 2 for r in pruned_rows)
    reasons = dict((r[0], r[1]) for r in pruned_rows[1:])
    assert reasons["py3_12-torch2_7_1 (include)"] == "line one | with a pipe<br>line two &lt;b&gt;bold&lt;/b&gt;"
    assert reasons["py3_11-torch2_9_1-cu118"].startswith("torch 2.9.1 has no CUDA 11.8 build")
    assert "im|ages.toml" in page


def test_markdown_summary_stays_under_githubs_limit(real_graph: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(formats, "MARKDOWN_ROWS", 3)
    text = '[matrix]\npython = ["3.10", "3.11", "3.12"]\ntorch = ["2.4.1", "2.7.1", "2.9.1"]\n'
    ms = parse_matrix(text, "images.toml", real_graph)
    md = formats.markdown(ms, solve_cells(real_graph, ms, ms.cells()))
    assert "_6 more valid cells: `envsolve matrix --format json` lists them all._" in md


# ---------------------------------------------------------------- bake

# The bake file format, as buildx reads it (bake/bake.go, type Config, Group and Target:
# https://github.com/docker/buildx/blob/master/bake/bake.go; https://docs.docker.com/build/bake/reference/).
_LIST = {"type": "array", "items": {"type": "string"}}
_STR = {"type": "string"}
BAKE_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "group": {"type": "object", "propertyNames": {"pattern": "^[a-zA-Z0-9_-]+$"}, "additionalProperties": {
            "type": "object", "additionalProperties": False, "required": ["targets"],
            "properties": {"description": _STR, "targets": _LIST}}},
        "target": {"type": "object", "propertyNames": {"pattern": "^[a-zA-Z0-9_-]+$"}, "additionalProperties": {
            "type": "object", "additionalProperties": False,
            "properties": {"description": _STR, "inherits": _LIST, "annotations": _LIST, "attest": _LIST,
                           "context": _STR, "contexts": {"type": "object"}, "dockerfile": _STR,
                           "dockerfile-inline": _STR, "args": {"type": "object"}, "labels": {"type": "object"},
                           "tags": _LIST, "cache-from": _LIST, "cache-to": _LIST, "target": _STR, "secret": _LIST,
                           "ssh": _LIST, "platforms": _LIST, "output": _LIST, "pull": {"type": "boolean"},
                           "no-cache": {"type": "boolean"}, "network": _STR, "no-cache-filter": _LIST,
                           "shm-size": _STR, "ulimits": _LIST, "call": _STR, "entitlements": _LIST,
                           "extra-hosts": {"type": "object"}}}},
    },
}


def test_bake_file_with_a_smoke_group_of_the_cpu_cells(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("images.toml").write_text(MATRICES["ghcr-gpus"])
    r = CliRunner().invoke(main, ["matrix", "images.toml", "--format", "bake", "--render", "out"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    jsonschema.validate(data, BAKE_SCHEMA)
    default, smoke = data["group"]["default"]["targets"], data["group"]["smoke"]["targets"]
    assert len(default) == 4 and smoke == ["smoke-py3_11-torch2_7_1-cpu", "smoke-py3_12-torch2_7_1-cpu"]
    assert set(data["target"]) == set(default) | set(smoke)
    for name in default:  # every image target builds what was rendered
        t = data["target"][name]
        assert (tmp_path / t["context"] / t["dockerfile"]).is_file()
        assert t["tags"] == [f"ghcr.io/acme/ml:{name}"] and t["platforms"] == ["linux/amd64", "linux/arm64"]
        assert t["target"] == "runtime"  # the image stage, never the smoke stage after it
    for name in smoke:  # the smoke stage of the same context; no image, no tag
        t = data["target"][name]
        cell = name.removeprefix("smoke-")
        assert t["context"] == f"out/{cell}" and t["target"] == "smoke" and t["output"] == ["type=cacheonly"]
        assert "tags" not in t
    # a matrix without CPU cells has no smoke group
    Path("gpu.toml").write_text('[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\naccelerator = ["cu128"]\n')
    data = json.loads(CliRunner().invoke(main, ["matrix", "gpu.toml", "--format", "bake"]).stdout)
    jsonschema.validate(data, BAKE_SCHEMA)
    assert set(data["group"]) == {"default"}


def test_a_platform_axis_builds_each_cell_natively(real_graph: Provider, workflows: dict[str, Path],
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ms = parse_matrix(MATRICES["arm-axis"], "images.toml", real_graph)
    results = solve_cells(real_graph, ms, ms.cells())
    valid = {r.cell.id: r.resolution.base_image for r in results if r.resolution is not None}
    pruned = {r.cell.id: r.reason for r in results if r.resolution is None}
    # torch 2.10's cu128 build is the default-index wheel, which is a CPU build on aarch64
    assert list(pruned) == ["py3_12-torch2_10_0-cu128-linux_arm64"]
    # said for the pinned CUDA, with the first release after it that has one (issue 42's contradiction:
    # "the newest release with one is 2.15.0" beside valid cells of 2.7.1)
    assert ("torch 2.10.0 has no CUDA 12.8 build for linux/arm64: the first torch release after it with one is "
            "2.11.0 (cu128)") in pruned["py3_12-torch2_10_0-cu128-linux_arm64"]
    assert valid["py3_12-torch2_7_1-cu128-linux_arm64"].startswith("nvidia/cuda:12.8")
    rows = formats.github(ms, results, "d", None)["include"]
    assert {(r["platform"], r["runner"]) for r in rows} == {("linux/amd64", "ubuntu-latest"),
                                                           ("linux/arm64", "ubuntu-24.04-arm")}
    monkeypatch.chdir(tmp_path)
    Path("images.toml").write_text(MATRICES["arm-axis"])
    data = json.loads(CliRunner().invoke(main, ["matrix", "images.toml", "--format", "bake"]).stdout)
    jsonschema.validate(data, BAKE_SCHEMA)
    assert data["target"]["py3_12-torch2_7_1-cu128-linux_arm64"]["platforms"] == ["linux/arm64"]
    assert data["target"]["smoke-py3_12-torch2_7_1-cpu-linux_arm64"]["platforms"] == ["linux/arm64"]
    build = yaml.safe_load(workflows["arm-axis"].read_text())["jobs"]["build"]
    assert build["runs-on"] == "${{ matrix.runner }}"
    steps = {s["name"]: s for s in build["steps"]}
    assert "set up QEMU (other platforms)" not in steps  # no emulation: each runner builds its own
    assert steps["build the image (pushed from the default branch)"]["with"]["platforms"] == "${{ matrix.platform }}"


def test_github_rows_say_whose_gpu_the_smoke_test_needs(real_graph: Provider) -> None:
    amd64 = MATRICES["ghcr-gpus"].replace('platforms = ["linux/amd64", "linux/arm64"]\n', "")
    ms = parse_matrix(amd64, "images.toml", real_graph)
    rows = formats.github(ms, solve_cells(real_graph, ms, ms.cells()), "d", None)["include"]
    assert {r["accelerator"]: r["vendor"] for r in rows} == {"cpu": "cpu", "cu128": "nvidia", "rocm6.2": "amd"}


def test_an_image_of_two_platforms_must_solve_the_same_on_both(real_graph: Provider) -> None:
    ms = parse_matrix(MATRICES["ghcr-gpus"], "images.toml", real_graph)
    pruned = {r.cell.get("accelerator"): r.reason for r in solve_cells(real_graph, ms, ms.cells()) if not r.valid}
    assert list(pruned) == ["rocm6.2"]
    assert pruned["rocm6.2"] == ("linux/arm64: torch 2.7.1 has no ROCm 6.2 build for linux/arm64: torch publishes none for "
                                 "linux/arm64")


def _smoke_runs(doc: dict[str, Any], vendor: str) -> dict[str, str]:
    """The smoke job's `docker run` lines by their `if:` ("" for one that always runs)."""
    return {s.get("if", ""): s["run"] for s in doc["jobs"][f"smoke-{vendor}"]["steps"] if "run" in s}


def test_gpu_smoke_steps_run_each_cell_as_its_rendered_artifacts_say(workflows: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    """One answer for how a GPU container runs (domain.gpu_run_flags): a Jetson cell (its row
    names its JetPack) with the nvidia runtime, any other CUDA cell with --gpus all, as the
    rendered Dockerfile of each cell says."""
    smoke = 'docker run --rm {} "$IMAGE" python smoke_test.py'
    runs = _smoke_runs(_doc(workflows["jetson"]), "nvidia")
    assert runs == {"${{ matrix.jetpack }}": smoke.format(" ".join(gpu_run_flags("cuda", jetson=True))),
                    "${{ !matrix.jetpack }}": smoke.format(" ".join(gpu_run_flags("cuda")))}
    assert runs["${{ matrix.jetpack }}"] == 'docker run --rm --runtime nvidia "$IMAGE" python smoke_test.py'
    assert _smoke_runs(_doc(workflows["ghcr-gpus"]), "nvidia") == runs
    assert _smoke_runs(_doc(workflows["ghcr-gpus"]), "amd") == {"": smoke.format(" ".join(gpu_run_flags("rocm")))}
    repo = workflows["jetson"].parent.parent.parent
    r = subprocess.run([sys.executable, "-m", "envsolve", "matrix", "ci/images.toml", "--format", "github",
                        "--render", str(tmp_path)], cwd=repo, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {row["accelerator"]: row for row in json.loads(r.stdout)["include"]}
    assert rows["cuda"]["vendor"] == "nvidia" and rows["cuda"]["jetpack"] == "6.2.1"
    assert "jetpack" not in rows["cpu"]
    dockerfile = (tmp_path / rows["cuda"]["id"] / "Dockerfile").read_text()
    run = next(line for line in dockerfile.splitlines() if "docker run" in line)
    assert f" {' '.join(gpu_run_flags('cuda', jetson=True))} " in run


# ---------------------------------------------------------------------------- Windows and macOS cells


def test_cells_off_linux_run_natively_on_the_runner_of_their_platform(workflows: dict[str, Path]) -> None:
    doc = _doc(workflows["hosts"])
    jobs = doc["jobs"]
    assert set(jobs) == {"solve", "build", "smoke-nvidia", "smoke-hosted", "smoke-windows-nvidia"}
    # the build job gets the Linux cells only: the others have no image
    build = jobs["build"]
    assert build["if"] == "needs.solve.outputs.images != '0'" and build["runs-on"] == "${{ matrix.runner }}"
    assert build["strategy"]["matrix"] == "${{ fromJSON(needs.solve.outputs.matrix) }}"
    # Linux GPU cells as before: their image, on self-hosted Linux runners labelled with the GPU
    linux = jobs["smoke-nvidia"]
    assert linux["runs-on"] == ["self-hosted", "linux", "gpu", "${{ matrix.gpu }}"]
    assert linux["steps"][-1]["run"] == 'docker run --rm --gpus all "$IMAGE" python smoke_test.py'
    # CPU and MPS cells of Windows and macOS: GitHub's runner of the platform, no container
    hosted = jobs["smoke-hosted"]
    assert hosted["runs-on"] == "${{ matrix.runner }}" and hosted["needs"] == "solve"
    assert hosted["strategy"]["matrix"] == "${{ fromJSON(needs.solve.outputs.hosted-matrix) }}"
    steps = hosted["steps"]
    assert [s.get("uses", "").partition("@")[0] for s in steps[:2]] == ["actions/download-artifact",
                                                                          "actions/setup-python"]
    assert steps[1]["with"] == {"python-version": "${{ matrix.python_version }}"}
    runs = {s["name"]: s for s in steps if "run" in s}
    install = runs["install the cell's requirements (its index's file first)"]
    assert install["shell"] == "bash" and install["env"] == {"CELL": "${{ matrix.id }}"}
    assert install["run"].splitlines()[0] == 'cd "$RENDER_DIR/$CELL"'
    assert install["run"].splitlines()[-1] == "python -m pip install -r requirements.txt"
    assert runs["smoke test"]["if"] == "matrix.vendor != 'apple'"
    assert runs["smoke test"]["run"].splitlines()[-1] == "python smoke_test.py"
    mps = runs["smoke test (MPS: a hosted macOS VM may show no GPU, a skip then)"]
    assert mps["if"] == "matrix.vendor == 'apple'" and mps["run"].splitlines()[-1] == "python smoke_test.py --allow-cpu"
    # Windows CUDA cells: GitHub's Windows runners have no NVIDIA GPU; self-hosted Windows ones
    # labelled as the Linux ones are, never reached from a fork, and the GPU must be there
    windows = jobs["smoke-windows-nvidia"]
    assert windows["runs-on"] == ["self-hosted", "windows", "gpu", "${{ matrix.gpu }}"]
    assert "head.repo.full_name == github.repository" in windows["if"]
    assert windows["steps"][-1]["run"].splitlines()[-1] == "python smoke_test.py"
    for job in (hosted, windows):
        assert not any("docker" in str(s) for s in job["steps"])
        assert "permissions" not in job
    text = workflows["hosts"].read_text()
    assert "# Windows and macOS cells get no image: their smoke tests run on GitHub's runners (windows-latest, " \
           "macos-15)." in text
    assert "# Windows GPU smoke tests run on self-hosted runners labelled self-hosted, windows, gpu and one of: " \
           "h100, rtx-5090." in text


def test_solve_step_sends_each_cell_to_its_runner(tmp_path: Path) -> None:
    """The solve step's jq programs, run on the `--format github` output of a matrix whose
    Windows and macOS cells solve (made-up rows: tests/matrix_hosts.py)."""
    jq = shutil.which("jq")
    if jq is None:
        pytest.skip("jq is not installed here (GitHub's runners have it)")
    data = hosts_data(tmp_path)
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "images.toml").write_text(MATRICES["hosts"].replace('"RTX 5090"]', '"RTX 5090", "Arc B580"]')
                                                 .replace('"mps"]', '"mps", "xpu"]'))
    r = subprocess.run([sys.executable, "-m", "envsolve", "--matrices", str(data), "matrix", "ci/images.toml",
                        "--workflow", "images.yml"], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    doc = _doc(tmp_path / "images.yml")
    assert {"smoke-intel", "smoke-windows-intel", "smoke-windows-nvidia", "smoke-hosted"} <= set(doc["jobs"])
    assert doc["jobs"]["smoke-intel"]["runs-on"] == ["self-hosted", "linux", "gpu", "${{ matrix.gpu }}"]
    assert doc["jobs"]["smoke-intel"]["steps"][-1]["run"] == (
        f'docker run --rm {" ".join(gpu_run_flags("xpu"))} "$IMAGE" python smoke_test.py')
    assert doc["jobs"]["smoke-windows-intel"]["runs-on"] == ["self-hosted", "windows", "gpu", "${{ matrix.gpu }}"]
    (tmp_path / "actionlint.yaml").write_text(yaml.safe_dump({"self-hosted-runner": {"labels": ["gpu", "h100",
                                                                                                "rtx-5090", "arc-b580"]}}))
    lint = _lint(_tool("actionlint"), "-config-file", "actionlint.yaml", "-no-color", "images.yml", cwd=tmp_path)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    script = next(s["run"] for s in doc["jobs"]["solve"]["steps"] if s.get("id") == "cells")
    # rendering the cells off Linux is the renderer's (no Dockerfile there): this checks the lists
    script = script.replace(' --render "$RENDER_DIR"', "").replace("envsolve matrix", f"{sys.executable} -m envsolve matrix")
    out = tmp_path / "out"
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "MATRIX_FILE": "ci/images.toml",
           "ENVSOLVE_MATRICES": str(data), "GITHUB_OUTPUT": str(out), **doc["env"],
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}  # this tree's envsolve
    r = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())

    def ids(name: str) -> list[tuple[str, ...]]:
        return sorted((j["id"].removeprefix("py3_12-torch2_7_1-"), j.get("gpu") or j["runner"])
                      for j in json.loads(outputs[f"{name}-matrix" if name else "matrix"])["include"])

    linux = [c for c, _ in ids("")]
    assert {"cpu-linux_amd64", "cu128-linux_amd64"} <= set(linux) and all(c.endswith("linux_amd64") for c in linux)
    assert outputs["images"] == str(len(linux)) and int(outputs["cells"]) == len(linux) + 5
    assert ids("hosted") == [("cpu-darwin_arm64", "macos-15"), ("cpu-windows_amd64", "windows-latest"),
                             ("mps-darwin_arm64", "macos-15")]
    assert ids("windows-nvidia") == [("cu128-windows_amd64", "h100"), ("cu128-windows_amd64", "rtx-5090")]
    assert ids("windows-intel") == [("xpu-windows_amd64", "arc-b580")]
    assert ids("nvidia") == [("cu128-linux_amd64", "h100"), ("cu128-linux_amd64", "rtx-5090")]
    assert outputs["hosted-jobs"] == "3" and outputs["windows-nvidia-jobs"] == "2" and outputs["nvidia-jobs"] == "2"
    hosted = {j["id"].removeprefix("py3_12-torch2_7_1-"): j for j in json.loads(outputs["hosted-matrix"])["include"]}
    assert hosted["mps-darwin_arm64"]["vendor"] == "apple" and hosted["mps-darwin_arm64"]["python_version"] == "3.12"
    assert "image" not in hosted["cpu-windows_amd64"]


_GOLDEN_MATRICES = {**{n: t for n, t in MATRICES.items() if n != "hosts"}, "issue": ISSUE_EXAMPLE}


@pytest.mark.parametrize("name", list(_GOLDEN_MATRICES))
def test_linux_only_workflows_are_the_same_bytes_as_before(real_graph: Provider, name: str,
                                                          update_goldens: bool) -> None:
    """Windows and macOS cells changed nothing for a matrix of Linux cells: its workflow is the
    bytes written before they existed (tests/goldens/matrix)."""
    ms = parse_matrix(_GOLDEN_MATRICES[name], "ci/images.toml", real_graph)
    text = workflow(ms, matrix_file="ci/images.toml", version="0.0.0", command="x", pages=name == "pages")
    golden = GOLDEN / f"{name}.yml"
    if update_goldens:
        golden.write_text(text)
    assert text == golden.read_text()


@pytest.mark.parametrize(("name", "fmt"), [("arm-axis", "github"), ("arm-axis", "bake"), ("ghcr-gpus", "github"),
                                           ("ghcr-gpus", "bake")])
def test_linux_only_cells_print_the_same_bytes_as_before(real_graph: Provider, name: str, fmt: str,
                                                         update_goldens: bool) -> None:
    ms = parse_matrix(MATRICES[name], "ci/images.toml", real_graph)
    text = formats.printed(fmt, ms, solve_cells(real_graph, ms, ms.cells()), "envsolve-matrix")
    golden = GOLDEN / f"{name}.{fmt}.json"
    if update_goldens:
        golden.write_text(text)
    assert text == golden.read_text()
