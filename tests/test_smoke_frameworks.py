"""The rendered smoke test, run for real on the CPU with ONNX Runtime (in the test extra), and with
CuPy (its NumPy path) and PaddlePaddle (matmul and a training step) where they are installed."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from tests.smokerun import run_smoke


def _smoke(tmp_path: Path, frameworks: str, hardware: str = "") -> Path:
    py = f"{sys.version_info.major}.{sys.version_info.minor}"
    spec = tmp_path / "project.toml"
    spec.write_text(f'[project]\nname = "smoke"\npython = "=={py}.*"\n[frameworks]\n{frameworks}\n{hardware}')
    r = CliRunner().invoke(main, ["lock", "--render", str(spec)])
    assert r.exit_code == 0, r.output
    return tmp_path / "envsolve-out" / "default" / "smoke_test.py"


def _checks(out: subprocess.CompletedProcess[str]) -> dict[str, str]:
    report = json.loads(out.stdout)
    return {c["check"]: c["status"] for c in report["checks"]}


def test_onnxruntime_cpu_lock_runs_its_matmul_for_real(tmp_path: Path) -> None:
    out = run_smoke(_smoke(tmp_path, f'onnxruntime = "=={version("onnxruntime")}"'))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "PASS  onnxruntime version" in out.stdout
    assert "PASS  matmul fp32: on CPU (onnxruntime): max relative error" in out.stdout


def test_onnxruntime_gpu_lock_fails_without_a_gpu_and_runs_on_the_cpu_build_with_allow_cpu(tmp_path: Path) -> None:
    script = _smoke(tmp_path, f'onnxruntime = "=={version("onnxruntime")}"', '[hardware]\ngpus = ["H100"]\n')
    bad = run_smoke(script)
    assert bad.returncode == 1
    assert "FAIL  GPU: the lock targets CUDA on H100 but no GPU is visible" in bad.stdout
    ok = run_smoke(script, "--allow-cpu", "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    checks = _checks(ok)
    # the GPU distribution is absent here: its CPU twin at the locked version stands in for it
    assert checks["onnxruntime-gpu installed"] == "skip"
    assert checks["matmul fp32"] == "pass"


def test_onnxruntime_smoke_test_catches_another_version(tmp_path: Path) -> None:
    if version("onnxruntime") == "1.23.2" or sys.version_info >= (3, 14):
        pytest.skip("needs an installed onnxruntime other than 1.23.2 and a Python 1.23.2 has wheels for")
    out = run_smoke(_smoke(tmp_path, 'onnxruntime = "==1.23.2"'), "--json")
    assert out.returncode == 1
    assert _checks(out)["onnxruntime version"] == "fail"


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None, reason="cupy (a cupy-cudaXXx wheel) is not installed")
def test_cupy_gpu_lock_runs_its_matmul_through_numpy_with_allow_cpu(tmp_path: Path) -> None:
    dist = next(d for d in ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x") if _installed(d))
    cuda = {"cupy-cuda12x": "12", "cupy-cuda13x": "13", "cupy-cuda11x": "11"}[dist]
    script = _smoke(tmp_path, f'cupy = "=={version(dist)}"', f'[hardware]\ngpus = ["RTX 5090"]\ncuda = "{cuda}"\n')
    ok = run_smoke(script, "--allow-cpu", "--json")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    checks = _checks(ok)
    assert checks[f"{dist} version"] == "pass"
    assert checks["matmul fp32"] == "pass"
    assert "on CPU (cupy)" in next(c["detail"] for c in json.loads(ok.stdout)["checks"] if c["check"] == "matmul fp32")


@pytest.mark.skipif(importlib.util.find_spec("paddle") is None, reason="paddlepaddle is not installed")
def test_paddle_cpu_lock_runs_a_matmul_and_a_training_step(tmp_path: Path) -> None:
    out = run_smoke(_smoke(tmp_path, f'paddlepaddle = "=={version("paddlepaddle")}"'), "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    checks = _checks(out)
    assert checks["matmul fp32"] == "pass" and checks["train paddle"] == "pass"


def _installed(dist: str) -> bool:
    try:
        version(dist)
    except Exception:
        return False
    return True
