"""Thin click commands. Errors become an ERROR line, a TIP line and an exit code:
2 for bad input, 1 for an unsatisfiable spec or a failed check. No tracebacks for user errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .errors import EnvsolveError, Problem, SpecError, Unsatisfiable

if TYPE_CHECKING:
    from .graph import CompatGraph
    from .spec import ProjectSpec

F = TypeVar("F", bound=Callable[..., Any])


def _fail(e: EnvsolveError) -> None:
    click.echo(f"ERROR: {e.message}", err=True)
    if e.tip:
        click.echo(f"TIP: {e.tip}", err=True)
    sys.exit(e.exit_code)


def _handles_errors(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EnvsolveError as e:
            _fail(e)

    return wrapper  # type: ignore[return-value]


def _graph() -> CompatGraph:
    from .graph import CompatGraph
    from .matrix import load

    root = click.get_current_context().find_root().params.get("matrices")
    return CompatGraph(load(root))


def _read_spec(path: Path, graph: CompatGraph) -> tuple[ProjectSpec, bytes]:
    from .spec import parse_spec

    try:
        blob = path.read_bytes()
        text = blob.decode("utf-8")
    except FileNotFoundError:
        raise SpecError([Problem(str(path), "", "no such file")],
                        tip="pass the path of your project.toml (see examples/project.toml)") from None
    except IsADirectoryError:
        raise SpecError([Problem(str(path), "", "is a directory, not a project.toml")]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError([Problem(str(path), "", f"cannot be read: {e}")]) from None
    return parse_spec(text, str(path), graph), blob


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="envsolve")
@click.option("--matrices", type=click.Path(path_type=Path, file_okay=False), envvar="ENVSOLVE_MATRICES",
              help="Use this matrices/ folder instead of the shipped data.")
def main(matrices: Path | None) -> None:
    """Resolve GPU software stacks against a sourced compatibility graph."""


@main.command()
@click.argument("spec_path", default="project.toml", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path),
              help="Lock path (default: envsolve.lock beside the spec).")
@click.option("--format", "fmt", type=click.Choice(["toml", "json"]), default="toml", show_default=True,
              help="json also prints the lock's structure on stdout.")
@click.option("--check", is_flag=True, help="Exit 1, changing nothing, when the lock on disk is stale.")
@click.option("--render", "then_render", is_flag=True, help="Then render the lock's artifacts (see `render`).")
@_handles_errors
def lock(spec_path: Path, output: Path | None, fmt: str, check: bool, then_render: bool) -> None:
    """Solve SPEC_PATH (project.toml) and write envsolve.lock."""
    from . import lock as lockfile
    from .detect import index_urls
    from .explain import solve_explained

    graph = _graph()
    spec, blob = _read_spec(spec_path, graph)
    resolutions = solve_explained(graph, spec)
    urls = index_urls(dict(spec.indexes))
    data = lockfile.build(project=spec.name, spec_name=spec_path.name, spec_bytes=blob,
                          data_version=graph.data_version, data_digest=graph.digest,
                          resolutions=resolutions, pip=spec.pip, conda=spec.conda, apt=spec.apt,
                          urls=urls)
    text = lockfile.dumps(data)
    out = output or spec_path.parent / "envsolve.lock"
    for name in sorted({p.index for r in resolutions for p in r.packages} - set(urls)):
        click.echo(f"WARNING: index '{name}' has no URL; the lock uses ${{ENVSOLVE_INDEX_{name.upper()}}}. "
                   f"Set [indexes] {name} = URL in {spec_path.name} or ENVSOLVE_INDEX_{name.upper()}.", err=True)
    for r in resolutions:
        for w in r.warnings:
            click.echo(f"WARNING: {r.target.name}: {w}", err=True)
    if check:
        try:
            current = out.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            why = "does not exist" if current is None else "is not what the spec and data give now"
            raise _Stale(f"{out} {why}", tip=f"run `envsolve lock {spec_path}` and commit the result")
        click.echo(f"{out} is up to date")
        return
    try:
        lockfile.write_atomic(out, text)
    except OSError as e:
        raise SpecError([Problem(str(out), "", f"cannot be written: {e.strerror or e}")],
                        tip="choose another path with -o, or fix the folder's permissions") from None
    if fmt == "json":
        click.echo(json.dumps(data, indent=2, sort_keys=False))
    def summary(line: str) -> None:
        click.echo(line, err=fmt == "json")  # keep stdout pure JSON with --format json

    summary(f"wrote {out}")
    for r in resolutions:
        pkgs = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in r.packages) or "no frameworks"
        stack = f"CUDA {r.cuda}, driver >= {r.driver_min} ({r.compat})" if r.cuda else (
            f"ROCm {r.rocm}" if r.rocm else "CPU")
        summary(f"  {r.target.name}: Python {r.python}, {stack}: {pkgs}")
    if then_render:
        for path in _render(out, None, None):
            summary(f"wrote {path}")


class _Stale(EnvsolveError):
    exit_code = 1


def _render(lock_path: Path, out_dir: Path | None, target: str | None) -> list[Path]:
    """Render every environment (or ``target``) of a lock; write only when all rendered."""
    from . import lock as lockfile
    from .errors import LockError
    from .render import render

    data = lockfile.read(lock_path)
    names = [e["name"] for e in data["environments"]]
    if target is not None and target not in names:
        raise LockError(f"{lock_path}: has no environment {target!r} (it has: {', '.join(names)})",
                        tip="pass one of those to --target, or leave --target out for all")
    root = out_dir or lock_path.parent / "envsolve-out"
    texts = {root / e["name"] / name: text
             for e in data["environments"] if target in (None, e["name"])
             for name, text in render(data, e, lock_path.name).items()}
    for path, text in texts.items():
        try:
            lockfile.write_atomic(path, text)
        except OSError as e:
            raise SpecError([Problem(str(path), "", f"cannot be written: {e.strerror or e}")],
                            tip="choose another folder with -o") from None
    return list(texts)


@main.command(name="render")
@click.argument("lock_path", default="envsolve.lock", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, file_okay=False),
              help="Folder for DIR/<environment>/ (default: envsolve-out/ beside the lock).")
@click.option("--target", help="Render only this environment.")
@_handles_errors
def render_cmd(lock_path: Path, output: Path | None, target: str | None) -> None:
    """Write Dockerfile, requirements.txt, environment.yml and smoke_test.py per environment."""
    for path in _render(lock_path, output, target):
        click.echo(f"wrote {path}")


@main.command()
@click.argument("spec_path", default="project.toml", type=click.Path(path_type=Path))
@click.option("--all", "verbose", is_flag=True, help="List every rejected alternative.")
@_handles_errors
def explain(spec_path: Path, verbose: bool) -> None:
    """Say why each choice was made and which alternatives were rejected, and why."""
    from .explain import ExplainReporter, solve_explained

    graph = _graph()
    spec, _ = _read_spec(spec_path, graph)
    rep = ExplainReporter()
    try:
        resolutions = solve_explained(graph, spec, rep)
    except Unsatisfiable as e:
        click.echo(f"target {e.target}: no resolution")
        click.echo("\n".join(rep.rejections(e.target, verbose)))
        raise
    click.echo(rep.render(resolutions, verbose=verbose), nl=False)


@main.command()
@click.option("--around", help="Only the neighbourhood of nodes whose name contains this "
              "(e.g. sm_90, H100, torch==2.7.1).")
@click.option("--depth", default=1, show_default=True, help="Hops around --around.")
@click.option("--format", "fmt", type=click.Choice(["dot", "json"]), default="dot", show_default=True)
@_handles_errors
def graph(around: str | None, depth: int, fmt: str) -> None:
    """Export the compatibility graph (DOT or JSON)."""
    from .export import to_dot, to_json

    g = _graph()
    sub = g.nx
    if around:
        from .export import neighbourhood

        sub = neighbourhood(g.nx, around, depth)
        if sub.number_of_nodes() == 0:
            raise SpecError([Problem("--around", around, "matches no node")],
                            tip="try a GPU (H100), an arch (sm_90), or a build (torch==2.7.1)")
    click.echo(to_dot(sub) if fmt == "dot" else to_json(sub), nl=False)


@main.command()
@click.option("--validate", is_flag=True, help="Only validate the matrices (exit 2 on problems).")
@_handles_errors
def data(validate: bool) -> None:
    """Show the data version, counts per kind and the newest release of each framework."""
    from .matrix import FRAMEWORKS, data_dir, load

    root = click.get_current_context().find_root().params.get("matrices") or data_dir()
    m = load(root)
    if validate:
        click.echo(f"{root}: valid (data {m.data_version}, {m.digest})")
        return
    click.echo(f"data version {m.data_version} ({m.digest})")
    counts = {"GPU models": len(m.gpus), "architectures": len(m.archs), "CUDA toolkits": len(m.toolkits),
              "driver branches": len(m.branches), "cuDNN releases": len(m.cudnn),
              "ROCm releases": len(m.rocm), "framework releases": len(m.releases),
              "framework builds": len(m.builds), "base images": len(m.images)}
    for k, v in counts.items():
        click.echo(f"  {k}: {v}")
    low = sum(1 for rows in (m.archs, m.gpus, m.toolkits, m.branches, m.cudnn, m.rocm, m.releases,
                             m.builds, m.images) for r in rows if r.confidence == "low")
    click.echo(f"  rows marked confidence = low: {low}")
    for fw in FRAMEWORKS:
        versions = sorted((r.version for r in m.releases if r.package == fw), reverse=True)
        if versions:
            click.echo(f"  newest {fw}: {versions[0]}")


if __name__ == "__main__":  # pragma: no cover
    main()
