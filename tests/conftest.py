from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from envsolve.data import data_dir, load_dir
from envsolve.provider import Provider
from envsolve.solve import Resolution, solve
from envsolve.spec import ProjectSpec, parse_spec

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "matrices"
# Index URLs for tests: no real registry, so locks are the same on every machine.
TEST_INDEXES = {"ENVSOLVE_INDEX_PYPI": "https://index.invalid/simple",
                "ENVSOLVE_INDEX_PYTORCH": "https://index.invalid/whl"}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-goldens", action="store_true",
                     help="rewrite golden files (tests/cases/*/expected.*) from current output")


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture(scope="session")
def fixture_graph() -> Provider:
    return Provider(load_dir(FIXTURE))


@pytest.fixture(scope="session")
def real_graph() -> Provider:
    return Provider(load_dir(data_dir()))


@pytest.fixture(scope="session")
def _cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("envsolve-cache")


@pytest.fixture(autouse=True)
def _indexes(monkeypatch: pytest.MonkeyPatch, _cache_dir: Path) -> None:
    monkeypatch.setenv("ENVSOLVE_CACHE_DIR", str(_cache_dir))  # never the user's own cache
    monkeypatch.setenv("ENVSOLVE_STATE_DIR", str(_cache_dir / "state"))  # nor the key that seals it
    for k, v in TEST_INDEXES.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("ENVSOLVE_FRAMEWORKS_ONLY", "1")  # no network; tests of the full lock unset it
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)


def spec_of(text: str, graph: Provider) -> ProjectSpec:
    return parse_spec(text, "project.toml", graph)


def resolve(text: str, graph: Provider) -> list[Resolution]:
    return solve(graph, spec_of(text, graph))


def pkg(r: Resolution, name: str) -> tuple[str, str]:
    p = next(p for p in r.packages if p.name == name)
    return p.version, p.variant


INDEX = HERE / "fixtures" / "index"  # a recorded package index (tests/test_refresh.py)
JSON = "application/vnd.pypi.simple.v1+json"


@pytest.fixture
def recorded_index(httpserver: HTTPServer) -> Iterator[HTTPServer]:
    """The recorded index: JSON pages, keras as HTML only (the fallback), metadata files; 404 else."""
    httpserver.no_handler_status_code = 404
    for p in sorted((INDEX / "simple").glob("*.json")):
        if p.stem != "keras":
            httpserver.expect_request(f"/simple/{p.stem}/").respond_with_data(p.read_bytes(), content_type=JSON)
    httpserver.expect_request("/simple/keras/").respond_with_data(
        (INDEX / "simple" / "keras.html").read_bytes(), content_type="text/html")
    for f in sorted((INDEX / "files").glob("*.metadata")):
        httpserver.expect_request(f"/files/{f.name}").respond_with_data(f.read_bytes())
    yield httpserver
    httpserver.no_handler_status_code = 500
