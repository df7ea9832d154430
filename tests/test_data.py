import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from envsolve.cli import main
from envsolve.data import data_dir, load_dir
from envsolve.errors import MatrixError


def test_shipped_matrices_load_and_validate() -> None:
    m = load_dir(data_dir())
    assert m.data_version >= "2026-11-22"
    assert m.digest.startswith("sha256:")
    for rows in (m.archs, m.gpus, m.toolkits, m.branches, m.cudnn, m.rocm, m.releases, m.builds, m.images):
        assert rows, "every kind of data is present"
        for r in rows:
            assert r.source.strip()
            if r.confidence == "low":
                assert r.note, f"{r} is low confidence without a note saying how it was inferred"


def test_shipped_data_reaches_todays_releases() -> None:
    m = load_dir(data_dir())
    newest = {p: max(r.version for r in m.releases if r.package == p) for p in ("torch", "tensorflow", "jax", "keras")}
    assert str(newest["torch"]) >= "2.15.0"
    assert newest["tensorflow"].release >= (2, 21)
    assert newest["jax"].release >= (0, 12)
    assert newest["keras"].release >= (3, 15, 1)
    assert max(t.version for t in m.toolkits).major == 13


def test_every_problem_is_reported_at_once_with_file_row_and_key(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "matrices"
    for f in src.glob("*.toml"):
        shutil.copy(f, tmp_path)
    gpus = tmp_path / "gpus.toml"
    gpus.write_text(gpus.read_text().replace('arch = "sm_80"', 'arch = "sm_81"', 1))
    torch = tmp_path / "torch.toml"
    text = torch.read_text().replace('source = "tests fixture"', 'sauce = "x"', 1)
    torch.write_text(text.replace('variant = "cu118"', 'variant = "cu118"\ncolour = "red"', 1))
    (tmp_path / "broken.toml").write_text("schema = 1\nkind = [")
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    msg = str(e.value)
    assert "gpus.toml: gpu (A100).arch: 'sm_81' has no [[arch]] row" in msg
    assert "torch.toml: release[0] (version 2.3.1).sauce: unknown key" in msg
    assert "torch.toml: release[0] (version 2.3.1).source: missing" in msg
    assert ".colour: unknown key" in msg
    assert "broken.toml: is not valid TOML" in msg
    assert len(e.value.problems) >= 5


def test_two_default_builds_of_one_release_are_refused(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "matrices"
    for f in src.glob("*.toml"):
        shutil.copy(f, tmp_path)
    t = tmp_path / "torch.toml"
    t.write_text(t.read_text().replace('variant = "cu118"\naccelerator = "cuda"\ndefault = false',
                                       'variant = "cu118"\naccelerator = "cuda"\ndefault = true', 1))
    with pytest.raises(MatrixError, match="second default build"):
        load_dir(tmp_path)


def test_wrong_schema_version_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text('schema = 2\ndata_version = "2026-01-01"\nkind = "gpus"\n')
    with pytest.raises(MatrixError, match="x.toml: schema: is 2; this envsolve reads schema 1"):
        load_dir(tmp_path)


def _fixture_copy(tmp_path: Path) -> Path:
    for f in (Path(__file__).parent / "fixtures" / "matrices").glob("*.toml"):
        shutil.copy(f, tmp_path)
    return tmp_path


def test_a_kind_that_is_no_word_is_named_not_a_traceback(tmp_path: Path) -> None:
    (_fixture_copy(tmp_path) / "x.toml").write_text('schema = 1\ndata_version = "2026-01-01"\nkind = ["gpus"]\n')
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    assert e.value.message == ("x.toml: kind: ['gpus'] is not one of conda, cuda, cudnn, drivers, extensions, "
                               "framework, gpus, images, platforms, rocm, tools")


def test_an_arch_row_whose_name_is_no_architecture_is_named_not_a_traceback(tmp_path: Path) -> None:
    gpus = _fixture_copy(tmp_path) / "gpus.toml"
    gpus.write_text(gpus.read_text().replace('name = "sm_37"', 'name = "kepler"', 1))
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    assert ("  gpus.toml: arch[0] (kepler).name: 'kepler' is not a GPU architecture: write sm_80, a compute capability "
            "such as 8.0, or an AMD target such as gfx942") in e.value.message.splitlines()


def test_closed_words_of_the_data_are_refused_with_the_words(tmp_path: Path) -> None:
    torch = _fixture_copy(tmp_path) / "torch.toml"
    torch.write_text(torch.read_text().replace('accelerator = "cuda"', 'accelerator = "tpu"', 1))
    with pytest.raises(MatrixError, match=r"torch.toml: build\[1\] \(version 2.3.1\).accelerator: must be one of "
                                          r"cuda, rocm, cpu"):
        load_dir(tmp_path)


# ---------------------------------------------------------------------------- a curated folder with a mistake
# Each case: (file, text to find once (the first match), what to write instead, what the message must hold).
# Every one is a dangling reference or a missing file of the real data; the error names file, row and key.

CURATED_MISTAKES = [
    ("gpus.toml", 'name = "A100"\nvendor = "nvidia"\narch = "sm_80"', 'name = "A100"\nvendor = "nvidia"\narch = "sm_80x"',
     "gpus.toml: gpu (A100).arch: 'sm_80x' has no [[arch]] row"),
    ("gpus.toml", None, None, "gpus.toml: missing: the folder has no file of kind = 'gpus'"),
    ("torch.toml", 'cuda = "12.8"', 'cuda = "12.99"', "torch.toml: build (version {}, cu128).cuda: "
     "CUDA 12.99 has no [[toolkit]] row in cuda.toml"),
    ("cuda.toml", 'archs = ["', 'archs = ["sm_13", "', "cuda.toml: toolkit ({}).archs: 'sm_13' has no [[arch]] row"),
    ("images.toml", 'accelerator = "cuda"\nversion = "10.0"', 'accelerator = "cuda"\nversion = "10.9"',
     "images.toml: image (nvidia/cuda 10.9).version: CUDA 10.9 has no [[toolkit]] row in cuda.toml"),
    ("platforms.toml", 'l4t = "35.4.1"\ncuda = "11.4"', 'l4t = "35.4.1"\ncuda = "11.9"',
     "platforms.toml: jetpack (version 5.1.2).cuda: CUDA 11.9 has no [[toolkit]] row in cuda.toml"),
    ("torch.toml", 'jetpack = "6"', 'jetpack = "9"', "torch.toml: build (version {}, jp6-cu126).jetpack: "
     "JetPack '9' has no [[jetpack]] row in platforms.toml"),
    ("torch.toml", 'jetpacks = ["5.1"]', 'jetpacks = ["5.9"]', "torch.toml: build (version {}, jp5-cu114).jetpacks: "
     "JetPack '5.9' is no [[jetpack]] row of platforms.toml of JetPack 5"),
    ("platforms.toml", '"Jetson TX2", "Jetson Nano"]', '"Jetson TX3", "Jetson Nano"]',
     "platforms.toml: jetpack (version 4.2).gpus: 'Jetson TX3' is no GPU of gpus.toml"),
    ("platforms.toml", 'variants = ["', 'variants = ["cu999", "', ".variants: 'cu999' matches no torch build"),
    ("tensorflow.toml", 'requires = { keras', 'requires = { kerass = ">=2", keras',
     "tensorflow.toml: release (version {}).requires: 'kerass' is not one of"),
    ("cudnn.toml", "cuda_major = 12", "cuda_major = 99", ".cuda_major: CUDA major 99 has no [[major]] row"),
]


def _curated_copy(tmp_path: Path) -> Path:
    root = tmp_path / "matrices"
    shutil.copytree(data_dir(), root)
    return root


def _mistake(root: Path, file: str, find: str | None, write: str | None) -> str:
    """Apply one mistake to the copy; the version of the row it hit (for the message), if any."""
    path = root / file
    if find is None:
        path.unlink()
        return ""
    text = path.read_text()
    at = text.index(find)
    path.write_text(text[:at] + (write or "") + text[at + len(find):])
    version = re.findall(r'^version = "([^"]*)"', text[:at], re.M)
    return version[-1] if version else ""


@pytest.mark.parametrize(("file", "find", "write", "says"), CURATED_MISTAKES,
                         ids=[f"{c[0]}:{c[3].split(': ')[-1][:30]}" for c in CURATED_MISTAKES])
def test_a_curated_folder_with_a_dangling_row_is_exit_2_naming_file_row_and_key(
        tmp_path: Path, file: str, find: str | None, write: str | None, says: str) -> None:
    root = _curated_copy(tmp_path)
    version = _mistake(root, file, find, write)
    r = CliRunner().invoke(main, ["--matrices", str(root), "data", "--validate"])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output
    assert says.format(version) in r.output
    assert f"TIP: fix the rows named above in {root.resolve()}" in r.output


# a single value of a real row, mutated: what it becomes, and which keys it is a mistake for
_WRONG_TYPE = "[1, 2]"  # no key of any row takes a list of numbers
_ARCH_KEYS = {"arch", "archs", "ptx", "gfx"}


def _value_lines() -> list[tuple[str, int, str]]:
    """(file, line number, key) of every ``key = value`` line inside a row of the shipped data."""
    out = []
    for path in sorted(data_dir().glob("*.toml")):
        in_row = False
        for n, line in enumerate(path.read_text().splitlines()):
            in_row = in_row or line.startswith("[[")
            if in_row and (m := re.match(r"^(\w+) = ", line)):
                out.append((path.name, n, m.group(1)))
    return out


_LINES = _value_lines()
_CUDA_LINES = [x for x in _LINES if x[2] == "cuda" and x[0] not in ("conda.toml", "images.toml")]


def _unknown_value(key: str, kind: str) -> str:
    """A value of the right type that no row knows (an architecture no [[arch]] row has, a CUDA no
    toolkit is) for the keys that name one; else a value of the wrong type."""
    if kind == "arch" and key in _ARCH_KEYS:
        return '"sm_13"' if key == "arch" else '["sm_13"]'
    if kind == "cuda" and key == "cuda":
        return '"12.99"'
    return _WRONG_TYPE


@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data") / "matrices"
    shutil.copytree(data_dir(), root)
    return root


@given(line=st.sampled_from(_LINES + _CUDA_LINES * 20), kind=st.sampled_from(["type", "arch", "cuda"]))
@settings(max_examples=20, deadline=None)
def test_any_single_value_of_a_real_row_made_wrong_is_a_problem_naming_its_file_not_a_traceback(
        shipped_copy: Path, line: tuple[str, int, str], kind: str) -> None:
    file, n, key = line
    path = shipped_copy / file
    text = (data_dir() / file).read_text()
    lines = text.splitlines()
    value = _unknown_value(key, kind)
    lines[n] = f"{key} = {value}"
    path.write_text("\n".join(lines) + "\n")
    try:
        with pytest.raises(MatrixError) as e:  # the command line's exit 2; anything else is a traceback
            load_dir(shipped_copy)
    finally:
        path.write_text(text)
    assert any(p.file == file for p in e.value.problems), (line, value, e.value.message)
