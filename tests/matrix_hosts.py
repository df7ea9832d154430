"""A copy of the shipped data with made-up rows for Windows and macOS cells of a matrix (torch
2.7.1's cpu and cu128 builds published for windows/amd64, its cpu build for darwin/arm64, an MPS
build for Apple silicon, an XPU build with Intel AOT targets, Intel and Apple [[arch]] rows and
the Windows floor of CUDA 12's minor-version compatibility), so the matrix tests do not wait for
the curated rows. Every row says it is made up."""

from __future__ import annotations

import shutil
from pathlib import Path

from envsolve.data import data_dir

MADE_UP = 'source = "tests/matrix_hosts.py: a made-up row"'

_PLATFORMS = f'''
[[wheel]]
package = "torch"
platform = "windows/amd64"
index = "pytorch"
versions = "==2.7.1"
variants = ["cpu", "cu128"]
{MADE_UP}

[[wheel]]
package = "torch"
platform = "darwin/arm64"
index = "pytorch"
versions = "==2.7.1"
variants = ["cpu"]
{MADE_UP}
'''

_TORCH = f'''
[[build]]
version = "2.7.1"
variant = "mps"
accelerator = "mps"
index = "pypi"
platforms = ["darwin/arm64"]
{MADE_UP}

[[build]]
version = "2.7.1"
variant = "xpu"
accelerator = "xpu"
index = "pytorch"
index_path = "xpu"
xpu = ["pvc", "bmg"]
platforms = ["linux/amd64", "windows/amd64"]
{MADE_UP}
'''

_GPUS = f'''
[[arch]]
name = "bmg"
vendor = "intel"
family = "xe2"
{MADE_UP}

[[arch]]
name = "pvc"
vendor = "intel"
family = "xe-hpc"
{MADE_UP}

[[gpu]]
name = "Arc B580"
vendor = "intel"
arch = "bmg"
{MADE_UP}
'''

# CUDA 12's minor-version compatibility floor on Windows: NVIDIA's number is 528.33
_CUDA_12 = 'major = 12\nminor_compat_driver_min = "525.60.13"\n'


def hosts_data(root: Path) -> Path:
    """The shipped data with the made-up rows, written under ``root``."""
    out = root / "matrices"
    shutil.copytree(data_dir(), out)
    for name, extra in (("platforms.toml", _PLATFORMS), ("torch.toml", _TORCH), ("gpus.toml", _GPUS)):
        with (out / name).open("a", encoding="utf-8") as f:
            f.write(extra)
    cuda = (out / "cuda.toml").read_text(encoding="utf-8")
    assert _CUDA_12 in cuda
    (out / "cuda.toml").write_text(cuda.replace(_CUDA_12, _CUDA_12 + 'minor_compat_driver_min_windows = "528.33"\n', 1),
                                   encoding="utf-8")
    return out
