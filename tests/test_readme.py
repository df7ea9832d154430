"""README states what the code does: the lock's format and keys (lock/model.py), and where a
file:// index works (issue 22: it said `version = 2`, then `version = 3`, and allowed file://
index URLs that `refresh` and `data --verify` refuse)."""

import re
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.lock.model import FORMAT

README = (Path(__file__).parent.parent / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    return README[start:README.index("\n### ", start)]


def _keys(table: object, prefix: str = "") -> set[str]:
    """Every key of a parsed TOML document, tables' and arrays of tables' own keys included."""
    out: set[str] = set()
    items = table if isinstance(table, list) else [table]
    for item in items:
        if isinstance(item, dict):
            for k, v in item.items():
                out.add(k)
                if isinstance(v, (dict, list)) and k not in ("pins", "peak_tflops", "tools", "indexes"):
                    out |= _keys(v)
    return out


def test_the_lock_section_names_the_current_format_and_every_key_of_a_lock(tmp_path: Path) -> None:
    lock_text = _section("The lock")
    assert re.findall(r"`version = (\d+)`", lock_text) == [str(FORMAT)]
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "x"\npython = "==3.12.*"\n[frameworks]\ntorch = "==2.8.0"\n'
                    '[hardware]\ngpus = ["A100"]\n')
    r = CliRunner().invoke(main, ["lock", str(spec), "-o", str(tmp_path / "envsolve.lock")])
    assert r.exit_code == 0, r.output
    lock = tomllib.loads((tmp_path / "envsolve.lock").read_text())
    keys = _keys(lock) | {"hashes", "direct"}  # a full lock's package keys (this one is frameworks-only)
    missing = sorted(k for k in keys if f"`{k}`" not in lock_text and f"[{k}]" not in lock_text
                     and f"environments.{k}]" not in lock_text)
    assert missing == []


@pytest.mark.parametrize("command", [["data", "--verify"], ["refresh"]])
def test_a_file_index_url_is_refused_where_readme_says_and_how_to_serve_it(command: list[str]) -> None:
    assert "`refresh`, `data --verify` and the steering of `[packages] pip` lines use, reads http(s) only" in README
    r = CliRunner().invoke(main, [*command, "--index-url", "file:///srv/index/simple", "--no-cache"])
    assert r.exit_code == 2, r.output
    assert "file:// serves uv and pip alone" in r.output
    assert "python -m http.server -d FOLDER 8000" in r.output
    assert "Traceback" not in r.output
