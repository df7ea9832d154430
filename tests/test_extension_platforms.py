"""Issue 41: an extension package that publishes no wheel for the target's platform is refused,
not dropped (envsolve/solve/extensions.py ``_installs_on``, matrices/extensions.toml ``platforms``).

The facts these tests lean on are the wheel files of each release on the default index, each
row's ``note`` naming the releases and tags read: vLLM publishes manylinux x86_64 (and, from
0.10.2, aarch64) wheels and no win_amd64 one; xformers publishes win_amd64 wheels from 0.0.29.post2.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from envsolve.cli import main
from envsolve.provider import Provider

WINDOWS = ('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 4090"]\n'
           'platform = "windows/amd64"\n[packages]\npip = ["{pip}"]\n')


def _lock(tmp_path: Path, body: str) -> Result:
    spec = tmp_path / "project.toml"
    spec.write_text(body)
    return CliRunner().invoke(main, ["lock", str(spec), "--format", "json"])


def test_every_extension_row_says_which_platforms_it_installs_on(real_graph: Provider) -> None:
    for x in real_graph.m.extensions:
        assert x.platforms, f"{x.package} {x.versions}: no platforms"
        assert "platforms:" in x.note, f"{x.package} {x.versions}: the note says what was read"


def test_vllm_on_windows_is_refused_with_wsl2_as_the_fix_and_wsl2_locks(tmp_path: Path) -> None:
    body = WINDOWS.format(pip="vllm")
    r = _lock(tmp_path, body)
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "target 'default' cannot be satisfied:" in r.stderr
    assert ("[packages] pip 'vllm': vllm 0.33.0 has no wheel for windows/amd64 (the default index has its "
            "wheels for linux/amd64 and linux/arm64 only)") in r.stderr
    assert ("TIP: what would work: WSL2 ([hardware] platform = 'linux/amd64', wsl = true), which installs its "
            "Linux wheel") in r.stderr
    assert "drop vllm from [packages] pip" in r.stderr
    assert not (tmp_path / "envsolve.lock").exists()
    r = _lock(tmp_path, body.replace('platform = "windows/amd64"', 'platform = "linux/amd64"\nwsl = true'))
    assert r.exit_code == 0, r.output
    [x] = json.loads(r.stdout)["environments"][0]["extensions"]
    assert (x["name"], x["install"]) == ("vllm", "index")


def test_xformers_on_windows_locks_its_windows_wheel(tmp_path: Path, real_graph: Provider) -> None:
    r = _lock(tmp_path, WINDOWS.format(pip="xformers"))
    assert r.exit_code == 0, r.output
    env = json.loads(r.stdout)["environments"][0]
    assert env["platform"] == "windows/amd64"
    [x] = env["extensions"]
    assert (x["name"], x["install"], x["version"]) == ("xformers", "index", "0.0.35")
    [row] = [r for r in real_graph.extensions("xformers") if r.newest == x["version"]]
    assert "windows/amd64" in row.platforms  # it locks because its data says so


def test_an_xformers_release_without_a_windows_wheel_is_refused_naming_the_newer_one(tmp_path: Path) -> None:
    r = _lock(tmp_path, WINDOWS.format(pip="xformers==0.0.29.post1"))
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert ("xformers 0.0.29.post1 has no wheel for windows/amd64 (the default index has its wheels for "
            "linux/amd64 only)") in r.stderr
    assert 'TIP: what would work: [packages] pip "xformers==0.0.35" (it has a wheel for windows/amd64)' in r.stderr


def test_an_arm_target_is_told_the_torch_whose_triton_has_an_aarch64_wheel(tmp_path: Path) -> None:
    r = _lock(tmp_path, '[project]\nname = "demo"\n[frameworks]\ntorch = ">=2.7,<2.9"\n[hardware]\n'
                        'gpus = ["GH200"]\n[packages]\npip = ["triton"]\n')
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output  # triton 3.3 and 3.4: x86_64 wheels only
    assert "triton (triton) works with torch >=2.10,<2.12 or torch >=2.12,<2.14 or torch >=2.9,<2.10" in r.stderr
    assert not (tmp_path / "envsolve.lock").exists()


def _copied(tmp_path: Path, old: str, new: str) -> Path:
    from envsolve.data import data_dir

    shutil.copytree(data_dir(), tmp_path / "m")
    path = tmp_path / "m" / "extensions.toml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    return tmp_path / "m"


@pytest.mark.parametrize(("old", "new", "said"), [
    ('platforms = ["linux/amd64", "linux/arm64"]\nsource = "https://github.com/Dao-AILab/flash-attention/blob/v2.6.3',
     'platforms = ["linux/amd64", "windows/x64"]\nsource = "https://github.com/Dao-AILab/flash-attention/blob/v2.6.3',
     "extensions.toml: extension[0].platforms: 'windows/x64' is not a platform: linux/amd64, linux/arm64, "
     "windows/amd64"),
    ('platforms = ["linux/amd64", "linux/arm64"]\nsource = "https://github.com/Dao-AILab/flash-attention/blob/v2.6.3',
     'platforms = ["linux/amd64", "windows/amd64"]\nsource = "https://github.com/Dao-AILab/flash-attention/blob/v2.6.3',
     "extension[0] (flash-attn >=2.0,<2.7.3).platforms: windows/amd64: a source build installs only in a Linux image"),
])
def test_a_row_with_a_platform_it_cannot_have_is_a_matrix_error(tmp_path: Path, old: str, new: str, said: str) -> None:
    from envsolve.data import load_dir
    from envsolve.errors import MatrixError

    with pytest.raises(MatrixError) as e:
        load_dir(_copied(tmp_path, old, new))
    assert "extensions.toml" in e.value.message and said in e.value.message, e.value.message
