"""The full lock against the real package index (marked `network`): a CPU JAX environment locked
in full and installed with `pip --require-hashes` in a fresh venv, and a vllm project whose pins
steer the solve."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from envsolve.cli import main
from envsolve.render.build import pip_secrets

pytestmark = pytest.mark.network


@pytest.fixture
def real_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """pip's own index settings, as a user's machine has them (the test setup hides them)."""
    for var in ("ENVSOLVE_INDEX_PYPI", "ENVSOLVE_INDEX_PYTORCH", "ENVSOLVE_FRAMEWORKS_ONLY", "PIP_CONFIG_FILE"):
        monkeypatch.delenv(var, raising=False)


def _lock(tmp_path: Path, body: str, *args: str) -> dict:  # type: ignore[type-arg]
    spec = tmp_path / "project.toml"
    spec.write_text(body)
    r = CliRunner().invoke(main, ["lock", str(spec), "--format", "json", *args])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_cpu_jax_with_requests_installs_with_require_hashes(real_index: None, tmp_path: Path) -> None:
    lock = _lock(tmp_path, '[project]\nname = "cpujax"\npython = "==3.11.*"\n[frameworks]\njax = "*"\n'
                           '[hardware]\nvendor = "cpu"\n[packages]\npip = ["requests==2.32.3"]\n', "--render")
    env = lock["environments"][0]
    packages = {p["name"]: p for p in env["packages"]}
    assert {"jax", "jaxlib", "numpy", "requests", "urllib3", "idna"} <= set(packages)
    assert packages["requests"]["version"] == "2.32.3" and packages["requests"]["direct"]
    assert not packages["urllib3"]["direct"] and packages["jax"]["direct"]
    assert all(p["hashes"] and all(h.startswith("sha256:") for h in p["hashes"]) for p in packages.values())
    conf = tmp_path / "pip-conf"
    conf.mkdir()
    secrets = pip_secrets(os.environ, conf)  # this machine's index and CA, nothing else of its pip setup
    clean = tmp_path / "pip.conf"
    text = "[global]\n"
    if "ca.pem" in secrets:
        text += f"cert = {secrets['ca.pem']}\n"
    if "pip.conf" in secrets:
        text += "".join(ln + "\n" for ln in secrets["pip.conf"].read_text().splitlines() if ln.startswith("index-url"))
    clean.write_text(text)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")} | {"PIP_CONFIG_FILE": str(clean)}
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--disable-pip-version-check"]
    reqs = tmp_path / "envsolve-out" / "default" / "requirements.txt"
    done = subprocess.run([*pip, "install", "--require-hashes", "--no-deps", "-r", str(reqs)], env=environ,
                          capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    frozen = subprocess.run([*pip, "list", "--format", "json"], env=environ, capture_output=True, text=True,
                            check=True)
    got = {p["name"].lower().replace("_", "-"): p["version"] for p in json.loads(frozen.stdout)}
    assert got == {name: p["version"] for name, p in packages.items()}  # exactly the lock, nothing more
    run = subprocess.run([str(venv / "bin" / "python"), "-c",
                          "import jax.numpy as jnp, requests; print(float((jnp.ones((4, 4)) @ jnp.ones((4, 4))).sum()))"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and run.stdout.strip() == "64.0", run.stderr[-2000:]


def test_vllm_pins_torch_2_8_0_and_its_python(real_index: None, tmp_path: Path) -> None:
    lock = _lock(tmp_path, '[project]\nname = "serve"\n[frameworks]\ntorch = "*"\n'
                           '[hardware]\ngpus = ["H100"]\ndriver = "580.65.06"\n[packages]\npip = ["vllm==0.11.0"]\n')
    env = lock["environments"][0]
    assert [(p["name"], p["version"]) for p in env["frameworks"]] == [("torch", "2.8.0")]
    assert env["python"] == "3.13"  # vllm 0.11.0: Requires-Python <3.14
    packages = {p["name"]: p["version"] for p in env["packages"]}
    assert packages["vllm"] == "0.11.0" and packages["torch"] == "2.8.0"
    assert packages["torchvision"] == "0.23.0" and packages["xformers"] == "0.0.32.post1"
