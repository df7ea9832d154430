"""envsolve data --verify against the recorded index of tests/fixtures/index (real pages and metadata)
and the framework rows of tests/fixtures/verify (copied from the shipped matrices; see SOURCES.md there)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.data import data_dir
from tests.test_refresh import index  # noqa: F401  (the recorded index, served on 127.0.0.1)

ROWS = Path(__file__).parent / "fixtures" / "verify"


@pytest.fixture
def matrices(tmp_path: Path) -> Path:
    """The shipped matrices with the framework files cut to the releases the recorded index has."""
    root = tmp_path / "matrices"
    shutil.copytree(data_dir(), root)
    for f in ROWS.glob("*.toml"):
        shutil.copyfile(f, root / f.name)
    _keep_arm_wheel_rows(root / "platforms.toml")
    return root


def _keep_arm_wheel_rows(path: Path) -> None:
    """platforms.toml without its Windows and macOS [[wheel]] rows, whose variants (cu121 on the
    PyTorch index, xpu) the cut framework files lack: the loader would refuse them."""
    head, *rows = path.read_text().split("\n[[")
    kept = [r for r in rows if not r.startswith("wheel]]") or 'platform = "linux/arm64"' in r]
    path.write_text("\n[[".join([head, *kept]))


def verify(matrices: Path, url: str, *args: str) -> object:
    return CliRunner().invoke(main, ["--matrices", str(matrices), "data", "--verify", "--index-url", url,
                                     "--no-cache", "--backoff", "0", *args])


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, old
    path.write_text(text.replace(old, new))


def table(out: str) -> list[list[str]]:
    """The mismatch table's rows, split on runs of two or more spaces."""
    import re

    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("row "))
    return [re.split(r"\s{2,}", line.strip()) for line in lines[head + 1:]
            if line and not line.startswith(("warning:", "index:", "tip:")) and "fact(s) checked" not in line]


