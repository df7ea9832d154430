"""`envsolve matrix --check-images`: existing images, described by their stack, checked with
the solver's own rules (fit and together), each verdict naming what would fail."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any

import msgspec
from packaging.specifiers import SpecifierSet

from ..data import Build, Release
from ..domain import ACCELERATOR, Vendor
from ..errors import Problem, SpecError
from ..provider import Provider
from ..solve import Cache, Candidate, No
from ..solve.fit import fit
from ..solve.together import clash
from ..spec import GpuReq, ProjectSpec, Target, parse_gpus
from ..versions import Dotted, parse_dotted, parse_driver, python_admits_minor

__all__ = ["ImageVerdict", "check_images", "images_of", "verdicts_text"]

_VENDOR_ORDER: tuple[Vendor, ...] = ("amd", "nvidia")  # an image with ROCm and CUDA builds is taken for AMD's


class ImageVerdict(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


def images_of(text: str, path: str) -> Any:
    """The images of an ``--check-images`` JSON file: a list, or ``{"images": [...]}``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise SpecError([Problem(path, f"line {e.lineno}", f"is not valid JSON: {e.msg}")]) from None
    return data.get("images") if isinstance(data, dict) else data


def verdicts_text(verdicts: list[ImageVerdict], fmt: str) -> str:
    """The verdicts as ``--format json`` (a list of name, ok, problems), else a line each."""
    if fmt == "json":
        entries = [{"name": v.name, "ok": v.ok, "problems": list(v.problems)} for v in verdicts]
        return json.dumps(entries, indent=1) + "\n"
    return "".join(f"  {'ok  ' if v.ok else 'FAIL'}  {v.name}{_failures(v)}\n" for v in verdicts)


def _failures(v: ImageVerdict) -> str:
    return "" if v.ok else ": " + "; ".join(v.problems)


def check_images(provider: Provider, images: Any, path: str) -> list[ImageVerdict]:
    """Validate images described by their stack against the data, with the solver's own rules.

    Each image: ``{"name", "python", "frameworks": {"torch": "2.7.1+cu128", ...}, "cuda"?,
    "cudnn"?, "rocm"?, "gpus"?: [...], "driver"?}``; a framework without ``+variant`` is its
    default build.
    """
    if not isinstance(images, list):
        raise SpecError([Problem(path, "", 'must be a JSON list of images (or {"images": [...]})')])
    return [_verdict(provider, img, path, i) for i, img in enumerate(images)]


def _verdict(provider: Provider, img: Any, path: str, i: int) -> ImageVerdict:
    """One image's verdict: each framework's build found in the data, fitted to the image's
    hardware and Python, checked against what the image says of itself, and checked together."""
    frameworks = _frameworks(img, path, i)
    name = str(img.get("name", f"image {i}"))
    found = [_release_build(provider, fw, str(text)) for fw, text in sorted(frameworks.items())]
    chosen = [f for f in found if not isinstance(f, str)]
    gpus, driver = _hardware(provider, img, path, i)
    target = Target(name=name, vendor=_vendor_of(chosen), gpus=gpus, driver=driver)
    spec = _python_spec(path, name, str(img.get("python", "")))
    fitted = [_candidate(provider, spec, target, img, rel, b) for rel, b in chosen]
    problems = [f for f in found if isinstance(f, str)]
    problems += [why for _, whys in fitted for why in whys]
    problems += _clashes([c for c, _ in fitted if c is not None])
    return ImageVerdict(name=name, problems=tuple(dict.fromkeys(problems)))


def _frameworks(img: Any, path: str, i: int) -> dict[str, Any]:
    """The ``frameworks`` object of an image, which every image needs; the CUDA and ROCm it
    says it has must be versions."""
    if not isinstance(img, dict) or not isinstance(img.get("frameworks"), dict):
        example = '{"torch": "2.7.1+cu128"}'
        raise SpecError([Problem(path, f"[{i}]", f'each image needs a "frameworks" object, e.g. {example}')])
    for key, what in (("cuda", "CUDA"), ("rocm", "ROCm")):
        _stated_version(img.get(key), what, path, f"[{i}].{key}")
    frameworks: dict[str, Any] = img["frameworks"]
    return frameworks


def _stated_version(value: Any, what: str, path: str, where: str) -> None:
    """A CUDA or ROCm version the image states (if any) must be a dotted number."""
    if not value:
        return
    try:
        parse_dotted(str(value), f"{what} version")
    except ValueError as e:
        raise SpecError([Problem(path, where, str(e))], tip="write it as major.minor (CUDA 12.8, ROCm 6.2)") from None


