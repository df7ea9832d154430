"""A small matrices folder for locks of every host before the real data has their rows: the test
fixture (tests/fixtures/matrices) plus a torch 2.7.1 XPU build on the PyTorch index (Linux and
Windows, AOT target dg2), an MPS build on the default index for darwin/arm64, the PyTorch index's
CUDA builds published for windows/amd64, and an Intel (Arc A770, dg2) and an Apple GPU (Apple M2).
Every row is made up for the tests (source = "tests fixture")."""

from __future__ import annotations

import shutil
from pathlib import Path

FIXTURE = Path(__file__).parent / "fixtures" / "matrices"

_TORCH = '''
[[build]]
version = "2.7.1"
variant = "mps"
accelerator = "mps"
default = false
index = "pypi"
platforms = ["darwin/arm64"]
source = "tests fixture"

[[build]]
version = "2.7.1"
variant = "xpu"
accelerator = "xpu"
default = false
index = "pytorch"
index_path = "xpu"
xpu = ["dg2"]
platforms = ["linux/amd64", "windows/amd64"]
source = "tests fixture"
'''

_PLATFORMS = '''schema = 1
data_version = "2000-01-01"
kind = "platforms"

[[wheel]]
package = "torch"
platform = "windows/amd64"
index = "pytorch"
versions = ">=2.5"
variants = ["cu*"]
source = "tests fixture"
'''

_GPUS = '''
[[arch]]
name = "dg2"
vendor = "intel"
family = "alchemist"
source = "tests fixture"

[[arch]]
name = "apple-m2"
vendor = "apple"
family = "apple-m2"
source = "tests fixture"

[[gpu]]
name = "Arc A770"
vendor = "intel"
arch = "dg2"
aliases = ["Intel(R) Arc(TM) A770 Graphics"]
source = "tests fixture"

[[gpu]]
name = "Apple M2"
vendor = "apple"
arch = "apple-m2"
platform = "darwin/arm64"
source = "tests fixture"
'''

# [hardware] of each host the tests lock for
HOSTS = {
    "windows-cuda": 'platform = "windows/amd64"\ngpus = ["RTX 3090"]\ndriver = "560.94"\n',
    "windows-xpu": 'platform = "windows/amd64"\nvendor = "intel"\ngpus = ["Arc A770"]\n',
    "windows-cpu": 'platform = "windows/amd64"\nvendor = "cpu"\n',
    "darwin-mps": 'platform = "darwin/arm64"\n',
    "darwin-cpu": 'platform = "darwin/arm64"\nvendor = "cpu"\n',
    "linux-xpu": 'vendor = "intel"\ngpus = ["Arc A770"]\n',
    "wsl-cuda": 'platform = "linux/amd64"\nwsl = true\ngpus = ["RTX 3090"]\ndriver = "560.94"\n',
}


def host_matrices(folder: Path) -> Path:
    """The matrices folder described above, made under ``folder``."""
    out = folder / "matrices"
    shutil.copytree(FIXTURE, out)
    with (out / "torch.toml").open("a", encoding="utf-8") as f:
        f.write(_TORCH)
    with (out / "gpus.toml").open("a", encoding="utf-8") as f:
        f.write(_GPUS)
    (out / "platforms.toml").write_text(_PLATFORMS, encoding="utf-8")
    return out


def spec_text(host: str, frameworks: str = 'torch = "==2.7.1"', python: str = "3.12", extra: str = "") -> str:
    """A project.toml for ``host`` (a key of :data:`HOSTS`)."""
    return (f'[project]\nname = "demo"\npython = "=={python}.*"\n[frameworks]\n{frameworks}\n'
            f'[hardware]\n{HOSTS[host]}{extra}')
