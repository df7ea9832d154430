"""Property tests: every resolution of a generated spec obeys every rule, and solving is
deterministic. The rule checks here are written from the rules themselves, not from the solver."""

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
