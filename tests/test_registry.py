"""Base images pinned by digest (envsolve.index.registry, the full lock's digests, render's FROM)
and image end of life (matrices/images.toml [[eol]]): against recorded registry answers
(pytest-httpserver) and against a real registry the test starts (Debian's docker-registry, an
image pushed by podman)."""

from __future__ import annotations

import datetime
import hashlib
import json
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner
from pytest_httpserver import HTTPServer

from envsolve.cli import main
from envsolve.data import load_dir
from envsolve.errors import LockError, MatrixError, RefreshError
from envsolve.index import registry as registry_module
from envsolve.index.registry import DOCKER_HUB, RegistryClient, repository_of
from envsolve.lock import job
from envsolve.lock import model as lockfile
from envsolve.provider import Provider
from envsolve.render.artifacts import host_notes, render_environment, unpinned_warning
from envsolve.solve import solve
from envsolve.solve.images import end_of_life_warnings
from envsolve.voice import SILENT, Voice
from tests.conftest import FIXTURE, spec_of

DIGEST = "sha256:" + "4" * 64
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"
SPEC = '[project]\nname = "demo"\n[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["RTX 5090"]\n'


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _lock(image: str) -> lockfile.Lock:
    """A full lock of the fixture data whose one environment runs on ``image``."""
    g = Provider(load_dir(FIXTURE))
    spec = spec_of(SPEC, g)
    resolutions = [msgspec.structs.replace(r, base_image=image) for r in solve(g, spec)]
    return lockfile.build(project="demo", spec_name="project.toml", spec_bytes=SPEC.encode(),
                          data_version=g.data_version, data_digest=g.digest, resolutions=resolutions,
                          full={"default": ()})


def _client(tmp_path: Path) -> RegistryClient:
    return RegistryClient(cache_dir=tmp_path / "cache", retries=0, timeout=5)


def _index_body() -> bytes:
    return json.dumps({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "1" * 64, "size": 10,
         "platform": {"architecture": "amd64", "os": "linux"}},
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + "2" * 64, "size": 10,
         "platform": {"architecture": "arm64", "os": "linux"}}]}).encode()


# ---------------------------------------------------------------------------- image references


@pytest.mark.parametrize(("ref", "base", "path", "tag"), [
    ("nvidia/cuda:12.8.1-base-ubuntu24.04", f"https://{DOCKER_HUB}", "nvidia/cuda", "12.8.1-base-ubuntu24.04"),
    ("ubuntu:24.04", f"https://{DOCKER_HUB}", "library/ubuntu", "24.04"),
    ("docker.io/library/python:3.12-slim", f"https://{DOCKER_HUB}", "library/python", "3.12-slim"),
    ("nvcr.io/nvidia/pytorch:25.01-py3", "https://nvcr.io", "nvidia/pytorch", "25.01-py3"),
    ("localhost:5000/team/app:1", "http://localhost:5000", "team/app", "1"),
    ("ghcr.io/org/app", "https://ghcr.io", "org/app", "latest"),
])
def test_an_image_reference_names_its_registry_path_and_tag(ref: str, base: str, path: str, tag: str) -> None:
    repo = repository_of(ref)
    assert (repo.base, repo.path, repo.tag) == (base, path, tag)


def test_plain_http_only_for_this_machine_or_a_registry_the_user_names() -> None:
    assert repository_of("registry.example:5000/app:1").base == "https://registry.example:5000"
    assert repository_of("registry.example:5000/app:1", frozenset({"registry.example:5000"})).base == \
        "http://registry.example:5000"
    assert repository_of("[::1]:5000/app:1").base == "http://[::1]:5000"  # this machine, IPv6
    named = registry_module.insecure_registries({registry_module.INSECURE_VARIABLE: "http://Reg.Example:5000, other"})
    assert named == frozenset({"reg.example:5000", "other"})
    # the registry's own token service, on its host:port, is as plain as the registry the user named
    assert registry_module._plain_ok("reg.example", "reg.example:5000", named)
    assert not registry_module._plain_ok("reg.example", "reg.example:6000", named)


# ---------------------------------------------------------------------------- recorded answers


