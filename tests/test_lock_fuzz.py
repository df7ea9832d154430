"""Fuzz tests: a lock is an input too. A valid full lock, each value replaced by (or followed by) a
hostile string or a value of the wrong type, digested again as anyone who can edit a lock can, then
read by `render`, `build --print`, `doctor` and `sync` (up to its first install, which is faked):
never a traceback, never a file outside the output folder, never a value a shell would run."""

from __future__ import annotations

import copy
import json
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
    data["environments"][0]["base_image_digest"] = "sha256:" + "4" * 64  # as a full lock records it
    assert data["environments"][0]["python_from"] == "uv"
    _with_source_builds(data["environments"][0])
    return data


# what the data's flash-attn and apex rows build with (matrices/extensions.toml)
_BUILD_REQUIRES = ("ninja", "packaging", "psutil", "einops", "wheel", "setuptools")


def _with_source_builds(env: dict[str, Any]) -> None:
    """Two source builds as a full lock holds them: flash-attn from its hashed sdist, apex from a git
    URL, each with its arch variable, settings and build requirements (pinned among the packages)."""
    env["extensions"] = [
        {"name": "flash-attn", "version": "2.8.3.post1", "install": "source",
         "url": "https://files.example/flash_attn-2.8.3.post1.tar.gz", "hash": "sha256:" + "2" * 64,
         "build_env": "FLASH_ATTN_CUDA_ARCHS", "build_archs": "120", "build_from": "",
         "build_requires": list(_BUILD_REQUIRES), "build_vars": ["FLASH_ATTENTION_FORCE_BUILD=TRUE"]},
        {"name": "apex", "version": "0.1", "install": "source", "url": "", "hash": "",
         "build_env": "TORCH_CUDA_ARCH_LIST", "build_archs": "12.0",
         "build_from": "apex @ git+https://github.com/NVIDIA/apex.git",
         "build_requires": ["ninja", "packaging", "wheel", "setuptools"], "build_vars": ["APEX_CPP_EXT=1", "APEX_CUDA_EXT=1"]}]
    env["packages"] = sorted([*env["packages"], *({"name": n, "version": "1.0", "index_url": "", "hashes": [
        "sha256:" + "3" * 64], "direct": True} for n in _BUILD_REQUIRES)], key=lambda p: p["name"])


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
EXTENSION_PATHS = [p for p in PATHS if p[:3] == ("environments", 0, "extensions")]

BENIGN = ["0", "a", "1.0", "x-y", "A.B_c", "3.9", "sm_80", "cu118"]  # pass some checks: the files are made
values = st.one_of(st.sampled_from(HOSTILE), st.sampled_from(WRONG), st.sampled_from(BENIGN), st.text(max_size=20))
# what a forged extension entry would set: a variable its build does not read, a setting, a shape
FORGED = ["PATH", "LD_PRELOAD", "HTTPS_PROXY", "PYTHONPATH", "TORCH_CUDA_ARCH_LIST", "HTTPS_PROXY=proxy.example",
          "LD_PRELOAD=/tmp/x.so", "PATH=/tmp", "9.0", "8.0;9.0", "90;120", "120 ; id", "evil-package",
          "flash-attn @ https://evil.example/x.tar.gz", "sha256:" + "f" * 64, "source", "github", "index"]
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


def _written(edits: list[tuple[str, tuple[Any, ...], Any]], root: Path) -> Path:
    """The base lock with ``edits`` made, digested again, at ``root``/a/b/envsolve.lock."""
    data = copy.deepcopy(BASE)
    for edit in edits:
        _mutated(data, edit, root)
    lock = root / "a" / "b" / "envsolve.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(redigested(data))
    return lock


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


# the variables every image sets, and those the data's extension rows name (their builds read them)
_IMAGE_ENV = {"DEBIAN_FRONTEND", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "PIP_DISABLE_PIP_VERSION_CHECK",
              "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES", "KERAS_BACKEND", "UV_PYTHON_INSTALL_DIR",
              "VIRTUAL_ENV", "PATH"}
_BUILD_ENV = {v for r in load_dir(Path(__file__).parent.parent / "matrices").extensions
              for v in (r.build_env, *(s.partition("=")[0] for s in r.build_vars)) if v}


def _check_env(dockerfile: str, where: str) -> None:
    """Every ENV sets a variable the image always sets or one an extension's build reads; PATH only
    to the venv's."""
    joined = dockerfile.replace("\\\n", " ")
    for line in (ln[4:] for ln in joined.splitlines() if ln.startswith("ENV ")):
        for word in shlex.split(line):
            name, _, value = word.partition("=")
            assert name in _IMAGE_ENV | _BUILD_ENV, f"{where}: ENV {line!r}"
            assert name != "PATH" or value == "/opt/venv/bin:$PATH", f"{where}: ENV {line!r}"


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
        _check_env(dockerfile.read_text(), str(dockerfile))
    return codes


def _stop_before_installing(*args: object) -> None:
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
        lock = _written(edits, root)
        for what, code in _commands(root, lock).items():
            event(f"{what}: exit {code}")


