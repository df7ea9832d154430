import re
import shutil
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from envsolve.cli import main
from envsolve.data import Build, data_dir, load_dir
from envsolve.errors import MatrixError
from envsolve.provider import Provider
from envsolve.solve import solve
from envsolve.spec import parse_spec
from envsolve.versions import parse_arch, parse_dotted, parse_driver


def test_shipped_matrices_load_and_validate() -> None:
    m = load_dir(data_dir())
    assert m.data_version >= "2026-11-22"
    assert m.digest.startswith("sha256:")
    for rows in (m.archs, m.gpus, m.toolkits, m.branches, m.cudnn, m.rocm, m.releases, m.builds, m.images):
        assert rows, "every kind of data is present"
        for r in rows:
            assert r.source.strip()
            if r.confidence == "low":
                assert r.note, f"{r} is low confidence without a note saying how it was inferred"


def test_shipped_cudnn_rows_drop_generations_where_the_wheels_kernels_do() -> None:
    """The kernels in the nvidia-cudnn-cu11/cu12/cu13 wheels: 8.7.0 still carries sm_35 SASS and 8.8.0
    none (Kepler gone), 9.10.2 carries sm_50..sm_70 and 9.11.0 nothing below sm_75 (pre-Turing gone)."""
    m = load_dir(data_dir())

    def archs(version: str, cuda: int) -> set[str]:
        return set(next(c.archs for c in m.cudnn if c.version.raw == version and c.cuda_major == cuda))

    assert "sm_35" in archs("8.7.0", 11)
    for version in ("8.8.0", "8.8.1", "8.9.0"):
        assert not {a for a in archs(version, 11) if a.startswith("sm_3")}, version
    assert {"sm_50", "sm_60", "sm_61", "sm_70"} <= archs("9.10.2", 12)
    for c in m.cudnn:
        if c.version.prefix(2) >= (9, 11):
            assert min(int(a.removeprefix("sm_")) for a in c.archs) >= 75, (c.version.raw, c.cuda_major)


def test_shipped_data_reaches_todays_releases() -> None:
    m = load_dir(data_dir())
    newest = {p: max(r.version for r in m.releases if r.package == p) for p in ("torch", "tensorflow", "jax", "keras")}
    assert str(newest["torch"]) >= "2.15.0"
    assert newest["tensorflow"].release >= (2, 21)
    assert newest["jax"].release >= (0, 12)
    assert newest["keras"].release >= (3, 15, 1)
    assert max(t.version for t in m.toolkits).major == 13


# The CUDA that torch/version.py says inside each release's wheels on the default index (read with range requests).
_TORCH_DEFAULT_CUDA = {"1.0.0": "9.0", "1.0.1": "9.0", "1.1.0": "9.0", "1.2.0": "10.0", "1.3.0": "10.1",
                       "1.3.1": "10.1", "1.4.0": "10.1", "1.5.0": "10.2", "1.5.1": "10.2", "1.6.0": "10.2",
                       "1.7.0": "10.2", "1.7.1": "10.2"}


def test_torch_reaches_back_to_1_0_with_each_default_index_build_and_its_cuda() -> None:
    m = load_dir(data_dir())
    defaults = {b.raw: b for b in m.builds if b.package == "torch" and b.default}
    for version, cuda in _TORCH_DEFAULT_CUDA.items():
        b = defaults[version]
        assert (b.index, str(b.cuda)) == ("pypi", cuda), version


def test_old_torch_arch_lists_follow_the_builder_scripts_of_their_time() -> None:
    """sm_35 left the wheels with 1.3.1 (3.7 from then), PTX with 1.6.0, sm_80 came with cu110 (1.7),
    and 1.10 has its CUDA 11.3 builds."""
    m = load_dir(data_dir())
    old = [b for b in m.builds if b.package == "torch" and b.accelerator == "cuda" and b.version < Version("1.8")]
    assert {b.raw for b in old} == set(_TORCH_DEFAULT_CUDA)
    for b in old:
        assert ("sm_35" in b.archs) == (b.raw in ("1.0.0", "1.0.1", "1.1.0", "1.2.0", "1.3.0")), b
        assert bool(b.ptx) == (b.version < Version("1.6.0")), b
        assert ("sm_80" in b.archs) == (b.variant == "cu110"), b
    assert {b.raw for b in m.builds if b.package == "torch" and b.variant == "cu113"} >= {"1.10.0", "1.10.1", "1.10.2"}


def test_tensorflow_2_3_wheels_hold_ptx_only_for_sm_70_as_their_fatbins_do() -> None:
    """TF 2.3 dropped the PTX of older archs (its release notes; the wheels' fatbins: SASS 3.5 .. 7.0,
    PTX 7.0), so a compute capability 5.0 GPU has nothing to run there (tensorflow#42467); 2.1/2.2
    held PTX for all six archs."""
    m = load_dir(data_dir())
    cuda = {b.raw: b for b in m.builds if b.package == "tensorflow" and b.accelerator == "cuda" and b.default
            and Version("2.1") <= b.version < Version("2.4")}
    six = ["sm_35", "sm_37", "sm_52", "sm_60", "sm_61", "sm_70"]
    assert {v for v in cuda if v.startswith("2.3.")} == {f"2.3.{n}" for n in range(5)}
    for raw, b in cuda.items():
        assert [str(a) for a in b.archs] == six, raw
        assert [str(a) for a in b.ptx] == (["sm_70"] if raw.startswith("2.3.") else six), raw


def test_jax_reaches_back_to_0_3_and_of_its_old_jaxlibs_only_0_4_13_s_cpu_one_is_on_the_default_index() -> None:
    m = load_dir(data_dir())
    old = [b for b in m.builds if b.package == "jax" and b.version < Version("0.4.18")]
    assert {b.raw for b in old} >= {"0.3.0", "0.3.25", "0.4.1", "0.4.12", "0.4.17"}
    assert [(b.raw, b.variant) for b in old if not b.find_links] == [("0.4.13", "cpu")]
    cuda = [b for b in old if b.accelerator == "cuda"]
    assert cuda and all(b.system_cuda and b.cuda is not None and b.ptx for b in cuda)
    # jax 0.4.12's CUDA 12 jaxlib was published as cudnn89, not the cudnn88 its extra names (jax-ml/jax#16421)
    assert {b.variant for b in cuda if b.raw == "0.4.12"} == {"cuda12.cudnn89", "cuda11.cudnn86", "cuda11.cudnn82"}


