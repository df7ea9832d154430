"""`envsolve explain`: a reporter that records every choice and rejection of the search, and the
records of the explanation (:class:`Explanation`) that both its text and its JSON are made from.
The explanations of an unsatisfiable spec live in :mod:`envsolve.solve.explain`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
import msgspec.structs

from ..domain import LINUX_PLATFORMS
from ..errors import Unsatisfiable
from ..provider import Provider
from ..spec import GpuReq, ProjectSpec, Target
from ..versions import Dotted
from .fit import jit_note, target_text
from .fixes import solve_explained
from .model import Candidate, ExtensionPin, PackagePin, Reporter, Resolution
from .output import FORWARD_NOTE, METAL_NOTE, python_reason

# A target and what its solve gave: its resolution, or why it has none.
Answer = tuple[Target, Resolution | Unsatisfiable]

__all__ = ["FORMAT", "Answer", "Chosen", "Decision", "ExplainReporter", "Explanation", "TargetReport", "answers"]

FORMAT = 1  # the version of `envsolve explain --format json`'s keys (README: Machine-readable output)
_LIMIT = 12  # rejections shown per target without --all
_FLOOR_NOTE = "the native minimum driver"  # the warnings the text tells beside the driver floor


class Decision(msgspec.Struct, frozen=True, kw_only=True):
    """A subject the search ruled out (``torch 2.7.1 (cu118)``), or a clash, and why."""

    subject: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"subject": self.subject, "reason": self.reason}


class Chosen(msgspec.Struct, frozen=True, kw_only=True):
    """A build the search chose, and why."""

    subject: str  # ``torch 2.7.1 (cu126)``
    reason: str
    framework: str
    version: str
    variant: str  # "" for a pure-Python framework (keras)
    cuda: str = ""
    rocm: str = ""
    driver_min: str = ""
    compat: str = ""
    jit: tuple[str, ...] = ()  # the GPU archs the build reaches only through PTX JIT
    jit_note: str = ""  # what that means on the first run (:func:`~envsolve.solve.fit.jit_note`)

    @classmethod
    def of(cls, c: Candidate, reason: str) -> Chosen:
        b = c.build
        return cls(subject=c.label, reason=reason, framework=c.package, version=c.release.raw,
                   variant=b.variant if b else "", cuda=_raw(b.cuda) if b else "", rocm=_raw(b.rocm) if b else "",
                   driver_min=_raw(c.driver_min), compat=c.compat, jit=c.jit, jit_note=jit_note(c))

    def to_dict(self) -> dict[str, Any]:
        return {"framework": self.framework, "version": self.version, "variant": self.variant, "cuda": self.cuda,
                "rocm": self.rocm, "driver_min": self.driver_min, "compat": self.compat, "jit": list(self.jit),
                "reason": self.reason}


class TargetReport(msgspec.Struct, frozen=True, kw_only=True):
    """Everything `envsolve explain` says of one target: its hardware, what was chosen (or, for
    an unsatisfiable target, the clashes and the nearest fixes) and what was rejected."""

    target: Target
    chosen: tuple[Chosen, ...] = ()
    rejected: tuple[Decision, ...] = ()
    resolution: Resolution | None = None  # None when the target is unsatisfiable
    python_why: str = ""
    clashes: tuple[Decision, ...] = ()
    fixes: tuple[str, ...] = ()

    def text(self, limit: int | None) -> list[str]:
        """The target's lines: hardware, platform, choices, Python, driver, image, rejections
        (``limit`` of them; None for every one)."""
        r = self.resolution
        if r is None:
            return [f"target {self.target.name}: no resolution", *self._rejections(limit)]
        out = [*_hardware_lines(self.target), *(f"  chose {c.subject}: {c.reason}" for c in self.chosen)]
        out += [f"  {'PTX ' if 'PTX' in c.jit_note else ''}JIT: {c.jit_note}" for c in self.chosen if c.jit_note]
        out += [f"  extension {x.name} {x.version} ({_INSTALLED[x.install]}): {x.reason}" for x in r.extensions]
        out.append(f"  python {r.python}: {self.python_why}")
        out += _driver_lines(r)
        out += [f"  note: {w}" for w in r.warnings if w.startswith((_FLOOR_NOTE, METAL_NOTE, FORWARD_NOTE))]
        out.append(f"  base image {r.base_image}" if r.base_image or self.target.platform in LINUX_PLATFORMS
                   else f"  no base image: containers run Linux, and this environment is for {self.target.platform}")
        return out + self._rejections(limit)

    def _rejections(self, limit: int | None) -> list[str]:
        """The alternatives ruled out, with their reasons, as indented lines."""
        if not self.rejected:
            return []
        shown = self.rejected[:limit]
        out = [f"  rejected ({len(self.rejected)}):"] + [f"    {d.subject}: {d.reason}" for d in shown]
        if len(shown) < len(self.rejected):
            out.append(f"    ... {len(self.rejected) - len(shown)} more (--all shows every one)")
        return out

    def to_dict(self, limit: int | None) -> dict[str, Any]:
        """The target as `envsolve explain --format json` gives it (README: Machine-readable output)."""
        t = self.target
        out: dict[str, Any] = {
            "name": t.name, "satisfiable": self.resolution is not None, "vendor": t.vendor,
            "gpus": [_gpu(x) for x in t.gpus], "driver": _raw(t.driver), "platform": t.platform,
            "platform_why": t.platform_why,
        }
        out.update(self._resolved() if self.resolution is not None else self._unsatisfied())
        out["rejected"] = [d.to_dict() for d in self.rejected[:limit]]
        out["rejected_total"] = len(self.rejected)
        return out

    def _resolved(self) -> dict[str, Any]:
        r = self.resolution
        assert r is not None  # only called for a resolved target
        return {"chosen": [c.to_dict() for c in self.chosen],
                "python": {"version": r.python, "reason": self.python_why},
                "cuda": r.cuda, "rocm": r.rocm, "jetpack": r.jetpack, "driver_min": r.driver_min, "compat": r.compat,
                "base_image": r.base_image, "packages": [_pin(p) for p in r.packages],
                "extensions": [_extension(x) for x in r.extensions], "warnings": list(r.warnings)}

    def _unsatisfied(self) -> dict[str, Any]:
        return {"clashes": [c.to_dict() for c in self.clashes], "fixes": list(self.fixes)}


class Explanation(msgspec.Struct, frozen=True, kw_only=True):
    """`envsolve explain`'s records: what ``[packages] pip`` asked, and one :class:`TargetReport`
    per target, in the spec's order."""

    targets: tuple[TargetReport, ...]
    pip_notes: tuple[str, ...] = ()  # what the [packages] pip requirements ask of the frameworks and Python

    def text(self, verbose: bool = False, per_target: int = _LIMIT) -> str:
        """Readable text: each target's choices, then the alternatives rejected and why."""
        limit = None if verbose else per_target
        lines = [*(f"[packages] pip: {n}" for n in self.pip_notes), *(x for t in self.targets for x in t.text(limit))]
        return "".join(line + "\n" for line in lines)

    def to_dict(self, verbose: bool = False, per_target: int = _LIMIT) -> dict[str, Any]:
        """The explanation as `envsolve explain --format json` prints it."""
        limit = None if verbose else per_target
        return {"format": FORMAT, "pip_notes": list(self.pip_notes),
                "targets": [t.to_dict(limit) for t in self.targets]}


