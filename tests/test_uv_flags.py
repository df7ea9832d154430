"""envsolve runs uv only with flags the installed uv takes without a deprecation warning (a
warning uv prints reaches the user in every error envsolve shows with uv's own words), and the
installed uv is the one pyproject.toml's bound allows. Every run here is offline: the real uv,
an environment with no packages."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

from envsolve import scratch, sync
from envsolve.domain import MACOS_TARGET, PYTHON_PLATFORM
from envsolve.lock import resolve
from envsolve.voice import SILENT

ROOT = Path(__file__).resolve().parent.parent
PY = f"{sys.version_info.major}.{sys.version_info.minor}"


def _deprecations(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if "deprecat" in ln.lower()]


def test_the_installed_uv_is_the_one_pyproject_bounds() -> None:
    """The tests ran against this uv: pyproject.toml's range must admit it (a uv minor may change a flag)."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    [uv] = [Requirement(d) for d in deps if Requirement(d).name == "uv"]
    installed = Version(importlib.metadata.version("uv"))
    assert installed in uv.specifier, f"uv {installed} is installed; pyproject.toml asks for uv{uv.specifier}"
    from uv import find_uv_bin

    said = subprocess.run([str(find_uv_bin()), "--version"], capture_output=True, text=True, check=True).stdout
    assert said.split()[1] == str(installed)


def _compile(tmp_path: Path, platform: str, swap: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """The full lock's uv command line for ``platform`` (as :func:`resolve.resolve` builds it), offline,
    over a project with no dependencies; ``--quiet`` taken off, since it hides uv's warnings."""
    env = resolve.uv_environ({**os.environ, "ENVSOLVE_CACHE_DIR": str(tmp_path / "cache")})
    if platform in MACOS_TARGET:
        env["MACOSX_DEPLOYMENT_TARGET"] = MACOS_TARGET[platform]  # type: ignore[index]
    ask = resolve._Ask(python=PY, platform=platform, pins=(), pip=(), default_index="",  # type: ignore[arg-type]
                       offline=True, exclude_newer="2025-01-01T00:00:00Z", upgrade=("numpy",))
    root = tmp_path / platform.replace("/", "-")
    root.mkdir()
    resolve._write_inputs(root, ask, ())
    cmd = [(swap or {}).get(arg, arg) for arg in resolve._command(ask, env) if arg != "--quiet"]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)


@pytest.mark.parametrize("platform", sorted(PYTHON_PLATFORM))
def test_the_full_locks_uv_command_line_draws_no_deprecation_warning(platform: str, tmp_path: Path) -> None:
    run = _compile(tmp_path, platform)
    assert run.returncode == 0, run.stderr
    assert _deprecations(run.stderr) == []


def test_the_check_sees_a_deprecated_flag(tmp_path: Path) -> None:
    """The check above would catch a deprecated flag: uv's old ``--native-tls`` (``--system-certs`` now)."""
    run = _compile(tmp_path, "linux/amd64", {"--system-certs": "--native-tls"})
    assert run.returncode == 0, run.stderr
    assert _deprecations(run.stderr) == ["warning: The `--native-tls` flag is deprecated and will be removed in a "
                                         "future release. Use `--system-certs` instead."]


def test_syncs_uv_command_lines_draw_no_deprecation_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """uv venv, pip list and pip uninstall as sync runs them (its own functions, the real uv)."""
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    said: list[tuple[Sequence[str], str]] = []
    real = scratch.run

    def run(argv: Sequence[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        done = real(argv, **kwargs)  # type: ignore[arg-type]
        said.append((argv, done.stderr))
        return done

    monkeypatch.setattr(scratch, "run", run)
    new = tmp_path / "new"
    sync._make_venv(new, sys.executable, tmp_path / "venv", SILENT)
    assert sync._installed(new) == {}
    sync._remove(new, ["not-installed"], SILENT)
    assert [argv[1:3] for argv, _ in said] == [["venv", str(new)], ["pip", "list"], ["pip", "uninstall"]]
    assert all("--system-certs" in argv for argv, _ in said)
    assert [ln for _, err in said for ln in _deprecations(err)] == []