def test_tensorrt_rows_take_the_cuda_the_tensorrt_sdist_requires() -> None:
    """The tensorrt sdist requires tensorrt_cu12 up to 10.13.0.35 and tensorrt_cu13 (Linux) from 10.13.2.6
    (setup.py / PKG-INFO of each sdist on the index): a plain pip line of 10.13.2+ gets CUDA 13."""
    from packaging.specifiers import SpecifierSet

    m = load_dir(data_dir())
    rows = [e for e in m.extensions if e.package == "tensorrt"]

    def row(version: str) -> SpecifierSet:
        (cuda,) = [SpecifierSet(e.cuda) for e in rows if Version(version) in SpecifierSet(e.versions)]
        return cuda

    for version in ("10.0.1", "10.9.0.34", "10.13.0.35"):
        assert "12.8" in row(version) and "13.0" not in row(version), version
    for version in ("10.13.2.6", "10.13.3.9", "10.16.1.11"):
        assert "13.0" in row(version) and "12.8" not in row(version), version
    assert {e.newest for e in rows} >= {"10.13.0.35", "10.16.1.11"}


def test_paddle_3_cuda_builds_carry_sm_86_as_cuda_cmake_appends_it_for_cuda_11_2_and_12() -> None:
    """cmake/cuda.cmake appends 86 to the release arch list for CUDA 11.2+ and 12.x, as the 2.6.2 wheel
    read off the default index carries (SASS sm_61, sm_70, sm_75, sm_80, sm_86)."""
    m = load_dir(data_dir())
    builds = [b for b in m.builds if b.package == "paddlepaddle" and b.accelerator == "cuda"]
    assert builds
    for b in builds:
        assert "sm_86" in b.archs, (b.raw, b.variant)
        assert ("sm_90" in b.archs) == (b.cuda is not None and b.cuda.major == 12), (b.raw, b.variant)


def _torch(graph: Provider, version: str, variant: str) -> Build:
    return next(b for b in graph.m.builds if b.package == "torch" and b.raw == version and b.variant == variant)


def test_torch_mac_wheels_are_mps_builds_on_apple_silicon_and_intel_mac_ones_stop_at_2_2_2(real_graph: Provider) -> None:
    """The default index's macOS wheels (no local label): an MPS build for darwin/arm64 from 1.12,
    a CPU build for Macs, on Intel Macs up to 2.2.2 only; Pythons as the Mac wheels have them."""
    torch = [r for r in real_graph.m.releases if r.package == "torch"]
    mps = {b.raw: b for b in real_graph.m.builds if b.package == "torch" and b.variant == "mps"}
    macos = {b.raw: b for b in real_graph.m.builds if b.package == "torch" and b.variant == "macos"}
    assert set(mps) == {r.raw for r in torch if r.version >= Version("1.12")}
    assert set(macos) == {r.raw for r in torch}
    for b in mps.values():
        assert (b.accelerator, b.index, b.platforms) == ("mps", "pypi", ("darwin/arm64",)), b.raw
        assert not real_graph.on_platform(b, "linux/amd64") and not real_graph.on_platform(b, "windows/amd64")
    for b in macos.values():
        assert b.accelerator == "cpu" and b.index == "pypi", b.raw
        assert ("darwin/amd64" in b.platforms) == (b.version <= Version("2.2.2")), b.raw
        assert ("darwin/arm64" in b.platforms) == (b.version >= Version("1.8") and b.raw not in ("1.8.1", "1.9.1"))
    assert "3.13" not in mps["2.5.1"].python and "3.11" not in mps["1.13.1"].python
    assert mps["2.6.0"].python == () and macos["1.9.0"].python == ("3.8", "3.9")


def test_torch_on_native_windows_is_the_pytorch_index_builds_with_the_windows_kernels(real_graph: Provider) -> None:
    """Windows CUDA builds come from the PyTorch index only (the default index's Windows wheels are
    CPU builds) with Windows' own arch lists: sm_61 kept, compute_37 in CUDA 11, no PTX of the newest."""
    win = "windows/amd64"
    assert all(real_graph.for_platform(b, win).index == "pytorch" for b in real_graph.m.builds
               if b.package == "torch" and b.accelerator == "cuda" and real_graph.on_platform(b, win))
    cu128 = _torch(real_graph, "2.7.1", "cu128")
    assert "sm_61" not in cu128.archs and cu128.ptx == ("sm_120",)
    on_windows = real_graph.for_platform(cu128, win)
    assert on_windows.archs[:3] == ("sm_50", "sm_60", "sm_61") and on_windows.ptx == ()
    assert real_graph.for_platform(_torch(real_graph, "2.1.0", "cu118"), win).ptx == ("sm_37",)
    assert real_graph.for_platform(_torch(real_graph, "2.9.0", "cu130"), win).ptx == ()
    assert not real_graph.on_platform(_torch(real_graph, "2.9.0", "cu129"), win)
    assert real_graph.on_platform(_torch(real_graph, "2.8.0", "cu129"), win)
    wheel = real_graph.platform_wheel(_torch(real_graph, "2.5.1", "cu121"), win)
    assert wheel is not None and "3.13" not in wheel.python
    arm = real_graph.platform_wheel(_torch(real_graph, "2.8.0", "cpu"), "windows/arm64")
    assert arm is not None and arm.python == ("3.11", "3.12", "3.13")
    assert not real_graph.on_platform(_torch(real_graph, "2.8.0", "cu128"), "windows/arm64")


