"""`envsolve init`, `add` and `remove`: project.toml written and changed as a person would write it.

``init_text`` is a new spec with a comment on each key; ``added`` and ``removed`` change a spec's
text through tomlkit, which keeps its comments, key order, quoting and layout, and touch only the
keys they name. Each returns text: the command checks it with the spec's own parser, writes it and
locks it, and puts the old bytes back when the lock fails (:mod:`envsolve.cli`).

Where a requirement goes is the spec's own rule (``spec.ALIASES``, ``domain.FRAMEWORKS`` and
``COMPANIONS``): a framework or a companion to ``[frameworks]``, anything else to ``[packages] pip``
(an extension package such as flash-attn included: the solver reads it there), unless ``--pip``,
``--conda`` or ``--apt`` says where.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import tomlkit
from tomlkit.items import Array, Table

from .domain import COMPANIONS, FRAMEWORKS, MARKERS, canonical_name
from .errors import Problem, SpecError
from .spec import ALIASES, Target

__all__ = ["Kind", "added", "init_text", "project_name", "removed"]

Kind = Literal["auto", "pip", "conda", "apt"]

_HEAD = """\
# What this project needs and the hardware it must run on, for envsolve.
#   envsolve add torch flash-attn    add frameworks and packages (then the lock follows)
#   envsolve lock                    solve it: envsolve.lock, every package pinned and hashed
#   envsolve sync                    .venv holds exactly this machine's environment
"""


def init_text(name: str, python: str, hardware: Mapping[str, Any], origin: str) -> str:
    """A new project.toml: ``[project]`` with ``name`` and the ``python`` range, empty
    ``[frameworks]`` and ``[packages]`` with a comment saying what goes there, and ``[hardware]``
    (``origin`` says where it comes from: this machine's ``envsolve detect``, or the options)."""
    doc = tomlkit.parse(_HEAD)
    project = tomlkit.table()
    project.add("name", name)
    project.add("python", python)
    project["python"].comment('a range (">=3.10,<3.13") or one release line ("3.11")')
    project["python"].trivia.comment_ws = "  "
    doc.add("project", project)
    frameworks = tomlkit.table()
    frameworks.add(tomlkit.comment(f"{', '.join(FRAMEWORKS)}, and {', '.join(COMPANIONS)}:"))
    frameworks.add(tomlkit.comment('a version range each, e.g. torch = ">=2.4" or "*" (any); Keras with its backend:'))
    frameworks.add(tomlkit.comment('keras = { version = ">=3.5", backend = "torch" }'))
    doc.add(tomlkit.nl())
    doc.add("frameworks", frameworks)
    packages = tomlkit.table()
    packages.add(tomlkit.comment("pip: other packages, CUDA extension packages (flash-attn, vllm) among them;"))
    packages.add(tomlkit.comment("conda: conda-forge packages (environment.yml); apt: Debian packages of the image"))
    for key in ("pip", "conda", "apt"):
        packages.add(key, tomlkit.array())
    doc.add(tomlkit.nl())
    doc.add("packages", packages)
    table = tomlkit.table()
    table.add(tomlkit.comment(origin))
    if not hardware:
        table.add(tomlkit.comment('gpus = ["H100", "RTX 4090"]   GPU models or compute capabilities ("sm_90")'))
        table.add(tomlkit.comment('driver = "535.104.05"         the oldest NVIDIA driver of the fleet'))
    for key, value in hardware.items():
        table.add(key, value)
    doc.add(tomlkit.nl())
    doc.add("hardware", table)
    return tomlkit.dumps(doc)


def project_name(folder: Path) -> str:
    """A project name from ``folder``'s name: its letters, digits, '.', '_' and '-' (others become
    '-'), "project" when none is left."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", folder.resolve().name).strip("-._")
    return name or "project"


def added(text: str, path: str, requirements: Sequence[str], kind: Kind, target: Target | None) -> str:
    """``text`` (the spec at ``path``) with each requirement added where it belongs, replacing
    the entry of the same name; ``target`` (pip lines only) limits a pip line to that target's
    platform by a PEP 508 marker. Bad requirements are a :class:`SpecError` naming each."""
    doc = tomlkit.parse(text)
    problems: list[Problem] = []
    for written in requirements:
        name, rest = _split(written)
        if not name:
            problems.append(Problem(path, "", f"{written!r} is not a requirement; write NAME or NAME>=VERSION "
                                              "(e.g. 'torch>=2.4', 'flash-attn')"))
            continue
        framework = ALIASES.get(canonical_name(name), canonical_name(name))
        if kind == "auto" and (framework in FRAMEWORKS or framework in COMPANIONS):
            if target is not None:
                problems.append(Problem(path, f"frameworks.{framework}", "a framework is the whole project's, not "
                                        "one target's: add it without --target"))
                continue
            _framework(doc, framework, rest.strip() or "*")
        else:
            if target is not None and kind != "auto" and kind != "pip":
                problems.append(Problem(path, f"packages.{kind}", "--target limits a pip line only"))
                continue
            line = written.strip() if target is None else f"{written.strip()}; {_marker(target)}"
            _package(doc, "pip" if kind == "auto" else kind, name, line)
    if problems:
        raise SpecError(problems, tip="fix the requirements named above")
    return tomlkit.dumps(doc)


def removed(text: str, names: Sequence[str]) -> tuple[str, list[str]]:
    """``text`` without the frameworks and package lines of ``names`` (by their canonical names,
    a framework's aliases too), and the names it did not hold."""
    doc = tomlkit.parse(text)
    missing = []
    for name in names:
        canon = canonical_name(name)
        found = False
        frameworks = doc.get("frameworks")
        if isinstance(frameworks, Table):
            for key in [k for k in frameworks if canonical_name(k) in (canon, ALIASES.get(canon))]:
                del frameworks[key]
                found = True
        packages = doc.get("packages")
        if isinstance(packages, Table):
            for kind in ("pip", "conda", "apt"):
                lines = packages.get(kind)
                if isinstance(lines, Array):
                    for i in reversed([i for i, line in enumerate(lines) if _named(str(line)) == canon]):
                        del lines[i]
                        found = True
        if not found:
            missing.append(name)
    return tomlkit.dumps(doc), missing


def _split(written: str) -> tuple[str, str]:
    """(name, the rest) of a requirement as a person writes it: ``torch>=2.4``, ``flash-attn``,
    ``vllm==0.11.0``, ``numpy<2; python_version < '3.12'``, ``pkg @ https://...``."""
    name = _named(written)
    return name, written.strip()[len(name):] if name else ""


def _named(line: str) -> str:
    """The canonical name a requirement, a conda spec or a Debian package line begins with."""
    head = line.strip()
    end = next((i for i, c in enumerate(head) if not (c.isalnum() or c in "-_.")), len(head))
    name = head[:end]
    return canonical_name(name) if name and name[0].isalnum() and name[-1].isalnum() else ""


def _framework(doc: Any, name: str, spec: str) -> None:
    """``[frameworks] name = spec``: an existing entry of the same name (an alias, another
    spelling) is replaced in its place; a Keras table keeps its backend."""
    frameworks = doc.get("frameworks")
    if not isinstance(frameworks, Table):
        frameworks = tomlkit.table()
        doc.add("frameworks", frameworks)
    same = [k for k in frameworks if ALIASES.get(canonical_name(k), canonical_name(k)) == name]
    old = frameworks.get(same[0]) if same else None
    if isinstance(old, dict):
        old["version"] = spec
        return
    for key in same[1:]:
        del frameworks[key]
    frameworks[same[0] if same else name] = spec


def _package(doc: Any, kind: str, name: str, line: str) -> None:
    """``line`` in ``[packages] kind``, in place of a line of the same name, else at the end."""
    packages = doc.get("packages")
    if not isinstance(packages, Table):
        packages = tomlkit.table()
        doc.add("packages", packages)
    lines = packages.get(kind)
    if not isinstance(lines, Array):
        lines = tomlkit.array()
        packages[kind] = lines
    at = [i for i, old in enumerate(lines) if _named(str(old)) == name]
    if at:
        lines[at[0]] = line
        for i in reversed(at[1:]):
            del lines[i]
    else:
        lines.append(line)


def _marker(target: Target) -> str:
    """The PEP 508 marker of ``target``'s platform (``domain.MARKERS``)."""
    env = MARKERS[target.platform]
    return f"sys_platform == '{env['sys_platform']}' and platform_machine == '{env['platform_machine']}'"
