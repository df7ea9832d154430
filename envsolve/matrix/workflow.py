"""`envsolve matrix --workflow PATH`: a GitHub Actions workflow that validates and builds an image
matrix in CI. Pure: the text only; the CLI writes it.

Jobs: ``solve`` installs this very envsolve version, writes the Markdown summary, fails when an
``[[include]]`` cell became impossible (``--check``), renders every valid cell and hands the
``strategy.matrix`` JSON to ``build`` (one job per valid cell, Buildx with the GitHub Actions
cache; CPU cells first build the ``smoke`` stage, which runs the smoke test at build time; the
image is pushed from the default branch only). When the matrix names GPUs, ``smoke-nvidia`` /
``smoke-amd`` run each GPU cell's smoke test on a self-hosted runner labelled ``gpu`` and the GPU's
label (:func:`runner_label`), one job per cell and GPU.

Safety: actions pinned by commit (``actions.toml``), ``contents: read`` at the top and
``packages: write`` only where GHCR is pushed to, ``persist-credentials: false``, and nothing from
the event or the matrix is put into a ``run:`` script: values reach scripts through ``env:``.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from importlib.resources import files

from ..errors import MatrixError, Problem, Problems
from . import formats
from .parse import MatrixSpec

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["ACTIONS_FILE", "Action", "RENDER_DIR", "load_actions", "registry_of", "runner_label", "workflow"]

ACTIONS_FILE = "actions.toml"
RENDER_DIR = "envsolve-matrix"
PYTHON = "3.12"  # the Python the solve job runs envsolve on
_SHA = re.compile(r"[0-9a-f]{40}")
_NEEDED = ("actions/checkout", "actions/setup-python", "actions/upload-artifact", "actions/download-artifact",
           "docker/setup-qemu-action", "docker/setup-buildx-action", "docker/login-action",
           "docker/build-push-action")
_PUBLISH = "github.ref == format('refs/heads/{0}', github.event.repository.default_branch)"
_RUN_FLAGS = {"nvidia": "--gpus all", "amd": "--device=/dev/kfd --device=/dev/dri --group-add video --group-add render"}


@dataclass(frozen=True, kw_only=True, slots=True)
class Action:
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
        text = files(__package__).joinpath(ACTIONS_FILE).read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise MatrixError([Problem(path, "", f"is not valid TOML: {e}")]) from None
    problems = Problems(path)
    out: dict[str, Action] = {}
    rows = data.get("action", [])
    for i, row in enumerate(rows if isinstance(rows, list) else []):
        where = f"action[{i}]"
        if not isinstance(row, dict):
            problems.bad(where, "must be a table")
            continue
        for key in sorted(set(row) - {"name", "tag", "commit", "source"}):
            problems.bad(f"{where}.{key}", "unknown key (allowed: name, tag, commit, source)")
        missing = [k for k in ("name", "tag", "commit", "source") if not isinstance(row.get(k), str) or not row[k]]
        if missing:
            problems.bad(where, f"missing or not a string: {', '.join(missing)}")
            continue
        if not _SHA.fullmatch(row["commit"]):
            problems.bad(f"{where}.commit", f"{row['commit']!r} is not a full 40-hex commit SHA")
            continue
        out[row["name"]] = Action(name=row["name"], tag=row["tag"], commit=row["commit"], source=row["source"])
    for name in _NEEDED:
        if name not in out:
            problems.bad("action", f"no row for {name}, which the workflow uses")
    problems.raise_if_any(MatrixError, tip="fix the shipped actions.toml (each row: name, tag, commit, source)")
    return out


def runner_label(gpu_name: str) -> str:
    """The runner label of a GPU: its name in lower case, runs of other characters as ``-``
    (``RTX 5090`` -> ``rtx-5090``, ``sm_90`` -> ``sm-90``)."""
    return re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")


def registry_of(repository: str) -> str:
    """The registry host of an image repository, or ``""`` for Docker Hub (Docker's rule: the
    first path component is a host when it has a dot or a port, or is ``localhost``)."""
    first, sep, _ = repository.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first
    return ""


def _q(text: str) -> str:
    """A YAML scalar: JSON's double-quoted string is valid YAML."""
    return json.dumps(text)


class _Lines:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, indent: int, text: str) -> None:
        self.lines.append(" " * indent + text if text else "")

    def uses(self, indent: int, action: Action, name: str, with_: dict[str, str], if_: str = "") -> None:
        self(indent, f"- name: {_q(name)}")
        if if_:
            self(indent + 2, f"if: {if_}")
        self(indent + 2, f"uses: {action.uses}")
        if with_:
            self(indent + 2, "with:")
            for k, v in with_.items():
                self(indent + 4, f"{k}: {v}")


