"""`envsolve matrix`: hand-checked cells from real releases, the GitHub and bake outputs, shards,
--check, --render and --check-images."""

import json
import re
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.errors import SpecError
from envsolve.matrix import formats
from envsolve.matrix.cells import CellResult, solve_cells
from envsolve.matrix.parse import Cell, parse_matrix
from envsolve.provider import Provider

ISSUE_EXAMPLE = '''
[matrix]
python = ["3.10", "3.11", "3.12"]
torch = ["2.4.1", "2.7.1", "2.9.1"]
accelerator = ["cpu", "cu118", "cu126", "cu128", "rocm6.2"]
os = ["ubuntu22.04"]
gpus = ["A100", "RTX 5090"]

[[include]]
python = "3.12"
torch = "2.7.1"
accelerator = "cu128"

[[exclude]]
accelerator = "rocm6.2"
python = "3.12"
'''


@pytest.fixture
def example(tmp_path: Path) -> Path:
    p = tmp_path / "images.toml"
    p.write_text(ISSUE_EXAMPLE)
    return p


def results(graph: Provider, text: str = ISSUE_EXAMPLE) -> dict[str, CellResult]:
    ms = parse_matrix(text, "images.toml", graph)
    return {r.cell.id: r for r in solve_cells(graph, ms, ms.cells())}


def test_product_plus_includes_minus_excludes(real_graph: Provider) -> None:
    res = results(real_graph)
    assert len(res) == 3 * 3 * 5 - 3  # rocm6.2 x python 3.12 excluded
    assert "py3_12-torch2_7_1-rocm6_2-ubuntu22_04" not in res
    assert res["py3_12-torch2_7_1-cu128-ubuntu22_04"].cell.included


def test_hand_checked_cells_from_real_releases(real_graph: Provider) -> None:
    res = results(real_graph)
    # torch 2.7.1 cu128 compiles sm_80 and sm_120: A100 and RTX 5090 both run it
    ok = res["py3_12-torch2_7_1-cu128-ubuntu22_04"].resolution
    assert ok is not None and ok.cuda == "12.8" and ok.base_image == "nvidia/cuda:12.8.1-base-ubuntu22.04"
    assert [(p.name, p.version, p.variant) for p in ok.packages] == [("torch", "2.7.1", "cu128")]
    # the cu126 wheels carry no sm_120 SASS and no PTX, and CUDA 12.6 knows no sm_120
    assert res["py3_11-torch2_7_1-cu126-ubuntu22_04"].reason == (
        "torch 2.7.1 (cu126) has no kernels for RTX 5090 (sm_120): sm_120 needs CUDA >= 12.8")
    # torch 2.4.1 stopped at cu124; torch 2.9.1 dropped cu118
    assert res["py3_10-torch2_4_1-cu128-ubuntu22_04"].reason == "torch 2.4.1 has no CUDA 12.8 build (it has cu118, cu121, cu124)"
    assert res["py3_10-torch2_9_1-cu118-ubuntu22_04"].reason == "torch 2.9.1 has no CUDA 11.8 build (it has cu126, cu128, cu129, cu130)"
    # ROCm 6.2 builds exist for torch 2.5-2.7 only
    assert res["py3_11-torch2_7_1-rocm6_2-ubuntu22_04"].valid
    assert res["py3_11-torch2_9_1-rocm6_2-ubuntu22_04"].reason == "torch 2.9.1 has no ROCm 6.2 build (it has rocm6.3, rocm6.4)"
    # CPU cells on Ubuntu run on the distribution image, Python from the pinned uv
    cpu = res["py3_10-torch2_4_1-cpu-ubuntu22_04"].resolution
    assert cpu is not None and cpu.base_image == "ubuntu:22.04" and cpu.python == "3.10"


