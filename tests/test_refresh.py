"""envsolve refresh: index parsing (pure) and the client against recorded index answers.

The answers under tests/fixtures/index/ were recorded from a real index (see SOURCES.md) and are
served by a local HTTP server on 127.0.0.1; nothing here reaches the network except the one test
marked ``network``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.version import Version
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from envsolve.cli import main
from envsolve.data import data_dir, load_dir
from envsolve.errors import RefreshError
from envsolve.index import metadata as md_
from envsolve.index import pages as ix
from envsolve.index.client import IndexClient
from envsolve.provider import Provider
from envsolve.refresh import survey
from tests.conftest import FIXTURE, INDEX, JSON

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REAL_ENV = dict(os.environ)  # before the autouse fixture points every index at .invalid
TORCH_214 = "torch-2.14.0-cp312-cp312-manylinux_2_28_x86_64.whl"


def metadata(filename: str) -> md_.Metadata:
    return md_.parse_metadata((INDEX / "files" / f"{filename}.metadata").read_text())


def page(name: str, base: str = "http://127.0.0.1:1/simple/") -> tuple[ix.DistFile, ...]:
    path = INDEX / "simple" / f"{name}.json"
    return ix.parse_project_page(path.read_bytes(), JSON, f"{base}{name}/")


# ---------------------------------------------------------------------------- pure parsing


def test_json_page_gives_absolute_urls_hashes_and_metadata() -> None:
    files = page("torch")
    f = next(f for f in files if f.filename == TORCH_214)
    assert f.url == f"http://127.0.0.1:1/files/{TORCH_214}"
    assert f.metadata_url == f"http://127.0.0.1:1/files/{TORCH_214}.metadata"
    assert f.metadata is True and len(f.metadata_sha256) == 64 and len(f.sha256) == 64
    assert f.requires_python == ">=3.10"
    assert [str(v) for v in ix.releases(files)] == ["2.7.1", "2.13.0", "2.14.0"]


def test_html_page_reads_like_the_json_one_with_the_pep714_attribute() -> None:
    html = ix.parse_project_page((INDEX / "simple" / "keras.html").read_bytes(), "text/html",
                                 "http://127.0.0.1:1/simple/keras/")
    as_json = page("keras")
    assert {(f.filename, f.url, f.sha256, f.requires_python) for f in html} == \
        {(f.filename, f.url, f.sha256, f.requires_python) for f in as_json}
    wheel = next(f for f in html if f.filename == "keras-3.15.1-py3-none-any.whl")
    assert wheel.metadata is True and wheel.metadata_sha256 == hashlib.sha256(
        (INDEX / "files" / "keras-3.15.1-py3-none-any.whl.metadata").read_bytes()).hexdigest()


def test_a_page_of_another_kind_is_refused() -> None:
    with pytest.raises(ix.IndexFormatError, match="neither the JSON nor the HTML simple API"):
        ix.parse_project_page(b"PK\x03\x04", "application/zip", "http://127.0.0.1:1/simple/x/")


def test_python_minors_from_wheel_tags_skip_free_threaded_and_other_platforms() -> None:
    rels = ix.releases(page("torch"))
    known = ("3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "3.15")
    assert ix.cpython_minors(rels[Version("2.14.0")], known) == ("3.10", "3.11", "3.12", "3.13", "3.14")
    assert ix.cpython_minors(rels[Version("2.7.1")], known) == ("3.9", "3.10", "3.11", "3.12", "3.13")
    keras = ix.releases(page("keras"))[Version("3.15.1")]  # pure wheel: Requires-Python >=3.11
    assert ix.cpython_minors(keras, known) == ("3.11", "3.12", "3.13", "3.14", "3.15")


def test_python_minors_before_3_8_carry_the_pymalloc_abi_suffix() -> None:
    # torch 1.8.0's wheels as the index lists them: cp36m/cp37m ABIs until Python 3.8 dropped the "m"
    files = [ix.DistFile(filename=f"torch-1.8.0-{t}-manylinux1_x86_64.whl", url=f"https://x/{t}")
             for t in ("cp36-cp36m", "cp37-cp37m", "cp38-cp38", "cp39-cp39", "cp39-cp39t")]
    assert ix.cpython_minors(files, ("3.6", "3.7", "3.8", "3.9")) == ("3.6", "3.7", "3.8", "3.9")


def test_cuda_toolkit_style_pins_match_the_shipped_row() -> None:
    md = metadata(TORCH_214)
    facts = md_.bundled_facts(md_.requirements(md, python="3.12"))
    assert (facts.cuda, facts.cudnn, facts.nccl, facts.triton) == ("13.0", "9.24.0.43", "2.30.7", "~=3.8.0")
    shipped = next(b for b in load_dir(data_dir()).builds
                   if b.package == "torch" and b.raw == "2.14.0" and b.default)
    assert facts.pins == shipped.pins


def test_nvidia_cu12_style_pins() -> None:
    md = metadata("torch-2.9.0-cp312-cp312-manylinux_2_28_x86_64.whl")
    facts = md_.bundled_facts(md_.requirements(md, python="3.12"))
    assert (facts.cuda, facts.cudnn, facts.nccl, facts.triton) == ("12.8", "9.10.2.21", "2.27.5", "3.5.0")
    assert facts.cuda_runtime == "nvidia-cuda-runtime-cu12==12.8.90"
    shipped = next(b for b in load_dir(data_dir()).builds
                   if b.package == "torch" and b.raw == "2.9.0" and b.default)
    assert facts.pins == shipped.pins


def test_markers_are_evaluated_for_linux_x86_64_and_the_python() -> None:
    md = metadata(TORCH_214)
    assert md_.requirement_of(md_.requirements(md, python="3.14"), "triton") is not None
    assert md_.requirement_of(md_.requirements(md, python="3.15"), "triton") is None  # python_version < "3.15"


def test_shared_requirements_join_clauses_and_leave_out_what_constrains_nothing() -> None:
    from envsolve.refresh import shared_requirements

    md = md_.parse_metadata(
        "Name: fw\nVersion: 1\nRequires-Dist: numpy>=1.22\nRequires-Dist: ml_dtypes~=0.3.1\n"
        'Requires-Dist: numpy<2.0.0,>=1.26.0; python_version >= "3.12"\n'
        'Requires-Dist: numpy<2.0.0,>=1.23.5; python_version < "3.12"\nRequires-Dist: typing-extensions\n'
        "Requires-Dist: scipy>=1.9\nRequires-Dist: nvidia-cudnn-cu12==9.1.0.70\nRequires-Dist: cuda-toolkit==13.0.2\n"
        "Requires-Dist: protobuf>=3.20; extra == 'gpu'\n")
    newest = md_.requirements(md, python="3.13")
    assert shared_requirements(newest) == {"ml-dtypes": "~=0.3.1", "numpy": ">=1.22,<2.0.0,>=1.26.0"}
    assert shared_requirements(md_.requirements(md, python="3.11")) == {
        "ml-dtypes": "~=0.3.1", "numpy": ">=1.22,<2.0.0,>=1.23.5"}
    assert shared_requirements(newest, bundled=True) == {
        "cuda-toolkit": "==13.0.2", "ml-dtypes": "~=0.3.1", "numpy": ">=1.22,<2.0.0,>=1.26.0",
        "nvidia-cudnn-cu12": "==9.1.0.70"}
    assert shared_requirements(md_.requirements(md, python="3.13", extra="gpu"))["protobuf"] == ">=3.20"


def test_gpu_extras_and_their_ranges() -> None:
    tf = metadata("tensorflow-2.21.0-cp313-cp313-manylinux_2_27_x86_64.whl")
    assert md_.gpu_extras(tf, "3.13") == ("and-cuda",)
    assert md_.bundled_facts(md_.requirements(tf, python="3.13")).empty
    facts = md_.bundled_facts(md_.requirements(tf, python="3.13", extra="and-cuda"))
    assert (facts.cuda, facts.cudnn) == ("", "<10.0,>=9.3.0.75")
    jax = metadata("jax-0.11.0-py3-none-any.whl")
    assert md_.gpu_extras(jax, "3.12") == ("cuda", "cuda12", "cuda12-local", "cuda13", "cuda13-local")


# ---------------------------------------------------------------------------- the server


@pytest.fixture
def index(recorded_index: HTTPServer) -> HTTPServer:
    return recorded_index


@pytest.fixture
def matrices(tmp_path: Path) -> Path:
    root = tmp_path / "matrices"
    shutil.copytree(FIXTURE, root)
    return root


def refresh(matrices: Path, url: str, *args: str) -> object:
    return CliRunner().invoke(main, ["--matrices", str(matrices), "refresh", "--index-url", url,
                                     "--no-cache", "--backoff", "0", *args])


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.glob("*.toml"))}


def test_diff_lists_new_rows_and_curation_and_writes_nothing(index: HTTPServer, matrices: Path) -> None:
    before = snapshot(matrices)
    r = refresh(matrices, index.url_for("/simple"))
    assert r.exit_code == 0, r.output
    out = r.stdout
    assert "  torch 2.14.0 (2.7.1)\n" in out
    assert ("  + torch.toml [[release]] torch 2.13.0: python 3.10, 3.11, 3.12, 3.13, 3.14; "
            "companions torchvision 0.28.0; shared typing-extensions >=4.10.0\n") in out
    assert ("  + tensorflow.toml [[release]] tensorflow 2.21.0: python 3.10, 3.11, 3.12, 3.13; requires keras >=3.12.0; "
            "shared ml-dtypes <1.0.0,>=0.5.1, numpy >=1.26.0, protobuf <8.0.0,>=6.31.1, typing-extensions >=3.6.6\n") in out
    assert ("  + jax.toml [[release]] jax 0.11.0: python 3.12, 3.13, 3.14; companions jaxlib 0.11.0; "
            "shared ml-dtypes >=0.5.0, numpy >=2.1\n") in out
    assert "  + keras.toml [[release]] keras 3.15.1: python 3.11, 3.12, 3.13\n" in out
    assert ("  - torch 2.14.0 cu130 (the default build): CUDA 13.0, cuDNN 9.24.0.43, NCCL 2.30.7, triton ~=3.8.0; "
            "pins cuda-toolkit==13.0.3, nvidia-cudnn-cu13==9.24.0.43, nvidia-cusparselt-cu13==0.8.1, "
            "nvidia-nccl-cu13==2.30.7, nvidia-nvshmem-cu13==3.4.5; its arch list is not in the package metadata\n") in out
    assert ("  - torchvision 0.29.0: the index serves no metadata file, so which torch release it pairs with "
            "needs curation\n") in out
    assert "  - CUDA 12.9 (nvidia-cuda-runtime-cu12 12.9.79): cuda.toml has no 12.9 toolkit" in out
    assert "  - cuDNN 9.28.0 for CUDA 12 (nvidia-cudnn-cu12 9.28.0.42) is not in cudnn.toml" in out
    assert out.endswith("6 new row(s); run `envsolve refresh --write` to add them\n")
    assert "refresh: " not in r.stderr  # stderr is no terminal: no progress lines
    assert snapshot(matrices) == before
    told = refresh(matrices, index.url_for("/simple"), "-v")  # -v: the progress lines, and what is read
    assert told.exit_code == 0 and told.stdout == out
    assert "refresh: reading torch (1/15)" in told.stderr
    assert "refresh: comparing torch's releases with the matrices" in told.stderr
    assert f"index: {index.url_for('/simple')} (from --index-url)" in told.stderr
    assert "cache: none (--no-cache)" in told.stderr
    assert "answer(s) from the cache, " in told.stderr


def test_write_adds_valid_sourced_rows_as_a_new_data_version(index: HTTPServer, matrices: Path) -> None:
    before = snapshot(matrices)
    r = refresh(matrices, index.url_for("/simple"), "--write", "--data-version", "2026-11-22")
    assert r.exit_code == 0, r.output
    assert f"wrote {matrices / 'torch.toml'}" in r.stdout
    after = snapshot(matrices)
    changed = {n for n in after if after[n] != before[n]}
    assert changed == {"jax.toml", "keras.toml", "tensorflow.toml", "torch.toml"}
    m = load_dir(matrices)
    assert m.data_version == "2026-11-22"
    torch = tomllib.loads(after["torch.toml"].decode())
    assert torch["data_version"] == "2026-11-22"
    new = {r["version"]: r for r in torch["release"]}
    assert new["2.13.0"]["source"] == "package metadata of torch==2.13.0"
    assert new["2.13.0"]["companions"] == {"torchvision": "0.28.0"}
    # what other frameworks also require, off the wheel's Requires-Dist (its CUDA libraries are the build's)
    assert new["2.13.0"]["shared"] == {"typing-extensions": ">=4.10.0"}
    tf = {r["version"]: r for r in tomllib.loads(after["tensorflow.toml"].decode())["release"]}["2.21.0"]
    assert tf["shared"] == {"ml-dtypes": "<1.0.0,>=0.5.1", "numpy": ">=1.26.0", "protobuf": "<8.0.0,>=6.31.1",
                            "typing-extensions": ">=3.6.6"}
    keras = {r["version"]: r for r in tomllib.loads(after["keras.toml"].decode())["release"]}["3.15.1"]
    assert "shared" not in keras  # its numpy and ml-dtypes are unversioned: they constrain nothing
    assert "needs curation" in new["2.14.0"]["note"]
    assert not any(b["version"] in ("2.13.0", "2.14.0") for b in torch["build"])  # arch lists unknown
    jax_cpu = next(b for b in m.builds if b.package == "jax" and b.raw == "0.11.0")
    assert (jax_cpu.variant, jax_cpu.default, dict(jax_cpu.pins)) == ("cpu", True, {"jaxlib": "<=0.11.0,>=0.11.0"})
    assert tomllib.loads(after["cuda.toml"].decode())["data_version"] == "2000-01-01"
    Provider(m)  # the solver's graph still builds from the written data
    again = refresh(matrices, index.url_for("/simple"))
    assert again.exit_code == 0 and "new rows:" not in again.stdout


def test_changed_python_of_a_known_release_is_reported_not_rewritten(index: HTTPServer, matrices: Path) -> None:
    path = matrices / "torch.toml"
    text = path.read_text()
    row = 'version = "2.7.1"\npython = [\n    "3.9",\n    "3.10",\n    "3.11",\n    "3.12",\n    "3.13",\n]'
    assert row in text
    path.write_text(text.replace(row, 'version = "2.7.1"\npython = ["3.10", "3.11", "3.12"]'))
    before = snapshot(matrices)
    plan = survey(IndexClient(index.url_for("/simple"), backoff=0), load_dir(matrices), ["torch"])
    assert [f.text for f in plan.findings if f.kind == "changed"] == [
        "torch 2.7.1: the index has Linux x86_64 wheels for Python 3.9, 3.10, 3.11, 3.12, 3.13; "
        "the matrices say 3.10, 3.11, 3.12"]
    assert not any(r.label == "torch 2.7.1" for r in plan.rows)
    assert snapshot(matrices) == before


def test_missing_project_is_exit_1(index: HTTPServer, matrices: Path) -> None:
    r = refresh(matrices, index.url_for("/simple"), "--package", "no-such-project", "--write")
    assert r.exit_code == 1
    assert r.stderr.endswith(
        f"ERROR: the package index at {index.url_for('/simple')} has no project 'no-such-project'\n"
        "TIP: check the name given to --package, or use an index that carries it (--index-url)\n")


def test_server_error_is_retried_then_succeeds(httpserver: HTTPServer, matrices: Path) -> None:
    body = (INDEX / "simple" / "triton.json").read_bytes()
    httpserver.expect_oneshot_request("/simple/triton/").respond_with_data("busy", status=500)
    httpserver.expect_request("/simple/triton/").respond_with_data(body, content_type=JSON)
    r = refresh(matrices, httpserver.url_for("/simple"), "--package", "triton")
    assert r.exit_code == 0, r.output
    assert "  triton 3.7.1 (-)\n" in r.stdout
    assert [req.path for req, _ in httpserver.log] == ["/simple/triton/", "/simple/triton/"]
    # a retry is a warning, said without -v and when stderr is no terminal (a line in a CI log)
    assert (f"WARNING: {httpserver.url_for('/simple/triton/')} answered HTTP 500; trying again in 0 s "
            "(retry 1 of 3)\n") in r.stderr


def test_quiet_hides_the_retry_warning_but_not_the_product(httpserver: HTTPServer, matrices: Path) -> None:
    body = (INDEX / "simple" / "triton.json").read_bytes()
    httpserver.expect_oneshot_request("/simple/triton/").respond_with_data("busy", status=500)
    httpserver.expect_request("/simple/triton/").respond_with_data(body, content_type=JSON)
    r = refresh(matrices, httpserver.url_for("/simple"), "--package", "triton", "-q")
    assert r.exit_code == 0, r.output
    assert "  triton 3.7.1 (-)\n" in r.stdout
    assert r.stderr == ""


def test_server_error_that_persists_is_exit_1(httpserver: HTTPServer, matrices: Path) -> None:
    httpserver.expect_request("/simple/triton/").respond_with_data("down", status=503)
    r = refresh(matrices, httpserver.url_for("/simple"), "--package", "triton", "--retries", "2")
    assert r.exit_code == 1
    assert f"ERROR: the package index answered HTTP 503 for {httpserver.url_for('/simple/triton/')}" in r.stderr
    assert len(httpserver.log) == 3


def test_timeout_is_exit_1(matrices: Path) -> None:
    with socket.socket() as silent:  # accepts connections (backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/simple"
        r = refresh(matrices, url, "--package", "triton", "--timeout", "0.2", "--retries", "1")
    assert r.exit_code == 1
    assert f"ERROR: the package index at {url} did not answer within 0.2 s" in r.stderr
    assert "(2 tries)" in r.stderr or "; 2 tries)" in r.stderr


def test_unreachable_index_is_exit_1_and_writes_nothing(matrices: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    before = snapshot(matrices)
    r = refresh(matrices, f"http://127.0.0.1:{port}/simple", "--write", "--retries", "0")
    assert r.exit_code == 1
    assert f"ERROR: cannot reach the package index at http://127.0.0.1:{port}/simple" in r.stderr
    assert "TIP: check the network or proxy" in r.stderr
    assert snapshot(matrices) == before


def test_metadata_hash_mismatch_skips_that_file_and_keeps_the_rest(index: HTTPServer, matrices: Path) -> None:
    name = "keras-3.15.1-py3-none-any.whl.metadata"
    altered = (INDEX / "files" / name).read_bytes() + b"Requires-Dist: evil\n"
    server = index
    server.handlers.clear()
    server.expect_request("/simple/keras/").respond_with_data((INDEX / "simple" / "keras.json").read_bytes(),
                                                               content_type=JSON)
    server.expect_request(f"/files/{name}").respond_with_data(altered)
    server.expect_request("/simple/jax/").respond_with_data((INDEX / "simple" / "jax.json").read_bytes(),
                                                             content_type=JSON)
    server.expect_request("/simple/jaxlib/").respond_with_data((INDEX / "simple" / "jaxlib.json").read_bytes(),
                                                                content_type=JSON)
    jax_md = "jax-0.11.0-py3-none-any.whl.metadata"
    server.expect_request(f"/files/{jax_md}").respond_with_data((INDEX / "files" / jax_md).read_bytes())
    r = refresh(matrices, server.url_for("/simple"), "--package", "keras", "--package", "jax", "--write",
                "--data-version", "2026-11-22")
    assert r.exit_code == 0, r.output
    assert ("WARNING: keras-3.15.1-py3-none-any.whl: the metadata file of keras-3.15.1-py3-none-any.whl does "
            "not match the sha256 the index gives for it") in r.stderr
    keras = (matrices / "keras.toml").read_text()
    assert 'version = "3.15.1"' in keras and "evil" not in keras
    assert "needs curation: the index serves no metadata file" in keras  # the altered file was not used
    jax = load_dir(matrices)
    assert any(b.package == "jax" and b.raw == "0.11.0" for b in jax.builds)  # read from the other files


def test_missing_companion_is_a_warning_and_the_framework_is_still_read(httpserver: HTTPServer,
                                                                         matrices: Path) -> None:
    httpserver.no_handler_status_code = 404
    httpserver.expect_request("/simple/torch/").respond_with_data((INDEX / "simple" / "torch.json").read_bytes(),
                                                                  content_type=JSON)
    for f in sorted((INDEX / "files").glob("torch-*.metadata")):
        httpserver.expect_request(f"/files/{f.name}").respond_with_data(f.read_bytes())
    r = refresh(matrices, httpserver.url_for("/simple"), "--package", "torch")
    httpserver.no_handler_status_code = 500
    assert r.exit_code == 0, r.output
    assert ("WARNING: torchvision (a companion of the frameworks asked for) was not read: the package index at "
            f"{httpserver.url_for('/simple')} has no project 'torchvision'\n") in r.stderr
    assert "torchaudio (a companion of the frameworks asked for) was not read" in r.stderr
    assert ("  + torch.toml [[release]] torch 2.13.0: python 3.10, 3.11, 3.12, 3.13, 3.14; "
            "shared typing-extensions >=4.10.0\n") in r.stdout


def test_diff_exit_code_is_1_when_there_are_changes(index: HTTPServer, matrices: Path) -> None:
    r = refresh(matrices, index.url_for("/simple"), "--package", "keras", "--exit-code")
    assert r.exit_code == 1
    assert "  + keras.toml [[release]] keras 3.15.1" in r.stdout
    assert "ERROR: the index has 1 new row(s) and 0 change(s)" in r.stderr
    assert refresh(matrices, index.url_for("/simple"), "--package", "keras").exit_code == 0
    refresh(matrices, index.url_for("/simple"), "--package", "keras", "--write")
    again = refresh(matrices, index.url_for("/simple"), "--package", "keras", "--exit-code")
    assert again.exit_code == 0, again.output


def test_cache_revalidates_pages_with_etag_and_reuses_hashed_metadata(
        httpserver: HTTPServer, matrices: Path, tmp_path: Path) -> None:
    httpserver.no_handler_status_code = 404
    body = (INDEX / "simple" / "keras.json").read_bytes()

    def keras_page(request: Request) -> Response:
        if request.headers.get("If-None-Match") == '"v1"':
            return Response(status=304, headers={"ETag": '"v1"'})
        return Response(body, content_type=JSON, headers={"ETag": '"v1"'})

    httpserver.expect_request("/simple/keras/").respond_with_handler(keras_page)
    name = "keras-3.15.1-py3-none-any.whl.metadata"
    httpserver.expect_request(f"/files/{name}").respond_with_data((INDEX / "files" / name).read_bytes())
    args = ["--matrices", str(matrices), "refresh", "--index-url", httpserver.url_for("/simple"),
            "--package", "keras", "--cache-dir", str(tmp_path / "cache")]
    first = CliRunner().invoke(main, args)
    second = CliRunner().invoke(main, args)
    httpserver.no_handler_status_code = 500
    assert first.exit_code == 0 and second.exit_code == 0
    assert first.stdout == second.stdout
    statuses = [(req.path, resp.status_code) for req, resp in httpserver.log]
    assert statuses == [("/simple/keras/", 200), (f"/files/{name}", 200), ("/simple/keras/", 304)]


def test_index_url_comes_from_pip_index_url(index: HTTPServer, matrices: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ENVSOLVE_INDEX_PYPI")
    monkeypatch.setenv("PIP_INDEX_URL", index.url_for("/simple"))
    r = CliRunner().invoke(main, ["--matrices", str(matrices), "refresh", "--no-cache", "--package", "triton"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"index: {index.url_for('/simple')}\n")


def test_index_url_must_be_http(matrices: Path) -> None:
    r = refresh(matrices, "file:///srv/simple")
    assert r.exit_code == 2
    assert "ERROR: index URL 'file:///srv/simple' is not an http(s) URL" in r.stderr


def test_bad_data_version_is_exit_2(matrices: Path) -> None:
    r = refresh(matrices, "http://index.invalid/simple", "--write", "--data-version", "yesterday")
    assert r.exit_code == 2 and "--data-version: yesterday: is not a date such as 2026-11-22" in r.stderr


# ---------------------------------------------------------------------------- lock and data


def test_lock_warns_when_the_lock_on_disk_has_older_data(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n')
    run = ["--matrices", str(FIXTURE), "lock", str(spec)]
    assert CliRunner().invoke(main, run).exit_code == 0
    lock = tmp_path / "envsolve.lock"
    assert "WARNING" not in CliRunner().invoke(main, run).stderr
    lock.write_text(lock.read_text().replace('data_version = "2000-01-01"', 'data_version = "1999-12-31"'))
    r = CliRunner().invoke(main, run)
    assert r.exit_code == 0
    assert (f"WARNING: {lock} was made with data 1999-12-31; the installed data is 2000-01-01, "
            "so the lock may change (see `envsolve data`).") in r.stderr


def test_data_shows_the_newest_companions_and_cuda() -> None:
    r = CliRunner().invoke(main, ["--matrices", str(FIXTURE), "data"])
    assert r.exit_code == 0
    for line in ("  newest torchvision: 0.22.1", "  newest jaxlib: 0.4.30", "  newest CUDA toolkit: 12.8.0",
                 "  newest cuDNN for CUDA 12: 9.7.1"):
        assert line + "\n" in r.stdout


# ---------------------------------------------------------------------------- the real index


@pytest.mark.network
def test_real_index_has_keras_with_metadata(tmp_path: Path) -> None:
    """Reads one small project through pip's configured index; skips when it cannot be reached."""
    from envsolve.config import pip_index_url

    url = pip_index_url(REAL_ENV)
    if not url or not url.startswith(("http://", "https://")):
        pytest.skip("no http(s) package index configured")
    client = IndexClient(url, cache_dir=tmp_path, timeout=20, retries=1, backoff=0.5)
    try:
        plan = survey(client, load_dir(data_dir()), ["keras"])
    except RefreshError as e:
        if "cannot reach" in e.message or "did not answer" in e.message or "HTTP 5" in e.message:
            pytest.skip(f"index unreachable: {e.message}")
        raise
    newest = dict((n, v) for n, v, _ in plan.newest)["keras"]
    assert Version(newest) >= Version("3.15.1")


