"""Why the search chose a candidate, and why a framework has no candidate at all, in GPU terms:
:func:`why_none` tells the clash for the newest release in range (the nearest changes that
would work are :mod:`envsolve.solve.fixes`).
"""

from __future__ import annotations

import msgspec.structs
from packaging.specifiers import SpecifierSet

from ..data import Build, JetPack, Release
from ..domain import ACCELERATOR, DEFAULT_PLATFORM, STACK_NAME, kernels, os_of
from ..errors import Clash
from ..provider import Provider
from ..spec import FrameworkReq, GpuReq, ProjectSpec, Target
from ..versions import Dotted, admits_any
from .cache import Cache
from .candidates import BUILD_ORDER, candidates, companion_problem, memo_key
from .fit import fit, gpu_text, of_pin, target_text
from .model import Candidate, No, Reporter

__all__ = ["has_kind", "why_chosen", "why_misfits", "why_none", "why_none_shared"]

_Misfit = tuple[Build, No]  # a build and why it does not fit
_OTHER_KIND = ("accelerator", "jetson", "elsewhere")  # the misfits of builds of another kind than the target asks for


def why_none_shared(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq) -> Clash:
    """:func:`why_none`, once per sub-problem (the same key as the candidate lists)."""
    table = cache.table("why_none")
    key = memo_key(provider, spec, t, req)
    if key not in table:
        table[key] = why_none(provider, cache, spec, t, req)
    return table[key]  # type: ignore[no-any-return]


def why_none(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq) -> Clash:
    """The clash that leaves ``req`` with no candidate, told for its newest matching release."""
    subject = f"{req.name} {req.raw}" + (f" (asked by {req.asked_by})" if req.asked_by else "")
    rels = cache.in_range(req.raw, req.name, provider.releases(req.name))
    if not rels:
        return Clash(subject=subject, reason=f"no release matches (known: {_span(provider, req)})")
    told = next((r for r in rels if has_kind(provider, r, t)), rels[0])
    return Clash(subject=subject, reason=_deciding(provider, cache, spec, t, req, told))


def _deciding(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, req: FrameworkReq,
              told: Release) -> str:
    """Why ``told`` does not serve ``t``, by the component that decides: when no release in range
    would serve the target with any Python, the Python is not the cause (changing it would not
    help), so the misfits are told as they are with any Python (the GPU's arch, the driver)."""
    if admits_any(spec.python_raw):
        return _why_release(provider, cache, spec, t, told)
    anyp = msgspec.structs.replace(spec, python=SpecifierSet(), python_raw="*")
    if candidates(provider, cache, anyp, t, req, Reporter()):
        return _why_release(provider, cache, spec, t, told)
    return _why_release(provider, cache, anyp, t, told)


def has_kind(provider: Provider, rel: Release, t: Target) -> bool:
    """Whether ``rel`` has a build of the accelerator ``t``'s GPUs need: the release whose misfits
    tell the true cause (the newest release in range may have no ROCm build at all)."""
    return any(b.accelerator == ACCELERATOR[t.vendor] for b in provider.builds(rel))


def _span(provider: Provider, req: FrameworkReq) -> str:
    """The oldest .. newest release the data knows of ``req``'s framework."""
    known = provider.releases(req.name)
    return f"{known[-1].raw} .. {known[0].raw}" if known else "none"


def _why_release(provider: Provider, cache: Cache, spec: ProjectSpec, t: Target, rel: Release) -> str:
    """Why no build of ``rel`` serves ``t``: a companion, Keras' Pythons, or its builds' misfits."""
    name = f"{rel.package} {rel.raw}"
    if (why := companion_problem(spec, rel)):
        return f"{name}: {why}"
    if rel.package == "keras":
        return f"{name} has no wheel for Python {spec.python_raw} (it has {', '.join(rel.python)})"
    nos = [(b, n) for b in provider.builds(rel) if isinstance(n := fit(provider, cache, spec, t, rel, b), No)]
    return _why_builds(provider, t, name, nos)


