"""A Mac on Apple silicon: Apple's Metal plugins (jax-metal, tensorflow-metal) pin older releases
than the newest CPU builds. Without a choice the lock takes the Metal build as before and warns with
both versions; ``[hardware] accelerator = "cpu"`` takes the newest CPU build, ``"mps"`` the Metal
build without the warning; a bad value is exit 2. ``explain`` gives the same answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from packaging.version import Version

from envsolve.cli import main
from envsolve.host.target import for_host
from envsolve.lock import model as lockfile
from envsolve.lock.model import Environment
from envsolve.provider import Provider
from envsolve.solve import solve
from envsolve.spec import parse_spec
from tests.test_detect import host

MAC = '[project]\nname = "m"\n[hardware]\nplatform = "darwin/arm64"\n'
# framework -> (its Metal plugin, the newest release a Metal plugin runs, as the data pairs them)
METAL = {"jax": ("jax-metal", "0.5.0"), "tensorflow": ("tensorflow-metal", "2.18.1")}


def _lock(tmp_path: Path, body: str) -> tuple[Result, Environment | None]:
    spec = tmp_path / "project.toml"
    spec.write_text(body)
    r = CliRunner().invoke(main, ["lock", "--frameworks-only", str(spec)])
    lock = tmp_path / "envsolve.lock"
    return r, lockfile.read(lock).environments[0] if r.exit_code == 0 else None


def _version(env: Environment, name: str) -> tuple[str, str]:
    pin = next(p for p in env.frameworks if p.name == name)
    return pin.version, pin.variant


def _newest_cpu(graph: Provider, framework: str) -> str:
    """The newest release of ``framework`` that the Mac's CPU runs: the solve of a CPU Mac target."""
    [r] = solve(graph, parse_spec(MAC + f'vendor = "cpu"\n[frameworks]\n{framework} = "*"\n', "p.toml", graph))
    return next(p.version for p in r.packages if p.name == framework)


@pytest.mark.parametrize("framework", sorted(METAL))
def test_without_a_choice_the_metal_build_is_locked_and_the_newer_cpu_build_is_named(
        framework: str, tmp_path: Path, real_graph: Provider) -> None:
    plugin, metal = METAL[framework]
    cpu = _newest_cpu(real_graph, framework)
    assert Version(cpu) > Version(metal)
    r, env = _lock(tmp_path, MAC + f'[frameworks]\n{framework} = "*"\n')
    assert r.exit_code == 0 and env is not None, r.output
    assert (env.accelerator, _version(env, framework)) == ("mps", (metal, "metal"))
    assert plugin in {p.name for p in env.frameworks}
    plugin_version = _version(env, plugin)[0]
    assert (f"WARNING: default: Apple's Metal plugin holds {framework} back: the Apple GPU gets {framework} {metal} "
            f"(metal, with {plugin} {plugin_version}), the Mac's CPU would get {framework} {cpu} (cpu). Set "
            "[hardware] accelerator = 'cpu' for the newer CPU build, or accelerator = 'mps' to keep the Metal build "
            "(and silence this warning)") in r.output


@pytest.mark.parametrize("framework", sorted(METAL))
def test_accelerator_cpu_takes_the_newest_cpu_build(framework: str, tmp_path: Path, real_graph: Provider) -> None:
    plugin, _ = METAL[framework]
    r, env = _lock(tmp_path, MAC + f'accelerator = "cpu"\n[frameworks]\n{framework} = "*"\n')
    assert r.exit_code == 0 and env is not None, r.output
    assert (env.accelerator, env.platform) == ("cpu", "darwin/arm64")
    assert _version(env, framework) == (_newest_cpu(real_graph, framework), "cpu")
    assert plugin not in {p.name for p in env.frameworks}
    assert "Metal plugin" not in r.output


@pytest.mark.parametrize("framework", sorted(METAL))
def test_accelerator_mps_takes_the_metal_build_without_the_warning(framework: str, tmp_path: Path) -> None:
    plugin, metal = METAL[framework]
    r, env = _lock(tmp_path, MAC + f'accelerator = "mps"\n[frameworks]\n{framework} = "*"\n')
    assert r.exit_code == 0 and env is not None, r.output
    assert (env.accelerator, _version(env, framework)) == ("mps", (metal, "metal"))
    assert plugin in {p.name for p in env.frameworks}
    assert "Metal plugin" not in r.output


def test_no_warning_where_the_metal_build_is_the_newest_the_range_admits(tmp_path: Path) -> None:
    r, env = _lock(tmp_path, MAC + '[frameworks]\njax = "==0.5.0"\n')
    assert r.exit_code == 0 and env is not None, r.output
    assert _version(env, "jax") == ("0.5.0", "metal") and "Metal plugin" not in r.output


