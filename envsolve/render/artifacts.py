"""Pure rendering: a lock environment plus the templates in ``templates/`` into artifact texts.

``render_environment(lock, env)`` returns ``{file name: text}`` for the Dockerfile, requirements.txt
(and requirements-pytorch.txt when PyTorch-index builds are locked; requirements-build.txt when
extension packages are built from source, and in a full lock requirements-unchecked.txt for what pip
cannot check against a hash), environment.yml and smoke_test.py; the same lock gives the same bytes.
Every extension package the lock holds reaches every file that installs packages, at the release
the lock chose (``name==version``, ``name @ URL``); other ``[packages] pip`` lines of a
frameworks-only lock stay as written. Containers run Linux: a Windows or macOS
environment gets no Dockerfile, and a README.md that says why and how to install it on its
host; a WSL2 environment's README.md says how to run its image under Docker Desktop's WSL2
GPU support. Every value that reaches a file is checked first (no line breaks or control
characters, URLs as :func:`envsolve.config.check_url` wants them) and quoted for where it
lands: shell words with :func:`shlex.quote`, Dockerfile strings escaped, YAML scalars as JSON
strings (JSON is YAML). Jinja2 is imported here only, so commands that do not render never
pay for it.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..config import check_url, requirement_credentials, strip_credentials
from ..data import compat_package
from ..domain import (
    DEFAULT_PLATFORM,
    EXTRA_INDEXES,
    FLAT_INDEXES,
    LINUX_PLATFORMS,
    Platform,
    cuda_of_variant,
    driver_text,
    os_of,
    qualified_image,
)
from ..errors import LockError
from ..lock.model import Environment, Lock, Package, build_problems, data_build_rules, index_url
from ..paths import templates_dir
from ..solve import ExtensionPin, PackagePin
from ..spec import is_name

__all__ = ["ARTIFACTS", "BUILD_REQUIREMENTS", "HOST_README", "PYTORCH_REQUIREMENTS", "UNCHECKED_REQUIREMENTS",
           "containerised", "from_image", "host_notes", "no_dockerfile", "render_environment", "render_lock",
           "unpinned_warning"]

ARTIFACTS = ("Dockerfile", "requirements.txt", "environment.yml", "smoke_test.py")
# written beside them for an environment of a Windows or macOS host (no Dockerfile) or of WSL2
HOST_README = "README.md"
# conda's subdir of each platform that has no Dockerfile (environment.yml names it)
_CONDA_SUBDIR: dict[Platform, str] = {"windows/amd64": "win-64", "windows/arm64": "win-arm64",
                                      "darwin/arm64": "osx-arm64", "darwin/amd64": "osx-64"}
# the operating system's name as its users say it
_OS_NAME = {"windows": "Windows", "darwin": "macOS", "linux": "Linux"}
# written beside them when the environment has PyTorch-index builds (requirements-<index>.txt for
# another index's, such as requirements-paddle.txt)
PYTORCH_REQUIREMENTS = "requirements-pytorch.txt"
# written beside them when the environment builds extension packages from source: installed after
# the others, with --no-build-isolation and the build's settings, as the Dockerfile's own steps do
BUILD_REQUIREMENTS = "requirements-build.txt"
# a full lock's lines pip cannot check against a hash (a source build from a git URL, a wheel found on
# PyG's page): apart from the hashed files, since pip checks the hashes of a whole file or of none
UNCHECKED_REQUIREMENTS = "requirements-unchecked.txt"
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
    _check_indexes(env, i, lock_name)
    _check_builds(env, i, lock.scope == "full", lock_name)
    _check_credentials(urls, [(f"environments[{i}].pip[{j}]", line) for j, line in enumerate(env.pip)], lock_name)


def _check_indexes(env: Environment, i: int, lock_name: str) -> None:
    """Refuse an index that is no name: it names a file, a build argument and a BuildKit mount."""
    for j, p in enumerate(env.frameworks):
        if not is_name(p.index):
            raise LockError(f"{lock_name}: environments[{i}].frameworks[{j}].index = {p.index!r} is not an index "
                            "name (letters, digits, '.', '_' or '-')", tip="regenerate the lock from a spec without it")


def _check_builds(env: Environment, i: int, full: bool, lock_name: str) -> None:
    """Refuse (exit 2) a source build whose settings the data does not list for its package (the
    reader's rule, held here too: only the variables a package's build reads reach an ENV line),
    or, in a full lock, one without the sha256 of its sdist."""
    rules = data_build_rules()
    for j, x in enumerate(env.extensions):
        found = build_problems(x, rules)
        if full and x.install == "source" and not x.build_from and not x.hash:
            found.append(("hash", "is empty: a full lock holds the sha256 of the sdist it builds"))
        if found:
            key, why = found[0]
            raise LockError(f"{lock_name}: environments[{i}].extensions[{j}].{key} {why}",
                            tip="regenerate the lock with `envsolve lock project.toml`")


def _check_credentials(urls: list[tuple[str, str]], pip: list[tuple[str, str]], lock_name: str) -> None:
    """Refuse (exit 2) a lock that holds a URL's credentials (a lock envsolve writes never does):
    no generated file or image layer may carry them."""
    held = [where for where, url in urls if url and strip_credentials(url)[1]]
    held += [where for where, line in pip if requirement_credentials(line, where)[0] != line]
    if held:
        raise LockError(f"{lock_name}: {', '.join(held)} holds a URL's credentials (user:password@, or a token "
                        "in an index URL's query), which no generated file or image layer may carry",
                        tip="lock again: envsolve takes credentials out of the lock and passes them to the "
                            "installers as a netrc (see README 'Credentials')")


def _dq(value: str) -> str:
    """A Dockerfile double-quoted string (LABEL values): quotes, backslashes and ``$`` escaped."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _dqs(value: str) -> str:
    """Text inside a shell double-quoted word: ``\\``, ``"``, ``$`` and backquotes escaped (a checked
    value has none: this is the second line of defence)."""
    return re.sub(r'([\\"$`])', r"\\\1", value)


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
        "run_flags": " ".join(env.run_flags),
        **({"extensions": [{"name": x.name, "version": x.version, "install": x.install} for x in env.extensions]}
           if env.extensions else {}),
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
    """The build argument of an index's root: a shell variable name (``my-mirror``: ``ENVSOLVE_INDEX_MY_MIRROR``)."""
    return "ENVSOLVE_INDEX_" + re.sub(r"[^A-Z0-9_]", "_", index.upper())


