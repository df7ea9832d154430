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

from .domain import driver_text
from .errors import EnvsolveError, Problem, ResolveError, SpecError, Unsatisfiable
from .files import write_all

if TYPE_CHECKING:
    from .host.facts import HostFacts
    from .matrix.cells import CellResult
    from .matrix.parse import MatrixSpec
    from .provider import Provider
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


def _provider() -> Provider:
    from .data import load
    from .provider import Provider

    root = click.get_current_context().find_root().params.get("matrices")
    return Provider(load(root))


def _read_spec(path: Path, graph: Provider) -> tuple[ProjectSpec, bytes]:
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
@click.option("--host", is_flag=True, help="Solve the default target for this machine's GPUs and driver "
              "(see `envsolve detect`).")
@click.option("--frameworks-only", is_flag=True, envvar="ENVSOLVE_FRAMEWORKS_ONLY",
              help="Lock only the frameworks (the compatibility solve), with no network; the default "
                   "locks every package of every environment with hashes (uv, from the package indexes).")
@click.option("--offline", is_flag=True, help="Resolve from the cache only (a second lock of the same spec).")
@click.option("--exclude-newer", metavar="DATE", default="",
              help="Ignore files uploaded after DATE (RFC 3339, e.g. 2025-06-01T00:00:00Z) in the full resolve.")
@click.option("--upgrade-package", "-P", "upgrade_packages", multiple=True, metavar="NAME",
              help="Move NAME to the newest version that fits and keep every other package of the lock on "
                   "disk (repeatable).")
@click.option("-U", "--upgrade", is_flag=True, help="Move every package to the newest version that fits.")
@click.option("--same-versions", is_flag=True,
              help="One version of each framework on every target (as [project] same-versions = true).")
@_handles_errors
def lock(spec_path: Path, output: Path | None, fmt: str, check: bool, then_render: bool, host: bool,
         frameworks_only: bool, offline: bool, exclude_newer: str, upgrade_packages: tuple[str, ...],
         upgrade: bool, same_versions: bool) -> None:
    """Solve SPEC_PATH (project.toml) and write envsolve.lock (every package, with hashes)."""
    from .config import index_urls
    from .lock import job as locking
    from .lock import model as lockfile

    said: list[tuple[bool, str]] = []

    def say(line: str, err: bool = False) -> None:
        said.append((err, line))
        click.echo(line, err=err)

    graph = _provider()
    spec, blob = _read_spec(spec_path, graph)
    if host:
        spec = _for_host(spec, graph)
    urls, index_warnings = index_urls(dict(spec.indexes), spec_path=str(spec_path))
    out = output or spec_path.parent / "envsolve.lock"
    stale_tip = f"run `envsolve lock {spec_path}` and commit the result"
    if check:  # never the network: a full lock is checked by its digests, a frameworks lock solved again
        verdict = locking.check_digests(out, blob, graph)
        if verdict:
            raise _Stale(verdict, tip=stale_tip)
        if verdict == "":
            click.echo(f"{out} is up to date (spec and data digests match)")
            return
        frameworks_only = True
    opts = locking.Options(frameworks_only=frameworks_only, offline=offline, exclude_newer=exclude_newer,
                           upgrade_packages=upgrade_packages, upgrade=upgrade, same_versions=same_versions)
    done = locking.make(graph, spec, spec_name=spec_path.name, blob=blob, urls=urls, out=out, opts=opts)
    text = lockfile.dumps(done.lock)
    if (stale := _stale_data_warning(out, graph.data_version)):
        click.echo(stale, err=True)
    for w in (*index_warnings, *done.warnings):
        say(f"WARNING: {w}", err=True)
    for r in done.resolutions:
        for w in r.warnings:
            say(f"WARNING: {r.target.name}: {w}", err=True)
    if check:
        try:
            current = out.read_text(encoding="utf-8")
        except OSError:
            current = None
        if current != text:
            why = "does not exist" if current is None else "is not what the spec and data give now"
            raise _Stale(f"{out} {why}", tip=stale_tip)
        click.echo(f"{out} is up to date")
        return
    write_all({out: text}, tip="choose another path with -o, or fix the folder's permissions")
    if fmt == "json":
        say(json.dumps(done.lock.to_dict(), indent=2, sort_keys=False))

    def summary(line: str) -> None:
        say(line, err=fmt == "json")  # keep stdout pure JSON with --format json

    summary(f"wrote {out}")
    for note in (n for st in done.steers for n in st.notes()):
        summary(f"  [packages] pip: {note}")
    for r in done.resolutions:
        pkgs = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in r.packages) or "no frameworks"
        stack = f"CUDA {r.cuda}, {driver_text(r.driver_min, r.jetpack)} ({r.compat})" if r.cuda else (
            f"ROCm {r.rocm}" if r.rocm else "CPU" if r.accelerator == "cpu" else r.base_image)
        summary(f"  {r.target.name}: Python {r.python}, {stack}: {pkgs}")
    if then_render:
        for path in _render(out, None, None):
            summary(f"wrote {path}")
    elif not (host or stale or opts.offline or opts.exclude_newer or opts.refresh or same_versions):
        from .lock.replay import store  # only the requests the replay reads: the plain lock, --frameworks-only

        source = click.get_current_context().get_parameter_source("frameworks_only")
        flag = source == click.core.ParameterSource.COMMANDLINE
        store((str(spec_path), str(output) if output else "", fmt, "frameworks" if flag else ""),
              text, graph.data_version, said)


