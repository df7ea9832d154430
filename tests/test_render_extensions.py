"""Every CUDA extension package a lock holds reaches every artifact that installs it (issue 41):
requirements.txt, environment.yml and the Dockerfile pin it at the release the lock chose
(``name==version`` for the default index's wheel or PyG's page, ``name @ URL`` for a GitHub release
wheel), a source build goes in requirements-build.txt (installed after the others with
--no-build-isolation, as the Dockerfile builds it), the smoke test expects exactly those; and a
package that cannot install on the target's platform refuses the lock (flash-attn on Windows:
its wheels are Linux x86_64 builds, its source build runs in a Linux image)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from tests.test_extensions import FA_WHEEL, _lock, _source_build_index, _spec
from tests.test_render import _embedded_facts


def _rendered(tmp_path: Path, body: str) -> dict[str, str]:
    r = _lock(tmp_path, body, "--render")
    assert r.exit_code == 0, r.output
    out = tmp_path / "envsolve-out" / "default"
    return {p.name: p.read_text() for p in sorted(out.iterdir())}


def _lines(text: str) -> list[str]:
    """The requirement lines of a requirements file (its comments and --index-url left out)."""
    return [ln for ln in text.splitlines() if ln and not ln.startswith(("#", "--index-url"))]


def _yml_pip(text: str) -> list[str]:
    lines = [json.loads(ln.strip()[2:]) for ln in text.split("  - pip:\n")[1].splitlines()]
    return [ln for ln in lines if not ln.startswith("--index-url")]


def _expected(smoke: str) -> dict:  # type: ignore[type-arg]
    """The lock's facts the rendered smoke test checks."""
    return json.loads(_embedded_facts(smoke))  # type: ignore[no-any-return]


def test_index_and_release_wheel_extensions_are_pinned_in_every_file(tmp_path: Path) -> None:
    files = _rendered(tmp_path, _spec('"H100"', '"vllm", "flash-attn"'))
    wheel = "flash-attn @ " + FA_WHEEL.format(torch="2.8", abi="TRUE", py="313")
    assert _lines(files["requirements.txt"]) == ["torch==2.8.0", wheel, "vllm==0.11.0"]
    assert _yml_pip(files["environment.yml"]) == ["torch==2.8.0", wheel, "vllm==0.11.0"]
    project_step = files["Dockerfile"].split("# 4. the project's packages")[1]
    assert "vllm==0.11.0" in project_step and "flash-attn" not in project_step  # its own step installs the wheel
    assert f"'{wheel}'" in files["Dockerfile"]
    assert "requirements-build.txt" not in files
    assert {(x["name"], x["version"]) for x in _expected(files["smoke_test.py"])["extensions"]} == {
        ("flash-attn", "2.8.3.post1"), ("vllm", "0.11.0")}


def test_a_source_build_goes_in_requirements_build_txt_its_build_requirements_in_requirements_txt(
        tmp_path: Path) -> None:
    files = _rendered(tmp_path, _spec('"A10G"', '"flash-attn[triton]; python_version >= \'3.9\'", "einops>=0.7"',
                                      torch=">=2.9"))
    build = files["requirements-build.txt"]
    assert _lines(build) == ['flash-attn[triton]==2.8.3.post1 ; python_version >= "3.9"']
    assert ("FLASH_ATTN_CUDA_ARCHS=80 FLASH_ATTENTION_FORCE_BUILD=TRUE MAX_JOBS=4 pip install --no-build-isolation "
            "-r requirements-build.txt") in build
    assert "installed after the other requirements files" in build
    requirements = _lines(files["requirements.txt"])
    assert "einops>=0.7" in requirements  # the user's own range, as written (it is a build requirement too)
    assert {"ninja", "packaging", "psutil", "wheel", "setuptools"} <= set(requirements)
    assert not any(r.startswith("flash-attn") for r in requirements)
    assert "Then requirements-build.txt" in files["requirements.txt"]
    assert "pip install --no-build-isolation -r requirements-build.txt" in files["environment.yml"]
    [x] = _expected(files["smoke_test.py"])["extensions"]
    assert (x["name"], x["install"]) == ("flash-attn", "source")


