"""The caches never change an answer: the compiled data cache and the replay of unchanged locks."""

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.data import load, load_dir
from envsolve.lock import replay
from envsolve.paths import data_dir
from envsolve.provider import Provider, load_provider

CASES = Path(__file__).parent / "cases"
HELD = sorted(p.name for p in CASES.iterdir() if (p / "expected.lock").is_file())


def _lock(tmp_path: Path, name: str) -> tuple[Path, str]:
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / name / "project.toml").read_bytes())
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 0, r.output
    return spec, r.output


@pytest.mark.parametrize("name", HELD)
def test_a_replayed_lock_is_byte_for_byte_the_solved_one(name: str, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    spec, printed = _lock(tmp_path, name)
    lock = tmp_path / "envsolve.lock"
    assert lock.read_text() == (CASES / name / "expected.lock").read_text()  # solved
    os.utime(lock, (0, 0))
    if "pip = [" in spec.read_text():  # what the line asks comes from the index, which the tests cannot
        assert not replay.replay(["lock", str(spec)])  # read: not kept, for the index may answer next time
        return
    assert replay.replay(["lock", str(spec)])
    assert lock.stat().st_mtime != 0  # written again
    out = capsys.readouterr()
    assert lock.read_text() == (CASES / name / "expected.lock").read_text()  # replayed
    assert sorted((out.out + out.err).splitlines()) == sorted(printed.splitlines())  # CliRunner mixes the streams


@pytest.mark.parametrize("name", HELD)
def test_without_any_cache_the_lock_is_the_same(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSOLVE_NO_CACHE", "1")  # TOML parsed afresh, nothing replayed or stored
    _lock(tmp_path, name)
    assert (tmp_path / "envsolve.lock").read_text() == (CASES / name / "expected.lock").read_text()


def test_any_changed_input_falls_through_to_a_solve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec, _ = _lock(tmp_path, "h100-torch-newest")
    assert replay.replay(["lock", str(spec)])
    (tmp_path / "envsolve.lock").unlink()
    assert not replay.replay(["lock", str(spec)])  # the lock on disk is an input (a re-lock keeps its versions)
    _lock(tmp_path, "h100-torch-newest")
    assert not replay.replay(["lock", str(spec), "--check"])  # not a request the replay handles
    assert not replay.replay(["lock", str(spec), "-o", str(tmp_path / "other.lock")])  # other arguments
    monkeypatch.setenv("ENVSOLVE_INDEX_PYTORCH", "https://mirror.invalid/whl")
    assert not replay.replay(["lock", str(spec)])  # another setting
    monkeypatch.undo()
    spec.write_text(spec.read_text() + "\n")
    assert not replay.replay(["lock", str(spec)])  # another spec
    monkeypatch.setenv("ENVSOLVE_NO_CACHE", "1")
    spec.write_text(spec.read_text().rstrip("\n") + "\n")
    assert not replay.replay(["lock", str(spec)])


def test_a_lock_made_with_other_data_is_solved_again_to_warn(tmp_path: Path) -> None:
    spec, _ = _lock(tmp_path, "h100-torch-newest")
    lock = tmp_path / "envsolve.lock"
    lock.write_text(lock.read_text().replace('data_version = "', 'data_version = "1999-01-01'))
    assert not replay.replay(["lock", str(spec)])
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert "was made with data 1999-01-01" in r.output


def test_a_corrupt_entry_is_ignored(tmp_path: Path) -> None:
    spec, _ = _lock(tmp_path, "h100-torch-newest")
    entries = list((Path(os.environ["ENVSOLVE_CACHE_DIR"]) / "locks").glob("*.marshal"))
    for e in entries:
        e.write_bytes(b"\x00garbage")
    assert not replay.replay(["lock", str(spec)])


def test_request_parsing_follows_the_lock_command() -> None:
    assert replay.parse(["lock"]) == ("project.toml", "", "toml", "")
    assert replay.parse(["lock", "--frameworks-only"]) == ("project.toml", "", "toml", "yes")
    assert replay.parse(["lock", "./a/p.toml", "-o", "x.lock", "--format=json"]) == ("a/p.toml", "x.lock", "json", "")
    for other in (["render"], ["lock", "--host"], ["lock", "--format", "yaml"], ["lock", "a", "b"], ["--matrices", "m"]):
        assert replay.parse(other) is None


def test_the_compiled_data_cache_gives_the_same_records(tmp_path: Path) -> None:
    import msgspec

    from envsolve.data import _code_digest, _compiled_blob, _encode_hook
    from envsolve.files import cache_key
    from envsolve.paths import state_folder

    fresh = load_dir(data_dir())
    assert load(cache=tmp_path) == fresh  # built and stored
    stored = list((tmp_path / "data").glob("*.msgpack"))
    assert len(stored) == 1
    back = load(cache=tmp_path)  # read back, every field as checked (a Dotted compares by its numbers alone)
    code, key = _code_digest(), cache_key(state_folder())  # sealed with this user's key
    assert back == fresh and _compiled_blob(back, code, key) == _compiled_blob(fresh, code, key) == stored[0].read_bytes()
    wrong = msgspec.structs.replace(fresh, releases=(msgspec.structs.replace(fresh.releases[0], version=1),))
    for blob in (b"not msgpack", msgspec.msgpack.encode({"digest": fresh.digest}), stored[0].read_bytes()[:-9],
                 msgspec.msgpack.encode(wrong, enc_hook=_encode_hook)):  # a version that is no text
        stored[0].write_bytes(blob)
        assert load(cache=tmp_path) == fresh  # corrupt, of another shape, cut short, mistyped: rebuilt
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert load(cache=ro / "sub") == fresh  # unwritable: still answers
    finally:
        ro.chmod(0o700)


def test_the_provider_of_the_compiled_records_answers_as_the_checked_files(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path))
    fresh = Provider(load_dir(data_dir()))

    def answers(p: Provider) -> object:
        return ([(r.raw, [b.variant for b in p.builds(r)]) for r in p.releases("torch")],
                p.gpu("Tesla V100-SXM2-32GB"), p.gpu_suggestions("RTX 3090 Super"), p.m == fresh.m)

    first = load_provider()  # the records compiled and stored
    assert len(list((tmp_path / "data").glob("*.msgpack"))) == 1
    again = load_provider()  # read back: another object, the same answers
    assert again is not first and answers(again) == answers(first) == answers(fresh)


def test_a_wheels_compiled_records_serve_only_its_own_matrices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # hatch_build.py ships the records compiled; load takes them while the files and the checking
    # code are those they were made from, and never writes the user's cache for them
    import shutil

    from envsolve import data

    shipped = tmp_path / "compiled"
    shipped.mkdir()
    made = data.compile_into(shipped)
    monkeypatch.setattr(data, "SHIPPED_COMPILED", str(shipped))
    fresh = load_dir(data_dir())
    assert load(cache=tmp_path / "cache") == fresh and not (tmp_path / "cache").exists()
    edited = tmp_path / "matrices"
    shutil.copytree(data_dir(), edited)
    (edited / "gpus.toml").write_text((edited / "gpus.toml").read_text() + "\n# edited\n")
    assert load(edited, cache=tmp_path / "cache").digest != fresh.digest  # other files: not the wheel's
    assert len(list((tmp_path / "cache" / "data").glob("*.msgpack"))) == 1
    monkeypatch.setattr(data, "_CODE", (*data._CODE, Path(__file__)))  # other checking code: not the wheel's
    assert load(cache=tmp_path / "cache3") == fresh and (tmp_path / "cache3" / "data").is_dir()
    monkeypatch.undo()
    monkeypatch.setattr(data, "SHIPPED_COMPILED", str(shipped))
    made.write_bytes(made.read_bytes()[:100])  # a wheel's file damaged: checked from the files again
    assert load(cache=tmp_path / "cache2") == fresh and (tmp_path / "cache2" / "data").is_dir()


def test_compiling_a_folder_with_a_wrong_row_fails_naming_it(tmp_path: Path) -> None:
    import shutil

    from envsolve.data import compile_into
    from envsolve.errors import MatrixError

    bad = tmp_path / "matrices"
    shutil.copytree(data_dir(), bad)
    (bad / "gpus.toml").write_text((bad / "gpus.toml").read_text().replace('family = "', 'famly = "', 1))
    with pytest.raises(MatrixError, match="famly"):
        compile_into(tmp_path, bad)
    assert list(tmp_path.glob("*.msgpack")) == []


@pytest.mark.parametrize("args", [
    [], ["--frameworks-only"], ["p.toml"], ["./a/p.toml", "-o", "x.lock", "--format=json"],
    ["--output=./o/x.lock", "--format", "toml", "q.toml"], ["-o", "y.lock", "--frameworks-only", "--format", "json"],
])
def test_the_replay_reads_argv_as_click_reads_the_option_table(args: list[str]) -> None:
    # one option table: what the replay reads is what the lock command's click options give
    from click.core import ParameterSource

    from envsolve.cli import _project_file, lock
    from envsolve.lock.job import Request

    with lock.make_context("lock", list(args)) as ctx:  # the spec as the command finds it (none given: here)
        spec_path = _project_file(ctx.params.pop("spec_path"), ctx.params.pop("project"), "project.toml")
        typed = [d for d in ctx.params if ctx.get_parameter_source(d) == ParameterSource.COMMANDLINE]
        request = Request.of(spec_path, ctx.params, typed=typed)
    assert replay.parse(["lock", *args]) == request.replay_key


def test_options_the_replay_does_not_read_send_the_command_to_a_solve() -> None:
    from envsolve.lock.options import LOCK_OPTIONS

    for o in LOCK_OPTIONS:
        if not o.replayed:
            assert replay.parse(["lock", o.names[0], *(["x"] if o.kind != "flag" else [])]) is None
    assert replay.parse(["lock", "-o=x.lock"]) is None  # click reads "=x.lock": not a path the replay guesses


def test_only_requests_the_replay_reads_are_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a lock made with an option the replay does not read (--same-versions here) is not stored: the
    # plain request of the same spec must solve, not replay that lock
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / "h100-torch-newest" / "project.toml").read_bytes())
    r = CliRunner().invoke(main, ["lock", str(spec), "--same-versions"])
    assert r.exit_code == 0, r.output
    assert not list((tmp_path / "cache").glob("locks/*.marshal"))
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "cache").glob("locks/*.marshal"))) == 1