class _Stale(EnvsolveError):
    exit_code = 1


def _render(lock_path: Path, out_dir: Path | None, target: str | None, dockerfile: bool = True) -> list[Path]:
    """Render every environment (or ``target``) of a lock; write only when all rendered."""
    from .errors import LockError
    from .lock import model as lockfile
    from .render.artifacts import render

    data = lockfile.read(lock_path)
    names = [e.name for e in data.environments]
    if target is not None and target not in names:
        raise LockError(f"{lock_path}: has no environment {target!r} (it has: {', '.join(names)})",
                        tip="pass one of those to --target, or leave --target out for all")
    root = out_dir or lock_path.parent / "envsolve-out"
    texts = {root / e.name / name: text
             for e in data.environments if target in (None, e.name)
             for name, text in render(data, e, lock_path.name, dockerfile=dockerfile).items()}
    write_all(texts, tip="choose another folder with -o")
    return list(texts)


@main.command(name="render")
@click.argument("lock_path", default="envsolve.lock", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, file_okay=False),
              help="Folder for DIR/<environment>/ (default: envsolve-out/ beside the lock).")
@click.option("--target", help="Render only this environment.")
@click.option("--no-dockerfile", is_flag=True, help="Leave the Dockerfile out (for conda packages, which it "
              "cannot install).")
@_handles_errors
def render_cmd(lock_path: Path, output: Path | None, target: str | None, no_dockerfile: bool) -> None:
    """Write Dockerfile, requirements.txt, environment.yml and smoke_test.py per environment."""
    for path in _render(lock_path, output, target, dockerfile=not no_dockerfile):
        click.echo(f"wrote {path}")


@main.command(name="build")
@click.argument("lock_path", default="envsolve.lock", type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, file_okay=False),
              help="Folder the build contexts are rendered into (default: envsolve-out/ beside the lock).")
@click.option("--target", help="Build only this environment.")
@click.option("--tag", help="Image name[:tag] (default: PROJECT-ENVIRONMENT:<lock digest>); with several "
              "environments each gets -ENVIRONMENT appended.")
@click.option("--engine", type=click.Choice(["docker", "podman", "buildah"]),
              help="Default: docker with BuildKit when its daemon answers, else podman, else buildah.")
@click.option("--platform", help="e.g. linux/amd64.")
@click.option("--push", is_flag=True, help="Push each image after it is built (and checked).")
@click.option("--smoke", is_flag=True, help="Run the smoke test: at build time for CPU images, in a "
              "container with the GPUs for GPU images.")
