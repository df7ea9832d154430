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
    ba, bb = a.build, b.build
    if (ba and bb and ba.cuda and bb.cuda and ba.cuda.major == bb.cuda.major
            and _exact(ba.cudnn) and _exact(bb.cudnn) and ba.cudnn != bb.cudnn):
        # Both install the cuDNN wheel of one CUDA major, at different exact versions.
        return (f"{a.label} bundles cuDNN {ba.cudnn} but {b.label} bundles cuDNN {bb.cudnn}: "
                f"one environment holds one nvidia-cudnn-cu{ba.cuda.major}")
    pa, pb = dict(a.pins), dict(b.pins)
    for name in sorted(set(pa) & set(pb)):
        va, vb = pa[name], pb[name]
        if va == vb:
            continue
        if _admits(va, vb) and _admits(vb, va):
            continue
        return f"{a.label} pins {name} {_pin(va)} but {b.label} pins {name} {_pin(vb)}"
    return ""


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
    for x, y in ((a, b), (b, a)):
        want = dict(x.release.requires).get(y.package)
        if want and not SpecifierSet(want).contains(y.release.version, prereleases=True):
            return f"{x.label} requires {y.package}{want}, not {y.release.raw}"
        if x.package == "keras" and y.package == backend:
            floor = dict(x.release.backends).get(backend)
            if floor and not SpecifierSet(floor).contains(y.release.version, prereleases=True):
                return f"{x.label} needs {backend}{floor} as its backend, not {y.release.raw}"
    return ""


def clash(a: Candidate, b: Candidate, backend: str) -> str:
    """Why two candidates cannot share an environment ("" when they can)."""
    if not a.pythons & b.pythons:
        return (f"{a.label} has Python {', '.join(sorted(a.pythons, key=parse_python_minor))} and "
                f"{b.label} has {', '.join(sorted(b.pythons, key=parse_python_minor))}: no common Python")
    ca = a.build.cuda if a.build else None
    cb = b.build.cuda if b.build else None
    if ca is not None and cb is not None and ca.major != cb.major:
        return f"{a.label} uses CUDA {ca} and {b.label} uses CUDA {cb}: one environment needs one CUDA major"
    return _pin_clash(a, b) or _requires_clash(a, b, backend)
