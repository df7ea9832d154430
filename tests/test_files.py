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


def _dead_pid() -> str:
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()


def _temporary_of(pid: str, name: str = "envsolve.lock") -> str:
    """The name envsolve gives a temporary of ``name`` made by the process ``pid``."""
    nonce = "0badc0de"
    return f".{name}.{nonce}.{pid}.{files._token(name, nonce, pid)}.tmp"


def test_a_killed_writers_temporary_files_are_removed_by_the_next_write(tmp_path: Path) -> None:
    left = tmp_path / _temporary_of(_dead_pid())
    ours = tmp_path / _temporary_of(str(os.getpid()))  # a live writer's: kept
    left.write_text("half")
    ours.write_text("half")
    files.write_atomic(tmp_path / "envsolve.lock", "new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["envsolve.lock", ours.name])


# ----------------------------------------------------------------------------- issue 40: trust, round 2


def test_the_sweep_never_deletes_a_persons_file_shaped_like_a_temporary(tmp_path: Path) -> None:
    # defect 3: any `.X.<pid>.<hex8>.tmp` of a dead pid was deleted, a person's own file included
    dead = _dead_pid()
    theirs = [f".notes.{dead}.0badc0de.tmp", f".notes.0badc0de.{dead}.0badc0de.tmp",  # the old shape, a forged token
              f".notes.0badc0de.{dead}.{files._token('other', '0badc0de', dead)}.tmp"]  # a token of another name
    for name in theirs:
        (tmp_path / name).write_text("mine\n")
    left = tmp_path / _temporary_of(dead, "notes")
    left.write_text("half")
    files.write_atomic(tmp_path / "notes", "new\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*theirs, "notes"])
    assert all((tmp_path / name).read_text() == "mine\n" for name in theirs)


def test_temporaries_envsolve_makes_verify_and_are_unique(tmp_path: Path) -> None:
    made = {files._temporary_name("envsolve.lock") for _ in range(50)}
    assert len(made) == 50 and all(files._writer(n) == os.getpid() for n in made)



def test_under_refuses_a_path_a_link_leads_out_of_its_folder_naming_the_link(tmp_path: Path) -> None:
    # defect 1: the one rule of every writer of a folder of generated files
    out, elsewhere = tmp_path / "site", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (elsewhere / "bashrc").write_text("mine\n")
    (out / "gpus").symlink_to(elsewhere)
    (out / "index.html").symlink_to(elsewhere / "bashrc")
    (out / "kept").mkdir()
    (out / "alias").symlink_to("kept")  # a link that stays inside: fine
    assert files.under(out, "alias/a.html", "-o") == out / "alias" / "a.html"
    assert files.under(out, "new/a.html", "-o") == out / "new" / "a.html"
    for relative, link, target in [("gpus/a.html", out / "gpus", elsewhere), ("index.html", out / "index.html",
                                                                                 elsewhere / "bashrc")]:
        with pytest.raises(SpecError) as e:
            files.under(out, relative, "-o")
        assert e.value.exit_code == 2
        assert e.value.message == (f"{out / relative}: cannot be written: it lies outside the output folder {out} "
                                   f"({link} is a link to {target})")
        assert e.value.tip == f"remove the link {link} (envsolve writes only inside its output folder), or choose " \
                              "another folder with -o"
    with pytest.raises(SpecError, match=r"climbs out of it with \.\."):
        files.under(out, "../escaped.html", "--render")


def test_write_all_into_a_folder_writes_nothing_when_one_path_leads_out(tmp_path: Path) -> None:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / "cell").symlink_to(elsewhere)
    with pytest.raises(SpecError, match="is a link to"):
        files.write_all({out / "a.txt": "a\n", out / "cell" / "Dockerfile": "FROM x\n"}, tip="", folder=out)
    assert sorted(p.name for p in out.iterdir()) == ["cell"] and list(elsewhere.iterdir()) == []


def _cache_file(tmp_path: Path, blob: bytes = b"cached") -> Path:
    path = tmp_path / "entry.bin"
    path.write_bytes(blob)
    path.chmod(0o600)
    return path


def test_a_cache_file_is_read_only_when_a_private_regular_file_of_this_user(tmp_path: Path) -> None:
    # defects 2 and 4: a cache that is no file, too big, another user's or writable by others is never read
    path = _cache_file(tmp_path)
    assert files.read_cache(path, 100) == b"cached"
    assert files.read_cache(path, 3) is None and files.read_cache(tmp_path / "absent", 100) is None
    path.chmod(0o664)
    assert files.read_cache(path, 100) is None  # writable by the group
    path.chmod(0o606)
    assert files.read_cache(path, 100) is None  # by others
    path.chmod(0o644)
    assert files.read_cache(path, 100) == b"cached"
    if os.geteuid() == 0:
        os.chown(path, 4242, 4242)
        assert files.read_cache(path, 100) is None  # another user's
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    assert files.read_cache(zero, 100) is None and files.read_cache(tmp_path, 100) is None


def test_a_fifo_at_a_cache_path_never_blocks(tmp_path: Path) -> None:
    code = ("import sys; from envsolve.files import read_cache\nprint(read_cache(sys.argv[1], 100))\n")
    r = subprocess.run([sys.executable, "-c", code, str(_fifo(tmp_path))], capture_output=True, text=True, timeout=60)
    assert r.stdout == "None\n", r.stderr


def test_a_private_write_is_0600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        files.write_atomic(tmp_path / "cache.bin", b"x", durable=False, private=True)
        files.write_atomic(tmp_path / "shared", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "cache.bin").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "shared").stat().st_mode) == 0o664


