"""Pure rendering: a lock environment plus the templates in ``templates/`` into artifact texts.

``render(lock, env)`` returns ``{file name: text}`` for the Dockerfile, requirements.txt
(and requirements-pytorch.txt when PyTorch-index builds are locked), environment.yml and
smoke_test.py; the same lock gives the same bytes. Every value that reaches a file is checked
first (no line breaks or control characters, URLs as :func:`envsolve.config.check_url` wants
them) and quoted for where it lands: shell words with :func:`shlex.quote`, Dockerfile strings
escaped, YAML scalars as JSON strings (JSON is YAML). Jinja2 is imported here only, so commands
that do not render never pay for it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

from ..config import check_url
from ..domain import (
    ACCELERATORS,
    EXTRA_INDEXES,
    Accelerator,
    cuda_of_variant,
    driver_text,
    gpu_run_flags,
    qualified_image,
)
from ..errors import LockError
from ..lock.model import Environment, Lock, LockedPackage, Package
from ..paths import templates_dir

__all__ = ["ARTIFACTS", "PYTORCH_REQUIREMENTS", "render", "templates_dir"]

ARTIFACTS = ("Dockerfile", "requirements.txt", "environment.yml", "smoke_test.py")
# written beside them when the environment has PyTorch-index builds (requirements-<index>.txt for
# another index's, such as requirements-paddle.txt)
PYTORCH_REQUIREMENTS = "requirements-pytorch.txt"
_MARKER = '"__ENVSOLVE_EXPECTED__"'
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_ALTERNATIVES = "[packages] apt (a Debian package of the same name, e.g. 'ffmpeg') or [packages] pip"


# ---------------------------------------------------------------------------- checking and quoting


def _strings(value: Any, where: str) -> Iterator[tuple[str, str]]:
    """Every string inside a lock value, with its key path."""
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k, f"{where}.{k}")
            yield from _strings(v, f"{where}.{k}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def _check(lock: Lock, env: Environment, lock_name: str) -> None:
    """Refuse (exit 2) a value no generated file may carry, naming the lock key and the value."""
    i = lock.environments.index(env)
    found = [("lock file name", lock_name), ("project", lock.project)]
    found += list(_strings(dict(lock.indexes), "indexes"))
    found += list(_strings(env.to_dict(), f"environments[{i}]"))
    for where, value in found:
        if _CONTROL.search(value):
            raise LockError(f"{lock_name}: {where} = {value!r} contains a line break or control character, "
                            "which no generated file may carry", tip="regenerate the lock from a spec without it")
    urls = [(f"indexes.{k}", v) for k, v in lock.indexes]
    urls += [(f"environments[{i}].frameworks[{j}].index_url", p.index_url) for j, p in enumerate(env.frameworks)]
    urls += [(f"environments[{i}].packages[{j}].index_url", p.index_url) for j, p in enumerate(env.packages)]
    for where, url in urls:
        if url and (why := check_url(url)) is not None:
            raise LockError(f"{lock_name}: {where}: {why}", tip="regenerate the lock with a valid index URL")


def _dq(value: str) -> str:
    """A Dockerfile double-quoted string (LABEL values): quotes, backslashes and ``$`` escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _yq(value: str) -> str:
    """A YAML scalar that is always a string: a JSON string (JSON is YAML)."""
    return json.dumps(value)


# ---------------------------------------------------------------------------- what goes where


def _expected(lock: Lock, env: Environment) -> dict[str, Any]:
    """What the smoke test checks: the lock's facts for this environment."""
    torch = next((p for p in env.frameworks if p.name == "torch"), None)
    return {
        "project": lock.project,
        "environment": env.name,
        "lock_digest": lock.lock_digest,
        "accelerator": env.accelerator,
        "python": env.python,
        "cuda": env.cuda,
        "torch_cuda": cuda_of_variant(torch.variant) if torch else "",
        "rocm": env.rocm,
        "cudnn": env.cudnn,
        "driver_min": env.driver_min,
        "gpus": list(env.gpus),
        "gpu_archs": list(env.gpu_archs),
        "gpu_models": [m.to_dict() for m in env.gpu_models],
        "keras_backend": env.keras_backend,
        "packages": [{"name": p.name, "version": p.version, "variant": p.variant,
                      "pins": {k: v for k, v in p.pins if v[:1].isdigit()}}
                     for p in env.frameworks],
    }


