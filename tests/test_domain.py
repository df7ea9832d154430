from packaging.version import Version

from envsolve.data import Build
from envsolve.domain import (
    COMPANIONS,
    COMPANIONS_OF,
    cuda_of_variant,
    kernels,
    qualified_image,
    requirement,
    serves,
    variant_of_cuda,
)
from envsolve.versions import parse_arch


def test_pytorch_index_builds_carry_their_local_label() -> None:
    assert requirement("torch", "2.7.1", variant="cu128", index="pytorch") == "torch==2.7.1+cu128"
    assert requirement("torch", "2.7.1", variant="cu126", index="pypi") == "torch==2.7.1"
    assert requirement("tensorflow", "2.18.0", variant="cuda", extra="and-cuda") == "tensorflow[and-cuda]==2.18.0"


def test_variants_and_cuda_versions_map_both_ways() -> None:
    assert cuda_of_variant("cu128") == "12.8" and cuda_of_variant("cu130") == "13.0"
    assert cuda_of_variant("cpu") == "" and cuda_of_variant("rocm6.2") == ""
    assert variant_of_cuda("12.8.1") == "cu128" and variant_of_cuda("11.8") == "cu118"


def test_companions_both_ways() -> None:
    assert COMPANIONS_OF == {"torch": ("torchvision", "torchaudio"), "jax": ("jaxlib",)}
    assert all(c in COMPANIONS_OF[o] for c, o in COMPANIONS.items())


def _build(archs: tuple[str, ...], ptx: tuple[str, ...] = ()) -> Build:
    return Build(source="test", package="torch", version=Version("2.3.1"), raw="2.3.1", variant="cu121",
                 accelerator="cuda", index="pypi", archs=archs, ptx=ptx)


def test_serves_is_sass_or_ptx_on_a_native_driver() -> None:
    b = _build(("sm_75", "sm_80", "sm_86", "sm_90"), ptx=("sm_90",))
    assert kernels(b, parse_arch("sm_89")) == "sass"  # sm_86 code runs on 8.9
    assert kernels(b, parse_arch("sm_70")) == ""  # Volta was not compiled in
    assert kernels(b, parse_arch("sm_120")) == "ptx"  # only PTX for 9.0 reaches a Blackwell card
    assert serves(b, parse_arch("sm_120"), native=True)
    assert not serves(b, parse_arch("sm_120"), native=False)  # the JIT needs native support
    assert not serves(_build(("sm_90a",)), parse_arch("sm_100"), native=True)  # arch-specific code


def test_images_are_named_with_their_registry() -> None:
    assert qualified_image("nvidia/cuda:12.8.1-base-ubuntu24.04") == "docker.io/nvidia/cuda:12.8.1-base-ubuntu24.04"
    assert qualified_image("python:3.12.9-slim") == "docker.io/library/python:3.12.9-slim"
    assert qualified_image("nvcr.io/nvidia/l4t-jetpack:r36.4.0") == "nvcr.io/nvidia/l4t-jetpack:r36.4.0"
    assert qualified_image("localhost/x:1") == "localhost/x:1"
