"""The plain lock (`envsolve lock SPEC [-o] [--format] [--frameworks-only]`, run without click by
``envsolve.__main__``) answers every held case exactly as the click command does."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.command import plain_lock

CASES = Path(__file__).parent / "cases"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "project.toml").is_file())


def _plain(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = 0
    try:
        assert plain_lock(argv, environ={})
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name", NAMES)
def test_the_plain_lock_answers_as_the_click_command(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ENVSOLVE_NO_CACHE", "1")  # both solve
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")  # the plain lock takes no option from the environment
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / name / "project.toml").read_bytes())
    for fmt in ("toml", "json"):
        clicked = CliRunner().invoke(main, ["lock", str(spec), "--frameworks-only", "--format", fmt, "-o",
                                          str(tmp_path / "a.lock")])
        code, out, err = _plain(["lock", str(spec), "--frameworks-only", "--format", fmt, "-o", str(tmp_path / "b.lock")],
                                 capsys)
        assert code == clicked.exit_code
        assert sorted((out + err).replace("b.lock", "a.lock").splitlines()) == sorted(clicked.output.splitlines())
        assert out == clicked.stdout.replace("a.lock", "b.lock")  # the product alone on stdout
        if code == 0:
            assert (tmp_path / "b.lock").read_bytes() == (tmp_path / "a.lock").read_bytes()


@pytest.mark.parametrize("argv", [
    ["lock", "p.toml", "--check"], ["lock", "p.toml", "-q"], ["lock", "p.toml", "--host"], ["lock", "a", "b"],
    ["lock", "p.toml", "--format", "yaml"], ["lock", "p.toml", "-o"], ["render"], [],
])
def test_anything_but_a_plain_lock_is_left_to_the_click_command(argv: list[str]) -> None:
    assert not plain_lock(argv, environ={})


def test_an_option_from_the_environment_is_left_to_the_click_command() -> None:
    assert not plain_lock(["lock", "p.toml"], environ={"ENVSOLVE_FRAMEWORKS_ONLY": "1"})
    assert not plain_lock(["lock", "p.toml"], environ={"ENVSOLVE_MATRICES": "/elsewhere"})


def test_a_plain_lock_of_a_changed_spec_never_imports_click(tmp_path: Path) -> None:
    """Nor what costs a changed spec's lock a tenth of its time for nothing it uses: typing_extensions
    (msgspec imports it when it can), dataclasses and the inspect they import."""
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n')
    probe = ("import runpy, sys; sys.argv = ['envsolve', 'lock', '--frameworks-only', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('envsolve', run_name='__main__')\nexcept SystemExit as e:\n"
             "    assert not e.code, e.code\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] in "
             "('click', 'typing_extensions', 'dataclasses', 'inspect')))")
    env = {"ENVSOLVE_NO_CACHE": "1", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, "-c", probe, str(spec)], capture_output=True, text=True, env=env, check=True)
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout + r.stderr
    # with typing_extensions imported first, msgspec takes it as it is: the same lock
    other = tmp_path / "other.lock"
    r = subprocess.run([sys.executable, "-c", "import typing_extensions\n" + probe, str(spec), "-o", str(other)],
                       capture_output=True, text=True, env=env, check=True)
    assert "'typing_extensions'" in r.stdout.strip().splitlines()[-1], r.stdout + r.stderr
    assert other.read_bytes() == (tmp_path / "envsolve.lock").read_bytes()


_IMPORT = ("import sys; from envsolve.__main__ import import_msgspec; import_msgspec(); import msgspec\n"
           "print('typing_extensions' in sys.modules, getattr(msgspec, 'NEEDS', None))\n"
           "import typing_extensions; print(typing_extensions.__name__)")


def test_msgspec_is_imported_without_typing_extensions_which_imports_as_before_afterwards() -> None:
    r = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True, check=True)
    assert r.stdout.splitlines() == ["False None", "typing_extensions"]


def test_a_msgspec_that_needs_typing_extensions_is_imported_as_it_is(tmp_path: Path) -> None:
    fake = tmp_path / "msgspec"
    fake.mkdir()
    (fake / "__init__.py").write_text("import typing_extensions\nNEEDS = typing_extensions.__name__\n")
    r = subprocess.run([sys.executable, "-c", _IMPORT], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert r.stdout.splitlines() == ["True typing_extensions", "typing_extensions"]


# ------------------------------------------------------------------ hostile round 3, defect 4

def test_ctrl_c_in_a_plain_lock_is_aborted_as_click_answers_it_not_a_traceback(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / NAMES[0] / "project.toml").read_bytes())

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("envsolve.command.lock", interrupted)
    code, out, err = _plain(["lock", str(spec), "-o", str(tmp_path / "b.lock")], capsys)
    monkeypatch.setattr("envsolve.lock.job.lock_command", interrupted)  # the click command's way in
    clicked = CliRunner().invoke(main, ["lock", str(spec), "-o", str(tmp_path / "a.lock")])
    assert (code, out, err) == (clicked.exit_code, "", clicked.stderr) == (1, "", "\nAborted!\n")
    assert not (tmp_path / "b.lock").exists()


def test_ctrl_c_in_a_plain_lock_run_as_a_command_prints_no_traceback(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_bytes((CASES / NAMES[0] / "project.toml").read_bytes())
    code = ("import sys, envsolve.command as c\n"
            "def stop(*a, **k): raise KeyboardInterrupt\n"
            "c.lock = stop\nsys.argv = ['envsolve', 'lock', sys.argv[1], '-o', sys.argv[2]]\n"
            "from envsolve.__main__ import main\nmain()\n")
    env = {k: v for k, v in os.environ.items() if k != "ENVSOLVE_FRAMEWORKS_ONLY"} | {"ENVSOLVE_NO_CACHE": "1"}
    r = subprocess.run([sys.executable, "-c", code, str(spec), str(tmp_path / "b.lock")], capture_output=True,
                       text=True, env=env, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (1, "", "\nAborted!\n")
