"""`refresh --write`'s writer (envsolve.curate): the matrices folder is read through the one reader
and written only inside itself."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envsolve.curate import Row, write_rows
from envsolve.errors import SpecError

FIXTURE = Path(__file__).parent / "fixtures" / "matrices"
ROW = Row(file="torch.toml", table="release", label="torch 9.9.9", fields=(
    ("version", "9.9.9"), ("python", ["3.12"]), ("source", "package metadata of torch==9.9.9")))


def _matrices(tmp_path: Path) -> Path:
    root = tmp_path / "matrices"
    root.mkdir()
    for f in FIXTURE.glob("*.toml"):
        shutil.copy(f, root)
    return root


def test_new_rows_are_written_into_the_folder(tmp_path: Path) -> None:
    root = _matrices(tmp_path)
    assert write_rows([ROW], root, "9999-01-01") == [root / "torch.toml"]
    assert 'version = "9.9.9"' in (root / "torch.toml").read_text()


def test_a_matrix_file_that_is_a_link_out_of_the_folder_is_never_written_through(tmp_path: Path) -> None:
    # issue 40: the writer followed a link inside matrices/ and wrote outside it
    root = _matrices(tmp_path)
    shared = tmp_path / "elsewhere" / "torch.toml"
    shared.parent.mkdir()
    (root / "torch.toml").rename(shared)
    (root / "torch.toml").symlink_to(shared)
    before = shared.read_bytes()
    with pytest.raises(SpecError) as e:
        write_rows([ROW], root, "9999-01-01")
    assert e.value.exit_code == 2 and f"({root / 'torch.toml'} is a link to {shared})" in e.value.message
    assert "or choose another folder with --matrices" in (e.value.tip or "")
    assert shared.read_bytes() == before and (root / "torch.toml").is_symlink()


def test_a_matrix_file_that_is_a_fifo_is_named_never_read(tmp_path: Path) -> None:
    # issue 40: shutil.copyfile and Path.read_text of a FIFO blocked `refresh --write` for ever
    root = _matrices(tmp_path)
    os.mkfifo(root / "zz.toml")
    code = ("import sys; from pathlib import Path; from envsolve.curate import Row, write_rows\n"
            "from envsolve.errors import MatrixError\n"
            "row = Row(file='torch.toml', table='release', label='t', fields=(('version', '9.9.9'),))\n"
            "try:\n    write_rows([row], Path(sys.argv[1]), '9999-01-01')\n"
            "except MatrixError as e:\n    print(e.exit_code, e.message)\n")
    r = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=60)
    assert r.stdout == f"2 {root / 'zz.toml'}: is a FIFO (named pipe), not a file\n", r.stderr