class ExplainReporter(Reporter):
    """Collects every decision for ``envsolve explain``; :meth:`explanation` makes its records."""

    def __init__(self) -> None:
        self.lines: dict[str, list[tuple[str, str, str]]] = {}

    def chosen(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("chose", subject, reason))

    def rejected(self, target: str, subject: str, reason: str) -> None:
        self.lines.setdefault(target, []).append(("rejected", subject, reason))

    def explanation(self, answers: Sequence[Answer], python_asked: str = "*", bounded_by: Sequence[str] = (),
                    pip_notes: Sequence[str] = ()) -> Explanation:
        """The records of each target's answer (its resolution, or why it has none), in order;
        ``python_asked`` and ``bounded_by`` say where the Python's range came from
        (:func:`~envsolve.solve.output.python_reason`), ``pip_notes`` what ``[packages] pip`` asks."""
        return Explanation(targets=tuple(self._report(t, a, python_asked, bounded_by) for t, a in answers),
                           pip_notes=tuple(pip_notes))

    def text(self, resolutions: list[Resolution], verbose: bool = False, per_target: int = _LIMIT) -> str:
        """Readable text of resolved targets (see :meth:`Explanation.text`)."""
        return self.explanation([(r.target, r) for r in resolutions]).text(verbose, per_target)

    def _report(self, t: Target, a: Resolution | Unsatisfiable, python_asked: str,
                bounded_by: Sequence[str]) -> TargetReport:
        rejected = self._rejected(t.name)
        if isinstance(a, Unsatisfiable):
            return TargetReport(target=t, rejected=rejected, fixes=a.fixes,
                                clashes=tuple(Decision(subject=c.subject, reason=c.reason) for c in a.clashes))
        reasons = self._decisions(t.name, "chose")
        chosen = tuple(Chosen.of(c, reason) for c, (_, reason) in zip(a.choices, reasons, strict=True))
        return TargetReport(target=t, chosen=chosen, rejected=rejected, resolution=a,
                            python_why=python_reason(a, python_asked, bounded_by))

    def _rejected(self, target: str) -> tuple[Decision, ...]:
        return tuple(Decision(subject=s, reason=why) for s, why in self._decisions(target, "rejected"))

    def _decisions(self, target: str, kind: str) -> list[tuple[str, str]]:
        """(subject, reason) of each decision of ``kind`` (chose, rejected) for ``target``, in order."""
        return [(s, why) for k, s, why in self.lines.get(target, []) if k == kind]


