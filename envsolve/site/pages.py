"""The explorer's pages: the selector (``index.html``, its tables embedded so that it works from
``file://``), and tables readable without JavaScript: one page per GPU, per framework release and
per driver branch, every fact linked to its ``source`` and low-confidence facts marked.
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..data import Build, Gpu, Release
from ..domain import DEFAULT_PLATFORM, PLATFORMS
from ..errors import Unsatisfiable
from ..paths import templates_dir
from ..provider import Provider
from .tables import ANSWER_FIELDS, CPU_ONLY, Choice, explored_gpus, project_toml

__all__ = ["COMMANDS", "LABELS", "packed", "pages", "slug"]

LABELS = {"release": "Release", "build": "Build", "cuda": "CUDA", "rocm": "ROCm", "python": "Python",
          "driver-min": "Driver floor", "compat": "How the driver runs CUDA", "base-image": "Base image",
          "packages": "Packages"}
COMMANDS = ("pip install envsolve", "envsolve lock project.toml --render")
DEFAULT = Choice(gpu="RTX 4090", framework="torch")  # what the selector shows first


def slug(text: str) -> str:
    """``RTX 4090`` -> ``rtx-4090``: a file name of letters, digits and dashes."""
    return re.sub(r"[^a-z0-9.]+", "-", text.lower()).strip("-") or "x"


class _Source(msgspec.Struct, frozen=True):
    """A fact's source as the pages show it: a link when it is a URL, and its confidence."""

    text: str
    url: str
    low: bool
    note: str


def _source(row: Any) -> _Source:
    text = str(getattr(row, "source", ""))
    url = text if text.startswith(("https://", "http://")) else ""
    return _Source(text=text, url=url, low=getattr(row, "confidence", "") == "low", note=str(getattr(row, "note", "")))


def _jinja() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir() / "site"), autoescape=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             trim_blocks=True, lstrip_blocks=True)
    env.globals.update(source=_source, slug=slug)
    return env


DATA_LEVEL = 9  # zlib's level for the embedded data: fixed, so the same data gives the same bytes


def packed(data: Mapping[str, Any]) -> str:
    """The data as the page embeds it: its JSON text (keys sorted, UTF-8) deflated (the zlib format,
    which the browser's ``DecompressionStream("deflate")`` reads) and written in base64, which no
    ``</`` can close inside ``<script>``. The texts repeat a lot: this is about a tenth of the JSON."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return base64.b64encode(zlib.compress(text.encode("utf-8"), DATA_LEVEL)).decode("ascii")


def pages(provider: Provider, data: dict[str, Any]) -> dict[str, str]:
    """Every file of the site by its path under the site's folder."""
    env = _jinja()
    out: dict[str, str] = {"site.css": (templates_dir() / "site" / "site.css").read_text(encoding="utf-8"),
                           "site.js": (templates_dir() / "site" / "site.js").read_text(encoding="utf-8")}
    data = {**data, "labels": LABELS, "commands": list(COMMANDS), "cpu": CPU_ONLY,
            "defaults": {"gpu": DEFAULT.gpu, "framework": DEFAULT.framework},
            "tip": Unsatisfiable("x", [], ["{fixes}"]).tip}

    def page(name: str, root: str, **kw: Any) -> str:
        return str(env.get_template(name).render(root=root, **kw))

    out["index.html"] = page("index.html.j2", "", data=packed(data), fields=ANSWER_FIELDS[:8],
                             labels=LABELS, project=project_toml(DEFAULT), commands=COMMANDS,
                             default_gpu=DEFAULT.gpu)
    gpus = explored_gpus(provider)
    out["gpus/index.html"] = page("gpus.html.j2", "../", gpus=gpus, arch=_arch_of(provider))
    entries = {x["name"]: x for x in data["gpus"]}
    runs: dict[int, dict[str, Any]] = {}  # by table: the GPU models of a class on a platform share it
    for g in gpus:
        out[f"gpus/{slug(g.name)}.html"] = page("gpu.html.j2", "../", **_gpu(provider, data, g, entries[g.name], runs))
    rels = [r for f in data["frameworks"] for r in provider.releases(f)]
    out["releases/index.html"] = page("releases.html.j2", "../", releases=rels)
    for r in rels:
        out[f"releases/{slug(r.package)}-{slug(r.raw)}.html"] = page("release.html.j2", "../", **_release(provider, r))
    out["drivers/index.html"] = page("drivers.html.j2", "../", branches=provider.m.branches)
    for branch in provider.m.branches:
        out[f"drivers/{branch.branch}.html"] = page("driver.html.j2", "../", **_branch(provider, branch.branch))
    return out


