"""A `[packages] pip` line whose marker is true on no target asks nothing of the solve (issue 40):
neither the steering (lock/steer.py) nor the extension packages (solve/extensions.py) narrow by it."""

from __future__ import annotations

from envsolve.lock.steer import steer
from envsolve.provider import Provider
from envsolve.solve.extensions import asked
from envsolve.spec import parse_spec
from tests.test_index import FakeReader


def _spec(graph: Provider, line: str, platform: str = "linux/amd64", gpus: str = '"H100"') -> object:
    return parse_spec(f'[frameworks]\ntorch = "*"\n[hardware]\ngpus = [{gpus}]\nplatform = "{platform}"\n'
                      f"[packages]\npip = ['{line}']\n", "project.toml", graph)


def test_a_line_for_another_platform_does_not_steer_the_frameworks(real_graph: Provider) -> None:
    def asks(line: str, platform: str = "linux/amd64") -> list[object]:
        spec = _spec(real_graph, line, platform)
        return [s.frameworks for s in steer(spec, FakeReader(), real_graph.pythons(), real_graph.releases)]

    assert asks('x; sys_platform == "win32"') == []  # Windows only: nothing asked on linux/amd64
    assert asks('x; sys_platform == "linux"') == [(("torch", "==2.9.1"),)]  # true there: read as before
    assert asks('x; python_version >= "9.0"') == []  # no Python the data knows
    assert asks('x; platform_machine == "aarch64"', "linux/arm64") == [(("torch", "==2.8.0"),)]


def test_an_extension_package_for_another_platform_does_not_narrow_torch(real_graph: Provider) -> None:
    p100 = '"P100"'
    assert asked(real_graph, _spec(real_graph, 'xformers>=0.0.33; sys_platform == "win32"', gpus=p100)) == ()
    here = asked(real_graph, _spec(real_graph, 'xformers>=0.0.33; sys_platform == "linux"', gpus=p100))
    assert [a.package for a in here] == ["xformers"]