def _why_builds(provider: Provider, t: Target, name: str, nos: list[_Misfit]) -> str:
    """Why none of a release's builds fits, told by the builds of the kind the target asks for (its
    accelerator; Jetson builds for a Jetson only, the others for any other machine), and of the
    pinned CUDA/ROCm when some are: a missing build, Python, the GPUs' CUDA, or each build's reason."""
    wanted = [(b, n) for b, n in nos if n.code not in _OTHER_KIND]
    unpinned = _except(wanted, "pin")
    if not wanted:
        return _no_build_of(provider, t, name, nos)
    if not unpinned:
        return f"{name} has no {_pin_text(t)} build (it has {_variants(wanted)})"
    codes = {n.code for _, n in unpinned}
    if codes == {"platform"}:
        return _not_on_platform(provider, t, name, unpinned[0][0])
    if codes == {"python"}:
        return f"{name} {unpinned[0][1].text}"
    if codes == {"arch-cuda"}:
        return _needs_newer_cuda(provider, t, name, unpinned)
    return f"no {name} build serves {_hardware(t)}: " + "; ".join(dict.fromkeys(_each(unpinned)))


def _not_on_platform(provider: Provider, t: Target, name: str, b: Build) -> str:
    """``torch 2.6.0 has no CUDA build for linux/arm64: the first release after it with one is 2.7.0
    (cu128)``: the release has builds of the kind the target needs, none published for its
    platform; told with the nearest release that has one there, after it where there is one (else
    the newest before it: ``tensorflow 2.15.0 ... for windows/amd64: the newest release with one is
    2.10.1``), with its variants there, and, on Windows, WSL2, which runs the Linux builds."""
    platform, pin = t.platform, t.cuda or t.rocm
    stack = _pin_text(t) if pin is not None else STACK_NAME[ACCELERATOR[t.vendor]]
    having = [(r, there) for r in provider.releases(b.package)  # newest first
              if (there := [x.variant for x in provider.builds(r) if _of_kind_there(provider, x, b, t)])]
    after = [(r, there) for r, there in having if r.version > b.version]
    head = f"{name} has no {stack} build for {platform}"
    if after:
        first, there = after[-1]
        since = f"the first {b.package} release after it with one is {first.raw} ({', '.join(there)})"
    elif having:
        last, there = having[0]
        since = f"the newest {b.package} release with one is {last.raw} ({', '.join(there)})"
    elif any(_of_kind_there(provider, x, b, t, code=False) for r in provider.releases(b.package)
             for x in provider.builds(r)):
        since = f"none of {b.package}'s builds for {platform} has code for {target_text(t)}"
    else:
        since = f"{b.package} publishes none for {platform}"
    wsl = (f"; or WSL2 ([hardware] platform = '{DEFAULT_PLATFORM}', wsl = true), which runs the Linux builds"
           if os_of(platform) == "windows" and t.vendor in ("nvidia", "intel") else "")
    return f"{head}: {since}{wsl}"


def _of_kind_there(provider: Provider, x: Build, b: Build, t: Target, *, code: bool = True) -> bool:
    """Whether ``x`` is a build of ``b``'s kind published for ``t``'s platform with code for its
    GPUs (without ``code``: whatever its code): its accelerator, the target's CUDA/ROCm pin, not one
    of NVIDIA's Jetson builds (but those of the target's JetPack), and SASS or PTX for every GPU
    there (a release named is one whose build there could run them; the TIP's solve says which does)."""
    pinned = of_pin(x.cuda or x.rocm, t.cuda or t.rocm)
    jetson = not x.jetpack or (t.jetpack is not None and x.runs_on_jetpack(t.jetpack))
    if not (x.accelerator == b.accelerator and pinned and jetson and provider.on_platform(x, t.platform)):
        return False
    if not code:
        return True
    there = provider.for_platform(x, t.platform)
    return all(kernels(there, gpu.arch) for gpu in t.gpus)


def why_misfits(provider: Provider, t: Target, rel: Release, nos: list[tuple[Build, No]]) -> str:
    """Why no build of ``rel`` serves ``t``, its builds' misfits known (``envsolve site`` fits each
    build once for every driver): the text :func:`why_none` tells of a release without companions."""
    return _why_builds(provider, t, f"{rel.package} {rel.raw}", nos)


def _except(misfits: list[_Misfit], code: str) -> list[_Misfit]:
    """The misfits for another reason than ``code``."""
    return [(b, n) for b, n in misfits if n.code != code]


def _variants(misfits: list[_Misfit]) -> str:
    return ", ".join(b.variant for b, _ in misfits)


def _each(misfits: list[_Misfit]) -> list[str]:
    """``cu126: driver 525.60.13 is too old ...``: each build with why it does not fit."""
    return [f"{b.variant}: {n.text}" for b, n in misfits]


