"""The compatibility graph: versioned nodes and typed edges built from the matrices.

:class:`CompatGraph` is the narrow interface the solver sees: indexed look-ups over the
records (GPU names, toolkits, driver branches, builds). The same object lists the graph's
nodes and typed edges (``requires``, ``supports``, ``bundles``, ``compiled-for``, ...) and
turns them into a networkx graph for export; networkx is imported only then, so commands
that do not export never pay for it.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Iterator
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from .matrix import ArchInfo, Build, CudaMajor, Cudnn, Gpu, Image, Matrices, Release, Rocm, Toolkit
from .matrix import _fold as fold
from .versions import Arch, Dotted, parse_arch

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["CompatGraph", "Edge", "arch", "node_id"]


@cache
def arch(name: str) -> Arch:
    """Parsed architecture, cached: the solver asks for the same few names many times."""
    return parse_arch(name)


def node_id(kind: str, *parts: str) -> str:
    """Stable node identifiers, e.g. ``build:torch==2.7.1+cu128`` or ``arch:sm_90``."""
    return f"{kind}:{' '.join(parts)}"


Edge = tuple[str, str, str]  # (from, to, type)


class CompatGraph:
    """Indexed, read-only view of the matrices; see the module docstring."""

    def __init__(self, m: Matrices) -> None:
        self.m = m
        self.data_version = m.data_version
        self.digest = m.digest
        self._arch = {a.name: a for a in m.archs}
        self._gpu: dict[str, Gpu] = {}
        for g in m.gpus:
            for n in (g.name, *g.aliases):
                self._gpu[fold(n)] = g
        self._majors = {c.major: c for c in m.cuda_majors}
        self._releases: dict[str, list[Release]] = defaultdict(list)
        for r in m.releases:
            self._releases[r.package].append(r)
        for rs in self._releases.values():
            rs.sort(key=lambda r: r.version, reverse=True)
        self._builds: dict[tuple[str, Version], list[Build]] = defaultdict(list)
        for b in m.builds:
            self._builds[(b.package, b.version)].append(b)
        for bs in self._builds.values():
            bs.sort(key=lambda b: b.variant)
        # memo tables of pure computations over this graph (the solver's shared sub-problems)
        self.memo: dict[str, dict[Any, Any]] = {}

    # -- hardware ------------------------------------------------------------------

    def gpu(self, name: str) -> Gpu | None:
        """The GPU model a user or nvidia-smi names, matched ignoring case and punctuation."""
        key = fold(name)
        if key in self._gpu:
            return self._gpu[key]
        for prefix in ("nvidia", "nvidiageforce", "geforce", "amd", "amdinstinct", "amdradeon",
                       "radeon", "tesla"):
            if fold(prefix + key) in self._gpu:
                return self._gpu[fold(prefix + key)]
        return None

    def gpu_suggestions(self, name: str) -> list[str]:
        names = sorted({g.name for g in self.m.gpus})
        by_fold = {fold(n): n for n in names}
        key = fold(name)
        close = difflib.get_close_matches(key, list(by_fold), n=3, cutoff=0.6)
        if not close:
            return []
        ratio = {c: difflib.SequenceMatcher(None, key, c).ratio() for c in close}
        best = max(ratio.values())
        return [by_fold[c] for c in close if ratio[c] >= best - 0.1]  # near misses of the best only

    def arch_info(self, name: str) -> ArchInfo | None:
        a = arch(name)
        return self._arch.get(a.name.removesuffix(a.suffix))

    # -- CUDA, drivers, libraries ----------------------------------------------------

    def cuda_major(self, major: int) -> CudaMajor | None:
        return self._majors.get(major)

    def toolkits(self, version: Dotted) -> list[Toolkit]:
        """Toolkit releases of a CUDA major.minor (``12.8`` -> 12.8.0, 12.8.1), oldest first."""
        want = version.prefix(2)
        return [t for t in self.m.toolkits if t.version.prefix(2) == want]

    def native_driver_min(self, cuda: Dotted) -> Dotted | None:
        """The oldest driver that runs CUDA ``major.minor`` natively (its GA release's floor)."""
        ts = self.toolkits(cuda)
        return min((t.driver_min for t in ts), default=None)

    def toolkit_knows(self, cuda: Dotted, gpu: Arch) -> bool:
        """Whether CUDA ``major.minor`` can target ``gpu`` at all."""
        return any(gpu.name in t.archs for t in self.toolkits(cuda))

    def first_toolkit_for(self, gpu: Arch) -> Toolkit | None:
        """The oldest toolkit that can target ``gpu``."""
        return next((t for t in self.m.toolkits if gpu.name in t.archs), None)

    def last_toolkit_for(self, gpu: Arch) -> Toolkit | None:
        """The newest toolkit that can target ``gpu``."""
        return next((t for t in reversed(self.m.toolkits) if gpu.name in t.archs), None)

    def introduced_by(self, gpu: Arch) -> Toolkit | None:
        """The toolkit that introduced ``gpu``; None when it predates the oldest in the data."""
        first = self.first_toolkit_for(gpu)
        if first is None or (self.m.toolkits and first is self.m.toolkits[0]):
            return None
        return first

    def cuda_max_for_driver(self, driver: Dotted) -> Dotted | None:
        """The newest CUDA major.minor a driver runs natively, from the toolkit floors."""
        best: Dotted | None = None
        for t in self.m.toolkits:
            if t.driver_min <= driver and (best is None or t.version > best):
                best = t.version
        return best

    def newest_branch_for(self, families: set[str]) -> int | None:
        """The newest driver branch that still supports every family; None: no limit known."""
        limit: int | None = None
        for b in self.m.branches:
            if families & set(b.unsupported_families):
                limit = b.branch if limit is None else min(limit, b.branch)
        if limit is None:
            return None
        older = [b.branch for b in self.m.branches if b.branch < limit]
        return max(older) if older else None

    def branch_drops(self, branch: int, families: set[str]) -> set[str]:
        """The families a driver branch no longer supports, among ``families``."""
        rows = [b for b in self.m.branches if b.branch <= branch]
        if not rows:
            return set()
        return families & set(rows[-1].unsupported_families)

    def cudnn_row(self, version: str, cuda_major: int) -> Cudnn | None:
        """The support-matrix row for a cuDNN version as pinned (``9.1.0.70`` -> 9.1.0)."""
        best: Cudnn | None = None
        parts = tuple(int(p) for p in version.split(".") if p.isdigit())
        for row in self.m.cudnn:
            if row.cuda_major != cuda_major:
                continue
            k = row.version.key
            if parts[: len(k)] == k and (best is None or len(k) > len(best.version.key)):
                best = row
        return best

    def rocm_row(self, version: Dotted) -> Rocm | None:
        return next((r for r in self.m.rocm if r.version.prefix(2) == version.prefix(2)), None)

    # -- frameworks --------------------------------------------------------------------

    def releases(self, package: str) -> list[Release]:
        """Releases of a framework, newest first."""
        return self._releases.get(package, [])

    def builds(self, release: Release) -> list[Build]:
        return self._builds.get((release.package, release.version), [])

    def conda_specs(self, release: Release, cuda: Dotted | None, python: str) -> tuple[str, ...]:
        """conda-forge's MatchSpecs for a framework build; () unless conda-forge has every piece.

        A framework may be several conda packages (jax is noarch ``jax`` plus ``jaxlib``, whose
        version is the release's jaxlib companion)."""
        want = "{}.{}".format(*cuda.prefix(2)) if cuda is not None else None
        rows = [r for r in self.m.conda if r.framework == release.package]
        versions = {name: dict(release.companions).get(name, release.raw) for name in {r.name for r in rows}}
        specs = []
        for name, version in sorted(versions.items()):
            row = next((r for r in rows if r.name == name and r.version == version), None)
            spec = row.spec(want, python) if row is not None else ""
            if not spec:
                return ()
            specs.append(spec)
        return tuple(specs)

    def images(self, accelerator: str) -> list[Image]:
        return [i for i in self.m.images if i.accelerator == accelerator]

    def pythons(self) -> list[str]:
        """Every Python minor the data knows, oldest first."""
        seen = {p for r in self.m.releases for p in r.python}
        seen |= {i.python for i in self.m.images if i.python}
        return sorted(seen, key=lambda p: tuple(int(x) for x in p.split(".")))

    # -- the graph itself ------------------------------------------------------------

    def nodes(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every node with its attributes, in a deterministic order."""
        m = self.m
        for info in sorted(m.archs, key=lambda x: x.name):
            yield node_id("arch", info.name), {"kind": "arch", "vendor": info.vendor,
                                               "family": info.family, "source": info.source}
        for g in sorted(m.gpus, key=lambda g: g.name):
            yield node_id("gpu", g.name), {"kind": "gpu", "vendor": g.vendor, "source": g.source}
        for t in m.toolkits:
            yield node_id("cuda", t.version.raw), {"kind": "cuda", "driver_min": t.driver_min.raw,
                                                   "source": t.source}
        for br in m.branches:
            yield node_id("driver", f"R{br.branch}"), {"kind": "driver", "cuda_max": br.cuda_max.raw,
                                                       "source": br.source}
        for c in m.cudnn:
            yield node_id("cudnn", f"{c.version.raw} cu{c.cuda_major}"), {"kind": "cudnn",
                                                                          "source": c.source}
        for r in m.rocm:
            yield node_id("rocm", r.version.raw), {"kind": "rocm", "source": r.source}
        for rel in sorted(m.releases, key=lambda r: (r.package, r.version)):
            yield node_id("release", f"{rel.package}=={rel.raw}"), {
                "kind": "release", "python": list(rel.python), "source": rel.source}
        for b in sorted(m.builds, key=lambda b: (b.package, b.version, b.variant)):
            yield _build_id(b), {"kind": "build", "variant": b.variant, "default": b.default,
                                 "accelerator": b.accelerator, "source": b.source,
                                 "confidence": b.confidence}

    def edges(self) -> Iterator[Edge]:
        """Every typed edge, in a deterministic order."""
        m = self.m
        for g in sorted(m.gpus, key=lambda g: g.name):
            yield node_id("gpu", g.name), node_id("arch", g.arch), "is-arch"
        for t in m.toolkits:
            for a in t.archs:
                yield node_id("cuda", t.version.raw), node_id("arch", a), "supports"
            yield node_id("cuda", t.version.raw), node_id("driver", f"R{t.driver_min.major}"), "requires"
        for br in m.branches:
            for info in m.archs:
                if info.vendor == "nvidia" and info.family not in br.unsupported_families:
                    yield node_id("driver", f"R{br.branch}"), node_id("arch", info.name), "supports"
        for c in m.cudnn:
            for a in c.archs:
                yield node_id("cudnn", f"{c.version.raw} cu{c.cuda_major}"), node_id("arch", a), "supports"
        for r in m.rocm:
            for a in r.gfx:
                yield node_id("rocm", r.version.raw), node_id("arch", a), "supports"
        for b in sorted(m.builds, key=lambda b: (b.package, b.version, b.variant)):
            bid = _build_id(b)
            yield bid, node_id("release", f"{b.package}=={b.raw}"), "build-of"
            for a in (*b.archs, *b.gfx):
                yield bid, node_id("arch", a), "compiled-for"
            for a in b.ptx:
                yield bid, node_id("arch", a), "ptx-for"
            if b.cuda is not None:
                ts = self.toolkits(b.cuda)
                if ts:
                    yield bid, node_id("cuda", ts[0].version.raw), "requires"
            rocm = self.rocm_row(b.rocm) if b.rocm is not None else None
            if rocm is not None:
                yield bid, node_id("rocm", rocm.version.raw), "requires"
            if b.cudnn and b.cuda is not None:
                row = self.cudnn_row(b.cudnn, b.cuda.major)
                if row:
                    yield bid, node_id("cudnn", f"{row.version.raw} cu{row.cuda_major}"), "bundles"
        for rel in sorted(m.releases, key=lambda r: (r.package, r.version)):
            for name, version in rel.companions:
                rid = node_id("release", f"{rel.package}=={rel.raw}")
                yield rid, node_id("package", f"{name}=={version}"), "pairs-with"

    @cached_property
    def nx(self) -> nx.MultiDiGraph:
        """The networkx graph of :meth:`nodes` and :meth:`edges` (imports networkx)."""
        import networkx as nx

        g: nx.MultiDiGraph = nx.MultiDiGraph()
        g.add_nodes_from(self.nodes())
        for u, v, kind in self.edges():
            g.add_edge(u, v, key=kind, kind=kind)
        return g


def _build_id(b: Build) -> str:
    return node_id("build", f"{b.package}=={b.raw}+{b.variant}")