def workflow(ms: MatrixSpec, *, matrix_file: str, version: str, command: str,
             matrices_dir: str = "", actions: dict[str, Action] | None = None) -> str:
    """The workflow's YAML text. ``matrix_file`` is the matrix file's path from the repository
    root, ``version`` the envsolve version the solve job installs, ``command`` the command line
    that made it (for the header), ``matrices_dir`` a ``--matrices`` folder to use instead of the
    shipped data."""
    a = actions if actions is not None else load_actions()
    vendors = [v for v in ("nvidia", "amd") if any(g.vendor == v for g in ms.gpus)]
    registry = registry_of(ms.repository)
    pushes = "/" in ms.repository  # a bare name has no namespace to push to
    ghcr = pushes and registry == "ghcr.io"
    axis = any(a == "platform" for a, _ in ms.axes)  # each cell on a runner of its own platform
    platforms = "${{ matrix.platform }}" if axis else ",".join(ms.platforms)
    w = _Lines()
    w(0, f"# Generated by envsolve {version}: {re.sub(r'[^ -~]', '?', command)}")
    w(0, "# Regenerate it rather than edit it; the actions are pinned by commit (envsolve/matrix/actions.toml).")
    if pushes and not ghcr:
        w(0, "# Pushing logs in with the repository secrets REGISTRY_USERNAME and REGISTRY_PASSWORD.")
    if vendors:
        labels = ", ".join(runner_label(g.name) for g in ms.gpus)
        w(0, f"# GPU smoke tests run on self-hosted runners labelled self-hosted, linux, gpu and one of: {labels}.")
    w(0, "name: images")
    w(0, "")
    w(0, "on:")
    w(2, "push:")
    w(2, "pull_request:")
    w(2, "workflow_dispatch:")
    w(0, "")
    w(0, "permissions:")
    w(2, "contents: read")
    w(0, "")
    w(0, "concurrency:")
    w(2, "group: ${{ github.workflow }}-${{ github.ref }}")
    w(2, "cancel-in-progress: ${{ github.event_name == 'pull_request' }}")
    w(0, "")
    w(0, "env:")
    w(2, f"ENVSOLVE_VERSION: {_q(version)}")
    w(2, f"MATRIX_FILE: {_q(matrix_file)}")
    w(2, f"RENDER_DIR: {_q(RENDER_DIR)}")
    if matrices_dir:
        w(2, f"ENVSOLVE_MATRICES: {_q(matrices_dir)}")
    for v in vendors:
        gpus = [runner_label(g.name) for g in ms.gpus if g.vendor == v]
        w(2, f"{v.upper()}_RUNNERS: {_q(json.dumps(list(dict.fromkeys(gpus))))}")
    w(0, "")
    w(0, "jobs:")
    _solve_job(w, a, vendors)
    _build_job(w, a, ms, platforms, pushes, ghcr, registry, axis)
    for v in vendors:
        _gpu_job(w, a, v)
    return "\n".join(w.lines).rstrip("\n") + "\n"


def _solve_job(w: _Lines, a: dict[str, Action], vendors: list[str]) -> None:
    w(2, "solve:")
    w(4, "name: " + _q("solve the image matrix"))
    w(4, "runs-on: ubuntu-latest")
    w(4, "timeout-minutes: 30")
    w(4, "outputs:")
    w(6, "matrix: ${{ steps.cells.outputs.matrix }}")
    w(6, "cells: ${{ steps.cells.outputs.cells }}")
    for v in vendors:
        w(6, f"{v}-matrix: ${{{{ steps.cells.outputs.{v}-matrix }}}}")
        w(6, f"{v}-jobs: ${{{{ steps.cells.outputs.{v}-jobs }}}}")
    w(4, "steps:")
    w.uses(6, a["actions/checkout"], "check out", {"persist-credentials": "false"})
    w.uses(6, a["actions/setup-python"], "set up Python", {"python-version": _q(PYTHON)})
    w(6, "- name: " + _q("install envsolve"))
    w(8, 'run: python -m pip install "envsolve==${ENVSOLVE_VERSION}"')
    w(6, "- name: " + _q("summary"))
    w(8, 'run: envsolve matrix "$MATRIX_FILE" --format markdown >> "$GITHUB_STEP_SUMMARY"')
    w(6, "- name: " + _q("check the [[include]] cells, render every valid cell, list them"))
    w(8, "id: cells")
    w(8, "run: |")
    w(10, 'envsolve matrix "$MATRIX_FILE" --check --render "$RENDER_DIR" --format github > matrix.json')
    w(10, "{")
    w(10, '  echo "matrix=$(jq -c . matrix.json)"')
    w(10, "  echo \"cells=$(jq '.include | length' matrix.json)\"")
    for v in vendors:
        # each GPU cell once per GPU of its vendor, on the runner of that GPU
        select = (f'[.include[] | select(.vendor == "{v}") | . as $c | $runners[] | $c + {{gpu: .}}]')
        w(10, f"  {v}=$(jq -c --argjson runners \"${v.upper()}_RUNNERS\" '{select}' matrix.json)")
        w(10, f'  echo "{v}-matrix={{\\"include\\":${v}}}"')
        w(10, f"  echo \"{v}-jobs=$(jq length <<< \"${v}\")\"")
    w(10, '} >> "$GITHUB_OUTPUT"')
    w.uses(6, a["actions/upload-artifact"], "keep the rendered cells",
           {"name": RENDER_DIR, "path": RENDER_DIR, "if-no-files-found": "error", "retention-days": "7"},
           if_="steps.cells.outputs.cells != '0'")
    w(0, "")


