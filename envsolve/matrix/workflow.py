"""`envsolve matrix --workflow PATH`: a GitHub Actions workflow that validates and builds an image
matrix in CI. Pure: the text only; the CLI writes it.

Jobs: ``solve`` installs this very envsolve version, writes the Markdown summary, fails when an
``[[include]]`` cell became impossible (``--check``), renders every valid cell and hands the
``strategy.matrix`` JSON to ``build`` (one job per valid cell, Buildx with the GitHub Actions
cache; CPU cells first build the ``smoke`` stage, which runs the smoke test at build time; the
image is pushed from the default branch only). When the matrix names GPUs, ``smoke-nvidia`` /
``smoke-amd`` run each GPU cell's smoke test on a self-hosted runner labelled ``gpu`` and the GPU's
label (:func:`runner_label`), one job per cell and GPU, with the run flags of
:func:`envsolve.domain.gpu_run_flags` (a Jetson cell, one whose row names its ``jetpack``, with the
``nvidia`` runtime).

With ``pages`` (``--pages``), ``site`` builds the compatibility explorer (``envsolve site``) with
the matrix's HTML report as ``matrix.html`` beside it, and ``pages`` publishes them to GitHub
Pages, from the default branch only (``pages: write`` and ``id-token: write`` in that job alone).

Safety: actions pinned by commit (``actions.toml``), ``contents: read`` at the top and
``packages: write`` only where GHCR is pushed to, ``persist-credentials: false``, and nothing from
the event or the matrix is put into a ``run:`` script: values reach scripts through ``env:``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from ..domain import (
    ACCELERATOR,
    DEFAULT_PLATFORM,
    GITHUB_RUNNER,
    PLATFORMS,
    VENDORS,
    Platform,
    Vendor,
    gpu_run_flags,
    os_of,
    registry_of,
)
from ..errors import MatrixError, Problem, Problems
from ..tables import parse_toml
from . import formats
from .parse import MatrixSpec

__all__ = ["ACTIONS_FILE", "Action", "RENDER_DIR", "load_actions", "runner_label", "workflow"]

ACTIONS_FILE = "actions.toml"
RENDER_DIR = "envsolve-matrix"
PYTHON = "3.12"  # the Python the solve job runs envsolve on
_SHA = re.compile(r"[0-9a-f]{40}")
_KEYS = ("name", "tag", "commit", "source")
_NEEDED = ("actions/checkout", "actions/setup-python", "actions/upload-artifact", "actions/download-artifact",
           "docker/setup-qemu-action", "docker/setup-buildx-action", "docker/login-action",
           "docker/build-push-action", "actions/upload-pages-artifact", "actions/deploy-pages")
SITE_DIR = "envsolve-site"  # the folder the site job builds and publishes
_PUBLISH = "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"
# How a smoke job runs a cell's image, by vendor: (step name, its `if:`, on a Jetson?), the last
# step unconditional for AMD; a Jetson cell's github row names its JetPack (formats.row)
_SMOKE_RUNS: dict[str, tuple[tuple[str, str, bool], ...]] = {
    "nvidia": (("smoke test on the Jetson (its nvidia runtime)", "${{ matrix.jetpack }}", True),
               ("smoke test on the GPU", "${{ !matrix.jetpack }}", False)),
    "amd": (("smoke test on the GPU", "", False),),
    "intel": (("smoke test on the GPU", "", False),),
}
# Whose GPUs self-hosted runners test, by the OS of the cell: Linux cells in a container, Windows
# cells natively (no ROCm on Windows, no GPU builds for Windows on Arm). Apple's GPU is tested on
# GitHub's macOS runners (Apple silicon), with the CPU cells of Windows and macOS.
_SELF_HOSTED: dict[str, tuple[Vendor, ...]] = {"linux": ("nvidia", "amd", "intel"), "windows": ("nvidia", "intel")}
_HOSTED_VENDORS = ("cpu", "apple")  # the cells of Windows and macOS that GitHub's own runners can test
_LINUX = 'startswith("linux/")'  # jq: a row's platform is Linux (then its cell has an image)


class Action(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    tag: str
    commit: str
    source: str

    @property
    def uses(self) -> str:
        return f"{self.name}@{self.commit} # {self.tag}"


def load_actions(text: str | None = None, path: str = f"envsolve/matrix/{ACTIONS_FILE}") -> dict[str, Action]:
    """The pinned actions, by name; every problem in the file at once (a :class:`MatrixError`)."""
    if text is None:
        from importlib.resources import files

        text = files(__package__).joinpath(ACTIONS_FILE).read_text(encoding="utf-8")
    try:
        data = parse_toml(text)
    except ValueError as e:  # tomllib's TOMLDecodeError (see tables.parse_toml)
        raise MatrixError([Problem(path, "", f"is not valid TOML: {e}")]) from None
    problems = Problems(path)
    rows = data.get("action", [])
    found = (_action(problems, f"action[{i}]", row) for i, row in enumerate(rows if isinstance(rows, list) else []))
    out = {a.name: a for a in found if a is not None}
    for name in _NEEDED:
        if name not in out:
            problems.bad("action", f"no row for {name}, which the workflow uses")
    problems.raise_if_any(MatrixError, tip="fix the shipped actions.toml (each row: name, tag, commit, source)")
    return out


def _action(problems: Problems, where: str, row: Any) -> Action | None:
    """One ``[[action]]`` row, or None with what is wrong with it added to ``problems``."""
    if not isinstance(row, dict):
        problems.bad(where, "must be a table")
        return None
    for key in sorted(set(row) - set(_KEYS)):
        problems.bad(f"{where}.{key}", "unknown key (allowed: name, tag, commit, source)")
    missing = [k for k in _KEYS if not isinstance(row.get(k), str) or not row[k]]
    if missing:
        problems.bad(where, f"missing or not a string: {', '.join(missing)}")
        return None
    if not _SHA.fullmatch(row["commit"]):
        problems.bad(f"{where}.commit", f"{row['commit']!r} is not a full 40-hex commit SHA")
        return None
    return Action(name=row["name"], tag=row["tag"], commit=row["commit"], source=row["source"])


def runner_label(gpu_name: str) -> str:
    """The runner label of a GPU: its name in lower case, runs of other characters as ``-``
    (``RTX 5090`` -> ``rtx-5090``, ``sm_90`` -> ``sm-90``)."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def _q(text: str) -> str:
    """A YAML scalar: JSON's double-quoted string is valid YAML."""
    return json.dumps(text)


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, indent: int, text: str) -> None:
        self.lines.append(" " * indent + text if text else "")

    def block(self, indent: int, *texts: str) -> None:
        """Several lines at one indent."""
        for text in texts:
            self(indent, text)

    def uses(self, indent: int, action: Action, name: str, with_: dict[str, str], if_: str = "") -> None:
        self(indent, f"- name: {_q(name)}")
        if if_:
            self(indent + 2, f"if: {if_}")
        self(indent + 2, f"uses: {action.uses}")
        if with_:
            self(indent + 2, "with:")
            self.block(indent + 4, *(f"{k}: {v}" for k, v in with_.items()))


