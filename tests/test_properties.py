"""Property tests: every resolution of a generated spec obeys every rule, and solving is
deterministic. The rule checks here are written from the rules themselves, not from the solver."""

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from packaging.specifiers import SpecifierSet

from envsolve.data import Build, load_dir
from envsolve.errors import Unsatisfiable
from envsolve.provider import Provider
from envsolve.solve import Resolution, solve
from tests.conftest import FIXTURE, spec_of

G = Provider(load_dir(FIXTURE))
NVIDIA = sorted(g.name for g in G.m.gpus if g.vendor == "nvidia")
AMD = sorted(g.name for g in G.m.gpus if g.vendor == "amd")
DRIVERS = ["418.67", "450.80.02", "470.239.06", "525.60.13", "528.24.02", "535.104.05", "550.54.14",
           "560.35.03", "570.124.06", "590.44.01"]
VERSIONS = {p: sorted({r.raw for r in G.m.releases if r.package == p}) for p in ("torch", "tensorflow", "jax", "keras")}


def cc(name: str) -> tuple[int, int]:
    digits = name.split("_")[1].rstrip("af")
    return int(digits[:-1]), int(digits[-1])


def d(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


@st.composite
def specs(draw: st.DrawFn) -> str:
    lines = ["[frameworks]"]
    chosen = draw(st.lists(st.sampled_from(["torch", "tensorflow", "jax", "keras"]), min_size=1, max_size=3, unique=True))
    for fw in chosen:
        op = draw(st.sampled_from(["*", "==", ">=", "<="]))
        lines.append(f'{fw} = "*"' if op == "*" else f'{fw} = "{op}{draw(st.sampled_from(VERSIONS[fw]))}"')
    vendor = draw(st.sampled_from(["nvidia", "amd", "cpu"]))
    if vendor != "cpu":
        gpus = draw(st.lists(st.sampled_from(NVIDIA if vendor == "nvidia" else AMD), min_size=1, max_size=3, unique=True))
        lines += ["[hardware]", "gpus = [" + ", ".join(f'"{g}"' for g in gpus) + "]"]
        if vendor == "nvidia" and draw(st.booleans()):
            lines.append(f'driver = "{draw(st.sampled_from(DRIVERS))}"')
    if draw(st.booleans()):
        lines.insert(0, f'[project]\npython = ">={draw(st.sampled_from(["3.8", "3.10", "3.12"]))}"')
    return "\n".join(lines) + "\n"


def _sass(b: Build, gpu: tuple[int, int]) -> bool:
    return any(cc(a) == gpu if a.endswith("a") else (cc(a)[0] == gpu[0] and cc(a)[1] <= gpu[1]) for a in b.archs)


def _ptx(b: Build, gpu: tuple[int, int]) -> bool:
    """PTX JIT-compiles for its arch and newer ones whatever CUDA made it; arch-specific PTX for its own only."""
    return any(cc(a) == gpu if a.endswith("a") else cc(a) <= gpu for a in b.ptx)


def serves(b: Build, gpu_arch: str, driver_native: bool) -> bool:
    gpu = cc(gpu_arch)
    return _sass(b, gpu) or (_ptx(b, gpu) and driver_native)


def check(r: Resolution, text: str) -> None:
    t = r.target
    builds = [c.build for c in r.choices if c.build]
    assert all(r.python in c.pythons for c in r.choices), "every package supports the chosen Python"
    spec = spec_of(text, G)
    assert spec.python.contains(r.python, prereleases=True)
    for c in r.choices:
        req = spec.framework(c.package)
        if req is not None:
            assert req.specifier.contains(c.release.version, prereleases=True), "pins are honoured"
    majors = {b.cuda.major for b in builds if b.cuda}
    assert len(majors) <= 1, "one CUDA major"
    for b in builds:
        assert b.accelerator == r.accelerator, "no silent CPU fallback, no cross-vendor build"
        if b.accelerator == "cuda":
            assert b.cuda is not None
            native_min = min(tk.driver_min.key for tk in G.m.toolkits if tk.version.prefix(2) == b.cuda.prefix(2))
            if t.driver is not None:
                native = t.driver.key >= native_min
                floor = next(m.minor_compat_driver_min.key for m in G.m.cuda_majors if m.major == b.cuda.major)
                assert native or t.driver.key >= floor, "the driver runs the build's CUDA"
                if r.compat == "native":
                    assert native, "compat = native only when the driver runs the CUDA natively"
                assert d(r.driver_min) <= t.driver.key
            else:
                native = r.compat == "native"
            for gpu in t.gpus:
                assert serves(b, gpu.arch.name, native), f"{b.variant} serves {gpu.name}"
                if not _sass(b, cc(gpu.arch.name)):
                    assert gpu.arch.name in r.jit_archs, "a GPU a build reaches only through PTX is in jit_archs"
        if b.accelerator == "rocm":
            assert all(gpu.arch.name in b.gfx for gpu in t.gpus)
    if t.driver is not None:
        for gpu in t.gpus:
            dropped = [br for br in G.m.branches if br.branch <= t.driver.major]
            assert not dropped or gpu.family not in dropped[-1].unsupported_families


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=specs())
def test_every_resolution_obeys_every_rule_and_is_deterministic(text: str) -> None:
    spec = spec_of(text, G)
    try:
        rs = solve(G, spec)
    except Unsatisfiable as e:
        assert e.clashes and all(c.reason for c in e.clashes)
        return
    assert rs == solve(G, spec)
    event("satisfiable")
    for r in rs:
        check(r, text)


