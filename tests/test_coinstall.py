"""Frameworks that must share one environment agree on the requirements they share (issue 22):
the data's ``shared`` field, the range intersection the solver uses, the solve and its
explanation, and the full lock's retry of the next combination when uv still finds a clash."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envsolve.solve.together import meet

# ---------------------------------------------------------------------------- meet: the range intersection

_RELEASES = ["0", "1", "2", "0.1", "1.0", "1.1", "1.2", "2.0", "1.0.1", "1.1.0", "1.1.1", "2.0.0"]
_TAILS = ["", ".post0", ".post1", "a0", "rc1", ".dev0", ".post0.dev0", "rc1.post0"]
_NAMED = [r + t for r in _RELEASES for t in _TAILS]
# the brute force's versions: finer than the named ones (longer releases, more tails), so that a
# version between two named ones, of every kind, is among them
_GRID = sorted({Version(".".join(map(str, rel)) + t)
                for n in (1, 2, 3, 4) for rel in itertools.product(range(4), repeat=n)
                for t in [*_TAILS, ".post2", "a1", "rc2", ".dev1", "a0.post0", ".post1.dev0", "rc1.dev0"]})


def _one_spec() -> st.SearchStrategy[str]:
    plain = st.tuples(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]), st.sampled_from(_NAMED)).map("".join)
    compatible = st.sampled_from([r + t for r in _RELEASES if "." in r for t in ("", ".post1", "rc1")]).map(
        lambda v: "~=" + v)
    wildcard = st.tuples(st.sampled_from(["==", "!="]), st.sampled_from(_RELEASES)).map(lambda p: f"{p[0]}{p[1]}.*")
    return st.one_of(plain, compatible, wildcard)


_SETS = st.lists(_one_spec(), min_size=1, max_size=3).map(lambda specs: SpecifierSet(",".join(specs)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=_SETS, b=_SETS)
def test_meet_finds_a_common_version_whenever_brute_force_finds_one(a: SpecifierSet, b: SpecifierSet) -> None:
    allow = bool(a.prereleases) and bool(b.prereleases)
    brute = next((v for v in _GRID if a.contains(v, prereleases=allow) and b.contains(v, prereleases=allow)), None)
    got = meet(a, b)
    if got is not None:  # a witness is a version both admit
        assert a.contains(got, prereleases=allow) and b.contains(got, prereleases=allow)
    assert brute is None or got is not None, (str(a), str(b), brute)


def test_meet_of_the_ranges_found_in_requires_dist() -> None:
    def meets(x: str, y: str) -> bool:
        return meet(SpecifierSet(x), SpecifierSet(y)) is not None

    assert not meets("~=0.3.1", ">=0.5.0")  # TensorFlow 2.16's ml-dtypes against a new jax's
    assert meets("~=0.3.1", ">=0.2.0")
    assert not meets(">=1.23.5,<2.0.0", ">=2")
    assert meets("<2.0.0,>=1.23.5", ">=1.26.0")
    assert not meets("==8.9.7.29", ">=9.1,<10")  # a cuDNN pin against a plugin's range
    assert meets(">1.0", "<1.0.0.1")  # 1.0.0.0.1 sits between
    assert not meets(">1.0", "<=1.0.post3")  # >1.0 refuses 1.0's post-releases
    assert not meets(">=2.0rc1", "<2.0")  # <2.0 refuses 2.0's pre-releases
    assert not meets(">=0.5.0rc1", "<0.5.0")
    assert meets("==0.3.*", ">=0.3.9")
    assert not meets("!=1.*", "~=1.2")