def test_the_key_that_seals_the_caches_is_made_once_private_and_kept(tmp_path: Path) -> None:
    state = tmp_path / "state"
    key = files.cache_key(str(state))
    assert key is not None and len(key) == 32 and files.cache_key(str(state)) == key
    assert stat.S_IMODE((state / "cache.key").stat().st_mode) == 0o600
    assert [p.name for p in state.iterdir()] == ["cache.key"]  # no temporary left
    assert files.seal(b"records", key) != files.seal(b"records", os.urandom(32))
    (state / "cache.key").chmod(0o666)  # others may have written it: no key, so no cache is believed
    assert files.cache_key(str(state)) is None
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert files.cache_key(str(blocker / "state")) is None  # none can be made: caches off, no error


# ----------------------------------------------------------------------------- hostile round 3


def test_an_output_folder_that_is_itself_a_link_is_refused_naming_it_and_its_target(tmp_path: Path) -> None:
    # defect 1: `ln -s victim envsolve-out` wrote every file into victim/
    victim, link = tmp_path / "victim", tmp_path / "envsolve-out"
    victim.mkdir()
    link.symlink_to("victim")
    for option in ("-o", "--render", "--matrices"):
        with pytest.raises(SpecError) as e:
            files.under(link, "default/Dockerfile", option)
        assert e.value.exit_code == 2
        assert e.value.message == (f"{link}: cannot be written ({option}): the output folder is a link to victim; "
                                   "envsolve writes only into a folder, never through a link")
        assert e.value.tip == f"pass the link's target ({option} {victim}) if that is where you mean to write"
        with pytest.raises(SpecError, match="the output folder is a link to victim"):
            files.write_all({link / "a.txt": "a\n"}, tip="", folder=link, option=option)
    with pytest.raises(SpecError) as e:
        files.write_all({link / "images.yml": "on: push\n"}, tip="", folder=link, option="--workflow")
    assert e.value.tip == f"pass the link's target (--workflow {victim / 'images.yml'}) if that is where you mean to write"
    assert list(victim.iterdir()) == []
    assert files.under(victim, "a.txt", "-o") == victim / "a.txt"  # the target itself is fine


def test_links_higher_up_an_output_folders_path_are_followed(tmp_path: Path) -> None:
    # defect 1: only the folder as given counts (/tmp -> /private/tmp on macOS stays usable)
    (tmp_path / "real" / "out").mkdir(parents=True)
    (tmp_path / "up").symlink_to("real")
    out = tmp_path / "up" / "out"
    files.write_all({out / "a.txt": "a\n"}, tip="", folder=out)
    assert (tmp_path / "real" / "out" / "a.txt").read_text() == "a\n"