class _Setup(msgspec.Struct, frozen=True, kw_only=True):
    """A workflow's inputs and what the matrix decides about its jobs."""

    ms: MatrixSpec
    actions: dict[str, Action]
    vendors: tuple[Vendor, ...]  # the GPU vendors of [matrix] gpus on Linux cells: a smoke job each
    windows: tuple[Vendor, ...]  # those on Windows cells: a native smoke job each
    registry: str  # the image repository's registry host, "" for Docker Hub
    pushes: bool  # a bare name has no namespace to push to
    axis: bool  # a platform axis: each cell on a runner of its own platform
    oses: tuple[str, ...]  # the OSes of the cells (linux, windows, darwin)

    @property
    def hosted(self) -> bool:
        """Cells off Linux: no image, their smoke tests on GitHub's runners (or self-hosted Windows GPUs)."""
        return self.oses != ("linux",)

    @property
    def linux(self) -> bool:
        return "linux" in self.oses

    @property
    def platform_values(self) -> tuple[Platform, ...]:
        """The platforms of the cells: the platform axis's values, else [image]'s."""
        return tuple(p for p in PLATFORMS if p in dict(self.ms.axes).get("platform", self.ms.platforms))

    @property
    def ghcr(self) -> bool:
        return self.pushes and self.registry == "ghcr.io"

    @property
    def platforms(self) -> str:
        return "${{ matrix.platform }}" if self.axis else ",".join(self.ms.platforms)

    @property
    def gpu_vendors(self) -> tuple[Vendor, ...]:
        """The vendors whose GPUs self-hosted runners test, Linux's or Windows'."""
        return tuple(v for v in VENDORS if v in self.vendors or v in self.windows)

    def runners(self, vendor: str) -> list[str]:
        """The runner labels of the matrix GPUs of ``vendor``, each once."""
        return list(dict.fromkeys(runner_label(g.name) for g in self.ms.gpus if g.vendor == vendor))


