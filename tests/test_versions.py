import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from envsolve.versions import parse_arch, parse_dotted, parse_driver, python_admits_minor


def test_driver_keeps_raw_text_and_compares_numerically() -> None:
    d = parse_driver("535.104.05")
    assert str(d) == "535.104.05"
    assert parse_driver("535.54.03") < d < parse_driver("535.129.03")


@given(st.lists(st.integers(0, 200), min_size=1, max_size=4), st.lists(st.integers(0, 200), min_size=1, max_size=4),
       st.sampled_from(["", "0", "00"]))
def test_dotted_versions_compare_and_hash_by_their_numbers_alone(a: list[int], b: list[int], pad: str) -> None:
    # 535.104.05 is 535.104.5: the text as written is kept for display, never compared
    x, y = parse_dotted(".".join(map(str, a))), parse_dotted(".".join(map(str, b)))
    padded = parse_dotted(".".join(pad + str(n) for n in a))
    assert padded == x and not padded != x and hash(padded) == hash(x) and {x: 1}[padded] == 1
    assert [x < y, x <= y, x > y, x >= y, x == y, x != y] == [
        tuple(a) < tuple(b), tuple(a) <= tuple(b), tuple(a) > tuple(b), tuple(a) >= tuple(b), a == b, a != b]
    assert pickle.loads(pickle.dumps(padded)).raw == padded.raw
    assert x != ".".join(map(str, a)) and (x == None) is False  # noqa: E711  another type is never equal
    with pytest.raises(TypeError):
        assert x < ".".join(map(str, b))


@pytest.mark.parametrize("bad", ["535", "abc", "12.4", "535.104.05-1", ""])
def test_bad_driver_strings_are_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_driver(bad)


@pytest.mark.parametrize("text,name,cc", [("sm_80", "sm_80", "8.0"), ("8.6", "sm_86", "8.6"),
                                          ("12.0", "sm_120", "12.0"), ("sm_100", "sm_100", "10.0"),
                                          ("compute_90", "sm_90", "9.0"), ("SM_75", "sm_75", "7.5")])
def test_arch_spellings(text: str, name: str, cc: str) -> None:
    a = parse_arch(text)
    assert (a.name, a.compute_capability) == (name, cc)


def test_sass_runs_on_same_major_equal_or_newer_minor_only() -> None:
    sm80 = parse_arch("sm_80")
    assert sm80.sass_runs_on(parse_arch("8.6")) and sm80.sass_runs_on(parse_arch("8.9"))
    assert not sm80.sass_runs_on(parse_arch("9.0"))
    assert not parse_arch("sm_86").sass_runs_on(parse_arch("8.0"))
    assert not parse_arch("sm_90a").sass_runs_on(parse_arch("9.1"))


def test_ptx_jits_forward_across_majors() -> None:
    assert parse_arch("sm_90").ptx_jits_to(parse_arch("sm_120"))
    assert not parse_arch("sm_90").ptx_jits_to(parse_arch("sm_89"))


def test_amd_targets_are_names() -> None:
    assert parse_arch("gfx942").name == "gfx942"
    assert not parse_arch("gfx90a").sass_runs_on(parse_arch("gfx942"))


@given(st.text(max_size=20))
def test_parsers_never_crash_on_arbitrary_text(text: str) -> None:
    for parse in (parse_arch, parse_driver, parse_dotted):
        try:
            parse(text)
        except ValueError:
            pass


@given(st.integers(100, 999), st.integers(0, 300), st.integers(0, 99))
def test_driver_round_trip(a: int, b: int, c: int) -> None:
    raw = f"{a}.{b}.{c:02d}"
    assert str(parse_driver(raw)) == raw


@pytest.mark.parametrize(("python", "minor", "admitted"), [
    (">=3.12.1,<3.13", "3.12", True), ("==3.12.5", "3.12", True), (">3.12.4,<3.12.6", "3.12", True),
    ("~=3.12.3", "3.12", True), ("==3.12.*", "3.12", True), ("*", "3.9", True), ("", "3.9", True),
    ("<3.12", "3.12", False), (">=3.12.1,<3.13", "3.11", False), ("!=3.12.*", "3.12", False),
    (">=3.12.3,<3.12.3", "3.12", False),
])
def test_a_python_range_admits_a_minor_when_it_admits_any_patch(python: str, minor: str, admitted: bool) -> None:
    assert python_admits_minor(python, minor) is admitted


@given(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))
def test_python_minor_rule_agrees_with_trying_every_patch(lo: int, hi: int, ne: int) -> None:
    spec = f">=3.12.{lo},<3.12.{hi},!=3.12.{ne}"
    any_patch = any(SpecifierSet(spec).contains(f"3.12.{p}") for p in range(0, 40))
    assert python_admits_minor(spec, "3.12") is any_patch


def test_a_windows_driver_version_is_read_as_nvidia_writes_it() -> None:
    # Device Manager's 32.0.15.7216 is NVIDIA's 572.16: the last five digits of the last two fields
    from envsolve.versions import parse_driver

    assert [parse_driver(v).raw for v in ("32.0.15.7216", "31.0.15.3623", "30.0.14.7141", "572.16")] == [
        "572.16", "536.23", "471.41", "572.16"]


# ------------------------------------------------------------------ hostile round 3, defect 3

def test_a_version_number_of_more_than_sixteen_digits_is_refused_before_int_reads_it() -> None:
    from packaging.specifiers import InvalidSpecifier

    from envsolve.versions import LongNumber, parse_python_minor, parse_range, parse_requirement

    long = "9" * 5000
    for parse, text in ((parse_dotted, f"12.{long}"), (parse_driver, f"5{long}.1"), (parse_python_minor, f"3.{long}"),
                        (parse_range, f">=2.{long}"), (parse_requirement, f"numpy>=1.{long}"),
                        (parse_requirement, f"numpy[extra]>=1.{long}; python_version>'3'")):
        with pytest.raises(LongNumber) as e:
            parse(text)  # type: ignore[operator]
        assert "has a number of" in str(e.value) and "(50" in str(e.value) and len(str(e.value)) < 200
        assert isinstance(e.value, ValueError) and isinstance(e.value, InvalidSpecifier)
    assert parse_dotted("9" * 16).key == (int("9" * 16),)  # sixteen digits are still a number
    with pytest.raises(ValueError, match="is not a GPU architecture") as arch:
        parse_arch(f"sm_{long}")
    assert len(str(arch.value)) < 300
    assert parse_range(">=2.4") == SpecifierSet(">=2.4")
    assert parse_requirement("pkg12345678901234567890>=1").name == "pkg12345678901234567890"  # a name's digits
    assert parse_requirement("x @ https://h.example/x-1.whl#sha256=12345678901234567890123").name == "x"  # a URL's
