"""A resolution from the chosen candidates: the Python every package supports, the CUDA/ROCm,
cuDNN and driver floor, the base image, and the packages to pin (with companions and the
conda-forge builds of the same versions)."""

from __future__ import annotations

from ..domain import ACCELERATOR
from ..provider import Provider
from ..spec import ProjectSpec, Target
from ..versions import parse_python_minor
from .cache import Cache
from .images import base_image
from .model import Candidate, PackagePin, Resolution

__all__ = ["resolution"]


def resolution(g: Provider, cache: Cache, spec: ProjectSpec, t: Target, found: list[Candidate],
               backend: str) -> Resolution:
    """What the lock records of the chosen candidates: Python, CUDA/ROCm, driver, image, pins."""
    pythons = frozenset.intersection(*(c.pythons for c in found)) if found else frozenset(
        p for p in g.pythons() if p in cache.pythons(spec.python_raw, (p,)))
    python_images = [i for i in g.images("cpu") if i.python]
    if t.vendor == "cpu" and (not spec.os or any(spec.os in i.os for i in python_images)):
        # a CPU environment runs on a python image: prefer a Python that has one
        pythons = (pythons & {i.python for i in python_images}) or pythons
    python = max(pythons, key=parse_python_minor) if pythons else ""
    builds = [c.build for c in found if c.build]
    cudas = [b.cuda for b in builds if b.cuda]
    rocms = [b.rocm for b in builds if b.rocm]
    accel = ACCELERATOR[t.vendor]
    driver_mins = [c.driver_min for c in found if c.driver_min]
    compat = "minor-version" if any(c.compat == "minor-version" for c in found) else (
        "native" if t.vendor == "nvidia" else "")
    cuda = max(cudas) if cudas else None
    rocm = max(rocms) if rocms else None
    system = [b for b in builds if b.system_cuda]
    stack = cuda or rocm
    key = (accel, stack.raw if stack else "", python, compat, spec.os, spec.flavor,
           t.driver.raw if t.driver else "", frozenset(x.family for x in t.gpus), bool(system), t.platform,
           t.jetpack.raw if t.jetpack else "")
    images = cache.table("images")
    if key not in images:
        images[key] = base_image(g, spec, t, accel, stack, python, compat, needs_cudnn=bool(system))
    image, image_note, image_os, image_python = images[key]
    # how the image gets the locked Python: the python image's own, the OS's python3, or a pinned uv
    python_from = "image" if image_python else "os" if image and g.os_python(image_os) == python else "uv"
    low = [f"{c.label} rests on data marked confidence = low" for c in found
           if c.release.confidence == "low" or (c.build and c.build.confidence == "low")]
    if cuda is not None and compat == "native" and (floor_note := g.driver_floor_note(cuda)):
        low.append(floor_note)
    packages: list[PackagePin] = []
    for c in found:
        b = c.build
        variant = b.variant if b else "any"
        index = b.index if b else "pypi"
        path = b.index_path if b else ""
        on = g.platform_wheel(b, t.platform) if b and t.platform != "linux/amd64" else None
        name = on.dist if on and on.dist else (b.dist if b and b.dist else c.package)
        version = b.dist_version if b and b.dist_version else c.release.raw
        conda: tuple[str, ...] = ()
        if accel != "rocm" and not any(spec.framework(comp) for comp, _ in c.release.companions):
            conda = g.conda_specs(c.release, b.cuda if b else None, python)
        packages.append(PackagePin(name=name, version=version, variant=variant, index=index,
                                   index_path=path, extra=b.extra if b else "", conda=conda, pins=c.pins))
        for comp, version in c.release.companions:
            if spec.framework(comp) is not None:
                packages.append(PackagePin(name=comp, version=version, variant=variant, index=index,
                                           index_path=path))
    return Resolution(
        target=t,
        accelerator=accel,
        platform=t.platform,
        jetpack=t.jetpack.raw if t.jetpack else "",
        python=python,
        cuda=cuda.raw if cuda else "",
        rocm=rocm.raw if rocm else "",
        cudnn=next((b.cudnn for b in builds if b.cudnn), ""),
        driver_min=max(driver_mins).raw if driver_mins else "",
        compat=compat,
        gpu_archs=tuple(sorted({x.arch.name for x in t.gpus})),
        gpus=tuple(x.name for x in t.gpus),
        base_image=image,
        python_from=python_from,
        keras_backend=backend,
        packages=tuple(sorted(packages, key=lambda p: p.name)),
        models=tuple(m for x in t.gpus if (m := g.gpu(x.name)) is not None),
        tools=tuple((tool.name, tool.version) for tool in g.m.tools),
        warnings=tuple(w for w in (image_note, *low) if w),
        choices=tuple(found),
    )
