"""`envsolve explain`: a reporter that records every choice and rejection of the search, and
their text. The explanations of an unsatisfiable spec live in :mod:`envsolve.solve.explain`.
"""

from __future__ import annotations

from ..spec import Target
from .fit import gpu_text
from .model import Reporter, Resolution

__all__ = ["ExplainReporter"]


class ExplainReporter(Reporter):
    """Collects every decision for ``envsolve explain``."""

    def __init__(self) -> None:
        self.lines: dict[str, list[tuple[str, str, str]]] = {}

    def chosen(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("chose", subject, reason))

    def rejected(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("rejected", subject, reason))

    def text(self, resolutions: list[Resolution], verbose: bool = False, per_target: int = 12) -> str:
        """Readable text: each target's choices, then the alternatives rejected and why."""
        out = [line for r in resolutions for line in self._target(r, verbose, per_target)]
        return "\n".join(out) + "\n"

    def _target(self, r: Resolution, verbose: bool, per_target: int) -> list[str]:
        """One target's lines: its hardware, platform, choices, Python, driver, image, rejections."""
        t = r.target
        out = [*_hardware_lines(t), *(f"  chose {s}: {why}" for s, why in self._decisions(t.name, "chose"))]
        out.append(f"  python {r.python}: the newest Python every chosen package supports")
        out += _driver_lines(r)
        out += [f"  note: {w}" for w in r.warnings if w.startswith("the native minimum driver")]
        out.append(f"  base image {r.base_image}")
        return out + self.rejections(t.name, verbose, per_target)

    def _decisions(self, target: str, kind: str) -> list[tuple[str, str]]:
        """(subject, reason) of each decision of ``kind`` (chose, rejected) for ``target``, in order."""
        return [(s, why) for k, s, why in self.lines.get(target, []) if k == kind]

    def rejections(self, target: str, verbose: bool = False, limit: int = 12) -> list[str]:
        """The alternatives ruled out for ``target``, with their reasons, as indented lines."""
        rejected = self._decisions(target, "rejected")
        if not rejected:
            return []
        shown = rejected if verbose else rejected[:limit]
        out = [f"  rejected ({len(rejected)}):"] + [f"    {s}: {why}" for s, why in shown]
        if len(shown) < len(rejected):
            out.append(f"    ... {len(rejected) - len(shown)} more (--all shows every one)")
        return out


def _hardware_lines(t: Target) -> list[str]:
    """The target's GPUs and driver, and why its platform is the one it is."""
    out = [f"target {t.name}: {_hardware(t)}" + (f", driver {t.driver}" if t.driver else "")]
    return out + ([f"  platform {t.platform}: {t.platform_why}"] if t.platform_why else [])


def _hardware(t: Target) -> str:
    return ", ".join(map(gpu_text, t.gpus)) or "CPU only"


def _driver_lines(r: Resolution) -> list[str]:
    """What runs the environment's CUDA: its JetPack, or the driver floor and how it runs CUDA."""
    if r.jetpack:
        return [f"  JetPack {r.jetpack}: the Jetson's driver and CUDA {r.cuda} come with it"]
    return [f"  driver >= {r.driver_min} ({r.compat} support of CUDA {r.cuda})"] if r.compat else []
