"""The base image of a resolution: the newest patch of the build's CUDA/ROCm (or the Python
image for CPU and for Intel's XPU builds, which bring their oneAPI runtime as wheels) for the
chosen OS and flavour, published for the target's platform, preferring rows not marked low
confidence; none off Linux (containers run Linux). A Jetson before JetPack 7 gets its JetPack's l4t image; a ROCm
wheel gets an image of its own ROCm major.minor, or, said explicitly, a plain OS image with no
system ROCm when the wheel brings its whole ROCm user space.

The choice reads in three steps: the rows that could serve (:func:`_candidates`: the CPU
image, the image of the build's CUDA/ROCm, the images a minor-version driver runs, the image
that replaces one whose tags were removed), the rows published for the target with the flavour
and OS asked (:func:`_usable`), and the newest of those (:func:`_newest`).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence

import msgspec

from ..data import Image, JetPack
from ..domain import DEFAULT_PLATFORM, LINUX_PLATFORMS, Accelerator
from ..provider import Provider
from ..spec import ProjectSpec, Target
from ..versions import Dotted
from .fit import gpu_families
from .model import Resolution

__all__ = ["EOL_NOTICE", "BaseImage", "base_image", "end_of_life_warnings", "offers_os", "successor_image"]

# (image reference, note, OS, the Python the image brings); ("", why, "", "") when there is none
BaseImage = tuple[str, str, str, str]


class _Ask(msgspec.Struct, frozen=True):
    """What the base image must serve: the target, the build's stack, the Python, the OS and flavour."""

    provider: Provider
    spec: ProjectSpec
    target: Target
    accel: Accelerator
    version: Dotted | None
    python: str
    compat: str
    needs_cudnn: bool
    jetpack: JetPack | None  # the target's JetPack release, for a Jetson
    branch_limit: int | None  # the newest driver branch that supports the GPUs


class _Rows(msgspec.Struct, frozen=True):
    """Image rows that could serve, the flavour to take, and why they differ from the build's stack."""

    rows: list[Image]
    flavor: str
    fallback: str = ""


def base_image(provider: Provider, spec: ProjectSpec, t: Target, accel: Accelerator, version: Dotted | None,
               python: str, compat: str, needs_cudnn: bool = False) -> BaseImage:
    """(image, "", OS, the Python the image brings or "") with the newest patch of the build's
    CUDA/ROCm (or Python) for the OS, or ("", why, "", "") when the data has none. A build that
    brings no CUDA libraries of its own (``system_cuda``) gets an image flavour with cuDNN."""
    if t.platform not in LINUX_PLATFORMS:  # containers run Linux: render says why there is no Dockerfile
        return "", "", "", ""
    jetpack = provider.jetpack(t.jetpack) if t.jetpack is not None else None
    ask = _Ask(provider, spec, t, accel, version, python, compat, needs_cudnn, jetpack,
               provider.newest_branch_for(gpu_families(t)))
    if ask.jetpack is not None and not ask.jetpack.sbsa:
        return _jetson_image(spec, ask.jetpack)
    found = _candidates(ask)
    if isinstance(found, str):
        return _refused(found)
    usable = _usable(ask, found)
    if not usable.rows:
        return _refused(_no_image(ask, usable.flavor))
    return _newest(ask, usable)


def successor_image(provider: Provider, spec: ProjectSpec, t: Target, ref: str, before: str) -> str:
    """The newest image that serves what the CUDA image ``ref`` serves, for an image whose tags the
    registry deletes: of the same CUDA major, flavour (its cuDNN too) and OS (else the solver's
    default OS), one the target's driver runs natively, newer than ``ref`` and with no deletion date
    before ``before`` (an ISO date) in the data; the solver's own choice among those
    (:func:`_usable`, :func:`_newest`). "" when there is none, or ``ref`` is no CUDA image of the data."""
    line = provider.image_line(ref)
    if line is None or line[0].accelerator != "cuda":
        return ""
    image, flavor, os = line
    kind = next((k for k in ("devel", "runtime") if k in flavor), "base")
    jetpack = provider.jetpack(t.jetpack) if t.jetpack is not None else None
    for asked_os in dict.fromkeys((spec.os or os, spec.os)):
        asked = msgspec.structs.replace(spec, os=asked_os, flavor=kind)
        ask = _Ask(provider, asked, t, "cuda", image.version, "", "minor-version", "cudnn" in flavor, jetpack,
                   provider.newest_branch_for(gpu_families(t)))
        rows = [i for i in _minor_version_rows(ask, image.version)
                if i.version > image.version and _lasts(ask, i, before)]
        usable = _usable(ask, _Rows(rows, kind))
        if usable.rows:
            return _newest(ask, usable)[0]
    return ""


