"""Each framework's candidates for one target: every (release, build) in the spec's range that
fits the target on its own, in preference order (the default build, native driver support, the
newest CUDA/ROCm), shared between solves through the cache when nobody traces the search.
"""

from __future__ import annotations

from ..data import Release
from ..domain import COMPANIONS
from ..provider import Provider
from ..spec import FrameworkReq, ProjectSpec, Target
from .cache import Cache
from .fit import fit, pythons
from .model import Candidate, No, Reporter

__all__ = ["candidates", "candidates_shared", "companion_problem", "memo_key"]


def memo_key(spec: ProjectSpec, t: Target, req: FrameworkReq) -> tuple[object, ...]:
    """What a framework's candidates depend on: the Python range, companion ranges, target, range."""
    companions = tuple((f.name, f.raw) for f in spec.frameworks if f.name in COMPANIONS)
    return (spec.python_raw, companions, t, req.name, req.raw, req.backend)


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


def candidates(g: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq,
               reporter: Reporter) -> list[Candidate]:
    """Every (release, build) of ``req`` that fits ``t`` alone, in preference order."""
    out: list[Candidate] = []
    for rel in g.releases(req.name):
        subject = f"{rel.package} {rel.raw}"
        if not cache.contains(req.raw, rel.version):
            continue
        if (why := companion_problem(spec, rel)):
            reporter.rejected(t.name, subject, why)
            continue
        if not rel.python or (req.name == "keras" and not pythons(cache, spec, rel, None)):
            has = ", ".join(rel.python)
            reporter.rejected(t.name, subject, f"has no wheel for Python {spec.python_raw} (it has {has})")
            continue
        if req.name == "keras":
            out.append(Candidate(release=rel, build=None, pythons=pythons(cache, spec, rel, None)))
            continue
        ranked: list[tuple[tuple[int, int, tuple[int, ...]], Candidate]] = []
        for b in g.builds(rel):
            c = fit(g, cache, spec, t, rel, b)
            if isinstance(c, No):
                reporter.rejected(t.name, f"{subject} ({b.variant})", c.text)
                continue
            version = b.cuda or b.rocm
            rank = (0 if b.default else 1, 0 if c.compat != "minor-version" else 1,
                    tuple(-k for k in version.key) if version else ())
            ranked.append((rank, c))
        out.extend(c for _, c in sorted(ranked, key=lambda rc: (rc[0], rc[1].build.variant)))  # type: ignore[union-attr]
    return out


def candidates_shared(g: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq,
                      reporter: Reporter) -> list[Candidate]:
    """:func:`candidates`, computed once per sub-problem when nobody listens to the search.

    A matrix of thousands of cells shares a few hundred (framework range, Python range, target)
    sub-problems; the result depends on nothing else (companions are part of the key)."""
    if type(reporter) is not Reporter:
        return candidates(g, cache, spec, t, req, reporter)
    key = memo_key(spec, t, req)
    table = cache.table("candidates")
    if key not in table:
        table[key] = candidates(g, cache, spec, t, req, reporter)
    return list(table[key])
