"""The base image of a resolution: the newest patch of the build's CUDA/ROCm (or the Python
image for CPU) for the chosen OS and flavour, published for the target's platform, preferring
rows not marked low confidence. A Jetson before JetPack 7 gets its JetPack's l4t image; a ROCm
wheel gets an image of its own ROCm major.minor, or, said explicitly, a plain OS image with no
system ROCm when the wheel brings its whole ROCm user space.
"""

from __future__ import annotations

from ..data import Image
from ..provider import Provider
from ..spec import ProjectSpec, Target
from ..versions import Dotted

__all__ = ["base_image"]


def base_image(g: Provider, spec: ProjectSpec, t: Target, accel: str, version: Dotted | None,
           python: str, compat: str, needs_cudnn: bool = False) -> tuple[str, str, str, str]:
    """(image, "", OS, the Python the image brings or "") with the newest patch of the build's
    CUDA/ROCm (or Python) for the OS, or ("", why, "", "") when the data has none. A build that
    brings no CUDA libraries of its own (``system_cuda``) gets an image flavour with cuDNN."""
    flavor = spec.flavor or "base"
    fallback = ""
    jp = g.jetpack(t.jetpack) if t.jetpack is not None else None
    if jp is not None and not jp.sbsa:
        if spec.os and spec.os != jp.os:
            return "", f"JetPack {jp.version} runs {jp.os}, not [container] os = {spec.os!r}", "", ""
        note = f"base image for JetPack {jp.version} is marked confidence = low" if jp.confidence == "low" else ""
        return jp.image, note, jp.os, ""
    if accel == "cpu":
        rows = [i for i in g.images("cpu") if i.python == python]
        flavor = "slim"
        if spec.os and not any(spec.os in i.os for i in rows):
            # a distribution image of the asked OS (ubuntu22.04); the pinned uv brings Python
            rows = [i for i in g.images("cpu") if not i.python and spec.os in i.os]
            flavor = "base"
    elif version is None:
        # no framework brings a CUDA/ROCm: the newest plain image whose CUDA the target can run
        rows = [i for i in g.images(accel) if not i.python and _runs(g, t, i)]
    else:
        rows = [i for i in g.images(accel) if i.version.prefix(2) == version.prefix(2)]
        rows = [i for i in rows if g.image_on_platform(i, t.platform)]
        if accel == "rocm" and not rows and not needs_cudnn:
            # no image of the wheel's ROCm: one of another ROCm would disagree with the wheel, so
            # a plain OS image with no system ROCm, the wheel's own user space the only ROCm in it
            rows = [i for i in g.images("cpu") if not i.python]
            flavor = "base"
            fallback = (f"no ROCm {version} image in the data: the base image has no system ROCm, and the "
                        f"ROCm {version} user space is the one the wheels bring")
        if accel == "cuda" and compat == "minor-version" and jp is not None:
            # a Jetson's driver is its JetPack's: an image of at most the JetPack's CUDA
            rows = [i for i in g.images("cuda") if i.version.major == version.major
                    and i.version.prefix(2) <= jp.cuda.prefix(2)]
        elif accel == "cuda" and compat == "minor-version":
            # The container toolkit refuses an image whose CUDA the driver does not run natively
            # (NVIDIA_REQUIRE_CUDA), so take the newest image of the major such a driver runs.
            limit = g.newest_branch_for({x.family for x in t.gpus})
            rows = [i for i in g.images("cuda") if i.version.major == version.major
                    and (n := g.native_driver_min(i.version)) is not None
                    and (n <= t.driver if t.driver is not None else limit is None or n.major <= limit)]
    if accel == "cuda" and version is not None and not any(not i.removed for i in rows):
        gone = "its tags were removed from the registry (NVIDIA's end-of-life policy)" if rows else "none in the data"
        if needs_cudnn:  # the build uses the image's CUDA and cuDNN: only that CUDA's image will do
            return "", f"no nvidia/cuda image of CUDA {version} exists ({gone}), and this build needs that CUDA " \
                       "and its cuDNN in the image: no image can be built for it", "", ""
        # the wheels bring their own CUDA: an image whose CUDA the target runs natively serves them; the
        # nearest to the build's: the newest older one of its major, else the oldest newer one (the least
        # it asks of the driver)
        plain = [i for i in g.images("cuda") if not i.python and not i.removed]
        newer = [i for i in plain if i.version > version]
        runs = [i for i in plain if _runs(g, t, i)]
        rows = [i for i in runs if i.version.major == version.major and i.version < version] or \
               [i for i in runs if i.version > version]
        if not rows:
            first = min(newer, key=lambda i: i.version, default=None)
            need = g.native_driver_min(first.version) if first else None
            what = f"driver {t.driver}" if t.driver is not None else "the drivers these GPUs can use"
            hint = f": a driver >= {need} runs the CUDA {first.version} image" if first and need else ""
            return "", (f"no nvidia/cuda image of CUDA {version} ({gone}), and no newer CUDA image runs on {what} "
                        f"(the container toolkit refuses an image whose CUDA the driver does not run natively){hint}"
                        ), "", ""
        pick = max(i.version for i in rows) if rows[0].version < version else min(i.version for i in rows)
        rows = [i for i in rows if i.version == pick]
        fallback = (f"no nvidia/cuda image of CUDA {version} ({gone}); the wheels bring their own CUDA, so the base "
                    f"image is CUDA {pick}, which needs a driver >= {g.native_driver_min(pick)}")
    rows = [i for i in rows if not i.removed]
    rows = [i for i in rows if g.image_on_platform(i, t.platform)]
    if needs_cudnn and accel == "cuda":
        flavor = _cudnn_flavor(rows, "devel" if flavor == "devel" else "runtime") or flavor
    rows = [i for i in rows if (not spec.os or spec.os in i.os) and (flavor in i.flavors or accel == "cpu")]
    if not rows:
        what = f"{accel.upper()} {version}" if version else f"Python {python}"
        where = f" on {spec.os}" if spec.os else ""
        where += f" for {t.platform}" if t.platform != "linux/amd64" else ""
        ceiling = " that such a driver runs" if compat == "minor-version" else ""
        return "", f"no base image in matrices/images.toml for {what}{where} ({flavor}){ceiling}", "", ""
    confident = [i for i in rows if i.confidence != "low"] or rows
    newest = max(i.version for i in confident)
    # one version may span several rows (one per group of OSes): choose the OS across all of them
    same = [i for i in confident if i.version == newest]
    os = spec.os or _default_os(tuple(o for i in same for o in i.os))
    best = next(i for i in same if os in i.os)
    note = f"base image {best.repository} {best.version} is marked confidence = low" if best.confidence == "low" else ""
    note = "; ".join(n for n in (fallback, note) if n)
    return best.ref(flavor if flavor in best.flavors else best.flavors[0], os), note, os, best.python


def _runs(g: Provider, t: Target, image: Image) -> bool:
    """Whether ``t`` runs ``image``'s CUDA natively (its driver, else the newest driver branch
    that still supports its GPUs) and that CUDA can target every GPU; any ROCm image runs."""
    if image.accelerator != "cuda":
        return True
    if t.jetpack is not None and (jp := g.jetpack(t.jetpack)) is not None:
        return image.version.prefix(2) <= jp.cuda.prefix(2)
    need = g.native_driver_min(image.version)
    if need is None:
        return False
    if t.driver is not None:
        if need > t.driver:
            return False
    elif (limit := g.newest_branch_for({x.family for x in t.gpus})) is not None and need.major > limit:
        return False
    return all(g.toolkit_knows(image.version, x.arch) for x in t.gpus if x.vendor == "nvidia")


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