@click.option("--print", "print_only", is_flag=True, help="Print the engine commands instead of running them.")
@_handles_errors
def build_cmd(lock_path: Path, output: Path | None, target: str | None, tag: str | None, engine: str | None,
              platform: str | None, push: bool, smoke: bool, print_only: bool) -> None:
    """Render and build each environment's image; report image, digest, size, seconds and smoke result."""
    import os
    import shlex

    from .lock import model as lockfile
    from .render import build as builder

    _render(lock_path, output, target)
    data = lockfile.read(lock_path)
    root = output or lock_path.parent / "envsolve-out"
    envs = [e for e in data.environments if target in (None, e.name)]

    def tag_of(name: str) -> str:
        if tag is None:
            return f"{data.project}-{name}:{data.lock_digest.removeprefix('sha256:')[:12]}".lower()
        if len(envs) == 1:
            return tag
        repo, _, version = tag.rpartition(":") if ":" in tag.rsplit("/", 1)[-1] else (tag, "", "")
        return f"{repo}-{name}" + (f":{version}" if version else "")

    if print_only:
        try:
            eng = builder.find_engine(engine)
        except builder.BuildError:
            eng = builder.Engine(name=engine or "docker", path=engine or "docker")
        click.echo("# pip's settings reach a build as secrets: add --secret=id=pip.conf,src=FILE "
                   "(and id=netrc, id=ca.pem) where a mirror or a proxy's CA needs them")
        for e in envs:
            p = builder.plan(eng, environment=e.name, accelerator=e.accelerator, context=root / e.name,
                             tag=tag_of(e.name), secrets={}, platform=platform or "", smoke=smoke, push=push)
            for argv in (p.build, p.smoke, p.push):
                if argv:
                    click.echo(shlex.join(argv))
        return
    eng = builder.find_engine(engine)
    rows = []
    failures: list[builder.BuildError] = []
    with builder.secrets_folder() as folder:
        secrets = builder.pip_secrets(os.environ, Path(folder))
        for e in envs:  # every environment is tried; the failures are told together at the end
            p = builder.plan(eng, environment=e.name, accelerator=e.accelerator, context=root / e.name,
                             tag=tag_of(e.name), secrets=secrets, platform=platform or "", smoke=smoke, push=push)
            click.echo(f"building {p.tag} with {eng.name} from {root / e.name}", err=True)
            try:
                b = builder.run(eng, p, lambda line: click.echo(line, err=True))
            except builder.BuildError as err:
                failures.append(err)
                rows.append(f"| {e.name} | {p.tag} | | | | failed |")
                continue
            rows.append(f"| {b.environment} | {b.tag} | {b.digest[:19] or '?'} | {b.size_mb:.0f} MB | "
                        f"{b.seconds:.0f} | {b.smoke} |")
    click.echo("| environment | image | digest | size | seconds | smoke |\n|---|---|---|---|---|---|")
    click.echo("\n".join(rows))
    if len(failures) == 1:
        raise failures[0]
    if failures:
        raise builder.BuildError(f"{len(failures)} of {len(envs)} images failed:\n  "
                                 + "\n  ".join(f.message for f in failures),
                                 tip="the engine's output above shows each failing step in full")


@main.command(name="matrix")
@click.argument("matrix_path", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "github", "bake", "markdown", "json"]), default="table",
              show_default=True, help="markdown: a summary for $GITHUB_STEP_SUMMARY.")
@click.option("--max-jobs", type=click.IntRange(min=1), help="Split --format github into shards of N jobs.")
@click.option("--shard", type=click.IntRange(min=1), help="With --max-jobs: print only shard K (from 1).")
@click.option("--render", "render_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Write each valid cell's artifacts under DIR/<cell id>/.")
@click.option("--check", is_flag=True, help="Exit 1 when an [[include]] cell is invalid.")
@click.option("--check-images", type=click.Path(path_type=Path, dir_okay=False),
              help="Validate existing images described in a JSON file instead.")
