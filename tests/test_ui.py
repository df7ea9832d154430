"""envsolve/ui.py and the habits every command shares: -q/-v, colour and NO_COLOR, --matrices
before or after the subcommand, progress lines on a terminal only, exit codes under every --help,
and shell completion."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result
from pytest_httpserver import HTTPServer

from envsolve import ui
from envsolve.cli import main
from tests.conftest import FIXTURE
from tests.fakeindex import Wheel, serve

GOOD = '[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n'
BAD = '[hardware]\ngpus = ["H1000"]\n'


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    p = tmp_path / "project.toml"
    p.write_text(GOOD)
    return p


def run(*args: str, env: dict[str, str] | None = None, color: bool = False) -> Result:
    return CliRunner().invoke(main, ["--matrices", str(FIXTURE), *args], env=env, color=color)


# ---------------------------------------------------------------------------- the console


def test_progress_is_one_line_rewritten_on_a_terminal_and_drawn_again_under_other_lines(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(ui, "_terminal", lambda: True)
    console = ui.Console(color=False)
    console.progress("reading torch (1/2)")
    console.progress("reading jax (2/2)")
    console.warn("the index answered HTTP 500")
    console.done()
    err = capsys.readouterr().err
    assert err == ("\r\x1b[Kreading torch (1/2)" "\r\x1b[Kreading jax (2/2)"  # rewritten in place
                   "\r\x1b[KWARNING: the index answered HTTP 500\n"  # the line moves out of the way...
                   "\r\x1b[Kreading jax (2/2)"  # ...and comes back under it
                   "\r\x1b[K")  # done: gone


def test_progress_off_a_terminal_is_said_only_with_verbose(capsys: pytest.CaptureFixture[str]) -> None:
    ui.Console().progress("reading torch")
    ui.Console(level="quiet").progress("reading torch")
    assert capsys.readouterr().err == ""
    ui.Console(level="verbose", color=False).progress("reading torch")
    assert capsys.readouterr().err == "reading torch\n"


def test_quiet_keeps_errors_and_the_product(capsys: pytest.CaptureFixture[str]) -> None:
    console = ui.Console(level="quiet", color=False)
    console.say("wrote x")
    console.warn("careful")
    console.detail("read y")
    console.out("{}")
    console.error("broken", "fix it")
    out, err = capsys.readouterr()
    assert (out, err) == ("{}\n", "ERROR: broken\nTIP: fix it\n")


# ---------------------------------------------------------------------------- -q and -v


def test_verbose_says_what_is_read_and_the_default_does_not(spec: Path) -> None:
    plain = run("lock", str(spec))
    told = run("-v", "lock", str(spec))
    assert plain.exit_code == told.exit_code == 0, told.output
    said = [f"spec: {spec}", f"matrices: {FIXTURE} (data ", "lock replay: not consulted with -v"]
    assert all(line in told.stderr for line in said)
    assert not any(line in plain.stderr for line in said)
    assert told.stdout == plain.stdout  # -v adds to stderr only


def test_verbose_after_the_subcommand_too(spec: Path) -> None:
    r = run("lock", str(spec), "--verbose")
    assert r.exit_code == 0 and f"spec: {spec}" in r.stderr


def test_quiet_lock_prints_nothing_on_success_and_the_json_with_format_json(spec: Path) -> None:
    r = run("-q", "lock", str(spec))
    assert r.exit_code == 0 and r.output == ""
    assert (spec.parent / "envsolve.lock").exists()
    r = run("lock", str(spec), "-q", "--format", "json")
    assert r.exit_code == 0 and r.stderr == ""
    assert json.loads(r.stdout)["environments"][0]["frameworks"][0]["name"] == "torch"


def test_quiet_still_prints_the_error_and_its_tip(spec: Path) -> None:
    spec.write_text(BAD)
    r = run("-q", "lock", str(spec))
    assert r.exit_code == 2
    assert "ERROR: " in r.stderr and "H1000" in r.stderr and "TIP: " in r.stderr


def test_matrices_after_the_subcommand(tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["data", "--matrices", str(FIXTURE), "--validate"])
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith(f"{FIXTURE}: valid (data ")
    empty = tmp_path / "empty"
    empty.mkdir()
    after = CliRunner().invoke(main, ["data", "--validate", "--matrices", str(empty)])
    assert after.exit_code == 2 and str(empty) in after.output  # the folder given after it is the one read


# ---------------------------------------------------------------------------- colour


def test_error_is_styled_when_colour_is_on(spec: Path) -> None:
    spec.write_text(BAD)
    r = run("lock", str(spec), color=True)
    assert r.exit_code == 2
    assert click.style("ERROR:", fg="red", bold=True) in r.stderr
    assert click.style("TIP:", fg="cyan") in r.stderr


@pytest.mark.parametrize("how", ["NO_COLOR", "--no-color before", "--no-color after"])
def test_no_color_and_no_color_env_give_no_escape_codes(spec: Path, how: str) -> None:
    spec.write_text(BAD)
    env = {"NO_COLOR": "1"} if how == "NO_COLOR" else None
    args = {"NO_COLOR": ["lock", str(spec)], "--no-color before": ["--no-color", "lock", str(spec)],
            "--no-color after": ["lock", str(spec), "--no-color"]}[how]
    r = run("-v", *args, env=env, color=True)  # colour forced, as on a terminal
    assert r.exit_code == 2 and "ERROR: " in r.stderr and "matrices: " in r.stderr
    assert "\x1b[" not in r.output


# ---------------------------------------------------------------------------- help and completion


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_help_shows_the_exit_codes(command: str) -> None:
    r = CliRunner().invoke(main, [command, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    assert ui.EXIT_CODES in " ".join(r.output.split())
    assert "--quiet" in r.output and "--verbose" in r.output and "--matrices" in r.output


def test_the_group_help_shows_the_exit_codes() -> None:
    r = CliRunner().invoke(main, ["--help"], terminal_width=200)
    assert r.exit_code == 0 and ui.EXIT_CODES in " ".join(r.output.split())


@pytest.mark.parametrize(("shell", "marker"), [("bash", "complete -o nosort -F"), ("zsh", "#compdef envsolve"),
                                                ("fish", "complete --no-files --command envsolve")])
def test_completion_script_of_each_shell(shell: str, marker: str) -> None:
    r = CliRunner().invoke(main, [], prog_name="envsolve", env={"_ENVSOLVE_COMPLETE": f"{shell}_source"})
    assert r.exit_code == 0, r.output
    assert marker in r.stdout and "_ENVSOLVE_COMPLETE" in r.stdout


def test_completing_lo_offers_lock() -> None:
    env = {"_ENVSOLVE_COMPLETE": "bash_complete", "COMP_WORDS": "envsolve lo", "COMP_CWORD": "1"}
    r = CliRunner().invoke(main, [], prog_name="envsolve", env=env)
    assert r.exit_code == 0, r.output
    assert "plain,lock" in r.stdout.splitlines()
    env = {"_ENVSOLVE_COMPLETE": "bash_complete", "COMP_WORDS": "envsolve lock --fr", "COMP_CWORD": "2"}
    r = CliRunner().invoke(main, [], prog_name="envsolve", env=env)
    assert "plain,--frameworks-only" in r.stdout.splitlines()


# ---------------------------------------------------------------------------- the full lock, told


@pytest.fixture
def index(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HTTPServer:
    wheels = [Wheel("torch", "2.5.1"), Wheel("servepkg", "0.9", requires=["torch==2.5.1"])]
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, wheels))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    return httpserver


def test_verbose_full_lock_names_its_indexes_caches_and_the_uv_step(index: HTTPServer, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\n'
                    'driver = "580.65.06"\n[packages]\npip = ["servepkg"]\n')
    url = index.url_for("/simple")
    plain = CliRunner().invoke(main, ["lock", str(spec)])
    assert plain.exit_code == 0, plain.output
    assert "resolving environment" not in plain.stderr and "index pypi" not in plain.stderr
    r = CliRunner().invoke(main, ["lock", str(spec), "-v"])
    assert r.exit_code == 0, r.output
    err = r.stderr
    assert f"index pypi: {url}\n" in err and "index pytorch: " in err
    assert f"cache: {tmp_path / 'cache'}\n" in err
    # what the pip line asked was kept by the first lock: the second neither reads nor imports the index client
    assert f"[packages] pip: what it asks of the frameworks, kept from an earlier read of {url}\n" in err
    assert "reading what [packages] pip asks" not in err
    assert "lock: resolving environment default with uv (1 of 1)\n" in err
    assert f"uv: answered from its cache ({tmp_path / 'cache' / 'uv'}), without the network\n" in err
    assert "kept for the lock replay" in err