def test_a_folder_or_an_undeletable_entry_named_like_a_leftover_never_blocks_a_write(tmp_path: Path) -> None:
    # defect 2a: a folder named like a dead process's temporary made every write fail "Is a directory"
    dead = _dead_pid()
    folder = tmp_path / _temporary_of(dead)
    folder.mkdir()
    (folder / "inside").write_text("mine\n")
    link = tmp_path / _temporary_of(dead, "notes")
    link.symlink_to(folder / "inside")
    files.write_atomic(tmp_path / "envsolve.lock", "new\n")
    files.write_all({tmp_path / "other.txt": "x\n"}, tip="")
    assert (folder / "inside").read_text() == "mine\n" and link.is_symlink()
    assert (tmp_path / "envsolve.lock").read_text() == "new\n"
    if os.geteuid() != 0:  # root removes what it likes
        sub = tmp_path / "ro"
        sub.mkdir()
        (sub / _temporary_of(dead)).write_text("half")
        sub.chmod(0o500)
        try:
            files.sweep(sub)  # cannot remove it: left, no error
        finally:
            sub.chmod(0o700)
        assert (sub / _temporary_of(dead)).exists()


def test_the_temporaries_checksum_is_keyed_with_this_users_secret_key(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # defect 2b: the key was a public constant, so anyone could name a person's file to be swept
    import hashlib

    dead = _dead_pid()
    nonce = "0badc0de"
    forged = f".notes.{nonce}.{dead}." + hashlib.blake2s(f"notes\0{nonce}\0{dead}".encode(),
                                                         key=b"envsolve temporary file", digest_size=4).hexdigest() + ".tmp"
    (tmp_path / forged).write_text("mine\n")
    left = tmp_path / _temporary_of(dead, "notes")
    left.write_text("half")
    files.write_atomic(tmp_path / "notes", "new\n")
    assert (tmp_path / forged).read_text() == "mine\n" and not left.exists()
    # another user's key (another state folder) verifies none of this user's names
    name = files._temporary_name("notes")
    monkeypatch.setattr(files, "_temporary_key", False)
    monkeypatch.setenv("ENVSOLVE_STATE_DIR", str(tmp_path / "other-state"))
    assert files._writer(name) is None and files._writer(files._temporary_name("notes")) == os.getpid()


def test_without_a_key_no_temporary_verifies_and_nothing_is_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # defect 2b: no key to be had (an unwritable home): names never verify, leftovers are only left
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(files, "_temporary_key", False)
    monkeypatch.setenv("ENVSOLVE_STATE_DIR", str(blocker / "state"))
    out = tmp_path / "out"
    out.mkdir()
    name = files._temporary_name("notes")
    assert name.endswith(".unkeyed.tmp") and files._writer(name) is None
    left = out / f".notes.0badc0de.{_dead_pid()}.unkeyed.tmp"
    left.write_text("half")
    files.write_atomic(out / "notes", "new\n")
    assert left.exists() and (out / "notes").read_text() == "new\n"


def test_the_temporaries_key_is_read_once_and_only_when_needed(tmp_path: Path) -> None:
    # defect 2b: files.py stays light: no hashlib at import, the key read at most once per process
    code = ("import sys, os\nfrom envsolve import files\nassert 'hashlib' not in sys.modules\n"
            "calls = []\nreal = files.cache_key\nfiles.cache_key = lambda f: calls.append(f) or real(f)\n"
            "files.sweep(sys.argv[1]); assert calls == []\n"  # a clean folder: no key read
            "for i in range(3): files.write_atomic(os.path.join(sys.argv[1], f'f{i}'), 'x')\n"
            "print(len(calls))\n")
    env = {**os.environ, "ENVSOLVE_STATE_DIR": str(tmp_path / "state")}
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert r.stdout == "1\n", r.stderr
