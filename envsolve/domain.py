"""The few compatibility facts that are code, each written once.

Everything that can be data lives in ``matrices/``; what is here are names and rules the code
itself branches on: the closed words (platform, vendor, accelerator) and the default platform, a
platform's wheel tags, markers, uv platform and GitHub runner, which frameworks the solver resolves and in which
order, which packages follow a framework (companions), Keras' backends, which accelerator a vendor
needs, how a build variant names its CUDA or ROCm version, an image reference's registry, how a
GPU container is started, the pip requirement of a locked package, and the one rule for whether a
build carries kernels a GPU can run.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from .versions import parse_arch

if TYPE_CHECKING:
    from .versions import Arch

__all__ = [
    "ACCELERATOR",
    "ACCELERATORS",
    "DEFAULT_PLATFORM",
    "PLATFORMS",
    "VENDORS",
    "VENDOR_NAME",
    "VENDOR_OF",
    "STACK_NAME",
    "Accelerator",
    "Platform",
    "Vendor",
    "COMPANIONS",
    "COMPANIONS_OF",
    "DEFAULT_INDEXES",
    "DOCKER_PLATFORM",
    "LINUX_PLATFORMS",
    "APPLE_PLATFORM",
    "APPLE_ACCELERATORS",
    "AppleAccelerator",
    "MARKERS",
    "PYTHON_PLATFORM",
    "MACOS_TARGET",
    "WHEEL_TAGS",
    "EXTRA_INDEXES",
    "FLAT_INDEXES",
    "GITHUB_RUNNER",
    "INIT_PYTHON",
    "JETSON_PLATFORM",
    "FRAMEWORKS",
    "KERAS_BACKENDS",
    "Kernels",
    "PYTHONS_FROM",
    "SHARED_NAMES",
    "SHARED_PREFIXES",
    "canonical_name",
    "cuda_of_variant",
    "driver_text",
    "gpu_run_flags",
    "image_problem",
    "kernels",
    "os_of",
    "qualified_image",
    "registry_of",
    "requirement",
    "serves",
    "shared_name",
    "stack_text",
    "variant_of_cuda",
]

# The frameworks the solver resolves, in preference order (newest torch first, then ...). Each has a
# matrices/<name>.toml; adding a framework is that file plus its name here (matrices/README.md).
FRAMEWORKS = ("torch", "tensorflow", "jax", "keras", "onnxruntime", "paddlepaddle", "cupy")
# The Python range `envsolve init` writes: the oldest CPython line still given security fixes
# (3.10's ended in October 2026, PEP 619); the lock then takes the newest every framework supports.
INIT_PYTHON = ">=3.11"
# Companion package -> the framework whose release fixes its version.
COMPANIONS = {"torchvision": "torch", "torchaudio": "torch", "jaxlib": "jax"}
# Framework -> its companions (the same fact, the other way round).
COMPANIONS_OF: dict[str, tuple[str, ...]] = {
    owner: tuple(c for c, o in COMPANIONS.items() if o == owner) for owner in dict.fromkeys(COMPANIONS.values())
}
# A framework published as a pure wheel (or, for `cupy`, as a source distribution whose wheels are
# cupy-cudaXXx) -> the package whose wheels say which Pythons it runs on.
PYTHONS_FROM = {"jax": "jaxlib", "cupy": "cupy-cuda12x"}
# The requirements more than one framework has (Requires-Dist), whose versions must agree in one
# environment: a framework row's `shared` names these (matrices/README.md), the solver intersects them.
SHARED_NAMES = ("cuda-toolkit", "ml-dtypes", "numpy", "protobuf", "typing-extensions")
SHARED_PREFIXES = ("nvidia-",)  # the CUDA libraries' wheels (nvidia-cudnn-cu12, nvidia-nccl-cu12, ...), as cuda-toolkit
# Keras' backends; Keras' own default comes first.
KERAS_BACKENDS = ("tensorflow", "jax", "torch")
# The closed words every record uses (spec, solver, lock, host, matrix): a platform is Docker's name
# of it, a vendor makes the GPUs (``cpu``: none), an accelerator is the software stack that drives them.
Platform = Literal["linux/amd64", "linux/arm64", "windows/amd64", "windows/arm64", "darwin/arm64", "darwin/amd64"]
Vendor = Literal["nvidia", "amd", "intel", "apple", "cpu"]
Accelerator = Literal["cuda", "rocm", "xpu", "mps", "cpu"]
PLATFORMS: tuple[Platform, ...] = get_args(Platform)
VENDORS: tuple[Vendor, ...] = get_args(Vendor)
ACCELERATORS: tuple[Accelerator, ...] = get_args(Accelerator)
# The platform of a spec, target, image or lock that names none.
DEFAULT_PLATFORM: Platform = "linux/amd64"
# A Jetson module is an Arm computer: its builds and images are for this platform only.
JETSON_PLATFORM: Platform = "linux/arm64"
# The platforms containers run: a target on one of these can have a Dockerfile (Docker Desktop on
# Windows runs them under WSL2); Windows and macOS targets get requirements and a smoke test.
LINUX_PLATFORMS: tuple[Platform, ...] = ("linux/amd64", "linux/arm64")
# Apple silicon: its GPU (MPS) is the only GPU of this platform, and it is on no other.
APPLE_PLATFORM: Platform = "darwin/arm64"
# What a Mac on Apple silicon may run its frameworks on ([hardware] accelerator): its GPU through MPS
# (JAX and TensorFlow through Apple's Metal plugins, jax-metal and tensorflow-metal, which pin older
# releases) or its CPU (the newest releases).
AppleAccelerator = Literal["mps", "cpu"]
APPLE_ACCELERATORS: tuple[AppleAccelerator, ...] = get_args(AppleAccelerator)
# Vendor -> the accelerator its GPUs need: Intel GPUs run PyTorch's XPU builds (SYCL, Level Zero),
# Apple's GPU runs Metal Performance Shaders (MPS).
ACCELERATOR: dict[str, Accelerator] = {"nvidia": "cuda", "amd": "rocm", "intel": "xpu", "apple": "mps", "cpu": "cpu"}
# Accelerator -> the vendor whose GPUs it drives (the same fact, the other way round).
VENDOR_OF: dict[str, Vendor] = {ACCELERATOR[vendor]: vendor for vendor in VENDORS}
# The names messages give a vendor's GPUs and an accelerator's stack.
VENDOR_NAME: dict[str, str] = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel", "apple": "Apple"}
STACK_NAME: dict[str, str] = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU", "mps": "MPS", "cpu": "CPU"}


def stack_text(accelerator: str) -> str:
    """An environment's stack when it names no CUDA or ROCm version: ``XPU (Intel GPU)``, ``CPU``."""
    name = STACK_NAME.get(accelerator, accelerator)
    vendor = VENDOR_OF.get(accelerator, "cpu")
    return f"{name} ({VENDOR_NAME[vendor]} GPU)" if vendor in VENDOR_NAME else name