def test_a_bearer_challenge_is_answered_with_an_anonymous_token(httpserver: HTTPServer, tmp_path: Path) -> None:
    body = _index_body()
    realm = httpserver.url_for("/token")
    httpserver.expect_request("/token", query_string={"service": "registry.test",
                                                      "scope": "repository:library/ubuntu:pull"}
                              ).respond_with_json({"token": "T0KEN"})
    httpserver.expect_request("/v2/library/ubuntu/manifests/24.04", headers={"Authorization": "Bearer T0KEN"}
                              ).respond_with_data(body, content_type=INDEX_TYPE,
                                                  headers={"Docker-Content-Digest": "sha256:" +
                                                           hashlib.sha256(body).hexdigest()})
    httpserver.expect_request("/v2/library/ubuntu/manifests/24.04").respond_with_data(
        "", status=401, headers={"WWW-Authenticate": f'Bearer realm="{realm}",service="registry.test",'
                                                     'scope="repository:library/ubuntu:pull"'})
    got = _client(tmp_path).digest(f"localhost:{httpserver.port}/library/ubuntu:24.04")
    assert got == "sha256:" + hashlib.sha256(body).hexdigest()
    accept = [r.headers.get("Accept", "") for r, _ in httpserver.log if "/manifests/" in r.path]
    assert all(INDEX_TYPE in a and "application/vnd.docker.distribution.manifest.v2+json" in a for a in accept)


def test_a_manifest_list_without_a_digest_header_is_digested_by_its_body(httpserver: HTTPServer,
                                                                         tmp_path: Path) -> None:
    body = _index_body()
    httpserver.expect_request("/v2/nvidia/cuda/manifests/12.8.1-base-ubuntu24.04").respond_with_data(
        body, content_type="application/vnd.docker.distribution.manifest.list.v2+json")
    got = _client(tmp_path).digest(f"localhost:{httpserver.port}/nvidia/cuda:12.8.1-base-ubuntu24.04")
    assert got == "sha256:" + hashlib.sha256(body).hexdigest()


def test_a_manifest_that_does_not_match_its_digest_is_refused(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/v2/app/manifests/1").respond_with_data(
        _index_body(), content_type=INDEX_TYPE, headers={"Docker-Content-Digest": DIGEST})
    with pytest.raises(RefreshError, match="does not match the digest its registry gives"):
        _client(tmp_path).digest(f"localhost:{httpserver.port}/app:1")


def test_a_deleted_tag_says_so(httpserver: HTTPServer, tmp_path: Path) -> None:
    httpserver.expect_request("/v2/app/manifests/gone").respond_with_data("", status=404)
    with pytest.raises(RefreshError, match="has no app:gone .HTTP 404.: the tag was deleted"):
        _client(tmp_path).digest(f"localhost:{httpserver.port}/app:gone")


def test_a_registry_that_is_down_leaves_the_tag_with_a_warning(tmp_path: Path) -> None:
    image = f"localhost:{_free_port()}/app:1"
    lock, warnings = job._pinned_images(_lock(image), tmp_path / "envsolve.lock", job.Options(), SILENT)
    assert lock.environments[0].base_image_digest == ""
    assert len(warnings) == 1 and warnings[0].startswith(f"the base image digest of {image} (cannot reach the "
                                                         "registry at http://localhost:")
    assert "is missing from the lock" in warnings[0]
    env = lock.environments[0]
    assert f"FROM {image} AS runtime\n" in render_environment(lock, env)["Dockerfile"]
    assert unpinned_warning(env) == (f"default: the Dockerfile's FROM names the tag {image} without its digest "
                                     "(the lock has none), so a rebuild takes whatever the tag names then; a full "
                                     "`envsolve lock` (not --frameworks-only) with the registry reachable records it")


def test_a_second_lock_keeps_the_recorded_digest_unless_upgrade_images(httpserver: HTTPServer,
                                                                       tmp_path: Path) -> None:
    body = _index_body()
    httpserver.expect_request("/v2/app/manifests/1").respond_with_data(body, content_type=INDEX_TYPE)
    image, out = f"localhost:{httpserver.port}/app:1", tmp_path / "envsolve.lock"
    first, warnings = job._pinned_images(_lock(image), out, job.Options(), SILENT)
    assert warnings == [] and first.environments[0].base_image_digest == "sha256:" + hashlib.sha256(body).hexdigest()
    out.write_text(lockfile.dumps(msgspec.structs.replace(
        first, environments=(msgspec.structs.replace(first.environments[0], base_image_digest=DIGEST),),
        lock_digest=lockfile.with_image_digests(first, {image: DIGEST}).lock_digest)))
    asked = len(httpserver.log)
    kept, _ = job._pinned_images(_lock(image), out, job.Options(), SILENT)
    assert kept.environments[0].base_image_digest == DIGEST and len(httpserver.log) == asked  # not asked again
    moved, _ = job._pinned_images(_lock(image), out, job.Options(upgrade_images=True), SILENT)
    assert moved.environments[0].base_image_digest == first.environments[0].base_image_digest
    httpserver.clear()  # the registry gone: --upgrade-images keeps what the lock recorded, and says so
    said: list[str] = []
    kept, warnings = job._pinned_images(_lock(image), out, job.Options(upgrade_images=True),
                                        Voice(warn=said.append))
    assert kept.environments[0].base_image_digest == DIGEST and warnings == []
    assert said[-1].startswith(f"the base image digest of {image} was not read anew")


