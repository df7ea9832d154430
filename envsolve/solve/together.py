"""Whether two candidates can share one environment: one Python, one CUDA major, no two
versions of one bundled library (Requires-Dist pins and the exact cuDNN each build bundles),
a version of every requirement both have (``shared`` in matrices/: ml-dtypes, numpy, protobuf,
the nvidia-* CUDA wheels) that both ranges admit (:func:`meet`), and each other's requirements
(TensorFlow's Keras pin, Keras' minimum backend).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from ..versions import Dotted, parse_python_minor
from .cache import Cache
from .model import Candidate

__all__ = ["asks", "clash", "clash_with_all", "meet"]


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


def _requires_clash(a: Candidate, b: Candidate, backend: str, cache: Cache) -> str:
    """Why one of the two does not accept the other's version (its requirement, Keras' backend floor)."""
    return next(filter(None, (_requires(x, y, backend, cache) for x, y in ((a, b), (b, a)))), "")


def _requires(x: Candidate, y: Candidate, backend: str, cache: Cache) -> str:
    want = dict(x.release.requires).get(y.package)
    if want and not _in_range(cache, want, y.release.version):
        return f"{x.label} requires {y.package}{want}, not {y.release.raw}"
    floor = dict(x.release.backends).get(backend) if x.package == "keras" and y.package == backend else None
    if floor and not _in_range(cache, floor, y.release.version):
        return f"{x.label} needs {backend}{floor} as its backend, not {y.release.raw}"
    return ""


def _in_range(cache: Cache, raw: str, version: Version) -> bool:
    """Whether the range ``raw`` of the data admits ``version`` (pre-releases too), remembered."""
    table = cache.table("admits")
    key = (raw, version)
    if key not in table:
        table[key] = SpecifierSet(raw).contains(version, prereleases=True)
    return table[key]  # type: ignore[no-any-return]


def clash(a: Candidate, b: Candidate, backend: str, cache: Cache | None = None) -> str:
    """Why two candidates cannot share an environment ("" when they can); ``cache`` keeps the
    answers between calls (the search asks the same pairs and ranges many times). A pair's
    answer is kept with the pair itself, so its ``id`` names no other candidates meanwhile."""
    cache = cache if cache is not None else Cache()
    table = cache.table("clash")
    key = (id(a), id(b), backend)
    entry = table.get(key)
    if entry is None or entry[0] is not a or entry[1] is not b:
        entry = table[key] = (a, b, _clash(a, b, backend, cache))
    return entry[2]


def _clash(a: Candidate, b: Candidate, backend: str, cache: Cache) -> str:
    if not a.pythons & b.pythons:
        return f"{a.label} has Python {_listed(a.pythons)} and {b.label} has {_listed(b.pythons)}: no common Python"
    return _cuda_clash(a, b) or _pin_clash(a, b) or _shared_clash(a, b, cache) or _requires_clash(a, b, backend, cache)


@functools.lru_cache(maxsize=1024)
def _listed(pythons: frozenset[str]) -> str:
    """``3.10, 3.11, 3.12``: a candidate's Pythons in order (a search tells thousands of clashes over
    the same few sets)."""
    return ", ".join(sorted(pythons, key=parse_python_minor))


def clash_with_all(c: Candidate, others: list[Candidate], backend: str, cache: Cache | None = None) -> str:
    """Why ``c`` shares an environment with none of ``others`` (each clashes), told against the first
    of them with its CUDA major when there is one (two CUDA majors say least about the pair)."""
    same = next((o for o in others if not _cuda_clash(c, o)), others[0])
    return clash(c, same, backend, cache)


def _shared_clash(a: Candidate, b: Candidate, cache: Cache) -> str:
    """Why no version of a requirement both bring fits both ranges (``jax 0.12.0.1 needs
    ml-dtypes>=0.5.0; tensorflow 2.16.2 pins ml-dtypes~=0.3.1``); "" when every one has one."""
    theirs = dict(b.shared)
    for name, mine in a.shared:
        other = theirs.get(name)
        if other is not None and not _meets(cache, mine, other):
            return f"{_asks(a, name, mine)}; {_asks(b, name, other)}"
    return ""


def _meets(cache: Cache, a: str, b: str) -> bool:
    """:func:`meet` of two ranges as written, remembered in ``cache``."""
    table = cache.table("meet")
    key = (a, b) if a <= b else (b, a)
    if key not in table:
        table[key] = meet(cache.range(a), cache.range(b)) is not None
    return bool(table[key])


def _asks(c: Candidate, name: str, spec: str) -> str:
    """:func:`asks`, naming the build only when its own requirement differs from the release's."""
    of_release = dict(c.release.shared).get(name) == spec
    return asks(f"{c.release.package} {c.release.raw}" if of_release or c.build is None else c.label, name, spec)


def asks(who: str, name: str, spec: str) -> str:
    """``jax 0.12.0.1 needs ml-dtypes>=0.5.0`` (a floor) or ``tensorflow 2.16.2 pins ml-dtypes~=0.3.1``
    (a range with a ceiling): how the solver and the full lock tell one side of a clash."""
    try:
        floor_only = all(s.operator in (">=", ">", "!=") for s in SpecifierSet(spec))
    except InvalidSpecifier:
        floor_only = False
    return f"{who} {'needs' if floor_only else 'pins'} {name}{spec}"


