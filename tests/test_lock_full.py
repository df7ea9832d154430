"""`envsolve lock` in full (every package, with hashes), steered by the project's pip packages,
against a local index of fake wheels: nothing here needs a real index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from tests.fakeindex import Wheel, serve

_CP = "{0}-{0}-manylinux_2_17_x86_64"


def _lint(dockerfile: str, tmp_path: Path) -> None:
    """dockerfile-parse reads it; hadolint finds no error (where installed, as with the test extra)."""
    import shutil
    import subprocess

    from dockerfile_parse import DockerfileParser

    (tmp_path / "lint").mkdir()
    parser = DockerfileParser(path=str(tmp_path / "lint" / "Dockerfile"))  # it writes what it parses
    parser.content = dockerfile
    assert [i["instruction"] for i in parser.structure if i["instruction"] != "COMMENT"][-2:] == ["USER", "CMD"]
    path = tmp_path / "lint" / "Dockerfile"
    if (exe := shutil.which("hadolint")) is not None:
        done = subprocess.run([exe, "--failure-threshold", "error", "--no-color", str(path)], capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stdout + done.stderr


def _index() -> list[Wheel]:
    """torch releases with no dependencies, a vllm-like server pinning torch and torchvision, and a
    scipy with wheels up to cp312 only (the Requires-Python says nothing), as on the real index."""
    return [Wheel("torch", "2.8.0", requires=["filelock"]), Wheel("torch", "2.9.1"), Wheel("torch", "2.5.1"),
            Wheel("torchvision", "0.23.0", requires=["torch==2.8.0"]),
            Wheel("filelock", "3.16.1"),
            Wheel("servepkg", "1.0", requires=["torch==2.8.0", "torchvision==0.23.0", "requests"],
                  python=">=3.9,<3.14"),
            Wheel("servepkg", "0.9", requires=["torch==2.5.1"]),
            Wheel("requests", "2.32.3"),
            *(Wheel("scipy", "1.11.4", requires=["numpy<1.28"], tag=_CP.format(cp)) for cp in ("cp310", "cp311", "cp312")),
            *(Wheel("numpy", "1.26.4", tag=_CP.format(cp)) for cp in ("cp310", "cp311", "cp312")),
            Wheel("numpy", "2.3.0", python=">=3.11")]


@pytest.fixture
def index(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> HTTPServer:
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, _index()))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    return httpserver


def _lock(tmp_path: Path, body: str, *args: str) -> Result:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n' + body)
    return CliRunner().invoke(main, ["lock", str(spec), "--format", "json", *args])


def _env(r: Result) -> dict:  # type: ignore[type-arg]
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)["environments"][0]  # type: ignore[no-any-return]


SERVE = '[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "580.65.06"\n'


def test_a_pip_package_pinning_torch_steers_the_solve_and_says_so(index: HTTPServer, tmp_path: Path) -> None:
    r = _lock(tmp_path, SERVE + '[packages]\npip = ["servepkg==1.0"]\n')
    env = _env(r)
    assert [(p["name"], p["version"]) for p in env["frameworks"]] == [("torch", "2.8.0")]  # not the newest
    assert "servepkg==1.0 asks torch ==2.8.0" in r.stderr
    assert env["python"] == "3.13"  # servepkg's Requires-Python stops below 3.14
    packages = {p["name"]: p for p in env["packages"]}
    assert sorted(packages) == ["filelock", "requests", "servepkg", "torch", "torchvision"]
    assert packages["torch"]["direct"] and packages["servepkg"]["direct"] and not packages["filelock"]["direct"]
    assert all(h.startswith("sha256:") and len(h) == 71 for p in packages.values() for h in p["hashes"])
    why = CliRunner().invoke(main, ["explain", str(tmp_path / "project.toml")])
    assert why.exit_code == 0 and "asked by servepkg==1.0" in why.output


def test_wheel_tags_bound_the_python_when_requires_python_does_not(index: HTTPServer, tmp_path: Path) -> None:
    env = _env(_lock(tmp_path, SERVE.replace('"*"', '"==2.9.1"') + '[packages]\npip = ["numpy<2", "scipy==1.11.4"]\n'))
    assert env["python"] == "3.12"  # scipy 1.11.4 has wheels up to cp312; 3.13 would build it from source
    assert {p["name"]: p["version"] for p in env["packages"]}["scipy"] == "1.11.4"


def test_a_pin_the_gpus_cannot_run_is_told_in_gpu_terms_naming_the_package(index: HTTPServer,
                                                                           tmp_path: Path) -> None:
    r = _lock(tmp_path, '[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\n'
                        '[packages]\npip = ["servepkg==0.9"]\n')
    assert r.exit_code == 1
    assert "asked by servepkg==0.9" in r.output and "sm_120" in r.output


def test_a_range_takes_the_newest_release_that_leaves_a_choice(index: HTTPServer, tmp_path: Path) -> None:
    r = _lock(tmp_path, '[frameworks]\ntorch = "<2.6"\n[hardware]\ngpus = ["H100"]\ndriver = "580.65.06"\n'
                        '[packages]\npip = ["servepkg"]\n')
    env = _env(r)
    assert {p["name"]: p["version"] for p in env["packages"]}["servepkg"] == "0.9"  # 1.0 wants torch 2.8.0
    assert env["frameworks"][0]["version"] == "2.5.1" and "servepkg==0.9 asks torch ==2.5.1" in r.stderr


def test_offline_relocks_from_the_cache_and_names_what_is_missing(index: HTTPServer, tmp_path: Path) -> None:
    body = SERVE + '[packages]\npip = ["servepkg==1.0"]\n'
    first = _lock(tmp_path, body)
    assert first.exit_code == 0, first.output
    index.clear()  # the index is gone: only the cache can answer
    again = _lock(tmp_path, body, "--offline")
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout) == json.loads(first.stdout)
    second = _lock(tmp_path, body)  # a second lock of the same spec needs no network either
    assert second.exit_code == 0, second.output
    assert json.loads(second.stdout) == json.loads(first.stdout) and len(index.log) == 0
    missing = _lock(tmp_path, SERVE + '[packages]\npip = ["scipy==1.11.4"]\n', "--offline")
    assert missing.exit_code == 1 and "scipy" in missing.output and "--offline" in missing.output


def test_frameworks_only_needs_no_index_and_reads_no_pip_metadata(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", "http://127.0.0.1:9/simple")  # nothing listens there
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    r = _lock(tmp_path, SERVE + '[packages]\npip = ["servepkg==1.0"]\n', "--frameworks-only")
    env = _env(r)
    assert env["packages"] == [] and env["frameworks"][0]["name"] == "torch"
    full = _lock(tmp_path, SERVE + '[packages]\npip = ["servepkg==1.0"]\n')
    assert full.exit_code == 1 and "http://127.0.0.1:9/simple" in full.output
    assert "--frameworks-only" in full.output


def test_a_relock_keeps_the_locked_versions_and_upgrade_package_moves_one(
        index: HTTPServer, tmp_path: Path) -> None:
    body = SERVE.replace('"*"', '"==2.8.0"') + '[packages]\npip = ["requests", "filelock"]\n'
    first = {p["name"]: p["version"] for p in _env(_lock(tmp_path, body))["packages"]}
    assert first["requests"] == "2.32.3" and first["filelock"] == "3.16.1"
    index.clear()  # newer releases appear on the index
    serve(index, [*_index(), Wheel("requests", "2.33.0"), Wheel("filelock", "3.20.0")])
    again = {p["name"]: p["version"] for p in _env(_lock(tmp_path, body))["packages"]}
    assert again == first  # nothing moves by itself
    moved = {p["name"]: p["version"] for p in _env(_lock(tmp_path, body, "--upgrade-package", "requests"))["packages"]}
    assert moved["requests"] == "2.33.0" and moved["filelock"] == "3.16.1"
    everything = {p["name"]: p["version"] for p in _env(_lock(tmp_path, body, "--upgrade"))["packages"]}
    assert everything["filelock"] == "3.20.0"


def test_check_of_a_full_lock_compares_digests_without_the_network(index: HTTPServer, tmp_path: Path) -> None:
    body = SERVE.replace('"*"', '"==2.8.0"') + '[packages]\npip = ["requests"]\n'
    assert _lock(tmp_path, body).exit_code == 0
    index.clear()
    index.expect_request("/", method="GET").respond_with_data("", status=500)  # any request would fail
    spec = tmp_path / "project.toml"
    ok = CliRunner().invoke(main, ["lock", str(spec), "--check"])
    assert ok.exit_code == 0 and "up to date" in ok.output
    assert len(index.log) == 0
    spec.write_text(spec.read_text() + "# a comment changes no meaning\n")
    assert CliRunner().invoke(main, ["lock", str(spec), "--check"]).exit_code == 0
    spec.write_text(spec.read_text().replace('"requests"', '"requests<3"'))
    stale = CliRunner().invoke(main, ["lock", str(spec), "--check"])
    assert stale.exit_code == 1 and "changed since it was locked" in stale.output


def test_upgrade_package_is_refused_for_a_frameworks_only_lock(tmp_path: Path) -> None:
    r = _lock(tmp_path, SERVE, "--frameworks-only", "--upgrade-package", "torch")
    assert r.exit_code == 2 and "--upgrade-package" in r.output and "full lock" in r.output


FLEET = ('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["H100"]\ndriver = "580.65.06"\n'
         '[targets.old]\ngpus = ["A100"]\ndriver = "535.104.05"\n')


def test_same_versions_gives_every_target_one_torch(tmp_path: Path) -> None:
    def versions(r: Result) -> set[str]:
        assert r.exit_code == 0, r.output
        return {p["version"] for e in json.loads(r.stdout)["environments"] for p in e["frameworks"]}

    apart = versions(_lock(tmp_path, FLEET, "--frameworks-only"))
    assert len(apart) == 2  # the old driver holds one target back
    same = versions(_lock(tmp_path, FLEET, "--frameworks-only", "--same-versions"))
    assert len(same) == 1 and same < apart  # the newest both can run
    spec_key = versions(_lock(tmp_path, FLEET.replace("[frameworks]", "same-versions = true\n[frameworks]"),
                              "--frameworks-only"))
    assert spec_key == same
    bad = _lock(tmp_path, FLEET.replace("[frameworks]", 'same-versions = "yes"\n[frameworks]'), "--frameworks-only")
    assert bad.exit_code == 2 and "project.same-versions" in bad.output


def test_rendered_requirements_install_exactly_the_lock_with_require_hashes(index: HTTPServer,
                                                                            tmp_path: Path) -> None:
    import subprocess
    import sys

    body = '[frameworks]\n[hardware]\nvendor = "cpu"\n[packages]\npip = ["servepkg==0.9", "requests"]\n'
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n' + body.replace("servepkg==0.9", "einops"))
    r = CliRunner().invoke(main, ["lock", str(spec), "--render"])
    assert r.exit_code != 0  # einops is not on this index: named, nothing written
    assert "einops" in r.output and not (tmp_path / "envsolve.lock").exists()
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n' + body.replace('"servepkg==0.9", ', ""))
    r = CliRunner().invoke(main, ["lock", str(spec), "--render"])
    assert r.exit_code == 0, r.output
    reqs = (tmp_path / "envsolve-out" / "default" / "requirements.txt").read_text()
    lines = [ln for ln in reqs.splitlines() if ln and not ln.startswith(("#", "--"))]
    assert lines and all("--hash=sha256:" in ln and "==" in ln for ln in lines)
    dockerfile = (tmp_path / "envsolve-out" / "default" / "Dockerfile").read_text()
    assert "--require-hashes --no-deps" in dockerfile
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--isolated",
           "--disable-pip-version-check"]
    installed = subprocess.run([*pip, "install", "--require-hashes", "--no-deps", "--index-url",
                                index.url_for("/simple"), "-r", str(tmp_path / "envsolve-out" / "default" /
                                                                      "requirements.txt")],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    listed = subprocess.run([*pip, "list", "--format", "freeze"], capture_output=True, text=True, check=True)
    assert "requests==2.32.3" in listed.stdout


def test_a_pytorch_index_build_gets_its_own_hashed_file_and_installs(index: HTTPServer, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    torch = Wheel("torch", "2.14.1+cu126", requires=["filelock"])
    pytorch = serve(index, [torch], prefix="/whl/cu126").removesuffix("/whl/cu126") + "/whl"
    monkeypatch.setenv("ENVSOLVE_INDEX_PYTORCH", pytorch)
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\ntorch = "==2.14.1"\n'
                    '[hardware]\ngpus = ["A100"]\ndriver = "535.104.05"\n[packages]\npip = ["requests"]\n')
    r = CliRunner().invoke(main, ["lock", str(spec), "--render", "--format", "json"])
    assert r.exit_code == 0, r.output
    env = json.loads(r.stdout)["environments"][0]
    assert env["frameworks"][0]["variant"] == "cu126"
    packages = {p["name"]: p for p in env["packages"]}
    assert packages["torch"]["index_url"] == f"{pytorch}/cu126" and packages["torch"]["hashes"] == [torch.sha256]
    out = tmp_path / "envsolve-out" / "default"
    first = (out / "requirements-pytorch.txt").read_text()
    rest = (out / "requirements.txt").read_text()
    assert f"--index-url {pytorch}/cu126" in first and f"torch==2.14.1+cu126 --hash={torch.sha256}" in first
    assert not any(ln.startswith("torch") for ln in rest.splitlines()) and "filelock==3.16.1 --hash=sha256:" in rest
    dockerfile = (out / "Dockerfile").read_text()
    assert dockerfile.count("pip install --require-hashes --no-deps") == 2  # pip takes --hash only from a file:
    assert "source=requirements-pytorch.txt" in dockerfile and "source=requirements.txt" in dockerfile
    _lint(dockerfile, tmp_path)
    assert f"torch==2.14.1+cu126 --hash={torch.sha256}" in (out / "environment.yml").read_text()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--isolated",
           "--disable-pip-version-check", "install", "--require-hashes", "--no-deps"]
    for reqs in ("requirements-pytorch.txt", "requirements.txt"):
        done = subprocess.run([*pip, "-r", str(out / reqs)], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_each_environment_is_resolved_for_its_own_platform(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    wheels = [Wheel("nativepkg", "2.0", tag="py3-none-manylinux_2_17_x86_64"),
              Wheel("nativepkg", "1.0", tag="py3-none-manylinux_2_17_aarch64")]
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, wheels))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    r = _lock(tmp_path, '[hardware]\ngpus = ["H100"]\n[targets.grace]\ngpus = ["GH200"]\n'
                        '[packages]\npip = ["nativepkg"]\n')
    assert r.exit_code == 0, r.output
    got = {e["name"]: (e["platform"], [(p["name"], p["version"]) for p in e["packages"]])
           for e in json.loads(r.stdout)["environments"]}
    assert got == {"default": ("linux/amd64", [("nativepkg", "2.0")]),
                   "grace": ("linux/arm64", [("nativepkg", "1.0")])}  # 2.0 has no aarch64 wheel


def test_a_second_full_lock_of_unchanged_inputs_is_replayed_byte_for_byte(index: HTTPServer, tmp_path: Path) -> None:
    from envsolve.lock import replay

    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n' + SERVE + '[packages]\npip = ["servepkg==1.0"]\n')
    assert CliRunner().invoke(main, ["lock", str(spec)]).exit_code == 0
    lock = tmp_path / "envsolve.lock"
    first = lock.read_bytes()
    index.clear()  # nothing may be read
    assert replay.replay(["lock", str(spec)]) and lock.read_bytes() == first and len(index.log) == 0
    assert not replay.replay(["lock", str(spec), "--upgrade"])  # an upgrade reads the index: never replayed
    lock.unlink()
    assert not replay.replay(["lock", str(spec)])  # without the lock on disk there are no versions to keep


def test_wheel_tags_bound_the_python_on_the_targets_own_platform(httpserver: HTTPServer,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    wheels = [*(Wheel("nativepkg", "1.0", tag=f"{cp}-{cp}-manylinux_2_17_x86_64") for cp in ("cp311", "cp312", "cp313")),
              Wheel("nativepkg", "1.0", tag="cp311-cp311-manylinux_2_17_aarch64")]  # Arm wheels stop at 3.11
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, wheels))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    spec = tmp_path / "project.toml"
    said = {}
    for gpu in ("H100", "GH200"):
        spec.write_text(f'[frameworks]\ntorch = "==2.11.0"\n[hardware]\ngpus = ["{gpu}"]\n'
                        '[packages]\npip = ["nativepkg"]\n')
        r = CliRunner().invoke(main, ["explain", str(spec)])
        assert r.exit_code == 0, r.output
        said[gpu] = next(ln for ln in r.output.splitlines() if ln.startswith("  python "))
    assert said["H100"].startswith("  python 3.13:") and said["GH200"].startswith("  python 3.11:")


def test_a_release_newer_than_the_cached_page_is_read_from_the_index(index: HTTPServer, tmp_path: Path) -> None:
    assert _env(_lock(tmp_path, SERVE + '[packages]\npip = ["servepkg==1.0"]\n'))["frameworks"][0]["version"] == "2.8.0"
    index.clear()  # servepkg 1.1 is released after envsolve cached the page
    serve(index, [*_index(), Wheel("servepkg", "1.1", requires=["torch==2.9.1"])])
    r = _lock(tmp_path, SERVE + '[packages]\npip = ["servepkg==1.1"]\n')
    assert _env(r)["frameworks"][0]["version"] == "2.9.1" and "servepkg==1.1 asks torch ==2.9.1" in r.stderr


# ----------------------------------------------------------------------------- Windows and macOS targets

_WIN = "cp312-cp312-win_amd64"
_MAC = "cp312-cp312-macosx_14_0_arm64"  # as torch >= 2.12 tags them: uv must be told macOS 14 (domain.MACOS_TARGET)
_LINUX = "cp312-cp312-manylinux_2_17_x86_64"


def _host_index(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                pytorch: dict[str, list[Wheel]], default: list[Wheel]) -> str:
    """A default index of ``default`` and a PyTorch index with a folder per variant; the matrices of
    tests/fakehosts.py. The PyTorch index's root URL."""
    from tests.fakehosts import host_matrices

    for variant, wheels in pytorch.items():
        serve(httpserver, wheels, prefix=f"/whl/{variant}")
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", serve(httpserver, default))
    monkeypatch.setenv("ENVSOLVE_INDEX_PYTORCH", httpserver.url_for("/whl"))
    monkeypatch.setenv("ENVSOLVE_MATRICES", str(host_matrices(tmp_path)))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    return httpserver.url_for("/whl")