def workflow(ms: MatrixSpec, *, matrix_file: str, version: str, command: str,
             matrices_dir: str = "", actions: dict[str, Action] | None = None, pages: bool = False) -> str:
    """The workflow's YAML text. ``matrix_file`` is the matrix file's path from the repository
    root, ``version`` the envsolve version the solve job installs, ``command`` the command line
    that made it (for the header), ``matrices_dir`` a ``--matrices`` folder to use instead of the
    shipped data; ``pages`` adds the jobs that publish the compatibility explorer to GitHub Pages."""
    axis = dict(ms.axes).get("platform")
    oses = tuple(dict.fromkeys(os_of(p) for p in (axis or ms.platforms)))
    setup = _Setup(ms=ms, actions=actions if actions is not None else load_actions(),
                   vendors=_gpu_vendors(ms, oses, "linux"), windows=_gpu_vendors(ms, oses, "windows"),
                   registry=registry_of(ms.repository), pushes="/" in ms.repository, axis=axis is not None, oses=oses)
    w = _Lines()
    _header(w, setup, version, command)
    _env(w, setup, version, matrix_file, matrices_dir)
    w(0, "jobs:")
    _solve_job(w, setup)
    if setup.linux:
        _build_job(w, setup)
    for v in setup.vendors:
        _gpu_job(w, setup, v)
    if setup.hosted:
        _native_job(w, setup, "hosted")
    for v in setup.windows:
        _native_job(w, setup, v)
    if pages:
        _site_job(w, setup)
        _pages_job(w, setup)
    return "\n".join(w.lines).rstrip("\n") + "\n"


def _gpu_vendors(ms: MatrixSpec, oses: tuple[str, ...], host: str) -> tuple[Vendor, ...]:
    """The vendors of the matrix GPUs that self-hosted runners of ``host`` test, when it has cells."""
    if host not in oses:
        return ()
    return tuple(v for v in _SELF_HOSTED[host] if any(g.vendor == v for g in ms.gpus))


def _header(w: _Lines, setup: _Setup, version: str, command: str) -> None:
    """The comments that say where the workflow came from and what it needs, its triggers,
    permissions and concurrency."""
    w(0, f"# Generated by envsolve {version}: {re.sub(r'[^ -~]', '?', command)}")
    w(0, "# Regenerate it rather than edit it; the actions are pinned by commit (envsolve/matrix/actions.toml).")
    if setup.pushes and not setup.ghcr:
        w(0, "# Pushing logs in with the repository secrets REGISTRY_USERNAME and REGISTRY_PASSWORD.")
    _runner_comments(w, setup)
    w.block(0, "name: images", "", "on:")
    w.block(2, "push:", "pull_request:", "workflow_dispatch:")
    w.block(0, "", "permissions:")
    w(2, "contents: read")
    w.block(0, "", "concurrency:")
    w.block(2, "group: ${{ github.workflow }}-${{ github.ref }}",
            "cancel-in-progress: ${{ github.event_name == 'pull_request' }}")
    w(0, "")