def test_torch_default_cuda_build_is_the_pytorch_index_one_on_windows_where_its_release_builds_it(
        real_graph: Provider) -> None:
    """The default index's CUDA build of a release (Linux wheels) is built for Windows too where the
    release's Windows matrix has that CUDA: the PyTorch index's build of the variant (2.15.0 cu132,
    pinned torch==2.15.0+cu132) with Windows' kernels; 1.11/1.12 built no Windows cu102."""
    win = "windows/amd64"
    default = {b.raw: b for b in real_graph.m.builds if b.package == "torch" and b.index == "pypi" and b.accelerator == "cuda"}
    on_windows = {v for v, b in default.items() if real_graph.on_platform(b, win)}
    assert on_windows == {v for v, b in default.items() if b.version >= Version("1.8")} - {"1.11.0", "1.12.0", "1.12.1"}
    cu132 = real_graph.for_platform(default["2.15.0"], win)
    assert (cu132.variant, cu132.index, cu132.index_path, cu132.default) == ("cu132", "pytorch", "cu132", False)
    assert default["2.15.0"].pins and (cu132.pins, cu132.shared) == ((), ())  # the Linux wheel's nvidia-* pins
    assert real_graph.for_platform(default["2.15.0"], "linux/amd64").index == "pypi"
    assert real_graph.for_platform(default["2.7.1"], win).archs[:3] == ("sm_50", "sm_60", "sm_61")
    assert real_graph.for_platform(default["1.13.1"], win).ptx == real_graph.for_platform(default["1.9.0"], win).ptx == (
        "sm_37",)
    assert real_graph.for_platform(default["2.14.1"], win).ptx == ()
    spec = parse_spec('[frameworks]\ntorch = ">=2.15"\n[hardware]\nplatform = "windows/amd64"\ngpus = ["RTX 5090"]\n',
                      "project.toml", real_graph)
    (r,) = solve(real_graph, spec)
    pin = next(p for p in r.packages if p.name == "torch")
    assert (pin.variant, pin.index, pin.index_path, pin.requirement, pin.pins) == ("cu132", "pytorch", "cu132",
                                                                                  "torch==2.15.0+cu132", ())


def test_torch_xpu_builds_carry_torch_xpu_ops_aot_targets_on_linux_and_from_2_6_on_windows(real_graph: Provider) -> None:
    xpu = {b.raw: b for b in real_graph.m.builds if b.package == "torch" and b.variant == "xpu"}
    assert set(xpu) == {r.raw for r in real_graph.m.releases if r.package == "torch" and r.version >= Version("2.5")}
    for b in xpu.values():
        assert (b.accelerator, b.index, b.index_path) == ("xpu", "pytorch", "xpu")
        assert all(parse_arch(a).vendor == "intel" for a in b.xpu), b.raw
        assert ("dg2" in b.xpu) == (b.version >= Version("2.7")) and ("ptl-h" in b.xpu) == (b.version >= Version("2.10"))
        assert real_graph.on_platform(b, "windows/amd64") == (b.version >= Version("2.6")), b.raw
        assert not real_graph.on_platform(b, "linux/arm64") and not real_graph.on_platform(b, "darwin/arm64")
    assert "3.13" not in xpu["2.5.1"].python
    assert real_graph.for_platform(xpu["2.6.0"], "windows/amd64").xpu == ("ats-m150", "mtl-u", "mtl-h", "xe2-lpg",
                                                                          "xe2-hpg")
    assert "ptl" in real_graph.for_platform(xpu["2.14.1"], "windows/amd64").xpu and "ptl" not in xpu["2.14.1"].xpu


