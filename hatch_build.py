"""The wheel's build hook: the matrices' records checked and compiled once, at build time.

An installed envsolve's first run then reads them (:data:`envsolve.paths.SHIPPED_COMPILED`, msgpack)
instead of parsing and checking the TOML; :func:`envsolve.data.load` takes them only while the
shipped matrices and the code that checks them are the ones they were made from. A row that fails
its checks fails the build, naming it, as ``envsolve lock`` would. An editable install and a source
checkout ship none: their first run compiles into the user's cache.
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
        root = Path(self.root).resolve()
        sys.path.insert(0, str(root))  # this checkout's envsolve (msgspec, packaging, rtoml: build requires)
        try:
            from envsolve import data, paths
            from envsolve.errors import MatrixError
        finally:
            sys.path.remove(str(root))
        if not Path(data.__file__).resolve().is_relative_to(root):  # its name would match no install's code
            raise SystemExit(f"the build hook imported another envsolve ({data.__file__}), not {root}'s")
        made = tempfile.TemporaryDirectory(prefix="envsolve-compiled-")
        try:
            out = data.compile_into(Path(made.name), root / "matrices")
        except MatrixError as e:
            made.cleanup()
            raise SystemExit(f"envsolve's matrices fail their checks; no wheel built:\n{e}") from None
        self._made = made
        shipped = Path(paths.SHIPPED_COMPILED).resolve().relative_to(root)  # envsolve/_data/compiled
        build_data["force_include"][str(out)] = f"{shipped.as_posix()}/{out.name}"

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        made = getattr(self, "_made", None)
        if made is not None:
            made.cleanup()
