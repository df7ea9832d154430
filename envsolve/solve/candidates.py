"""Each framework's candidates for one target: every (release, build) in the spec's range that
fits the target on its own, in preference order (SASS before PTX JIT, the default build, native
driver support, the newest CUDA/ROCm), shared between solves through the cache when nobody traces the search.
"""

from __future__ import annotations

from ..data import Release
from ..domain import COMPANIONS
from ..provider import Provider
from ..spec import FrameworkReq, ProjectSpec, Target
from .cache import Cache
from .fit import fit, pythons
from .model import Candidate, No, Reporter

__all__ = ["BUILD_ORDER", "candidates", "candidates_shared", "companion_problem", "memo_key", "preferred"]


def memo_key(provider: Provider, spec: ProjectSpec, t: Target, req: FrameworkReq) -> tuple[object, ...]:
    """What a framework's candidates depend on: the Python range, companion ranges, target, range,
    and the glibc of the container OS asked for, where it decides which wheels install
    (:meth:`~envsolve.provider.Provider.glibc_class`)."""
    companions = tuple((f.name, f.raw) for f in spec.frameworks if f.name in COMPANIONS)
    return (spec.python_raw, companions, t, req.name, req.raw, req.backend, provider.glibc_class(spec.os))


def companion_problem(spec: ProjectSpec, rel: Release) -> str:
    comps = dict(rel.companions)
    for req in spec.frameworks:
        if COMPANIONS.get(req.name) == rel.package:
            v = comps.get(req.name)
            if v is None:
                return f"no {req.name} release pairs with it"
            if not req.specifier.contains(v, prereleases=True):
                return f"it pairs with {req.name} {v}, outside {req.name} {req.raw!r}"
    return ""


def candidates(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq,
               reporter: Reporter) -> list[Candidate]:
    """Every (release, build) of ``req`` that fits ``t`` alone, in preference order."""
    out: list[Candidate] = []
    for rel in cache.in_range(req.raw, req.name, provider.releases(req.name)):
        out += _of_release(provider, cache, spec, t, rel, reporter)
    # forward compatibility (a cuda-compat package in the image) only where nothing else serves:
    # after every candidate that runs natively or by minor-version compatibility, of any release
    return sorted(out, key=lambda c: c.compat == "forward")


def _of_release(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, rel: Release,
                reporter: Reporter) -> list[Candidate]:
    """The candidates of one release in range: none when its companions or Pythons rule it out, the
    release itself for Keras (pure Python), else its fitting builds."""
    why = companion_problem(spec, rel) or _no_python(cache, spec, rel)
    if why:
        reporter.rejected(t.name, f"{rel.package} {rel.raw}", why)
        return []
    if rel.package == "keras":
        return [Candidate(release=rel, build=None, pythons=pythons(cache, spec, rel, None),
                          shared=provider.shared(rel, None))]
    return _builds(provider, cache, spec, t, rel, reporter)


def _no_python(cache: Cache, spec: ProjectSpec, rel: Release) -> str:
    """Why ``rel`` has no wheel for the spec's Pythons (its builds tell theirs, except Keras')."""
    if rel.python and (rel.package != "keras" or pythons(cache, spec, rel, None)):
        return ""
    return f"has no wheel for Python {spec.python_raw} (it has {', '.join(rel.python)})"


def _builds(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, rel: Release,
            reporter: Reporter) -> list[Candidate]:
    """The builds of ``rel`` that fit ``t``, preferred first; the others told to the reporter."""
    fitting: list[Candidate] = []
    for b in provider.builds(rel):
        c = fit(provider, cache, spec, t, rel, b)
        if not isinstance(c, No):
            fitting.append(c)
        elif c.code != "elsewhere":  # another OS's builds are no choice here: not told
            reporter.rejected(t.name, f"{rel.package} {rel.raw} ({b.variant})", c.text)
    return preferred(fitting)


def preferred(fitting: list[Candidate]) -> list[Candidate]:
    """A release's fitting builds in preference order (see :func:`_preference`)."""
    return sorted(fitting, key=_preference)


# how :func:`_preference` orders the builds other than the default, as ``explain`` tells it
BUILD_ORDER = ("SASS for every GPU before PTX JIT, then native driver support, then the newest CUDA/ROCm; "
               "forward compatibility (cuda-compat) last")


def _preference(c: Candidate) -> tuple[bool, bool, bool, bool, tuple[int, ...], str]:
    """A build forward compatibility runs after every other; then one with SASS for every GPU
    before one that needs the PTX JIT, then the default build, then native driver support, then
    the newest CUDA/ROCm, then by name (:data:`BUILD_ORDER`)."""
    assert c.build is not None  # a build's candidate
    version = c.build.cuda or c.build.rocm
    newest = tuple(-k for k in version.key) if version else ()
    return (c.compat == "forward", bool(c.jit), not c.build.default, c.compat == "minor-version", newest,
            c.build.variant)


def candidates_shared(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq,
                      reporter: Reporter) -> list[Candidate]:
    """:func:`candidates`, computed once per sub-problem when nobody listens to the search.

    A matrix of thousands of cells shares a few hundred (framework range, Python range, target)
    sub-problems; the result depends on nothing else (companions are part of the key)."""
    if type(reporter) is not Reporter:
        return candidates(provider, cache, spec, t, req, reporter)
    key = memo_key(provider, spec, t, req)
    table = cache.table("candidates")
    if key not in table:
        table[key] = candidates(provider, cache, spec, t, req, reporter)
    return list(table[key])