# How pip takes an index other than its own: alone (--index-url), beside the default index
# (--extra-index-url: nvidia-tensorflow), or as a folder of wheel files (--find-links: NVIDIA's JetPack wheels)
_OPTION = {**dict.fromkeys(EXTRA_INDEXES, "--extra-index-url"), **dict.fromkeys(FLAT_INDEXES, "--find-links")}


def _group(url: str, pkgs: list[PackagePin], roots: Mapping[str, str]) -> dict[str, Any]:
    """The builds of one non-default index URL. In the Dockerfile the URL is its index's root as a
    build argument (a mirror at build time) and the build's folder under it, when the URL is that."""
    index, path = pkgs[0].index, pkgs[0].index_path
    on_root = bool(roots.get(index)) and url == index_url(index, path, roots)
    return {"index": index, "url": url, "requirements": [p.requirement for p in pkgs],
            "option": _OPTION.get(index, "--index-url"),
            "arg": _arg(index) if on_root else "", "sub": f"/{path}" if on_root and path else ""}


def _groups(lock: Lock, env: Environment) -> list[dict[str, Any]]:
    """The packages of each non-default index, by URL: each group is installed from its index
    alone, so no other index can serve a package of the same name (dependency confusion)."""
    by_url: dict[str, list[PackagePin]] = {}
    for p in env.frameworks:
        if p.index != "pypi":
            by_url.setdefault(p.index_url, []).append(p)
    roots = dict(lock.indexes)
    return [_group(url, pkgs, roots) for url, pkgs in sorted(by_url.items())]