def _lasts(ask: _Ask, image: Image, before: str) -> bool:
    """Whether the data gives ``image``'s tags no deletion date before ``before``."""
    eol = ask.provider.end_of_life(image)
    return eol is None or eol.deleted >= before


def _refused(why: str) -> BaseImage:
    return "", why, "", ""


def _jetson_image(spec: ProjectSpec, jp: JetPack) -> BaseImage:
    """A Jetson before JetPack 7 runs its JetPack's l4t image, on that JetPack's OS."""
    if spec.os and spec.os != jp.os:
        return _refused(f"JetPack {jp.version} runs {jp.os}, not [container] os = {spec.os!r}")
    note = f"base image for JetPack {jp.version} is marked confidence = low" if jp.confidence == "low" else ""
    return jp.image, note, jp.os, ""


def _candidates(ask: _Ask) -> _Rows | str:
    """The rows that could serve, before the platform, flavour and OS filters; or why none can."""
    if ask.accel in ("cpu", "xpu"):  # an XPU build brings its oneAPI runtime as wheels: the Python image serves
        return _cpu_rows(ask)
    if ask.version is None:
        # no framework brings a CUDA/ROCm: the newest plain image whose CUDA the target can run
        return _Rows(_running(ask, _plain(ask.provider.images(ask.accel))), _flavor(ask))
    found = _stack_rows(ask, ask.version)
    if ask.accel == "cuda" and all(i.removed for i in found.rows):
        return _replacement(ask, ask.version, found.rows)
    return found


def _plain(images: list[Image]) -> list[Image]:
    """The images that bring no Python of their own (not the python images)."""
    return [i for i in images if not i.python]


def _running(ask: _Ask, images: list[Image]) -> list[Image]:
    return [i for i in images if _runs(ask, i)]


def _flavor(ask: _Ask) -> str:
    return ask.spec.flavor or "base"


def _cpu_rows(ask: _Ask) -> _Rows:
    """A CPU environment runs on the python image of its Python, else on a plain image of the asked OS."""
    cpu = ask.provider.images("cpu")
    rows = [i for i in cpu if i.python == ask.python]
    if offers_os(rows, ask.spec.os):
        return _Rows(rows, "slim")
    # a distribution image of the asked OS (ubuntu22.04); the pinned uv brings Python
    return _Rows([i for i in _plain(cpu) if _os_fits(ask, i)], "base")


def offers_os(rows: list[Image], os: str) -> bool:
    """Whether some of ``rows`` has OS ``os`` (any does when none is asked)."""
    return not os or any(os in i.os for i in rows)


def _stack_rows(ask: _Ask, version: Dotted) -> _Rows:
    """The images of the build's CUDA/ROCm major.minor published for the target's platform."""
    if ask.accel == "cuda" and ask.compat == "minor-version":
        return _Rows(_minor_version_rows(ask, version), _flavor(ask))
    rows = [i for i in ask.provider.images(ask.accel) if _of_minor_here(ask, i, version)]
    if ask.accel == "rocm" and not rows and not ask.needs_cudnn:
        return _without_system_rocm(ask, version)
    return _Rows(rows, _flavor(ask))


def _of_minor_here(ask: _Ask, image: Image, version: Dotted) -> bool:
    """Whether ``image`` is of CUDA/ROCm ``version``'s major.minor and published for the target's platform."""
    return image.version.prefix(2) == version.prefix(2) and ask.provider.image_on_platform(image, ask.target.platform)


def _without_system_rocm(ask: _Ask, version: Dotted) -> _Rows:
    """No image of the wheel's ROCm: one of another ROCm would disagree with the wheel, so a plain
    OS image with no system ROCm, the wheel's own user space the only ROCm in it."""
    return _Rows(_plain(ask.provider.images("cpu")), "base",
                 f"no ROCm {version} image in the data: the base image has no system ROCm, and the "
                 f"ROCm {version} user space is the one the wheels bring")


def _minor_version_rows(ask: _Ask, version: Dotted) -> list[Image]:
    """The images of the build's CUDA major that the driver runs natively: the container toolkit
    refuses an image whose CUDA the driver does not run natively (NVIDIA_REQUIRE_CUDA). A Jetson's
    driver is its JetPack's: an image of at most the JetPack's CUDA."""
    same_major = [i for i in ask.provider.images("cuda") if i.version.major == version.major]
    return [i for i in same_major if _driver_runs_natively(ask, i)]


def _driver_runs_natively(ask: _Ask, image: Image) -> bool:
    """Whether the target's driver runs ``image``'s CUDA natively (a Jetson's: at most its JetPack's CUDA)."""
    if ask.jetpack is not None:
        return image.version.prefix(2) <= ask.jetpack.cuda.prefix(2)
    need = ask.provider.native_driver_min(image.version)
    return need is not None and _driver_runs(ask, need)