# ---------------------------------------------------------------------------- the lock and render


def test_the_lock_records_the_digest_and_render_pins_from_to_it() -> None:
    lock = lockfile.with_image_digests(_lock("nvidia/cuda:12.8.1-base-ubuntu24.04"),
                                       {"nvidia/cuda:12.8.1-base-ubuntu24.04": DIGEST})
    text = lockfile.dumps(lock)
    assert f'base_image_digest = "{DIGEST}"\n' in text
    back = lockfile.loads(text, "envsolve.lock")
    assert back == lock
    files = render_environment(back, back.environments[0])
    assert f"FROM docker.io/nvidia/cuda:12.8.1-base-ubuntu24.04@{DIGEST} AS runtime\n" in files["Dockerfile"]
    assert files == render_environment(back, back.environments[0])  # the same bytes again
    assert unpinned_warning(back.environments[0]) == "" and host_notes(back) == []


def test_a_lock_without_the_key_reads_as_before_and_renders_the_tag() -> None:
    lock = _lock("nvidia/cuda:12.8.1-base-ubuntu24.04")
    text = lockfile.dumps(lock)
    assert "base_image_digest" not in text
    assert lockfile.loads(text, "envsolve.lock").environments[0].base_image_digest == ""


@pytest.mark.parametrize("bad", ["sha256:abc", "latest", "sha256:" + "A" * 64, 7])
def test_a_lock_with_a_bad_digest_is_refused_naming_the_key(bad: object) -> None:
    from tests.test_lock import redigested

    data = json.loads(json.dumps(lockfile.with_image_digests(
        _lock("nvidia/cuda:12.8.1-base-ubuntu24.04"), {"nvidia/cuda:12.8.1-base-ubuntu24.04": DIGEST}).to_dict()))
    data["environments"][0]["base_image_digest"] = bad
    with pytest.raises(LockError, match=r"environments\[0\]\.base_image_digest"):
        lockfile.loads(redigested(data), "envsolve.lock")


def test_upgrade_images_is_refused_with_frameworks_only() -> None:
    from envsolve.errors import SpecError

    with pytest.raises(SpecError, match="--upgrade-images"):
        job._refuse_upgrade_of_frameworks_only(job.Options(frameworks_only=True, upgrade_images=True))


# ---------------------------------------------------------------------------- end of life


def test_an_image_past_its_deletion_date_warns_with_the_date_and_the_newest_image(real_graph: Provider) -> None:
    spec = spec_of('[project]\nname = "demo"\n[frameworks]\ntorch = "==2.6.0"\n[hardware]\ngpus = ["RTX 4090"]\n'
                   '[container]\nos = "ubuntu22.04"\n', real_graph)
    resolutions = solve(real_graph, spec)
    assert resolutions[0].base_image == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    warned = end_of_life_warnings(real_graph, spec, resolutions, datetime.date(2026, 12, 7))
    assert warned == ["default: the tags of the base image nvidia/cuda:12.4.1-base-ubuntu22.04 may be deleted since "
                      "2026-12-01 (by NVIDIA's container support policy, inferred (confidence low); see "
                      "https://gitlab.com/nvidia/container-images/cuda/-/blob/master/doc/support-policy.md); the "
                      "newest image that serves this environment is nvidia/cuda:12.9.1-base-ubuntu22.04: a framework "
                      "build of its CUDA moves the lock to it"]
    soon = end_of_life_warnings(real_graph, spec, resolutions, datetime.date(2026, 9, 15))
    assert len(soon) == 1 and "are deleted from 2026-12-01" in soon[0]
    assert end_of_life_warnings(real_graph, spec, resolutions, datetime.date(2026, 8, 1)) == []  # 122 days before


def test_the_successor_keeps_the_cudnn_flavour(real_graph: Provider) -> None:
    from envsolve.solve.images import successor_image

    spec = spec_of('[project]\nname = "demo"\n[hardware]\ngpus = ["RTX 4090"]\n', real_graph)
    target = solve(real_graph, spec)[0].target
    got = successor_image(real_graph, spec, target, "nvidia/cuda:12.6.3-cudnn-runtime-ubuntu24.04", "2027-03-01")
    assert got.startswith("nvidia/cuda:12.") and got.endswith("-cudnn-runtime-ubuntu24.04")
    assert successor_image(real_graph, spec, target, "python:3.12-slim-bookworm", "2027-03-01") == ""


