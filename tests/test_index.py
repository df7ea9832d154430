"""envsolve/index/: the one rule for a release's Pythons, metadata read for the target platform,
the Reader protocol steering takes, and the HTTP client's cache (CacheControl) and retries."""

from __future__ import annotations

import re
import socket
from collections.abc import Iterable
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from envsolve.errors import RefreshError
from envsolve.index import metadata as md_
from envsolve.index import pages as ix
from envsolve.index.client import IndexClient
from envsolve.lock.steer import steer
from envsolve.provider import Provider
from envsolve.spec import parse_spec

JSON = "application/vnd.pypi.simple.v1+json"


def wheel(name: str, **kw: object) -> ix.DistFile:
    return ix.DistFile(filename=name, url=f"https://files.invalid/{name}", **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- which Pythons


def test_one_rule_reads_tags_for_every_question() -> None:
    files = [wheel("x-1.0-cp312-cp312-manylinux_2_28_x86_64.whl"), wheel("x-1.0-cp313-cp313t-manylinux_2_28_x86_64.whl"),
             wheel("x-1.0-cp311-cp311-manylinux_2_28_aarch64.whl"), wheel("x-1.0-cp37-cp37m-manylinux1_x86_64.whl")]
    known = ("3.7", "3.11", "3.12", "3.13")
    assert ix.cpython_minors(files, known) == ("3.7", "3.12")
    assert ix.cpython_minors(files, known, platform="linux/arm64") == ("3.11",)
    assert ix.cpython_tag_minors(files) == {"3.7", "3.11", "3.12"}  # any platform, free-threaded aside
    assert ix.has_cpython_wheels(files) and not ix.has_cpython_wheels([wheel("k-3.0-py3-none-any.whl")])
    assert ix.wheel_python(files[0], "3.9") == "3.12" and ix.wheel_python(wheel("k-3.0-py3-none-any.whl"), "3.9") == "3.9"
    assert ix.installable_pythons(files, known, "", ["linux/amd64", "linux/arm64"]) == ()
    assert ix.installable_pythons([wheel("x-1.0.tar.gz")], known, ">=3.12", ["linux/amd64"]) == ("3.12", "3.13")


def test_a_release_whose_pythons_are_another_packages() -> None:
    jax = [wheel("jax-0.5.0-py3-none-any.whl", requires_python=">=3.11")]
    jaxlib = [wheel(f"jaxlib-0.5.0-{t}-{t}-manylinux2014_x86_64.whl") for t in ("cp310", "cp311", "cp312")]
    assert ix.release_pythons(jax, ("3.10", "3.11", "3.12"), jaxlib) == ("3.11", "3.12")


# ---------------------------------------------------------------------------- metadata for the target


ARM_ONLY = md_.Metadata(name="x", version="1", requires_dist=(
    'torch==2.8.0; platform_machine == "aarch64"', 'torch==2.9.1; platform_machine == "x86_64"'))


def test_requires_dist_is_evaluated_for_the_target_platform() -> None:
    def pins(platform: str) -> list[str]:
        return [str(r) for r in md_.requirements(ARM_ONLY, python="3.12", platform=platform)]  # type: ignore[arg-type]

    assert pins("linux/amd64") == ['torch==2.9.1; platform_machine == "x86_64"']
    assert pins("linux/arm64") == ['torch==2.8.0; platform_machine == "aarch64"']


class FakeReader:
    """A Reader without a network: what steering, verification and the survey all take."""

    index_url = "https://index.invalid/simple"
    warnings: list[str] = []

    def project(self, name: str, *, revalidate: bool = False) -> tuple[ix.DistFile, ...]:
        return (wheel("x-1-py3-none-any.whl"),) if name == "x" else ()

    def metadata(self, f: ix.DistFile) -> md_.Metadata | None:
        return ARM_ONLY

    def first_metadata(self, files: Iterable[ix.DistFile]) -> tuple[ix.DistFile, md_.Metadata] | None:
        return next(iter(files)), ARM_ONLY

    def wheel_member(self, f: ix.DistFile, pattern: str, what: str = "") -> str | None:
        return None


def test_steering_reads_the_requirements_of_the_targets_platform(real_graph: Provider) -> None:
    for platform, asked in (("linux/amd64", "==2.9.1"), ("linux/arm64", "==2.8.0")):
        spec = parse_spec(f'[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\nplatform = "{platform}"\n'
                          '[packages]\npip = ["x"]\n', "project.toml", real_graph)
        got = steer(spec, FakeReader(), real_graph.pythons(), real_graph.releases)
        assert [s.frameworks for s in got] == [(("torch", asked),)], platform


# ---------------------------------------------------------------------------- the client


PAGE = b'{"meta": {"api-version": "1.0"}, "files": [{"filename": "x-1-py3-none-any.whl", "url": "x-1-py3-none-any.whl"}]}'


def test_a_fresh_page_is_not_asked_again_and_a_stale_one_is_revalidated(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/simple/fresh/").respond_with_data(PAGE, content_type=JSON,
                                                                  headers={"Cache-Control": "max-age=600"})

    def etagged(request: Request) -> Response:
        if request.headers.get("If-None-Match") == '"v1"':
            return Response(status=304, headers={"ETag": '"v1"'})
        return Response(PAGE, content_type=JSON, headers={"ETag": '"v1"'})

    httpserver.expect_request("/simple/tagged/").respond_with_handler(etagged)
    for _ in range(2):
        client = IndexClient(httpserver.url_for("/simple"), cache_dir=tmp_path, backoff=0)
        assert [f.filename for n in ("fresh", "tagged") for f in client.project(n)] == ["x-1-py3-none-any.whl"] * 2
    assert [(r.path, s.status_code) for r, s in httpserver.log] == [
        ("/simple/fresh/", 200), ("/simple/tagged/", 200), ("/simple/tagged/", 304)]


def test_cache_first_reads_any_kept_page_and_revalidates_on_demand(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/simple/x/").respond_with_data(PAGE, content_type=JSON)  # no validators at all
    url = httpserver.url_for("/simple")
    IndexClient(url, cache_dir=tmp_path).project("x")
    lock = IndexClient(url, cache_dir=tmp_path, revalidate=False)
    lock.project("x")
    assert len(httpserver.log) == 1  # kept though HTTP would not cache it: a relock needs no network
    lock.project("x", revalidate=True)
    lock.project("x", revalidate=True)  # once per run
    assert len(httpserver.log) == 2
    offline = IndexClient(url, cache_dir=tmp_path, offline=True)
    assert offline.project("x", revalidate=True) and len(httpserver.log) == 2
    with pytest.raises(RefreshError, match=r"/simple/y/ is not in envsolve's cache, and --offline reads nothing"):
        offline.project("y")


def test_retries_wait_backoff_then_double_and_say_so(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    for _ in range(2):
        httpserver.expect_oneshot_request("/simple/x/").respond_with_data("busy", status=503)
    httpserver.expect_request("/simple/x/").respond_with_data(PAGE, content_type=JSON)
    said: list[str] = []
    IndexClient(httpserver.url_for("/simple"), backoff=0.5, retries=3, warn=said.append).project("x")
    assert slept == [0.5, 1.0]
    assert said == [f"{httpserver.url_for('/simple/x/')} answered HTTP 503; trying again in {s:g} s (retry {i} of 3)"
                    for i, s in ((1, 0.5), (2, 1.0))]


def test_a_refused_connection_is_said_before_each_retry_without_credentials(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("time.sleep", lambda _: None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nothing listens there
    said: list[str] = []
    client = IndexClient(f"http://bot:S3CRET@127.0.0.1:{port}/simple", retries=2, backoff=2,
                         warn=said.append)
    with pytest.raises(RefreshError) as e:
        client.project("x")
    assert said == [f"http://127.0.0.1:{port}/simple/x/ did not answer (connection refused); trying again in "
                    f"{s} s (retry {i} of 2)" for i, s in ((1, 2), (2, 4))]
    assert e.value.message == f"cannot reach the package index at http://127.0.0.1:{port}/simple (Connection refused; 3 tries)"
    assert "--index-url" in (e.value.tip or "") and "PIP_INDEX_URL" in (e.value.tip or "")
    assert "S3CRET" not in e.value.message + (e.value.tip or "") + "".join(said)


@pytest.mark.parametrize(("status", "said"), [(401, "401 Unauthorized"), (403, "403 Forbidden")])
def test_an_index_that_refuses_the_credentials_is_said_once_and_not_asked_again(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, status: int, said: str) -> None:
    monkeypatch.setattr("time.sleep", lambda _: pytest.fail("a refused login was asked again"))
    httpserver.expect_request("/simple/x/").respond_with_data("no", status=status)
    warned: list[str] = []
    client = IndexClient(httpserver.url_for("/simple").replace("://", "://bot:S3CRET@"), retries=3,
                         warn=warned.append)
    with pytest.raises(RefreshError) as e:
        client.project("x")
    index = httpserver.url_for("/simple")
    assert e.value.message == (f"the package index at {index} refused the credentials (HTTP {said} for "
                               f"{index}/x/): none were given for it, or they are not valid there")
    assert all(way in (e.value.tip or "") for way in ("~/.netrc", "[indexes]", "pip.conf"))
    assert warned == [] and len(httpserver.log) == 1 and "S3CRET" not in e.value.message


def test_a_refused_metadata_file_stops_the_search_instead_of_trying_the_next(httpserver: HTTPServer) -> None:
    files = [ix.DistFile(filename=f"x-1.0-cp31{i}-cp31{i}-manylinux_2_28_x86_64.whl",
                         url=httpserver.url_for(f"/files/x{i}.whl"), metadata=True) for i in range(3)]
    httpserver.expect_request(re.compile("/files/.*")).respond_with_data("no", status=401)
    client = IndexClient(httpserver.url_for("/simple"))
    with pytest.raises(RefreshError, match="refused the credentials"):
        client.first_metadata(files)
    assert len(httpserver.log) == 1 and client.warnings == []


@pytest.mark.parametrize("kind", ["file", "fifo"])
def test_a_cache_folder_that_is_no_folder_is_named_not_a_traceback(kind: str, tmp_path: Path) -> None:
    import os

    from envsolve.errors import EnvsolveError
    from envsolve.index.client import IndexClient

    cache = tmp_path / "cache"
    if kind == "file":
        cache.write_text("")
    else:
        os.mkfifo(cache)
    with pytest.raises(EnvsolveError, match="cache folder .* is not a folder"):
        IndexClient("http://127.0.0.1:9/simple", cache_dir=cache)
