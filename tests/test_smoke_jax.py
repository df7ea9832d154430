"""The rendered smoke test, run for real on the CPU with JAX and Keras (both in the test extra, so
this runs wherever the tests do; tests/test_render.py runs it with torch where torch is installed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from click.testing import CliRunner

from envsolve.cli import main


def _smoke(tmp_path: Path, hardware: str) -> Path:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    spec = tmp_path / "project.toml"
    spec.write_text(f'[project]\nname = "smoke"\npython = "=={py}.*"\n[frameworks]\njax = "=={version("jax")}"\n'
                    f'keras = {{ version = "=={version("keras")}", backend = "jax" }}\n{hardware}')
    r = CliRunner().invoke(main, ["lock", "--render", str(spec)])
    assert r.exit_code == 0, r.output
    return tmp_path / "envsolve-out" / "default" / "smoke_test.py"


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KERAS_BACKEND"}  # the script sets the locked one
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env,
                          cwd=script.parent, timeout=600)


def test_smoke_test_of_a_cpu_jax_keras_lock_passes(tmp_path: Path) -> None:
    out = _run(_smoke(tmp_path, ""))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS  matmul fp32: on CPU (jax)" in out.stdout
    assert "PASS  train keras: model.fit on the jax backend" in out.stdout
    assert "PASS  train jax: on cpu" in out.stdout


def test_smoke_test_of_a_gpu_jax_lock_fails_without_a_gpu_and_says_why(tmp_path: Path) -> None:
    script = _smoke(tmp_path, '[hardware]\ngpus = ["H100"]\n')
    bad = _run(script)
    assert bad.returncode == 1
    assert "FAIL  GPU: the lock targets CUDA on H100 but no GPU is visible" in bad.stdout
    ok = _run(script, "--allow-cpu", "--json")
    report = json.loads(ok.stdout)
    assert ok.returncode == 0 and report["ok"] is True and report["facts"]["cpu_fallback"] is True
    assert {"train keras", "train jax", "matmul fp32"} <= {c["check"] for c in report["checks"]}