def _no_build_of(provider: Provider, t: Target, name: str, nos: list[_Misfit]) -> str:
    """``torch 2.7.1 has no ROCm build (its builds: cpu, cu128)``; for a Jetson, the JetPack the
    release's Jetson builds need against the newest its modules run, or that NVIDIA published none
    and the newest release that runs on its JetPack; for another machine, no CUDA build but Jetson ones."""
    have = ", ".join(sorted({b.variant for b, _ in nos})) or "none"
    jetson = any(n.code == "jetson" for _, n in nos)
    if jetson and t.jetpack is not None and nos:
        return _no_jetson_build(provider, t, name, nos[0][0], [b for b, _ in nos if b.jetpack])
    but = " but for Jetson modules" if jetson else ""
    return f"{name} has no {STACK_NAME[ACCELERATOR[t.vendor]]} build{but} (its builds: {have})"


def _no_jetson_build(provider: Provider, t: Target, name: str, b: Build, jetsons: list[Build]) -> str:
    """``torch 2.5.0 needs JetPack 6 (Jetson Linux 36): ...; Jetson Nano's newest JetPack is 4.6.6``,
    or, for a release NVIDIA built for no JetPack, that and the newest release the target's JetPack runs."""
    jp = provider.jetpack(t.jetpack) if t.jetpack is not None else None
    if jp is None:
        return f"{name} has no build for JetPack {t.jetpack}"
    jetsons = jetsons or _same_minor_jetson_builds(provider, b)
    if not jetsons:
        return f"NVIDIA published no Jetson build of {name}{_newest_jetson(provider, b, jp)}; " \
               f"{_newest_for(provider, b, jp.version)}"
    need = min((j for j in provider.jetpack_releases() if any(_runs(x, j) for x in jetsons)), key=lambda j: j.version,
               default=None)
    if need is None:
        return f"{name} has no build for JetPack {jp.version.major}"
    return f"{name} needs JetPack {_jetpack_text(provider, need)}: {_jetpack_limit(provider, t, jp, need, jetsons)}"


def _runs(b: Build, jp: JetPack) -> bool:
    """Whether Jetson build ``b`` runs on JetPack ``jp``: one of its releases, and, linked against
    the JetPack's CUDA, that very CUDA (as :func:`envsolve.solve.fit` requires)."""
    same_cuda = b.cuda is not None and b.cuda.prefix(2) == jp.cuda.prefix(2)
    return b.runs_on_jetpack(jp.version) and (not b.system_cuda or same_cuda)


def _same_minor_jetson_builds(provider: Provider, b: Build) -> list[Build]:
    """The Jetson builds of the releases of ``b``'s major.minor (torch 2.5.0's for torch 2.5.1)."""
    minor = b.version.release[:2]
    return [x for r in provider.releases(b.package) if r.version.release[:2] == minor
            for x in provider.builds(r) if x.jetpack]


def _jetpack_text(provider: Provider, need: JetPack) -> str:
    """``6 (Jetson Linux 36)`` when the builds run from the first release of that major, else
    ``6.1 (Jetson Linux 36.4.0) or newer of JetPack 6``."""
    first = next(j for j in provider.jetpack_releases() if j.version.major == need.version.major)
    if first.version == need.version:
        return f"{need.version.major} (Jetson Linux {need.l4t.split('.')[0]})"
    return f"{need.version} (Jetson Linux {need.l4t}) or newer of JetPack {need.version.major}"

def _jetpack_limit(provider: Provider, t: Target, jp: JetPack, need: JetPack, jetsons: list[Build]) -> str:
    """``Jetson Nano's newest JetPack is 4.6.6``; or, when the modules run a JetPack the builds are
    for, that the target's JetPack is another and which to set."""
    names = [g.name for g in t.gpus]
    fits = provider.jetpacks_for(names)
    modules = ", ".join(dict.fromkeys(names))
    runnable = [j for j in fits if any(_runs(x, j) for x in jetsons)]
    if runnable:
        return f"the target's JetPack is {jp.version} (set jetpack = '{runnable[-1].version}' to use it)"
    newest = fits[-1] if fits else jp
    if newest.version < need.version:
        return f"{modules}'s newest JetPack is {newest.version} (Jetson Linux {newest.l4t})"
    return f"no JetPack {modules} runs ({fits[0].version if fits else jp.version} .. {newest.version}) has one"