def test_github_output_in_a_real_workflow_parses_back(example: Path) -> None:
    r = CliRunner().invoke(main, ["matrix", str(example), "--format", "github"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    workflow = f"""
name: images
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    strategy:
      fail-fast: false
      matrix: {r.stdout.strip()}
    steps:
      - uses: actions/checkout@v4
      - run: docker build -t ${{{{ matrix.image }}}} -f ${{{{ matrix.dockerfile }}}} .
        name: build ${{{{ matrix.id }}}} (torch ${{{{ matrix.torch }}}}, ${{{{ matrix.accelerator }}}})
"""
    doc = yaml.safe_load(workflow)
    include = doc["jobs"]["build"]["strategy"]["matrix"]["include"]
    assert include == data["include"] and len(include) == 17
    used = set(re.findall(r"matrix\.(\w+)", workflow))
    for job in include:
        assert used <= set(job)
        assert job["dockerfile"] == f"envsolve-matrix/{job['id']}/Dockerfile"
        assert job["image"] == f"envsolve-matrix:{job['id']}"
        assert {"python", "torch", "accelerator", "os"} <= set(job)
    assert len({j["id"] for j in include}) == len(include)


def test_shards_together_equal_the_whole(real_graph: Provider) -> None:
    ms = parse_matrix(ISSUE_EXAMPLE, "images.toml", real_graph)
    rs = solve_cells(real_graph, ms, ms.cells())
    whole = formats.github(ms, rs, "d", None)["include"]
    shards = formats.github(ms, rs, "d", 5)["shards"]
    assert [len(s["include"]) for s in shards] == [5, 5, 5, 2]
    assert [j for s in shards for j in s["include"]] == whole


def test_github_warns_past_256_jobs_and_prints_one_shard(tmp_path: Path) -> None:
    big = tmp_path / "big.toml"
    big.write_text('[matrix]\npython = ["3.10", "3.11", "3.12", "3.13"]\ntorch = ["2.5.1", "2.6.0", "2.7.0", "2.7.1", '
                   '"2.8.0", "2.9.0", "2.9.1", "2.10.0"]\naccelerator = ["cpu", "cu126", "cu128"]\n'
                   'os = ["ubuntu20.04", "ubuntu22.04", "ubuntu24.04", "bookworm", "trixie"]\n')
    r = CliRunner().invoke(main, ["matrix", str(big), "--format", "github"])
    assert r.exit_code == 0
    n = len(json.loads(r.stdout)["include"])
    assert n > 256 and f"WARNING: {n} jobs exceed GitHub's limit of 256 per matrix" in r.stderr
    r2 = CliRunner().invoke(main, ["matrix", str(big), "--format", "github", "--max-jobs", "256", "--shard", "2"])
    assert r2.exit_code == 0 and len(json.loads(r2.stdout)["include"]) == n - 256 and "WARNING" not in r2.stderr


def test_bake_file_has_the_structure_buildx_documents(example: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # --render out is relative to the working directory
    r = CliRunner().invoke(main, ["matrix", str(example), "--format", "bake", "--render", "out"])
    assert (tmp_path / "out" / "py3_12-torch2_7_1-cu128-ubuntu22_04" / "Dockerfile").is_file()
    data = json.loads(r.stdout)
    assert set(data) == {"group", "target"}
    default = data["group"]["default"]["targets"]
    assert default == [t for t in data["target"] if not t.startswith("smoke-")] and len(default) == 17
    for name in default:
        t = data["target"][name]
        assert re.fullmatch(r"[a-zA-Z0-9_-]+", name)  # buildx target names
        assert t == {"context": f"out/{name}", "dockerfile": "Dockerfile",
                     "tags": [f"envsolve-matrix:{name}"], "platforms": ["linux/amd64"], "target": "runtime"}
    # CPU cells run their smoke test at build time: `docker buildx bake smoke`
    assert data["group"]["smoke"]["targets"] == [f"smoke-{n}" for n in default if "-cpu-" in n]


def test_render_writes_each_valid_cell_and_check_flags_invalid_includes(example: Path, tmp_path: Path) -> None:
    out = tmp_path / "cells"
    r = CliRunner().invoke(main, ["matrix", str(example), "--render", str(out), "--check"])
    assert r.exit_code == 0, r.output
    cells = sorted(p.name for p in out.iterdir())
    assert len(cells) == 17 and "py3_12-torch2_7_1-cu128-ubuntu22_04" in cells
    files = sorted(p.name for p in (out / "py3_12-torch2_7_1-cu128-ubuntu22_04").iterdir())
    assert files == ["Dockerfile", "environment.yml", "requirements-pytorch.txt", "requirements.txt", "smoke_test.py"]
    cell = out / "py3_12-torch2_7_1-cu128-ubuntu22_04"
    assert "\n--index-url https://index.invalid/whl/cu128\ntorch==2.7.1+cu128\n" in (
        cell / "requirements-pytorch.txt").read_text()
    assert "torch==2.7.1+cu128" in (cell / "requirements.txt").read_text()  # held at its version
    assert "rendered 17 cells under" in r.output
    assert "matrix: rendering cell" not in r.stderr  # stderr is no terminal: no progress
    told = CliRunner().invoke(main, ["matrix", str(example), "--render", str(out), "-v"])
    assert "matrix: rendering cell 1 of 17 (" in told.stderr and "matrix: rendering cell 17 of 17 (" in told.stderr
    assert f"output folder: {out}\n" in told.stderr
    bad = example.read_text().replace('torch = "2.7.1"\naccelerator = "cu128"', 'torch = "2.4.1"\naccelerator = "cu128"')
    example.write_text(bad)
    r = CliRunner().invoke(main, ["matrix", str(example), "--check"])
    assert r.exit_code == 1
    assert "ERROR: 1 [[include]] cell(s) invalid: py3_12-torch2_4_1-cu128-ubuntu22_04: torch 2.4.1 has no CUDA 12.8 build" in r.output


def test_json_lists_pruned_cells_with_reasons(example: Path) -> None:
    data = json.loads(CliRunner().invoke(main, ["matrix", str(example), "--format", "json"]).stdout)
    assert data["valid"] == 17 and data["pruned"] == 25
    pruned = {c["id"]: c["reason"] for c in data["cells"] if not c["valid"]}
    assert pruned["py3_10-torch2_9_1-cu118-ubuntu22_04"].startswith("torch 2.9.1 has no CUDA 11.8 build")


def test_output_is_deterministic(example: Path) -> None:
    runs = [CliRunner().invoke(main, ["matrix", str(example), "--format", f]).stdout for f in ("json", "json")]
    assert runs[0] == runs[1]


@pytest.mark.parametrize("text,expected", [
    ('[matrix]\npyhton = ["3.12"]\ntorch = ["2.7.1"]\n', "images.toml: matrix.pyhton: unknown axis"),
    ('[matrix]\ntorch = ["2.7.9"]\n', "matrix.torch: torch '2.7.9' is not a release in the data; did you mean 2.7.1, 2.7.0?"),
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["cuda128"]\n', "'cuda128' is not an accelerator"),
    ('[matrix]\npython = ["3.12"]\n', "names no framework axis"),
    ('[matrix]\ntorch = ["2.7.1"]\npython = ["3.12"]\n[[include]]\ntorch = "2.9.1"\n',
     "include[0]: is outside the product, so it must name every axis (missing: python)"),
    ('[matrix]\ntorch = ["2.7.1"]\ngpus = ["A1000"]\n', "matrix.gpus[0]: unknown GPU 'A1000'"),
])
def test_bad_matrix_files_exit_2_naming_the_key(text: str, expected: str, tmp_path: Path) -> None:
    p = tmp_path / "images.toml"
    p.write_text(text)
    r = CliRunner().invoke(main, ["matrix", str(p)])
    assert r.exit_code == 2 and expected in r.output and "Traceback" not in r.output


def test_every_problem_of_a_matrix_file_is_named_at_once_in_file_order(real_graph: Provider) -> None:
    text = ('matrx = 1\n[matrix]\ntorch = ["2.7.1"]\npython = "3.12"\nflavor = ["fat"]\nplatform = ["linux/amd64", "arm"]\n'
            'driver = "535"\nkeras_backend = "mxnet"\ngpus = "A100"\n[[include]]\ntorch = "2.7.1"\nos = "ubuntu22.04"\n'
            'flavor = 3\n[[exclude]]\n[image]\nrepository = "Bad Repo"\nplatforms = ["linux/amd64", "x86"]\ntag = "latest"\n')
    with pytest.raises(SpecError) as e:
        parse_matrix(text, "images.toml", real_graph)
    assert e.value.message.splitlines() == [
        "13 problems:",
        "  images.toml: matrx: unknown section (allowed: matrix, include, exclude, image); did you mean [matrix]?",
        "  images.toml: matrix.python: must be a non-empty list of strings, not '3.12'",
        "  images.toml: matrix.flavor: 'fat' is not one of base, runtime, devel",
        "  images.toml: matrix.platform: 'arm' is not a platform: linux/amd64 or linux/arm64 or windows/amd64 or "
        "windows/arm64 or darwin/arm64 or darwin/amd64 (Docker's names)",
        "  images.toml: include[0].os: is not an axis of [matrix] (axes: torch, flavor, platform)",
        "  images.toml: include[0].flavor: must be a string, not 3",
        "  images.toml: exclude[0]: must be a table of axis = value",
        "  images.toml: matrix.gpus: must be a list of GPU names",
        "  images.toml: matrix.driver: driver version '535' is not an NVIDIA driver version such as 535.104.05",
        "  images.toml: matrix.keras_backend: 'mxnet' is not a Keras backend (tensorflow, jax, torch)",
        "  images.toml: image.tag: unknown key (allowed: platforms, repository)",
        "  images.toml: image.repository: 'Bad Repo' is not an image repository such as 'registry.example/team/ml' "
        "(lower case, no tag, no whitespace)",
        "  images.toml: image.platforms: ['linux/amd64', 'x86'] must be a list of linux/amd64 and linux/arm64",
    ]
    assert e.value.tip == "edit images.toml at the keys named above"


def test_check_images_reports_each_image_that_would_fail(tmp_path: Path) -> None:
    images = [
        {"name": "good", "python": "3.12", "frameworks": {"torch": "2.7.1+cu128"}, "cuda": "12.8", "gpus": ["RTX 5090"]},
        {"name": "old-torch-new-gpu", "python": "3.12", "frameworks": {"torch": "2.5.1+cu124"}, "gpus": ["RTX 5090"]},
        {"name": "wrong-cuda-label", "python": "3.11", "frameworks": {"torch": "2.7.1+cu126"}, "cuda": "12.8"},
        {"name": "py-too-new", "python": "3.14", "frameworks": {"torch": "2.4.1"}},
        {"name": "tf-and-torch", "python": "3.12", "frameworks": {"torch": "2.7.1", "tensorflow": "2.18.0"}, "gpus": ["A100"]},
    ]
    p = tmp_path / "images.json"
    p.write_text(json.dumps({"images": images}))
    r = CliRunner().invoke(main, ["matrix", "--check-images", str(p)])
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert lines[0] == "  ok    good"
    assert lines[1].startswith("  FAIL  old-torch-new-gpu: torch 2.5.1 (cu124): no kernels for RTX 5090 (sm_120): compiled for ")
    assert lines[1].endswith(": no SASS for sm_120 and no PTX at or below it (sm_120 needs CUDA >= 12.8; this build is CUDA 12.4)")
    assert lines[2] == "  FAIL  wrong-cuda-label: torch 2.7.1 (cu126) is built for CUDA 12.6, the image says 12.8"
    assert "py-too-new: torch 2.4.1 (cu121): has no wheel for Python ==3.14.*" in lines[3]
    assert ("tf-and-torch: tensorflow 2.18.0 (cuda) bundles cuDNN 9.3.0.75 but torch 2.7.1 (cu126) bundles cuDNN "
            "9.5.1.17: one environment holds one nvidia-cudnn-cu12") in lines[4]
    assert "ERROR: 4 of 5 images would fail" in r.output


def test_check_images_bad_json_exit_2(tmp_path: Path) -> None:
    p = tmp_path / "images.json"
    p.write_text("{")
    r = CliRunner().invoke(main, ["matrix", "--check-images", str(p)])
    assert r.exit_code == 2 and "is not valid JSON" in r.output


def test_render_into_an_unwritable_place_is_a_clear_error(example: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = CliRunner().invoke(main, ["matrix", str(example), "--render", str(blocker / "cells")])
    assert r.exit_code == 2 and "cannot be written" in r.output and "Traceback" not in r.output


def test_render_and_workflow_never_write_through_a_link_that_leads_out(example: Path, tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 40: a cell's folder (or the workflow file) that is a link to elsewhere was written through
    out, elsewhere = tmp_path / "cells", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    cell = out / "py3_12-torch2_7_1-cu128-ubuntu22_04"
    cell.symlink_to(elsewhere)
    r = CliRunner().invoke(main, ["matrix", str(example), "--render", str(out)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"lies outside the output folder {out} ({cell} is a link to {elsewhere})" in r.output
    assert "or choose another folder with --render" in r.output
    assert list(elsewhere.iterdir()) == [] and sorted(p.name for p in out.iterdir()) == [cell.name]
    bashrc = elsewhere / "bashrc"
    bashrc.write_text("mine\n")
    monkeypatch.chdir(tmp_path)  # the repository's root
    workflows = Path(".github", "workflows")
    workflows.mkdir(parents=True)
    (workflows / "matrix.yml").symlink_to(bashrc)
    r = CliRunner().invoke(main, ["matrix", example.name, "--workflow", str(workflows / "matrix.yml")])
    assert r.exit_code == 2 and f"({workflows / 'matrix.yml'} is a link to {bashrc})" in r.output, r.output
    assert bashrc.read_text() == "mine\n" and (workflows / "matrix.yml").is_symlink()


JETSON = ('[matrix]\npython = ["3.10"]\ntorch = ["2.8.0"]\naccelerator = ["cuda", "cu126"]\ngpus = ["Jetson AGX Orin"]\n'
          '\n[image]\nplatforms = ["linux/arm64"]\n')


def test_a_matrix_of_jetson_modules_solves_for_their_jetpack(real_graph: Provider) -> None:
    res = results(real_graph, JETSON)
    jetson = res["py3_10-torch2_8_0-cuda"].resolution
    assert jetson is not None and jetson.jetpack == "6.2.1"  # the newest JetPack of the Orin modules
    assert [(p.name, p.variant) for p in jetson.packages] == [("torch", "jp6-cu126")]
    assert jetson.base_image.startswith("nvcr.io/nvidia/l4t-jetpack:")
    row = formats.row(parse_matrix(JETSON, "images.toml", real_graph), res["py3_10-torch2_8_0-cuda"], "d")
    assert (row["vendor"], row["jetpack"]) == ("nvidia", "6.2.1")  # the workflow runs it with the nvidia runtime
    # a torch variant names the build exactly, and a Jetson build is a variant of its own
    assert res["py3_10-torch2_8_0-cu126"].reason == "torch 2.8.0 has no cu126 build (it has jp6-cu126 for this CUDA/ROCm)"


@pytest.mark.parametrize(("image", "expected"), [
    ({"cuda": "twelve"}, "[0].cuda: CUDA version 'twelve' is not a dotted number"),
    ({"rocm": "6.x"}, "[0].rocm: ROCm version '6.x' is not a dotted number"),
    ({"driver": "latest"}, "[0].driver: driver version 'latest' is not a dotted number"),
])
def test_check_images_bad_stated_versions_exit_2_naming_the_key(image: dict[str, str], expected: str,
                                                                tmp_path: Path) -> None:
    p = tmp_path / "images.json"
    p.write_text(json.dumps([{"python": "3.12", "frameworks": {"torch": "2.7.1+cu128"}, **image}]))
    r = CliRunner().invoke(main, ["matrix", "--check-images", str(p)])
    assert r.exit_code == 2 and expected in r.output and "Traceback" not in r.output, r.output


def test_check_images_as_json_names_what_the_data_lacks(tmp_path: Path) -> None:
    images = [{"name": "mixed", "python": "3.12",
               "frameworks": {"torch": "9.9.9", "tensorflow": "2.18.0+cu999", "keras": "3.8.0"}},
              {"name": "keras-old-python", "python": "3.8", "frameworks": {"keras": "3.8.0"}}]
    p = tmp_path / "images.json"
    p.write_text(json.dumps(images))
    r = CliRunner().invoke(main, ["matrix", "--check-images", str(p), "--format", "json"])
    assert r.exit_code == 1
    assert json.loads(r.stdout) == [
        {"name": "mixed", "ok": False, "problems": ["tensorflow 2.18.0 has no cu999 build (it has cpu, cuda, metal)",
                                                    "torch 9.9.9 is not a release in the data"]},
        {"name": "keras-old-python", "ok": False, "problems": ["keras 3.8.0 has no wheel for Python 3.8"]}]


@pytest.mark.parametrize(("text", "expected"), [
    ('{"images": {"name": "x"}}', 'must be a JSON list of images (or {"images": [...]})'),
    ('[{"name": "x"}]', '[0]: each image needs a "frameworks" object'),
])
def test_check_images_bad_shapes_exit_2(text: str, expected: str, tmp_path: Path) -> None:
    p = tmp_path / "images.json"
    p.write_text(text)
    r = CliRunner().invoke(main, ["matrix", "--check-images", str(p)])
    assert r.exit_code == 2 and expected in r.output and "Traceback" not in r.output, r.output


def test_help_lists_every_key_the_parser_accepts(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["matrix", "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    listed = re.findall(r"^  (\[\[?\w+\]\]?|\w+\.\w+) ", r.output, re.M)
    # what the parser itself names as allowed when it meets a key it does not know
    bad = tmp_path / "images.toml"
    bad.write_text('[matrix]\ntorch = ["2.7.1"]\nbogus = ["x"]\n[image]\nbogus = 1\n[bogus]\n')
    err = CliRunner().invoke(main, ["matrix", str(bad)]).stderr
    assert "unknown axis (axes: " in err and "unknown section (allowed: " in err
    axes, hardware = re.search(r"unknown axis \(axes: ([^;]+); also ([^)]+)\)", err).groups()  # type: ignore[union-attr]
    image = re.search(r"image\.bogus: unknown key \(allowed: ([^)]+)\)", err).group(1)  # type: ignore[union-attr]
    sections = re.search(r"unknown section \(allowed: ([^)]+)\)", err).group(1)  # type: ignore[union-attr]
    accepted = {f"matrix.{k}" for k in (*axes.split(", "), *hardware.split(", "))}
    accepted |= {f"image.{k}" for k in image.split(", ")}
    assert len(accepted) > 12
    assert accepted <= set(listed)
    assert {s.strip("[]") for s in listed if s.startswith("[")} == set(sections.split(", "))
    assert "matrix.python" in listed and "image.platforms" in listed and "[[include]]" in listed


# ---------------------------------------------------------------------------- reasons name builds of the kind asked for

def test_a_cuda_cell_without_that_cuda_names_the_cuda_builds_of_its_release_not_a_jetson_build(
        real_graph: Provider) -> None:
    res = results(real_graph, '[matrix]\npython = ["3.12"]\ntorch = ["2.8.0"]\naccelerator = ["cu121", "cu126"]\n'
                              'gpus = ["A100"]\n')
    assert res["py3_12-torch2_8_0-cu126"].valid
    # the issue's cell: it was pruned as "jp6-cu126 is built for Jetson modules (JetPack 6) only"
    assert res["py3_12-torch2_8_0-cu121"].reason == "torch 2.8.0 has no CUDA 12.1 build (it has cu126, cu128, cu129)"


def test_explain_and_lock_tell_the_same_reason_for_a_pinned_cuda(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "x"\npython = "==3.12.*"\n[frameworks]\ntorch = "==2.8.0"\n'
                    '[hardware]\ngpus = ["A100"]\ncuda = "12.1"\n')
    for argv in (["explain", str(spec)], ["lock", str(spec), "-o", str(tmp_path / "x.lock")]):
        r = CliRunner().invoke(main, argv)
        assert r.exit_code == 1, r.output
        assert "torch ==2.8.0: torch 2.8.0 has no CUDA 12.1 build (it has cu126, cu128, cu129)" in r.output
        assert "Jetson" not in r.output.split("TIP")[0].split("rejected")[0]


def test_a_jetson_cell_of_a_release_without_a_jetson_build_names_the_nearest_jetson_build(
        real_graph: Provider) -> None:
    res = results(real_graph, '[matrix]\npython = ["3.10"]\ntorch = ["2.9.0", "2.8.0"]\naccelerator = ["cuda"]\n'
                              'gpus = ["Jetson AGX Orin"]\n')
    assert res["py3_10-torch2_8_0-cuda"].valid
    # it listed why each of cu126 .. cu130 is not built for JetPack 6
    assert res["py3_10-torch2_9_0-cuda"].reason == ("NVIDIA published no Jetson build of torch 2.9.0; for JetPack 6.2.1 "
                                                   "the nearest is torch 2.8.0 (jp6-cu126)")


# ---------------------------------------------------------------------------- every format streams

def _many(results: list[CellResult], n: int) -> Iterator[CellResult]:
    """``n`` cells made one at a time from the solved ones (each a new cell with its own id)."""
    for k in range(n):
        r = results[k % len(results)]
        yield CellResult(cell=Cell(values=(*r.cell.values, ("os", f"os{k}"))), resolution=r.resolution, reason=r.reason)


@pytest.mark.parametrize(("fmt", "max_jobs", "shard"), [("table", None, None), ("github", None, None),
                                                        ("github", 7, None), ("github", 7, 2), ("bake", None, None),
                                                        ("markdown", None, None), ("json", None, None),
                                                        ("html", None, None)])
def test_every_format_streams_memory_flat_in_the_number_of_cells(real_graph: Provider, fmt: str,
                                                                  max_jobs: int | None, shard: int | None) -> None:
    ms = parse_matrix(ISSUE_EXAMPLE, "images.toml", real_graph)
    solved = solve_cells(real_graph, ms, ms.cells())

    def peak(n: int) -> int:
        tracemalloc.start()
        try:
            for _ in formats.streamed(fmt, ms, _many(solved, n), "d", max_jobs=max_jobs, shard=shard):
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(2_000), peak(20_000)
    assert large < 1.5 * small + 200_000, (small, large)  # it held every cell: ten times the memory


def test_streamed_formats_are_the_texts_of_the_whole_outputs(real_graph: Provider) -> None:
    ms = parse_matrix(ISSUE_EXAMPLE, "images.toml", real_graph)
    rs = solve_cells(real_graph, ms, ms.cells())
    for max_jobs in (None, 5, 1000):
        whole = formats.github(ms, rs, "d", max_jobs)
        assert formats.printed("github", ms, rs, "d", max_jobs=max_jobs) == json.dumps(whole, separators=(",", ":")) + "\n"
    assert formats.printed("bake", ms, rs, "d") == json.dumps(formats.bake(ms, rs, "d"), indent=1) + "\n"
    nothing = [r for r in rs if not r.valid]
    assert formats.printed("bake", ms, nothing, "d") == json.dumps({"group": {"default": {"targets": []}}, "target": {}},
                                                                   indent=1) + "\n"
    assert formats.printed("github", ms, nothing, "d", max_jobs=5) == '{"shards":[{"include":[]}]}\n'
    with pytest.raises(SpecError, match="there are 4 shards"):
        formats.printed("github", ms, rs, "d", max_jobs=5, shard=5)


# ---------------------------------------------------------------------------- the fast way is the slow way

_SAME_WAY = """[matrix]
python = ["3.10", "3.12", "3.13"]
torch = ["2.9.1", "2.7.1", "2.5.1", "2.3.1"]
keras = ["3.15.1", "3.6.0"]
accelerator = ["cpu", "cu118", "cu126", "cu128", "rocm6.2"]
os = ["ubuntu22.04", "ubuntu24.04"]
flavor = ["base", "runtime"]
gpus = ["A100", "MI300X"]
driver = "535.104.05"
"""


def _outcome(r: CellResult) -> tuple[object, ...]:
    res = r.resolution
    if res is None:
        return (r.cell.id, False, r.reason)
    return (r.cell.id, True, res.python, res.cuda, res.rocm, res.cudnn, res.driver_min, res.compat, res.base_image,
            res.python_from, res.packages, res.warnings, res.models, res.tools)


def test_a_matrix_solved_together_answers_as_each_cell_solved_alone(real_graph: Provider) -> None:
    """`envsolve matrix` shares work between cells (one search per group of cells that differ only
    in the image's OS or flavour, a refused group's answer reused, the parts of a resolution no
    image changes made once); each cell solved on its own, with nothing shared, must agree."""
    from envsolve.matrix.cells import iter_cells

    ms = parse_matrix(_SAME_WAY, "m.toml", real_graph)
    cells = ms.cells()
    together = [_outcome(r) for r in iter_cells(real_graph, ms, cells)]
    alone = [_outcome(next(iter_cells(real_graph, ms, [cell]))) for cell in cells]
    assert len(together) == 480
    assert together == alone
    valid = sum(1 for o in together if o[1])
    assert 0 < valid < len(together)  # both kinds of answer are compared


def test_json_cells_are_the_json_of_their_entries(real_graph: Provider) -> None:
    """--format json writes each cell from pieces it encodes once: the same bytes as encoding the
    cell's entry whole."""
    ms = parse_matrix(_SAME_WAY + '[[include]]\npython = "3.12"\ntorch = "2.7.1"\nkeras = "3.15.1"\n'
                      'accelerator = "cu126"\nos = "ubuntu24.04"\nflavor = "devel"\n', "m.toml", real_graph)
    results = solve_cells(real_graph, ms, ms.cells())
    text = formats.printed("json", ms, results, 'out/"quoted"')
    lines = [json.dumps(formats.cell_entry(ms, r, 'out/"quoted"'), separators=(",", ":")) for r in results]
    assert text == '{"cells": [\n' + ",\n".join(lines) + f'\n], "valid": {sum(r.valid for r in results)}, ' \
        f'"pruned": {sum(not r.valid for r in results)}}}\n'
    assert json.loads(text)["cells"][-1]["include"] is True and '\\"quoted\\"' in text


def test_a_matrix_forgetting_its_groups_answers_as_one_that_keeps_them(real_graph: Provider,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Past GROUPS_HELD groups a matrix forgets their answers, so memory stays flat: here after
    each group, and a group's cells are not neighbours (the platform axis comes after the OS and
    flavour), so most are solved again after the forgetting, to the same answers."""
    from envsolve.matrix import cells as cells_module

    ms = parse_matrix(_SAME_WAY + 'platform = ["linux/amd64", "linux/arm64"]\n', "m.toml", real_graph)
    assert [a for a, _ in ms.axes][-3:] == ["os", "flavor", "platform"]
    kept = [_outcome(r) for r in cells_module.iter_cells(real_graph, ms, ms.cells())]
    monkeypatch.setattr(cells_module, "GROUPS_HELD", 1)
    forgetting = cells_module.Solving(real_graph, ms)
    assert [_outcome(r) for r in forgetting.solve(ms.cells())] == kept
    assert len(forgetting.refused) <= 1


@pytest.mark.parametrize("extra", ["", '[[exclude]]\naccelerator = "cu118"\n[[exclude]]\npython = "3.13"\n'
                                       'os = "ubuntu24.04"\n'])
def test_a_matrix_solved_by_forked_workers_is_the_bytes_of_one_process(real_graph: Provider,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      extra: str) -> None:
    """A large matrix is solved by forked workers, a chunk of the product each in turn (each
    skipping the others' cells, the excluded ones left out): the JSON is byte for byte one
    process's. Small chunks here (7 cells, not a multiple of the group's 4), so each worker takes
    many, skips between them, and a group's cells are split between workers."""
    from envsolve.matrix import workers

    ms = parse_matrix(_SAME_WAY + extra, "m.toml", real_graph)
    results = solve_cells(real_graph, ms, ms.cells())
    one = formats.printed("json", ms, results, "d")
    for chunk in (7, 480, 1000):  # many chunks; one that ends the product exactly; one past its end
        monkeypatch.setattr(workers, "CHUNK", chunk)
        tally = formats.Tally()
        assert "".join(workers.json_pieces(real_graph, ms, "d", 2, tally)) == one
        assert tally.valid == sum(r.valid for r in results) > 0


def test_matrix_command_forks_workers_for_json_with_the_same_output(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`envsolve matrix --format json` as a user runs it: forked workers (the size threshold lowered
    here) print what one process prints."""
    from envsolve.matrix import workers

    spec = tmp_path / "m.toml"
    spec.write_text(_SAME_WAY + '[[exclude]]\naccelerator = "cu118"\n')
    monkeypatch.setattr(workers, "MIN_CELLS", 100)
    monkeypatch.setattr(workers, "CHUNK", 50)
    argv = ["matrix", str(spec), "--format", "json"]
    forked = CliRunner().invoke(main, argv, env={"ENVSOLVE_MATRIX_WORKERS": "2"})
    alone = CliRunner().invoke(main, argv, env={"ENVSOLVE_MATRIX_WORKERS": "1"})
    assert forked.exit_code == alone.exit_code == 0, (forked.output, alone.output)
    assert forked.stdout == alone.stdout and json.loads(forked.stdout)["valid"] > 0


def test_matrix_workers_by_size_and_setting(real_graph: Provider, monkeypatch: pytest.MonkeyPatch) -> None:
    from envsolve.matrix import workers

    ms = parse_matrix(_SAME_WAY, "m.toml", real_graph)
    assert workers.workers_for(ms, {"ENVSOLVE_MATRIX_WORKERS": "3"}) == 1  # 480 cells: one process
    monkeypatch.setattr(workers, "MIN_CELLS", 480)
    assert workers.workers_for(ms, {"ENVSOLVE_MATRIX_WORKERS": "3"}) == 3
    assert workers.workers_for(ms, {"ENVSOLVE_MATRIX_WORKERS": "1"}) == 1
    for bad in ("0", "two", "-1", "\u00b2", "257"):
        with pytest.raises(SpecError, match="ENVSOLVE_MATRIX_WORKERS.*is not a number of processes from 1 to 256"):
            workers.workers_for(ms, {"ENVSOLVE_MATRIX_WORKERS": bad})
    included = parse_matrix(_SAME_WAY + '[[include]]\npython = "3.12"\ntorch = "2.7.1"\nkeras = "3.15.1"\n'
                            'accelerator = "cu126"\nos = "ubuntu24.04"\nflavor = "base"\n', "m.toml", real_graph)
    assert workers.workers_for(included, {"ENVSOLVE_MATRIX_WORKERS": "3"}) == 1  # includes hold every cell


# ---------------------------------------------------------------------------- Windows and macOS cells

HOSTS = '''
[matrix]
python = ["3.12"]
torch = ["2.7.1"]
accelerator = ["cpu", "cu128", "xpu", "mps"]
platform = ["linux/amd64", "windows/amd64", "darwin/arm64"]
gpus = ["H100", "RTX 5090", "Arc B580"]
'''


@pytest.fixture(scope="module")
def hosts_graph(tmp_path_factory: pytest.TempPathFactory) -> Provider:
    from envsolve.data import load_dir
    from tests.matrix_hosts import hosts_data

    return Provider(load_dir(hosts_data(tmp_path_factory.mktemp("hosts"))))


def test_cells_of_windows_and_macos_solve_by_their_hosts_rules(hosts_graph: Provider) -> None:
    res = results(hosts_graph, HOSTS)
    valid = {cid: r.resolution for cid, r in res.items() if r.resolution is not None}
    variants = {cid: (r.target.vendor, r.target.platform, [p.variant for p in r.packages]) for cid, r in valid.items()}
    assert variants == {
        "py3_12-torch2_7_1-cpu-linux_amd64": ("cpu", "linux/amd64", ["cpu"]),
        "py3_12-torch2_7_1-cpu-windows_amd64": ("cpu", "windows/amd64", ["cpu"]),
        "py3_12-torch2_7_1-cpu-darwin_arm64": ("cpu", "darwin/arm64", ["macos"]),  # the default index's Mac wheel
        "py3_12-torch2_7_1-cu128-linux_amd64": ("nvidia", "linux/amd64", ["cu128"]),
        "py3_12-torch2_7_1-cu128-windows_amd64": ("nvidia", "windows/amd64", ["cu128"]),
        "py3_12-torch2_7_1-xpu-windows_amd64": ("intel", "windows/amd64", ["xpu"]),
        "py3_12-torch2_7_1-mps-darwin_arm64": ("apple", "darwin/arm64", ["mps"]),
    } | ({"py3_12-torch2_7_1-xpu-linux_amd64": ("intel", "linux/amd64", ["xpu"])}
         if "py3_12-torch2_7_1-xpu-linux_amd64" in valid else {})
    # each cell's GPUs are the matrix GPUs of its vendor; a cell off Linux gets no base image
    assert valid["py3_12-torch2_7_1-xpu-windows_amd64"].target.gpus[0].name == "Arc B580"
    assert [g.name for g in valid["py3_12-torch2_7_1-cu128-windows_amd64"].target.gpus] == ["H100", "RTX 5090"]
    assert valid["py3_12-torch2_7_1-cu128-windows_amd64"].target.windows_driver
    assert all(not r.base_image for cid, r in valid.items() if "linux" not in cid)
    assert valid["py3_12-torch2_7_1-cu128-linux_amd64"].base_image.startswith("nvidia/cuda:12.8")
    # what the host cannot run is pruned with the project spec's own reason
    assert res["py3_12-torch2_7_1-cu128-darwin_arm64"].reason.startswith(
        "accelerator cu128 on darwin/arm64: macOS has no CUDA, ROCm or XPU builds of these frameworks")
    assert res["py3_12-torch2_7_1-xpu-darwin_arm64"].reason.startswith("accelerator xpu on darwin/arm64: macOS has no")
    assert res["py3_12-torch2_7_1-mps-windows_amd64"].reason == (
        "accelerator mps on windows/amd64: Apple's GPU (MPS) is on Apple silicon only: set platform = 'darwin/arm64'")
    assert res["py3_12-torch2_7_1-mps-linux_amd64"].reason.startswith("accelerator mps on linux/amd64: Apple's GPU")


def test_apple_silicon_without_an_accelerator_axis_is_its_gpu(hosts_graph: Provider) -> None:
    """As a project's darwin/arm64 target without vendor: Apple's GPU, unless the cell says cpu."""
    text = '[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\nplatform = ["darwin/arm64", "windows/amd64"]\n'
    res = results(hosts_graph, text)
    mac, win = res["py3_12-torch2_7_1-darwin_arm64"].resolution, res["py3_12-torch2_7_1-windows_amd64"].resolution
    assert mac is not None and mac.accelerator == "mps" and mac.packages[0].variant == "mps"
    assert win is not None and win.accelerator == "cpu"
    cpu = results(hosts_graph, text + 'accelerator = ["cpu"]\n')["py3_12-torch2_7_1-cpu-darwin_arm64"].resolution
    assert cpu is not None and cpu.accelerator == "cpu" and cpu.packages[0].variant == "macos"


@pytest.mark.parametrize(("driver", "windows_ok"), [("526.0", False), ("32.0.15.2833", True), ("528.33", True)])
def test_a_windows_cuda_cell_takes_the_windows_driver_floor(hosts_graph: Provider, driver: str,
                                                             windows_ok: bool) -> None:
    """CUDA 12's minor-version compatibility needs 525.60.13 on Linux, 528.33 on Windows (the
    data's Windows column); a driver between the two serves the Linux cell only. A Windows driver
    may be written as Windows numbers it (32.0.15.2833 is 528.33)."""
    text = (f'[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\naccelerator = ["cu128"]\n'
            f'platform = ["linux/amd64", "windows/amd64"]\ngpus = ["RTX 4090"]\ndriver = "{driver}"\n')
    res = results(hosts_graph, text)
    linux, windows = res["py3_12-torch2_7_1-cu128-linux_amd64"], res["py3_12-torch2_7_1-cu128-windows_amd64"]
    assert linux.resolution is not None and linux.resolution.compat == "minor-version"
    assert windows.valid == windows_ok
    if windows_ok:
        assert windows.resolution is not None and windows.resolution.driver_min == "528.33"
    else:
        assert "cu128: driver 526.0 is too old for CUDA 12.8: needs >= 570.65 (or >= 528.33 by minor-version " \
               "compatibility)" in windows.reason


def test_cells_off_linux_have_no_image_in_any_format(hosts_graph: Provider) -> None:
    ms = parse_matrix(HOSTS, "images.toml", hosts_graph)
    rs = solve_cells(hosts_graph, ms, ms.cells())
    rows = {r["id"]: r for r in formats.github(ms, rs, "d", None)["include"]}
    win = rows["py3_12-torch2_7_1-cu128-windows_amd64"]
    assert win == {"python": "3.12", "torch": "2.7.1", "accelerator": "cu128", "platform": "windows/amd64",
                   "id": "py3_12-torch2_7_1-cu128-windows_amd64", "vendor": "nvidia", "runner": "windows-latest",
                   "python_version": "3.12"}
    assert rows["py3_12-torch2_7_1-mps-darwin_arm64"]["runner"] == "macos-15"
    assert rows["py3_12-torch2_7_1-mps-darwin_arm64"]["vendor"] == "apple"
    assert rows["py3_12-torch2_7_1-xpu-windows_amd64"]["vendor"] == "intel"
    linux = rows["py3_12-torch2_7_1-cu128-linux_amd64"]
    assert linux["image"] == "envsolve-matrix:py3_12-torch2_7_1-cu128-linux_amd64" and "python_version" not in linux
    bake = formats.bake(ms, rs, "d")
    assert all("linux" in t for t in bake["target"]) and "py3_12-torch2_7_1-cpu-linux_amd64" in bake["target"]
    entries = {e["id"]: e for e in json.loads(formats.printed("json", ms, rs, "d"))["cells"]}
    assert "image" not in entries["py3_12-torch2_7_1-cpu-windows_amd64"]
    assert entries["py3_12-torch2_7_1-cpu-linux_amd64"]["image"].endswith("cpu-linux_amd64")
    text = formats.printed("json", ms, rs, "d")  # the fast encoder writes each entry as cell_entry does
    assert text.splitlines()[1:-1] == [json.dumps(formats.cell_entry(ms, r, "d"), separators=(",", ":")) + ","
                                       for r in rs][:-1] + [json.dumps(formats.cell_entry(ms, rs[-1], "d"),
                                                                       separators=(",", ":"))]
    table = formats.table(rs)
    assert "  ok      py3_12-torch2_7_1-mps-darwin_arm64: torch 2.7.1 mps; MPS (Apple GPU); no image: darwin/arm64" in table
    assert "py3_12-torch2_7_1-xpu-windows_amd64: torch 2.7.1 xpu; XPU (Intel GPU); no image: windows/amd64" in table


@pytest.mark.parametrize("text,expected", [
    # every cell contradictory: the file says so, naming the key and the value
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["cu128"]\nplatform = ["darwin/arm64"]\n',
     "matrix.accelerator: 'cu128' makes no valid cell with 'darwin/arm64': macOS has no CUDA, ROCm or XPU builds"),
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["rocm6.2", "cu128"]\nplatform = ["windows/amd64", "darwin/arm64"]\n',
     "matrix.accelerator: 'rocm6.2' makes no valid cell with 'windows/amd64', 'darwin/arm64': the ROCm builds of "
     "these frameworks are Linux wheels"),
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["cu128", "rocm"]\nplatform = ["linux/amd64", "darwin/amd64"]\n',
     "matrix.platform: 'darwin/amd64' makes no valid cell with 'cu128', 'rocm': macOS has no CUDA"),
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["rocm6.2"]\nplatform = ["linux/amd64", "windows/amd64"]\n',
     "matrix.platform: 'windows/amd64' makes no valid cell with 'rocm6.2': the ROCm builds"),
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["mps"]\n',
     "matrix.accelerator: 'mps' makes no valid cell with 'linux/amd64': Apple's GPU (MPS) is on Apple silicon only"),
    ('[matrix]\ntorch = ["2.7.1"]\nplatform = ["windows/arm64"]\naccelerator = ["xpu"]\n',
     "'xpu' makes no valid cell with 'windows/arm64': no framework publishes AMD or Intel GPU builds for Windows on Arm"),
    # an [[include]] must be valid: one the host cannot run is wrong in the file
    ('[matrix]\ntorch = ["2.7.1"]\naccelerator = ["cpu", "rocm6.2"]\nplatform = ["linux/amd64", "windows/amd64"]\n'
     '[[include]]\naccelerator = "rocm6.2"\nplatform = "windows/amd64"\n',
     "include[0].accelerator: 'rocm6.2': accelerator rocm6.2 on windows/amd64: the ROCm builds"),
    ('[matrix]\ntorch = ["2.7.1"]\nplatform = ["linux/amd64", "darwin/amd64"]\naccelerator = ["cpu", "cu128"]\n'
     '[[include]]\nplatform = "darwin/amd64"\naccelerator = "cu128"\n', "include[0].accelerator: 'cu128'"),
    # images are Linux: Windows and macOS cells are values of the platform axis
    ('[matrix]\ntorch = ["2.7.1"]\n[image]\nplatforms = ["linux/amd64", "windows/amd64"]\n',
     "image.platforms: ['linux/amd64', 'windows/amd64'] must be a list of linux/amd64 and linux/arm64 (images are "
     "Linux; for windows/amd64 cells add a platform axis"),
])
def test_matrix_files_a_host_contradicts_exit_2_naming_key_and_value(text: str, expected: str, tmp_path: Path) -> None:
    p = tmp_path / "images.toml"
    p.write_text(text)
    r = CliRunner().invoke(main, ["matrix", str(p)])
    assert r.exit_code == 2 and expected in r.output and "Traceback" not in r.output, r.output


@pytest.mark.parametrize("text", [
    # a contradictory cell among valid ones is pruned, not an error
    '[matrix]\ntorch = ["2.7.1"]\naccelerator = ["cpu", "cu128"]\nplatform = ["linux/amd64", "darwin/arm64"]\n',
    '[matrix]\ntorch = ["2.7.1"]\naccelerator = ["rocm6.2", "cpu"]\nplatform = ["linux/amd64", "windows/amd64"]\n',
    '[matrix]\ntorch = ["2.7.1"]\nplatform = ["darwin/amd64", "windows/arm64"]\n',
    '[matrix]\ntorch = ["2.7.1"]\naccelerator = ["cpu", "cu128"]\nplatform = ["linux/amd64", "darwin/arm64"]\n'
    '[[include]]\nplatform = "darwin/arm64"\n',  # names a valid cell and one the check will flag (exit 1)
])
def test_matrix_files_with_some_cells_a_host_cannot_run_are_good_input(text: str, real_graph: Provider) -> None:
    ms = parse_matrix(text, "images.toml", real_graph)
    assert ms.cells()


def test_the_base_image_axes_leave_cells_off_linux_alone(hosts_graph: Provider) -> None:
    """os and flavor choose a Linux cell's base image; a Windows cell has none to choose."""
    text = ('[matrix]\npython = ["3.12"]\ntorch = ["2.7.1"]\naccelerator = ["cpu"]\n'
            'platform = ["linux/amd64", "windows/amd64"]\nos = ["ubuntu22.04"]\nflavor = ["runtime"]\n')
    res = results(hosts_graph, text)
    linux = res["py3_12-torch2_7_1-cpu-ubuntu22_04-runtime-linux_amd64"].resolution
    windows = res["py3_12-torch2_7_1-cpu-ubuntu22_04-runtime-windows_amd64"].resolution
    assert linux is not None and linux.base_image == "ubuntu:22.04"
    assert windows is not None and windows.base_image == ""
    assert [(p.name, p.version, p.variant) for p in windows.packages] == [
        (p.name, p.version, p.variant) for p in linux.packages]
    assert [p.conda for p in windows.packages] == [()]  # conda-forge's specs in the data are Linux's


# 4 Pythons x 8 torch releases x 3 accelerators x 3 flavors x 3 platforms x 1000 OS names: 864,000 cells
_HUGE = ('[matrix]\npython = ["3.10", "3.11", "3.12", "3.13"]\ntorch = ["2.5.1", "2.6.0", "2.7.0", "2.7.1", '
         '"2.8.0", "2.9.0", "2.9.1", "2.10.0"]\naccelerator = ["cpu", "cu126", "cu128"]\n'
         'flavor = ["base", "runtime", "devel"]\nplatform = ["linux/amd64", "linux/arm64", "windows/amd64"]\n'
         f'os = [{", ".join(f"{chr(34)}os{i}{chr(34)}" for i in range(1000))}]\n')


def test_a_matrix_above_the_cap_is_refused_with_its_size_before_any_cell_is_solved(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "images.toml"
    p.write_text(_HUGE + 'keras = ["3.8.0", "3.9.0", "3.10.0"]\n')  # x 3: 2,592,000 cells
    monkeypatch.setattr("envsolve.matrix.cells.Solving.solve",
                        lambda *a: pytest.fail("a cell was solved"))  # refused before the first cell
    r = CliRunner().invoke(main, ["matrix", str(p), "--format", "json"])
    assert r.exit_code == 2 and r.stdout == "" and "Traceback" not in r.output
    assert (f"ERROR: {p}: matrix: has 2,592,000 cells (4 python x 8 torch x 3 keras x 3 accelerator x 1000 os "
            "x 3 flavor x 3 platform), more than the 2,000,000 envsolve solves without being asked") in r.stderr
    assert "TIP: drop values from the largest axes or add [[exclude]] rows; to solve them all, pass " \
           "--max-cells 2592000" in r.stderr


def test_max_cells_sets_the_cap(example: Path) -> None:
    refused = CliRunner().invoke(main, ["matrix", str(example), "--max-cells", "40"])
    assert refused.exit_code == 2
    # 42 cells, but an [[include]] could bring excluded cells back: counted as the whole product
    assert "has up to 45 cells (3 python x 3 torch x 5 accelerator x 1 os), more than the 40" in refused.stderr
    assert CliRunner().invoke(main, ["matrix", str(example), "--max-cells", "45"]).exit_code == 0


def test_the_size_is_counted_without_making_the_cells(real_graph: Provider) -> None:
    ms = parse_matrix(_HUGE + '[[exclude]]\nplatform = "windows/amd64"\n[[exclude]]\naccelerator = "cpu"\n',
                      "images.toml", real_graph)
    # an exclude that leaves out most is taken off (the other may overlap it): at most, never less
    assert ms.at_most() == 864_000 - 864_000 // 3
    one = parse_matrix(ISSUE_EXAMPLE.replace("[[include]]", "[[ignored]]").split("[[ignored]]")[0]
                       + '[[exclude]]\naccelerator = "rocm6.2"\npython = "3.12"\n', "images.toml", real_graph)
    assert one.at_most() == len(one.cells()) == 42  # one exclude: exact


def test_a_workflows_folder_that_is_itself_a_link_is_never_written_through(example: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # hostile round 3, defect 1: `--workflow wfd/sub/images.yml`, wfd/sub a link, wrote into its target
    monkeypatch.chdir(tmp_path)
    victim = tmp_path / "victim"
    victim.mkdir()
    Path("wfd").mkdir()
    Path("wfd", "sub").symlink_to(victim)
    r = CliRunner().invoke(main, ["matrix", example.name, "--workflow", "wfd/sub/images.yml"])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "wfd/sub: cannot be written (--workflow): the output folder is a link to " in r.output, r.output
    assert f"pass the link's target (--workflow {victim / 'images.yml'})" in r.output
    assert list(victim.iterdir()) == []
    out = tmp_path / "cells"
    out.symlink_to(victim)
    r = CliRunner().invoke(main, ["matrix", example.name, "--render", str(out)])
    assert r.exit_code == 2 and f"{out}: cannot be written (--render): the output folder is a link" in r.output
    assert list(victim.iterdir()) == []
