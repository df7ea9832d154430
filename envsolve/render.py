"""Pure rendering: a lock environment plus the templates in ``templates/`` into artifact texts.

``render(lock, env)`` returns ``{file name: text}`` for the Dockerfile, requirements.txt,
environment.yml and smoke_test.py; the same lock gives the same bytes. Jinja2 is imported here
only, so commands that do not render never pay for it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .domain import cuda_of_variant
from .errors import LockError
from .lock import Environment, Lock
from .paths import templates_dir

__all__ = ["ARTIFACTS", "render", "templates_dir"]

ARTIFACTS = ("Dockerfile", "requirements.txt", "environment.yml", "smoke_test.py")
_PLACEHOLDER = re.compile(r"\$\{(ENVSOLVE_INDEX_[A-Z0-9_]+)\}")
_MARKER = '"__ENVSOLVE_EXPECTED__"'


def _index_lines(lock: Lock, env: Environment) -> list[str]:
    lines = [f"--index-url {dict(lock.indexes)['pypi']}"]
    extra = sorted({p.index_url for p in env.packages if p.index != "pypi"})
    return lines + [f"--extra-index-url {u}" for u in extra]


def _expected(lock: Lock, env: Environment) -> dict[str, Any]:
    """What the smoke test checks: the lock's facts for this environment."""
    torch = next((p for p in env.packages if p.name == "torch"), None)
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
                     for p in env.packages],
    }


def _env_vars(env: Environment) -> list[tuple[str, str]]:
    out = []
    if env.accelerator == "cuda":
        # read by the NVIDIA container toolkit
        out += [("NVIDIA_VISIBLE_DEVICES", "all"), ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility")]
    if env.keras_backend:
        out.append(("KERAS_BACKEND", env.keras_backend))
    return out


def _conda_specs(env: Environment) -> tuple[list[str], list[str]]:
    """(conda MatchSpecs, framework requirements left for pip)."""
    specs = [f"python={env.python}"]
    on_conda = [s for p in env.packages for s in p.conda]
    if env.cuda and any("=cuda" in s for s in on_conda):
        specs.append(f"cuda-version={env.cuda}")  # the run-export of conda-forge's CUDA builds
    specs += sorted(on_conda)
    specs += list(env.conda)
    return specs, [p.requirement for p in env.packages if not p.conda]


def render(lock: Lock, env: Environment, lock_name: str = "envsolve.lock") -> dict[str, str]:
    """Every artifact of one environment of ``lock``, as ``{file name: text}``."""
    import jinja2

    if not env.base_image:
        raise LockError(f"environment {env.name!r} has no base image (the data has none for it)",
                        tip="add the image to matrices/images.toml, or set [container] os/flavor to one that exists")
    jenv = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)
    frameworks = [p.requirement for p in env.packages]
    index_lines = _index_lines(lock, env)
    conda_specs, conda_pip = _conda_specs(env)
    accelerator = env.accelerator
    # python images bring the locked Python; on any other base a pinned uv installs it
    uv = "" if env.base_image.startswith("python:") else env.tool("uv")
    system = ["ca-certificates"] + (["python3", "python3-venv"] if uv else [])
    placeholders = sorted({m for line in index_lines for m in _PLACEHOLDER.findall(line)})
    tag = f"{lock.project}-{env.name}".lower()
    run_flags = {"cuda": "--gpus all ", "rocm": "--device=/dev/kfd --device=/dev/dri --group-add video "}
    names = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in env.packages)
    ctx = {
        "lock_name": lock_name,
        "lock_digest": lock.lock_digest,
        "env": env,
        "tag": tag,
        "run_flags": run_flags.get(accelerator, ""),
        "description": f"{names or 'no frameworks'}; Python {env.python}"
                       + (f"; CUDA {env.cuda}, driver >= {env.driver_min}" if env.cuda else "")
                       + (f"; ROCm {env.rocm}" if env.rocm else ""),
        "version_label": lock.lock_digest.removeprefix("sha256:")[:12],
        "env_vars": _env_vars(env),
        "apt": sorted(set(system) | set(env.apt)),
        "uv": uv,
        "index_args": placeholders,
        "index_options": " ".join(index_lines),
        "index_lines": index_lines,
        "framework_requirements": frameworks,
        "conda_name": tag,
        "conda_specs": conda_specs,
        "pip_requirements": conda_pip + list(env.pip),
    }
    out = {name: jenv.get_template(f"{name}.j2").render(ctx) for name in ARTIFACTS if name != "smoke_test.py"}
    script = (templates_dir() / "smoke_test.py").read_text(encoding="utf-8")
    expected = json.dumps(_expected(lock, env), sort_keys=True)
    out["smoke_test.py"] = script.replace(_MARKER, repr(expected), 1)
    return out
