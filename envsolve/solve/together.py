"""Whether two candidates can share one environment: one Python, one CUDA major, no two
versions of one bundled library (Requires-Dist pins and the exact cuDNN each build bundles),
and each other's requirements (TensorFlow's Keras pin, Keras' minimum backend).
"""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..versions import parse_python_minor
from .model import Candidate

__all__ = ["clash"]


def _exact(version: str) -> bool:
    """A four-part version such as 9.5.1.17 names one wheel, not a range or a minimum."""
    return version.count(".") == 3 and all(p.isdigit() for p in version.split("."))


def _pin_clash(a: Candidate, b: Candidate) -> str:
    """Why ``a`` and ``b`` would install two versions of one library ("" when they would not)."""
    return _cudnn_clash(a, b) or next(filter(None, (_one_pin_clash(a, b, name) for name in _shared_pins(a, b))), "")


def _cudnn_clash(a: Candidate, b: Candidate) -> str:
    """Both install the cuDNN wheel of one CUDA major, at different exact versions."""
    ba, bb = a.build, b.build
    if ba is None or bb is None or ba.cuda is None or bb.cuda is None or ba.cuda.major != bb.cuda.major:
        return ""
    if not (_exact(ba.cudnn) and _exact(bb.cudnn)) or ba.cudnn == bb.cudnn:
        return ""
    return (f"{a.label} bundles cuDNN {ba.cudnn} but {b.label} bundles cuDNN {bb.cudnn}: "
            f"one environment holds one nvidia-cudnn-cu{ba.cuda.major}")


def _shared_pins(a: Candidate, b: Candidate) -> list[str]:
    return sorted(set(dict(a.pins)) & set(dict(b.pins)))


def _one_pin_clash(a: Candidate, b: Candidate, name: str) -> str:
    """Why the two pins of ``name`` disagree ("" when each admits the other)."""
    va, vb = dict(a.pins)[name], dict(b.pins)[name]
    if va == vb or (_admits(va, vb) and _admits(vb, va)):
        return ""
    return f"{a.label} pins {name} {_pin(va)} but {b.label} pins {name} {_pin(vb)}"


def _pin(v: str) -> str:
    return v if v[:1] in "<>=!~" else f"=={v}"


def _admits(spec: str, other: str) -> bool:
    """Whether pin ``spec`` (exact version or specifier) admits ``other`` (if exact)."""
    if spec[:1] not in "<>=!~" or other[:1] in "<>=!~":
        return spec[:1] in "<>=!~" or other[:1] in "<>=!~" or spec == other
    try:
        return SpecifierSet(spec).contains(Version(other), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def _requires_clash(a: Candidate, b: Candidate, backend: str) -> str:
    """Why one of the two does not accept the other's version (its requirement, Keras' backend floor)."""
    return next(filter(None, (_requires(x, y, backend) for x, y in ((a, b), (b, a)))), "")


def _requires(x: Candidate, y: Candidate, backend: str) -> str:
    want = dict(x.release.requires).get(y.package)
    if want and not SpecifierSet(want).contains(y.release.version, prereleases=True):
        return f"{x.label} requires {y.package}{want}, not {y.release.raw}"
    floor = dict(x.release.backends).get(backend) if x.package == "keras" and y.package == backend else None
    if floor and not SpecifierSet(floor).contains(y.release.version, prereleases=True):
        return f"{x.label} needs {backend}{floor} as its backend, not {y.release.raw}"
    return ""


def clash(a: Candidate, b: Candidate, backend: str) -> str:
    """Why two candidates cannot share an environment ("" when they can)."""
    if not a.pythons & b.pythons:
        return (f"{a.label} has Python {', '.join(sorted(a.pythons, key=parse_python_minor))} and "
                f"{b.label} has {', '.join(sorted(b.pythons, key=parse_python_minor))}: no common Python")
    return _cuda_clash(a, b) or _pin_clash(a, b) or _requires_clash(a, b, backend)


def _cuda_clash(a: Candidate, b: Candidate) -> str:
    """Two CUDA majors in one environment."""
    ca = a.build.cuda if a.build else None
    cb = b.build.cuda if b.build else None
    if ca is None or cb is None or ca.major == cb.major:
        return ""
    return f"{a.label} uses CUDA {ca} and {b.label} uses CUDA {cb}: one environment needs one CUDA major"