@click.option("--workflow", "workflow_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write a GitHub Actions workflow that checks, builds and smoke-tests the matrix.")
@_handles_errors
def matrix_cmd(matrix_path: Path | None, fmt: str, max_jobs: int | None, shard: int | None,
               render_dir: Path | None, check: bool, check_images: Path | None, workflow_path: Path | None) -> None:
    """Solve every cell of an image matrix; print valid and pruned cells, GitHub or bake output."""
    from .matrix import formats
    from .matrix.cells import check_includes, iter_cells, solve_cells
    from .matrix.parse import parse_matrix

    if shard is not None and not max_jobs:
        raise SpecError([Problem("--shard", str(shard), "needs --max-jobs N, which cuts the jobs into shards")],
                        tip="add --max-jobs 256 (GitHub's limit per matrix), or leave --shard out")
    g = _provider()
    if check_images is not None:
        _check_images(g, check_images, fmt)
        return
    if matrix_path is None:
        raise SpecError([Problem("matrix", "", "no matrix file given")],
                        tip="run `envsolve matrix images.toml` (or --check-images images.json)")
    ms = parse_matrix(_read_text(matrix_path), str(matrix_path), g)
    folder = str(render_dir) if render_dir else "envsolve-matrix"
    if fmt == "json" and render_dir is None and not check and workflow_path is None:  # stream the cells
        for piece in formats.everything(ms, iter_cells(g, ms, ms.iter_cells()), folder):
            click.echo(piece, nl=False)
        return
    results = solve_cells(g, ms, ms.cells())
    if fmt == "table":
        click.echo(formats.table(results), nl=False)
    elif fmt == "json":
        for piece in formats.everything(ms, results, folder):
            click.echo(piece, nl=False)
    elif fmt == "bake":
        click.echo(json.dumps(formats.bake(ms, results, folder), indent=1))
    elif fmt == "markdown":
        click.echo(formats.markdown(ms, results), nl=False)
    else:
        valid = sum(1 for r in results if r.valid)
        if valid > formats.GITHUB_JOB_LIMIT and not max_jobs:
            click.echo(f"WARNING: {valid} jobs exceed GitHub's limit of {formats.GITHUB_JOB_LIMIT} per matrix; "
                       "split them with --max-jobs 256", err=True)
        out = formats.github(ms, results, folder, max_jobs)
        if shard is not None:
            shards = out.get("shards", [out])
            if shard > len(shards):
                raise SpecError([Problem("--shard", str(shard), f"there are {len(shards)} shards")])
            out = shards[shard - 1]
        click.echo(json.dumps(out, separators=(",", ":")))
    if render_dir is not None:
        _render_cells(g, ms, results, render_dir)
    if workflow_path is not None:
        _write_workflow(ms, matrix_path, workflow_path)
    if check and (bad := check_includes(results)):
        raise _Stale(f"{len(bad)} [[include]] cell(s) invalid: " + "; ".join(f"{r.cell.id}: {r.reason}" for r in bad),
                     tip="change the include, or the data it needs")


def _write_workflow(ms: MatrixSpec, matrix_path: Path, out: Path) -> None:
    """The CI workflow of a matrix, written atomically; the paths in it are relative to the
    current directory, which is taken for the repository root."""
    from . import __version__
    from .matrix.workflow import workflow

    def relative(p: Path, what: str) -> str:
        if not p.is_absolute():
            return p.as_posix()
        try:
            return p.resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            raise SpecError([Problem(str(p), "", f"{what} is outside the current directory, so a workflow "
                                     "run from the repository root cannot find it")],
                            tip="run envsolve from the repository root with a path inside it") from None

    root = click.get_current_context().find_root().params.get("matrices")
    text = workflow(ms, matrix_file=relative(matrix_path, "the matrix file"), version=__version__,
                    command=f"envsolve matrix {relative(matrix_path, 'the matrix file')} --workflow {out.as_posix()}",
                    matrices_dir=relative(root, "the --matrices folder") if root else "")
    write_all({out: text}, tip="choose another path with --workflow")
    click.echo(f"wrote {out}", err=True)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem(str(path), "", "no such file")]) from None
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError([Problem(str(path), "", f"cannot be read: {e}")]) from None