def _env_vars(env: Environment) -> list[tuple[str, str]]:
    out = []
    if env.accelerator == "cuda":
        # read by the NVIDIA container toolkit
        out += [("NVIDIA_VISIBLE_DEVICES", "all"), ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")]
    if env.keras_backend:
        out.append(("KERAS_BACKEND", env.keras_backend))
    return out


def _arg(index: str) -> str:
    return f"ENVSOLVE_INDEX_{index.upper()}"


def _groups(lock: Lock, env: Environment) -> list[dict[str, Any]]:
    """The packages of each non-default index, by URL: each group is installed from its index
    alone, so no other index can serve a package of the same name (dependency confusion)."""
    roots = dict(lock.indexes)
    by_url: dict[str, list[LockedPackage]] = {}
    for p in env.frameworks:
        if p.index != "pypi":
            by_url.setdefault(p.index_url, []).append(p)
    out = []
    for url, pkgs in sorted(by_url.items()):
        index = pkgs[0].index
        root = roots.get(index, "")
        sub = url[len(root):] if root and url.startswith(root) else ""
        out.append({"index": index, "url": url, "requirements": [p.requirement for p in pkgs],
                    "option": "--extra-index-url" if index in EXTRA_INDEXES else "--index-url",
                    # in the Dockerfile, the URL with its root as a build argument (a mirror at build time)
                    "arg": _arg(index) if root and (not sub or sub.startswith("/")) else "",
                    "sub": sub})
    return out


def _conda_specs(env: Environment) -> tuple[list[str], list[LockedPackage]]:
    """(conda MatchSpecs, framework packages left for pip)."""
    specs = [f"python={env.python}"]
    on_conda = [s for p in env.frameworks for s in p.conda]
    if env.cuda and any("=cuda" in s for s in on_conda):
        specs.append(f"cuda-version={env.cuda}")  # the run-export of conda-forge's CUDA builds
    specs += sorted(on_conda)
    specs += list(env.conda)
    return specs, [p for p in env.frameworks if not p.conda]


def _hashed(p: Package) -> str:
    """A requirements-file line pip installs with --require-hashes."""
    return " ".join([p.requirement, *(f"--hash={h}" for h in p.hashes)])


def render(lock: Lock, env: Environment, lock_name: str = "envsolve.lock", *, dockerfile: bool = True
           ) -> dict[str, str]:
    """Every artifact of one environment of ``lock``, as ``{file name: text}``.

    Raises :class:`LockError` (exit 2) for a value no file may carry, an environment without a
    base image, or (when ``dockerfile``) conda packages, which the image cannot install."""
    import jinja2

    _check(lock, env, lock_name)
    if not env.base_image:
        raise LockError(f"environment {env.name!r} has no base image (the data has none for it)",
                        tip="add the image to matrices/images.toml, or set [container] os/flavor to one that exists")
    if dockerfile and env.conda:
        raise LockError(f"environment {env.name!r}: the Dockerfile cannot install conda packages "
                        f"({', '.join(env.conda)}): its image has no conda",
                        tip=f"move each to {_ALTERNATIVES}; or render without the Dockerfile "
                            "(`envsolve render --no-dockerfile`): environment.yml carries them")
    jenv = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)
    jenv.filters.update(sh=shlex.quote, dq=_dq, yq=_yq)
    default_url = dict(lock.indexes).get("pypi", "")
    groups = _groups(lock, env)
    if len(groups) > 1:
        raise LockError(f"environment {env.name!r} takes builds from {len(groups)} non-default index URLs "
                        f"({', '.join(g['url'] for g in groups)}); pip can take them from one only",
                        tip="pin the frameworks to builds of one variant, then lock again")
    roots = dict(lock.indexes)
    args = sorted({(g["arg"], roots[g["index"]]) for g in groups if g["arg"]}
                  | ({(_arg("pypi"), default_url)} if default_url else set()))
    conda_specs, conda_pip = _conda_specs(env)
    full = lock.scope == "full"
    if full:  # every package, with hashes; each file installs exactly its lines (--no-deps)
        routed = {g["url"] for g in groups}
        for g in groups:
            g["requirements"] = [_hashed(p) for p in env.packages if p.index_url == g["url"]]
        default_reqs = [_hashed(p) for p in env.packages if p.index_url not in routed]
        held: list[str] = []
        extra_pip: list[str] = []
        on_conda = {p.name for p in env.frameworks if p.conda}
        conda_groups = [{**g, "requirements": reqs} for g in groups
                        if (reqs := [_hashed(p) for p in env.packages
                                     if p.index_url == g["url"] and p.name not in on_conda])]
        conda_default = [_hashed(p) for p in env.packages if p.index_url not in routed and p.name not in on_conda]
    else:
        default_reqs = [p.requirement for p in env.frameworks if p.index == "pypi"]
        held = [r for g in groups for r in g["requirements"]]  # installed first, pinned again after
        extra_pip = list(env.pip)
        conda_groups = [{**g, "requirements": reqs} for g in groups
                        if (reqs := [p.requirement for p in conda_pip if p.index_url == g["url"]])]
        conda_default = [p.requirement for p in conda_pip if p.index == "pypi"] + list(env.pip)
    python = env.python_from
    uv = env.tool("uv") if python == "uv" else ""
    system = ["ca-certificates"] + (["python3", "python3-venv"] if python != "image" else [])
    tag = f"{lock.project}-{env.name}".lower()
    accelerator: Accelerator = next((a for a in ACCELERATORS if a == env.accelerator), "cpu")
    run_flags = gpu_run_flags(accelerator, jetson=bool(env.jetpack))  # how the container gets the GPUs
    names = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in env.frameworks)
    index_file = f"requirements-{groups[0]['index']}.txt" if groups else PYTORCH_REQUIREMENTS
    ctx = {
        "lock_name": lock_name,
        "lock_digest": lock.lock_digest,
        "env": env,
        "base_image": qualified_image(env.base_image),
        "tag": tag,
        "run_flags": " ".join(run_flags) + " " if run_flags else "",
        "platform_flag": f"--platform {env.platform} " if env.platform != "linux/amd64" else "",
        "groups_of_user": "video,render" if env.accelerator == "rocm" else "",
        "description": f"{names or 'no frameworks'}; Python {env.python}"
                       + (f"; CUDA {env.cuda}, {driver_text(env.driver_min, env.jetpack)}" if env.cuda else "")
                       + (f"; ROCm {env.rocm}" if env.rocm else "")
                       ,
        "version_label": lock.lock_digest.removeprefix("sha256:")[:12],
        "env_vars": _env_vars(env),
        "apt": sorted(set(system) | set(env.apt)),
        "python_from": python,
        "uv": uv,
        "default_url": default_url,
        "default_arg": _arg("pypi") if default_url else "",
        "groups": groups,
        "args": args,
        "default_requirements": default_reqs,
        "held": held,
        "extra_pip": extra_pip,
        "pip_flags": " --require-hashes --no-deps" if full else "",
        "pytorch_file": index_file,
        "conda_name": tag,
        "conda_specs": conda_specs,
        "conda_groups": conda_groups,
        "conda_default": conda_default,
    }
    names_out = [n for n in ARTIFACTS if n != "smoke_test.py" and (dockerfile or n != "Dockerfile")]
    out = {name: jenv.get_template(f"{name}.j2").render(ctx) for name in names_out}
    if groups:
        out[index_file] = jenv.get_template(f"{PYTORCH_REQUIREMENTS}.j2").render(ctx)
    script = (templates_dir() / "smoke_test.py").read_text(encoding="utf-8")
    expected = json.dumps(_expected(lock, env), sort_keys=True)
    out["smoke_test.py"] = script.replace(_MARKER, repr(expected), 1)
    return out