def test_every_replayed_option_is_part_of_the_replay_request() -> None:
    # an option the replay reads must change what it looks up, or a lock with it would replay one without it
    from envsolve.lock.options import LOCK_OPTIONS

    for o in (o for o in LOCK_OPTIONS if o.replayed):
        value = "yes" if o.kind == "flag" else next((c for c in o.choices if c != o.default), "other.lock")
        assert replay.request_of("p.toml", {o.dest: value}) != replay.request_of("p.toml", {}), o
        assert replay.parse(["lock", "p.toml", o.names[-1], *([] if o.kind == "flag" else [value])]) == \
            replay.request_of("p.toml", {o.dest: value}), o


def test_a_changed_code_file_falls_through_to_a_solve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """envsolve's code is an input by each file's size, modification time and inode."""
    spec, _ = _lock(tmp_path, "h100-torch-newest")
    assert replay.replay(["lock", str(spec)])
    code = Path(replay.__file__)
    st = code.stat()
    try:
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # touched: as an edit or a reinstall
        assert not replay.replay(["lock", str(spec)])
    finally:
        os.utime(code, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert replay.replay(["lock", str(spec)])


def _stale(folder: Path, suffix: str, count: int) -> list[Path]:
    """``count`` old cache files in ``folder``, oldest first (modified a day apart, long ago)."""
    folder.mkdir(parents=True, exist_ok=True)
    made = []
    for i in range(count):
        path = folder / f"stale{i:03d}{suffix}"
        path.write_bytes(b"old")
        os.utime(path, ns=((1 + i) * 86_400 * 10**9,) * 2)
        made.append(path)
    return made


def test_the_caches_keep_only_their_newest_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # one entry per spec and one compiled file per envsolve and data version piled up for ever
    from envsolve import data

    cache = tmp_path / "cache"
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(cache))
    stale = _stale(cache / "data", ".msgpack", data.KEEP_COMPILED + 3)
    pickled = _stale(cache / "data", ".pickle", 2)  # an older envsolve's compiled files, read no more
    (cache / "data" / "notes.txt").write_text("not ours")
    monkeypatch.setattr(replay, "KEEP_ENTRIES", 5)
    entries = _stale(cache / "locks", ".marshal", 7)
    spec, _ = _lock(tmp_path, "h100-torch-newest")  # compiles the data (a miss) and stores an entry

    kept = sorted((cache / "data").glob("*.msgpack"))
    assert len(kept) == data.KEEP_COMPILED and (cache / "data" / "notes.txt").is_file()
    assert not any(p.exists() for p in pickled)
    assert set(stale[:4]).isdisjoint(kept) and set(stale[4:]) < set(kept)  # the newest stale ones and the new
    locks = sorted((cache / "locks").glob("*.marshal"))
    assert len(locks) == 5 and set(entries[-4:]) < set(locks) and not any(e.exists() for e in entries[:3])
    assert replay.replay(["lock", str(spec)])  # the entry just written is one of those kept


