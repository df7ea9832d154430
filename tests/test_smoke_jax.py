"""The rendered smoke test, run for real on the CPU with JAX and Keras (both in the test extra, so
this runs wherever the tests do; tests/test_render.py runs it with torch where torch is installed)."""

from __future__ import annotations

import json
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from tests.smokerun import run_smoke


def _smoke(tmp_path: Path, hardware: str) -> Path:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    spec = tmp_path / "project.toml"
    spec.write_text(f'[project]\nname = "smoke"\npython = "=={py}.*"\n[frameworks]\njax = "=={version("jax")}"\n'
                    f'keras = {{ version = "=={version("keras")}", backend = "jax" }}\n{hardware}')
    r = CliRunner().invoke(main, ["lock", "--render", str(spec)])
    assert r.exit_code == 0, r.output
    return tmp_path / "envsolve-out" / "default" / "smoke_test.py"


def test_smoke_test_of_a_cpu_jax_keras_lock_passes(tmp_path: Path) -> None:
    out = run_smoke(_smoke(tmp_path, ""))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS  matmul fp32: on CPU (jax)" in out.stdout
    assert "PASS  train keras: model.fit on the jax backend" in out.stdout
    assert "PASS  train jax: on cpu" in out.stdout


def test_smoke_test_of_a_gpu_jax_lock_fails_without_a_gpu_and_says_why(tmp_path: Path) -> None:
    script = _smoke(tmp_path, '[hardware]\ngpus = ["H100"]\n')
    bad = run_smoke(script)
    assert bad.returncode == 1
    assert "FAIL  GPU: the lock targets CUDA on H100 but no GPU is visible" in bad.stdout
    ok = run_smoke(script, "--allow-cpu", "--json")
    report = json.loads(ok.stdout)
    assert ok.returncode == 0 and report["ok"] is True and report["facts"]["cpu_fallback"] is True
    assert {"train keras", "train jax", "matmul fp32"} <= {c["check"] for c in report["checks"]}


def test_the_gpu_line_leaves_out_a_memory_the_framework_did_not_report(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """JAX names a GPU without its memory: the line says nothing rather than "0 MiB" (seen on an H200)."""
    import importlib.util
    script = _smoke(tmp_path, '[hardware]\ngpus = ["H200"]\n')
    spec = importlib.util.spec_from_file_location("rendered_smoke", script)
    assert spec is not None and spec.loader is not None
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    report = smoke.Report()
    report.facts.update(driver="580.159.04", gpus=[{"index": 0, "name": "NVIDIA H200", "arch": "sm_90", "memory_mib": 0},
                                                   {"index": 1, "name": "NVIDIA H200", "arch": "sm_90",
                                                    "memory_mib": 143155}])
    report.ok("python", "3.12")
    smoke.run = lambda allow_cpu: report
    assert smoke.main([]) == 0
    out = capsys.readouterr().out
    assert "GPUs: NVIDIA H200 (sm_90), NVIDIA H200 (sm_90, 143155 MiB)" in out
    assert "0 MiB" not in out.replace("143155 MiB", "")
