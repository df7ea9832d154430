"""The data the matrix tests of Windows, macOS, XPU and MPS cells solve against: a copy of the
shipped data, whose rows publish torch for windows/amd64 and darwin/arm64 (its mps and macos
builds), its XPU builds with Intel's AOT targets, the Intel and Apple GPUs and NVIDIA's Windows
driver floors (it held made-up rows until those were curated)."""

from __future__ import annotations

import shutil
from pathlib import Path

from envsolve.data import data_dir


def hosts_data(root: Path) -> Path:
    """A copy of the shipped data, written under ``root``."""
    out = root / "matrices"
    shutil.copytree(data_dir(), out)
    return out
