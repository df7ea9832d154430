"""Fuzz tests: a cache is a file anyone with the cache folder's rights can change. A compiled data
file and a lock replay's entry, mutated (bytes changed, cut short, grown, their header or digest
from another file, another envsolve's, others' to write) are made again or passed by: never a
traceback, never a changed answer, and `data --validate` reads the TOML whatever the cache holds.
Only a file sealed with this user's own key (kept outside the cache folder) is believed: whoever
holds it can change this user's files anyway."""

from __future__ import annotations

import marshal
import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envsolve import data
from envsolve.cli import main
from envsolve.data import load, load_dir
from envsolve.files import cache_key, seal
from envsolve.lock import replay
from envsolve.paths import state_folder
from tests.conftest import FIXTURE

CASES = Path(__file__).parent / "cases"


def _key() -> bytes:
    """This user's key that seals the caches."""
    key = cache_key(state_folder())
    assert key is not None
    return key

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _mutated(blob: bytes, how: st.DataObject) -> bytes:
    """``blob`` with bytes changed, cut short or grown (never itself)."""
    kind = how.draw(st.sampled_from(["flip", "cut", "grow", "zeros"]), label="mutation")
    at = how.draw(st.integers(0, len(blob) - 1), label="at")
    if kind == "flip":
        return blob[:at] + bytes([blob[at] ^ how.draw(st.integers(1, 255), label="xor")]) + blob[at + 1:]
    if kind == "cut":
        return blob[:at]
    if kind == "grow":
        return blob[:at] + how.draw(st.binary(min_size=1, max_size=64), label="bytes") + blob[at:]
    size = how.draw(st.integers(1, 4096), label="zeros")
    return blob[:at] + bytes(size) + blob[at + size:] if blob[at:at + size] != bytes(size) else blob[:at]


# ---------------------------------------------------------------------------- the compiled data


