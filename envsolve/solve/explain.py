"""Why the search chose a candidate, and why a framework has no candidate at all, in GPU terms:
:func:`why_none` tells the clash for the newest release in range (the nearest changes that
would work are :mod:`envsolve.solve.fixes`).
"""

from __future__ import annotations

from ..errors import Clash
from ..provider import Provider
from ..spec import FrameworkReq, ProjectSpec, Target
from .cache import Cache
from .candidates import companion_problem, memo_key
from .fit import fit, gpu_text
from .model import Candidate, No

__all__ = ["why_chosen", "why_none", "why_none_shared"]


def why_none_shared(g: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq) -> Clash:
    """:func:`why_none`, once per sub-problem (the same key as the candidate lists)."""
    table = cache.table("why_none")
    key = memo_key(spec, t, req)
    if key not in table:
        table[key] = why_none(g, cache, spec, t, req)
    return table[key]  # type: ignore[no-any-return]


def why_none(g: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq) -> Clash:
    """The clash that leaves ``req`` with no candidate, told for its newest matching release."""
    subject = f"{req.name} {req.raw}" + (f" (asked by {req.asked_by})" if req.asked_by else "")
    rels = [r for r in g.releases(req.name) if cache.contains(req.raw, r.version)]
    if not rels:
        known = g.releases(req.name)
        span = f"{known[-1].raw} .. {known[0].raw}" if known else "none"
        return Clash(subject=subject, reason=f"no release matches (known: {span})")
    rel = rels[0]
    name = f"{req.name} {rel.raw}"
    if (why := companion_problem(spec, rel)):
        return Clash(subject=subject, reason=f"{name}: {why}")
    if req.name == "keras":
        return Clash(subject=subject, reason=f"{name} has no wheel for Python {spec.python_raw} "
                     f"(it has {', '.join(rel.python)})")
    nos = [(b, n) for b in g.builds(rel) if isinstance(n := fit(g, cache, spec, t, rel, b), No)]
    hw = ", ".join(gpu_text(x) for x in t.gpus) or {"nvidia": "NVIDIA GPUs", "amd": "AMD GPUs"}.get(
        t.vendor, "a CPU-only machine")
    wanted = [(b, n) for b, n in nos if n.code != "accelerator"]
    if wanted and any(n.code != "pin" for _, n in wanted):
        wanted = [(b, n) for b, n in wanted if n.code != "pin"]  # the builds of the pinned CUDA/ROCm tell why
    elif wanted:
        pin = f"CUDA {t.cuda}" if t.cuda is not None else f"ROCm {t.rocm}"
        have = ", ".join(b.variant for b, _ in wanted)
        return Clash(subject=subject, reason=f"{name} has no {pin} build (it has {have})")
    if not wanted:
        kind = {"nvidia": "CUDA", "amd": "ROCm"}.get(t.vendor, "CPU")
        have = ", ".join(sorted({b.variant for b, _ in nos})) or "none"
        return Clash(subject=subject, reason=f"{name} has no {kind} build (its builds: {have})")
    if all(n.code == "python" for _, n in wanted):
        return Clash(subject=subject, reason=f"{name} {wanted[0][1].text}")
    if all(n.code == "arch-cuda" for _, n in wanted):
        newest = max(wanted, key=lambda bn: bn[0].cuda or bn[0].rocm)[0]  # type: ignore[arg-type, return-value]
        need = max(n.needs for _, n in wanted)
        gpus = [x for x in t.gpus if not g.toolkit_knows(newest.cuda, x.arch)]  # type: ignore[arg-type]
        if t.cuda is not None:  # the pin chose the builds; the release may have newer ones
            variants = ", ".join(b.variant for b, _ in wanted)
            return Clash(subject=subject, reason=(
                f"{name} ({variants}) has no kernels for {', '.join(gpu_text(x) for x in gpus)}: "
                f"{', '.join(x.arch.name for x in gpus)} needs CUDA >= {need}"))
        return Clash(subject=subject, reason=(
            f"{name} has no build for {', '.join(gpu_text(x) for x in gpus)}: "
            f"{', '.join(x.arch.name for x in gpus)} needs CUDA >= {need}, and {name} builds stop at "
            f"{newest.variant} (CUDA {newest.cuda})"))
    texts = list(dict.fromkeys(f"{b.variant}: {n.text}" for b, n in wanted))
    return Clash(subject=subject, reason=f"no {name} build serves {hw}: " + "; ".join(texts))


def why_chosen(c: Candidate) -> str:
    if c.build is None:
        return "newest release that fits"
    b = c.build
    how = "the default build" if b.default else "the newest usable build (the default build does not fit)"
    drv = ""
    if c.compat and c.driver_min:
        drv = f"; driver >= {c.driver_min} ({c.compat})"
    dist = ""
    if b.dist or b.index != "pypi":  # another distribution or index than `pip install <framework>`
        where = f" from the {b.index} index" if b.index != "pypi" else ""
        dist = f"; installs {b.dist or b.package} {b.dist_version or b.raw}{where}"
    return f"newest release that fits, {how}{drv}{dist}"
