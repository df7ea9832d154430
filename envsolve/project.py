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
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.specifiers import InvalidSpecifier
from tomlkit.items import Array, InlineTable, Table

from .domain import COMPANIONS, FRAMEWORKS, MARKERS, canonical_name
from .errors import Problem, SpecError
from .spec import ALIASES, Target, package_problem
from .versions import parse_range, parse_requirement

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


def added(text: str, requirements: Sequence[str], kind: Kind, target: Target | None) -> tuple[str, list[str]]:
    """``text`` (a spec) with each requirement added where it belongs, replacing the entry of the
    same name, and what to tell the user of them; ``target`` (pip lines only) limits a pip line to
    that target's platform by a PEP 508 marker. Requirements that are none are a
    :class:`SpecError` naming each argument, each by its kind's own rule (``spec.package_problem``)."""
    doc = tomlkit.parse(text)
    problems: list[Problem] = []
    notes: list[str] = []
    for written in requirements:
        line = written.strip()
        framework = _framework_of(line) if kind == "auto" else None
        if framework is not None:
            why, spec = _framework_range(line, framework, target, notes)
            if why is None:
                _framework(doc, framework, spec)
        else:
            where = "pip" if kind == "auto" else kind
            why = package_problem(where, line) or (
                "--target limits a pip line only" if target is not None and where != "pip" else None)
            if why is None:
                line = line if target is None else _limited(line, target)
                _package(doc, where, _entry_name(where, line), line)
        if why is not None:
            problems.append(Problem(f"argument {written!r}", "", why))
    if problems:
        raise SpecError(problems, tip="fix the arguments named above (`envsolve add --help` shows the forms); "
                                      "project.toml was not changed")
    return tomlkit.dumps(doc), notes


def removed(text: str, names: Sequence[str]) -> tuple[str, list[str]]:
    """``text`` without the frameworks and package lines of ``names`` (each entry named by its
    kind's rule; a framework's aliases too), and the names it did not hold."""
    doc = tomlkit.parse(text)
    missing = []
    for name in dict.fromkeys(n.strip() for n in names):
        wanted = {kind: _entry_name(kind, name) for kind in ("pip", "conda", "apt")}
        framework = _framework_of(name)
        found = False
        frameworks = doc.get("frameworks")
        if framework is not None and isinstance(frameworks, _TABLES):
            for key in [k for k in frameworks if _framework_of(k) == framework]:
                del frameworks[key]
                found = True
        packages = doc.get("packages")
        for kind in ("pip", "conda", "apt"):
            lines = packages.get(kind) if isinstance(packages, _TABLES) else None
            if isinstance(lines, Array):
                for i in reversed([i for i, line in enumerate(lines) if _entry_name(kind, str(line)) == wanted[kind]]):
                    del lines[i]
                    found = True
        if not found:
            missing.append(name)
    return tomlkit.dumps(doc), missing


_TABLES = (Table, InlineTable)  # a section written as [frameworks] or as frameworks = { ... }
# the name a requirement begins with and its extras, if any: ``jax[cuda12]`` of ``jax[cuda12]>=0.5``
_HEAD_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?")


def _framework_of(line: str) -> str | None:
    """The framework or companion a requirement names (an alias such as ``pytorch`` or
    ``jax[cuda12]`` too, as ``spec.ALIASES`` has them), else None."""
    head = _HEAD_NAME.match(line.strip())
    if head is None:
        return None
    if (alias := ALIASES.get(head.group(0).lower())) is not None:
        return alias
    canon = canonical_name(head.group(0).partition("[")[0])
    name = ALIASES.get(canon, canon)
    return name if name in FRAMEWORKS or name in COMPANIONS else None


def _framework_range(line: str, framework: str, target: Target | None, notes: list[str]) -> tuple[str | None, str]:
    """(why ``line`` is no framework requirement, else None; the range it gives ``framework``)."""
    if target is not None:
        return "a framework is the whole project's, not one target's: add it without --target", ""
    head = _HEAD_NAME.match(line)
    assert head is not None  # _framework_of matched it
    rest = line[head.end():].strip()
    if ";" in rest or "@" in rest:
        return (f"a framework takes a version range only (envsolve chooses its build for the GPUs): write "
                f"'{framework}>=X' or '{framework}'"), ""
    try:
        parse_range(rest or "*")
    except (InvalidSpecifier, ValueError):
        return f"{rest!r} is not a version range; write e.g. '{framework}>=2.4' or '{framework}==2.7.*'", ""
    if head.group(1) and ALIASES.get(head.group(0).lower()) is None:
        notes.append(f"{head.group(0)}: envsolve chooses {framework}'s build for the GPUs, so {head.group(1)} is "
                     "not needed and was left out")
    return None, rest or "*"


def _limited(line: str, target: Target) -> str:
    """The pip requirement ``line`` with the marker of ``target``'s platform (``domain.MARKERS``)
    added to its own: ``numpy<2; (python_version < "3.12") and (sys_platform == "win32" and ...)``."""
    env = MARKERS[target.platform]
    platform = f"sys_platform == '{env['sys_platform']}' and platform_machine == '{env['platform_machine']}'"
    req = Requirement(line)
    req.marker = Marker(f"({req.marker}) and ({platform})" if req.marker else platform)
    return str(req)


def _entry_name(kind: str, line: str) -> str:
    """The name an entry of ``[packages] kind`` installs, by that kind's rule: a pip requirement's
    canonical name, a conda spec's package (after ``channel::``), a Debian package (before ``=``)."""
    text = line.strip()
    if kind == "pip":
        try:
            return canonical_name(parse_requirement(text).name)
        except ValueError:
            return text
    if kind == "conda":
        head = re.match(r"[A-Za-z0-9_.:-]+", text)
        return (head.group(0) if head else text).rsplit("::", 1)[-1].lower()
    return text.split("=", 1)[0]


def _framework(doc: Any, name: str, spec: str) -> None:
    """``[frameworks] name = spec``: an existing entry of the same framework (an alias, another
    spelling) is replaced in its place; a Keras table keeps its backend."""
    frameworks = doc.get("frameworks")
    if not isinstance(frameworks, _TABLES):
        frameworks = tomlkit.table()
        doc.add("frameworks", frameworks)
    same = [k for k in frameworks if _framework_of(k) == name]
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
    if not isinstance(packages, _TABLES):
        packages = tomlkit.table()
        doc.add("packages", packages)
    lines = packages.get(kind)
    if not isinstance(lines, Array):
        lines = tomlkit.array()
        packages[kind] = lines
    at = [i for i, old in enumerate(lines) if _entry_name(kind, str(old)) == name]
    if at:
        lines[at[0]] = line
        for i in reversed(at[1:]):
            del lines[i]
    else:
        lines.append(line)