# ---------------------------------------------------------------------------- meet


def meet(a: SpecifierSet, b: SpecifierSet) -> Version | None:
    """A version both ``a`` and ``b`` admit, the newest of a finite set of candidate points;
    None when no version does. Pre-releases count only when both sets admit them (each names one).

    Why the candidate points are enough (for specifiers without local labels, which is what
    Requires-Dist holds for these names): every specifier admits a set whose edges lie at the
    versions it names (``V`` of ``<V``, ``>=V``, ``==V``...; ``P`` and ``P`` with its last part
    bumped for ``==P.*``; and both of those for ``~=V``). Inside one gap between two such critical
    versions (0.dev0, the smallest version, is one) a specifier's answer can change only with what
    kind of version it is: a pre-release or not (the global rule, and ``<V`` refusing pre-releases
    of V's release), a post-release of a named release or not (``>V`` refusing them), a version of a
    named release or of a newer one. So the points are: each critical version; around each, its
    release's ``.dev0``, the release itself, ``.post0.dev0``, ``.post0``, the next post, the next
    pre-release and its ``.post0``, the next ``.devN``; between each critical and the next, a
    version of a newer release that sorts below the next (the release padded with zeros to the
    next one's length, then ``.1``) and its ``.dev0``; and above the last, its first part bumped.
    Each kind of version in each gap has one point, so a non-empty intersection holds one of them.
    ``tests/test_together.py`` checks this against brute force over a grid of versions.
    """
    allow = bool(a.prereleases) and bool(b.prereleases)
    for x in sorted(_points([*a, *b]), reverse=True):
        if a.contains(x, prereleases=allow) and b.contains(x, prereleases=allow):
            return x
    return None


def _points(specs: Iterable[Specifier]) -> set[Version]:
    critical = sorted({Version("0.dev0"), Version("0"), *(v for s in specs for v in _critical(s))})
    points = {p for c in critical for p in _around(c)}
    points |= {p for c, d in zip(critical, critical[1:], strict=False) for p in _newer_below(c, d)}
    top = critical[-1]
    points |= {_version(top.epoch, (top.release[0] + 1,)), _version(top.epoch, (top.release[0] + 1,), ".dev0")}
    return points


def _critical(s: Specifier) -> list[Version]:
    """The versions where ``s``'s answer changes (see :func:`meet`)."""
    text = s.version
    try:
        if text.endswith(".*"):
            prefix = Version(text[:-2])
            return [prefix, _bumped(prefix.epoch, prefix.release)]
        v = Version(text)
    except InvalidVersion:  # an arbitrary-equality string (===) admits no version but itself
        return []
    if s.operator == "~=":
        return [v, _version(v.epoch, v.release[:-1]), _bumped(v.epoch, v.release[:-1])]
    return [v]


def _version(epoch: int, release: tuple[int, ...], tail: str = "") -> Version:
    return Version(f"{epoch}!" * bool(epoch) + ".".join(map(str, release)) + tail)


def _bumped(epoch: int, release: tuple[int, ...]) -> Version:
    """``1.4`` -> ``1.5``: the first release after every one that starts with ``release``."""
    return _version(epoch, (*release[:-1], release[-1] + 1))


def _around(c: Version) -> Iterator[Version]:
    """The critical version ``c`` and the versions of each kind next to it (see :func:`meet`)."""
    yield c
    base = c.base_version
    post = c.post + 1 if c.post is not None else 0
    yield from map(Version, (f"{base}.dev0", base, f"{base}.post0.dev0", f"{base}.post0",
                             f"{base}.post{post}.dev0", f"{base}.post{post}"))
    if c.pre is not None:
        letter, n = c.pre
        yield from map(Version, (f"{base}{letter}{n + 1}", f"{base}{letter}{n + 1}.dev0", f"{base}{letter}{n}.post0",
                                 f"{base}{letter}{n}.post0.dev0"))
    if c.dev is not None:
        yield Version(f"{c.public.rsplit('dev', 1)[0]}dev{c.dev + 1}")


def _newer_below(c: Version, d: Version) -> Iterator[Version]:
    """A version of a release newer than ``c``'s that sorts below ``d`` (when ``d``'s is newer), and its ``.dev0``."""
    if (c.epoch, _stripped(c.release)) >= (d.epoch, _stripped(d.release)):
        return
    r = _stripped(c.release)
    pad = max(len(_stripped(d.release)) - len(r), 0) if c.epoch == d.epoch else 0
    newer = (*r, *(0,) * pad, 1)
    yield from (_version(c.epoch, newer), _version(c.epoch, newer, ".dev0"))


def _stripped(release: tuple[int, ...]) -> tuple[int, ...]:
    """A release without trailing zeros (``1.0.0`` -> ``1``), as versions compare."""
    out = list(release)
    while len(out) > 1 and out[-1] == 0:
        out.pop()
    return tuple(out)


def _cuda_clash(a: Candidate, b: Candidate) -> str:
    """Two CUDA majors in one environment."""
    majors = _cuda_majors(a, b)
    if majors is None or majors[0] == majors[1]:
        return ""
    return (f"{a.label} uses CUDA {_cuda_of(a)} and {b.label} uses CUDA {_cuda_of(b)}: "
            "one environment needs one CUDA major")
