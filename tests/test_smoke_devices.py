"""The rendered smoke test runs its matmul and training step on the device the lock's accelerator
names: an Intel GPU through torch.xpu, Apple's GPU through MPS. The locks come from the small
matrices of tests/fakehosts.py; torch is a fake over NumPy that records which device each tensor
is put on (its matmul is NumPy's, its training a linear model's real gradient steps)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from envsolve.cli import main
from tests.fakehosts import host_matrices, spec_text

GPU_NAME = {"xpu": "Intel(R) Arc(TM) A770 Graphics", "mps": "Apple GPU"}  # the lock names no Apple chip here


def _script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, host: str) -> str:
    """The smoke test rendered from the frameworks-only lock of ``host`` (a key of fakehosts.HOSTS)."""
    monkeypatch.setenv("ENVSOLVE_MATRICES", str(host_matrices(tmp_path)))
    spec = tmp_path / "project.toml"
    spec.write_text(spec_text(host))
    r = CliRunner().invoke(main, ["lock", "--render", str(spec)])
    assert r.exit_code == 0, r.output
    return (tmp_path / "envsolve-out" / "default" / "smoke_test.py").read_text()


def _module(script: str) -> ModuleType:
    module = ModuleType("smoke_test_rendered")
    exec(compile(script, "smoke_test.py", "exec"), module.__dict__)
    return module


class _Tensor:
    """A tensor on a device; every operation checks that its operands share it."""

    def __init__(self, torch: FakeTorch, a: Any, device: str) -> None:
        self.torch, self.a, self.device = torch, np.asarray(a), device
        torch.devices.add(device)

    def to(self, *args: Any) -> _Tensor:
        a, device = self.a, self.device
        for x in args:
            if isinstance(x, str):
                device = x
            else:
                a = a.astype(x)
        return _Tensor(self.torch, a, device)

    def _same(self, other: Any) -> Any:
        if isinstance(other, _Tensor):
            assert other.device == self.device, f"{other.device} tensor with a {self.device} one"
            return other.a
        return other

    def __matmul__(self, other: _Tensor) -> _Tensor:
        wide = self.a.astype(np.float32) @ np.asarray(self._same(other), dtype=np.float32)
        return _Tensor(self.torch, wide.astype(self.a.dtype), self.device)

    def __add__(self, other: Any) -> _Tensor:
        return _Tensor(self.torch, self.a + self._same(other), self.device)

    def __rmul__(self, k: float) -> _Tensor:
        return _Tensor(self.torch, k * self.a, self.device)

    def numpy(self) -> Any:
        assert self.device == "cpu", "numpy() of a tensor on " + self.device
        return self.a

    def detach(self) -> _Tensor:
        return self

    def __float__(self) -> float:
        return float(self.a)

    def backward(self) -> None:
        self.torch.model.backward()


class _Model:
    """Linear(32, 64), ReLU, Linear(64, 1) stood in for by one linear map, trained by its gradient."""

    def __init__(self, torch: FakeTorch) -> None:
        self.torch, self.device, self.w = torch, "cpu", np.zeros((32, 1))
        torch.model = self

    def to(self, device: str) -> _Model:
        self.device = device
        self.torch.devices.add(device)
        return self

    def parameters(self) -> list[Any]:
        return [self.w]

    def __call__(self, x: _Tensor) -> _Tensor:
        assert x.device == self.device, f"a {x.device} input to a model on {self.device}"
        self.x = x.a
        return _Tensor(self.torch, x.a @ self.w, self.device)

    def loss(self, pred: _Tensor, y: _Tensor) -> _Tensor:
        self.err = pred.a - pred._same(y)
        return _Tensor(self.torch, np.mean(self.err ** 2), pred.device)

    def backward(self) -> None:
        self.grad = 2 * self.x.T @ self.err / len(self.x)


class FakeTorch(SimpleNamespace):
    """torch with one accelerator (``xpu`` or ``mps``) that is there or not."""

    def __init__(self, accelerator: str, available: bool = True, arch_list: list[str] | None = None) -> None:
        super().__init__(__version__="2.7.1", float32=np.float32, bfloat16=np.float32, float16=np.float16,
                         float64=np.float64)
        self.devices: set[str] = set()
        self.synced: list[str] = []
        self.rng = np.random.default_rng(0)
        props = SimpleNamespace(total_memory=16 << 30)
        xpu = SimpleNamespace(is_available=lambda: available, device_count=lambda: 1,
                              get_device_name=lambda i: GPU_NAME["xpu"], get_device_properties=lambda i: props,
                              is_bf16_supported=lambda: False, synchronize=lambda: self.synced.append("xpu"))
        if arch_list is not None:
            xpu.get_arch_list = lambda: arch_list
        self.cuda = SimpleNamespace(is_available=lambda: False)
        self.version = SimpleNamespace(cuda=None, hip=None, xpu="20250101" if accelerator == "xpu" else None)
        self.backends = SimpleNamespace(mps=SimpleNamespace(is_available=lambda: available and accelerator == "mps",
                                                            is_built=lambda: accelerator == "mps"),
                                        cuda=SimpleNamespace(matmul=SimpleNamespace()), cudnn=SimpleNamespace())
        if accelerator == "xpu":
            self.xpu = xpu
        self.mps = SimpleNamespace(synchronize=lambda: self.synced.append("mps"))
        self.nn = SimpleNamespace(Sequential=lambda *layers: _Model(self), Linear=lambda i, o: None,
                                  ReLU=lambda: None,
                                  functional=SimpleNamespace(mse_loss=lambda pred, y: self.model.loss(pred, y)))
        self.optim = SimpleNamespace(Adam=lambda params, lr: SimpleNamespace(zero_grad=lambda: None, step=self._step))

    def _step(self) -> None:
        self.model.w -= 0.1 * self.model.grad

    def from_numpy(self, a: Any) -> _Tensor:
        return _Tensor(self, a, "cpu")

    def matmul(self, x: _Tensor, y: _Tensor) -> _Tensor:
        return x @ y

    def manual_seed(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def randn(self, *shape: int, device: str = "cpu") -> _Tensor:
        return _Tensor(self, self.rng.standard_normal(shape), device)


def _run(script: str, torch: FakeTorch) -> tuple[dict[str, tuple[str, str]], ModuleType]:
    """The smoke test's checks (name -> status, detail), run with ``torch``; the throughput timing
    runs one small matmul (and its synchronize) instead of 4096-wide ones."""
    smoke = _module(script)
    smoke._module = lambda name: {"torch": torch, "numpy": np}.get(name)

    def throughput(ops: Any, rng: Any, label: str) -> float:
        ops.sync(ops.mm(ops.put(rng.standard_normal((8, 8)), label), ops.put(rng.standard_normal((8, 8)), label)))
        return 1.0

    smoke._throughput = throughput
    report = smoke.run(False)
    return {i["check"]: (i["status"], i["detail"]) for i in report.items}, smoke


@pytest.mark.parametrize("accelerator", ["xpu", "mps"])
def test_the_matmul_and_training_step_run_on_the_locks_accelerator(accelerator: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    host = {"xpu": "windows-xpu", "mps": "darwin-mps"}[accelerator]
    script = _script(tmp_path, monkeypatch, host)
    torch = FakeTorch(accelerator, arch_list=["dg2"])
    checks, smoke = _run(script, torch)
    assert smoke.torch_device() == accelerator
    assert checks["matmul fp32"][0] == "pass" and f"on {GPU_NAME[accelerator]} (torch)" in checks["matmul fp32"][1]
    assert checks["matmul fp16"][0] == "pass"  # bf16 is not asked of either here
    assert checks["train torch"][0] == "pass" and checks["train torch"][1].startswith(f"on {accelerator}:")
    assert torch.devices == {"cpu", accelerator} and accelerator in torch.synced
    assert "GPU" not in checks  # the GPU was seen


def test_an_intel_gpu_is_checked_against_the_builds_aot_targets(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script(tmp_path, monkeypatch, "windows-xpu")
    said = {}
    for arch_list in (["dg2", "bmg"], ["pvc"], None):  # None: torch 2.5, before torch.xpu.get_arch_list()
        checks, _ = _run(script, FakeTorch("xpu", arch_list=arch_list))
        said[str(arch_list)] = checks["GPU 0 kernels"]
    assert said["['dg2', 'bmg']"] == ("pass", f"{GPU_NAME['xpu']} (dg2): in torch's AOT targets dg2, bmg")
    assert said["['pvc']"][0] == "pass" and "not in torch's AOT targets pvc: the driver JIT-compiles" in said["['pvc']"][1]
    assert said["None"][0] == "skip" and "torch.xpu.get_arch_list() (2.6+)" in said["None"][1]


@pytest.mark.parametrize(("accelerator", "cause"), [
    ("xpu", "Intel"), ("mps", "MPS needs macOS on Apple silicon")])
def test_no_visible_gpu_fails_in_the_hosts_terms(accelerator: str, cause: str, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    script = _script(tmp_path, monkeypatch, {"xpu": "windows-xpu", "mps": "darwin-mps"}[accelerator])
    checks, _ = _run(script, FakeTorch(accelerator, available=False))
    status, detail = checks["GPU"]
    assert status == "fail" and f"the lock targets {accelerator.upper()}" in detail and cause in detail
    assert "CPU build of torch" not in detail  # the fake is an XPU / MPS build


def test_the_rendered_facts_name_the_accelerator_and_its_run_flags(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    smoke = _module(_script(tmp_path, monkeypatch, "windows-xpu"))
    assert (smoke.EXPECTED["accelerator"], smoke.EXPECTED["run_flags"]) == ("xpu", "--device=/dev/dri --group-add render")
    assert json.loads(json.dumps(smoke.EXPECTED["gpu_archs"])) == ["dg2"]
