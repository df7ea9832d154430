"""Thin click commands. Errors become an ERROR line, a TIP line and an exit code:
2 for bad input, 1 for an unsatisfiable spec or a failed check. No tracebacks for user errors.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from functools import wraps
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from . import ui
from .domain import INIT_PYTHON, LINUX_PLATFORMS, PLATFORMS
from .errors import CheckFailed, EnvsolveError, Problem, SpecError, Unsatisfiable
from .files import (
    IMAGES_CAP,
    MATRIX_CAP,
    MATRIX_CELLS_CAP,
    NO_SPEC_TIP,
    SPEC_CAP,
    check_output,
    check_output_dir,
    user_input,
    write_all,
)
from .index import policy
from .lock.options import LOCK_OPTIONS, Option

if TYPE_CHECKING:
    from .host.facts import HostFacts
    from .lock.asks import Steer
    from .lock.model import Lock
    from .matrix.cells import CellResult
    from .matrix.formats import Tally
    from .matrix.parse import MatrixSpec
    from .provider import Provider
    from .solve import Resolution
    from .spec import ProjectSpec, Target
    from .voice import Voice

F = TypeVar("F", bound=Callable[..., Any])


def _fail(e: EnvsolveError) -> None:
    ui.console().error(e.message, e.tip or "")
    sys.exit(e.exit_code)


def _handles_errors(fn: F) -> F:
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except EnvsolveError as e:
            _fail(e)
        finally:
            ui.console().done()

    return wrapper  # type: ignore[return-value]


def _in_project(param: str, name: str) -> Callable[[F], F]:
    """``--project DIR``, and the command's ``param`` (its spec or its lock) found as uv finds a
    project when it is not given: ``name`` in DIR, else in the nearest folder from the working one
    upward that holds a project.toml or an envsolve.lock (:func:`envsolve.paths.project_folder`)."""
    def decorate(fn: F) -> F:
        @wraps(fn)
        def found(*args: Any, project: Path | None, **kwargs: Any) -> Any:
            kwargs[param] = _project_file(kwargs[param], project, name)
            return fn(*args, **kwargs)

        help_text = (f"The project's folder: its {name} (default: the nearest folder, from this one upward to the "
                     "repository root or the home folder, that holds a project.toml or an envsolve.lock).")
        return click.option("--project", type=click.Path(path_type=Path), metavar="DIR", help=help_text)(found)  # type: ignore[return-value]

    return decorate


def _project_file(given: Path | None, project: Path | None, name: str) -> Path:
    """The path a command reads (see :func:`_in_project`): ``given``, else ``name`` in ``project``,
    else in the nearest project folder, else ``name`` here (which the command then says is missing)."""
    from .paths import found

    if given is not None:
        if project is not None:
            raise SpecError([Problem("--project", "", f"{project} and {given} both name the file to use")],
                            tip="give one of them")
        return given
    if project is not None:
        if not project.is_dir():
            what = "is a file, not a folder" if project.exists() else "no such folder"
            raise SpecError([Problem("--project", "", f"{project}: {what}")],
                            tip="pass the folder that holds project.toml (or give the file itself as the argument)")
        return project / name
    path = Path(found(name))
    if path.parent != Path():
        ui.console().detail(f"project: {path.parent} (the nearest folder above this one with a project.toml "
                            "or an envsolve.lock)")
    return path


def _matrices() -> Path | None:
    """The --matrices folder, given before or after the subcommand (or ENVSOLVE_MATRICES)."""
    value = click.get_current_context().meta.get(_MATRICES_KEY)
    return value if isinstance(value, Path) else None


def _provider(*, fresh: bool = False) -> Provider:
    """The data's provider (``--matrices``, else the shipped data); from the TOML itself, no cache,
    when ``fresh``."""
    from .data import data_dir
    from .provider import load_provider

    provider = load_provider(_matrices(), fresh=fresh)
    ui.console().detail(f"matrices: {_matrices() or data_dir()} (data {provider.data_version}, {provider.digest})")
    return provider


def _progress(what: str) -> Callable[[str], None]:
    """The console's progress line, each line said as ``what: line``."""
    return lambda line: ui.console().progress(f"{what}: {line}")


def _read_spec(path: Path, provider: Provider) -> tuple[ProjectSpec, bytes]:
    from .spec import parse_spec

    text, blob = user_input(path, SPEC_CAP, NO_SPEC_TIP)
    return parse_spec(text, str(path), provider), blob


# ---------------------------------------------------------------------------- options every command shares

_MATRICES_KEY = "envsolve.matrices"


def _set_level(level: ui.Level) -> Callable[[click.Context, click.Parameter, bool], None]:
    def callback(ctx: click.Context, param: click.Parameter, on: bool) -> None:
        if on:
            ui.console().level = level

    return callback


def _set_no_color(ctx: click.Context, param: click.Parameter, on: bool) -> None:
    if on:
        ui.console().no_color()


def _set_matrices(ctx: click.Context, param: click.Parameter, value: Path | None) -> None:
    if value is not None:
        ctx.meta[_MATRICES_KEY] = value


def _shared_options(envvar: str | None) -> list[click.Option]:
    """-q, -v, --no-color and --matrices: accepted before the subcommand and after it."""
    return [
        click.Option(["-q", "--quiet"], is_flag=True, expose_value=False, callback=_set_level("quiet"),
                     help="Print only errors and the command's own output (no summaries, warnings or progress)."),
        click.Option(["-v", "--verbose"], is_flag=True, expose_value=False, callback=_set_level("verbose"),
                     help="Also say what is read: the spec, the matrices, which index, which cache."),
        click.Option(["--no-color"], is_flag=True, expose_value=False, callback=_set_no_color,
                     help="No colour (also NO_COLOR=1); colour is used only on a terminal."),
        click.Option(["--matrices"], type=click.Path(path_type=Path, file_okay=False), envvar=envvar,
                     expose_value=False, callback=_set_matrices,
                     help="Use this matrices/ folder instead of the shipped data (env ENVSOLVE_MATRICES)."),
    ]