def _packages(env: dict) -> dict[str, tuple[str, str, list[str]]]:  # type: ignore[type-arg]
    return {p["name"]: (p["version"], p["index_url"], p["hashes"]) for p in env["packages"]}


def test_a_windows_cuda_environment_is_locked_with_windows_wheels_from_its_routed_index(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    win = Wheel("torch", "2.7.1+cu118", requires=["filelock", 'colorama; sys_platform == "win32"'], tag=_WIN)
    linux = Wheel("torch", "2.7.1+cu118", requires=["filelock", "triton==3.3.1"], tag=_LINUX)
    default = [Wheel("filelock", "3.16.1"), Wheel("colorama", "0.4.6"),
               Wheel("nativepkg", "2.0", tag=_LINUX), Wheel("nativepkg", "1.0", tag=_WIN),
               Wheel("servepkg", "1.0", requires=['torch==2.5.1; sys_platform == "linux"',
                                                  'torch==2.7.1; sys_platform == "win32"'])]
    root = _host_index(httpserver, monkeypatch, tmp_path, {"cu118": [win, linux]}, default)
    from tests.fakehosts import spec_text

    r = _lock(tmp_path, spec_text("windows-cuda", 'torch = "*"', extra='[packages]\npip = ["servepkg", "nativepkg"]\n')
              .removeprefix('[project]\nname = "demo"\n'), "--render")
    env = _env(r)
    assert (env["platform"], env["accelerator"], env["frameworks"][0]["variant"]) == ("windows/amd64", "cuda", "cu118")
    assert "servepkg==1.0 asks torch ==2.7.1" in r.stderr  # its Requires-Dist read with Windows' markers
    got = _packages(env)
    assert got["torch"] == ("2.7.1+cu118", f"{root}/cu118", [win.sha256])  # the win_amd64 wheel's hash alone
    assert got["colorama"][0] == "0.4.6" and "triton" not in got  # Windows' dependencies, not Linux's
    assert got["nativepkg"][0] == "1.0" and got["nativepkg"][2] == [default[3].sha256]  # 2.0 has no Windows wheel
    out = tmp_path / "envsolve-out" / "default"
    assert not (out / "Dockerfile").exists()
    assert f"torch==2.7.1+cu118 --hash={win.sha256}" in (out / "requirements-pytorch.txt").read_text()
    assert "    pip install --require-hashes --no-deps -r requirements-pytorch.txt\n" in (out / "README.md").read_text()


def test_a_macos_environment_pins_the_default_index_build_plainly_with_its_arm64_wheel(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    mac = Wheel("torch", "2.7.1", requires=['filelock; sys_platform == "darwin"'], tag=_MAC)
    linux = Wheel("torch", "2.7.1", requires=["nvidia-cudnn-cu12==9.5.1.17"], tag=_LINUX)
    _host_index(httpserver, monkeypatch, tmp_path, {}, [mac, linux, Wheel("filelock", "3.16.1")])
    from tests.fakehosts import spec_text

    env = _env(_lock(tmp_path, spec_text("darwin-mps").removeprefix('[project]\nname = "demo"\n')))
    assert (env["platform"], env["accelerator"]) == ("darwin/arm64", "mps")
    pin = env["frameworks"][0]
    assert (pin["variant"], pin["index"]) == ("mps", "pypi")
    got = _packages(env)
    pypi = httpserver.url_for("/simple")
    assert got["torch"] == ("2.7.1", pypi, [mac.sha256])  # a plain version: no local label on the default index
    assert set(got) == {"torch", "filelock"}  # not Linux's CUDA libraries


def test_a_wsl_environment_is_recorded_and_read_back(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    from envsolve.lock import model as lockfile
    from tests.fakehosts import spec_text

    _host_index(httpserver, monkeypatch, tmp_path, {}, [Wheel("requests", "2.32.3")])
    spec = tmp_path / "project.toml"
    spec.write_text(spec_text("wsl-cuda", "", extra='[packages]\npip = ["requests"]\n'))
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "envsolve.lock").read_text()
    assert 'platform = "linux/amd64"\nwsl = true\n' in text
    assert lockfile.read(tmp_path / "envsolve.lock").environments[0].wsl