def test_torch_beside_jax_keeps_its_wheel_whichever_is_chosen(tmp_path: Path) -> None:
    """torch's Mac wheel is one for the CPU and MPS: only jax's build moves."""
    body = MAC + '{}[frameworks]\njax = "*"\ntorch = "*"\n'
    _, gpu = _lock(tmp_path, body.format(""))
    _, cpu = _lock(tmp_path, body.format('accelerator = "cpu"\n'))
    assert gpu is not None and cpu is not None
    assert _version(gpu, "torch")[0] == _version(cpu, "torch")[0]
    assert Version(_version(cpu, "jax")[0]) > Version(_version(gpu, "jax")[0])


@pytest.mark.parametrize(("hardware", "problem"), [
    ('platform = "darwin/arm64"\naccelerator = "gpu"\n',
     "hardware.accelerator: 'gpu' must be one of mps, cpu (mps: the Apple GPU, through Apple's Metal plugins for JAX "
     "and TensorFlow; cpu: the CPU builds, the newest releases)"),
    ('platform = "darwin/arm64"\naccelerator = 1\n', "hardware.accelerator: 1 must be one of mps, cpu"),
    ('accelerator = "mps"\n', "hardware.accelerator: 'mps' applies to Apple silicon only (platform = "
                              "'darwin/arm64'); elsewhere vendor and gpus choose the builds"),
    ('platform = "darwin/amd64"\naccelerator = "cpu"\n', "hardware.accelerator: 'cpu' applies to Apple silicon only"),
    ('platform = "darwin/arm64"\nvendor = "cpu"\naccelerator = "mps"\n',
     "hardware.accelerator: is 'mps' (Apple's GPU) but vendor is 'cpu'; drop one of them"),
    ('platform = "darwin/arm64"\n[targets.mac]\naccelerator = "metal"\n', "targets.mac.accelerator: 'metal' must be"),
])
def test_a_bad_accelerator_is_refused_with_file_key_value_and_a_tip(hardware: str, problem: str,
                                                                    tmp_path: Path) -> None:
    r, _ = _lock(tmp_path, f'[project]\nname = "m"\n[frameworks]\njax = "*"\n[hardware]\n{hardware}')
    assert r.exit_code == 2, r.output
    assert f"ERROR: {tmp_path / 'project.toml'}: {problem}" in r.output
    assert "TIP: " in r.output and "Traceback" not in r.output


def test_a_hardware_accelerator_is_not_inherited_by_a_target_of_another_platform(tmp_path: Path) -> None:
    r, _ = _lock(tmp_path, MAC + 'accelerator = "cpu"\n[targets.server]\nplatform = "linux/amd64"\ngpus = ["H100"]\n'
                 '[frameworks]\njax = "*"\n')
    assert r.exit_code == 0, r.output
    envs = {e.name: e for e in lockfile.read(tmp_path / "envsolve.lock").environments}
    assert (envs["default"].accelerator, envs["server"].accelerator) == ("cpu", "cuda")


@pytest.mark.parametrize(("choice", "variant", "note"), [("", "metal", True), ("mps", "metal", False),
                                                         ("cpu", "cpu", False)])
def test_explain_gives_the_locks_answer(choice: str, variant: str, note: bool, tmp_path: Path) -> None:
    body = MAC + (f'accelerator = "{choice}"\n' if choice else "") + '[frameworks]\njax = "*"\n'
    r, env = _lock(tmp_path, body)
    assert r.exit_code == 0 and env is not None, r.output
    version = _version(env, "jax")
    assert version[1] == variant
    out = CliRunner().invoke(main, ["explain", str(tmp_path / "project.toml")])
    assert out.exit_code == 0, out.output
    assert f"  chose jax {version[0]} ({variant}): " in out.output
    assert ("  note: Apple's Metal plugin holds jax back: " in out.output) == note
    assert (f"(accelerator = '{choice}' in the spec)" in out.output) == bool(choice)


@pytest.mark.parametrize("choice", ["cpu", "mps"])
def test_lock_host_on_a_mac_keeps_the_specs_choice(choice: str, real_graph: Provider) -> None:
    spec = parse_spec(MAC + f'accelerator = "{choice}"\n[frameworks]\njax = "*"\n', "p.toml", real_graph)
    got, _ = for_host(spec, host("macos-m2pro", real_graph), real_graph)
    t = got.targets[0]
    assert (t.accelerator, t.vendor, t.platform) == (choice, "cpu" if choice == "cpu" else "apple", "darwin/arm64")
    [r] = solve(real_graph, got)
    assert next(p.variant for p in r.packages if p.name == "jax") == ("cpu" if choice == "cpu" else "metal")