def test_every_problem_is_reported_at_once_with_file_row_and_key(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "matrices"
    for f in src.glob("*.toml"):
        shutil.copy(f, tmp_path)
    gpus = tmp_path / "gpus.toml"
    gpus.write_text(gpus.read_text().replace('arch = "sm_80"', 'arch = "sm_81"', 1))
    torch = tmp_path / "torch.toml"
    text = torch.read_text().replace('source = "tests fixture"', 'sauce = "x"', 1)
    torch.write_text(text.replace('variant = "cu118"', 'variant = "cu118"\ncolour = "red"', 1))
    (tmp_path / "broken.toml").write_text("schema = 1\nkind = [")
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    msg = str(e.value)
    assert "gpus.toml: gpu (A100).arch: 'sm_81' has no [[arch]] row" in msg
    assert "torch.toml: release[0] (version 2.3.1).sauce: unknown key" in msg
    assert "torch.toml: release[0] (version 2.3.1).source: missing" in msg
    assert ".colour: unknown key" in msg
    assert "broken.toml: is not valid TOML" in msg
    assert len(e.value.problems) >= 5


def test_two_default_builds_of_one_release_are_refused(tmp_path: Path) -> None:
    src = Path(__file__).parent / "fixtures" / "matrices"
    for f in src.glob("*.toml"):
        shutil.copy(f, tmp_path)
    t = tmp_path / "torch.toml"
    t.write_text(t.read_text().replace('variant = "cu118"\naccelerator = "cuda"\ndefault = false',
                                       'variant = "cu118"\naccelerator = "cuda"\ndefault = true', 1))
    with pytest.raises(MatrixError, match="second default build"):
        load_dir(tmp_path)


def test_wrong_schema_version_is_named(tmp_path: Path) -> None:
    (tmp_path / "x.toml").write_text('schema = 2\ndata_version = "2026-01-01"\nkind = "gpus"\n')
    with pytest.raises(MatrixError, match="x.toml: schema: is 2; this envsolve reads schema 1"):
        load_dir(tmp_path)


def _fixture_copy(tmp_path: Path) -> Path:
    for f in (Path(__file__).parent / "fixtures" / "matrices").glob("*.toml"):
        shutil.copy(f, tmp_path)
    return tmp_path


def _rows_with_a_source(root: Path) -> int:
    """Every row of every file that names its ``source``, counted from the TOML text itself."""
    tables = (v for f in root.glob("*.toml") for v in tomllib.loads(f.read_text()).values())
    return sum("source" in row for rows in tables if isinstance(rows, list) for row in rows if isinstance(row, dict))


def test_data_prints_the_share_of_low_rows_among_every_row_with_a_source(tmp_path: Path) -> None:
    """A CUDA major row (a kind the count once skipped) and a cuDNN row marked low are both
    counted, out of every row the validator reads."""
    root = _fixture_copy(tmp_path)
    cuda = root / "cuda.toml"
    cuda.write_text(cuda.read_text().replace(
        'major = 12, minor_compat_driver_min = "525.60.13", source = "tests fixture"',
        'major = 12, minor_compat_driver_min = "525.60.13", source = "tests fixture", confidence = "low", '
        'note = "made low by the test"', 1))
    cudnn = root / "cudnn.toml"
    cudnn.write_text(cudnn.read_text().replace('source = "tests fixture"',
                                               'source = "tests fixture"\nconfidence = "low"\nnote = "made low"', 1))
    rows = _rows_with_a_source(root)
    r = CliRunner().invoke(main, ["--matrices", str(root), "data"])
    assert r.exit_code == 0, r.output
    assert f"  rows marked confidence = low: 2 of {rows} ({200 / rows:.1f}%)\n" in r.stdout


def test_a_kind_that_is_no_word_is_named_not_a_traceback(tmp_path: Path) -> None:
    (_fixture_copy(tmp_path) / "x.toml").write_text('schema = 1\ndata_version = "2026-01-01"\nkind = ["gpus"]\n')
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    assert e.value.message == ("x.toml: kind: ['gpus'] is not one of compilers, conda, cuda, cudnn, drivers, extensions, "
                               "framework, gpus, images, libraries, platforms, rocm, tools")


def test_an_arch_row_whose_name_is_no_architecture_is_named_not_a_traceback(tmp_path: Path) -> None:
    gpus = _fixture_copy(tmp_path) / "gpus.toml"
    gpus.write_text(gpus.read_text().replace('name = "sm_37"', 'name = "kepler"', 1))
    with pytest.raises(MatrixError) as e:
        load_dir(tmp_path)
    assert ("  gpus.toml: arch[0] (kepler).name: 'kepler' is not a GPU architecture: write sm_80, a compute capability "
            "such as 8.0, an AMD target such as gfx942, an Intel one such as bmg, or apple-m4") in e.value.message.splitlines()


def test_closed_words_of_the_data_are_refused_with_the_words(tmp_path: Path) -> None:
    torch = _fixture_copy(tmp_path) / "torch.toml"
    torch.write_text(torch.read_text().replace('accelerator = "cuda"', 'accelerator = "tpu"', 1))
    with pytest.raises(MatrixError, match=r"torch.toml: build\[1\] \(version 2.3.1\).accelerator: must be one of "
                                          r"cuda, rocm, xpu, mps, cpu"):
        load_dir(tmp_path)


# ---------------------------------------------------------------------------- a curated folder with a mistake
# Each case: (file, text to find once (the first match), what to write instead, what the message must hold).
# Every one is a dangling reference or a missing file of the real data; the error names file, row and key.

CURATED_MISTAKES = [
    ("gpus.toml", 'name = "A100"\nvendor = "nvidia"\narch = "sm_80"', 'name = "A100"\nvendor = "nvidia"\narch = "sm_80x"',
     "gpus.toml: gpu (A100).arch: 'sm_80x' has no [[arch]] row"),
    ("gpus.toml", None, None, "gpus.toml: missing: the folder has no file of kind = 'gpus'"),
    ("torch.toml", 'cuda = "12.8"', 'cuda = "12.99"', "torch.toml: build (version {}, cu128).cuda: "
     "CUDA 12.99 has no [[toolkit]] row in cuda.toml"),
    ("cuda.toml", 'archs = ["', 'archs = ["sm_13", "', "cuda.toml: toolkit ({}).archs: 'sm_13' has no [[arch]] row"),
    ("images.toml", 'accelerator = "cuda"\nversion = "10.0"', 'accelerator = "cuda"\nversion = "10.9"',
     "images.toml: image (nvidia/cuda 10.9).version: CUDA 10.9 has no [[toolkit]] row in cuda.toml"),
    ("platforms.toml", 'l4t = "35.4.1"\ncuda = "11.4"', 'l4t = "35.4.1"\ncuda = "11.9"',
     "platforms.toml: jetpack (version 5.1.2).cuda: CUDA 11.9 has no [[toolkit]] row in cuda.toml"),
    ("torch.toml", 'jetpack = "6"', 'jetpack = "9"', "torch.toml: build (version {}, jp6-cu126).jetpack: "
     "JetPack '9' has no [[jetpack]] row in platforms.toml"),
    ("torch.toml", 'jetpacks = ["5.1"]', 'jetpacks = ["5.9"]', "torch.toml: build (version {}, jp5-cu114).jetpacks: "
     "JetPack '5.9' is no [[jetpack]] row of platforms.toml of JetPack 5"),
    ("platforms.toml", '"Jetson TX2", "Jetson Nano"]', '"Jetson TX3", "Jetson Nano"]',
     "platforms.toml: jetpack (version 4.2).gpus: 'Jetson TX3' is no GPU of gpus.toml"),
    ("platforms.toml", 'variants = ["', 'variants = ["cu999", "', ".variants: 'cu999' matches no torch build"),
    ("tensorflow.toml", 'requires = { keras', 'requires = { kerass = ">=2", keras',
     "tensorflow.toml: release (version {}).requires: 'kerass' is not one of"),
    ("cudnn.toml", "cuda_major = 12", "cuda_major = 99", ".cuda_major: CUDA major 99 has no [[major]] row"),
]


def _curated_copy(tmp_path: Path) -> Path:
    root = tmp_path / "matrices"
    shutil.copytree(data_dir(), root)
    return root


def _mistake(root: Path, file: str, find: str | None, write: str | None) -> str:
    """Apply one mistake to the copy; the version of the row it hit (for the message), if any."""
    path = root / file
    if find is None:
        path.unlink()
        return ""
    text = path.read_text()
    at = text.index(find)
    path.write_text(text[:at] + (write or "") + text[at + len(find):])
    version = re.findall(r'^version = "([^"]*)"', text[:at], re.M)
    return version[-1] if version else ""


@pytest.mark.parametrize(("file", "find", "write", "says"), CURATED_MISTAKES,
                         ids=[f"{c[0]}:{c[3].split(': ')[-1][:30]}" for c in CURATED_MISTAKES])
def test_a_curated_folder_with_a_dangling_row_is_exit_2_naming_file_row_and_key(
        tmp_path: Path, file: str, find: str | None, write: str | None, says: str) -> None:
    root = _curated_copy(tmp_path)
    version = _mistake(root, file, find, write)
    r = CliRunner().invoke(main, ["--matrices", str(root), "data", "--validate"])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    assert "Traceback" not in r.output
    assert says.format(version) in r.output
    assert f"TIP: fix the rows named above in {root.resolve()}" in r.output


# a single value of a real row, mutated: what it becomes, and which keys it is a mistake for
_WRONG_TYPE = "[1, 2]"  # no key of any row takes a list of numbers
_ARCH_KEYS = {"arch", "archs", "ptx", "gfx"}


def _value_lines() -> list[tuple[str, int, str]]:
    """(file, line number, key) of every ``key = value`` line inside a row of the shipped data."""
    out = []
    for path in sorted(data_dir().glob("*.toml")):
        in_row = False
        for n, line in enumerate(path.read_text().splitlines()):
            in_row = in_row or line.startswith("[[")
            if in_row and (m := re.match(r"^(\w+) = ", line)):
                out.append((path.name, n, m.group(1)))
    return out


_LINES = _value_lines()
_CUDA_LINES = [x for x in _LINES if x[2] == "cuda" and x[0] not in ("conda.toml", "images.toml")]


def _unknown_value(key: str, kind: str) -> str:
    """A value of the right type that no row knows (an architecture no [[arch]] row has, a CUDA no
    toolkit is) for the keys that name one; else a value of the wrong type."""
    if kind == "arch" and key in _ARCH_KEYS:
        return '"sm_13"' if key == "arch" else '["sm_13"]'
    if kind == "cuda" and key == "cuda":
        return '"12.99"'
    return _WRONG_TYPE


@pytest.fixture(scope="module")
def shipped_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("data") / "matrices"
    shutil.copytree(data_dir(), root)
    return root


@given(line=st.sampled_from(_LINES + _CUDA_LINES * 20), kind=st.sampled_from(["type", "arch", "cuda"]))
@settings(max_examples=20, deadline=None)
def test_any_single_value_of_a_real_row_made_wrong_is_a_problem_naming_its_file_not_a_traceback(
        shipped_copy: Path, line: tuple[str, int, str], kind: str) -> None:
    file, n, key = line
    path = shipped_copy / file
    text = (data_dir() / file).read_text()
    lines = text.splitlines()
    value = _unknown_value(key, kind)
    lines[n] = f"{key} = {value}"
    path.write_text("\n".join(lines) + "\n")
    try:
        with pytest.raises(MatrixError) as e:  # the command line's exit 2; anything else is a traceback
            load_dir(shipped_copy)
    finally:
        path.write_text(text)
    assert any(p.file == file for p in e.value.problems), (line, value, e.value.message)


# nvidia-smi's names for GPUs of every NVIDIA generation from Kepler on, desktop, laptop and data
# center, as the driver's name table (and, before Turing, the PCI ID repository) spells them
CATALOG = [
    ("Tesla K80", "K80", "sm_37"), ("Tesla K40m", "K40", "sm_35"), ("Tesla K20Xm", "K20X", "sm_35"),
    ("NVIDIA GeForce GTX 680", "GTX 680", "sm_30"), ("GeForce GTX 780 Ti", "GTX 780 Ti", "sm_35"),
    ("NVIDIA GeForce GTX 880M", "GTX 880M", "sm_30"), ("Quadro K620", "Quadro K620", "sm_50"),
    ("GeForce GTX 970", "GTX 970", "sm_52"), ("NVIDIA GeForce MX130", "MX130", "sm_50"),
    ("NVIDIA GeForce GTX 1080 Ti", "GTX 1080 Ti", "sm_61"), ("NVIDIA GeForce MX250", "MX250", "sm_61"),
    ("Tesla P100-PCIE-16GB", "P100", "sm_60"), ("Tesla V100-SXM2-32GB", "V100", "sm_70"),
    ("NVIDIA GeForce GTX 1660 Ti with Max-Q Design", "GTX 1660 Ti", "sm_75"),
    ("NVIDIA GeForce MX450", "MX450", "sm_75"), ("Quadro RTX 8000", "Quadro RTX 8000", "sm_75"),
    ("NVIDIA A100-SXM4-80GB", "A100", "sm_80"), ("NVIDIA GeForce RTX 3060 Laptop GPU", "RTX 3060 Laptop GPU", "sm_86"),
    ("NVIDIA GeForce RTX 2050", "RTX 2050", "sm_86"), ("NVIDIA RTX A2000 8GB Laptop GPU", "RTX A2000 Laptop GPU", "sm_86"),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", "RTX 4090 Laptop GPU", "sm_89"),
    ("NVIDIA GeForce RTX 3050 A Laptop GPU", "RTX 3050 A Laptop GPU", "sm_89"),
    ("NVIDIA RTX 2000 Ada Generation Laptop GPU", "RTX 2000 Ada Generation Laptop GPU", "sm_89"),
    ("NVIDIA H100 80GB HBM3", "H100", "sm_90"), ("NVIDIA H20", "H20", "sm_90"), ("NVIDIA B200", "B200", "sm_100"),
    ("NVIDIA GeForce RTX 5090", "RTX 5090", "sm_120"), ("NVIDIA GeForce RTX 5070 Ti Laptop GPU", "RTX 5070 Ti Laptop GPU", "sm_120"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "RTX PRO 6000 Blackwell", "sm_120"),
]


@pytest.mark.parametrize("smi,model,arch", CATALOG)
def test_the_catalog_knows_every_generation_by_the_names_nvidia_smi_prints(smi: str, model: str, arch: str,
                                                                           real_graph: Provider) -> None:
    g = real_graph.gpu(smi)
    assert g is not None, f"{smi!r} is no GPU of the data"
    assert (g.name, g.arch) == (model, arch)


def test_a_name_the_driver_gives_gpus_of_two_architectures_is_no_row(real_graph: Provider) -> None:
    # GeForce GT 730 is Fermi (GF108), Kepler GK107 (3.0) and Kepler GK208 (3.5) under one name, and
    # GTX 860M Kepler or Maxwell, GeForce 710A GF117M, GK107M or GK208M by subsystem: a row would give
    # some of them the wrong kernels
    for name in ("GeForce GT 730", "NVIDIA GeForce GT 730", "GeForce GTX 860M", "GeForce GT 1030", "GeForce 710A"):
        assert real_graph.gpu(name) is None


def test_a_row_settled_by_a_device_log_quotes_the_compute_capability_of_its_architecture() -> None:
    # a Kepler or Maxwell product NVIDIA's CUDA GPUs pages leave out is settled by a public log of the
    # device's own CUDA report; the quoted capability must be its architecture's
    m = load_dir(data_dir())
    cc = {a.name: a.compute_capability for a in m.archs if a.vendor == "nvidia"}
    logged = [g for g in m.gpus if "reports its compute capability itself" in g.note]
    assert len(logged) >= 5
    for g in logged:
        assert g.source.startswith("https://github.com/") and g.confidence != "low", g.name
        quoted = re.findall(r"major: (\d+) minor: (\d+)|computeCapability: (\d+\.\d+)|compute capability (\d+\.\d+)",
                            g.note or "")
        values = {f"{a}.{b}" if a else c or d for a, b, c, d in quoted}
        assert values == {cc[g.arch]}, (g.name, values, g.arch)


def test_every_nvidia_gpu_row_has_an_architecture_with_its_compute_capability() -> None:
    m = load_dir(data_dir())
    cc = {a.name: a.compute_capability for a in m.archs if a.vendor == "nvidia"}
    nvidia = [g for g in m.gpus if g.vendor == "nvidia"]
    assert len(nvidia) >= 350
    assert all(cc.get(g.arch) for g in nvidia)
    assert {cc[g.arch].split(".")[0] for g in nvidia} >= {"3", "5", "6", "7", "8", "9", "10", "12"}


def test_windows_and_wsl2_driver_floors_are_nvidias_windows_column(real_graph: Provider) -> None:
    # Table 3 of the CUDA release notes gives each toolkit a Windows minimum beside the Linux one; WSL2 runs the
    # Windows host's driver, so its floor is the Windows number (CUDA 12.8 GA: 570.65, not Linux's 570.26)
    def floor(cuda: str, *, windows: bool) -> str | None:
        f = real_graph.windows_driver_min(parse_dotted(cuda)) if windows else real_graph.native_driver_min(parse_dotted(cuda))
        return f.raw if f else None

    assert floor("12.8", windows=False) == "570.26"
    assert {c: floor(c, windows=True) for c in ("9.2", "10.1", "11.0", "11.8", "12.0", "12.4", "12.8", "12.9")} == {
        "9.2": "397.44", "10.1": "418.96", "11.0": "451.48", "11.8": "520.06", "12.0": "527.41", "12.4": "551.61",
        "12.8": "570.65", "12.9": "576.02"}
    # NVIDIA publishes no Windows minimum for CUDA 13 ("N/A"): the Linux floor stands in
    assert floor("13.0", windows=True) == floor("13.0", windows=False) == "580.65.06"
    assert {m: real_graph.minor_compat_driver_min(m, windows=True) for m in (11, 12, 13)} == {
        11: parse_driver("452.39"), 12: parse_driver("528.33"), 13: parse_driver("580.65.06")}
    assert real_graph.minor_compat_driver_min(12, windows=False).raw == "525.60.13"


def test_every_toolkit_before_cuda_13_has_a_windows_floor_of_its_linux_floors_branch() -> None:
    # a Windows driver of branch R5xx is numbered 5xx.yy to 5xx+4.yy (R418 and the pre-R410 branches aside)
    m = load_dir(data_dir())
    for t in m.toolkits:
        w = t.driver_min_windows
        if t.version.major >= 13:
            assert w is None, t.version
            continue
        assert w is not None, t.version
        assert 0 <= w.major - t.driver_min.major <= 4, (t.version, t.driver_min, w)


# what the tools print (xpu-smi, sycl-ls, clinfo, torch.xpu.get_device_name(); a runtime that does not know the
# device prints its PCI id) -> the model and its ocloc target
INTEL = [
    ("Intel(R) Arc(TM) A770 Graphics", "Arc A770", "dg2"), ("Intel(R) Graphics [0x56a0]", "Arc A770", "dg2"),
    ("Intel(R) Arc(TM) A750 Graphics", "Arc A750", "dg2"), ("Intel(R) Graphics [0x56a5]", "Arc A380", "dg2"),
    ("Intel(R) Arc(TM) B580 Graphics", "Arc B580", "bmg"), ("Intel(R) Arc(TM) Pro B60 Graphics", "Arc Pro B60", "bmg"),
    ("Intel(R) Data Center GPU Max 1550", "Data Center GPU Max 1550", "pvc"),
    ("Intel(R) Data Center GPU Flex 170", "Data Center GPU Flex 170", "ats-m150"),
    ("Intel(R) Graphics [0x7d55]", "Meteor Lake", "mtl-h"), ("Intel(R) Graphics [0x7d51]", "Arrow Lake-H", "arl-h"),
    ("Intel(R) Graphics [0x64a0]", "Lunar Lake", "lnl-m"), ("Intel(R) Arc(TM) B390 GPU", "Panther Lake", "ptl-h"),
    ("Intel(R) Arc(TM) A770M Graphics", "Arc A770M", "dg2"), ("Intel(R) Graphics [0xe223]", "Arc Pro B70", "bmg"),
    ("Arc A770", "Arc A770", "dg2"), ("Arc B580", "Arc B580", "bmg"), ("Arc 140V", "Lunar Lake", "lnl-m"),
]


@pytest.mark.parametrize("printed,model,arch", INTEL)
def test_intel_gpus_are_known_by_the_names_their_tools_print(printed: str, model: str, arch: str,
                                                            real_graph: Provider) -> None:
    g = real_graph.gpu(printed)
    assert g is not None, f"{printed!r} is no GPU of the data"
    assert (g.name, g.vendor, g.arch, g.platform) == (model, "intel", arch, "")
    info = real_graph.arch_info(g.arch)
    assert info is not None and info.vendor == "intel"


def test_processor_graphics_sharing_one_driver_name_are_no_row(real_graph: Provider) -> None:
    # Meteor Lake, Arrow Lake-H and Lunar Lake graphics are all "Intel(R) Arc(TM) Graphics": only the PCI id tells
    assert real_graph.gpu("Intel(R) Arc(TM) Graphics") is None


def test_every_ocloc_target_of_torchs_xpu_builds_is_an_intel_architecture(real_graph: Provider) -> None:
    # the AOT lists of torch-xpu-ops' BuildFlags.cmake, 2.4 .. 2.14, Linux and Windows, and cri
    targets = ("pvc", "dg2", "bmg", "mtl", "mtl-u", "mtl-h", "arl-h", "lnl-m", "ptl", "ptl-h", "ptl-u", "xe-lpg",
               "xe2-lpg", "xe2-hpg", "ats-m150", "cri")
    for name in targets:
        info = real_graph.arch_info(name)
        assert info is not None and info.vendor == "intel", name
        assert info.family.startswith("xe"), (name, info.family)


def test_an_intel_or_apple_gpu_in_a_spec_sets_its_vendor_and_an_apple_one_the_platform(real_graph: Provider) -> None:
    def target(gpu: str) -> tuple[str, str, str]:
        spec = parse_spec(f'[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["{gpu}"]\n', "project.toml", real_graph)
        t = spec.targets[0]
        return t.vendor, t.platform, t.gpus[0].arch.name

    assert target("Arc A770") == ("intel", "linux/amd64", "dg2")
    assert target("Data Center GPU Max 1550") == ("intel", "linux/amd64", "pvc")
    assert target("Apple M2") == ("apple", "darwin/arm64", "apple-m2")
    assert target("M3 Max") == ("apple", "darwin/arm64", "apple-m3")
    assert target("Apple M4") == ("apple", "darwin/arm64", "apple-m4")
    assert target("M4") == ("nvidia", "linux/amd64", "sm_52")  # a bare "M4" stays NVIDIA's Tesla M4


def test_every_apple_chip_is_a_mac_gpu_of_its_generation() -> None:
    m = load_dir(data_dir())
    apple = [g for g in m.gpus if g.vendor == "apple"]
    assert {g.name for g in apple} >= {f"Apple M{n}{tier}" for n in range(1, 5) for tier in ("", " Pro", " Max")}
    for g in apple:
        assert g.platform == "darwin/arm64", g.name
        assert g.arch == "apple-m" + g.name.split()[1][1:], g.name
# ---------------------------------------------------------------------------- issue 23: other hosts

def _builds(p: Provider, package: str, platform: str) -> list[Build]:
    return [b for b in p.m.builds if b.package == package and p.on_platform(b, platform)]


def test_native_windows_has_tensorflow_cuda_builds_up_to_2_10_only(real_graph: Provider) -> None:
    """'TensorFlow 2.10 was the last TensorFlow release that supported GPU on native-Windows': the
    win_amd64 wheels of 2.0 (tensorflow-gpu) .. 2.10.1 are system-CUDA builds, none after."""
    cuda = _builds(real_graph, "tensorflow", "windows/amd64")
    cuda = [b for b in cuda if b.accelerator == "cuda"]
    assert max(b.version for b in cuda) == Version("2.10.1")
    assert min(b.version for b in cuda) == Version("2.0.0")
    assert all(b.system_cuda for b in cuda)
    b210 = next(b for b in cuda if b.raw == "2.10.0")
    assert (b210.cuda and str(b210.cuda), b210.cudnn, b210.ptx) == ("11.2", "8.1", ("sm_80",))
    cpu = [b.raw for b in _builds(real_graph, "tensorflow", "windows/amd64") if b.accelerator == "cpu"]
    assert {"2.11.0", "2.18.0", "2.21.0"} <= set(cpu) and "2.2.3" not in cpu


def test_jax_has_no_cuda_or_rocm_build_off_linux_and_cpu_on_windows_from_0_4_13(real_graph: Provider) -> None:
    for platform in ("windows/amd64", "windows/arm64", "darwin/arm64", "darwin/amd64"):
        assert not [b for b in _builds(real_graph, "jax", platform) if b.accelerator in ("cuda", "rocm")], platform
    win = _builds(real_graph, "jax", "windows/amd64")
    assert min(b.version for b in win) == Version("0.4.13") and {b.accelerator for b in win} == {"cpu"}
    wheel = real_graph.platform_wheel(next(b for b in win if b.raw == "0.4.24"), "windows/amd64")
    assert wheel is not None and wheel.python == ("3.10",)
    assert max(b.version for b in _builds(real_graph, "jax", "darwin/amd64")) < Version("0.5")


def test_apple_gpu_builds_pair_the_metal_plugin_and_exist_on_apple_silicon_only(real_graph: Provider) -> None:
    metal = [b for b in real_graph.m.builds if b.accelerator == "mps"]
    assert {b.package for b in metal} == {"torch", "tensorflow", "jax", "onnxruntime"}
    for b in metal:
        assert b.platforms == ("darwin/arm64",), b
        for other in ("linux/amd64", "linux/arm64", "windows/amd64", "darwin/amd64"):
            assert not real_graph.on_platform(b, other)
    tf = {b.raw: dict(b.plugins)["tensorflow-metal"] for b in metal if b.package == "tensorflow"}
    assert (tf["2.5.0"], tf["2.12.0"], tf["2.13.0"], tf["2.16.2"]) == ("0.1.2", "0.8.0", "1.0.0", "1.1.0")
    assert "2.19.0" not in tf and "2.12.1" not in tf  # no plugin after 2.18; no macOS wheel of 2.12.1
    jax = {b.raw: {**dict(b.pins), **dict(b.plugins)} for b in metal if b.package == "jax"}
    assert all(p["jaxlib"] == v for v, p in jax.items())  # jax-metal loads into its own jaxlib only
    assert jax["0.4.34"]["jax-metal"] == "0.1.1" and "0.4.28" not in jax and "0.5.1" not in jax
    b216 = next(b for b in metal if b.package == "tensorflow" and b.raw == "2.16.1")
    assert "3.12" not in b216.python  # tensorflow-metal 1.1.0 has no cp312 wheel


def test_cupy_and_paddle_gpu_builds_are_windows_and_linux_only(real_graph: Provider) -> None:
    for package in ("cupy", "paddlepaddle"):
        assert not [b for b in _builds(real_graph, package, "darwin/arm64") if b.accelerator != "cpu"]
        assert [b for b in _builds(real_graph, package, "windows/amd64") if b.accelerator == "cuda"]
    assert not _builds(real_graph, "cupy", "darwin/arm64")
    arm = _builds(real_graph, "cupy", "windows/arm64")
    assert [(b.raw, b.variant) for b in arm] == [("14.2.0", "cuda13x")]
    paddle = {(b.raw, b.variant) for b in _builds(real_graph, "paddlepaddle", "windows/amd64")}
    assert {("2.6.2", "cu118"), ("3.0.0", "cu126"), ("3.3.1", "cu129")} <= paddle and ("3.0.0", "cu129") not in paddle


# ----------------------------------------------------------------------------- issue 40: trust, round 2


def _compiled(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(matrices, cache folder, the compiled file load stored there) of a copy of the fixture matrices."""
    from envsolve.data import load

    root, cache = tmp_path / "m", tmp_path / "c"
    root.mkdir()
    load(_fixture_copy(root), cache=cache)
    stored = list((cache / "data").glob("*.msgpack"))
    assert len(stored) == 1
    return root, cache, stored[0]


def _forged(root: Path, data_version: str, key: bytes | None = None) -> bytes:
    """A compiled file of ``root``'s records with another data version, its header made to match
    and sealed with ``key`` (default: this user's, as only a forger with this user's key could)."""
    import msgspec

    from envsolve.data import _code_digest, _compiled_blob
    from envsolve.files import cache_key
    from envsolve.paths import state_folder

    m = msgspec.structs.replace(load_dir(root), data_version=data_version)
    return _compiled_blob(m, _code_digest(), key or cache_key(state_folder()))


def _loaded_apart(root: Path, cache: Path) -> str:
    """``load``'s data version in another process, within a minute (a FIFO blocked the read for ever)."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; from envsolve.data import load\n"
            "print(load(Path(sys.argv[1]), cache=Path(sys.argv[2])).data_version)\n")
    r = subprocess.run([sys.executable, "-c", code, str(root), str(cache)], capture_output=True, text=True, timeout=60,
                       preexec_fn=_four_gib)
    assert "Traceback" not in r.stderr, r.stderr
    return r.stdout.strip()


def _four_gib() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))  # /dev/zero read whole: a MemoryError, not the machine's