def _runner_comments(w: _Lines, setup: _Setup) -> None:
    """The header lines that say which runners the smoke tests need."""
    for host, vendors in (("linux", setup.vendors), ("windows", setup.windows)):
        if vendors:
            labels = ", ".join(runner_label(g.name) for g in setup.ms.gpus if g.vendor in vendors)
            what = "GPU" if host == "linux" else "Windows GPU"
            w(0, f"# {what} smoke tests run on self-hosted runners labelled self-hosted, {host}, gpu and one of: "
              f"{labels}.")
    if setup.hosted:
        runners = ", ".join(dict.fromkeys(GITHUB_RUNNER[p] for p in setup.platform_values if os_of(p) != "linux"))
        w(0, f"# Windows and macOS cells get no image: their smoke tests run on GitHub's runners ({runners}).")


def _env(w: _Lines, setup: _Setup, version: str, matrix_file: str, matrices_dir: str) -> None:
    """The workflow's env: what every job's scripts read instead of expressions."""
    w(0, "env:")
    w.block(2, f"ENVSOLVE_VERSION: {_q(version)}", f"MATRIX_FILE: {_q(matrix_file)}", f"RENDER_DIR: {_q(RENDER_DIR)}")
    if matrices_dir:
        w(2, f"ENVSOLVE_MATRICES: {_q(matrices_dir)}")
    w.block(2, *(f"{v.upper()}_RUNNERS: {_q(json.dumps(setup.runners(v)))}" for v in setup.gpu_vendors))
    w(0, "")


def _solve_job(w: _Lines, setup: _Setup) -> None:
    a = setup.actions
    w(2, "solve:")
    w.block(4, "name: " + _q("solve the image matrix"), "runs-on: ubuntu-latest", "timeout-minutes: 30", "outputs:")
    w.block(6, "matrix: ${{ steps.cells.outputs.matrix }}", "cells: ${{ steps.cells.outputs.cells }}")
    for name in _cell_lists(setup):
        w.block(6, f"{name}-matrix: ${{{{ steps.cells.outputs.{name}-matrix }}}}",
                f"{name}-jobs: ${{{{ steps.cells.outputs.{name}-jobs }}}}")
    if setup.hosted:
        w(6, "images: ${{ steps.cells.outputs.images }}")
    w(4, "steps:")
    _envsolve_steps(w, a)
    w(6, "- name: " + _q("summary"))
    w(8, 'run: envsolve matrix "$MATRIX_FILE" --format markdown >> "$GITHUB_STEP_SUMMARY"')
    w(6, "- name: " + _q("check the [[include]] cells, render every valid cell, list them"))
    w.block(8, "id: cells", "run: |")
    w.block(10, 'envsolve matrix "$MATRIX_FILE" --check --render "$RENDER_DIR" --format github > matrix.json', "{",
            *_cells_outputs(setup), '} >> "$GITHUB_OUTPUT"')
    w.uses(6, a["actions/upload-artifact"], "keep the rendered cells",
           {"name": RENDER_DIR, "path": RENDER_DIR, "if-no-files-found": "error", "retention-days": "7"},
           if_="steps.cells.outputs.cells != '0'")
    w(0, "")


def _cells_outputs(setup: _Setup) -> list[str]:
    """The solve step's lines that write its outputs: the build job's cells (those with an
    image: the Linux cells) and the lists of each smoke job."""
    if not setup.hosted:
        lines = ['  echo "matrix=$(jq -c . matrix.json)"', "  echo \"cells=$(jq '.include | length' matrix.json)\""]
        return lines + [line for v in setup.vendors for line in _gpu_cells_script(v)]
    linux = f"[.include[] | select(.platform | {_LINUX})]"
    lines = [f"  echo \"matrix=$(jq -c '{{include: {linux}}}' matrix.json)\"",
             "  echo \"cells=$(jq '.include | length' matrix.json)\"",
             f"  echo \"images=$(jq '{linux} | length' matrix.json)\""]
    lines += [line for v in setup.vendors for line in _gpu_cells_script(v, f" and (.platform | {_LINUX})")]
    hosted = " or ".join(f'.vendor == "{v}"' for v in _HOSTED_VENDORS)
    lines += _cells_script("hosted", f"(.platform | {_LINUX} | not) and ({hosted})", "")
    for v in setup.windows:
        lines += _gpu_cells_script(v, ' and (.platform | startswith("windows/"))', "windows-")
    return lines