def answers(provider: Provider, spec: ProjectSpec, reporter: Reporter) -> list[Answer]:
    """Each target of ``spec`` solved on its own, with ``reporter`` listening: its resolution, or
    the :class:`Unsatisfiable` with the nearest fixes (every target is answered)."""
    out: list[Answer] = []
    for t in spec.targets:
        try:
            out += [(t, r) for r in solve_explained(provider, msgspec.structs.replace(spec, targets=(t,)), reporter)]
        except Unsatisfiable as e:
            out.append((t, e))
    return out


def _raw(version: Dotted | None) -> str:
    """A version as written ("" for none)."""
    return version.raw if version is not None else ""


# how an extension package installs, in words
_INSTALLED = {"index": "wheel from the index", "github": "GitHub release wheel", "pyg": "PyG wheel page",
              "source": "source build"}


def _extension(x: ExtensionPin) -> dict[str, str]:
    """An extension package as `envsolve explain --format json` gives it."""
    return {"name": x.name, "version": x.version, "install": x.install, "url": x.url, "build_env": x.build_env,
            "build_archs": x.build_archs, "reason": x.reason}


def _gpu(x: GpuReq) -> dict[str, str]:
    return {"name": x.name, "arch": x.arch.name}


def _pin(p: PackagePin) -> dict[str, str]:
    return {"name": p.name, "version": p.version, "variant": p.variant, "index": p.index,
            "requirement": p.requirement}


def _hardware_lines(t: Target) -> list[str]:
    """The target's GPUs and driver, and why its platform is the one it is."""
    out = [f"target {t.name}: {_hardware(t)}" + (f", driver {t.driver}" if t.driver else "")
           + (f" (accelerator = '{t.accelerator}' in the spec)" if t.accelerator else "")]
    return out + ([f"  platform {t.platform}: {t.platform_why}"] if t.platform_why else [])


def _hardware(t: Target) -> str:
    return target_text(t, "CPU only")


def _driver_lines(r: Resolution) -> list[str]:
    """What runs the environment's CUDA: its JetPack, or the driver floor and how it runs CUDA."""
    if r.jetpack:
        return [f"  JetPack {r.jetpack}: the Jetson's driver and CUDA {r.cuda} come with it"]
    how = "forward compatibility" if r.compat == "forward" else r.compat
    return [f"  driver >= {r.driver_min} ({how} support of CUDA {r.cuda})"] if r.compat else []
