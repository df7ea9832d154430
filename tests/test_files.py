import os
import stat
from pathlib import Path

import pytest

from envsolve.files import write_atomic


def test_atomic_write_keeps_the_old_file_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "envsolve.lock"
    target.write_text("old\n")

    def boom(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("os.replace", boom)
    with pytest.raises(OSError):
        write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["envsolve.lock"]


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_atomic(tmp_path / "envsolve.lock", "x\n")
        os.umask(0o077)
        write_atomic(tmp_path / "private", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "envsolve.lock").stat().st_mode) == 0o644  # meant to be committed
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o600