def test_every_end_of_life_row_is_checked(tmp_path: Path) -> None:
    root = tmp_path / "matrices"
    shutil.copytree(FIXTURE, root)
    images = next(p for p in root.glob("*.toml") if 'kind = "images"' in p.read_text())
    images.write_text(images.read_text() + '\n[[eol]]\nrepository = "nvidia/cudaa"\nversions = "==12.6.2"\n'
                      'marked = "2025-07-01"\ndeleted = "2025-06-03"\nsource = "x"\n'
                      '\n[[eol]]\nrepository = "nvidia/cuda"\nversions = "==12.6.1"\n'
                      'marked = "2025-13-01"\ndeleted = "2025-06-03"\nsource = "x"\n')
    with pytest.raises(MatrixError) as e:
        load_dir(root)
    assert "eol (nvidia/cudaa ==12.6.2).repository: is no image repository of images.toml" in str(e.value)
    assert "eol (nvidia/cudaa ==12.6.2).marked: 2025-07-01 is after the deletion date 2025-06-03" in str(e.value)
    assert "eol[1].marked: must be a date such as 2025-06-03, not '2025-13-01'" in str(e.value)


def test_the_shipped_end_of_life_rows_each_have_a_source_and_a_date(real_graph: Provider) -> None:
    rows = real_graph.m.image_eols
    assert len(rows) >= 20
    assert all(e.source.startswith("https://gitlab.com/nvidia/container-images/cuda/") for e in rows)
    assert all(e.note for e in rows if e.confidence == "low")
    assert all(e.marked < e.deleted for e in rows)


# ---------------------------------------------------------------------------- a real registry


def _needed(tool: str, why: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed ({why}); `apt-get install {tool}` runs this test")
    return path


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[str]:
    """Debian's docker-registry on a free localhost port, its storage in tmp: its host:port."""
    binary = _needed("docker-registry", "the real registry these tests push to")
    port = _free_port()
    config = tmp_path / "registry.yml"
    config.write_text(f"version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: "
                      f"{tmp_path / 'storage'}\nhttp:\n  addr: 127.0.0.1:{port}\n")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail("docker-registry exited at start")
                import time
                time.sleep(0.05)
        yield f"localhost:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _podman(root: Path, *args: str) -> None:
    """podman with its own storage under ``root`` (short: podman refuses a run root over 50 characters)."""
    podman = _needed("podman", "it builds and pushes the test's image")
    r = subprocess.run([podman, "--root", str(root / "root"), "--runroot", str(root / "run"),
                        "--cgroup-manager=cgroupfs", *args], capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        pytest.skip(f"podman cannot build or push here: {r.stderr.strip()[-300:]}")


def test_a_real_registry_gives_podmans_digest_and_the_lock_and_render_pin_it(registry: str, tmp_path: Path) -> None:
    context = tmp_path / "context"
    context.mkdir()
    (context / "hello.txt").write_text("envsolve\n")
    (context / "Containerfile").write_text("FROM scratch\nCOPY hello.txt /hello.txt\n")
    image = f"{registry}/envsolve/tiny:1"
    root = Path(tempfile.mkdtemp(prefix="esp", dir="/tmp"))
    try:
        _pushed(root, context, image, tmp_path / "digest")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    pushed = (tmp_path / "digest").read_text().strip()
    assert pushed.startswith("sha256:")
    assert _client(tmp_path).digest(image) == pushed
    lock, warnings = job._pinned_images(_lock(image), tmp_path / "envsolve.lock", job.Options(), SILENT)
    assert warnings == [] and lock.environments[0].base_image_digest == pushed
    text = lockfile.dumps(lock)
    assert f'base_image_digest = "{pushed}"' in text
    back = lockfile.loads(text, "envsolve.lock")
    assert f"FROM {image}@{pushed} AS runtime\n" in render_environment(back, back.environments[0])["Dockerfile"]


def _pushed(root: Path, context: Path, image: str, digestfile: Path) -> None:
    """``context`` built by podman as ``image`` (Docker's format) and pushed, its digest in ``digestfile``."""
    _podman(root, "build", "--isolation=chroot", "--format", "docker", "-t", image, str(context))
    _podman(root, "push", "--tls-verify=false", "--digestfile", str(digestfile), image)


def test_upgrade_images_offline_is_refused_with_a_tip(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[frameworks]\ntorch = "*"\n')
    r = CliRunner().invoke(main, ["lock", str(spec), "--upgrade-images", "--offline"],
                           env={"ENVSOLVE_FRAMEWORKS_ONLY": ""})
    assert r.exit_code == 2
    assert r.stderr == ("ERROR: --upgrade-images: reads each base image's digest from its registry, which --offline "
                        "forbids\nTIP: leave out --offline, or --upgrade-images\n")