def _cell_lists(setup: _Setup) -> list[str]:
    """The lists of cells the solve job hands to the smoke jobs (``<name>-matrix``, ``<name>-jobs``)."""
    return [*setup.vendors, *(["hosted"] if setup.hosted else []), *(f"windows-{v}" for v in setup.windows)]


def _gpu_cells_script(vendor: str, where: str = "", prefix: str = "") -> tuple[str, ...]:
    """The solve step's lines that list each GPU cell of ``vendor`` (and ``where``, a jq
    condition on its row) once per GPU of that vendor, for the runner of that GPU."""
    return _cells_script(prefix + vendor, f'.vendor == "{vendor}"{where}',
                         f' --argjson runners "${vendor.upper()}_RUNNERS"', " | . as $c | $runners[] | $c + {gpu: .}")


def _cells_script(name: str, select: str, args: str, each: str = "") -> tuple[str, ...]:
    """The solve step's lines that list the rows of ``select`` (each as ``each`` makes it) as the
    outputs ``<name>-matrix`` and ``<name>-jobs``."""
    var = name.replace("-", "_")
    program = f"[.include[] | select({select}){each}]"
    return (f"  {var}=$(jq -c{args} '{program}' matrix.json)",
            f'  echo "{name}-matrix={{\\"include\\":${var}}}"',
            f"  echo \"{name}-jobs=$(jq length <<< \"${var}\")\"")


def _build_job(w: _Lines, setup: _Setup) -> None:
    a = setup.actions
    context = f"{RENDER_DIR}/${{{{ matrix.id }}}}"
    cache_from = "type=gha,scope=${{ matrix.id }}"
    w(2, "build:")
    count = "images" if setup.hosted else "cells"
    w.block(4, "name: build ${{ matrix.id }}", "needs: solve", f"if: needs.solve.outputs.{count} != '0'",
            "runs-on: ${{ matrix.runner }}" if setup.axis else "runs-on: ubuntu-latest", "timeout-minutes: 120")
    if setup.ghcr:
        w(4, "permissions:")
        w.block(6, "contents: read", "packages: write  # pushes to GHCR from the default branch")
    w(4, "strategy:")
    w.block(6, "fail-fast: false", "matrix: ${{ fromJSON(needs.solve.outputs.matrix) }}")
    w(4, "steps:")
    w.uses(6, a["actions/download-artifact"], "fetch the rendered cells", {"name": RENDER_DIR, "path": RENDER_DIR})
    if not setup.axis and any(p != DEFAULT_PLATFORM for p in setup.ms.platforms):
        w.uses(6, a["docker/setup-qemu-action"], "set up QEMU (other platforms)", {"platforms": _q(setup.platforms)})
    w.uses(6, a["docker/setup-buildx-action"], "set up Buildx", {})
    w.uses(6, a["docker/build-push-action"], "smoke test (CPU cells: the smoke stage runs smoke_test.py)",
           {"context": context, "target": formats.SMOKE_STAGE, "platforms": _q(setup.platforms), "push": "false",
            "outputs": "type=cacheonly", "cache-from": cache_from},
           if_="matrix.vendor == 'cpu'")
    if setup.pushes:
        w.uses(6, a["docker/login-action"], "log in to the registry (default branch only)", _login(setup), if_=_PUBLISH)
    image = {"context": context, **_stage()}
    image |= {"platforms": _q(setup.platforms), "tags": "${{ matrix.image }}",
              "push": f"${{{{ {_PUBLISH} }}}}" if setup.pushes else "false",
              "cache-from": cache_from, "cache-to": "type=gha,mode=max,scope=${{ matrix.id }}"}
    w.uses(6, a["docker/build-push-action"],
           "build the image" + (" (pushed from the default branch)" if setup.pushes else ""), image)
    w(0, "")