# ---------------------------------------------------------------------------- writing rows


def test_rows_go_after_the_last_run_of_their_table_and_nothing_else_moves() -> None:
    from envsolve.curate import Row, row_text, with_rows

    text = (data_dir() / "torch.toml").read_text()  # its legacy [[release]] rows follow the builds
    row = Row(file="torch.toml", table="release", label="torch 9.9.9", fields=(
        ("version", "9.9.9"), ("python", ["3.12"]), ("companions", {"torchvision": "9.9.9", "a-b": "1"}),
        ("note", 'a "quoted" word'), ("source", "package metadata of torch==9.9.9")))
    got = with_rows(text, [row], "9999-01-01")
    block = row_text(row)
    assert block == ('[[release]]\nversion = "9.9.9"\npython = ["3.12"]\n'
                     'companions = { torchvision = "9.9.9", "a-b" = "1" }\nnote = "a \\"quoted\\" word"\n'
                     'source = "package metadata of torch==9.9.9"\n')
    last = text.rindex("[[release]]")
    end = text.index("\n\n", last) + 1
    own = tomllib.loads(text)["data_version"]  # torch.toml's own date (another file may be newer)
    assert got == (text[:end] + "\n" + block + text[end:]).replace(
        f'data_version = "{own}"', 'data_version = "9999-01-01"', 1)


