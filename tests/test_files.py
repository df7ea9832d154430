import os
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from envsolve import files
from envsolve.errors import SpecError
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


# ----------------------------------------------------------------------------- issue 22: files that are not files


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "project.toml"
    os.mkfifo(path)
    return path


def test_a_fifo_a_device_a_folder_and_a_socket_are_refused_without_reading(tmp_path: Path) -> None:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "s.toml"))
    try:
        for path, why in [(_fifo(tmp_path), "is a FIFO (named pipe), not a file"),
                          (Path("/dev/zero"), "is a device, not a file"), (tmp_path, "is a folder, not a file"),
                          (tmp_path / "s.toml", "is a socket, not a file")]:
            with pytest.raises(files.NotAnInput, match=why.replace("(", r"\(").replace(")", r"\)")):
                files.read_bytes(path, files.SPEC_CAP)
    finally:
        sock.close()


def test_a_fifo_never_blocks_a_reader(tmp_path: Path) -> None:
    """Checked in a child process: the old reader blocked forever on open()."""
    code = ("import sys; from pathlib import Path; from envsolve.files import SPEC_CAP, user_input\n"
            "try:\n    user_input(Path(sys.argv[1]), SPEC_CAP, '')\nexcept Exception as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, str(_fifo(tmp_path))], capture_output=True, text=True, timeout=60)
    assert "is a FIFO (named pipe), not a file" in r.stdout


def test_a_file_over_its_cap_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.toml"
    path.write_bytes(b"#" * 101)
    assert files.read_bytes(path, 101) == b"#" * 101
    with pytest.raises(files.NotAnInput, match="is larger than 100 bytes"):
        files.read_bytes(path, 100)



def test_a_file_longer_than_its_size_says_is_read_whole_up_to_its_cap(tmp_path: Path) -> None:
    """read_bytes reads the size fstat gives: a file that grows while read, or one whose size says 0
    (Linux's /proc), is read on to its end, and refused past the cap all the same."""
    status = files.read_bytes("/proc/self/status", files.SPEC_CAP)
    assert os.stat("/proc/self/status").st_size == 0 and status.startswith(b"Name:") and status.endswith(b"\n")
    path = tmp_path / "growing.toml"
    path.write_bytes(b"#" * 300)
    real = os.fstat

    def stale(fd: int) -> os.stat_result:  # the size before the writer appended its last 200 bytes
        st = real(fd)
        return os.stat_result((st.st_mode, *st[1:6], 100, *st[7:]))

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(files.os, "fstat", stale)
        assert files.read_bytes(path, 1000) == b"#" * 300
        assert files.read_bytes(path, 300) == b"#" * 300
        with pytest.raises(files.NotAnInput, match="is larger than 299 bytes"):
            files.read_bytes(path, 299)

def test_a_byte_order_mark_is_dropped_and_other_encodings_are_named(tmp_path: Path) -> None:
    path = tmp_path / "project.toml"
    path.write_bytes(b"\xef\xbb\xbf[project]\n")
    assert files.read_text(path, files.SPEC_CAP) == "[project]\n"
    path.write_bytes(b"[project]\nname = 'caf\xe9'\n")
    with pytest.raises(SpecError) as e:
        files.user_input(path, files.SPEC_CAP, "")
    assert e.value.message == f"{path}: is not UTF-8 text (byte 21 is b'\\xe9')"
    assert e.value.tip == "save project.toml as UTF-8 (e.g. `iconv -f latin1 -t utf-8 project.toml`)"


def test_a_read_only_file_stays_read_only_when_replaced(tmp_path: Path) -> None:
    target = tmp_path / "envsolve.lock"
    target.write_text("old\n")
    target.chmod(0o444)
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n" and stat.S_IMODE(target.stat().st_mode) == 0o444


@pytest.mark.parametrize("existing", ["fifo", "folder"])
def test_write_all_refuses_an_output_that_is_not_a_regular_file_and_writes_nothing(tmp_path: Path,
                                                                                   existing: str) -> None:
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old\n")
    if existing == "fifo":
        os.mkfifo(second)
    else:
        second.mkdir()
    with pytest.raises(SpecError, match="cannot be written: exists and is a"):
        files.write_all({first: "new\n", second: "new\n"}, tip="")
    assert first.read_text() == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


def test_write_all_writes_every_file_or_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary files are all written before any target is replaced: one that fails leaves every
    target as it was (before, the first file was already replaced)."""
    first, second = tmp_path / "envsolve.lock", tmp_path / "out" / "Dockerfile"
    first.write_text("old\n")
    real = files._temporary

    def full(path: Path, data: str | bytes) -> Path:
        if path == second:
            raise OSError(28, "No space left on device")
        return real(path, data)

    monkeypatch.setattr(files, "_temporary", full)
    with pytest.raises(SpecError, match="No space left on device"):
        files.write_all({first: "new\n", second: "new\n"}, tip="")
    assert first.read_text() == "old\n"
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["envsolve.lock"]


def test_an_output_file_needs_its_folder_and_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as e:
        files.check_output(tmp_path / "no" / "such" / "x.lock", "-o")
    assert e.value.tip == f"mkdir -p {tmp_path / 'no' / 'such'}, or choose another path with -o"
    with pytest.raises(SpecError, match="exists and is a device, not a file"):
        files.check_output(Path("/dev/full"), "-o")
    files.check_output(tmp_path / "no" / "x.yml", "--workflow", folder_made=True)
    with pytest.raises(SpecError, match="exists and is not a folder"):
        files.check_output_dir(Path("/dev/null"), "-o")


def test_a_killed_writers_temporary_files_are_removed_by_the_next_write(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    left = tmp_path / f".envsolve.lock.{dead.stdout.strip()}.0badc0de.tmp"
    ours = tmp_path / f".envsolve.lock.{os.getpid()}.0badc0de.tmp"  # a live writer's: kept
    left.write_text("half")
    ours.write_text("half")
    files.write_atomic(tmp_path / "envsolve.lock", "new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["envsolve.lock", ours.name])