def _stage() -> dict[str, str]:
    """The ``target`` input that builds the image stage of the rendered Dockerfile, if it names one."""
    return {"target": formats.IMAGE_STAGE} if formats.IMAGE_STAGE else {}


def _login(setup: _Setup) -> dict[str, str]:
    """The login action's inputs: GHCR with the job's token, any other registry with the
    repository secrets (Docker Hub: no registry input)."""
    login = {"registry": setup.registry} if setup.registry else {}
    if setup.ghcr:
        return login | {"username": "${{ github.actor }}", "password": "${{ secrets.GITHUB_TOKEN }}"}
    return login | {"username": "${{ secrets.REGISTRY_USERNAME }}", "password": "${{ secrets.REGISTRY_PASSWORD }}"}


def _gpu_job(w: _Lines, setup: _Setup, vendor: Vendor) -> None:
    a = setup.actions
    w(2, f"smoke-{vendor}:")
    w.block(4, "name: smoke ${{ matrix.id }} on ${{ matrix.gpu }}", "needs: [solve, build]")
    # a pull request from a fork never reaches a self-hosted runner: its Dockerfiles are its own
    w(4, "if: >-")
    w.block(6, f"${{{{ !cancelled() && needs.solve.result == 'success' && needs.solve.outputs.{vendor}-jobs != '0' &&",
            "(github.event_name != 'pull_request' ||",
            "github.event.pull_request.head.repo.full_name == github.repository) }}")
    w.block(4, "runs-on: [self-hosted, linux, gpu, \"${{ matrix.gpu }}\"]", "timeout-minutes: 60", "strategy:")
    w.block(6, "fail-fast: false", f"matrix: ${{{{ fromJSON(needs.solve.outputs.{vendor}-matrix) }}}}")
    w(4, "steps:")
    w.uses(6, a["actions/download-artifact"], "fetch the rendered cells", {"name": RENDER_DIR, "path": RENDER_DIR})
    w.uses(6, a["docker/setup-buildx-action"], "set up Buildx", {})
    image = {"context": f"{RENDER_DIR}/${{{{ matrix.id }}}}", **_stage()}
    image |= {"tags": "${{ matrix.image }}", "load": "true", "push": "false",
              "cache-from": "type=gha,scope=${{ matrix.id }}"}
    w.uses(6, a["docker/build-push-action"], "build the image here (from the build job's cache)", image)
    for name, if_, jetson in _SMOKE_RUNS[vendor]:
        _smoke_run(w, name, if_, " ".join(gpu_run_flags(ACCELERATOR[vendor], jetson=jetson)))
    w(0, "")


def _native_job(w: _Lines, setup: _Setup, which: str) -> None:
    """The smoke tests of the cells without an image, run natively from the rendered
    requirements: ``hosted``, on GitHub's runner of each cell's platform (``matrix.runner``: CPU
    cells, and MPS cells on Apple silicon, whose VM may show no GPU: their test says so as a skip,
    ``--allow-cpu``), or a vendor's, on self-hosted Windows runners labelled with the GPU."""
    a = setup.actions
    name = "hosted" if which == "hosted" else f"windows-{which}"
    w(2, f"smoke-{name}:")
    if which == "hosted":
        w.block(4, "name: smoke ${{ matrix.id }} on ${{ matrix.runner }}", "needs: solve",
                "if: needs.solve.outputs.hosted-jobs != '0'", "runs-on: ${{ matrix.runner }}")
    else:
        w.block(4, "name: smoke ${{ matrix.id }} on ${{ matrix.gpu }}", "needs: solve")
        # a pull request from a fork never reaches a self-hosted runner
        w(4, "if: >-")
        w.block(6, f"${{{{ needs.solve.outputs.{name}-jobs != '0' &&", "(github.event_name != 'pull_request' ||",
                "github.event.pull_request.head.repo.full_name == github.repository) }}")
        w(4, "runs-on: [self-hosted, windows, gpu, \"${{ matrix.gpu }}\"]")
    w.block(4, "timeout-minutes: 60", "strategy:")
    w.block(6, "fail-fast: false", f"matrix: ${{{{ fromJSON(needs.solve.outputs.{name}-matrix) }}}}")
    w(4, "steps:")
    w.uses(6, a["actions/download-artifact"], "fetch the rendered cells", {"name": RENDER_DIR, "path": RENDER_DIR})
    w.uses(6, a["actions/setup-python"], "set up the cell's Python", {"python-version": "${{ matrix.python_version }}"})
    _native_run(w, "install the cell's requirements (its index's file first)",
                "for f in requirements-*.txt; do", '  if [ -f "$f" ]; then python -m pip install -r "$f"; fi', "done",
                "python -m pip install -r requirements.txt")
    if which != "hosted":
        _native_run(w, "smoke test on the GPU", "python smoke_test.py")
        w(0, "")
        return
    _native_run(w, "smoke test", "python smoke_test.py", if_="matrix.vendor != 'apple'")
    _native_run(w, "smoke test (MPS: a hosted macOS VM may show no GPU, a skip then)",
                "python smoke_test.py --allow-cpu", if_="matrix.vendor == 'apple'")
    w(0, "")