@pytest.fixture
def compiled(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(matrices, cache folder, the compiled file) of a copy of the fixture matrices."""
    root, cache = tmp_path / "matrices", tmp_path / "cache"
    shutil.copytree(FIXTURE, root)
    load(root, cache=cache)
    (stored,) = (cache / "data").glob("*.msgpack")
    return root, cache, stored


def _forgeries(root: Path, how: st.DataObject) -> bytes:
    """A compiled file of other records whose header is not wholly theirs: another envsolve's, other
    matrices', other code's, or the digest of other records."""
    m = load_dir(root)
    other = msgspec.structs.replace(m, data_version=how.draw(st.text(max_size=12), label="data_version"),
                                    gpus=m.gpus[:how.draw(st.integers(0, len(m.gpus)), label="gpus")])
    records = msgspec.msgpack.encode(other, enc_hook=data._encode_hook)
    made = data._made(m.digest, data._code_digest(), records, _key())
    field = how.draw(st.sampled_from(["version", "data", "code", "records"]), label="field")
    made = msgspec.structs.replace(made, **{field: how.draw(st.text(max_size=70).filter(
        lambda t: t != getattr(made, field)), label="value")})
    head = msgspec.msgpack.encode(made)
    return data._MAGIC + len(head).to_bytes(2, "big") + head + records


@FUZZ
@given(how=st.data())
def test_a_mutated_or_forged_compiled_file_is_made_again(compiled: tuple[Path, Path, Path],
                                                         how: st.DataObject) -> None:
    root, cache, stored = compiled
    fresh = load_dir(root)
    genuine = stored.read_bytes()
    forged = how.draw(st.booleans(), label="forged")
    stored.write_bytes(_forgeries(root, how) if forged else _mutated(genuine, how))
    stored.chmod(how.draw(st.sampled_from([0o600, 0o644, 0o664, 0o666]), label="mode"))
    assert load(root, cache=cache) == fresh
    assert stored.read_bytes() == genuine and load(root, cache=cache) == fresh


@FUZZ
@given(how=st.data())
def test_a_file_of_another_user_or_others_to_write_is_never_believed(compiled: tuple[Path, Path, Path],
                                                                     how: st.DataObject) -> None:
    root, cache, stored = compiled
    fresh = load_dir(root)
    m = msgspec.structs.replace(fresh, data_version=how.draw(st.text(min_size=1, max_size=12), label="version"))
    stored.write_bytes(data._compiled_blob(m, data._code_digest(), _key()))  # all its digests right
    others = how.draw(st.sampled_from([0o620, 0o602, 0o666, 0o660]), label="mode")
    stored.chmod(others)
    if os.geteuid() == 0 and how.draw(st.booleans(), label="another owner"):
        stored.chmod(0o600)
        os.chown(stored, 4242, 4242)
    assert load(root, cache=cache) == fresh


@FUZZ
@given(how=st.data())
def test_data_validate_answers_from_the_toml_whatever_the_cache_holds(compiled: tuple[Path, Path, Path],
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      how: st.DataObject) -> None:
    root, cache, stored = compiled
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(cache))
    fresh, genuine = load_dir(root), stored.read_bytes()
    m = msgspec.structs.replace(fresh, data_version=how.draw(st.text(min_size=1, max_size=12), label="version"))
    stored.write_bytes(data._compiled_blob(m, data._code_digest(), _key()) if how.draw(st.booleans(), label="sealed")
                       else _mutated(genuine, how))
    stored.chmod(0o600)
    r = CliRunner().invoke(main, ["--matrices", str(root), "data", "--validate"])
    stored.write_bytes(genuine)
    assert r.exit_code == 0 and r.output == f"{root.resolve()}: valid (data {fresh.data_version}, {fresh.digest})\n"


# ---------------------------------------------------------------------------- the lock replay's entries


@pytest.fixture
def entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
          capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, bytes, str]:
    """(spec, its one replay entry, the lock, what a replay prints)."""
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / "h100-torch-newest" / "project.toml").read_bytes())
    assert CliRunner().invoke(main, ["lock", str(spec)]).exit_code == 0
    (found,) = (tmp_path / "cache" / "locks").glob("*.marshal")
    capsys.readouterr()
    assert replay.replay(["lock", str(spec)])
    return spec, found, (tmp_path / "envsolve.lock").read_bytes(), capsys.readouterr().out


def _sealed(contents: Any, key: bytes) -> bytes:
    """An entry of ``contents`` sealed with ``key``."""
    blob = marshal.dumps(contents)
    return replay._ENTRY + seal(blob, key) + blob


def _odd_entries(genuine: dict[str, Any], how: st.DataObject) -> bytes:
    """Entries sealed with another key (made elsewhere) holding anything, or sealed with this user's
    key but of a wrong shape, or whose text or data version is not the lock on disk's."""
    # (an empty list of messages is a well-typed entry: only a wrong shape, or another key, is drawn here)
    field = how.draw(st.sampled_from(["text", "data_version", "messages", "whole"]), label="field")
    odd = how.draw(st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers(), min_size=1, max_size=3),
                             st.lists(st.tuples(st.integers(), st.text(max_size=5)).map(list), min_size=1, max_size=2)),
                   label="value")
    elsewhere = how.draw(st.binary(min_size=32, max_size=32).filter(lambda k: k != _key()), label="other key")
    if field == "messages" and how.draw(st.booleans(), label="well-typed messages"):
        odd = how.draw(st.lists(st.tuples(st.booleans(), st.text(max_size=20)).map(list), max_size=3), label="messages")
        return _sealed({**genuine, "messages": odd}, elsewhere)  # what only this user's key could make believed
    contents = odd if field == "whole" else {**genuine, field: odd}
    return _sealed(contents, elsewhere if how.draw(st.booleans(), label="elsewhere") else _key())


@FUZZ
@given(how=st.data())
def test_a_mutated_or_odd_replay_entry_is_passed_by(entry: tuple[Path, Path, bytes, str],
                                                    capsys: pytest.CaptureFixture[str], how: st.DataObject) -> None:
    spec, path, lock, printed = entry
    genuine = path.read_bytes()
    contents = marshal.loads(genuine[len(replay._ENTRY) + 32:])
    path.write_bytes(_odd_entries(contents, how) if how.draw(st.booleans(), label="sealed")
                     else _mutated(genuine, how))
    capsys.readouterr()
    try:
        replayed = replay.replay(["lock", str(spec)])
    finally:
        path.write_bytes(genuine)
    assert (spec.parent / "envsolve.lock").read_bytes() == lock
    assert (replayed, capsys.readouterr().out) in ((False, ""), (True, printed))