def test_rows_that_agree_with_the_index_pass(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    r = verify(matrices, index.url_for("/simple"))
    assert r.exit_code == 0, r.output
    assert r.stdout.endswith(" fact(s) checked, 0 mismatch(es)\n")
    assert int(r.stdout.rsplit("\n", 2)[-2].split()[0]) > 50  # pins, Pythons, companions, versions
    # what the recorded index cannot say is a warning, not a pass or a mismatch
    assert "warning: torch 2.7.1: no metadata could be read for its Linux x86_64 wheels; pins not checked\n" in r.stdout
    assert "verify: " not in r.stderr  # stderr is no terminal: no progress lines


def test_verbose_says_the_index_the_cache_and_what_is_checked(index: HTTPServer, matrices: Path,  # noqa: F811
                                                              tmp_path: Path) -> None:
    url = index.url_for("/simple")
    args = ["--matrices", str(matrices), "data", "--verify", "--index-url", url, "--package", "keras", "-v"]
    r = CliRunner().invoke(main, [*args, "--cache-dir", str(tmp_path / "c")])
    assert r.exit_code == 0, r.output
    assert f"index: {url} (from --index-url); timeout 30 s, 3 retries\n" in r.stderr
    assert f"cache: {tmp_path / 'c' / 'index'}\n" in r.stderr
    assert "verify: reading keras (1/1)\n" in r.stderr and "verify: checking the keras rows (1 of 1)\n" in r.stderr
    assert f"{url}: 0 answer(s) from the cache, 1 from the network\n" in r.stderr
    quiet = CliRunner().invoke(main, [*args[:-1], "--cache-dir", str(tmp_path / "c")])
    assert quiet.stdout == r.stdout and quiet.stderr == ""


def test_a_mismatch_of_each_kind_is_a_table_row_and_exit_1(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    torch, jax, tf, keras = (matrices / f"{n}.toml" for n in ("torch", "jax", "tensorflow", "keras"))
    # Pythons: one the wheels have is missing, one Requires-Python (>=3.10) excludes is listed
    edit(torch, 'version = "2.14.0"\npython = ["3.10", "3.11", "3.12", "3.13", "3.14"]\n'
                'companions = { torchvision = "0.29.0" }',
         'version = "2.14.0"\npython = ["3.9", "3.10", "3.11", "3.12", "3.13"]\n'
         'companions = { torchvision = "0.29.9" }')
    # a companion's Python bound the wheels of torchvision 0.28.0 do not show
    edit(torch, 'companions = { torchvision = "0.28.0" }',
         'companions = { torchvision = "0.28.0" }\ncompanion_python = { torchvision = ["3.10", "3.11"] }')
    # an == pin of the default build
    edit(torch, '"nvidia-cudnn-cu13" = "9.24.0.43", "nvidia-cusparselt-cu13" = "0.8.1", "nvidia-nccl-cu13" = "2.30.7"',
         '"nvidia-cudnn-cu13" = "9.20.0.48", "nvidia-nccl-cu13" = "2.30.7"')
    # jax's plugin pin of an extra
    text = jax.read_text()
    at = text.index('extra = "cuda13"')
    jax.write_text(text[:at] + text[at:].replace('"jax-cuda13-plugin" = "0.11.0"', '"jax-cuda13-plugin" = "0.10.0"', 1))
    # TensorFlow's Keras pin and an and-cuda range
    edit(tf, 'requires = { keras = ">=3.12.0" }', 'requires = { keras = ">=3.10.0" }')
    edit(tf, '"nvidia-cudnn-cu12" = "<10.0,>=9.3.0.75"', '"nvidia-cudnn-cu12" = "<10.0,>=9.1.0.70"')
    # Keras: a Python its Requires-Python admits is missing
    edit(keras, 'version = "3.15.1"\npython = ["3.11", "3.12", "3.13", "3.14", "3.15"]',
         'version = "3.15.1"\npython = ["3.11", "3.12", "3.13", "3.14"]')
    # versions both ways: a release the index does not have, one it has without a row
    edit(keras, 'version = "3.6.0"', 'version = "3.6.9"')
    r = verify(matrices, index.url_for("/simple"))
    assert r.exit_code == 1, r.output
    assert r.stdout.splitlines()[1].split() == ["row", "fact", "data", "says", "index", "says"]
    rows = table(r.stdout)
    for want in (
        ["torch.toml torch 2.13.0", "Python with companion torchvision 0.28.0", "3.10, 3.11", "3.10, 3.11, 3.12, 3.13, 3.14"],
        ["torch.toml torch 2.14.0", "Python (wheel tags, Requires-Python)", "3.9, 3.10, 3.11, 3.12, 3.13",
         "3.10, 3.11, 3.12, 3.13, 3.14"],
        ["torch.toml torch 2.14.0", "Requires-Python", "admits 3.9, 3.10, 3.11, 3.12, 3.13", ">=3.10 (excludes 3.9)"],
        ["torch.toml torch 2.14.0", "companion torchvision 0.29.9 on the index", "released", "not found"],
        ["torch.toml torch 2.14.0 cu130", "pin nvidia-cudnn-cu13", "9.20.0.48", "9.24.0.43"],
        ["torch.toml torch 2.14.0 cu130", "pin nvidia-cusparselt-cu13", "-", "0.8.1"],
        ["jax.toml jax 0.11.0 cuda13 [cuda13]", "pin jax-cuda13-plugin", "0.10.0", "<=0.11.0,>=0.11.0"],
        ["jax.toml jax 0.11.0 cuda13 [cuda13]", "jax-cuda13-plugin 0.10.0 on the index", "released", "not found"],
        ["tensorflow.toml tensorflow 2.21.0", "requires keras", ">=3.10.0", ">=3.12.0"],
        ["tensorflow.toml tensorflow 2.21.0 cuda [and-cuda]", "pin nvidia-cudnn-cu12", "<10.0,>=9.1.0.70",
         "<10.0,>=9.3.0.75"],
        ["keras.toml keras 3.15.1", "Python (wheel tags, Requires-Python)", "3.11, 3.12, 3.13, 3.14",
         "3.11, 3.12, 3.13, 3.14, 3.15"],
        ["keras.toml keras 3.6.9", "on the index", "released", "not found"],
        ["keras.toml keras 3.6.0", "has a row", "no row", "released"],
    ):
        assert want in rows, (want, rows)
    assert len(rows) == 13, rows
    assert r.stdout.endswith(" fact(s) checked, 13 mismatch(es)\n")
    assert r.stderr.endswith("TIP: correct the rows named above from their sources, then run "
                             "`envsolve data --verify` again\n")
    assert f"ERROR: 13 fact(s) in {matrices} disagree with the index\n" in r.stderr


def test_a_release_whose_builds_are_all_on_a_find_links_page_is_not_held_to_the_index(
        index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    """jax 0.3 .. 0.4.17: jax is on the index, its jaxlib only on JAX's own page; the index cannot say
    which Pythons and companions such a release has, so they are not compared (its version still is)."""
    jax = matrices / "jax.toml"
    edit(jax, 'version = "0.11.0"\npython = ["3.12", "3.13", "3.14"]\ncompanions = { jaxlib = "0.11.0" }',
         'version = "0.11.0"\npython = ["3.9", "3.10"]\ncompanions = { jaxlib = "0.10.9" }')
    r = verify(matrices, index.url_for("/simple"), "--package", "jax")
    assert r.exit_code == 1 and any(row[0] == "jax.toml jax 0.11.0" for row in table(r.stdout))
    jax.write_text(jax.read_text().replace('[[build]]\nversion = "0.11.0"\n',
                                           '[[build]]\nversion = "0.11.0"\nfind_links = "https://example.invalid/r.html"\n'))
    r = verify(matrices, index.url_for("/simple"), "--package", "jax")
    assert r.exit_code == 0, r.output


def test_package_limits_the_check_to_one_framework(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    edit(matrices / "torch.toml", '"nvidia-nccl-cu13" = "2.30.7", "nvidia-nvshmem', '"nvidia-nccl-cu13" = "2.30.1", "nvidia-nvshmem')
    assert verify(matrices, index.url_for("/simple"), "--package", "keras").exit_code == 0
    index.clear_log()
    r = verify(matrices, index.url_for("/simple"), "--package", "torch")
    assert r.exit_code == 1
    assert table(r.stdout) == [["torch.toml torch 2.14.0 cu130", "pin nvidia-nccl-cu13", "2.30.1", "2.30.7"]]
    assert "/simple/keras/" not in [req.path for req, _ in index.log]


def test_unknown_package_is_exit_2(matrices: Path) -> None:
    r = verify(matrices, "http://127.0.0.1:1/simple", "--package", "numpy")
    assert r.exit_code == 2
    assert "ERROR: --package: numpy: is not something --verify checks" in r.stderr
    assert "TIP: pass one of: torch, tensorflow, jax, keras, onnxruntime, paddlepaddle, cupy, cudnn, cuda" in r.stderr


def test_a_companion_the_index_lacks_is_a_warning(httpserver: HTTPServer, matrices: Path) -> None:
    from tests.test_refresh import INDEX, JSON

    httpserver.no_handler_status_code = 404
    httpserver.expect_request("/simple/keras/").respond_with_data((INDEX / "simple" / "keras.json").read_bytes(),
                                                                  content_type=JSON)
    httpserver.expect_request("/simple/torch/").respond_with_data((INDEX / "simple" / "torch.json").read_bytes(),
                                                                  content_type=JSON)
    r = verify(matrices, httpserver.url_for("/simple"), "--package", "torch", "--package", "keras")
    httpserver.no_handler_status_code = 500
    assert r.exit_code == 0, r.output
    assert "warning: torchvision: not on this index, so its facts were not checked\n" in r.stdout


@pytest.mark.network
def test_the_shipped_matrices_agree_with_the_real_index(tmp_path: Path) -> None:
    """`envsolve data --verify` on the shipped data through pip's configured index: no mismatch."""
    from envsolve.config import pip_index_url
    from envsolve.data import load_dir
    from envsolve.errors import RefreshError
    from envsolve.index.client import IndexClient
    from envsolve.verify import report_text
    from envsolve.verify import verify as verify_rows
    from tests.test_refresh import REAL_ENV

    url = pip_index_url(REAL_ENV)
    if not url or not url.startswith(("http://", "https://")):
        pytest.skip("no http(s) package index configured")
    client = IndexClient(url, cache_dir=tmp_path, timeout=30, retries=2, backoff=0.5)
    try:
        report = verify_rows(client, load_dir(data_dir()), index_url=url)
    except RefreshError as e:
        if "cannot reach" in e.message or "did not answer" in e.message or "HTTP 5" in e.message:
            pytest.skip(f"index unreachable: {e.message}")
        raise
    assert not report.mismatches, report_text(report)
    assert report.checked > 500


def test_a_cudnn_release_on_the_index_needs_a_row(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    text = (matrices / "cudnn.toml").read_text()
    row = '[[release]]\nversion = "9.28.0"\ncuda_major = 12\n'
    at = text.index(row)
    (matrices / "cudnn.toml").write_text(text[:at] + text[text.index("[[release]]", at + 10):])
    r = verify(matrices, index.url_for("/simple"), "--package", "cudnn", "--package", "cuda")
    assert r.exit_code == 1, r.output
    assert table(r.stdout) == [["cudnn.toml cuDNN 9.28.0 (CUDA 12)", "has a row", "no row", "row"]]
    # the recorded index has no nvidia-cudnn-cu11 page: a warning, not a mismatch
    assert "warning: nvidia-cudnn-cu11: not on this index, so its facts were not checked\n" in r.stdout


def test_a_plugin_s_python_tags_bound_its_build(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    jax = matrices / "jax.toml"
    text = jax.read_text()
    at = text.index('extra = "cuda12"', text.index('version = "0.11.0"\nvariant = "cuda12"'))
    jax.write_text(text[:at] + 'python = ["3.12", "3.13"]\n' + text[at:])  # the plugin also has cp314 wheels
    r = verify(matrices, index.url_for("/simple"), "--package", "jax")
    assert r.exit_code == 1, r.output
    assert table(r.stdout) == [["jax.toml jax 0.11.0 cuda12 [cuda12]", "Python with jax-cuda12-plugin 0.11.0",
                                "3.12, 3.13", "3.12, 3.13, 3.14"]]


TF_WHEEL = Path(__file__).parent / "fixtures" / "index" / "wheels" / "tensorflow-2.21.0-cp313-cp313-manylinux_2_27_x86_64.whl"


def test_tensorflow_arch_lists_are_checked_against_the_wheel_s_build_info(index: HTTPServer,  # noqa: F811
                                                                            matrices: Path) -> None:
    from tests.test_wheel import ranged_handler

    index.expect_request(f"/files/{TF_WHEEL.name}").respond_with_handler(ranged_handler(TF_WHEEL.read_bytes()))
    assert verify(matrices, index.url_for("/simple"), "--package", "tensorflow").exit_code == 0
    tf = matrices / "tensorflow.toml"
    text = tf.read_text()
    at = text.index('version = "2.21.0"\nvariant = "cuda"')
    # compute_90 is SASS and PTX for 9.0: a row that reads it as PTX only is caught
    tf.write_text(text[:at] + text[at:].replace('archs = ["sm_60", "sm_70", "sm_80", "sm_89", "sm_90"]\nptx = ["sm_90"]',
                                                'archs = ["sm_60", "sm_70", "sm_80", "sm_89"]\nptx = ["sm_90"]', 1))
    r = verify(matrices, index.url_for("/simple"), "--package", "tensorflow")
    assert r.exit_code == 1, r.output
    assert table(r.stdout) == [
        ["tensorflow.toml tensorflow 2.21.0 cuda", "SASS (build_info.py)", "sm_60, sm_70, sm_80, sm_89",
         "sm_60, sm_70, sm_80, sm_89, sm_90"]]
    ranges = [req.headers.get("Range") for req, _ in index.log if req.path == f"/files/{TF_WHEEL.name}"]
    assert ranges and all(ranges)  # only byte ranges of the wheel were asked for



def test_a_torch_build_s_cudnn_is_its_wheel_s_cudnn_pin(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    edit(matrices / "torch.toml", 'cuda = "13.0"\ncudnn = "9.24.0.43"', 'cuda = "13.0"\ncudnn = "9.20.0.48"')
    r = verify(matrices, index.url_for("/simple"), "--package", "torch")
    assert r.exit_code == 1, r.output
    assert table(r.stdout) == [["torch.toml torch 2.14.0 cu130", "cuDNN", "9.20.0.48", "9.24.0.43"]]


def _page(name: str, files: dict[str, list[str]], yanked: tuple[str, ...] = ()) -> bytes:
    """A PEP 691 page of ``name``: version -> the CPython minors of its Linux x86_64 wheels."""
    import json

    rows = [{"filename": f"{name.replace('-', '_')}-{v}-cp{p.replace('.', '')}-cp{p.replace('.', '')}-"
                         "manylinux_2_27_x86_64.whl", "url": f"../../files/{name}-{v}-{p}.whl", "hashes": {},
             "yanked": v in yanked} for v, pythons in files.items() for p in pythons]
    return json.dumps({"meta": {"api-version": "1.1"}, "name": name, "files": rows}).encode()


def test_a_release_of_a_framework_or_its_main_distribution_without_a_row_is_a_mismatch_with_a_tip(
        httpserver: HTTPServer, matrices: Path) -> None:
    """onnxruntime and onnxruntime-gpu (the distribution of its GPU builds): each final release on the
    index newer than the oldest the data has, and absent from it, is named with a tip on adding it;
    an older release, a pre-release and a release yanked whole are not."""
    from envsolve.data import load_dir
    from tests.test_refresh import JSON

    m = load_dir(matrices)
    rels = {r.raw: list(r.python) for r in m.releases if r.package == "onnxruntime"}
    gpu = {b.dist_version or b.raw: list(b.python or rels[b.raw]) for b in m.builds
           if b.dist == "onnxruntime-gpu" and b.index == "pypi"}
    newest = list(rels.values())[-1]
    extra = {"1.0.0": newest, "9.0.0": newest, "9.1.0rc1": newest, "9.2.0": newest}
    httpserver.no_handler_status_code = 404
    httpserver.expect_request("/simple/onnxruntime/").respond_with_data(
        _page("onnxruntime", {**rels, **extra}, yanked=("9.2.0",)), content_type=JSON)
    httpserver.expect_request("/simple/onnxruntime-gpu/").respond_with_data(
        _page("onnxruntime-gpu", {**gpu, "1.0.0": newest, "9.0.0": newest, "9.1.0rc1": newest}), content_type=JSON)
    r = verify(matrices, httpserver.url_for("/simple"), "--package", "onnxruntime")
    httpserver.no_handler_status_code = 500
    assert r.exit_code == 1, r.output
    assert table(r.stdout) == [["onnxruntime.toml onnxruntime 9.0.0", "has a row", "no row", "released"],
                               ["onnxruntime.toml onnxruntime-gpu 9.0.0", "has a build", "no build", "released"]]
    last, last_gpu = max(rels, key=Version), max(gpu, key=Version)
    assert (f"tip: add onnxruntime 9.0.0: `envsolve refresh --package onnxruntime --write` writes its [[release]] "
            f"row from the index; model its [[build]] rows on onnxruntime {last}'s where the index has the same "
            "variants") in r.stdout
    assert (f'tip: add onnxruntime-gpu 9.0.0: a [[build]] of onnxruntime 9.0.0 with dist = "onnxruntime-gpu" in '
            f"onnxruntime.toml, modelled on onnxruntime-gpu {last_gpu}'s") in r.stdout
    assert r.stdout.endswith(" fact(s) checked, 2 mismatch(es)\n")


def test_a_mac_build_is_not_held_to_the_linux_wheels_pins(index: HTTPServer, matrices: Path) -> None:  # noqa: F811
    """torch's mps build is the default index's Mac wheels: the CUDA pins of its Linux wheel's metadata
    are not its facts (they were every pin a mismatch on the real index)."""
    torch = matrices / "torch.toml"
    torch.write_text(torch.read_text() + '\n[[build]]\nversion = "2.14.0"\nvariant = "mps"\naccelerator = "mps"\n'
                                         'index = "pypi"\nplatforms = ["darwin/arm64"]\n'
                                         'source = "package metadata of torch==2.14.0"\n')
    r = verify(matrices, index.url_for("/simple"), "--package", "torch")
    assert r.exit_code == 0, r.output