def _conda_specs(env: Environment) -> list[str]:
    """The conda MatchSpecs of environment.yml: Python, the frameworks conda-forge has, [packages] conda."""
    on_conda = [s for p in env.frameworks for s in p.conda]
    # cuda-version: the run-export of conda-forge's CUDA builds
    cuda = [f"cuda-version={env.cuda}"] if env.cuda and any("=cuda" in s for s in on_conda) else []
    return [f"python={env.python}", *cuda, *sorted(on_conda), *env.conda]


def _direct_urls(env: Environment) -> dict[str, str]:
    """Canonical name -> URL of each ``[packages] pip`` direct reference (``name @ URL``): the
    lock records it there, without credentials, and the file's hash in its package."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out = {}
    for line in env.pip:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.url:
            out[str(canonicalize_name(req.name))] = req.url
    return out


def _hashed(p: Package, direct: Mapping[str, str]) -> str:
    """A requirements-file line pip installs with --require-hashes: ``name==version``, or
    ``name @ URL`` for a direct reference."""
    url = direct.get(p.name)
    return " ".join([f"{p.name} @ {url}" if url else p.requirement, *(f"--hash={h}" for h in p.hashes)])


def _full_lines(env: Environment, groups: list[dict[str, Any]]) -> dict[str, Any]:
    """What each file installs from a full lock: every package, with hashes; each file installs
    exactly its lines (--no-deps)."""
    routed = {g["url"] for g in groups}
    on_conda = {p.name for p in env.frameworks if p.conda}
    direct = {**_direct_urls(env), **_release_wheels(env)}
    own = _own_step_names(env) - set(_release_wheels(env))  # a full lock hashes a release wheel: not its own step

    def lines(url: str | None, skip: set[str]) -> list[str]:
        """The hashed lines of the group at ``url`` (None: the default index), less ``skip``."""
        return [_hashed(p, direct) for p in env.packages
                if (p.index_url == url if url is not None else p.index_url not in routed) and p.name not in skip | own]

    hashed = [f"{x.name}=={x.version} --hash={x.hash}" for x in env.extensions
              if x.install == "source" and not x.build_from]
    unchecked = [x.requirement for x in env.extensions if x.install == "source" and x.build_from]
    unchecked += [f"{x.name}=={x.version}" for x in env.extensions if x.install == "pyg"]
    return {"groups": [{**g, "requirements": lines(g["url"], set())} for g in groups],
            "default_requirements": lines(None, set()), "held": [], "extra_pip": [], "pip_lines": [],
            "find_links": [], "build_lines": hashed, "unchecked_lines": unchecked,
            "unchecked_links": _pyg_pages(env),
            "conda_groups": [{**g, "requirements": reqs} for g in groups if (reqs := lines(g["url"], on_conda))],
            "conda_default": lines(None, on_conda)}


def _framework_lines(env: Environment, groups: list[dict[str, Any]]) -> dict[str, Any]:
    """What each file installs from a frameworks-only lock: the pins, and [packages] pip, which
    pip resolves when the image is built (the pins installed first and pinned again after); an
    extension package that installs in a step of its own is left to that step."""
    lines = _pip_lines(env)
    return {"groups": groups, "default_requirements": [p.requirement for p in env.frameworks if p.index == "pypi"],
            "held": [r for g in groups for r in g["requirements"]],
            "extra_pip": [line for line, x in lines if x is None or x.install == "index"],
            "pip_lines": [*(line for line, x in lines if x is None or x.install != "source"), *_build_requires(env)],
            "find_links": _pyg_pages(env), "unchecked_lines": [], "unchecked_links": [],
            "build_lines": [line for line, x in lines if x is not None and x.install == "source"],
            **_conda_pip(env, groups)}


def _pip_lines(env: Environment) -> list[tuple[str, ExtensionPin | None]]:
    """Each ``[packages] pip`` line as a frameworks-only lock renders it, with the extension package
    it names (None for another line, which stays as written: the user's own range): pinned to the
    release the lock chose (:func:`_pinned`)."""
    how = {x.name: x for x in env.extensions}
    out: list[tuple[str, ExtensionPin | None]] = []
    for line in env.pip:
        x = how.get(_line_name(line))
        out.append((_pinned(line, x), x) if x is not None else (line, None))
    return out


def _pinned(line: str, x: ExtensionPin) -> str:
    """The pip line of extension package ``x`` at the release the lock chose, its extras and marker
    kept: ``name==version`` (the default index's wheel, PyG's page, a source build of the sdist),
    ``name @ URL`` (a GitHub release wheel), or the requirement a source build installs."""
    from ..versions import parse_requirement

    try:
        req = parse_requirement(line)
    except ValueError:  # packaging's InvalidRequirement: the lock reader refuses such a line before this
        return x.requirement
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    if x.install == "github":
        pin = f"{x.name}{extras} @ {x.url}"
    elif x.install == "source" and x.build_from:
        pin = x.build_from
    else:
        pin = f"{x.name}{extras}=={x.version}"
    return f"{pin} ; {req.marker}" if req.marker else pin


def _build_requires(env: Environment) -> list[str]:
    """What the source builds install first (the data's lines, as the Dockerfile installs them before
    the build), each once, less the names ``[packages] pip`` already has."""
    named = {_line_name(line) for line in env.pip}
    found = dict.fromkeys(r for x in env.extensions if x.install == "source" for r in x.build_requires)
    return [r for r in found if _line_name(r) not in named]


def _pyg_pages(env: Environment) -> list[str]:
    """The PyG wheel pages the environment's extension packages are found on, each once."""
    return list(dict.fromkeys(x.url for x in env.extensions if x.install == "pyg"))


def _build_settings(env: Environment) -> list[str]:
    """``NAME=VALUE`` of every source build's settings (its arch list for the environment's GPUs, its
    other variables), as the Dockerfile's ENV lines give them, each once."""
    out = [f"{x.build_env}={x.build_archs}" for x in env.extensions if x.install == "source" and x.build_env]
    out += [v for x in env.extensions if x.install == "source" for v in x.build_vars]
    return list(dict.fromkeys(out))


def _line_name(line: str) -> str:
    """The canonical name a [packages] pip line installs ("" when it is no requirement)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        return str(canonicalize_name(Requirement(line).name))
    except InvalidRequirement:
        return ""


def _release_wheels(env: Environment) -> dict[str, str]:
    """Name -> URL of each extension package installed from its GitHub release's wheel."""
    return {x.name: x.url for x in env.extensions if x.install == "github"}


def _own_step_names(env: Environment) -> set[str]:
    """The extension packages the Dockerfile installs in a step of their own (all but index wheels)."""
    return {x.name for x in env.extensions if x.install != "index"}


def _extension_steps(env: Environment, full: bool) -> list[dict[str, Any]]:
    """The Dockerfile's steps for extension packages that do not come from the default index: a
    GitHub release wheel (in a full lock, the hashed requirements carry it), a PyG page, a source
    build for the environment's GPUs only."""
    steps = []
    for x in env.extensions:
        if x.install == "index" or (full and x.install == "github"):
            continue
        settings = [*(s.split("=", 1) for s in x.build_vars)]
        hashed = full and x.install == "source" and not x.build_from
        steps.append({"name": x.name, "version": x.version, "install": x.install, "url": x.url,
                      "requirement": x.requirement, "build_env": x.build_env, "build_archs": x.build_archs,
                      "build_requires": list(x.build_requires), "settings": [tuple(kv) for kv in settings],
                      # a full lock's sdist, installed from a requirements file with its hash
                      "hashed": f"{x.name}=={x.version} --hash={x.hash}" if hashed else "",
                      "sdist_file": f"envsolve-{x.name}-sdist.txt"})
    return steps


def _conda_pip(env: Environment, groups: list[dict[str, Any]]) -> dict[str, Any]:
    """What environment.yml's pip section installs of a frameworks-only lock: the frameworks
    conda-forge lacks, and [packages] pip."""
    pip_only = [p for p in env.frameworks if not p.conda]

    def of(url: str) -> list[str]:
        return [p.requirement for p in pip_only if p.index_url == url]

    lines = [*(f"--find-links {url}" for url in _pyg_pages(env)),
             *(line for line, x in _pip_lines(env) if x is None or x.install != "source"), *_build_requires(env)]
    return {"conda_groups": [{**g, "requirements": reqs} for g in groups if (reqs := of(g["url"]))],
            "conda_default": [p.requirement for p in pip_only if p.index == "pypi"] + lines}


def _refuse(lock: Lock, env: Environment, lock_name: str, groups: list[dict[str, Any]], dockerfile: bool) -> None:
    """Refuse (exit 2) what no artifact can carry: a bad value, no base image for a Dockerfile,
    conda packages in a Dockerfile, builds from two non-default index URLs."""
    _check(lock, env, lock_name)
    if dockerfile and not env.base_image:
        raise LockError(f"environment {env.name!r} has no base image (the data has none for it)",
                        tip="add the image to matrices/images.toml, or set [container] os/flavor to one that exists")
    if dockerfile and env.conda:
        raise LockError(f"environment {env.name!r}: the Dockerfile cannot install conda packages "
                        f"({', '.join(env.conda)}): its image has no conda",
                        tip=f"move each to {_ALTERNATIVES}; or render without the Dockerfile "
                            "(`envsolve render --no-dockerfile`): environment.yml carries them")
    if len(groups) > 1:
        raise LockError(f"environment {env.name!r} takes builds from {len(groups)} non-default index URLs "
                        f"({', '.join(g['url'] for g in groups)}); pip can take them from one only",
                        tip="pin the frameworks to builds of one variant, then lock again")


def _description(env: Environment) -> str:
    """The image's description label: its frameworks, Python and stack."""
    names = ", ".join(f"{p.name} {p.version} ({p.variant})" for p in env.frameworks) or "no frameworks"
    cuda = f"; CUDA {env.cuda}, {driver_text(env.driver_min, env.jetpack)}" if env.cuda else ""
    rocm = f"; ROCm {env.rocm}" if env.rocm else ""
    return f"{names}; Python {env.python}{cuda}{rocm}"


def _image(lock: Lock, env: Environment) -> dict[str, Any]:
    """The image's part of the templates' context: base, tag, labels, Python, system packages."""
    python = env.python_from
    system = ["ca-certificates"] + (["python3", "python3-venv"] if python != "image" else [])
    tag = f"{lock.project}-{env.name}".lower()
    return {
        "base_image": from_image(env),
        "tag": tag,
        "conda_name": tag,
        "run_flags": "".join(f"{flag} " for flag in env.run_flags),
        "platform_flag": f"--platform {env.platform} " if env.platform != DEFAULT_PLATFORM else "",
        "groups_of_user": "video,render" if env.accelerator == "rocm" else "",
        "description": _description(env),
        "version_label": lock.lock_digest.removeprefix("sha256:")[:12],
        "env_vars": _env_vars(env),
        "apt": sorted(set(system) | set(env.apt)),
        **_forward(env),
        "python_from": python,
        "uv": env.tool("uv") if python == "uv" else "",
    }


def _forward(env: Environment) -> dict[str, str]:
    """A forward-compatibility environment's package (``cuda-compat-13-0``: CUDA major.minor's
    user-mode driver) and the folder it installs its libraries in, which goes first on
    LD_LIBRARY_PATH as NVIDIA's guide sets it; empty for any other environment."""
    if env.compat != "forward" or not env.cuda:
        return {"cuda_compat": "", "compat_dir": ""}
    major, minor = (env.cuda.split(".") + ["0"])[:2]
    if not (major.isdigit() and minor.isdigit()):
        raise LockError(f"environment {env.name!r}: cuda = {env.cuda!r} is no CUDA version",
                        tip="regenerate the lock (envsolve lock)")
    return {"cuda_compat": compat_package(int(major), int(minor)),
            "compat_dir": f"/usr/local/cuda-{major}.{minor}/compat"}


def _indexes(lock: Lock, groups: list[dict[str, Any]]) -> dict[str, Any]:
    """The indexes' part of the templates' context: the default index's URL and the build
    arguments that stand for the index roots."""
    roots = dict(lock.indexes)
    default_url = roots.get("pypi", "")
    default = {(_arg("pypi"), default_url)} if default_url else set()
    return {"default_url": default_url, "default_arg": _arg("pypi") if default_url else "",
            "args": sorted({(g["arg"], roots[g["index"]]) for g in groups if g["arg"]} | default),
            "pytorch_file": _index_file(groups)}


def _index_file(groups: list[dict[str, Any]]) -> str:
    return f"requirements-{groups[0]['index']}.txt" if groups else PYTORCH_REQUIREMENTS


def _jinja() -> Any:
    import jinja2

    jenv = jinja2.Environment(loader=jinja2.FileSystemLoader(templates_dir()), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)
    jenv.filters.update(sh=shlex.quote, dq=_dq, dqs=_dqs, yq=_yq)
    return jenv


_MAIN = 'if __name__ == "__main__":'


def _smoke_test(lock: Lock, env: Environment) -> str:
    """The smoke test, with the lock's facts for this environment in it, and the checks of its CUDA
    extension packages (``templates/smoke_extensions.py``) when it has some."""
    script = (templates_dir() / "smoke_test.py").read_text(encoding="utf-8")
    if env.extensions:
        extensions = (templates_dir() / "smoke_extensions.py").read_text(encoding="utf-8")
        script = script.replace(_MAIN, extensions + _MAIN, 1)
    return script.replace(_MARKER, repr(json.dumps(_expected(lock, env), sort_keys=True)), 1)


def containerised(env: Environment) -> bool:
    """Whether ``env`` can have a Dockerfile: containers run Linux (domain.LINUX_PLATFORMS)."""
    return env.platform in LINUX_PLATFORMS


def _host(env: Environment) -> dict[str, Any]:
    """The host's part of the templates' context: its OS's name, conda's subdir, why there is no
    Dockerfile, how a venv is made and activated there."""
    system = os_of(env.platform)
    windows = system == "windows"
    return {"os_name": _OS_NAME.get(system, system), "conda_subdir": _CONDA_SUBDIR.get(env.platform, ""),
            "no_dockerfile": "" if containerised(env) else no_dockerfile(env),
            "venv": f"py -{env.python} -m venv .venv" if windows else f"python{env.python} -m venv .venv",
            "activate": r".venv\Scripts\activate" if windows else "source .venv/bin/activate",
            "wsl_run": _docker_run(env) if env.wsl else ""}


def _docker_run(env: Environment) -> str:
    """``docker run --rm`` with the flags that give the environment's container its GPUs."""
    return " ".join(("docker run --rm", *env.run_flags))


def no_dockerfile(env: Environment) -> str:
    """Why a Windows or macOS environment has no Dockerfile, and what to do instead: the one text
    render's output, its README.md and `envsolve build` say."""
    system = _OS_NAME.get(os_of(env.platform), env.platform)
    instead = ("on Windows use its requirements files in a venv, or WSL2 for a container (a target with "
               "platform = 'linux/amd64' and wsl = true)" if system == "Windows" else
               f"on {system} use its requirements files in a venv")
    return f"no Dockerfile: containers run Linux and this environment is for {env.platform}; {instead}"


def from_image(env: Environment) -> str:
    """The image the Dockerfile's FROM names: the base image with its registry, pinned by the
    digest the full lock read (``image:tag@sha256:...``), else by its tag alone."""
    pinned = f"@{env.base_image_digest}" if env.base_image_digest else ""
    return qualified_image(env.base_image) + pinned


def unpinned_warning(env: Environment) -> str:
    """The warning of an environment whose FROM names a tag without its digest ("" when pinned)."""
    if env.base_image_digest or not env.base_image or not containerised(env):
        return ""
    return (f"{env.name}: the Dockerfile's FROM names the tag {env.base_image} without its digest (the lock "
            "has none), so a rebuild takes whatever the tag names then; a full `envsolve lock` (not --frameworks-only) "
            "with the registry reachable records it")


def host_notes(lock: Lock, target: str | None = None) -> list[str]:
    """What `envsolve render` says of each environment (or ``target``) beyond the files it wrote:
    why a Windows or macOS one has no Dockerfile, how a WSL2 one's image gets the GPUs (a base image
    without its digest is :func:`unpinned_warning`'s)."""
    out = []
    for env in (e for e in lock.environments if target in (None, e.name)):
        if not containerised(env):
            out.append(f"{env.name}: {no_dockerfile(env)}; its README.md says how")
        elif env.wsl:
            out.append(f"{env.name}: WSL2: run the image under Docker Desktop's WSL2 backend, "
                       f"`{_docker_run(env)} IMAGE` (README.md says how)")
    return out


def render_environment(lock: Lock, env: Environment, lock_name: str = "envsolve.lock", *, dockerfile: bool = True
                       ) -> dict[str, str]:
    """Every artifact of one environment of ``lock``, as ``{file name: text}``; no Dockerfile for
    a Windows or macOS environment (:func:`containerised`), which gets a README.md instead, as a
    WSL2 one does beside its Dockerfile.

    Raises :class:`LockError` (exit 2) for a value no file may carry, or (when ``dockerfile``) an
    environment without a base image or with conda packages, which the image cannot install."""
    dockerfile = dockerfile and containerised(env)
    groups = _groups(lock, env)
    _refuse(lock, env, lock_name, groups, dockerfile)
    full = lock.scope == "full"
    ctx = {"lock_name": lock_name, "lock_digest": lock.lock_digest, "project": lock.project, "env": env,
           "conda_specs": _conda_specs(env),
           "pip_flags": " --require-hashes --no-deps" if full else "", **_image(lock, env),
           "extension_steps": _extension_steps(env, full), **_host(env), "build_settings": _build_settings(env),
           "build_names": ",".join(x.name for x in env.extensions if x.install == "source" and not x.build_from),
           "build_file": BUILD_REQUIREMENTS, "unchecked_file": UNCHECKED_REQUIREMENTS,
           **_indexes(lock, groups), **(_full_lines if full else _framework_lines)(env, groups)}
    jenv = _jinja()
    names = [n for n in ARTIFACTS if n != "smoke_test.py" and (dockerfile or n != "Dockerfile")]
    names += [PYTORCH_REQUIREMENTS] if groups else []
    names += [BUILD_REQUIREMENTS] if ctx["build_lines"] else []
    names += [UNCHECKED_REQUIREMENTS] if ctx["unchecked_lines"] else []
    names += [HOST_README] if env.wsl or not containerised(env) else []
    out = {_file_name(n, groups): jenv.get_template(f"{n}.j2").render(ctx) for n in names}
    out["smoke_test.py"] = _smoke_test(lock, env)
    return out


def _file_name(template: str, groups: list[dict[str, Any]]) -> str:
    """The artifact a template writes: the non-default index's requirements file is named for it."""
    return _index_file(groups) if template == PYTORCH_REQUIREMENTS else template


def render_lock(lock: Lock, lock_path: Path, root: Path, target: str | None = None, *, dockerfile: bool = True
                ) -> dict[Path, str]:
    """Every artifact of every environment of ``lock`` (or of ``target``), as ``{path: text}``
    under ``root``/<environment>/; raises :class:`LockError` for a target the lock lacks."""
    names = [e.name for e in lock.environments]
    if target is not None and target not in names:
        raise LockError(f"{lock_path}: has no environment {target!r} (it has: {', '.join(names)})",
                        tip="pass one of those to --target, or leave --target out for all")
    from ..files import under  # the one rule: inside root once links and .. are followed (exit 2)

    return {under(root, f"{e.name}/{name}", "-o"): text
            for e in lock.environments if target in (None, e.name)
            for name, text in render_environment(lock, e, lock_path.name, dockerfile=dockerfile).items()}
