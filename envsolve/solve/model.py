"""The solver's values: candidates, locked package pins, resolutions, and the reporter hook."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..data import Build, Gpu, Release
from ..domain import DEFAULT_PLATFORM, Accelerator, Platform
from ..spec import Target
from ..versions import Dotted

__all__ = ["Candidate", "No", "PackagePin", "Reporter", "Resolution"]


class Reporter:
    """Receives the search's decisions; the base class ignores them."""

    def chosen(self, target: str, subject: str, reason: str) -> None:
        """A candidate was chosen."""

    def rejected(self, target: str, subject: str, reason: str) -> None:
        """A candidate was ruled out."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Candidate:
    """A release and build of one framework that fits the target on its own."""

    release: Release
    build: Build | None  # None for keras (pure Python)
    pythons: frozenset[str]
    compat: str = ""  # native | minor-version ("" off NVIDIA)
    driver_min: Dotted | None = None

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


@dataclass(frozen=True, kw_only=True, slots=True)
class PackagePin:
    name: str
    version: str
    variant: str
    index: str
    index_path: str = ""
    extra: str = ""
    conda: tuple[str, ...] = ()  # conda-forge MatchSpecs of the same build, when conda-forge has it
    pins: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Resolution:
    target: Target
    accelerator: Accelerator
    platform: Platform = DEFAULT_PLATFORM  # Docker's name of the platform the environment runs on
    jetpack: str = ""  # a Jetson's JetPack release
    python: str
    cuda: str
    rocm: str
    cudnn: str
    driver_min: str
    compat: str
    gpu_archs: tuple[str, ...]
    gpus: tuple[str, ...]
    base_image: str
    keras_backend: str
    python_from: str = ""  # image (a python image) | os (the base OS's python3) | uv (a pinned uv installs it)
    packages: tuple[PackagePin, ...]
    models: tuple[Gpu, ...] = ()  # the GPU models' records (aliases, peak TFLOP/s)
    tools: tuple[tuple[str, str], ...] = ()  # tools the images install, name -> version
    warnings: tuple[str, ...] = ()
    choices: tuple[Candidate, ...] = field(default=(), compare=False)


@dataclass(frozen=True, slots=True)
class No:
    """Why a build does not fit: a code the explanations group by, and the text."""

    code: str  # accelerator | pin | arch | arch-cuda | cudnn | driver | python | companion | platform | jetpack
    text: str
    needs: str = ""  # for arch-cuda: the CUDA major.minor the GPU needs