def test_a_compiled_cache_that_is_a_fifo_or_a_device_is_made_again_never_read(tmp_path: Path) -> None:
    # defect 2: Path.read_bytes() of a FIFO blocked envsolve; of a link to /dev/zero, a MemoryError
    import os

    root, cache, stored = _compiled(tmp_path)
    version = load_dir(root).data_version
    stored.unlink()
    os.mkfifo(stored)
    assert _loaded_apart(root, cache) == version
    stored.unlink()
    stored.symlink_to("/dev/zero")
    assert _loaded_apart(root, cache) == version
    assert stored.is_file() and not stored.is_symlink()  # made again, in the link's place


def test_a_forged_or_stale_compiled_cache_is_made_again_never_believed(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # defect 4: a file at the cache's name changed the answers
    import os
    import stat

    from envsolve import __version__, data

    root, cache, stored = _compiled(tmp_path)
    fresh = load_dir(root)
    assert stat.S_IMODE(stored.stat().st_mode) == 0o600  # private whatever the umask
    genuine = stored.read_bytes()
    forged = _forged(root, "2099-01-01")
    head = len(genuine) - len(data._split(genuine)[1])  # type: ignore[index]
    made = [forged[:head] + genuine[head:],  # records another's, under the genuine header
            genuine[:head] + forged[head:],  # forged records, the genuine header: their digest differs
            genuine.replace(__version__.encode(), b"0.0.1", 1),  # another envsolve's
            _forged(root, fresh.data_version, os.urandom(32)),  # sealed with another key: made elsewhere
            data._compiled_blob(fresh, data._code_digest())]  # a wheel's (unkeyed) in the user's cache
    for blob in made:
        stored.write_bytes(blob)
        assert data.load(root, cache=cache) == fresh and stored.read_bytes() == genuine
    stored.write_bytes(forged)
    stored.chmod(0o664)  # others may have written it
    assert data.load(root, cache=cache) == fresh and stored.read_bytes() == genuine
    if os.geteuid() == 0:
        stored.write_bytes(forged)
        os.chown(stored, 4242, 4242)  # another user's
        assert data.load(root, cache=cache) == fresh
        os.chown(stored, 0, 0)
    monkeypatch.setattr("envsolve.__version__", "9.9.9")  # the same file, read by a newer envsolve: stale
    assert data.load(root, cache=cache) == fresh and stored.read_bytes() != genuine


def test_data_validate_reads_the_toml_never_a_compiled_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # defect 4: `data --validate` agreed with whatever the cache held
    root, cache, stored = _compiled(tmp_path)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(cache))
    stored.write_bytes(_forged(root, "2099-01-01"))  # as a forger with this user's rights would
    stored.chmod(0o600)
    r = CliRunner().invoke(main, ["--matrices", str(root), "data", "--validate"])
    assert r.exit_code == 0 and f"valid (data {load_dir(root).data_version}," in r.output
    (root / "gpus.toml").write_text((root / "gpus.toml").read_text() + "\n[[gpu]]\nname = 3\n")
    r = CliRunner().invoke(main, ["--matrices", str(root), "data", "--validate"])
    assert r.exit_code == 2 and "gpus.toml" in r.output