def _native_run(w: _Lines, name: str, *script: str, if_: str = "") -> None:
    """A bash step in the cell's rendered folder (the cell's id comes through env)."""
    w(6, "- name: " + _q(name))
    if if_:
        w(8, f"if: {if_}")
    w.block(8, "shell: bash", "env:")
    w(10, "CELL: ${{ matrix.id }}")
    w(8, "run: |")
    w.block(10, 'cd "$RENDER_DIR/$CELL"', *script)


def _site_job(w: _Lines, setup: _Setup) -> None:
    """The compatibility explorer and the matrix's HTML report, built on the default branch and
    handed to the pages job as the Pages artifact."""
    a = setup.actions
    w(2, "site:")
    w.block(4, "name: " + _q("build the compatibility explorer"), f"if: {_PUBLISH}", "runs-on: ubuntu-latest",
            "timeout-minutes: 30", "steps:")
    _envsolve_steps(w, a)
    w(6, "- name: " + _q("build the site and the matrix report"))
    w(8, "run: |")
    w.block(10, f'envsolve site -o "{SITE_DIR}"',
            f'envsolve matrix "$MATRIX_FILE" --format html > "{SITE_DIR}/matrix.html"')
    w.uses(6, a["actions/upload-pages-artifact"], "hand the site to GitHub Pages", {"path": SITE_DIR})
    w(0, "")


def _pages_job(w: _Lines, setup: _Setup) -> None:
    """Publish the site job's artifact; the only job that may write to Pages."""
    w(2, "pages:")
    w.block(4, "name: " + _q("publish to GitHub Pages"), "needs: site", "runs-on: ubuntu-latest", "timeout-minutes: 15",
            "permissions:")
    w.block(6, "pages: write  # deploys the site", "id-token: write  # proves the deployment comes from this workflow")
    w(4, "environment:")
    w.block(6, "name: github-pages", "url: ${{ steps.deployment.outputs.page_url }}")
    w(4, "steps:")
    w(6, "- name: " + _q("deploy"))
    w.block(8, "id: deployment", f"uses: {setup.actions['actions/deploy-pages'].uses}")
    w(0, "")


def _smoke_run(w: _Lines, name: str, if_: str, flags: str) -> None:
    """A step that runs the image's smoke test with ``flags``; the image comes through env."""
    w(6, "- name: " + _q(name))
    if if_:
        w(8, f"if: {if_}")
    w(8, "env:")
    w(10, "IMAGE: ${{ matrix.image }}")
    w(8, f'run: docker run --rm {flags} "$IMAGE" python smoke_test.py')


def _envsolve_steps(w: _Lines, a: dict[str, Action]) -> None:
    """A job's first steps: the repository checked out (no credentials kept), Python, envsolve."""
    w.uses(6, a["actions/checkout"], "check out", {"persist-credentials": "false"})
    w.uses(6, a["actions/setup-python"], "set up Python", {"python-version": _q(PYTHON)})
    w(6, "- name: " + _q("install envsolve"))
    w(8, 'run: python -m pip install "envsolve==${ENVSOLVE_VERSION}"')