def _render_cells(g: Provider, ms: MatrixSpec, results: list[CellResult], root: Path) -> None:
    """Each valid cell's artifacts under root/<cell id>/, through the renderer."""
    from .config import index_urls
    from .lock import model as lockfile
    from .render.artifacts import render

    urls, warnings = index_urls({})
    for w in warnings:
        click.echo(f"WARNING: {w}", err=True)
    texts = {}
    cells = 0
    for r in results:
        if r.resolution is None:
            continue
        data = lockfile.build(project=ms.repository, spec_name=Path(ms.path).name, spec_bytes=ms.path.encode(),
                              data_version=g.data_version, data_digest=g.digest, resolutions=[r.resolution],
                              urls=urls)
        cells += 1
        for name, text in render(data, data.environments[0]).items():
            texts[root / r.cell.id / name] = text
    write_all(texts, tip="choose another folder with --render")
    click.echo(f"rendered {cells} cells under {root}", err=True)


def _check_images(g: Provider, path: Path, fmt: str) -> None:
    from .matrix.images import check_images

    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as e:
        raise SpecError([Problem(str(path), f"line {e.lineno}", f"is not valid JSON: {e.msg}")]) from None
    images = data.get("images") if isinstance(data, dict) else data
    verdicts = check_images(g, images, str(path))
    if fmt == "json":
        click.echo(json.dumps([{"name": v.name, "ok": v.ok, "problems": list(v.problems)} for v in verdicts], indent=1))
    else:
        for v in verdicts:
            click.echo(f"  {'ok  ' if v.ok else 'FAIL'}  {v.name}" + ("" if v.ok else ": " + "; ".join(v.problems)))
    failing = [v for v in verdicts if not v.ok]
    if failing:
        raise _Stale(f"{len(failing)} of {len(verdicts)} images would fail",
                     tip="rebuild them from a cell that `envsolve matrix` lists as valid")


@main.command()
@click.argument("spec_path", default="project.toml", type=click.Path(path_type=Path))
@click.option("--all", "verbose", is_flag=True, help="List every rejected alternative.")
@_handles_errors
def explain(spec_path: Path, verbose: bool) -> None:
    """Say why each choice was made and which alternatives were rejected, and why."""
    from .config import index_urls
    from .lock.job import Options, steered
    from .solve import solve_explained
    from .solve.report import ExplainReporter

    graph = _provider()
    spec, _ = _read_spec(spec_path, graph)
    urls, _warnings = index_urls(dict(spec.indexes), spec_path=str(spec_path))
    try:  # what the lock reads of [packages] pip, from the cache first
        spec, steers, warnings = steered(spec, graph, urls, Options())
    except ResolveError as e:
        steers, warnings = (), [f"{e.message}; explaining without what [packages] pip asks"]
    for w in warnings:
        click.echo(f"WARNING: {w}", err=True)
    for note in (n for st in steers for n in st.notes()):
        click.echo(f"[packages] pip: {note}")
    rep = ExplainReporter()
    try:
        resolutions = solve_explained(graph, spec, rep)
    except Unsatisfiable as e:
        click.echo(f"target {e.target}: no resolution")
        click.echo("\n".join(rep.rejections(e.target, verbose)))
        raise
    click.echo(rep.text(resolutions, verbose=verbose), nl=False)


@main.command()
@click.option("--around", help="Only the neighbourhood of nodes whose name contains this "
              "(e.g. sm_90, H100, torch==2.7.1).")
@click.option("--depth", default=1, show_default=True, help="Hops around --around.")
@click.option("--format", "fmt", type=click.Choice(["dot", "json"]), default="dot", show_default=True)
@_handles_errors
def graph(around: str | None, depth: int, fmt: str) -> None:
    """Export the compatibility graph (DOT or JSON)."""
    from .export import neighbourhood, to_dot, to_json, to_nx

    whole = to_nx(_provider())
    sub = whole
    if around:
        sub = neighbourhood(whole, around, depth)
        if sub.number_of_nodes() == 0:
            raise SpecError([Problem("--around", around, "matches no node")],
                            tip="try a GPU (H100), an arch (sm_90), or a build (torch==2.7.1)")
    click.echo(to_dot(sub) if fmt == "dot" else to_json(sub), nl=False)