def _build_job(w: _Lines, a: dict[str, Action], ms: MatrixSpec, platforms: str, pushes: bool, ghcr: bool,
               registry: str, axis: bool = False) -> None:
    context = f"{RENDER_DIR}/${{{{ matrix.id }}}}"
    cache_from = "type=gha,scope=${{ matrix.id }}"
    w(2, "build:")
    w(4, "name: build ${{ matrix.id }}")
    w(4, "needs: solve")
    w(4, "if: needs.solve.outputs.cells != '0'")
    w(4, "runs-on: ${{ matrix.runner }}" if axis else "runs-on: ubuntu-latest")
    w(4, "timeout-minutes: 120")
    if ghcr:
        w(4, "permissions:")
        w(6, "contents: read")
        w(6, "packages: write  # pushes to GHCR from the default branch")
    w(4, "strategy:")
    w(6, "fail-fast: false")
    w(6, "matrix: ${{ fromJSON(needs.solve.outputs.matrix) }}")
    w(4, "steps:")
    w.uses(6, a["actions/download-artifact"], "fetch the rendered cells", {"name": RENDER_DIR, "path": RENDER_DIR})
    if not axis and any(p != "linux/amd64" for p in ms.platforms):
        w.uses(6, a["docker/setup-qemu-action"], "set up QEMU (other platforms)", {"platforms": _q(platforms)})
    w.uses(6, a["docker/setup-buildx-action"], "set up Buildx", {})
    w.uses(6, a["docker/build-push-action"], "smoke test (CPU cells: the smoke stage runs smoke_test.py)",
           {"context": context, "target": formats.SMOKE_STAGE, "platforms": _q(platforms), "push": "false",
            "outputs": "type=cacheonly", "cache-from": cache_from},
           if_="matrix.vendor == 'cpu'")
    if pushes:
        login = {"registry": registry} if registry else {}
        if ghcr:
            login |= {"username": "${{ github.actor }}", "password": "${{ secrets.GITHUB_TOKEN }}"}
        else:
            login |= {"username": "${{ secrets.REGISTRY_USERNAME }}", "password": "${{ secrets.REGISTRY_PASSWORD }}"}
        w.uses(6, a["docker/login-action"], "log in to the registry (default branch only)", login, if_=_PUBLISH)
    image = {"context": context}
    if formats.IMAGE_STAGE:
        image["target"] = formats.IMAGE_STAGE
    image |= {"platforms": _q(platforms), "tags": "${{ matrix.image }}",
              "push": f"${{{{ {_PUBLISH} }}}}" if pushes else "false",
              "cache-from": cache_from, "cache-to": "type=gha,mode=max,scope=${{ matrix.id }}"}
    w.uses(6, a["docker/build-push-action"],
           "build the image" + (" (pushed from the default branch)" if pushes else ""), image)
    w(0, "")


def _gpu_job(w: _Lines, a: dict[str, Action], vendor: str) -> None:
    w(2, f"smoke-{vendor}:")
    w(4, "name: smoke ${{ matrix.id }} on ${{ matrix.gpu }}")
    w(4, "needs: [solve, build]")
    # a pull request from a fork never reaches a self-hosted runner: its Dockerfiles are its own
    w(4, "if: >-")
    w(6, f"${{{{ !cancelled() && needs.solve.result == 'success' && needs.solve.outputs.{vendor}-jobs != '0' &&")
    w(6, "(github.event_name != 'pull_request' ||")
    w(6, "github.event.pull_request.head.repo.full_name == github.repository) }}")
    w(4, "runs-on: [self-hosted, linux, gpu, \"${{ matrix.gpu }}\"]")
    w(4, "timeout-minutes: 60")
    w(4, "strategy:")
    w(6, "fail-fast: false")
    w(6, f"matrix: ${{{{ fromJSON(needs.solve.outputs.{vendor}-matrix) }}}}")
    w(4, "steps:")
    w.uses(6, a["actions/download-artifact"], "fetch the rendered cells", {"name": RENDER_DIR, "path": RENDER_DIR})
    w.uses(6, a["docker/setup-buildx-action"], "set up Buildx", {})
    image = {"context": f"{RENDER_DIR}/${{{{ matrix.id }}}}"}
    if formats.IMAGE_STAGE:
        image["target"] = formats.IMAGE_STAGE
    image |= {"tags": "${{ matrix.image }}", "load": "true", "push": "false",
              "cache-from": "type=gha,scope=${{ matrix.id }}"}
    w.uses(6, a["docker/build-push-action"], "build the image here (from the build job's cache)", image)
    w(6, "- name: " + _q("smoke test on the GPU"))
    w(8, "env:")
    w(10, "IMAGE: ${{ matrix.image }}")
    w(8, f'run: docker run --rm {_RUN_FLAGS[vendor]} "$IMAGE" python smoke_test.py')
    w(0, "")
