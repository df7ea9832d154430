"""One credential policy for every URL a user writes: a login in a ``[packages] pip`` direct
reference (``foo @ https://user:secret@host/foo.whl``) or an index URL never reaches a lock, a
generated file, an image layer or a message; it reaches uv (the full lock, sync) and the
build (its netrc secret) as a netrc in a private temporary folder. Against a local server that
serves the wheel only with the right login: nothing here needs a real index."""

from __future__ import annotations

import base64
import os
import stat
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from msgspec.structs import replace
from pytest_httpserver import HTTPServer
from werkzeug.wrappers import Request, Response

from envsolve.cli import main
from envsolve.config import Credential, netrc_text, requirement_credentials, scrub, write_netrc
from envsolve.lock import model as lockfile
from envsolve.render.artifacts import render_environment
from envsolve.spec import url_credentials
from tests.fakeindex import Wheel, serve
from tests.test_sync import _host, _installed

PASSWORD = "hunter2xyz"  # what must never be written anywhere
LOGIN = "bot"
FOO = Wheel("foo", "1.0", requires=["idna"])


def _auth_server(server: HTTPServer) -> tuple[str, str]:
    """An index (idna) and, beside it, foo's wheel at a direct URL that answers 401 without the
    login; (the index URL, foo's URL without credentials)."""
    index = serve(server, [Wheel("idna", "3.10")])
    FOO.build()
    expected = "Basic " + base64.b64encode(f"{LOGIN}:{PASSWORD}".encode()).decode()

    def answer(request: Request) -> Response:
        if request.headers.get("Authorization") != expected:
            return Response("who are you?", status=401, headers={"WWW-Authenticate": 'Basic realm="wheels"'})
        return Response(FOO.data, content_type="application/octet-stream")

    server.expect_request(f"/private/{FOO.filename}").respond_with_handler(answer)
    return index, server.url_for(f"/private/{FOO.filename}")


def _with_login(url: str, password: str = PASSWORD) -> str:
    return url.replace("://", f"://{LOGIN}:{password}@", 1)


@pytest.fixture
def server(httpserver: HTTPServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[str, str]:
    index, url = _auth_server(httpserver)
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", index)
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no netrc of the user's: the spec's login alone
    monkeypatch.delenv("NETRC", raising=False)
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    return index, url


def _spec(tmp_path: Path, url: str, password: str = PASSWORD) -> Path:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
                    f'[packages]\npip = ["foo @ {_with_login(url, password)}"]\n')
    return spec


def _lock(spec: Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["lock", str(spec), *args])


def _everything_under(folder: Path) -> str:
    """The text of every file under ``folder`` (the lock, the artifacts, uv's and envsolve's caches)."""
    return "".join(p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file())


