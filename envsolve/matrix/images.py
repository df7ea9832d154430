"""`envsolve matrix --check-images`: existing images, described by their stack, checked with
the solver's own rules (fit and together), each verdict naming what would fail."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import SpecifierSet

from ..data import Build, Release
from ..domain import Vendor
from ..errors import Problem, SpecError
from ..provider import Provider
from ..solve import Cache, Candidate, No
from ..solve.fit import fit
from ..solve.together import clash
from ..spec import ProjectSpec, Target, parse_gpus
from ..versions import parse_dotted, parse_driver, python_admits_minor

__all__ = ["ImageVerdict", "check_images"]


@dataclass(frozen=True, kw_only=True, slots=True)
class ImageVerdict:
    name: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def check_images(provider: Provider, images: Any, path: str) -> list[ImageVerdict]:
    """Validate images described by their stack against the graph, with the solver's own rules.

    Each image: ``{"name", "python", "frameworks": {"torch": "2.7.1+cu128", ...}, "cuda"?,
    "cudnn"?, "rocm"?, "gpus"?: [...], "driver"?}``; a framework without ``+variant`` is its
    default build.
    """
    if not isinstance(images, list):
        raise SpecError([Problem(path, "", 'must be a JSON list of images (or {"images": [...]})')])
    return [_verdict(provider, img, path, i) for i, img in enumerate(images)]


def _verdict(provider: Provider, img: Any, path: str, i: int) -> ImageVerdict:
    if not isinstance(img, dict) or not isinstance(img.get("frameworks"), dict):
        example = '{"torch": "2.7.1+cu128"}'
        raise SpecError([Problem(path, f"[{i}]", f'each image needs a "frameworks" object, e.g. {example}')])
    name = str(img.get("name", f"image {i}"))
    try:
        gpus = parse_gpus(provider, list(img.get("gpus", [])), path, f"[{i}].gpus")
        driver = parse_driver(str(img["driver"])) if img.get("driver") else None
    except ValueError as e:
        raise SpecError([Problem(path, f"[{i}].driver", str(e))]) from None
    py = str(img.get("python", ""))
    spec = ProjectSpec(path=path, name=name, python=SpecifierSet(f"=={py}.*") if py else SpecifierSet(),
                       python_raw=f"=={py}.*" if py else "*", frameworks=(), targets=())
    problems: list[str] = []
    chosen: list[tuple[Release, Build | None]] = []
    for fw, text in sorted(img["frameworks"].items()):
        version, _, variant = str(text).partition("+")
        rel = next((r for r in provider.releases(fw) if r.raw == version), None)
        if rel is None:
            problems.append(f"{fw} {version} is not a release in the data")
            continue
        builds = provider.builds(rel)
        b = next((x for x in builds if (x.variant == variant if variant else x.default)), None)
        if b is None and builds:
            have = ", ".join(x.variant for x in builds)
            problems.append(f"{fw} {version} has no {variant or 'default'} build (it has {have})")
            continue
        chosen.append((rel, b))
    accels = {b.accelerator for _, b in chosen if b is not None}
    vendor: Vendor = "amd" if "rocm" in accels else "nvidia" if "cuda" in accels else "cpu"
    target = Target(name=name, vendor=vendor, gpus=gpus, driver=driver)
    cands: list[Candidate] = []
    for rel, b in chosen:
        label = f"{rel.package} {rel.raw}" + (f" ({b.variant})" if b else "")
        if b is None:  # pure Python (keras)
            pys = frozenset(p for p in rel.python if python_admits_minor(spec.python, p))
            if not pys:
                problems.append(f"{label} has no wheel for Python {py}")
            cands.append(Candidate(release=rel, build=None, pythons=pys))
            continue
        c = fit(provider, Cache(), spec, target, rel, b)
        if isinstance(c, No):
            problems.append(f"{label}: {c.text}")
            continue
        cands.append(c)
        problems += _stated_facts(img, label, b)
    backend = "torch" if any(c.package == "torch" for c in cands) else ""
    problems += [why for a, b2 in itertools.combinations(cands, 2) if (why := clash(a, b2, backend))]
    return ImageVerdict(name=name, problems=tuple(dict.fromkeys(problems)))


def _stated_facts(img: dict[str, Any], label: str, b: Build) -> list[str]:
    """Where the image's own description disagrees with what the build was made with."""
    out = []
    if img.get("cuda") and b.cuda and b.cuda.prefix(2) != parse_dotted(str(img["cuda"])).prefix(2):
        out.append(f"{label} is built for CUDA {b.cuda}, the image says {img['cuda']}")
    if img.get("cudnn") and b.cudnn and not _same_prefix(b.cudnn, str(img["cudnn"])):
        out.append(f"{label} bundles cuDNN {b.cudnn}, the image says {img['cudnn']}")
    if img.get("rocm") and b.rocm and b.rocm.prefix(2) != parse_dotted(str(img["rocm"])).prefix(2):
        out.append(f"{label} is built for ROCm {b.rocm}, the image says {img['rocm']}")
    return out


def _same_prefix(a: str, b: str) -> bool:
    n = min(len(a.split(".")), len(b.split(".")))
    return a.split(".")[:n] == b.split(".")[:n]
