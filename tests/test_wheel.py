"""Reading a wheel's METADATA with HTTP range requests (envsolve.wheel, IndexClient.wheel_metadata).

The wheel is tests/fixtures/index/wheels/tomli_w-1.2.0-py3-none-any.whl, a real wheel from the
package index (see tests/fixtures/index/SOURCES.md), served by a local HTTP server with and
without support for byte ranges.
"""

from __future__ import annotations

import hashlib
import re
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request, Response

from envsolve.index import pages as ix
from envsolve.index import wheel
from envsolve.index.client import IndexClient

WHEEL = Path(__file__).parent / "fixtures" / "index" / "wheels" / "tomli_w-1.2.0-py3-none-any.whl"
BLOB = WHEEL.read_bytes()
METADATA = zipfile.ZipFile(WHEEL).read("tomli_w-1.2.0.dist-info/METADATA").decode()


def ranged_handler(blob: bytes) -> Callable[[Request], Response]:
    """Serves ``blob`` honouring one `Range: bytes=a-b` or `bytes=-n` (RFC 9110), as file hosts do."""
    def handler(request: Request) -> Response:
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", request.headers.get("Range", ""))
        if m is None:
            return Response(blob, content_type="application/octet-stream")
        if m.group(1):
            start, end = int(m.group(1)), min(int(m.group(2) or len(blob) - 1), len(blob) - 1)
        else:
            start, end = max(0, len(blob) - int(m.group(2))), len(blob) - 1
        return Response(blob[start:end + 1], status=206, content_type="application/octet-stream",
                        headers={"Content-Range": f"bytes {start}-{end}/{len(blob)}"})

    return handler


ranged = ranged_handler(BLOB)


def dist(server: HTTPServer) -> ix.DistFile:
    return ix.DistFile(filename=WHEEL.name, url=server.url_for(f"/files/{WHEEL.name}"),
                       sha256=hashlib.sha256(BLOB).hexdigest(), metadata=False)


def test_the_zip_structure_gives_the_metadata_member_without_the_rest() -> None:
    tail_start = len(BLOB) - 200
    offset, size = wheel.central_directory(BLOB[tail_start:], tail_start)
    member = wheel.metadata_member(BLOB[offset:offset + size])
    assert (member.name, member.method) == ("tomli_w-1.2.0.dist-info/METADATA", 8)
    chunk = BLOB[member.header_offset:member.header_offset + wheel.member_bytes(member)]
    assert wheel.metadata_text(member, chunk) == METADATA
    with pytest.raises(wheel.WheelFormatError, match="does not match its CRC-32|does not inflate"):
        at = 30 + len(member.name) + 100  # inside the compressed data
        wheel.metadata_text(member, chunk[:at] + bytes([chunk[at] ^ 0xFF]) + chunk[at + 1:])
    with pytest.raises(wheel.WheelFormatError, match="no end-of-central-directory record"):
        wheel.central_directory(BLOB[:100], 0)


@pytest.mark.parametrize("tail", [wheel.TAIL, 100])  # the directory inside the first answer, or not
def test_metadata_is_read_with_range_requests_only(httpserver: HTTPServer, tail: int,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wheel, "TAIL", tail)
    httpserver.expect_request(f"/files/{WHEEL.name}.metadata").respond_with_data("", status=404)
    httpserver.expect_request(f"/files/{WHEEL.name}").respond_with_handler(ranged)
    client = IndexClient(httpserver.url_for("/simple"), backoff=0)
    md = client.metadata(ix.DistFile(filename=WHEEL.name, url=httpserver.url_for(f"/files/{WHEEL.name}")))
    assert md is not None and (md.name, md.version, md.requires_python) == ("tomli_w", "1.2.0", ">=3.9")
    ranges = [req.headers.get("Range") for req, _ in httpserver.log if req.path.endswith(".whl")]
    assert all(ranges) and [resp.status_code for req, resp in httpserver.log if req.path.endswith(".whl")] == \
        [206] * len(ranges)
    assert len(ranges) == (3 if tail == 100 else 2)
    assert client.warnings == []


def test_a_server_without_ranges_is_a_warning_not_a_download(httpserver: HTTPServer) -> None:
    httpserver.expect_request(f"/files/{WHEEL.name}").respond_with_data(BLOB)  # ignores Range
    client = IndexClient(httpserver.url_for("/simple"), backoff=0)
    assert client.metadata(dist(httpserver)) is None
    assert client.warnings == [f"{WHEEL.name}: the server does not serve byte ranges and no metadata file, so "
                               "its metadata was not read (wheels are never downloaded whole)"]
    assert len(httpserver.log) == 1  # nothing after the first answer showed ranges are not served


def test_range_read_metadata_is_cached_by_the_wheel_hash(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request(f"/files/{WHEEL.name}").respond_with_handler(ranged)
    first = IndexClient(httpserver.url_for("/simple"), cache_dir=tmp_path, backoff=0).metadata(dist(httpserver))
    asked = len(httpserver.log)
    again = IndexClient(httpserver.url_for("/simple"), cache_dir=tmp_path, backoff=0).metadata(dist(httpserver))
    assert first == again and first is not None and first.name == "tomli_w"
    assert len(httpserver.log) == asked  # answered from the cache, no request
    cached = list((tmp_path / "index" / "members").glob(f"{hashlib.sha256(BLOB).hexdigest()}-*.txt"))
    assert [p.read_text() for p in cached] == [METADATA]


def test_a_wheel_that_fails_is_skipped_for_the_next_one(httpserver: HTTPServer) -> None:
    broken = WHEEL.name.replace("py3-none-any", "cp313-cp313-manylinux_2_28_x86_64")
    httpserver.expect_request(f"/files/{broken}").respond_with_data("down", status=500)
    httpserver.expect_request(f"/files/{WHEEL.name}").respond_with_handler(ranged)
    client = IndexClient(httpserver.url_for("/simple"), backoff=0, retries=1)
    files = [ix.DistFile(filename=broken, url=httpserver.url_for(f"/files/{broken}"), metadata=False),
             dist(httpserver)]
    got = client.first_metadata(files)
    assert got is not None and got[0].filename == WHEEL.name and got[1].version == "1.2.0"
    assert client.warnings == [f"{broken}: the package index answered HTTP 500 for "
                               f"{httpserver.url_for(f'/files/{broken}')} (bytes -{wheel.TAIL}); skipped"]