def test_prune_keeps_the_file_just_written_and_the_most_recently_used(tmp_path: Path) -> None:
    from envsolve.files import prune, touch

    old = _stale(tmp_path, ".pickle", 5)
    (tmp_path / ".x.pickle.12.0badcafe.tmp").write_bytes(b"a writer's")
    (tmp_path / "folder.pickle").mkdir()  # a name it cannot unlink: left, no error
    prune(tmp_path / "absent", ".pickle", 0)
    touch(old[0])  # used now: the newest
    os.utime(tmp_path / "folder.pickle", ns=(1, 1))
    future = _stale(tmp_path / "f", ".pickle", 1)[0]
    os.utime(old[1], ns=(4 * 10**18,) * 2)  # a clock ahead: written later, yet older than it
    prune(tmp_path, ".pickle", 3, written=old[3])  # it and the two most recently used
    assert {p.name for p in tmp_path.glob("*.pickle")} == {old[0].name, old[1].name, old[3].name, "folder.pickle"}
    assert (tmp_path / ".x.pickle.12.0badcafe.tmp").exists() and future.exists()
    prune(tmp_path, ".pickle", 0, written=old[3])
    assert {p.name for p in tmp_path.glob("*.pickle")} == {old[3].name, "folder.pickle"}


def _unsealed(blob: bytes) -> dict[str, Any]:
    """The contents of a replay entry's bytes (its digest left unchecked)."""
    import marshal

    contents: dict[str, Any] = marshal.loads(blob[len(replay._ENTRY) + 32:])
    return contents