def test_a_row_goes_before_the_comments_that_open_the_next_section() -> None:
    from envsolve.curate import Row, with_rows

    text = ('schema = 1\ndata_version = "2000-01-01"\n\n[[release]]\nversion = "1"\n\n[release.companions]\n'
            'x = "1"\n# builds\n[[build]]\nversion = "1"\n')
    row = Row(file="t.toml", table="release", label="t 2", fields=(("version", "2"),))
    assert with_rows(text, [row], "1999-01-01") == (
        'schema = 1\ndata_version = "2000-01-01"\n\n[[release]]\nversion = "1"\n\n[release.companions]\n'
        'x = "1"\n\n[[release]]\nversion = "2"\n\n# builds\n[[build]]\nversion = "1"\n')


def test_fields_go_into_the_rows_they_name_before_source_and_nothing_else_moves() -> None:
    from envsolve.curate import with_fields

    text = ('schema = 1  # head\n\n[[release]]\nversion = "1"\n# a comment inside the row\n'
            'python = [\n  "3.12",\n]\nsource = "package metadata of t==1"\nnote = "n"\n\n'
            '# builds\n[[build]]\nversion = "1"\nsource = "s"\n\n'
            '# legacy releases follow the builds\n[[release]]\nversion = "0.9"\nsource = "https://x"\n\n'
            '[[release]]\nversion = "0.8"\n')
    seen: list[str] = []

    def fields(row: dict[str, object]) -> dict[str, object]:
        seen.append(str(row["version"]))
        if row["version"] == "1":
            return {"shared": {"ml-dtypes": "~=0.3.1", "numpy": "<2.0.0,>=1.23.5"}}
        if row["version"] == "0.9":
            return {"source": "https://x; shared: Requires-Dist of t-0.9.whl", "shared": {"numpy": ">=1"}}
        return {"shared": {"numpy": ">=0.8"}} if row["version"] == "0.8" else {}

    got = with_fields(text, "release", fields)
    assert seen == ["1", "0.9", "0.8"]  # every [[release]] row, in file order; no [[build]] row
    assert got == text.replace(
        'source = "package metadata of t==1"',
        'shared = { "ml-dtypes" = "~=0.3.1", numpy = "<2.0.0,>=1.23.5" }\nsource = "package metadata of t==1"').replace(
        'source = "https://x"', 'shared = { numpy = ">=1" }\nsource = "https://x; shared: Requires-Dist of t-0.9.whl"').replace(
        'version = "0.8"\n', 'version = "0.8"\nshared = { numpy = ">=0.8" }\n')
    assert with_fields(text, "release", lambda row: {}) == text
