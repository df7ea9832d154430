"""A tiny PEP 503 index of fake wheels for offline tests of the full lock."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field

from pytest_httpserver import HTTPServer


@dataclass
class Wheel:
    name: str
    version: str
    requires: Sequence[str] = ()
    python: str = ""  # Requires-Python
    tag: str = "py3-none-any"
    data: bytes = field(default=b"", repr=False)

    @property
    def filename(self) -> str:
        return f"{self.name.replace('-', '_')}-{self.version}-{self.tag}.whl"

    @property
    def metadata(self) -> bytes:
        meta = ["Metadata-Version: 2.1", f"Name: {self.name}", f"Version: {self.version}"]
        meta += [f"Requires-Python: {self.python}"] if self.python else []
        meta += [f"Requires-Dist: {r}" for r in self.requires]
        return ("\n".join(meta) + "\n").encode()

    def build(self) -> bytes:
        dist = f"{self.name.replace('-', '_')}-{self.version}.dist-info"
        files = {f"{self.name.replace('-', '_')}/__init__.py": b"",
                 f"{dist}/METADATA": self.metadata,
                 f"{dist}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {self.tag}\n"
                 .encode()}
        record = "".join(f"{n},,\n" for n in files) + f"{dist}/RECORD,,\n"
        files[f"{dist}/RECORD"] = record.encode()
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            for n, b in files.items():
                z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), b)
        self.data = buf.getvalue()
        return self.data

    @property
    def sha256(self) -> str:
        return "sha256:" + hashlib.sha256(self.data or self.build()).hexdigest()


def serve(server: HTTPServer, wheels: Sequence[Wheel], prefix: str = "/simple") -> str:
    """Serve ``wheels`` as a PEP 503 index under ``prefix``; return the index URL."""
    by_name: dict[str, list[Wheel]] = {}
    for w in wheels:
        w.build()
        by_name.setdefault(w.name, []).append(w)
    links = "".join(f'<a href="{prefix}/{n}/">{n}</a>\n' for n in sorted(by_name))
    server.expect_request(f"{prefix}/").respond_with_data(f"<html><body>{links}</body></html>",
                                                            content_type="text/html")
    for name, ws in by_name.items():
        body = "".join(
            f'<a href="{prefix}/files/{w.filename}#sha256={w.sha256.removeprefix("sha256:")}"'
            + (f' data-requires-python="{w.python.replace(">", "&gt;").replace("<", "&lt;")}"' if w.python else "")
            + f' data-dist-info-metadata="sha256={hashlib.sha256(w.metadata).hexdigest()}"'
            + f">{w.filename}</a>\n" for w in ws)
        server.expect_request(f"{prefix}/{name}/").respond_with_data(f"<html><body>{body}</body></html>",
                                                                     content_type="text/html")
        for w in ws:
            server.expect_request(f"{prefix}/files/{w.filename}").respond_with_data(
                w.data, content_type="application/octet-stream")
            server.expect_request(f"{prefix}/files/{w.filename}.metadata").respond_with_data(
                w.metadata, content_type="application/octet-stream")  # PEP 658
    return server.url_for(prefix)