def _driver_runs(ask: _Ask, need: Dotted) -> bool:
    """Whether the target's driver (else the newest branch that supports its GPUs) reaches the floor ``need``."""
    if ask.target.driver is not None:
        return need <= ask.target.driver
    return ask.branch_limit is None or need.major <= ask.branch_limit


def _runs(ask: _Ask, image: Image) -> bool:
    """Whether the target runs ``image``'s CUDA natively (its driver, else the newest driver branch
    that still supports its GPUs) and that CUDA can target every GPU; any ROCm image runs."""
    if image.accelerator != "cuda":
        return True
    if ask.jetpack is not None:
        return _driver_runs_natively(ask, image)
    return _driver_runs_natively(ask, image) and _knows_gpus(ask, image.version)


def _knows_gpus(ask: _Ask, cuda: Dotted) -> bool:
    """Whether CUDA ``cuda`` can target every NVIDIA GPU of the target."""
    return all(ask.provider.toolkit_knows(cuda, x.arch) for x in ask.target.gpus if x.vendor == "nvidia")


def _replacement(ask: _Ask, version: Dotted, rows: list[Image]) -> _Rows | str:
    """The image that stands in for the build's CUDA when the registry has no tags of it: the wheels
    bring their own CUDA, so an image whose CUDA the target runs natively serves them. A build that
    uses the image's CUDA and cuDNN gets none."""
    gone = "its tags were removed from the registry (NVIDIA's end-of-life policy)" if rows else "none in the data"
    if ask.needs_cudnn:
        return (f"no nvidia/cuda image of CUDA {version} exists ({gone}), and this build needs that CUDA "
                "and its cuDNN in the image: no image can be built for it")
    near = _nearest_running(ask, version)
    if not near:
        return _no_newer_image(ask, version, gone)
    pick = near[0].version
    return _Rows(near, _flavor(ask),
                 f"no nvidia/cuda image of CUDA {version} ({gone}); the wheels bring their own CUDA, so the base "
                 f"image is CUDA {pick}, which needs a driver >= {ask.provider.native_driver_min(pick)}")


def _plain_cuda_images(ask: _Ask) -> list[Image]:
    """The nvidia/cuda images (no python image) whose tags the registry still has."""
    return [i for i in _plain(ask.provider.images("cuda")) if not i.removed]


def _nearest_running(ask: _Ask, version: Dotted) -> list[Image]:
    """The rows of the image nearest to CUDA ``version`` that the target runs: the newest older one
    of its major, else the oldest newer one (the least it asks of the driver)."""
    runs = _running(ask, _plain_cuda_images(ask))
    older = [i for i in runs if i.version.major == version.major and i.version < version]
    newer = [i for i in runs if i.version > version]
    return _of_version(older, max) or _of_version(newer, min)


def _of_version(rows: list[Image], pick: Callable[[list[Dotted]], Dotted]) -> list[Image]:
    """The rows of the version ``pick`` (max, min) chooses among ``rows``' versions."""
    chosen = pick([i.version for i in rows]) if rows else None
    return [i for i in rows if i.version == chosen]


def _no_newer_image(ask: _Ask, version: Dotted, gone: str) -> str:
    """Why no image replaces the build's CUDA, with the driver the oldest newer image needs."""
    what = f"driver {ask.target.driver}" if ask.target.driver is not None else "the drivers these GPUs can use"
    return (f"no nvidia/cuda image of CUDA {version} ({gone}), and no newer CUDA image runs on {what} "
            f"(the container toolkit refuses an image whose CUDA the driver does not run natively)"
            + _driver_hint(ask, version))


def _driver_hint(ask: _Ask, version: Dotted) -> str:
    """``: a driver >= 525.60.13 runs the CUDA 12.0.1 image``: the oldest image newer than ``version``."""
    first = min((i for i in _plain_cuda_images(ask) if i.version > version), key=lambda i: i.version, default=None)
    need = ask.provider.native_driver_min(first.version) if first else None
    return f": a driver >= {need} runs the CUDA {first.version} image" if first and need else ""


def _usable(ask: _Ask, found: _Rows) -> _Rows:
    """The rows still published for the target's platform, in the flavour and OS asked."""
    rows = [i for i in found.rows if _published(ask, i)]
    flavor = _with_cudnn(ask, rows, found.flavor)
    return _Rows([i for i in rows if _os_and_flavor_fit(ask, i, flavor)], flavor, found.fallback)