def test_the_generator_reaches_both_outcomes() -> None:
    ok = bad = 0
    for text in ('[frameworks]\ntorch = "*"\n[hardware]\ngpus = ["A100"]\n',
                 '[frameworks]\ntorch = "==2.3.1"\n[hardware]\ngpus = ["RTX 5090"]\n'):
        try:
            solve(G, spec_of(text, G))
            ok += 1
        except Unsatisfiable:
            bad += 1
    assert ok == 1 and bad == 1
    assert SpecifierSet(">=2.5").contains("2.7.1")


# ---------------------------------------------------------------------------- pip lines

# mostly valid pieces, so that most lines read, with a few that break the line
_NAMES = st.sampled_from(["numpy", "Flash_Attn", "a", "x.y", "torch-2", "9lives"] * 3 + ["-bad", "bad-", "ümlaut", ""])
_OPS = st.sampled_from(["<", "<=", "==", "!=", ">=", ">", "~="] * 3 + ["===", "", "=", "<>", "=>"])
_VERSIONS = st.sampled_from(["2", "1.26.4", "2.*", "1.0b1", "1.0.post1", "3.0"] * 3 + ["abc", "", "1..2", "3.0+cpu"])
_SPACE = st.sampled_from(["", "", "", " ", " ", "\t", "\n", "\u00a0", "\x0c", "\u3000"])
_GLUE = st.sampled_from([","] * 12 + [",,", ";python_version<'3.12'", "[cuda]", " @ https://h/x.whl", "(", ")", ""])


@st.composite
def pip_lines(draw: st.DrawFn) -> str:
    """Lines near the simple kind (a name and specifiers), and some just past it."""
    parts = [draw(_SPACE), draw(_NAMES), draw(_SPACE)]
    for k in range(draw(st.integers(0, 3))):
        parts += [draw(_GLUE) if k else "", draw(_SPACE), draw(_OPS), draw(_SPACE), draw(_VERSIONS), draw(_SPACE)]
    if draw(st.integers(0, 9)) == 0:
        parts.append(draw(_GLUE))
    return "".join(parts)


@settings(max_examples=3000, deadline=None)
@given(line=pip_lines())
def test_a_pip_line_reads_as_packaging_reads_it(line: str) -> None:
    """envsolve reads a line of the simple kind itself (a lock need not import packaging's
    requirement parser); it must answer as packaging's Requirement: the same name and specifiers,
    and the same refusal."""
    from packaging.requirements import InvalidRequirement, Requirement

    from envsolve.versions import PipRequirement, parse_requirement

    try:
        want = Requirement(line)
    except InvalidRequirement:
        with pytest.raises(InvalidRequirement):
            parse_requirement(line)
        event("invalid")
        return
    got = parse_requirement(line)
    event(type(got).__name__)
    assert (got.name, got.specifier, got.extras, got.marker, got.url) == \
        (want.name, want.specifier, want.extras, want.marker, want.url)
    if isinstance(got, PipRequirement):
        assert str(got.specifier) == str(want.specifier)


def test_the_simple_pip_lines_are_read_without_packagings_parser() -> None:
    from envsolve.versions import PipRequirement, parse_requirement

    assert isinstance(parse_requirement("numpy<2"), PipRequirement)
    assert isinstance(parse_requirement(" torch >= 2.1 , <3 "), PipRequirement)
    assert not isinstance(parse_requirement("numpy[x]>1"), PipRequirement)
    assert not isinstance(parse_requirement("a; python_version<'3.12'"), PipRequirement)


@settings(max_examples=1000, deadline=None)
@given(name=st.one_of(st.text(max_size=12), st.from_regex(r"[a-z0-9._-]{1,12}", fullmatch=True)))
def test_a_name_is_canonical_as_packaging_makes_it(name: str) -> None:
    """domain.canonical_name answers a name already canonical itself (no import of packaging's
    utils): the same as packaging's canonicalize_name for any text."""
    from packaging.utils import canonicalize_name

    from envsolve.domain import canonical_name

    assert canonical_name(name) == canonicalize_name(name)
