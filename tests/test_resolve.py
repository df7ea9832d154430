"""The full resolve (uv) against a local index of fake wheels: no real index is needed."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from envsolve.errors import ResolveError
from envsolve.lock.resolve import Pin, resolve
from tests.fakeindex import Wheel, serve


def _wheels() -> list[Wheel]:
    return [Wheel("einops", "0.8.0", requires=["numpy"]), Wheel("numpy", "1.26.4"),
            Wheel("numpy", "2.3.0", python=">=3.13"), Wheel("filelock", "3.0"), Wheel("torch", "9.9.9"),
            Wheel("scipy", "1.11.4", requires=["numpy<1.27"])]


def test_transitive_closure_with_hashes_and_the_pytorch_pin_from_its_index_alone(
        httpserver: HTTPServer, tmp_path: Path) -> None:
    wheels = _wheels()
    default = serve(httpserver, wheels)
    torch = Wheel("torch", "2.7.1+cu126", requires=["filelock"])
    pt = serve(httpserver, [torch], prefix="/whl/cu126").rstrip("/")
    got = {r.name: r for r in resolve(python="3.12", pins=[Pin(name="torch", requirement="torch==2.7.1+cu126",
                                                                  index_url=pt)],
                                      pip=["einops"], default_index=default,
                                      environ={"ENVSOLVE_CACHE_DIR": str(tmp_path)})}
    assert sorted(got) == ["einops", "filelock", "numpy", "torch"]
    assert got["torch"].version == "2.7.1+cu126" and got["torch"].index_url == pt  # not the default's 9.9.9
    assert got["torch"].hashes == (torch.sha256,) and got["torch"].direct
    assert got["numpy"].version == "1.26.4" and not got["numpy"].direct  # Requires-Python keeps 2.3.0 out
    assert got["numpy"].index_url == "" and got["einops"].direct
    assert all(h.startswith("sha256:") for r in got.values() for h in r.hashes)


def test_newer_python_takes_the_newer_wheel(httpserver: HTTPServer, tmp_path: Path) -> None:
    default = serve(httpserver, _wheels())
    got = resolve(python="3.13", pins=[], pip=["numpy"], default_index=default,
                  environ={"ENVSOLVE_CACHE_DIR": str(tmp_path)})
    assert [(r.name, r.version) for r in got] == [("numpy", "2.3.0")]


def test_a_conflict_is_one_clear_error_naming_the_packages(httpserver: HTTPServer, tmp_path: Path) -> None:
    default = serve(httpserver, _wheels())
    with pytest.raises(ResolveError, match="cannot be installed together") as e:
        resolve(python="3.13", pins=[], pip=["scipy==1.11.4", "numpy>=2"], default_index=default,
                environ={"ENVSOLVE_CACHE_DIR": str(tmp_path)})
    assert "scipy" in e.value.message and "numpy" in e.value.message and e.value.exit_code == 1


def test_an_unreachable_index_is_named_with_the_ways_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr("time.sleep", slept.append)
    said: list[str] = []
    with pytest.raises(ResolveError) as e:
        resolve(python="3.12", pins=[], pip=["numpy"], default_index="http://bot:S3CRET@127.0.0.1:9/simple",
                environ={"ENVSOLVE_CACHE_DIR": str(tmp_path)}, warn=said.append, retries=2, backoff=0.5)
    assert "http://127.0.0.1:9/simple" in e.value.message
    assert e.value.tip is not None
    assert all(way in e.value.tip for way in ("--frameworks-only", "--offline", "ENVSOLVE_INDEX_PYPI", "PIP_INDEX_URL"))
    # each retry said (uv's own, silent, are off), when and which of how many
    assert said == [f"the package index http://127.0.0.1:9/simple did not answer (connection refused); trying again "
                    f"in {wait} s (retry {i} of 2)" for i, wait in ((1, 0.5), (2, 1))]
    assert slept == [0.5, 1.0]
    assert "S3CRET" not in e.value.message + "".join(said)


def test_a_flat_index_pin_is_routed_to_a_flat_explicit_index() -> None:
    # NVIDIA's JetPack wheel folders (domain.FLAT_INDEXES) go to uv as flat indexes, still explicit,
    # so only the routed name comes from them
    from envsolve.lock.resolve import _explicit_indexes

    url = "https://developer.download.nvidia.com/compute/redist/jp/v512/pytorch"
    uv = _explicit_indexes([Pin(name="torch", requirement="torch==2.1.0a0+41361538.nv23.06", index_url=url, flat=True),
                            Pin(name="numpy", requirement="numpy<2")])
    assert uv == {"sources": {"torch": {"index": "explicit-0"}},
                  "index": [{"name": "explicit-0", "url": url, "explicit": True, "format": "flat"}]}


@pytest.mark.parametrize(("status", "said"), [(401, "401 Unauthorized"), (403, "403 Forbidden")])
@pytest.mark.parametrize("refuses", ["page", "file"])
def test_an_index_that_refuses_the_credentials_is_named_once_with_how_to_give_them(
        httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: int, said: str,
        refuses: str) -> None:
    import re

    from werkzeug import Response

    if refuses == "page":  # uv: "hint: An index URL (...) could not be queried due to a lack of valid ..."
        httpserver.expect_request("/simple/numpy/").respond_with_response(Response("no", status=status))
    else:  # the page answers, the file it links does not: uv's "Failed to fetch" of that file
        w = Wheel("numpy", "1.26.4")
        httpserver.expect_request("/simple/numpy/").respond_with_data(
            f'<a href="/files/{w.filename}#{w.sha256.replace(":", "=")}">{w.filename}</a>', content_type="text/html")
        httpserver.expect_request(re.compile("/files/.*")).respond_with_response(Response("no", status=status))
    monkeypatch.setattr("time.sleep", lambda _: pytest.fail("a refused login was asked again"))
    warned: list[str] = []
    index = httpserver.url_for("/simple")
    with pytest.raises(ResolveError) as e:
        resolve(python="3.12", pins=[], pip=["numpy"], default_index=index.replace("://", "://bot:S3CRET@"),
                environ={"ENVSOLVE_CACHE_DIR": str(tmp_path)}, warn=warned.append, retries=2)
    refused = httpserver.url_for("/simple" if refuses == "page" else f"/files/{w.filename}")
    assert e.value.message == (f"the package index {index} refused the credentials (HTTP {said} for {refused}): "
                               "none were given for it, or they are not valid there")
    assert e.value.tip is not None and all(way in e.value.tip for way in ("~/.netrc", "[indexes]", "pip.conf"))
    assert warned == [] and "cannot be reached" not in e.value.message and "S3CRET" not in e.value.message