class EnvsolveCommand(click.Command):
    """A subcommand: the shared options after its own, and the exit codes under its help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["epilog"] = "\n\n".join(x for x in (kwargs.get("epilog"), ui.EXIT_CODES) if x)
        super().__init__(*args, **kwargs)
        self.params.extend(_shared_options(None))


class EnvsolveGroup(click.Group):
    command_class = EnvsolveCommand

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        ui.reset()  # a new run: the shared options set the console as they are read
        return super().make_context(*args, **kwargs)


@click.group(cls=EnvsolveGroup, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=ui.EXIT_CODES + " Shell completion: see README (`_ENVSOLVE_COMPLETE=bash_source envsolve`).")
@click.version_option(package_name="envsolve")
def main() -> None:
    """Resolve GPU software stacks against a sourced compatibility graph."""
    from .scratch import sweep  # a SIGKILLed run's private folder (a netrc's password) goes on any command

    sweep()


for _option in _shared_options("ENVSOLVE_MATRICES"):
    main.params.append(_option)


def _click_option(o: Option) -> Callable[[F], F]:
    """The click option of one row of the lock command's option table."""
    kinds: dict[str, dict[str, Any]] = {
        "flag": {"is_flag": True},
        "path": {"type": click.Path(path_type=Path)},
        "choice": {"type": click.Choice(list(o.choices)), "show_default": True},
        "text": {},
        "multiple": {"multiple": True},
    }
    extra: dict[str, Any] = {k: v for k, v in (("metavar", o.metavar), ("envvar", o.envvar)) if v}
    return click.option(*o.names, o.dest, help=o.help, default=o.unset, **kinds[o.kind], **extra)


def _lock_options(fn: F) -> F:
    """The options of `envsolve lock`, from :data:`envsolve.lock.options.LOCK_OPTIONS`."""
    for o in reversed(LOCK_OPTIONS):
        fn = _click_option(o)(fn)
    return fn


@main.command()
@click.argument("spec_path", required=False, type=click.Path(path_type=Path))
@_lock_options
@_handles_errors
@_in_project("spec_path", "project.toml")
def lock(spec_path: Path, **chosen: Any) -> None:
    """Solve SPEC_PATH (project.toml) and write envsolve.lock (every package, with hashes)."""
    from .command import lock as lock_job
    from .voice import Voice

    provider = _provider(fresh=bool(chosen.get("check")))  # `lock --check` believes no cache
    ctx = click.get_current_context()
    typed = [dest for dest in chosen if ctx.get_parameter_source(dest) == click.core.ParameterSource.COMMANDLINE]
    console = ui.console()
    console.detail("lock replay: not consulted with -v (it answers a plain `envsolve lock` whose inputs are "
                   "unchanged); solving")
    lock_job(provider, spec_path, chosen, typed, host=_for_host,
             render=lambda data, path: _artifacts(data, path, None, None),
             voice=Voice(progress=_progress("lock"), detail=console.detail, warn=console.warn))


def _artifacts(data: Lock, lock_path: Path, out_dir: Path | None, target: str | None,
               dockerfile: bool = True) -> dict[Path, str]:
    """Every environment (or ``target``) of the lock at ``lock_path`` rendered, in memory: the
    texts by path (under ``out_dir``, else envsolve-out/ beside the lock)."""
    from .render.artifacts import render_lock

    folder = out_dir or lock_path.parent / "envsolve-out"
    check_output_dir(folder, "-o")
    ui.console().detail(f"output folder: {folder}")
    return render_lock(data, lock_path, folder, target, dockerfile=dockerfile)


def _write_artifacts(data: Lock, lock_path: Path, out_dir: Path | None, target: str | None,
                     dockerfile: bool = True) -> list[Path]:
    """Render every environment (or ``target``) of the lock; write only when all rendered, all
    together (see :func:`_artifacts`)."""
    texts = _artifacts(data, lock_path, out_dir, target, dockerfile)
    write_all(texts, tip="choose another folder with -o")
    return list(texts)


def _read_lock(lock_path: Path) -> Lock:
    from .lock import model as lockfile

    ui.console().detail(f"lock: {lock_path}")
    return lockfile.read(lock_path)


# ---------------------------------------------------------------------------- init, add, remove

@main.command(name="init")
@click.argument("folder", required=False, default=Path(), type=click.Path(path_type=Path, file_okay=False))
@click.option("--name", help="The project's name (default: the folder's).")
@click.option("--python", "python", metavar="RANGE", default=INIT_PYTHON, show_default=True,
              help='The Pythons the project supports: a range, or one release line ("3.11").')
@click.option("--host", is_flag=True, help="Describe this machine, as `envsolve detect` sees it (the default "
              "without --gpus, --platform or --driver).")
@click.option("--gpus", multiple=True, metavar="NAME", help="A GPU model or compute capability the project must "
              "run on (repeat, or separate with commas): H100, 'RTX 4090', sm_86.")
@click.option("--platform", type=click.Choice(PLATFORMS), help="The platform (default: the GPUs').")
@click.option("--driver", metavar="VERSION", help="The oldest NVIDIA driver of the fleet.")
@_handles_errors
def init_cmd(folder: Path, name: str | None, python: str, host: bool, gpus: tuple[str, ...],
             platform: str | None, driver: str | None) -> None:
    """Write a commented project.toml in FOLDER (default: here) for this machine or the hardware
    given; never over an existing one."""
    from .project import init_text, project_name
    from .spec import parse_spec

    path = folder / "project.toml"
    if path.exists() or path.is_symlink():
        raise SpecError([Problem(str(path), "", "exists; envsolve init never writes over a project")],
                        tip="change it with `envsolve add NAME` / `envsolve remove NAME`, or move it away first")
    given = {"gpus": [g.strip() for g in ",".join(gpus).split(",") if g.strip()], "platform": platform or "",
             "driver": driver or ""}
    empty = [f"--{k}" for k, v in (("gpus", gpus and not given["gpus"]), ("driver", driver == ""),
                                   ("name", name == "")) if v]
    if empty:
        raise SpecError([Problem(option, "", "is empty") for option in empty], tip="give each a value, or leave it out")
    if host and any(given.values()):
        raise SpecError([Problem("--host", "", "describes this machine: give it, or --gpus/--platform/--driver, "
                                 "not both")],
                        tip="leave out --host to write the hardware given")
    provider = _provider()
    hardware, origin = _init_hardware(provider, {k: v for k, v in given.items() if v})
    text = init_text(name or project_name(folder), python, hardware, origin)
    try:
        parse_spec(text, str(path), provider)  # a bad --gpus, --driver or --python is named, nothing written
    except SpecError as e:
        raise SpecError([Problem(_INIT_OPTIONS.get(p.where.split("[")[0], p.where), "", p.message) for p in e.problems],
                        tip="fix the options named above; nothing was written") from None
    write_all({path: text}, tip="pass a folder you can write to")
    cd = "" if folder == Path() else f"`cd {folder}`, then "
    ui.console().say(f"wrote {path}; next: {cd}`envsolve add torch` (frameworks and packages), then `envsolve sync`")