def _with_cudnn(ask: _Ask, rows: list[Image], flavor: str) -> str:
    """The flavour asked; for a build that uses the image's cuDNN, the cuDNN flavour of its kind."""
    if not ask.needs_cudnn or ask.accel != "cuda":
        return flavor
    return _cudnn_flavor(rows, "devel" if flavor == "devel" else "runtime") or flavor


def _published(ask: _Ask, image: Image) -> bool:
    """Whether the registry still has ``image``'s tags for the target's platform."""
    return not image.removed and ask.provider.image_on_platform(image, ask.target.platform)


def _os_and_flavor_fit(ask: _Ask, image: Image, flavor: str) -> bool:
    """Whether ``image`` has the asked OS and (any flavour of a CPU image serves) the flavour."""
    return _os_fits(ask, image) and (flavor in image.flavors or ask.accel == "cpu")


def _os_fits(ask: _Ask, image: Image) -> bool:
    return not ask.spec.os or ask.spec.os in image.os


def _no_image(ask: _Ask, flavor: str) -> str:
    what = f"{ask.accel.upper()} {ask.version}" if ask.version else f"Python {ask.python}"
    where = f" on {ask.spec.os}" if ask.spec.os else ""
    where += f" for {ask.target.platform}" if ask.target.platform != DEFAULT_PLATFORM else ""
    ceiling = " that such a driver runs" if ask.compat == "minor-version" else ""
    return f"no base image in matrices/images.toml for {what}{where} ({flavor}){ceiling}"


def _newest(ask: _Ask, usable: _Rows) -> BaseImage:
    """The newest of ``usable``'s rows not marked low (else of all), in the asked OS or the default."""
    best, os = _newest_row(ask, _confident(usable.rows))
    low = f"base image {best.repository} {best.version} is marked confidence = low" if best.confidence == "low" else ""
    note = "; ".join(filter(None, (usable.fallback, low)))
    flavor = usable.flavor if usable.flavor in best.flavors else best.flavors[0]
    return best.ref(flavor, os), note, os, best.python


def _confident(rows: list[Image]) -> list[Image]:
    """The rows not marked confidence = low; all of them when every one is."""
    return [i for i in rows if i.confidence != "low"] or rows


def _newest_row(ask: _Ask, rows: list[Image]) -> tuple[Image, str]:
    """The row of the newest version and its OS: one version may span several rows (one per group
    of OSes), so the OS is chosen across all of them."""
    same = _of_version(rows, max)
    os = ask.spec.os or _default_os(tuple(o for i in same for o in i.os))
    return next(i for i in same if os in i.os), os


def _cudnn_flavor(rows: list[Image], kind: str) -> str:
    """The cuDNN flavour these images publish for ``kind`` (cudnn-runtime, cudnn9-runtime, ...)."""
    names = sorted({f for i in rows for f in i.flavors if f.startswith("cudnn") and f.endswith(kind)})
    return names[-1] if names else ""


def _default_os(oses: tuple[str, ...]) -> str:
    """The newest Ubuntu among ``oses``; else the first listed (rows list OSes newest first)."""
    ubuntu = [o for o in oses if o.startswith("ubuntu")]
    if ubuntu:
        return max(ubuntu, key=lambda o: tuple(int(x) for x in o[6:].split(".") if x.isdigit()))
    return oses[0]


EOL_NOTICE = 90  # days before its tags' deletion date that a base image is warned of


def end_of_life_warnings(provider: Provider, spec: ProjectSpec, resolutions: Sequence[Resolution], today: datetime.date
                 ) -> list[str]:
    """A warning for each environment whose base image's tags the registry deletes within
    :data:`EOL_NOTICE` days or has deleted (the data's ``[[eol]]`` rows), with the date and the
    newest image that serves the same environment (:func:`envsolve.solve.images.successor_image`)."""
    soon = (today + datetime.timedelta(days=EOL_NOTICE)).isoformat()
    out = []
    for r in resolutions:
        line = provider.image_line(r.base_image) if r.base_image else None
        eol = provider.end_of_life(line[0]) if line is not None else None
        if eol is None or eol.deleted > soon:
            continue
        when = "may be deleted since" if eol.deleted <= today.isoformat() else "are deleted from"
        low = ", inferred (confidence low)" if eol.confidence == "low" else ""
        how = f"by NVIDIA's container support policy{low}"
        newer = successor_image(provider, spec, r.target, r.base_image, soon)
        instead = (f"; the newest image that serves this environment is {newer}: a framework build of its CUDA "
                   "moves the lock to it" if newer else "; the data has no newer image that serves this environment")
        out.append(f"{r.target.name}: the tags of the base image {r.base_image} {when} {eol.deleted} ({how}; "
                   f"see {eol.source}){instead}")
    return out
