"""Hostile round 3, defect 1: `refresh --write --matrices LINK` wrote through the folder's link
(envsolve.curate.write_rows, through files.write_all's one rule)."""

import shutil
from pathlib import Path

import pytest

from envsolve.curate import Row, write_rows
from envsolve.errors import SpecError

FIXTURE = Path(__file__).parent / "fixtures" / "matrices"
ROW = Row(file="torch.toml", table="release", label="torch 9.9.9", fields=(
    ("version", "9.9.9"), ("python", ["3.12"]), ("source", "package metadata of torch==9.9.9")))


def test_refresh_write_refuses_a_matrices_folder_that_is_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    for f in FIXTURE.glob("*.toml"):
        shutil.copy(f, victim)
    before = {p.name: p.read_bytes() for p in victim.iterdir()}
    link = tmp_path / "matrices"
    link.symlink_to(victim)
    with pytest.raises(SpecError) as e:
        write_rows([ROW], link, "9999-01-01")
    assert e.value.exit_code == 2
    assert f"{link}: cannot be written (--matrices): the output folder is a link to {victim}" in e.value.message
    assert e.value.tip == f"pass the link's target (--matrices {victim}) if that is where you mean to write"
    assert {p.name: p.read_bytes() for p in victim.iterdir()} == before
    assert write_rows([ROW], victim, "9999-01-01") == [victim / "torch.toml"]
