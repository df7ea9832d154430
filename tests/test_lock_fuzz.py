"""Fuzz tests: a lock is an input too. A valid full lock, each value replaced by (or followed by) a
hostile string or a value of the wrong type, digested again as anyone who can edit a lock can, then
read by `render`, `build --print`, `doctor` and `sync` (up to its first install, which is faked):
never a traceback, never a file outside the output folder, never a value a shell would run."""

from __future__ import annotations

import copy
import os
import re
import shlex
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from envsolve import sync as syncing
from envsolve.cli import main
from envsolve.data import load_dir
from envsolve.errors import CheckFailed, LockError
from envsolve.host import detect as det
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from envsolve.render.artifacts import render_environment
from envsolve.solve import solve
from tests.conftest import FIXTURE, TEST_INDEXES, spec_of
from tests.test_detect import _DETECT, HOSTS
from tests.test_lock import redigested

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SPEC = ('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\n'
        '[packages]\npip = ["requests<3"]\napt = ["libgl1"]\n')
ROOT = "{ROOT}"  # an absolute path inside the example's folder, filled in when it runs
HOSTILE = ["; id", "$(id)", "`id`", "\nid", "\nRUN id", "' ; id ; '", '" ; id ; "', "&& id", "| id", "${IFS}id",
           "../../x", "../../../../x", f"{ROOT}/abs", "/etc/passwd", "x\x00y", "\r\nid", "a" * 5000, "--help",
           "-o/tmp/x", "", " ", "\\", "é", "~/x", "*", ".."]
WRONG: list[Any] = [0, -1, 1.5, True, [], ["; id"], {}, {"a": "; id"}, [1, 2]]


def _base() -> dict[str, Any]:
    """A full lock of a CUDA environment whose Python uv installs (so it reaches RUN lines), with
    apt and pip lines, a PyTorch-index framework and hashed packages from two indexes."""
    g = Provider(load_dir(FIXTURE))
    spec = spec_of(SPEC, g)
    resolutions = solve(g, spec)
    torch = next(p for p in resolutions[0].packages if p.name == "torch")
    urls = {"pypi": TEST_INDEXES["ENVSOLVE_INDEX_PYPI"], "pytorch": TEST_INDEXES["ENVSOLVE_INDEX_PYTORCH"]}
    packages = (
        lockfile.Package(name="torch", version=torch.version, index_url=f"{urls['pytorch']}/{torch.index_path}",
                         hashes=("sha256:" + "1" * 64,), direct=True),
        lockfile.Package(name="filelock", version="3.16.1", index_url="", hashes=("sha256:" + "0" * 64,),
                         direct=False))
    lock = lockfile.build(project=spec.name, spec_name="project.toml", spec_bytes=SPEC.encode(),
                          data_version=g.data_version, data_digest=g.digest, resolutions=resolutions,
                          pip=spec.pip, apt=spec.apt, urls=urls, full={"default": packages})
    data = tomllib.loads(lockfile.dumps(lock))
    data["environments"][0]["tools"] = {"uv": "0.5.1"}
    assert data["environments"][0]["python_from"] == "uv"
    return data


BASE = _base()