def _newest_jetson(provider: Provider, b: Build, jp: JetPack) -> str:
    """`` (its newest Jetson build: torch 2.11.0, for JetPack 6)`` when that build does not run on ``jp``."""
    found = [(r, x) for r in provider.releases(b.package) for x in provider.builds(r) if x.jetpack]
    if not found or any(x.runs_on_jetpack(jp.version) for r, x in found if r.version == found[0][0].version):
        return ""
    rel = found[0][0]
    majors = sorted({x.jetpack for r, x in found if r.version == rel.version})
    return f" (the newest with one: {rel.package} {rel.raw}, for JetPack {', '.join(majors)})"


def _newest_for(provider: Provider, b: Build, jetpack: Dotted) -> str:
    """``for JetPack 4.6.6 the newest is torch 2.7.0 (jp4-cu102)``: the newest release with a build
    for ``jetpack``, or that no release has one."""
    found = [(r, x) for r in provider.releases(b.package) for x in provider.builds(r) if x.runs_on_jetpack(jetpack)]
    if not found:
        return f"no {b.package} release in the data has a build for JetPack {jetpack}"
    older = [f for f in found if f[0].version < b.version]
    rel, build = older[0] if older else found[-1]
    return f"for JetPack {jetpack} the nearest is {rel.package} {rel.raw} ({build.variant})"


def _pin_text(t: Target) -> str:
    return f"CUDA {t.cuda}" if t.cuda is not None else f"ROCm {t.rocm}"


def _hardware(t: Target) -> str:
    """The target's GPUs as the user knows them, else its kind of machine."""
    return target_text(t)


def _needs_newer_cuda(provider: Provider, t: Target, name: str, misfits: list[_Misfit]) -> str:
    """The GPUs need a newer CUDA than the builds (of the pinned CUDA, or all of them) have."""
    newest = max((b for b, _ in misfits), key=_stack_version)
    need = max(n.needs for _, n in misfits)
    gpus = _beyond(provider, t, newest)
    named, archs = ", ".join(map(gpu_text, gpus)), ", ".join(x.arch.name for x in gpus)
    if t.cuda is not None:  # the pin chose the builds; the release may have newer ones
        return f"{name} ({_variants(misfits)}) has no kernels for {named}: {archs} needs CUDA >= {need}"
    return (f"{name} has no build for {named}: {archs} needs CUDA >= {need}, and {name} builds stop at "
            f"{newest.variant} (CUDA {newest.cuda})")


def _beyond(provider: Provider, t: Target, b: Build) -> list[GpuReq]:
    """The GPUs of ``t`` that the CUDA of build ``b`` cannot target."""
    return [x for x in t.gpus if b.cuda is None or not provider.toolkit_knows(b.cuda, x.arch)]


def _stack_version(b: Build) -> tuple[tuple[int, ...], str]:
    """The order of :class:`~envsolve.versions.Dotted`, of the build's CUDA or ROCm."""
    version = b.cuda or b.rocm
    return (version.key, version.raw) if version else ((), "")


def why_chosen(provider: Provider, c: Candidate) -> str:
    """Why the search took ``c``: the newest release that fits, which build, driver, distribution."""
    if c.build is None:
        return "newest release that fits"
    if c.build.default:
        how = "the default build"
    elif any(b.default for b in provider.builds(c.release)):
        how = "the newest usable build (the default build does not fit)"
    else:  # no build is what `pip install` alone gets (CuPy's cupy-cudaXXx, jax's extras)
        how = f"the first usable build (none is the default: {BUILD_ORDER})"
    drv = f"; driver >= {c.driver_min} ({_compat_text(provider, c)})" if c.compat and c.driver_min else ""
    return f"newest release that fits, {how}{drv}{_installs(c.build)}"


def _compat_text(provider: Provider, c: Candidate) -> str:
    """How the driver runs the build's CUDA: ``native``, ``minor-version``, or ``forward
    compatibility through cuda-compat-13-0`` (the package the image installs)."""
    row = provider.cuda_compat(c.build.cuda) if c.compat == "forward" and c.build and c.build.cuda else None
    return f"forward compatibility through {row.package}" if row is not None else c.compat


def _installs(b: Build) -> str:
    """What installs a build other than `pip install <framework>` (another distribution or index)."""
    if not b.dist and b.index == "pypi":
        return ""
    where = f" from the {b.index} index" if b.index != "pypi" else ""
    return f"; installs {b.dist or b.package} {b.dist_version or b.raw}{where}"