def _arch_of(provider: Provider) -> Callable[[Gpu], Any]:
    return lambda g: provider.arch_info(g.arch)


def _gpu(provider: Provider, data: dict[str, Any], g: Gpu, entry: dict[str, Any],
         runs: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A GPU's page: its record, its arch, the newest driver branch that supports it, and what it
    runs with the newest driver on its platform (the selector's own answers, once per table in ``runs``)."""
    info = provider.arch_info(g.arch)
    family = info.family if info else ""
    limit = provider.newest_branch_for({family}) if family else None
    platform = g.platform or DEFAULT_PLATFORM
    k = data["classes"][entry["cls"]][platform]
    if k not in runs:
        runs[k] = {f: _runnable(data, data["tables"][k], f) for f in data["frameworks"]}
    return {"gpu": g, "info": info, "limit": limit, "platform": platform, "runs": runs[k],
            "limit_row": next((b for b in provider.m.branches if b.branch == limit), None),
            "branches": provider.m.branches, "fields": ANSWER_FIELDS}


def _at(runs: list[int], j: int) -> int:
    for count, value in zip(runs[::2], runs[1::2], strict=True):
        if j < count:
            return value
        j -= count
    return runs[-1]


def _runnable(data: dict[str, Any], table: dict[str, Any], framework: str) -> list[tuple[list[str], str]]:
    """Each release the GPU runs with the newest driver (the answer of the release alone), newest
    first, neighbours that take the same build together: ([release, ...], build)."""
    if _at(table["t"], 0):
        return []
    outcomes = (_at(r, 0) for r in data["blobs"][table["f"][framework]["r"]])
    out: list[tuple[list[str], str]] = []
    for release, build, *_ in (data["answers"][o] for o in outcomes if o >= 0):
        if out and out[-1][1] == build:
            out[-1][0].append(release)
        else:
            out.append(([release], build))
    return out


def _release(provider: Provider, r: Release) -> dict[str, Any]:
    builds = provider.builds(r)
    return {"rel": r, "builds": builds, "floor": {b.variant: _floor(provider, b) for b in builds},
            "platforms": {b.variant: _platforms(provider, b) for b in builds}}


def _floor(provider: Provider, b: Build) -> str:
    """The oldest driver that runs the build's CUDA natively (raised by the framework's own floor)."""
    if b.cuda is None:
        return ""
    native = provider.native_driver_min(b.cuda)
    floors = [f for f in (native, b.driver_min) if f is not None]
    return max(floors).raw if floors else ""


def _platforms(provider: Provider, b: Build) -> list[str]:
    return [p for p in PLATFORMS if provider.on_platform(b, p)]


def _branch(provider: Provider, branch: int) -> dict[str, Any]:
    """A driver branch: the CUDA it runs natively, and the CUDA majors it runs by minor-version
    compatibility (their floor at or below the branch)."""
    row = next(b for b in provider.m.branches if b.branch == branch)
    minor = [m for m in provider.m.cuda_majors if m.minor_compat_driver_min is not None
             and m.minor_compat_driver_min.major <= branch and m.major >= row.cuda_max.major]
    native = [t for t in provider.m.toolkits if t.driver_min.major <= branch]
    return {"row": row, "native": native, "minor": minor, "gpus": _dropped(provider, row.unsupported_families)}


def _dropped(provider: Provider, families: tuple[str, ...]) -> list[Gpu]:
    out = []
    for g in explored_gpus(provider):
        info = provider.arch_info(g.arch)
        if info is not None and info.family in families:
            out.append(g)
    return out