def _sealed(contents: dict[str, Any], key: bytes | None = None) -> bytes:
    """A replay entry's bytes with ``contents``, sealed with ``key`` (default: this user's, as only
    a forger with this user's key could write it)."""
    import marshal

    from envsolve.files import cache_key, seal
    from envsolve.paths import state_folder

    blob = marshal.dumps(contents)
    return replay._ENTRY + seal(blob, key or cache_key(state_folder()) or b"") + blob


def test_a_replay_entry_whose_text_is_not_the_lock_on_disk_is_refused(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # entries are written without an fsync: a crash can leave one cut short or with zeroed blocks
    import marshal

    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    spec, _ = _lock(tmp_path, "h100-torch-newest")
    lock = (tmp_path / "envsolve.lock").read_bytes()
    entries = list((tmp_path / "cache" / "locks").glob("*.marshal"))
    assert len(entries) == 1 and replay.replay(["lock", str(spec)])
    for e in entries:
        entry = _unsealed(e.read_bytes())
        e.write_bytes(marshal.dumps({**entry, "text": "\0" * len(entry["text"])}))  # a crash's zeros
        assert not replay.replay(["lock", str(spec)])
        e.write_bytes(_sealed({**entry, "text": "\0" * len(entry["text"])}))  # even with its digest right
        assert not replay.replay(["lock", str(spec)])
    assert (tmp_path / "envsolve.lock").read_bytes() == lock


def test_shared_requirements_are_the_data_builds_whatever_is_asked_first(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # made on demand: a build made for another platform (no pins) must not set its variant's answer
    from envsolve.data import shared_of

    monkeypatch.setenv("ENVSOLVE_NO_CACHE", "1")
    m = load_dir(data_dir())
    asks = [(rel, b) for p in sorted({r.package for r in m.releases}) for rel in Provider(m).releases(p)
            for b in (None, *Provider(m).builds(rel))]
    want = {(rel.package, rel.version, b.variant if b else ""): shared_of(rel, b) for rel, b in asks}
    platforms = ("windows/amd64", "linux/arm64", "darwin/arm64")
    for order in (1, -1):
        p = Provider(m)
        for rel, b in asks[::order]:
            for built in ([None] if b is None else [*(p.for_platform(b, x) for x in platforms[::order]), b]):
                assert p.shared(rel, built) == want[rel.package, rel.version, b.variant if b else ""]
    assert any(p.for_platform(b, "windows/amd64").shared != b.shared for _, b in asks if b is not None)


def test_a_record_is_compiled_with_the_fields_that_differ_from_their_defaults(tmp_path: Path) -> None:
    import msgspec

    from envsolve.data import _split, compile_into

    m = load_dir(data_dir())
    made = _split(compile_into(tmp_path).read_bytes())
    assert made is not None
    raw = msgspec.msgpack.decode(made[1])  # untyped: the fields as stored
    i, build = next((i, b) for i, b in enumerate(m.builds) if b.package == "torch" and not b.ptx and b.cuda is not None)
    fields = raw["builds"][i]
    assert {"source", "package", "version", "cuda", "archs"} <= set(fields)
    assert "ptx" not in fields and "confidence" not in fields  # () and "high": their defaults


# ----------------------------------------------------------------------------- issue 40: trust, round 2


def _one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(spec, its one replay entry), the entry replaying."""
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    spec, _ = _lock(tmp_path, "h100-torch-newest")
    entries = list((tmp_path / "cache" / "locks").glob("*.marshal"))
    assert len(entries) == 1 and replay.replay(["lock", str(spec)])
    return spec, entries[0]


def _four_gib() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # /dev/zero read whole: a MemoryError, not the machine's


def _replayed_apart(spec: Path) -> str:
    """Whether another process replays the lock of ``spec`` ("True"/"False"), within a minute."""
    import subprocess
    import sys

    code = "import sys; from envsolve.lock import replay; print(replay.replay(['lock', sys.argv[1]]))"
    r = subprocess.run([sys.executable, "-c", code, str(spec)], capture_output=True, text=True, timeout=60,
                       preexec_fn=_four_gib)
    assert "Traceback" not in r.stderr, r.stderr
    return r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr


def test_a_replay_entry_that_is_a_fifo_or_a_device_is_passed_by_never_read(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # defect 2: open() of a FIFO blocked the replay for ever; /dev/zero was read until memory ran out
    spec, entry = _one_entry(tmp_path, monkeypatch)
    lock = (tmp_path / "envsolve.lock").read_bytes()
    assert _replayed_apart(spec) == "True"  # another process finds the same entry
    entry.unlink()
    os.mkfifo(entry)
    assert _replayed_apart(spec) == "False"
    entry.unlink()
    entry.symlink_to("/dev/zero")
    assert _replayed_apart(spec) == "False"
    assert (tmp_path / "envsolve.lock").read_bytes() == lock
    entry.unlink()
    r = CliRunner().invoke(main, ["lock", str(spec)])  # the full command solves and stores a new entry
    assert r.exit_code == 0 and (tmp_path / "envsolve.lock").read_bytes() == lock
    assert entry.is_file() and not entry.is_symlink() and replay.replay(["lock", str(spec)])


def test_a_replay_entry_others_could_write_or_forged_is_not_believed(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # defect 4: an entry is private, and its contents are what its digest says
    import marshal
    import stat

    spec, entry = _one_entry(tmp_path, monkeypatch)
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600
    entry.chmod(0o666)
    assert not replay.replay(["lock", str(spec)])
    entry.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(entry, 4242, 4242)  # another user's
        assert not replay.replay(["lock", str(spec)])
        os.chown(entry, 0, 0)
    capsys.readouterr()
    assert replay.replay(["lock", str(spec)])
    genuine = entry.read_bytes()
    contents = _unsealed(genuine)
    forged = {**contents, "messages": [[False, "wrote nothing: all is well"]]}
    entry.write_bytes(genuine[:len(replay._ENTRY) + 32] + marshal.dumps(forged))  # its digest stale
    capsys.readouterr()
    assert not replay.replay(["lock", str(spec)]) and capsys.readouterr().out == ""
    for odd in ({**contents, "messages": "no list"}, {**contents, "data_version": 3}, [1, 2, 3]):
        entry.write_bytes(_sealed(odd))  # type: ignore[arg-type]
        assert not replay.replay(["lock", str(spec)])
    entry.write_bytes(_sealed(forged, os.urandom(32)))  # sealed with another key: made elsewhere
    assert not replay.replay(["lock", str(spec)]) and capsys.readouterr().out == ""
    entry.write_bytes(genuine)
    assert replay.replay(["lock", str(spec)])


def test_a_lock_of_another_day_is_solved_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base images' end-of-life warnings are told against the day: a replay never repeats
    yesterday's (the day is one of the inputs)."""
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n')
    request = replay.parse(["lock", str(spec)])
    assert request is not None
    days = []
    for day in ("2026-12-07", "2026-12-08"):
        monkeypatch.setattr(replay.time, "strftime", lambda fmt, day=day: day)
        days.append(replay._digest(request, {}, None))
    assert days[0] != days[1]