def _python_spec(path: str, name: str, py: str) -> ProjectSpec:
    """A spec that says only the image's Python minor (any Python when it names none)."""
    raw = f"=={py}.*" if py else "*"
    return ProjectSpec(path=path, name=name, python=SpecifierSet(raw if py else ""), python_raw=raw, frameworks=(),
                       targets=())


def _release_build(provider: Provider, fw: str, text: str) -> tuple[Release, Build | None] | str:
    """The release and build an image's ``"2.7.1+cu128"`` names (no ``+variant``: the default
    build; None for a release without builds, pure Python), or why the data has none."""
    version, _, variant = text.partition("+")
    rel = next((r for r in provider.releases(fw) if r.raw == version), None)
    if rel is None:
        return f"{fw} {version} is not a release in the data"
    builds = provider.builds(rel)
    b = _named_build(builds, variant)
    if b is None and builds:
        return f"{fw} {version} has no {variant or 'default'} build (it has {', '.join(x.variant for x in builds)})"
    return rel, b


def _named_build(builds: Sequence[Build], variant: str) -> Build | None:
    """The build ``variant`` names; the default build when it names none."""
    if variant:
        return next((x for x in builds if x.variant == variant), None)
    return next((x for x in builds if x.default), None)


def _hardware(provider: Provider, img: dict[str, Any], path: str, i: int) -> tuple[tuple[GpuReq, ...], Dotted | None]:
    """The GPUs and the driver an image states it runs on."""
    try:
        gpus = parse_gpus(provider, list(img.get("gpus", [])), path, f"[{i}].gpus")
        driver = parse_driver(str(img["driver"])) if img.get("driver") else None
    except ValueError as e:
        raise SpecError([Problem(path, f"[{i}].driver", str(e))]) from None
    return gpus, driver


def _vendor_of(chosen: list[tuple[Release, Build | None]]) -> Vendor:
    """Whose GPU an image's builds need: AMD's for any ROCm build, else NVIDIA's for any CUDA build."""
    accelerators = {b.accelerator for _, b in chosen if b is not None}
    return next((v for v in _VENDOR_ORDER if ACCELERATOR[v] in accelerators), "cpu")


def _label(rel: Release, b: Build | None) -> str:
    return f"{rel.package} {rel.raw}" + (f" ({b.variant})" if b else "")


def _candidate(provider: Provider, spec: ProjectSpec, target: Target, img: dict[str, Any], rel: Release,
               b: Build | None) -> tuple[Candidate | None, list[str]]:
    """The solver's candidate for one framework of the image (None when it does not fit), and
    what would fail: the fit, or where the image's own description disagrees with the build."""
    label = _label(rel, b)
    if b is None:  # pure Python (keras): its Pythons are all that can fail
        pys = frozenset(p for p in rel.python if python_admits_minor(spec.python, p))
        why = [] if pys else [f"{label} has no wheel for Python {img.get('python', '')}"]
        return Candidate(release=rel, build=None, pythons=pys, shared=provider.shared(rel, None)), why
    c = fit(provider, Cache(), spec, target, rel, b)
    if isinstance(c, No):
        return None, [f"{label}: {c.text}"]
    return c, _stated_facts(img, label, b)


def _clashes(cands: list[Candidate]) -> list[str]:
    """Why two of the image's frameworks cannot share one environment, each pair."""
    backend = "torch" if any(c.package == "torch" for c in cands) else ""
    return [why for a, b in itertools.combinations(cands, 2) if (why := clash(a, b, backend))]


def _stated_facts(img: dict[str, Any], label: str, b: Build) -> list[str]:
    """Where the image's own description disagrees with what the build was made with."""
    return [f"{label} {what} {built}, the image says {img[key]}" for key, what, built_of, agree in _STATED
            if img.get(key) and (built := built_of(b)) and not agree(built, str(img[key]))]


def _same_major_minor(built: Dotted, said: str) -> bool:
    return built.prefix(2) == parse_dotted(said).prefix(2)


def _same_prefix(a: str, b: str) -> bool:
    n = min(len(a.split(".")), len(b.split(".")))
    return a.split(".")[:n] == b.split(".")[:n]


# What an image may say of itself, checked against its builds: (key, what the build is, the
# build's value, whether the two agree)
_STATED: tuple[tuple[str, str, Callable[[Build], Any], Callable[[Any, str], bool]], ...] = (
    ("cuda", "is built for CUDA", attrgetter("cuda"), _same_major_minor),
    ("cudnn", "bundles cuDNN", attrgetter("cudnn"), _same_prefix),
    ("rocm", "is built for ROCm", attrgetter("rocm"), _same_major_minor),
)
