import shutil
from pathlib import Path

import pytest

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
    assert e.value.message == ("x.toml: kind: ['gpus'] is not one of conda, cuda, cudnn, drivers, framework, gpus, "
                               "images, platforms, rocm, tools")


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
