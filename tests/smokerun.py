"""Run a rendered smoke test as the tests check it: with every GPU of the machine hidden from it.

CI has no GPU, but a developer's machine may: there torch, CuPy and JAX would find one, and a test
of what the smoke test says without a GPU (the fallbacks, `--allow-cpu`, the failure that names the
likely cause) would see it pass on the GPU instead. Hiding the GPUs from the CUDA and ROCm runtimes
and keeping JAX on its CPU backend makes those tests say the same on both."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

NO_GPU = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": "", "ROCR_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}


def run_smoke(script: Path, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python smoke_test.py ARGS` beside the script, on the CPU. `env` replaces the environment
    (default: this one); KERAS_BACKEND is dropped from it, since the script sets the locked one."""
    run_env = {k: v for k, v in (os.environ if env is None else env).items() if k != "KERAS_BACKEND"}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          env=run_env | NO_GPU, cwd=script.parent, timeout=600)
