"""Whether two candidates can share one environment: one Python, one CUDA major, no two
versions of one bundled library (Requires-Dist pins and the exact cuDNN each build bundles),
and each other's requirements (TensorFlow's Keras pin, Keras' minimum backend).
"""

from __future__ import annotations

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..versions import Dotted, parse_python_minor
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
    da, db = _bundled_cudnn(a), _bundled_cudnn(b)
    majors = _cuda_majors(a, b) if da and db and da != db else None
    if majors is None or majors[0] != majors[1]:
        return ""
    return (f"{a.label} bundles cuDNN {da} but {b.label} bundles cuDNN {db}: "
            f"one environment holds one nvidia-cudnn-cu{majors[0]}")


def _bundled_cudnn(c: Candidate) -> str:
    """The exact cuDNN wheel version ``c``'s build installs ("" for none, or a range)."""
    return c.build.cudnn if c.build is not None and _exact(c.build.cudnn) else ""


def _cuda_majors(a: Candidate, b: Candidate) -> tuple[int, int] | None:
    """The CUDA majors of both builds (None unless both have a CUDA)."""
    ca, cb = _cuda_of(a), _cuda_of(b)
    return (ca.major, cb.major) if ca is not None and cb is not None else None


def _cuda_of(c: Candidate) -> Dotted | None:
    return c.build.cuda if c.build is not None else None


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
    majors = _cuda_majors(a, b)
    if majors is None or majors[0] == majors[1]:
        return ""
    return (f"{a.label} uses CUDA {_cuda_of(a)} and {b.label} uses CUDA {_cuda_of(b)}: "
            "one environment needs one CUDA major")