def canonical_name(name: str) -> str:
    """``name`` as PEP 503 normalises it (packaging's ``canonicalize_name``). A name in lower case
    with no ``_``, ``.`` or ``--`` (a framework's, ``numpy``) already is, and packaging's utils,
    which cost a lock more to import than it takes to solve, are imported only for any other name."""
    if name in FRAMEWORKS or name in COMPANIONS or (
            name.islower() and "_" not in name and "." not in name and "--" not in name):
        return name
    from packaging.utils import canonicalize_name

    return str(canonicalize_name(name))

# Index name -> the public URL of an index every user needs, written in full into locks and
# artifacts (the URL PyTorch's install selector prints; builds under it by variant: /cu128).
# The default index ("pypi") is never written here: it is pip's, at install time.
DEFAULT_INDEXES = {"pytorch": "https://download.pytorch.org/whl",
                   # NVIDIA's Jetson AI Lab index: builds for each JetPack under /jp6/cu126 and the like
                   "jetson": "https://pypi.jetson-ai-lab.io",
                   # NVIDIA's folders of Jetson wheels for JetPack 4 and 5 (/jp/v512/pytorch and the like):
                   # plain file listings, for pip's --find-links, not a PEP 503 index
                   "jetson-redist": "https://developer.download.nvidia.com/compute/redist",
                   # PaddlePaddle's own index of its CUDA builds (/cu118, /cu126, ...)
                   "paddle": "https://www.paddlepaddle.org.cn/packages/stable",
                   # NVIDIA's index (nvidia-tensorflow), the one nvidia-pyindex configures
                   "nvidia": "https://pypi.ngc.nvidia.com"}

