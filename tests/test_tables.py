"""The one reader of TOML tables: every problem at once, each at its key path, in the order a
person reads the file."""

import pytest

from envsolve.domain import PLATFORMS
from envsolve.errors import MatrixError, Problems, SpecError
from envsolve.tables import TableReader, allowed_keys, at, load_toml, strings, unknown_key, word


def messages(reader: TableReader) -> list[str]:
    return [str(p) for p in reader.problems.items]


def test_a_section_typo_is_named_with_the_sections_in_their_order() -> None:
    r = TableReader("images.toml")
    assert r.unknown_section("matrx", ("matrix", "include", "exclude", "image"))
    assert not r.unknown_section("matrix", ("matrix", "include"))
    assert messages(r) == ["images.toml: matrx: unknown section (allowed: matrix, include, exclude, image); "
                           "did you mean [matrix]?"]


def test_unknown_keys_each_at_its_path_sorted_allowed_with_or_without_a_near_miss() -> None:
    r = TableReader("project.toml")
    assert r.unknown_keys({"gpu": 1, "driver": "535", "colour": 2}, "hardware", {"gpus", "driver", "cuda"})
    assert not r.unknown_keys({"cuda": "12.8"}, "hardware", {"cuda"})
    assert messages(r) == [
        "project.toml: hardware.gpu: unknown key (allowed: cuda, driver, gpus); did you mean 'gpus'?",
        "project.toml: hardware.colour: unknown key (allowed: cuda, driver, gpus)",
    ]
    assert unknown_key("x", {"b", "a"}) == allowed_keys("x", ["b", "a"]) == "unknown key (allowed: a, b)"


def test_an_array_of_tables_that_is_not_one_is_named() -> None:
    r = TableReader("torch.toml")
    assert r.rows({"build": [{"a": 1}]}, "build") == [{"a": 1}]
    assert r.rows({}, "build") == []
    assert r.rows({"build": {"a": 1}}, "build") == []
    assert messages(r) == ["torch.toml: build: must be an array of tables ([[build]])"]


def _int(v: object) -> int:
    if not isinstance(v, int):
        raise ValueError("must be an integer")
    return v


def test_a_row_reports_unknown_then_missing_then_bad_keys_and_gives_nothing() -> None:
    r = TableReader("cuda.toml")
    checks = {"major": _int, "minor": _int, "source": str}
    assert r.record({"major": 12, "minor": 8, "source": "x"}, "major[0]", checks, ("major", "source")) == {
        "major": 12, "minor": 8, "source": "x"}
    assert r.record({"minor": "8", "colour": 1}, "major[1]", checks, ("major", "source")) is None
    assert r.record(3, "major[2]", checks, ()) is None
    assert messages(r) == [
        "cuda.toml: major[1].colour: unknown key (allowed: major, minor, source)",
        "cuda.toml: major[1].major: missing",
        "cuda.toml: major[1].source: missing",
        "cuda.toml: major[1].minor: must be an integer",
        "cuda.toml: major[2]: must be a table",
    ]


def test_check_gives_the_value_or_adds_the_message() -> None:
    r = TableReader("p.toml")
    assert r.check("3", "a.b", int) == 3
    assert r.check("x", at("a", "c"), _int) is None
    assert at("", "top") == "top"
    assert messages(r) == ["p.toml: a.c: must be an integer"]


def test_readers_of_several_files_share_one_collector() -> None:
    problems = Problems()
    TableReader("a.toml", problems).bad("x", "is wrong")
    TableReader("b.toml", problems).bad("", "is wrong too")
    with pytest.raises(MatrixError) as e:
        problems.raise_if_any(MatrixError)
    assert str(e.value) == "2 problems:\n  a.toml: x: is wrong\n  b.toml: is wrong too"
    assert len(problems) == 2


@pytest.mark.parametrize(("blob", "expected"), [
    (b"schema = 1\nkind = [", "gpus.toml: is not valid TOML: "),
    (b"\xff\xfe", "gpus.toml: is not UTF-8 text (byte 0 is b'\\xff'); save it as UTF-8"),
    (b"a = " + b"[" * 100_000 + b"]" * 100_000, "gpus.toml: nests tables or arrays too deeply to be a matrix file"),
])
def test_a_file_that_is_not_toml_is_a_problem_not_a_traceback(blob: bytes, expected: str) -> None:
    r = TableReader("gpus.toml")
    assert r.document(blob, "a matrix file") is None
    assert messages(r)[0].startswith(expected)


def test_a_matrix_file_with_a_byte_order_mark_is_read() -> None:
    assert TableReader("gpus.toml").document(b"\xef\xbb\xbfschema = 1\n", "a matrix file") == {"schema": 1}


def test_a_persons_file_that_is_not_toml_is_raised_at_once() -> None:
    assert load_toml("a = 1", "p.toml") == {"a": 1}
    with pytest.raises(SpecError, match="p.toml: is not valid TOML") as e:
        load_toml("[a", "p.toml")
    assert e.value.tip == "fix the TOML syntax at the line named above"


def test_a_closed_word_is_typed_or_none() -> None:
    assert word("linux/arm64", PLATFORMS) == "linux/arm64"
    assert word("arm64", PLATFORMS) is None
    assert word(["linux/arm64"], PLATFORMS) is None


def test_a_list_of_strings_check_and_a_record_in_its_own_words() -> None:
    assert strings(["a", ""]) == ("a", "")
    for bad in ("a", ["a", 3], None):
        with pytest.raises(ValueError, match="must be a list of strings, not"):
            strings(bad)
    r = TableReader("envsolve.lock")
    checks = {"name": str, "pip": strings}
    assert r.record({"name": "x", "pip": ["a"]}, "environments[0]", checks, checks) == {"name": "x", "pip": ("a",)}
    assert r.record({"colour": 1}, "environments[0]", checks, checks, unknown=lambda key, allowed: "is not a key",
                    missing="is missing") is None
    assert messages(r) == ["envsolve.lock: environments[0].colour: is not a key",
                           "envsolve.lock: environments[0].name: is missing",
                           "envsolve.lock: environments[0].pip: is missing"]