def _init_hardware(provider: Provider, given: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The [hardware] table `envsolve init` writes, and where it comes from: the options given,
    else this machine (``envsolve detect``'s table)."""
    if given:
        return given, "the hardware given to `envsolve init`"
    from .host.facts import hardware_table

    facts = _host_facts(provider)
    return (hardware_table(facts, provider),
            f"this machine, as `envsolve detect` sees it ({facts.vendor}, from {facts.source})")


# the option of `envsolve init` each key of the spec it writes comes from
_INIT_OPTIONS = {"project.name": "--name", "project.python": "--python", "hardware.gpus": "--gpus",
                 "hardware.driver": "--driver", "hardware.platform": "--platform"}


def _spec_edit_options(fn: F) -> F:
    """The options `add` and `remove` share: where the spec is, and how the lock follows."""
    for opt in reversed((
        click.option("--spec", "spec_path", type=click.Path(path_type=Path, dir_okay=False),
                     help="The project.toml (default: the project's, see --project)."),
        click.option("--frameworks-only", is_flag=True, envvar="ENVSOLVE_FRAMEWORKS_ONLY",
                     help="Lock only the frameworks (see `envsolve lock --frameworks-only`)."),
        click.option("--no-lock", is_flag=True, help="Change project.toml only; lock later."),
    )):
        fn = opt(fn)
    return fn


@main.command(name="add")
@click.argument("requirements", nargs=-1, required=True, metavar="NAME[SPEC]...")
@click.option("--pip", "kinds", flag_value="pip", multiple=True, help="Add to [packages] pip, whatever the name.")
@click.option("--conda", "kinds", flag_value="conda", multiple=True, help="Add to [packages] conda.")
@click.option("--apt", "kinds", flag_value="apt", multiple=True, help="Add to [packages] apt.")
@click.option("--target", metavar="NAME", help="A pip line for this target only (a marker of its platform).")
@_spec_edit_options
@_handles_errors
@_in_project("spec_path", "project.toml")
def add_cmd(requirements: tuple[str, ...], kinds: tuple[str, ...], target: str | None, spec_path: Path,
            frameworks_only: bool, no_lock: bool) -> None:
    """Add frameworks (to [frameworks]) and packages (to [packages] pip, or --conda/--apt), keeping
    project.toml's comments and layout; then lock. A lock that fails leaves project.toml as it was.

    \b
      envsolve add torch 'flash-attn>=2.7'
      envsolve add 'jax>=0.5' --frameworks-only"""
    from .project import added

    if len(set(kinds)) > 1:
        raise SpecError([Problem("--" + " --".join(sorted(set(kinds))), "", "say one place for the packages")],
                        tip="give one of --pip, --conda and --apt (or none: frameworks to [frameworks], the rest "
                            "to [packages] pip)")

    def change(text: str, spec: ProjectSpec) -> str:
        new, notes = added(text, requirements, kinds[0] if kinds else "auto",  # type: ignore[arg-type]
                           None if target is None else _only_target(spec, target, spec_path))
        for note in notes:
            ui.console().say(note)
        return new

    _edit(spec_path, change, lock=not no_lock, frameworks_only=frameworks_only)


@main.command(name="remove")
@click.argument("names", nargs=-1, required=True, metavar="NAME...")
@_spec_edit_options
@_handles_errors
@_in_project("spec_path", "project.toml")
def remove_cmd(names: tuple[str, ...], spec_path: Path, frameworks_only: bool, no_lock: bool) -> None:
    """Remove frameworks and packages by name from project.toml, then lock."""
    from .project import removed

    def change(text: str, _spec: ProjectSpec) -> str:
        new, missing = removed(text, names)
        if missing:
            named = ", ".join(map(repr, missing))
            raise SpecError([Problem(str(spec_path), "", f"has no framework or package named {named}")],
                            tip="`envsolve remove` takes the names as [frameworks] and [packages] write them")
        return new

    _edit(spec_path, change, lock=not no_lock, frameworks_only=frameworks_only)


def _only_target(spec: ProjectSpec, name: str, spec_path: Path) -> Target:
    """The target ``--target`` names, whose platform no other target of the spec shares (a pip
    line is limited to a target by a marker of its platform)."""
    target = next((t for t in spec.targets if t.name == name), None)
    if target is None:
        names = ", ".join(t.name for t in spec.targets)
        raise SpecError([Problem(str(spec_path), "", f"has no target {name!r} (it has: {names})")],
                        tip="pass one of those to --target")
    if others := [t.name for t in spec.targets if t.platform == target.platform and t is not target]:
        raise SpecError([Problem("--target", "", f"{name}: {', '.join(others)} runs on {target.platform} too, and "
                                 "a pip line is limited to a target by a marker of its platform")],
                        tip="add the package to every target (leave out --target)")
    return target


def _edit(spec_path: Path, change: Callable[[str, ProjectSpec], str], *, lock: bool, frameworks_only: bool) -> None:
    """Change the spec at ``spec_path`` (its text checked by the spec's parser before it is
    written), then lock it; a lock that fails puts the spec's old bytes back."""
    from .command import lock as lock_job
    from .spec import parse_spec
    from .voice import Voice

    provider = _provider()
    spec, blob = _read_spec(spec_path, provider)
    bom = "\ufeff" if blob.startswith(b"\xef\xbb\xbf") else ""  # kept as it was
    text = change(blob.decode("utf-8")[len(bom):], spec)
    parse_spec(text, str(spec_path), provider)  # what is written is a spec the parser takes
    console = ui.console()
    tip = "make the file (or its folder) writable, or pass another project with --project"
    if (bom + text).encode() == blob:
        console.say(f"{spec_path}: already as asked, unchanged")
    else:
        write_all({spec_path.resolve(): bom + text}, tip=tip)
        console.say(f"changed {spec_path}")
    if not lock:
        return
    chosen = {o.dest: o.unset for o in LOCK_OPTIONS} | {"frameworks_only": frameworks_only}
    try:
        lock_job(provider, spec_path, chosen, ["frameworks_only"] if frameworks_only else [], host=_for_host,
                 render=lambda data, path: _artifacts(data, path, None, None),
                 voice=Voice(progress=_progress("lock"), detail=console.detail, warn=console.warn))
    except BaseException:
        if (bom + text).encode() != blob:
            write_all({spec_path.resolve(): blob.decode("utf-8")}, tip=tip)  # the same bytes: they decoded above
            console.warn(f"{spec_path}: put back as it was, since the lock failed")
        raise


@main.command(name="render")
@click.argument("lock_path", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, file_okay=False),
              help="Folder for DIR/<environment>/ (default: envsolve-out/ beside the lock).")
@click.option("--target", help="Render only this environment.")
@click.option("--no-dockerfile", is_flag=True, help="Leave the Dockerfile out (for conda packages, which it "
              "cannot install).")
@_handles_errors
@_in_project("lock_path", "envsolve.lock")
def render_cmd(lock_path: Path, output: Path | None, target: str | None, no_dockerfile: bool) -> None:
    """Write Dockerfile, requirements.txt, environment.yml and smoke_test.py per environment."""
    from .render.artifacts import host_notes, unpinned_warning

    data = _read_lock(lock_path)
    for path in _write_artifacts(data, lock_path, output, target, dockerfile=not no_dockerfile):
        ui.console().say(f"wrote {path}")
    for note in host_notes(data, target):
        ui.console().say(note)
    if not no_dockerfile and data.scope == "full":  # a frameworks-only lock pins no file, no digest either
        for env in (e for e in data.environments if target in (None, e.name)):
            if warning := unpinned_warning(env):
                ui.console().warn(warning)


def _image_tag(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """``--tag``: an image name[:tag] by the one rule of image references (``domain.image_problem``),
    so nothing else reaches an engine's command line."""
    from .domain import image_problem

    if value is not None and (why := image_problem(value, digest=False)) is not None:
        raise click.BadParameter(why)
    return value


@main.command(name="site")
@click.option("-o", "--output", type=click.Path(path_type=Path), default=Path("envsolve-site"), show_default=True,
              help="Folder of the site (new, empty, or a site envsolve wrote before).")
@_handles_errors
def site_cmd(output: Path) -> None:
    """Write the compatibility explorer: a static site (selector, GPU, release and driver pages)."""
    from .site.build import build_site

    written = build_site(_provider(), output)
    ui.console().say(f"wrote {len(written)} files into {output}/; open {output / 'index.html'}")


@main.command(name="build")
@click.argument("lock_path", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--output", type=click.Path(path_type=Path, file_okay=False),
              help="Folder the build contexts are rendered into (default: envsolve-out/ beside the lock).")
@click.option("--target", help="Build only this environment.")
@click.option("--tag", callback=_image_tag, help="Image name[:tag] (default: PROJECT-ENVIRONMENT:<lock digest>); "
              "with several environments each gets -ENVIRONMENT appended.")
@click.option("--engine", type=click.Choice(["docker", "podman", "buildah"]),
              help="Default: docker with BuildKit when its daemon answers, else podman, else buildah.")
@click.option("--platform", type=click.Choice(LINUX_PLATFORMS),
              help="The image's platform (default: the environment's; images run Linux).")
@click.option("--push", is_flag=True, help="Push each image after it is built (and checked).")
@click.option("--smoke", is_flag=True, help="Run the smoke test: at build time for CPU images, in a "
              "container with the GPUs for GPU images.")
@click.option("--print", "print_only", is_flag=True, help="Print the engine commands instead of running them.")
@_handles_errors
@_in_project("lock_path", "envsolve.lock")
def build_cmd(lock_path: Path, output: Path | None, target: str | None, tag: str | None, engine: str | None,
              platform: str | None, push: bool, smoke: bool, print_only: bool) -> None:
    """Render and build each environment's image; report image, digest, size, seconds and smoke result."""
    import shlex

    from .render import build as builder

    data = _read_lock(lock_path)
    envs = builder.buildable(data, target, ui.console().warn)  # Linux only: a Windows or macOS one is refused
    _write_artifacts(data, lock_path, output, target)
    from .spec import url_credentials

    options = builder.BuildOptions(root=output or lock_path.parent / "envsolve-out", tag=tag,
                                   platform=platform or "", smoke=smoke, push=push,
                                   credentials=url_credentials(lock_path.parent / data.spec))
    if print_only:
        ui.console().out(builder.PRINT_NOTE)
        for argv in builder.commands(builder.engine_to_print(engine), data, envs, options):
            ui.console().out(shlex.join(argv))
        return
    found = builder.find_engine(engine)
    ui.console().detail(f"engine: {found.name} ({found.path})")
    results = builder.build_all(found, data, envs, options, lambda line: ui.console().say(line, err=True),
                                progress=_progress("build"))
    ui.console().done()
    ui.console().out(builder.summary(results))
    if (failed := builder.failure(results)) is not None:
        raise failed


class _MatrixCommand(EnvsolveCommand):
    """`envsolve matrix`: its help lists the keys of a matrix file, from the parser's own table."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        from .matrix.parse import keys

        with formatter.section("Keys of a matrix file (images.toml)"):
            formatter.write_dl(keys())
        super().format_epilog(ctx, formatter)


@main.command(name="matrix", cls=_MatrixCommand)
@click.argument("matrix_path", required=False, type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "github", "bake", "markdown", "html", "json"]),
              default="table", show_default=True,
              help="markdown: a summary for $GITHUB_STEP_SUMMARY; html: one page, cells coloured by outcome.")
@click.option("--max-jobs", type=click.IntRange(min=1), help="Split --format github into shards of N jobs.")
@click.option("--shard", type=click.IntRange(min=1), help="With --max-jobs: print only shard K (from 1).")
@click.option("--render", "render_dir", type=click.Path(path_type=Path, file_okay=False),
              help="Write each valid cell's artifacts under DIR/<cell id>/.")
@click.option("--check", is_flag=True, help="Exit 1 when an [[include]] cell is invalid.")
@click.option("--check-images", type=click.Path(path_type=Path, dir_okay=False),
              help="Validate existing images described in a JSON file instead.")
@click.option("--workflow", "workflow_path", type=click.Path(path_type=Path, dir_okay=False),
              help="Also write a GitHub Actions workflow that checks, builds and smoke-tests the matrix.")
@click.option("--pages", is_flag=True, help="With --workflow: the workflow also publishes the compatibility "
              "explorer (`envsolve site`) and this matrix's HTML report to GitHub Pages (default branch).")
@click.option("--max-cells", type=click.IntRange(min=1), default=MATRIX_CELLS_CAP, show_default=True,
              help="Refuse, before solving, a matrix of more cells than N (the product of its axes).")
@_handles_errors
def matrix_cmd(matrix_path: Path | None, fmt: str, max_jobs: int | None, shard: int | None,
               render_dir: Path | None, check: bool, check_images: Path | None, workflow_path: Path | None,
               pages: bool, max_cells: int) -> None:
    """Solve every cell of an image matrix; print valid and pruned cells, GitHub or bake output.

    MATRIX_PATH is a TOML file (images.toml): a [matrix] table of axes, each a list of values, whose
    product is the cells, with optional [[include]], [[exclude]] and [image] (keys below).
    """
    from .matrix import formats
    from .matrix.cells import check_includes
    from .matrix.parse import check_size, parse_matrix

    formats.check_shard(max_jobs, shard)
    if pages and workflow_path is None:
        raise SpecError([Problem("--pages", "", "publishes from the generated workflow: it needs --workflow PATH")],
                        tip="add --workflow .github/workflows/images.yml, or leave --pages out")
    _check_matrix_outputs(workflow_path, render_dir)
    provider = _provider()
    if check_images is not None:
        _check_images(provider, check_images, fmt)
        return
    if matrix_path is None:
        raise SpecError([Problem("matrix", "", "no matrix file given")],
                        tip="run `envsolve matrix images.toml` (or --check-images images.json)")
    ms = parse_matrix(_read_text(matrix_path), str(matrix_path), provider)
    check_size(ms, max_cells)
    tally = formats.Tally(keep_valid=render_dir is not None)  # every format streams the cells
    for piece in _matrix_pieces(provider, ms, fmt, render_dir, max_jobs, shard, tally):
        ui.console().out(piece, nl=False)
    if warning := formats.too_many_jobs(fmt, tally.valid, max_jobs):
        ui.console().warn(warning)
    if render_dir is not None:
        _render_cells(provider, ms, tally.kept, render_dir)
    if workflow_path is not None:
        _write_workflow(ms, matrix_path, workflow_path, pages)
    if check and (invalid := check_includes(tally.bad_includes)):
        raise CheckFailed(invalid, tip="change the include, or the data it needs")


def _matrix_pieces(provider: Provider, ms: MatrixSpec, fmt: str, render_dir: Path | None, max_jobs: int | None,
                   shard: int | None, tally: Tally) -> Iterator[str]:
    """What `envsolve matrix` prints of the cells, in pieces: a large matrix's JSON by forked
    workers (:mod:`envsolve.matrix.workers`), anything else as one process solves it."""
    from .matrix import formats, workers
    from .matrix.cells import iter_cells
    from .matrix.workflow import RENDER_DIR

    n = workers.workers_for(ms)
    if fmt == "json" and render_dir is None and n > 1:
        return workers.json_pieces(provider, ms, RENDER_DIR, n, tally)
    cells = tally.counted(iter_cells(provider, ms, ms.iter_cells()))
    return formats.streamed(fmt, ms, cells, str(render_dir or RENDER_DIR), max_jobs=max_jobs, shard=shard)


def _check_matrix_outputs(workflow_path: Path | None, render_dir: Path | None) -> None:
    """Refuse, before any work, a --workflow or --render path that cannot take the output."""
    if workflow_path is not None:
        check_output(workflow_path, "--workflow", folder_made=True)  # .github/workflows is made as render's folder
    if render_dir is not None:
        check_output_dir(render_dir, "--render")


def _write_workflow(ms: MatrixSpec, matrix_path: Path, out: Path, pages: bool = False) -> None:
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

    root = _matrices()
    text = workflow(ms, matrix_file=relative(matrix_path, "the matrix file"), version=__version__,
                    command=f"envsolve matrix {relative(matrix_path, 'the matrix file')} --workflow {out.as_posix()}"
                            + " --pages" * pages,
                    matrices_dir=relative(root, "the --matrices folder") if root else "", pages=pages)
    write_all({out: text}, tip="choose another path with --workflow", folder=out.parent, option="--workflow")
    ui.console().say(f"wrote {out}", err=True)


def _read_text(path: Path, cap: int = MATRIX_CAP) -> str:
    return user_input(path, cap, "pass the path of a UTF-8 TOML or JSON file")[0]


def _render_cells(provider: Provider, ms: MatrixSpec, results: list[CellResult], root: Path) -> None:
    """Each valid cell's artifacts under root/<cell id>/, through the renderer."""
    from .config import index_urls
    from .lock import model as lockfile
    from .render.artifacts import render_environment

    urls, warnings = index_urls({})
    for w in warnings:
        ui.console().warn(w)
    texts = {}
    valid = [(r.cell, r.resolution) for r in results if r.resolution is not None]
    for k, (cell, resolution) in enumerate(valid, 1):
        ui.console().progress(f"matrix: rendering cell {k} of {len(valid)} ({cell.id})")
        data = lockfile.build(project=ms.repository, spec_name=Path(ms.path).name, spec_bytes=ms.path.encode(),
                              data_version=provider.data_version, data_digest=provider.digest,
                              resolutions=[resolution], urls=urls)
        for name, text in render_environment(data, data.environments[0]).items():
            texts[root / cell.id / name] = text
    ui.console().done()
    ui.console().detail(f"output folder: {root}")
    write_all(texts, tip="choose another folder with --render", folder=root, option="--render")
    ui.console().say(f"rendered {len(valid)} cells under {root}", err=True)


def _check_images(provider: Provider, path: Path, fmt: str) -> None:
    from .matrix.images import check_images, images_of, verdicts_text

    verdicts = check_images(provider, images_of(_read_text(path, IMAGES_CAP), str(path)), str(path))
    ui.console().out(verdicts_text(verdicts, fmt), nl=False)
    failing = [v for v in verdicts if not v.ok]
    if failing:
        raise CheckFailed(f"{len(failing)} of {len(verdicts)} images would fail",
                     tip="rebuild them from a cell that `envsolve matrix` lists as valid")


@main.command()
@click.argument("spec_path", required=False, type=click.Path(path_type=Path))
@click.option("--all", "verbose", is_flag=True, help="List every rejected alternative.")
@click.option("--host", is_flag=True, help="Explain what `envsolve lock --host` chooses: the spec's default target "
              "made from this machine.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: stable keys for scripts (see README, Machine-readable output).")
@_handles_errors
@_in_project("spec_path", "project.toml")
def explain(spec_path: Path, verbose: bool, host: bool, fmt: str) -> None:
    """Say why each choice was made and which alternatives were rejected, and why."""
    from .solve.report import ExplainReporter, answers

    provider = _provider()
    spec, _ = _read_spec(spec_path, provider)
    if host:
        spec = _for_host(spec, provider)
    steered, steers = _explain_steered(spec, spec_path, provider)
    rep = ExplainReporter()
    got = answers(provider, steered, rep)
    _warn_end_of_life(provider, steered, [a for _, a in got if not isinstance(a, Unsatisfiable)])
    explanation = rep.explanation(got, spec.python_raw, [st.package for st in steers if st.pythons],
                                  [n for st in steers for n in st.notes()])
    if fmt == "json":
        ui.console().out(json.dumps(explanation.to_dict(verbose), indent=2))
    else:
        ui.console().out(explanation.text(verbose), nl=False)
    if (failed := next((a for _, a in got if isinstance(a, Unsatisfiable)), None)) is not None:
        raise failed


def _warn_end_of_life(provider: Provider, spec: ProjectSpec, resolutions: list[Resolution]) -> None:
    """The lock's warning for a base image whose tags the registry deletes, said by ``explain`` too."""
    from .lock.job import today
    from .solve.images import end_of_life_warnings

    for w in end_of_life_warnings(provider, spec, resolutions, today()):
        ui.console().warn(w)


def _explain_steered(spec: ProjectSpec, spec_path: Path, provider: Provider
                     ) -> tuple[ProjectSpec, tuple[Steer, ...]]:
    """The spec as the lock solves it: narrowed by what ``[packages] pip`` asks (from the cache
    first), and those asks; a warning, and the spec as written, when the index cannot say."""
    from .config import index_urls
    from .lock.job import Options, steered

    urls, _warnings = index_urls(dict(spec.indexes), spec_path=str(spec_path))
    spec, steers, warnings = steered(spec, provider, urls, Options(frameworks_only=True))
    for w in warnings:
        ui.console().warn(w)
    return spec, steers or ()


@main.command()
@click.option("--around", help="Only the neighbourhood of nodes whose name contains this "
              "(e.g. sm_90, H100, torch==2.7.1).")
@click.option("--depth", type=click.IntRange(min=0), default=1, show_default=True, help="Hops around --around.")
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
    ui.console().out(to_dot(sub) if fmt == "dot" else to_json(sub), nl=False)


def _index_client(index_url: str | None, cache_dir: Path | None, no_cache: bool, timeout: float,
                  retries: int, backoff: float, progress: Callable[[str], None]) -> Any:
    """The package-index client of `refresh` and `data --verify` (URL from pip's settings by default)."""
    from .config import check_url, pip_index_url
    from .index.client import IndexClient
    from .paths import cache_dir as default_cache_dir

    url = index_url or pip_index_url()
    if not url:
        raise SpecError([Problem("--index-url", "", "no package index is configured")],
                        tip="pass --index-url URL or set PIP_INDEX_URL")
    if index_url and (why := check_url(index_url)) is not None:
        raise SpecError([Problem("--index-url", "", why)], tip="pass the simple-API root of an index, http(s)")
    cache = None if no_cache else (cache_dir or default_cache_dir())
    client = IndexClient(url, cache_dir=cache, timeout=timeout, retries=retries, backoff=backoff, progress=progress,
                         warn=ui.console().warn)
    where = "--index-url" if index_url else "pip's configuration (PIP_INDEX_URL, pip.conf, or pip's default)"
    ui.console().detail(f"index: {client.shown_url} (from {where}); timeout {timeout:g} s, {retries} retries")
    ui.console().detail(f"cache: {cache / 'index' if cache is not None else 'none (--no-cache)'}")
    return client


def _finite(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """A number of seconds: ``nan`` passes click's range checks, and no request waits for it."""
    import math

    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a number of seconds")
    return value


def _index_options(fn: F) -> F:
    """--index-url, --cache-dir, --no-cache, --timeout, --retries, --backoff (refresh, data --verify)."""
    for opt in reversed((
        click.option("--index-url", metavar="URL", help="Simple-API root of the index to read "
                     "(default: PIP_INDEX_URL, else pip's configuration, else pip's default)."),
        click.option("--cache-dir", type=click.Path(path_type=Path, file_okay=False), envvar="ENVSOLVE_CACHE_DIR",
                     help="Cache of index answers (default: ~/.cache/envsolve; env ENVSOLVE_CACHE_DIR)."),
        click.option("--no-cache", is_flag=True, help="Neither read nor write the cache."),
        click.option("--timeout", type=click.FloatRange(min=0.01, max=3600), default=policy.TIMEOUT, show_default=True,
                     callback=_finite,
                     help="Seconds to wait for each answer."),
        click.option("--retries", type=click.IntRange(min=0), default=policy.RETRIES, show_default=True,
                     help="Retries of a request that failed or answered "
                          f"{'/'.join(map(str, sorted(policy.RETRY_STATUS)))}; each is a warning saying when "
                          "it tries again."),
        click.option("--backoff", type=click.FloatRange(min=0, max=600), default=policy.BACKOFF, show_default=True,
                     callback=_finite,
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
    from .data import data_dir, load, load_dir, low_confidence

    root = _matrices() or data_dir()
    m = load_dir(root) if validate else load(root)  # --validate checks the TOML itself, never a compiled cache
    ui.console().detail(f"matrices: {root} (data {m.data_version}, {m.digest})")
    if validate:
        ui.console().out(f"{root}: valid (data {m.data_version}, {m.digest})")
        return
    if verify:
        from .verify import checked_packages, report_text
        from .verify import verify as verify_rows

        wanted = checked_packages(packages)
        client = _index_client(index_url, cache_dir, no_cache, timeout, retries, backoff, _progress("verify"))
        report = verify_rows(client, m, wanted, client.shown_url, progress=_progress("verify"))
        ui.console().done()
        ui.console().detail(client.answered())
        ui.console().out(report_text(report), nl=False)
        if report.mismatches:
            raise CheckFailed(f"{len(report.mismatches)} fact(s) in {root} disagree with the index",
                              tip="correct the rows named above from their sources, then run "
                                  "`envsolve data --verify` again")
        return
    ui.console().out(f"data version {m.data_version} ({m.digest})")
    kinds = {"GPU models": m.gpus, "architectures": m.archs, "CUDA toolkits": m.toolkits,
             "driver branches": m.branches, "cuDNN releases": m.cudnn, "ROCm releases": m.rocm,
             "framework releases": m.releases, "framework builds": m.builds, "base images": m.images}
    for kind, rows in kinds.items():
        ui.console().out(f"  {kind}: {len(rows)}")
    low, total = low_confidence(m)
    ui.console().out(f"  rows marked confidence = low: {low} of {total} ({100 * low / max(total, 1):.1f}%)")
    _echo_newest_packages(m)


def _host_facts(provider: Provider) -> HostFacts:
    from .host.detect import detect
    from .host.facts import complete

    return complete(detect(), provider)


def _for_host(spec: ProjectSpec, provider: Provider) -> ProjectSpec:
    """The spec with its default target describing this machine (see :func:`envsolve.host.target.for_host`)."""
    from .host.facts import hardware_table
    from .host.target import for_host

    facts = _host_facts(provider)
    for w in facts.warnings:
        ui.console().warn(f"host: {w}")
    host, warnings = for_host(spec, facts, provider)
    for w in warnings:
        ui.console().warn(f"host: {w}")
    ui.console().say("host: " + ", ".join(f"{k} = {v}" for k, v in hardware_table(facts, provider).items()), err=True)
    return host


@main.command(name="detect")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "toml"]), default="text", show_default=True,
              help="toml prints a [hardware] table to paste into project.toml.")
@_handles_errors
def detect_cmd(fmt: str) -> None:
    """Describe this machine's accelerators: vendor, driver, the CUDA it runs, each GPU."""
    import tomli_w

    from .host.facts import describe, hardware_table, unknown_named

    provider = _provider()
    facts = _host_facts(provider)
    if fmt == "json":
        ui.console().out(json.dumps(facts.to_dict(), indent=2))
    elif fmt == "toml":
        driver = f", driver {facts.driver}" if facts.driver else ""
        ui.console().out(f"# {facts.vendor} host, from {facts.source}{driver}")
        ui.console().out(tomli_w.dumps({"hardware": hardware_table(facts, provider)}), nl=False)
    else:
        ui.console().out(describe(facts, provider))
    for w in (*facts.warnings, *unknown_named(facts, provider)):
        ui.console().warn(w)


@main.command()
@click.argument("lock_path", required=False, type=click.Path(path_type=Path))
@click.option("--target", help="Check this environment of the lock (default: the one the venv was synced "
                               "for, else the one for this machine).")
@click.option("--python", "python", type=click.Path(path_type=Path), metavar="PATH",
              help="Check the packages of this Python: an executable or a venv's folder (default: the .venv beside "
                   "the lock, else the Python envsolve runs in).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="json: stable keys for scripts (see README, Machine-readable output).")
@_handles_errors
@_in_project("lock_path", "envsolve.lock")
def doctor(lock_path: Path, target: str | None, python: Path | None, fmt: str) -> None:
    """Check this machine (or container) against a lock: driver, GPUs, the packages of the lock's venv, Docker."""
    from .errors import LockError
    from .host.detect import docker_tools, installed_versions, python_site
    from .host.doctor import Checkup, Chosen, Interpreter, check, distributions, looked_for, pick_environment
    from .lock import model as lockfile
    from .paths import venv_python
    from .sync import MARKER, Request, current

    data = lockfile.read(lock_path)
    provider = _provider()
    facts = _host_facts(provider)
    venv = Request(lock_path=lock_path).venv_path  # where `envsolve sync` puts the lock's venv
    chosen: Chosen = "--python" if python is not None else "venv" if venv_python(venv).exists() else "envsolve"
    if chosen == "envsolve" and venv.is_dir():
        ui.console().warn(f"{venv} beside the lock is no venv (it has no {venv_python(venv).relative_to(venv)}): "
                          "checking the Python envsolve runs in; `envsolve sync` makes the venv")
    site = (python_site(python) if python is not None else python_site(None) if chosen == "envsolve" else
            python_site(venv, tip="the doctor checks the .venv beside the lock: make it again (remove it, then "
                                  "`envsolve sync`), or pass --python PATH"))
    synced = current(data, Path(site.prefix), None)  # the environment a sync put there, for this lock as it is
    env = pick_environment(data, facts, target) if target is not None or synced is None else synced
    if env is None:
        names = ", ".join(e.name for e in data.environments)
        raise LockError(f"{lock_path}: has no environment {target!r} (it has: {names})",
                        tip="pass one of those to --target, or leave --target out")
    interpreter = Interpreter(path=site.path, version=site.version, chosen=chosen, own=site.own,
                              marker=(Path(site.prefix) / MARKER).is_file(), synced=synced.name if synced else "")
    full = data.scope == "full"
    installed = (looked_for(env, site.distributions, interpreter) if full else
                 installed_versions(distributions(env, provider), site))
    findings = check(env, facts, provider, installed=installed, tools=docker_tools(), python=interpreter, full=full)
    checkup = Checkup(lock=str(lock_path), environment=env.name, facts=facts, installed=installed,
                      findings=tuple(findings), python=interpreter)
    if fmt == "json":
        ui.console().out(json.dumps(checkup.to_dict(), indent=2))
    else:
        for line in checkup.text_lines():
            ui.console().out(line)
    if checkup.fails:
        raise CheckFailed(f"{checkup.fails} check(s) failed, {checkup.warns} warning(s)",
                          tip="apply the fixes above, then run `envsolve doctor` again")


def _echo_newest_packages(m: Any) -> None:
    """The newest framework, companion, CUDA toolkit and cuDNN release the data knows (`envsolve data`)."""
    from .domain import COMPANIONS, FRAMEWORKS
    from .refresh import known_newest

    for name in (*FRAMEWORKS, *COMPANIONS):
        if newest := known_newest(m, name):
            ui.console().out(f"  newest {name}: {newest}")
    if m.toolkits:
        ui.console().out(f"  newest CUDA toolkit: {max(m.toolkits, key=lambda t: t.version).version}")
    for major in sorted({c.cuda_major for c in m.cudnn}):
        ui.console().out(f"  newest cuDNN for CUDA {major}: "
                   f"{max((c for c in m.cudnn if c.cuda_major == major), key=lambda c: c.version).version}")


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
    import contextlib
    import datetime

    from .data import data_dir
    from .files import folder_lock

    version = data_version or datetime.date.today().isoformat()
    try:
        datetime.date.fromisoformat(version)
    except ValueError:
        raise SpecError([Problem("--data-version", version, "is not a date such as 2026-11-22")]) from None
    root = _matrices() or data_dir()
    ui.console().detail(f"matrices: {root}")
    client = _index_client(index_url, cache_dir, no_cache, timeout, retries, backoff, _progress("refresh"))
    writes = not diff_only and root.is_dir()  # (a missing folder is load_dir's error)
    with folder_lock(root) if writes else contextlib.nullcontext():  # --write: runs take turns
        _refresh(client, root, packages, diff_only, exit_code, version)


def _refresh(client: Any, root: Path, packages: tuple[str, ...], diff_only: bool, exit_code: bool,
             version: str) -> None:
    """`envsolve refresh` once the index is set: survey, print, and write or say what is new."""
    from .curate import write_rows
    from .data import load_dir
    from .refresh import DEFAULT_PACKAGES, plan_text, survey

    plan = survey(client, load_dir(root), packages or DEFAULT_PACKAGES, _progress("refresh"))
    ui.console().done()
    ui.console().detail(client.answered())
    ui.console().out(plan_text(plan), nl=False)
    for w in plan.warnings:
        ui.console().warn(w)
    if not diff_only:
        written = write_rows(plan.rows, root, version)
        for line in [f"wrote {path}" for path in written] or ["nothing to write"]:
            ui.console().say(line)
        return
    if plan.rows:
        ui.console().say(f"{len(plan.rows)} new row(s); run `envsolve refresh --write` to add them")
    if exit_code and len(plan.rows) + plan.changed:
        raise CheckFailed(f"the index has {len(plan.rows)} new row(s) and {plan.changed} change(s) for {root}",
                          tip="run `envsolve refresh --write` to add the new rows; correct changed rows by hand")



# ---------------------------------------------------------------------------- sync and run


def _talk() -> Voice:
    """How `sync` and `run` talk: through this run's console."""
    from .voice import Voice

    console = ui.console()

    def said(line: str) -> None:  # what sync says is a result: the step it ends is over
        console.done()
        console.say(line)

    return Voice(say=said, warn=console.warn, progress=console.progress)


def _sync_options(fn: F) -> F:
    """The options `sync` and `run` share."""
    for opt in reversed((
        click.option("--target", help="The environment of the lock (default: the one for this machine, as "
                     "`envsolve doctor` picks it)."),
        click.option("--venv", type=click.Path(path_type=Path, dir_okay=True), help="The virtual environment "
                     "(default: .venv beside the lock)."),
        click.option("--force", is_flag=True, help="Install even when the host checks fail (wrong GPU, driver "
                     "too old)."),
        click.option("--frozen", is_flag=True, help="Do not check that the lock is current against its spec."),
    )):
        fn = opt(fn)
    return fn


@main.command(name="sync")
@click.argument("lock_path", required=False, type=click.Path(path_type=Path))
@_sync_options
@click.option("--smoke", is_flag=True, help="Then run the environment's smoke test with the venv's Python.")
@_handles_errors
@_in_project("lock_path", "envsolve.lock")
def sync_cmd(lock_path: Path, target: str | None, venv: Path | None, force: bool, frozen: bool,
             smoke: bool) -> None:
    """Make a venv hold exactly one environment of the lock: its Python (uv installs it when
    missing), every package at its locked version from its locked index, hashes checked, nothing
    else. Refuses a stale lock and a host the environment cannot serve (see `envsolve doctor`)."""
    from .sync import Request, sync

    provider = _provider()
    sync(Request(lock_path=lock_path, target=target, venv=venv, force=force, frozen=frozen, smoke=smoke),
         provider, lambda: _host_facts(provider), _talk())


@main.command(name="run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--lock", "lock_path", type=click.Path(path_type=Path, dir_okay=False),
              help="The lock file (default: envsolve.lock of the project, see --project).")
@_sync_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
@_handles_errors
@_in_project("lock_path", "envsolve.lock")
def run_cmd(lock_path: Path, target: str | None, venv: Path | None, force: bool, frozen: bool,
            command: tuple[str, ...]) -> None:
    """Run COMMAND in the synced environment (its bin first on PATH, VIRTUAL_ENV set), syncing
    first when the venv is missing or was synced from another lock; exit with COMMAND's status.

    \b
      envsolve run -- python train.py --epochs 3
      envsolve run --lock gpu/envsolve.lock --target cuda -- pytest -q"""
    from functools import cache

    from .sync import Request, run

    request = Request(lock_path=lock_path, target=target, venv=venv, force=force, frozen=frozen)
    provider = cache(_provider)  # read only when a sync is needed, then once
    sys.exit(run(request, command, provider, lambda: _host_facts(provider()), _talk()))


if __name__ == "__main__":  # pragma: no cover
    main()