# The machine name ``uname -m`` prints -> Docker's name of the platform.
DOCKER_PLATFORM: dict[str, Platform] = {"x86_64": "linux/amd64", "amd64": "linux/amd64",
                                        "aarch64": "linux/arm64", "arm64": "linux/arm64"}
# Docker's name of a platform -> the environment markers (PEP 508) of a Python on it: what a wheel's
# Requires-Dist is evaluated against (platform_machine as that OS's Python reports it).
_LINUX = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"}
_WINDOWS = {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"}
_DARWIN = {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"}
MARKERS: dict[Platform, dict[str, str]] = {
    "linux/amd64": {**_LINUX, "platform_machine": "x86_64"}, "linux/arm64": {**_LINUX, "platform_machine": "aarch64"},
    "windows/amd64": {**_WINDOWS, "platform_machine": "AMD64"},
    "windows/arm64": {**_WINDOWS, "platform_machine": "ARM64"},
    "darwin/arm64": {**_DARWIN, "platform_machine": "arm64"}, "darwin/amd64": {**_DARWIN, "platform_machine": "x86_64"},
}
# Docker's name of a platform -> the wheel platform tags of it: (prefixes, suffixes) of a tag such as
# manylinux_2_28_x86_64 or macosx_11_0_arm64 (musllinux is not what the images run).
WHEEL_TAGS: dict[Platform, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "linux/amd64": (("manylinux", "linux_"), ("_x86_64",)),
    "linux/arm64": (("manylinux", "linux_"), ("_aarch64",)),
    "windows/amd64": (("win_amd64",), ("win_amd64",)),
    "windows/arm64": (("win_arm64",), ("win_arm64",)),
    "darwin/arm64": (("macosx_",), ("_arm64", "_universal2")),
    "darwin/amd64": (("macosx_",), ("_x86_64", "_universal2", "_intel", "_universal")),
}
# Docker's name of a platform -> uv's --python-platform for a full lock: manylinux_2_28 (glibc 2.28+,
# as the images are), Windows (MSVC), macOS 11+ on Apple silicon, 10.12+ on Intel (uv's defaults).
PYTHON_PLATFORM: dict[Platform, str] = {
    "linux/amd64": "x86_64-manylinux_2_28", "linux/arm64": "aarch64-manylinux_2_28",
    "windows/amd64": "x86_64-pc-windows-msvc", "windows/arm64": "aarch64-pc-windows-msvc",
    "darwin/arm64": "aarch64-apple-darwin", "darwin/amd64": "x86_64-apple-darwin",
}
# A macOS platform -> the macOS release a full lock resolves its wheels for (uv's --python-platform
# takes it from MACOSX_DEPLOYMENT_TARGET): 14.0, Sonoma, which torch's wheels from 2.12 and
# onnxruntime's from 1.24.1 are built for (macosx_14_0_arm64); uv's own default, 13.0, takes none of them.
MACOS_TARGET: dict[Platform, str] = {"darwin/arm64": "14.0", "darwin/amd64": "14.0"}
# Docker's name of a platform -> the GitHub-hosted runner that builds or tests it natively (the CI
# workflow): GitHub's Arm runners for linux/arm64 and windows/arm64, macos-15 on Apple silicon,
# macos-15-intel the last Intel-Mac image.
GITHUB_RUNNER: dict[Platform, str] = {"linux/amd64": "ubuntu-latest", "linux/arm64": "ubuntu-24.04-arm",
                                      "windows/amd64": "windows-latest", "windows/arm64": "windows-11-arm",
                                      "darwin/arm64": "macos-15", "darwin/amd64": "macos-15-intel"}


def os_of(platform: str) -> str:
    """``windows/amd64`` -> ``windows``: the operating system of a platform (Docker's first half)."""
    return platform.partition("/")[0]

# Indexes that hold a framework but not its dependencies (nvidia-tensorflow's nvidia-*-cu12 wheels and numpy
# are on the default index): their builds are installed with --extra-index-url, pinned to a local version
# (1.15.5+nv23.3) that the default index cannot serve. Every other index is used alone (--index-url).
EXTRA_INDEXES = frozenset({"nvidia"})
# Indexes that are plain folders of wheel files (pip's --find-links, uv's flat indexes), not PEP 503
# indexes: NVIDIA's JetPack 4 and 5 wheels. Their pins carry the wheel's own version (2.1.0a0+41361538.nv23.06).
FLAT_INDEXES = frozenset({"jetson-redist"})

_CU = re.compile(r"^cu(\d+)(\d)$")


def shared_name(name: str) -> bool:
    """Whether the canonical distribution ``name`` is a requirement frameworks share (:data:`SHARED_NAMES`)."""
    return name in SHARED_NAMES or name.startswith(SHARED_PREFIXES)


def cuda_of_variant(variant: str) -> str:
    """``cu128`` -> ``12.8``; "" for a variant that names no CUDA version (``cpu``, ``rocm6.2``)."""
    m = _CU.match(variant)
    return f"{m.group(1)}.{m.group(2)}" if m else ""


def variant_of_cuda(cuda: str) -> str:
    """``12.8`` (or ``12.8.1``) -> ``cu128``."""
    major, _, rest = cuda.partition(".")
    return f"cu{major}{rest.split('.')[0] or '0'}"


def driver_text(driver_min: str, jetpack: str = "") -> str:
    """What runs an environment's CUDA: ``driver >= 570.26`` or, on a Jetson, ``JetPack 6.2``
    (whose L4T release brings the driver)."""
    return f"JetPack {jetpack}" if jetpack else f"driver >= {driver_min}"


def registry_of(ref: str) -> str:
    """The registry host of an image reference or repository, or ``""`` for Docker Hub (Docker's
    rule: the first path component is a host when it has a dot or a port, or is ``localhost``)."""
    first, sep, _ = ref.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return ""


# An image reference as Docker's grammar has it: [host[:port]/]path[:tag][@sha256:digest], the path
# lower case; nothing a shell or a Dockerfile would read as more than one word.
_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE = re.compile(rf"(?:[A-Za-z0-9.-]+(?::[0-9]+)?/)?{_PATH}(?:/{_PATH})*"
                    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[0-9a-f]{64})?")


def image_problem(ref: object, *, digest: bool = True) -> str | None:
    """Why ``ref`` is no image reference (``nvidia/cuda:12.8.1-base-ubuntu24.04``, ``ghcr.io/org/app:1``;
    without ``digest``, no ``@sha256:`` part, as an image's tag is written); None when it is one."""
    if isinstance(ref, str) and len(ref) <= 255 and _IMAGE.fullmatch(ref) and (digest or "@" not in ref):
        return None
    example = "'ghcr.io/org/app:1.0'" if not digest else "'nvidia/cuda:12.8.1-base-ubuntu24.04'"
    return f"{ref!r} is not an image reference such as {example} (lower-case path, optional :tag)"


def qualified_image(ref: str) -> str:
    """``nvidia/cuda:12.8.1-base-ubuntu24.04`` -> ``docker.io/nvidia/cuda:...`` and ``python:3.12-slim``
    -> ``docker.io/library/python:3.12-slim``: a short name means Docker Hub to Docker, but podman and
    buildah resolve it through their own search list (or refuse), so a FROM line names the registry."""
    if registry_of(ref):
        return ref
    return f"docker.io/{ref}" if "/" in ref else f"docker.io/library/{ref}"


def gpu_run_flags(accelerator: Accelerator, *, jetson: bool = False) -> tuple[str, ...]:
    """The ``docker run`` / ``podman run`` arguments that give a container the GPUs: NVIDIA's
    container toolkit (``--gpus all``; on a Jetson, whose GPU is integrated, its ``nvidia`` runtime),
    AMD's device files (``/dev/kfd``, ``/dev/dri``, which belong to the video and render groups on
    current distributions), nothing for a CPU image. Render, build, the CI workflow and doctor all
    say this one answer."""
    if accelerator == "cuda":
        return ("--runtime", "nvidia") if jetson else ("--gpus", "all")
    if accelerator == "rocm":
        return ("--device=/dev/kfd", "--device=/dev/dri", "--group-add", "video", "--group-add", "render")
    if accelerator == "xpu":  # Intel's GPUs: the render nodes (Intel's Docker instructions for the XPU builds)
        return ("--device=/dev/dri", "--group-add", "render")
    return ()


def requirement(name: str, version: str, *, variant: str = "", index: str = "pypi", extra: str = "") -> str:
    """The exact pip requirement of a locked package (``torch==2.7.1+cu128``).

    Builds from the PyTorch index carry their variant as a local version label; a default-index
    build is pinned by its plain version.
    """
    local = f"+{variant}" if index == "pytorch" and variant else ""
    return f"{name}{f'[{extra}]' if extra else ''}=={version}{local}"


class Kernels(Protocol):
    """What :func:`kernels` reads of a build (``data.Build`` is one): the architectures it carries
    SASS for, those it carries PTX for, its AMD code objects, its Intel AOT targets, its accelerator."""

    @property
    def archs(self) -> tuple[str, ...]: ...

    @property
    def ptx(self) -> tuple[str, ...]: ...

    @property
    def gfx(self) -> tuple[str, ...]: ...

    @property
    def xpu(self) -> tuple[str, ...]: ...

    @property
    def accelerator(self) -> str: ...


def kernels(build: Kernels, gpu: Arch) -> str:
    """What ``build`` carries for ``gpu``: ``"sass"`` (machine code that runs on it), ``"ptx"``
    (only PTX the driver can JIT-compile for it), or "" (nothing).

    SASS for ``sm_XY`` runs on the same major at an equal or higher minor (``sm_80`` code runs on
    8.6 and 8.9, never on 9.0); arch-specific code (``sm_90a``) only on that exact arch. AMD code
    objects are per gfx target. An XPU build carries machine code for its AOT targets (``bmg``) and
    SPIR-V that Intel's driver JIT-compiles for any other Intel GPU (``"ptx"``); Metal compiles an
    MPS build's shaders for whichever Apple GPU runs it.
    """
    if gpu.vendor == "amd":
        return "sass" if gpu.name in build.gfx else ""
    if gpu.vendor == "intel":
        return "" if build.accelerator != "xpu" else "sass" if gpu.name in build.xpu else "ptx"
    if gpu.vendor == "apple":
        return "sass" if build.accelerator == "mps" else ""
    if any(parse_arch(a).sass_runs_on(gpu) for a in build.archs):
        return "sass"
    if any(parse_arch(p).ptx_jits_to(gpu) for p in build.ptx):
        return "ptx"
    return ""


def serves(build: Kernels, gpu: Arch, *, native: bool) -> bool:
    """Whether ``build`` runs on ``gpu``: SASS always; PTX only when the driver runs the build's
    CUDA natively (the JIT needs it), never under minor-version compatibility."""
    k = kernels(build, gpu)
    return k == "sass" or (k == "ptx" and native)