def _paths(v: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every key path of a parsed lock: tables, arrays and the values in them."""
    if path:
        yield path
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        yield from _paths(x, (*path, k))


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for k in path:
        data = data[k]
    return data


PATHS = [p for p in _paths(BASE) if p != ("lock_digest",)]
TABLES = [p for p in [(), *PATHS] if isinstance(_at(BASE, p), dict) and _at(BASE, p)]

BENIGN = ["0", "a", "1.0", "x-y", "A.B_c", "3.9", "sm_80", "cu118"]  # pass some checks: the files are made
values = st.one_of(st.sampled_from(HOSTILE), st.sampled_from(WRONG), st.sampled_from(BENIGN), st.text(max_size=20))
mutations = st.one_of(
    st.tuples(st.just("replace"), st.sampled_from(PATHS), values),
    st.tuples(st.just("append"), st.sampled_from(PATHS), st.sampled_from(HOSTILE)),  # "3.12" + "; id"
    st.tuples(st.just("key"), st.sampled_from(TABLES), st.sampled_from(HOSTILE)),  # a key renamed
)


def _filled(v: Any, root: Path) -> Any:
    return v.replace(ROOT, str(root)) if isinstance(v, str) else v


def _mutated(data: dict[str, Any], mutation: tuple[str, tuple[Any, ...], Any], root: Path) -> None:
    """``data`` with one edit (none where an earlier edit took its key path away)."""
    kind, path, value = mutation
    value = _filled(value, root)
    try:
        parent, target = _at(data, path[:-1]) if path else data, _at(data, path)
    except (KeyError, IndexError, TypeError):
        return
    if not isinstance(parent, (dict, list)) or (kind == "key" and not (isinstance(target, dict) and target)):
        return
    if kind == "key":
        target[value] = target.pop(next(iter(target)))
    elif kind == "append":
        old = parent[path[-1]]
        parent[path[-1]] = (old + value) if isinstance(old, str) else value
    else:
        parent[path[-1]] = value


def _tree(root: Path) -> set[Path]:
    return {Path(d) / n for d, dirs, files in os.walk(root) for n in [*dirs, *files]}


# ---------------------------------------------------------------------------- what a shell would run

# ``id`` as a command word: after ; & | ( ` or a line break, or first (the hostile strings' payload)
_ID_COMMAND = re.compile(r"(?:^|[;&|`(\s])id(?:[\s;&|`)]|$)")


def _exposed(shell: str) -> str:
    """``shell`` with every quoted or escaped character replaced by ``_``: what a POSIX shell would
    still read as syntax (``$(...)`` inside double quotes is a shell of its own, as bash reads it).
    AssertionError when a quote or a substitution is left open."""
    out: list[str] = []
    modes = ["n"]  # n: plain, d: inside "...", c: inside $(...) within "..."
    i = 0
    while i < len(shell):
        ch, two, mode = shell[i], shell[i:i + 2], modes[-1]
        if mode == "d" and ch == '"':
            modes.pop()
        elif mode == "d" and two == "$(" or mode != "d" and two == "$(" and modes.count("d"):
            modes.append("c")
            out.append("$(")
            i += 2
            continue
        elif mode == "d":
            step = 2 if ch == "\\" else 1
            out.append("_" * len(shell[i:i + step]))
            i += step
            continue
        elif ch == "'":
            end = shell.index("'", i + 1)  # ValueError: an open quote
            out.append("_" * (end - i + 1))
            i = end + 1
            continue
        elif ch == "\\":
            out.append("__")
            i += 2
            continue
        elif ch == '"':
            modes.append("d")
        elif mode == "c" and ch == ")":
            modes.pop()
        out.append(ch)
        i += 1
    assert modes == ["n"], f"a quote or a substitution is left open in {shell!r}"
    return "".join(out)


def _run_lines(dockerfile: str) -> list[str]:
    """The shell of each RUN instruction (continuations joined, BuildKit --mount flags dropped)."""
    joined = dockerfile.replace("\\\n", " ")
    lines = [line[4:] for line in joined.splitlines() if line.startswith("RUN ")]
    return [re.sub(r"--mount=\S+", "", line) for line in lines]


def _check_run(line: str, where: str) -> None:
    """A RUN line parses as a shell line and runs no ``id``."""
    assert not _ID_COMMAND.search(_exposed(line)), f"{where}: {line!r}"


def _check_argv(line: str, where: str) -> None:
    """A printed command parses, and no argument is a hostile fragment alone."""
    tokens = shlex.split(line)
    assert not any(t in ("id", "; id", "$(id)", "`id`", "&& id", "| id") for t in tokens), f"{where}: {line!r}"
    assert not _ID_COMMAND.search(_exposed(line)), f"{where}: {line!r}"


# ---------------------------------------------------------------------------- the commands


def _invoke(args: list[str]) -> Result:
    r = CliRunner().invoke(main, args)
    assert r.exception is None or isinstance(r.exception, SystemExit), (args, r.exception)
    assert r.exit_code in (0, 1, 2), (args, r.output)
    assert "Traceback" not in r.output, (args, r.output)
    return r


def _only_under(before: set[Path], after: set[Path], allowed: Path | None, what: str) -> None:
    new = after - before
    outside = sorted(p for p in new if allowed is None or not p.is_relative_to(allowed))
    assert not outside, f"{what} wrote outside its output folder: {outside}"
    assert before <= after, f"{what} removed {sorted(before - after)}"


def _commands(root: Path, lock: Path) -> dict[str, int]:
    """Each command's exit status, every rule above checked."""
    text = lock.read_bytes()
    codes = {}
    out, built, venv = root / "out", root / "built", root / "venv"
    for what, args, allowed in [
        ("render", ["render", str(lock), "-o", str(out)], out),
        ("build --print", ["build", str(lock), "-o", str(built), "--print", "--engine", "podman"], built),
        ("doctor", ["doctor", str(lock)], None),
        ("sync", ["sync", str(lock), "--venv", str(venv), "--frozen", "--force"], venv),
    ]:
        before = _tree(root)
        r = _invoke(args)
        codes[what] = r.exit_code
        _only_under(before, _tree(root), allowed, what)
        assert lock.read_bytes() == text, f"{what} changed the lock"
        if what == "build --print" and r.exit_code == 0:
            for line in r.stdout.splitlines():
                if not line.startswith("#"):
                    _check_argv(line, "build --print")
    for dockerfile in out.rglob("Dockerfile"):
        for line in _run_lines(dockerfile.read_text()):
            _check_run(line, str(dockerfile))
    return codes


def _stop_before_installing(venv: Path, python: str, talk: object) -> None:
    raise CheckFailed("test: sync stops here, before it makes a venv or installs anything")


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without a GPU (recorded), and a sync that never installs."""
    d = HOSTS / "no-gpu"
    monkeypatch.setattr(det, "detect", lambda: _DETECT(environ={}, path=str(d / "bin"), root=d / "root", nvml=False))
    monkeypatch.setattr(syncing, "_make_venv", _stop_before_installing)


def test_the_unmutated_lock_goes_through_every_command(host: None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        lock = root / "a" / "b" / "envsolve.lock"
        lock.parent.mkdir(parents=True)
        lock.write_text(redigested(copy.deepcopy(BASE)))
        assert _invoke(["render", str(lock), "-o", str(root / "out")]).exit_code == 0
        r = _invoke(["sync", str(lock), "--venv", str(root / "venv"), "--frozen", "--force"])
        assert "sync stops here" in r.output  # it got as far as making the venv
        assert _commands(root, lock) == {"render": 0, "build --print": 0, "doctor": 1, "sync": 1}
        assert len(_run_lines((root / "out" / "default" / "Dockerfile").read_text())) >= 4


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(st.lists(mutations, min_size=1, max_size=3))
def test_a_mutated_re_digested_lock_never_gives_a_traceback_a_write_outside_or_a_shell_command(
        host: None, edits: list[tuple[str, tuple[Any, ...], Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        data = copy.deepcopy(BASE)
        for edit in edits:
            _mutated(data, edit, root)
        lock = root / "a" / "b" / "envsolve.lock"
        lock.parent.mkdir(parents=True)
        lock.write_text(redigested(data))
        for what, code in _commands(root, lock).items():
            event(f"{what}: exit {code}")


# ---------------------------------------------------------------------------- quoting, the second line


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["python", "uv", "apt", "pip", "index", "index_path"]), st.sampled_from(HOSTILE[:12]))
def test_a_value_past_the_checks_reaches_a_run_line_only_quoted(field: str, hostile: str) -> None:
    """The renderer alone, given a lock the reader never saw (values the reader refuses): every RUN
    line still parses and runs no ``id``; or the value is refused (exit 2)."""
    lock = lockfile.loads(redigested(copy.deepcopy(BASE)), "envsolve.lock")
    env = lock.environments[0]
    torch = env.frameworks[0]
    edits: dict[str, Any] = {
        "python": {"python": "3.12" + hostile}, "uv": {"tools": (("uv", "0.5.1" + hostile),)},
        "apt": {"apt": ("libgl1" + hostile,)}, "pip": {"pip": ("requests" + hostile,)},
        "index": {"frameworks": (replace(torch, index="pytorch" + hostile),)},
        "index_path": {"frameworks": (replace(torch, index_path=torch.index_path + hostile),)}}
    env = replace(env, **edits[field])
    lock = replace(lock, environments=(env,))
    try:
        texts = render_environment(lock, env)
    except LockError:
        return
    for line in _run_lines(texts["Dockerfile"]):
        _check_run(line, f"Dockerfile ({field} + {hostile!r})")
