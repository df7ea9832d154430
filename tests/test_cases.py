"""Data-driven cases from real situations, discovered by listing tests/cases/.

Each case is a folder with project.toml and either expected.lock (the whole lock) or
expected.err (first line ``exit N``, then what envsolve printed). They run against the shipped
matrices; ``pytest --update-goldens`` rewrites them after a reviewed data or solver change.
"""

from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main

CASES = Path(__file__).parent / "cases"
NAMES = sorted(p.name for p in CASES.iterdir() if (p / "project.toml").is_file())


def test_there_are_enough_cases() -> None:
    assert len(NAMES) >= 30


@pytest.mark.parametrize("name", NAMES)
def test_case(name: str, tmp_path: Path, update_goldens: bool) -> None:
    case = CASES / name
    spec = tmp_path / "project.toml"
    spec.write_bytes((case / "project.toml").read_bytes())
    r = CliRunner().invoke(main, ["lock", str(spec)])
    if r.exit_code == 0:
        got, golden, stale = (tmp_path / "envsolve.lock").read_text(), case / "expected.lock", case / "expected.err"
    else:
        got = f"exit {r.exit_code}\n" + r.output.replace(str(spec), "project.toml")
        golden, stale = case / "expected.err", case / "expected.lock"
    assert "Traceback" not in r.output
    if update_goldens:
        golden.write_text(got)
        stale.unlink(missing_ok=True)
    assert golden.exists(), f"{name}: {golden.name} missing; envsolve printed:\n{got}"
    assert got == golden.read_text()
