from pathlib import Path

from envsolve.config import index_urls, pip_config


def test_index_urls_follow_spec_then_env_then_pip_config(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.invalid/simple\n"
                    "extra-index-url = file:///opt/wheels https://mirror.invalid/torch/whl/\n")
    env = {"PIP_CONFIG_FILE": str(conf)}
    assert pip_config(env)["index-url"] == "https://mirror.invalid/simple"
    urls = index_urls({}, env)
    assert urls["pypi"] == "https://mirror.invalid/simple"
    assert urls["pytorch"] == "https://mirror.invalid/torch/whl"  # recognised by its /whl path
    env["ENVSOLVE_INDEX_PYTORCH"] = "https://other.invalid/whl/"
    assert index_urls({}, env)["pytorch"] == "https://other.invalid/whl"
    assert index_urls({"pytorch": "https://spec.invalid/whl"}, env)["pytorch"] == "https://spec.invalid/whl"


def test_pip_index_url_environment_wins_over_files(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://a.invalid/simple\n")
    env = {"PIP_CONFIG_FILE": str(conf), "PIP_INDEX_URL": "https://b.invalid/simple"}
    assert index_urls({}, env)["pypi"] == "https://b.invalid/simple"
