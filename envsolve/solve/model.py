"""The solver's values: candidates, locked package pins, resolutions, and the reporter hook."""

from __future__ import annotations

from typing import Literal

import msgspec

from ..data import Build, Gpu, Release
from ..domain import DEFAULT_PLATFORM, Accelerator, Platform, requirement
from ..spec import Target
from ..versions import Dotted

__all__ = ["Candidate", "ExtensionPin", "No", "PackagePin", "PythonWhy", "Reporter", "Resolution"]

# Why the solver took a resolution's Python (see :attr:`Resolution.python_why`).
PythonWhy = Literal["frameworks", "frameworks-image", "data", "data-image"]


class Reporter:
    """Receives the search's decisions; the base class ignores them."""

    def chosen(self, target: str, subject: str, reason: str) -> None:
        """A candidate was chosen."""

    def rejected(self, target: str, subject: str, reason: str) -> None:
        """A candidate was ruled out."""


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A release and build of one framework that fits the target on its own."""

    release: Release
    build: Build | None  # None for keras (pure Python)
    pythons: frozenset[str]
    compat: str = ""  # native | minor-version ("" off NVIDIA)
    driver_min: Dotted | None = None
    jit: tuple[str, ...] = ()  # the archs of the target's GPUs the build reaches only through PTX JIT
    # what a run-time compiler that only some paths use cannot do for the target's GPUs
    # (torch.compile's Triton on a newer GPU; :func:`~envsolve.solve.fit.compiler_on`); "" when none
    compiler_gap: str = ""
    # the requirements other frameworks also have (ml-dtypes, numpy, nvidia-*): name -> specifier
    # (:meth:`~envsolve.provider.Provider.shared`); together.clash intersects two candidates' ranges
    shared: tuple[tuple[str, str], ...] = ()

    @property
    def package(self) -> str:
        return self.release.package

    @property
    def label(self) -> str:
        v = f"{self.release.package} {self.release.raw}"
        return f"{v} ({self.build.variant})" if self.build else v

    @property
    def pins(self) -> tuple[tuple[str, str], ...]:
        return self.build.pins if self.build else ()


class PackagePin(msgspec.Struct, frozen=True, kw_only=True):
    """One pinned framework (or companion) build: the solver's choice, and the lock's record of it
    (:mod:`envsolve.lock.model` writes it as ``[[environments.frameworks]]``)."""

    name: str
    version: str
    variant: str  # cpu | cuXYZ | rocmX.Y | ... | any (pure Python)
    index: str  # symbolic: pypi | pytorch | ...
    index_path: str = ""  # the build's folder under its index's root ("cu128"; "" for the root itself)
    # the URL pip takes it from: the index's root joined with index_path ("" for the default index);
    # the lock sets it from the configured roots, the solver leaves it empty
    index_url: str = ""
    extra: str = ""
    conda: tuple[str, ...] = ()  # conda-forge MatchSpecs of the same build, when conda-forge has it
    pins: tuple[tuple[str, str], ...] = ()  # Requires-Dist pins of bundled libraries

    @property
    def requirement(self) -> str:
        """The exact pip requirement (``torch==2.7.1+cu128``)."""
        return requirement(self.name, self.version, variant=self.variant, index=self.index, extra=self.extra)


# how a CUDA extension package installs: the default index's wheels | a GitHub release's wheel
# (a direct URL) | PyG's wheel page (find-links) | compiled in the image
INSTALLS = ("index", "github", "pyg", "source")


class ExtensionPin(msgspec.Struct, frozen=True, kw_only=True):
    """A CUDA extension package of ``[packages] pip`` (flash-attn, xformers, vllm) as the solve
    locked it (:mod:`envsolve.solve.extensions`): its release and how it installs; the lock
    writes it as ``[[environments.extensions]]``."""

    name: str
    version: str
    install: str  # one of INSTALLS
    url: str = ""  # github: the wheel; pyg: the find-links page
    hash: str = ""  # github: the wheel's sha256, once the full lock read it
    build_env: str = ""  # source: the variable that sets the arch list (FLASH_ATTN_CUDA_ARCHS)
    build_archs: str = ""  # source: its value, the target's GPUs only ("90", "8.0;8.6")
    build_from: str = ""  # source: the pip requirement built ("": name==version)
    build_requires: tuple[str, ...] = ()  # source: installed before the build
    build_vars: tuple[str, ...] = ()  # source: other NAME=VALUE settings of the build
    reason: str = ""  # what it asked of the choice (envsolve explain)

    @property
    def requirement(self) -> str:
        """What pip installs: the wheel's URL, the built requirement, or name==version."""
        if self.install == "github":
            return f"{self.name} @ {self.url}"
        if self.install == "source" and self.build_from:
            return self.build_from
        return f"{self.name}=={self.version}"


class Resolution(msgspec.Struct, frozen=True, kw_only=True):
    """What one target resolved to; the lock's :class:`~envsolve.lock.model.Environment` is made
    from it by one function (:func:`envsolve.lock.model.build`)."""

    target: Target
    accelerator: Accelerator
    platform: Platform = DEFAULT_PLATFORM  # Docker's name of the platform the environment runs on
    jetpack: str = ""  # a Jetson's JetPack release
    python: str
    # why that Python, as the solver knows it: "frameworks" (the newest every chosen framework
    # supports), "data" (no framework: the newest the data knows), "-image" when a CPU environment
    # took an older one that has a python image; :func:`envsolve.solve.output.python_reason` tells it
    python_why: PythonWhy = "frameworks"
    cuda: str
    rocm: str
    cudnn: str
    driver_min: str
    compat: str
    gpu_archs: tuple[str, ...]
    jit_archs: tuple[str, ...] = ()  # the GPU archs a chosen build reaches only through PTX JIT
    gpus: tuple[str, ...]
    base_image: str
    keras_backend: str
    python_from: str = ""  # image (a python image) | os (the base OS's python3) | uv (a pinned uv installs it)
    packages: tuple[PackagePin, ...]
    models: tuple[Gpu, ...] = ()  # the GPU models' records (aliases, peak TFLOP/s)
    tools: tuple[tuple[str, str], ...] = ()  # tools the images install, name -> version
    warnings: tuple[str, ...] = ()
    extensions: tuple[ExtensionPin, ...] = ()  # the CUDA extension packages of [packages] pip
    choices: tuple[Candidate, ...] = ()


class No(msgspec.Struct, frozen=True):
    """Why a build does not fit: a code the explanations group by, and the text."""

    code: str  # accelerator | jetson | pin | arch | arch-cuda | cudnn | driver | python | companion | platform
    # | find-links (it would run, but its wheels are on no index envsolve installs from)
    # | jetpack ("accelerator" and "jetson": a build of another kind than the target asks for)
    text: str
    needs: str = ""  # for arch-cuda: the CUDA major.minor the GPU needs