def test_a_full_lock_passes_the_login_to_uv_and_writes_it_nowhere(server: tuple[str, str], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _, url = server
    scratch = tmp_path / "scratch"  # this test's own temporary folders, where uv's netrc goes
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    spec = _spec(tmp_path, url)
    r = _lock(spec, "--render")
    assert r.exit_code == 0, r.output  # the server answers foo's wheel only with the login: uv had it
    assert "the credentials of bot@localhost were taken out of the direct reference" in r.stderr
    assert PASSWORD not in r.output
    lock = lockfile.read(tmp_path / "envsolve.lock")
    env = lock.environments[0]
    assert env.pip == (f"foo @ {url}",)  # the URL, without the login
    foo = next(p for p in env.packages if p.name == "foo")
    assert foo.hashes == (FOO.sha256,) and foo.direct  # and the hash of the file
    out = tmp_path / "envsolve-out" / "default"
    requirements = (out / "requirements.txt").read_text()
    assert f"foo @ {url} --hash={FOO.sha256}" in requirements.splitlines()  # pip fetches it from its URL
    assert "idna==3.10 --hash=" in requirements
    assert "--mount=type=secret,id=netrc,target=/root/.netrc" in (out / "Dockerfile").read_text()
    spec.write_text(spec.read_text().replace(PASSWORD, "REDACTED"))  # the spec itself holds it, of course
    assert PASSWORD not in _everything_under(tmp_path)  # lock, artifacts, uv's cache, envsolve's cache
    assert not list(scratch.iterdir())  # the scratch folder, its netrc with it, is gone


def test_a_wrong_login_fails_the_lock_without_showing_it(server: tuple[str, str], tmp_path: Path) -> None:
    _, url = server
    r = _lock(_spec(tmp_path, url, password="wrongpw7"))
    assert r.exit_code == 1 and "Traceback" not in r.output
    assert "401" in r.output and "wrongpw7" not in r.output  # uv's message, its URLs stripped of logins
    said = "error: Failed to fetch: http://bot:wrongpw7@localhost:8080/f.whl (git+https://tok@h.invalid/r.git)"
    assert scrub(said) == "error: Failed to fetch: http://localhost:8080/f.whl (git+https://h.invalid/r.git)"


def test_sync_installs_the_direct_reference_with_the_specs_login(server: tuple[str, str], tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _, url = server
    _host(monkeypatch, "no-gpu")
    assert _lock(_spec(tmp_path, url)).exit_code == 0
    venv = tmp_path / "venv"
    r = CliRunner().invoke(main, ["sync", str(tmp_path / "envsolve.lock"), "--venv", str(venv)])
    assert r.exit_code == 0, r.output
    assert _installed(venv) == {"foo": "1.0", "idna": "3.10"}
    assert PASSWORD not in r.output and PASSWORD not in _everything_under(venv)


def test_frameworks_only_artifacts_and_build_print_never_hold_the_login(tmp_path: Path) -> None:
    url = "https://wheels.invalid/foo-1.0-py3-none-any.whl"
    spec = _spec(tmp_path, url)
    r = _lock(spec, "--render")  # frameworks only (the tests' default): no network
    assert r.exit_code == 0, r.output
    assert "were taken out of the direct reference" in r.stderr
    out = tmp_path / "envsolve-out" / "default"
    assert f"foo @ {url}" in (out / "requirements.txt").read_text().splitlines()
    assert f"'foo @ {url}'" in (out / "Dockerfile").read_text()  # the RUN line: the URL, no login
    printed = CliRunner().invoke(main, ["build", str(tmp_path / "envsolve.lock"), "--engine", "docker", "--print"])
    assert printed.exit_code == 0, printed.output
    spec.unlink()
    assert PASSWORD not in _everything_under(tmp_path) + r.output + printed.output


def test_the_build_gets_the_login_as_its_netrc_secret_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = "https://wheels.invalid/foo-1.0-py3-none-any.whl"
    assert _lock(_spec(tmp_path, url)).exit_code == 0
    home = tmp_path / "home"
    home.mkdir()
    (home / ".netrc").write_text("machine mirror.invalid login me password mine\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("NETRC", raising=False)
    tools = tmp_path / "bin"
    tools.mkdir()
    seen = tmp_path / "seen"
    podman = tools / "podman"  # records its arguments and the netrc secret it was given
    podman.write_text(f'#!/bin/sh\necho "$@" >> {seen}/argv\nfor a in "$@"; do case "$a" in\n'
                      f'  --secret=id=netrc,src=*) cp "${{a#--secret=id=netrc,src=}}" {seen}/netrc;'
                      f' stat -c %a "${{a#--secret=id=netrc,src=}}" > {seen}/mode;;\nesac; done\n'
                      'echo "STEP 1/1: FROM base"\nexit 0\n')
    podman.chmod(0o755)
    seen.mkdir()
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    r = CliRunner().invoke(main, ["build", str(tmp_path / "envsolve.lock"), "--engine", "podman"])
    assert r.exit_code == 0, r.output
    assert "--secret=id=netrc,src=" in (seen / "argv").read_text()
    assert PASSWORD not in (seen / "argv").read_text() + r.output
    assert (seen / "netrc").read_text() == (f"machine wheels.invalid login {LOGIN} password {PASSWORD}\n"
                                            "machine mirror.invalid login me password mine\n")
    assert (seen / "mode").read_text().strip() == "600"
    secret = next(a for a in (seen / "argv").read_text().split() if a.startswith("--secret=id=netrc,"))
    assert not Path(secret.split("src=", 1)[1]).exists()  # removed after the build


def test_a_direct_reference_loses_only_its_login() -> None:
    line, credential, why = requirement_credentials("foo @ https://bot:S3CRET@host:8443/foo.whl#sha256=ab", "here")
    assert (line, why) == ("foo @ https://host:8443/foo.whl#sha256=ab", None)
    assert credential == Credential(host="host", login="bot", password="S3CRET", where="here")
    assert "S3CRET" not in repr(credential)
    assert "S3CRET" not in str(list(credential.__rich_repr__()))  # rich's pretty-printer, msgspec's way in
    token = requirement_credentials("bar @ git+https://ghp_TOKEN@github.invalid/o/bar.git@v1", "here")
    assert token[0] == "bar @ git+https://github.invalid/o/bar.git@v1" and token[1] is not None
    assert token[1].login == "ghp_TOKEN" and token[1].password == ""
    assert requirement_credentials("numpy<2", "here") == ("numpy<2", None, None)
    assert requirement_credentials("foo @ https://host/foo.whl", "here") == ("foo @ https://host/foo.whl", None, None)
    _, none, why = requirement_credentials("foo @ https://bot:a%20b@host/foo.whl", "here")
    assert none is None and why is not None and "netrc cannot carry" in why


def test_a_login_a_netrc_cannot_carry_is_refused_naming_the_key(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[packages]\npip = ["foo @ https://bot:a%20b@host.invalid/f.whl"]\n')
    r = _lock(spec)
    assert r.exit_code == 2 and "packages.pip" in r.output and "netrc cannot carry" in r.output
    assert "a%20b" not in r.output and not (tmp_path / "envsolve.lock").exists()


def test_the_netrc_keeps_the_users_entries_first_for_their_hosts(tmp_path: Path) -> None:
    user = tmp_path / "netrc"
    user.write_text("machine host.invalid login mine password theirs\n")
    creds = [Credential(host="host.invalid", login="bot", password="p1", where="a"),
             Credential(host="other.invalid", login="bot", password="p2", where="b"),
             Credential(host="other.invalid", login="late", password="p3", where="c")]
    assert netrc_text(creds, {"NETRC": str(user)}) == ("machine other.invalid login bot password p2\n"
                                                        "machine host.invalid login mine password theirs\n")
    assert netrc_text(creds[:1], {"HOME": str(tmp_path / "nobody")}) == "machine host.invalid login bot password p1\n"
    private = tmp_path / "private"
    private.mkdir()
    written = write_netrc(creds, private, {"HOME": str(tmp_path / "nobody")})
    assert written is not None and stat.S_IMODE(written.stat().st_mode) == 0o600
    assert written.read_text().count("machine ") == 2
    assert write_netrc([], private) is None
    with pytest.raises(FileExistsError):  # never over a file that is there (a private folder has none)
        write_netrc(creds, tmp_path, {})
    assert user.read_text() == "machine host.invalid login mine password theirs\n"


def test_index_and_direct_reference_logins_are_read_from_the_spec_beside_a_lock(tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[indexes]\npytorch = "https://ix:pw1@mirror.invalid/whl"\n'
                    '[packages]\npip = ["foo @ https://bot:pw2@wheels.invalid/foo.whl", "numpy"]\n')
    found = url_credentials(spec, {"ENVSOLVE_INDEX_PYPI": "https://env:pw3@pypi-mirror.invalid/simple"})
    assert sorted((c.host, c.login, c.password) for c in found) == [
        ("mirror.invalid", "ix", "pw1"), ("pypi-mirror.invalid", "env", "pw3"), ("wheels.invalid", "bot", "pw2")]
    assert url_credentials(tmp_path / "missing.toml", {}) == ()
    os.mkfifo(tmp_path / "fifo.toml")  # nothing writes to it: reading it would block forever
    assert url_credentials(tmp_path / "fifo.toml", {}) == ()
    (tmp_path / "odd.toml").write_text('[packages]\npip = "foo @ https://a:b@h.invalid/f.whl"\n')
    assert url_credentials(tmp_path / "odd.toml", {}) == ()  # not a list: the spec's own check says so


def test_render_refuses_a_lock_that_holds_a_login(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "https://wheels.invalid/foo-1.0-py3-none-any.whl")
    assert _lock(spec).exit_code == 0
    lock_path = tmp_path / "envsolve.lock"
    clean = lockfile.read(lock_path)  # made again as an older envsolve wrote it, the login in, digest and all
    envs = tuple(replace(e, pip=tuple(_with_login(p) for p in e.pip)) for e in clean.environments)
    lock = replace(clean, environments=envs, lock_digest=lockfile._digest_of(clean.indexes, envs))
    lock_path.write_text(lockfile.dumps(lock))
    assert lockfile.read(lock_path) == lock
    from envsolve.errors import LockError

    with pytest.raises(LockError, match=r"environments\[0\]\.pip\[0\] holds a URL's credentials") as caught:
        render_environment(lock, lock.environments[0])
    assert PASSWORD not in caught.value.message
    r = CliRunner().invoke(main, ["render", str(lock_path)])
    assert r.exit_code == 2 and PASSWORD not in r.output and not (tmp_path / "envsolve-out").exists()
    assert "Traceback" not in r.output


# ---------------------------------------------------------------------------- tokens, SSH users, command lines

TOKEN = "T0KENxyz42"  # a token in a direct reference's query: a login like any other


def test_a_token_in_a_direct_reference_is_taken_out_of_every_file_and_given_to_uv(
        httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    index = serve(httpserver, [Wheel("idna", "3.10")])
    FOO.build()

    def answer(request: Request) -> Response:
        if request.args.get("token") != TOKEN:
            return Response("who are you?", status=401)
        return Response(FOO.data, content_type="application/octet-stream")

    httpserver.expect_request(f"/private/{FOO.filename}").respond_with_handler(answer)
    url = httpserver.url_for(f"/private/{FOO.filename}")
    for var, value in (("ENVSOLVE_INDEX_PYPI", index), ("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache")),
                       ("HOME", str(tmp_path / "home"))):
        monkeypatch.setenv(var, value)
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    _host(monkeypatch, "no-gpu")
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
                    f'[packages]\npip = ["foo @ {url}?token={TOKEN}"]\n')
    r = _lock(spec, "--render")
    assert r.exit_code == 0, r.output  # the server gives foo only with the token: uv had it
    assert f"the token in the query or fragment of {url} was taken out" in r.stderr
    env = lockfile.read(tmp_path / "envsolve.lock").environments[0]
    assert env.pip == (f"foo @ {url}",)
    out = tmp_path / "envsolve-out" / "default"
    assert f"foo @ {url} --hash={FOO.sha256}" in (out / "requirements.txt").read_text().splitlines()
    venv = tmp_path / "venv"
    synced = CliRunner().invoke(main, ["sync", str(tmp_path / "envsolve.lock"), "--venv", str(venv)])
    assert synced.exit_code == 0, synced.output  # and sync had it too
    assert _installed(venv) == {"foo": "1.0", "idna": "3.10"}
    spec.unlink()
    assert TOKEN not in _everything_under(tmp_path) + r.output + synced.output


def test_a_fragment_token_goes_and_a_hash_egg_or_subdirectory_stays() -> None:
    line, credential, why = requirement_credentials(
        "foo @ https://host/foo.whl#token=SECRETfrag&sha256=ab", "here")
    assert (line, why) == ("foo @ https://host/foo.whl#sha256=ab", None)
    assert credential is not None and credential.login == "" and "SECRETfrag" in credential.secret_url
    assert "SECRETfrag" not in repr(credential) and "SECRETfrag" not in scrub(f"failed: {credential.secret_url}")
    kept = "bar @ git+https://host/o/bar.git@v1#egg=bar&subdirectory=py"
    assert requirement_credentials(kept, "here") == (kept, None, None)
    assert scrub("error: http://host/f.whl?private_token=abc failed") == "error: http://host/f.whl failed"


def test_an_ssh_user_name_is_no_credential() -> None:
    ssh = "pkg @ git+ssh://git@github.invalid/org/pkg.git@v1.0"
    assert requirement_credentials(ssh, "here") == (ssh, None, None)  # `git@` stays: SSH needs it
    assert scrub("fatal: could not read from git+ssh://git@github.invalid/org/pkg.git") == (
        "fatal: could not read from git+ssh://git@github.invalid/org/pkg.git")
    line, credential, _ = requirement_credentials("pkg @ git+ssh://git:pw9@host.invalid/o/pkg.git", "here")
    assert line == "pkg @ git+ssh://host.invalid/o/pkg.git" and credential is not None  # a password is one


def test_pips_index_login_reaches_uv_through_its_environment_never_its_command_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, httpserver: HTTPServer) -> None:
    """Any local user reads another's command lines in /proc/PID/cmdline; its environment, only its owner."""
    from envsolve import scratch

    seen: list[tuple[list[str], dict[str, str]]] = []
    real = scratch.popen

    def spy(argv: list[str], *, env: dict[str, str] | None = None, **kwargs: object) -> object:
        seen.append((list(argv), dict(env or {})))
        return real(argv, env=env, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scratch, "popen", spy)
    index = serve(httpserver, [Wheel("idna", "3.10")])
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("ENVSOLVE_INDEX_PYPI", raising=False)
    monkeypatch.setenv("PIP_INDEX_URL", index.replace("http://", f"http://{LOGIN}:{PASSWORD}@"))
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    _host(monkeypatch, "no-gpu")
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
                    '[packages]\npip = ["idna"]\n')
    assert _lock(spec).exit_code == 0
    r = CliRunner().invoke(main, ["sync", str(tmp_path / "envsolve.lock"), "--venv", str(tmp_path / "venv")])
    assert r.exit_code == 0, r.output
    assert {a[1] for a, _ in seen} >= {"pip", "venv"} and any(a[1:3] == ["pip", "compile"] for a, _ in seen)
    assert all(PASSWORD not in " ".join(argv) for argv, _ in seen)
    assert any(PASSWORD in env.get("UV_DEFAULT_INDEX", "") for _, env in seen)  # the lock's and the sync's uv


@pytest.mark.parametrize("where", ['[indexes]\npypi = "http://[::1"\n', '[indexes]\npypi = "http://x:99999/simple"\n',
                                   '[packages]\npip = ["foo @ http://bot:pw9@[::1/foo.whl?token=T0KENxyz42"]\n',
                                   '[packages]\npip = ["foo @ http://s3cret%20user@x/foo.whl?token=T0KENxyz42"]\n'])
def test_a_url_that_is_no_url_is_refused_naming_it_without_its_secrets(where: str, tmp_path: Path) -> None:
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n' + where)
    r = _lock(spec)
    assert r.exit_code == 2 and "Traceback" not in r.output and r.exception is not None, r.output
    assert "T0KENxyz42" not in r.output and "pw9" not in r.output and "ERROR:" in r.stderr


def test_an_envsolve_index_variable_that_is_no_url_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", "http://x:99999/simple")
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[packages]\npip = ["idna"]\n')
    r = _lock(spec)
    assert r.exit_code == 2 and "Port out of range" in r.stderr and "Traceback" not in r.output


def test_the_default_index_login_of_the_spec_reaches_envsolves_own_reads_of_the_index(
        httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What [packages] pip asks is read by envsolve's own client before uv runs: it gets the login
    taken out of ENVSOLVE_INDEX_PYPI, as uv does, and not from ~/.netrc alone."""
    index = serve(httpserver, [Wheel("idna", "3.10")])
    expected = "Basic " + base64.b64encode(f"{LOGIN}:{PASSWORD}".encode()).decode()
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", _with_login(index))
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path))  # no netrc
    monkeypatch.delenv("ENVSOLVE_FRAMEWORKS_ONLY")
    seen: list[str | None] = []
    original = httpserver.dispatch

    def dispatch(request: Request) -> Response:
        seen.append(request.headers.get("Authorization"))
        if request.headers.get("Authorization") != expected:
            return Response("who are you?", status=401)
        return original(request)

    monkeypatch.setattr(httpserver, "dispatch", dispatch)
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
                    '[packages]\npip = ["idna"]\n')
    r = _lock(spec)
    assert r.exit_code == 0, r.output
    assert seen[0] == expected  # the first read is envsolve's own (steering): it had the login (uv asks
    # without one first, and again with its netrc when refused)
    assert PASSWORD not in r.output and PASSWORD not in (tmp_path / "envsolve.lock").read_text()


@pytest.mark.parametrize("kind", ["fifo", "zero", "latin1"])
def test_a_netrc_that_is_no_text_file_never_hangs_or_breaks_a_full_lock(
        kind: str, httpserver: HTTPServer, tmp_path: Path) -> None:
    import subprocess
    import sys

    index = serve(httpserver, [Wheel("idna", "3.10")])
    home = tmp_path / "home"
    home.mkdir()
    netrc = home / ".netrc"
    if kind == "fifo":
        os.mkfifo(netrc)
    elif kind == "zero":
        netrc.symlink_to("/dev/zero")
    else:
        netrc.write_bytes(b"machine h login \xff password x\n")
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\npython = "==3.11.*"\n[frameworks]\n[hardware]\nvendor = "cpu"\n'
                    '[packages]\npip = ["idna"]\n')
    env = {k: v for k, v in os.environ.items() if k not in ("ENVSOLVE_FRAMEWORKS_ONLY", "NETRC")}
    env |= {"HOME": str(home), "ENVSOLVE_INDEX_PYPI": index, "ENVSOLVE_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-m", "envsolve", "lock", str(spec)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


@pytest.mark.parametrize("value", ['https://u:PWC1xyz@idx.example/s"x', "https://u:PWC1xyz@idx.example/s x",
                                   "ftp://u:PWC1xyz@idx.example/s", "http://u:PWC1xyz@a..b/s",
                                   "https://h/s?token=PWC1xyz&x=$", "https://h/s x#token=PWC1xyz"])
def test_an_index_url_refused_for_its_form_is_named_without_its_login(
        value: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ENVSOLVE_INDEX_PYPI", value)
    spec = tmp_path / "project.toml"
    spec.write_text('[project]\nname = "demo"\n[packages]\npip = ["idna"]\n')
    r = _lock(spec)
    assert r.exit_code == 2 and "PWC1xyz" not in r.output and "Traceback" not in r.output, r.output