extension_mutations = st.one_of(
    st.tuples(st.just("replace"), st.sampled_from(EXTENSION_PATHS), st.one_of(st.sampled_from(FORGED), values)),
    st.tuples(st.just("append"), st.sampled_from(EXTENSION_PATHS), st.sampled_from(HOSTILE)),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(st.lists(extension_mutations, min_size=1, max_size=3))
def test_a_mutated_extension_entry_is_refused_or_reaches_the_image_only_quoted(
        host: None, edits: list[tuple[str, tuple[Any, ...], Any]]) -> None:
    """A source build's variable, arch list, settings, build requirements, sdist URL and hash
    edited: the lock is refused (exit 2, naming the key), or every RUN line runs no ``id`` and every
    ENV names a variable the package's build reads."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        lock = _written(edits, root)
        codes = _commands(root, lock)
        if codes["render"] == 2:
            r = _invoke(["render", str(lock), "-o", str(root / "again")])
            assert f"{lock}: " in r.stderr and "TIP" in r.stderr, r.stderr
        for what, code in codes.items():
            event(f"{what}: exit {code}")


_FLASH = ("environments", 0, "extensions", 0)
FORGED_KEYS = [(*_FLASH, k) for k in ("build_env", "build_archs", "build_from", "url", "hash", "install")] + [
    (*_FLASH, "build_vars", 0), (*_FLASH, "build_requires", 0)]


def _key(path: tuple[Any, ...]) -> str:
    """The lock's name of an extension entry's key path (``build_vars[0]``)."""
    return str(path[4]) + "".join(f"[{k}]" for k in path[5:])


@pytest.mark.parametrize("path", FORGED_KEYS, ids=_key)
def test_each_forged_build_value_is_refused_naming_the_key_or_reaches_the_image_only_as_the_data_allows(
        path: tuple[Any, ...]) -> None:
    """Every value of FORGED in each key of a source build's entry: `render` refuses it (exit 2,
    naming the lock, the key and the value), or its Dockerfile's ENV names only variables the
    package's build reads and its RUN lines run no ``id``."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        for i, value in enumerate(FORGED):
            data = copy.deepcopy(BASE)
            _mutated(data, ("replace", path, value), root)
            lock = root / str(i) / "envsolve.lock"
            lock.parent.mkdir()
            lock.write_text(redigested(data))
            r = _invoke(["render", str(lock), "-o", str(root / str(i) / "out")])
            if r.exit_code == 2:
                assert f"{lock}: environments[0].extensions[0].{_key(path)}" in r.stderr, (value, r.stderr)
                continue
            assert r.exit_code == 0, (value, r.output)
            text = (root / str(i) / "out" / "default" / "Dockerfile").read_text()
            for line in _run_lines(text):
                _check_run(line, f"{path} = {value!r}")
            _check_env(text, f"{path} = {value!r}")
            for arch_list in re.findall(r"ENV FLASH_ATTN_CUDA_ARCHS=\S+", text):  # none when it no longer builds
                assert re.fullmatch(r'ENV FLASH_ATTN_CUDA_ARCHS="[0-9;]+"', arch_list), value


# ---------------------------------------------------------------------------- quoting, the second line


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(["python", "uv", "apt", "pip", "index", "index_path", "build_env", "build_archs", "build_vars",
                        "hash"]), st.sampled_from(HOSTILE[:12]))
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
        "index_path": {"frameworks": (replace(torch, index_path=torch.index_path + hostile),)},
        **{key: {"extensions": (_appended(env.extensions[0], key, hostile), *env.extensions[1:])}
           for key in ("build_env", "build_archs", "build_vars", "hash")}}
    env = replace(env, **edits[field])
    lock = replace(lock, environments=(env,))
    try:
        texts = render_environment(lock, env)
    except LockError:
        return
    for line in _run_lines(texts["Dockerfile"]):
        _check_run(line, f"Dockerfile ({field} + {hostile!r})")
    _check_env(texts["Dockerfile"], f"Dockerfile ({field} + {hostile!r})")


def _appended(x: Any, key: str, hostile: str) -> Any:
    """Extension entry ``x`` with ``hostile`` after its ``key`` (after each item of a list)."""
    old = getattr(x, key)
    return replace(x, **{key: tuple(v + hostile for v in old) if isinstance(old, tuple) else old + hostile})


# ---------------------------------------------------------------------------- a sync's marker

def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20), _nested, max_leaves=12)
markers = st.one_of(
    st.binary(max_size=200),  # anything at all
    _JSON.map(lambda v: json.dumps(v).encode()),  # JSON of any shape
    st.fixed_dictionaries({"format": st.sampled_from([1, "1", 2, None]), "lock_digest": _JSON, "environment": _JSON,
                           "packages": _JSON}).map(lambda v: json.dumps(v).encode()),  # a marker's keys, any values
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(markers)
def test_a_mutated_sync_marker_never_gives_a_traceback_and_never_costs_a_file(host: None, marker: bytes) -> None:
    """The marker says which folder is a sync's: whatever it holds, sync and run read it without a
    traceback, a folder without a marker of the sync's own format is refused as it was, and nothing
    in the folder is lost (the sync here stops before it builds anything)."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        lock = root / "envsolve.lock"
        lock.write_text(redigested(copy.deepcopy(BASE)))
        venv = root / "venv"
        venv.mkdir()
        (venv / "train.py").write_text("mine\n")
        (venv / syncing.MARKER).write_bytes(marker)
        before = {p: p.read_bytes() for p in venv.rglob("*")}
        ours = syncing._read_marker(venv) != {}
        assert syncing.current(lockfile.read(lock), venv, None) is None  # never trusted: no venv there
        for args in (["sync", str(lock), "--venv", str(venv), "--frozen", "--force"],
                     ["run", "--lock", str(lock), "--venv", str(venv), "--frozen", "--force", "--", "true"]):
            r = _invoke(args)
            assert r.exit_code == (1 if ours else 2), r.output  # a sync's folder: it gets as far as the build
            assert {p: p.read_bytes() for p in venv.rglob("*")} == before
            assert [p.name for p in root.iterdir() if "envsolve-" in p.name] == []
