"""`envsolve explain`: a reporter that records every choice and rejection of the search, and
their text. The explanations of an unsatisfiable spec live in :mod:`envsolve.solve.explain`.
"""

from __future__ import annotations

from . import Reporter, Resolution

__all__ = ["ExplainReporter"]


class ExplainReporter(Reporter):
    """Collects every decision for ``envsolve explain``."""

    def __init__(self) -> None:
        self.lines: dict[str, list[tuple[str, str, str]]] = {}

    def chosen(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("chose", subject, reason))

    def rejected(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("rejected", subject, reason))

    def render(self, resolutions: list[Resolution], verbose: bool = False, per_target: int = 12) -> str:
        """Readable text: each target's choices, then the alternatives rejected and why."""
        out: list[str] = []
        for r in resolutions:
            t = r.target
            hw = ", ".join(f"{x.name} ({x.arch.name})" if x.name != x.arch.name else x.name
                           for x in t.gpus) or "CPU only"
            drv = f", driver {t.driver}" if t.driver else ""
            out.append(f"target {t.name}: {hw}{drv}")
            if t.platform_why:
                out.append(f"  platform {t.platform}: {t.platform_why}")
            entries = self.lines.get(t.name, [])
            for kind, subject, reason in entries:
                if kind == "chose":
                    out.append(f"  chose {subject}: {reason}")
            out.append(f"  python {r.python}: the newest Python every chosen package supports")
            if r.jetpack:
                out.append(f"  JetPack {r.jetpack}: the Jetson's driver and CUDA {r.cuda} come with it")
            elif r.compat:
                out.append(f"  driver >= {r.driver_min} ({r.compat} support of CUDA {r.cuda})")
            out += [f"  note: {w}" for w in r.warnings if w.startswith("the native minimum driver")]
            out.append(f"  base image {r.base_image}")
            out += self.rejections(t.name, verbose, per_target)
        return "\n".join(out) + "\n"

    def rejections(self, target: str, verbose: bool = False, limit: int = 12) -> list[str]:
        """The alternatives ruled out for ``target``, with their reasons, as indented lines."""
        rejected = [(s, why) for k, s, why in self.lines.get(target, []) if k == "rejected"]
        if not rejected:
            return []
        shown = rejected if verbose else rejected[:limit]
        out = [f"  rejected ({len(rejected)}):"] + [f"    {s}: {why}" for s, why in shown]
        if len(shown) < len(rejected):
            out.append(f"    ... {len(rejected) - len(shown)} more (--all shows every one)")
        return out
