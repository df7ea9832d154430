"""The wheel's build hook: the matrices' records checked and compiled once, at build time.

An installed envsolve's first run then reads them (``envsolve/_data/compiled/``, msgpack) instead of
parsing and checking 800 KB of TOML; :func:`envsolve.data.load` takes them only while the shipped
matrices and the code that checks them are the ones they were made from. A row that fails its checks
fails the build, naming it, as ``envsolve lock`` would. An editable install and a source checkout ship
none: their first run compiles into the user's cache.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CompiledMatrices(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel" or version == "editable":
            return
        sys.path.insert(0, self.root)  # this checkout's envsolve (msgspec, packaging, rtoml: build requires)
        try:
            from envsolve.data import compile_into
            from envsolve.errors import MatrixError
        finally:
            sys.path.remove(self.root)
        self._made = tempfile.TemporaryDirectory(prefix="envsolve-compiled-")
        try:
            out = compile_into(Path(self._made.name), Path(self.root) / "matrices")
        except MatrixError as e:
            raise SystemExit(f"envsolve's matrices fail their checks; no wheel built:\n{e}") from None
        build_data["force_include"][str(out)] = f"envsolve/_data/compiled/{out.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        made = getattr(self, "_made", None)
        if made is not None:
            made.cleanup()