class _Mismatched(EnvsolveError):
    exit_code = 1


def _index_client(index_url: str | None, cache_dir: Path | None, no_cache: bool, timeout: float,
                  retries: int, backoff: float, progress: Callable[[str], None]) -> Any:
    """The package-index client of `refresh` and `data --verify` (URL from pip's settings by default)."""
    from .config import pip_index_url
    from .refresh import IndexClient, default_cache_dir

    url = index_url or pip_index_url()
    if not url:
        raise SpecError([Problem("--index-url", "", "no package index is configured")],
                        tip="pass --index-url URL or set PIP_INDEX_URL")
    return IndexClient(url, cache_dir=None if no_cache else (cache_dir or default_cache_dir()),
                       timeout=timeout, retries=retries, backoff=backoff, progress=progress)


def _index_options(fn: F) -> F:
    """--index-url, --cache-dir, --no-cache, --timeout, --retries, --backoff (refresh, data --verify)."""
    for opt in reversed((
        click.option("--index-url", metavar="URL", help="Simple-API root of the index to read "
                     "(default: PIP_INDEX_URL, else pip's configuration, else pip's default)."),
        click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), envvar="ENVSOLVE_CACHE_DIR",
                     help="Cache of index answers (default: ~/.cache/envsolve; env ENVSOLVE_CACHE_DIR)."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
        click.option("--timeout", type=click.FloatRange(min=0.01), default=30.0, show_default=True,
                     help="Seconds to wait for each answer."),
        click.option("--retries", type=click.IntRange(min=0), default=3, show_default=True,
                     help="Retries of a request that failed or answered 429/5xx."),
        click.option("--backoff", type=click.FloatRange(min=0), default=1.0, show_default=True,
                     help="Seconds before the first retry; doubled for each further one."),
    )):
        fn = opt(fn)
    return fn


@main.command()
@click.option("--validate", is_flag=True, help="Only validate the matrices (exit 2 on problems).")
@click.option("--verify", is_flag=True, help="Re-check every row the package index can confirm (Pythons, "
              "pins, companions, versions); exit 1 on any mismatch.")
@click.option("--package", "packages", multiple=True, metavar="NAME",
              help="With --verify: only this framework, or cudnn / cuda for those rows (repeatable; default: all).")
@_index_options
@_handles_errors
def data(validate: bool, verify: bool, packages: tuple[str, ...], index_url: str | None, cache_dir: Path | None,
         no_cache: bool, timeout: float, retries: int, backoff: float) -> None:
    """Show the data version, counts per kind and the newest release of each framework."""
    from .data import data_dir, load
    from .domain import FRAMEWORKS

    root = click.get_current_context().find_root().params.get("matrices") or data_dir()
    m = load(root)
    if validate:
        click.echo(f"{root}: valid (data {m.data_version}, {m.digest})")
        return
    if verify:
        from .verify import DATA_CHECKS
        from .verify import render as render_report
        from .verify import verify as verify_rows

        known = (*FRAMEWORKS, *DATA_CHECKS)
        unknown = [p for p in packages if p not in known]
        if unknown:
            raise SpecError([Problem("--package", p, "is not something --verify checks") for p in unknown],
                            tip=f"pass one of: {', '.join(known)}")

        def progress(line: str) -> None:
            click.echo(f"verify: {line}", err=True)

        client = _index_client(index_url, cache_dir, no_cache, timeout, retries, backoff, progress)
        report = verify_rows(client, m, packages or known, client.index_url)
        click.echo(render_report(report), nl=False)
        if report.mismatches:
            raise _Mismatched(f"{len(report.mismatches)} fact(s) in {root} disagree with the index",
                              tip="correct the rows named above from their sources, then run "
                                  "`envsolve data --verify` again")
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
    _echo_newest_packages(m)


def _host_facts(graph: Provider) -> HostFacts:
    from .host.detect import detect
    from .host.facts import complete

    return complete(detect(), graph)