def test_the_case_lock_of_a_source_build_renders_requirements_build_txt(tmp_path: Path) -> None:
    case = Path(__file__).parent / "cases" / "a10g-flash-attn-source-build" / "expected.lock"
    (tmp_path / "envsolve.lock").write_bytes(case.read_bytes())
    r = CliRunner().invoke(main, ["render", str(tmp_path / "envsolve.lock"), "-o", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert _lines((tmp_path / "out" / "default" / "requirements-build.txt").read_text()) == ["flash-attn==2.8.3.post1"]


def test_a_pyg_page_wheel_is_pinned_with_its_find_links_page(tmp_path: Path) -> None:
    files = _rendered(tmp_path, _spec('"A100"', '"torch-scatter", "einops"'))
    page = "https://data.pyg.org/whl/torch-2.8.0+cu128.html"
    assert _lines(files["requirements.txt"]) == [f"--find-links {page}", "torch==2.8.0", "einops",
                                                 "torch-scatter==2.1.2"]
    assert _yml_pip(files["environment.yml"]) == ["torch==2.8.0", f"--find-links {page}", "einops",
                                                  "torch-scatter==2.1.2"]


def test_a_full_lock_puts_the_hashed_sdist_of_a_source_build_in_requirements_build_txt(
        httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    digest = _source_build_index(httpserver, monkeypatch, tmp_path)
    files = _rendered(tmp_path, _spec('"H100"', '"flash-attn"', torch="==2.9.1"))
    build = files["requirements-build.txt"]
    assert _lines(build)[-1] == f"flash-attn==2.8.3.post1 --hash={digest}"
    assert "pip install --no-build-isolation --require-hashes --no-deps --no-binary flash-attn" in build
    for line in _lines(files["requirements.txt"]):  # every line of a full lock pinned and hashed
        assert "==" in line and "--hash=sha256:" in line, line


def test_flash_attn_on_windows_is_refused_with_wsl2_as_the_fix(tmp_path: Path) -> None:
    body = ('[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 4090"]\n'
            'platform = "windows/amd64"\n[packages]\npip = ["flash-attn", "vllm"]\n')
    spec = tmp_path / "project.toml"
    spec.write_text(body)
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "target 'default' cannot be satisfied:" in r.stderr
    assert ("[packages] pip 'flash-attn': flash-attn 2.8.3.post1 has no wheel for windows/amd64 (its prebuilt "
            "wheels are Linux x86_64 builds) and builds from source only in a Linux image") in r.stderr
    assert "TIP: what would work: WSL2 ([hardware] platform = 'linux/amd64', wsl = true)" in r.stderr
    assert "drop flash-attn from [packages] pip" in r.stderr
    assert not (tmp_path / "envsolve.lock").exists()
    spec.write_text(body.replace('platform = "windows/amd64"', 'platform = "linux/amd64"\nwsl = true'))
    r = CliRunner().invoke(main, ["lock", str(spec)])  # the fix the TIP names locks
    assert r.exit_code == 0, r.output


def test_a_macos_target_is_refused_a_source_build_with_a_linux_target_as_the_fix(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[hardware]\nplatform = "darwin/arm64"\n[packages]\npip = ["apex"]\n')
    r = CliRunner().invoke(main, ["lock", str(spec)])
    assert r.exit_code == 1 and "Traceback" not in r.output, r.output
    assert "apex 0.1 has no wheel for darwin/arm64" in r.stderr
    assert "TIP: what would work: a Linux target ([hardware] platform = 'linux/amd64')" in r.stderr
    assert not (tmp_path / "envsolve.lock").exists()