def _for_host(spec: ProjectSpec, graph: Provider) -> ProjectSpec:
    """The spec with its default target describing this machine (see :func:`envsolve.spec.for_host`)."""
    from .host.facts import hardware_table
    from .spec import for_host

    facts = _host_facts(graph)
    for w in facts.warnings:
        click.echo(f"WARNING: host: {w}", err=True)
    host, warnings = for_host(spec, facts, graph)
    for w in warnings:
        click.echo(f"WARNING: host: {w}", err=True)
    click.echo("host: " + ", ".join(f"{k} = {v}" for k, v in hardware_table(facts, graph).items()), err=True)
    return host


@main.command(name="detect")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "toml"]), default="text", show_default=True,
              help="toml prints a [hardware] table to paste into project.toml.")
@_handles_errors
def detect_cmd(fmt: str) -> None:
    """Describe this machine's accelerators: vendor, driver, the CUDA it runs, each GPU."""
    import tomli_w

    from .host.facts import hardware_table, model_name

    graph = _provider()
    facts = _host_facts(graph)
    if fmt == "json":
        click.echo(json.dumps(facts.to_dict(), indent=2))
    elif fmt == "toml":
        click.echo(f"# {facts.vendor} host, from {facts.source}" + (f", driver {facts.driver}" if facts.driver else ""))
        click.echo(tomli_w.dumps({"hardware": hardware_table(facts, graph)}), nl=False)
    else:
        click.echo(f"vendor: {facts.vendor} (from {facts.source})")
        if facts.platform != "linux":
            click.echo(f"platform: {facts.platform}" + (f" {facts.l4t}" if facts.l4t else ""))
        if facts.driver:
            click.echo(f"driver: {facts.driver}")
        if facts.cuda_driver_max:
            click.echo(f"CUDA the driver runs: up to {facts.cuda_driver_max} (from {facts.cuda_driver_max_from})")
        if facts.rocm:
            click.echo(f"ROCm: {facts.rocm}")
        for g in facts.gpus:
            what = g.gfx or (f"compute capability {g.compute_capability}" if g.compute_capability else "arch unknown")
            known = model_name(g, graph)
            mem = f", {g.memory_mib} MiB" if g.memory_mib else ""
            click.echo(f"GPU {g.index}: {g.name} ({what}{mem})" + (f" -> {known}" if known and known != g.name else ""))
            for m in g.mig:
                click.echo(f"  MIG {m.profile}" + (f" {m.uuid}" if m.uuid else ""))
        if not facts.gpus:
            click.echo("no GPU")
    for w in facts.warnings:
        click.echo(f"WARNING: {w}", err=True)


class _Unhealthy(EnvsolveError):
    exit_code = 1


@main.command()
@click.argument("lock_path", default="envsolve.lock", type=click.Path(path_type=Path))
@click.option("--target", help="Check this environment of the lock (default: the one for this machine).")
@_handles_errors
def doctor(lock_path: Path, target: str | None) -> None:
    """Check this machine (or container) against a lock: driver, GPUs, installed frameworks, Docker."""
    from .errors import LockError
    from .host.detect import docker_tools, installed_versions
    from .host.doctor import check, pick_environment
    from .lock import model as lockfile

    data = lockfile.read(lock_path)
    graph = _provider()
    facts = _host_facts(graph)
    env = pick_environment(data, facts, target)
    if env is None:
        names = ", ".join(e.name for e in data.environments)
        raise LockError(f"{lock_path}: has no environment {target!r} (it has: {names})",
                        tip="pass one of those to --target, or leave --target out")
    findings = check(env, facts, graph, installed=installed_versions(p.name for p in env.frameworks),
                     tools=docker_tools())
    click.echo(f"checking environment '{env.name}' of {lock_path} on this "
               f"{'container' if facts.container else 'host'} ({facts.vendor}, from {facts.source})")
    for f in findings:
        click.echo(f"{f.level.upper():4}  {f.check}: {f.message}")
        if f.fix and f.level != "ok":
            click.echo(f"      fix: {f.fix}")
    fails = sum(f.level == "fail" for f in findings)
    warns = sum(f.level == "warn" for f in findings)
    if fails:
        raise _Unhealthy(f"{fails} check(s) failed, {warns} warning(s)", tip="apply the fixes above, then run "
                         "`envsolve doctor` again")
    click.echo(f"all checks passed ({warns} warning(s))")


def _echo_newest_packages(m: Any) -> None:
    """The newest companion, CUDA toolkit and cuDNN release the data knows (`envsolve data`)."""
    from packaging.version import InvalidVersion, Version

    from .domain import COMPANIONS

    for comp in COMPANIONS:
        found = []
        for v in (v for r in m.releases for name, v in r.companions if name == comp):
            try:
                found.append(Version(v))
            except InvalidVersion:
                continue
        if found:
            click.echo(f"  newest {comp}: {max(found)}")
    if m.toolkits:
        click.echo(f"  newest CUDA toolkit: {max(m.toolkits, key=lambda t: t.version).version}")
    for major in sorted({c.cuda_major for c in m.cudnn}):
        click.echo(f"  newest cuDNN for CUDA {major}: "
                   f"{max((c for c in m.cudnn if c.cuda_major == major), key=lambda c: c.version).version}")


def _stale_data_warning(out: Path, installed: str) -> str:
    """A warning when the lock on disk was made with other data than the installed matrices."""
    from .lock.replay import data_version_of

    try:
        old = data_version_of(out.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return ""
    if not old or old == installed:
        return ""
    if old < installed:
        return (f"WARNING: {out} was made with data {old}; the installed data is {installed}, "
                "so the lock may change (see `envsolve data`).")
    return (f"WARNING: {out} was made with newer data ({old}) than this envsolve has ({installed}); "
            "upgrade envsolve or pass --matrices.")


@main.command()
@click.option("--package", "packages", multiple=True, metavar="NAME",
              help="Only this package (repeatable; default: the frameworks, their companions and the "
                   "CUDA, cuDNN and triton packages).")
@click.option("--diff/--write", "diff_only", default=True, show_default=True,
              help="Print what is new or changed (writes nothing), or add the new rows to the matrices.")
@click.option("--exit-code", is_flag=True, help="With --diff: exit 1 when there are new rows or changes (for CI).")
@click.option("--data-version", metavar="YYYY-MM-DD",
              help="data_version of the files --write changes (default: today).")
@_index_options
@_handles_errors
def refresh(index_url: str | None, packages: tuple[str, ...], diff_only: bool, exit_code: bool,
            data_version: str | None, cache_dir: Path | None, no_cache: bool, timeout: float, retries: int,
            backoff: float) -> None:
    """Compare the matrices with the package index; with --write, add the new releases."""
    import datetime

    from .data import data_dir, load_dir
    from .refresh import DEFAULT_PACKAGES, apply, render, survey

    if data_version is not None:
        try:
            datetime.date.fromisoformat(data_version)
        except ValueError:
            raise SpecError([Problem("--data-version", data_version, "is not a date such as 2026-11-22")]) from None
    root = click.get_current_context().find_root().params.get("matrices") or data_dir()

    def progress(line: str) -> None:
        click.echo(f"refresh: {line}", err=True)

    client = _index_client(index_url, cache_dir, no_cache, timeout, retries, backoff, progress)
    m = load_dir(root)
    plan = survey(client, m, packages or DEFAULT_PACKAGES, progress)
    click.echo(render(plan), nl=False)
    for w in plan.warnings:
        click.echo(f"WARNING: {w}", err=True)
    if diff_only:
        if plan.rows:
            click.echo(f"{len(plan.rows)} new row(s); run `envsolve refresh --write` to add them")
        if exit_code and (plan.rows or any(f.kind == "changed" for f in plan.findings)):
            raise _Mismatched(f"the index has {len(plan.rows)} new row(s) and "
                              f"{sum(f.kind == 'changed' for f in plan.findings)} change(s) for {root}",
                              tip="run `envsolve refresh --write` to add the new rows; correct changed rows by hand")
        return
    written = apply(plan, root, data_version or datetime.date.today().isoformat())
    for path in written:
        click.echo(f"wrote {path}")
    if not written:
        click.echo("nothing to write")


if __name__ == "__main__":  # pragma: no cover
    main()
