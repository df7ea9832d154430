"""The only module that probes the machine: the accelerators (drivers, GPUs), the installed
frameworks and the container tools. What it finds is a :class:`~envsolve.host.HostFacts`.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from ..versions import parse_arch
from .facts import GpuInfo, HostFacts, MigDevice

__all__ = ["DEFAULT_TIMEOUT", "detect", "docker_tools", "gfx_from_target_version", "installed_versions",
           "parse_amd_smi", "parse_proc_version", "parse_rocminfo", "parse_smi_csv", "parse_smi_list",
           "parse_smi_xml"]

# ------------------------------------------------------------------------ accelerators
#
# What the host has: vendor, driver, the CUDA the driver runs, and each GPU. Every source is
# tried in order and the next one is used when it is absent or broken; every external command
# runs under a timeout, and a broken or hung tool becomes a warning in the facts, never a hang
# or a traceback. File-system roots and the tool search path are parameters so the tests can
# serve recorded outputs from fixture folders through the same parsing code.

DEFAULT_TIMEOUT = 10.0
_QUERY = "name,driver_version,compute_cap,memory.total,uuid"
_NA = {"", "n/a", "[n/a]", "[not supported]", "not supported", "[unknown error]", "none"}
_CUDA_IN_SMI = re.compile(r"CUDA(?: UMD)? Version:\s*([0-9]+\.[0-9]+)")
_PROC_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)")
_SMI_L_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)")
_SMI_L_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)")


@dataclass(slots=True)
class _Probe:
    """The search path, roots and timeout of one detection, and the warnings it collects."""

    path: list[str]
    root: Path
    timeout: float
    warnings: list[str] = field(default_factory=list)

    def which(self, name: str, *extra: Path) -> str | None:
        for folder in [*self.path, *(str(e) for e in extra)]:
            candidate = Path(folder) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
        return None

    def file(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def run(self, argv: list[str]) -> str | None:
        """stdout of ``argv``; None (and a warning) when it fails, exits non-zero or hangs."""
        shown = " ".join([Path(argv[0]).name, *argv[1:]])
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            self.warnings.append(f"`{shown}` could not be started: {e.strerror or e}")
            return None
        try:
            out, err = proc.communicate(timeout=self.timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            self.warnings.append(f"`{shown}` did not answer within {self.timeout:g} s and was stopped")
            return None
        text = out.decode("utf-8", errors="replace")
        if proc.returncode != 0:
            said = (err.decode("utf-8", errors="replace").strip() or text.strip()).splitlines()
            first = said[0].strip() if said else "no output"
            self.warnings.append(f"`{shown}` exited with status {proc.returncode}: {first}")
            return None
        return text


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop a hung tool and whatever it started (a child holding the pipes would block us)."""
    try:
        if hasattr(os, "killpg"):
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - Windows
            proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=1)
    except (subprocess.TimeoutExpired, OSError):  # pragma: no cover - pipes held elsewhere
        pass


def _value(text: str) -> str:
    text = text.strip()
    return "" if text.lower() in _NA else text


def _int(text: str) -> int | None:
    m = re.match(r"^\s*(\d+)", text or "")
    return int(m.group(1)) if m else None


# -- NVIDIA ---------------------------------------------------------------------------


def parse_smi_csv(text: str) -> tuple[str, list[GpuInfo]]:
    """``nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,uuid
    --format=csv,noheader,nounits`` into (driver, GPUs); ValueError on a malformed row."""
    driver = ""
    gpus: list[GpuInfo] = []
    for n, row in enumerate(csv.reader(io.StringIO(text), skipinitialspace=True)):
        if not row or not "".join(row).strip():
            continue
        if len(row) != 5:
            raise ValueError(f"line {n + 1} has {len(row)} fields, expected 5 ({_QUERY}): {','.join(row)!r}")
        name, drv, cc, mem, uuid = (_value(c) for c in row)
        if cc and not re.match(r"^\d+\.\d+$", cc):
            raise ValueError(f"line {n + 1}: compute capability {cc!r} is not of the form 9.0")
        driver = driver or drv
        gpus.append(GpuInfo(index=len(gpus), name=name, compute_capability=cc, memory_mib=_int(mem), uuid=uuid))
    if not gpus:
        raise ValueError("no GPU rows")
    return driver, gpus


def parse_smi_list(text: str) -> dict[int, tuple[MigDevice, ...]]:
    """MIG instances per GPU index from ``nvidia-smi -L``."""
    out: dict[int, list[MigDevice]] = {}
    current: int | None = None
    for line in text.splitlines():
        if m := _SMI_L_GPU.match(line):
            current = int(m.group(1))
        elif (m := _SMI_L_MIG.match(line)) and current is not None:
            out.setdefault(current, []).append(MigDevice(profile=m.group(1), uuid=m.group(3).strip()))
    return {k: tuple(v) for k, v in out.items()}


def parse_smi_xml(text: str) -> tuple[str, str, list[GpuInfo]]:
    """``nvidia-smi -q -x`` into (driver, CUDA version, GPUs); ValueError when not that XML."""
    try:
        root = ElementTree.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", text))
    except ElementTree.ParseError as e:
        raise ValueError(f"not XML ({e})") from None
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"root element is <{root.tag}>, not <nvidia_smi_log>")
    driver = _value(root.findtext("driver_version") or "")
    cuda = _value(root.findtext("cuda_version") or "")
    gpus = []
    for i, g in enumerate(root.findall("gpu")):
        migs = []
        if _value(g.findtext("mig_mode/current_mig") or "").lower() == "enabled":
            for m in g.findall("mig_devices/mig_device"):
                gi = _value(m.findtext("gpu_instance_id") or "")
                mem = _int(m.findtext("fb_memory_usage/total") or "")
                sms = _value(m.findtext("device_attributes/shared/multiprocessor_count") or "")
                profile = f"gi{gi}" + (f" ({sms} SMs, {mem} MiB)" if sms and mem else "")
                migs.append(MigDevice(profile=profile, uuid=_value(m.findtext("uuid") or "")))
        gpus.append(GpuInfo(index=i, name=_value(g.findtext("product_name") or ""),
                            memory_mib=_int(g.findtext("fb_memory_usage/total") or ""),
                            uuid=_value(g.findtext("uuid") or ""), mig=tuple(migs)))
    return driver, cuda, gpus


def parse_proc_version(text: str) -> str:
    """The driver version in ``/proc/driver/nvidia/version`` (proprietary and open modules)."""
    m = _PROC_VERSION.search(text)
    if not m:
        raise ValueError("no 'Kernel Module <version>' in it")
    return m.group(1)


def _nvml(probe: _Probe) -> HostFacts | None:
    """NVML through nvidia-ml-py (the optional ``nvml`` extra), when it imports and loads."""
    try:
        import pynvml  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - optional
    except Exception:
        return None
    try:
        pynvml.nvmlInit()
    except Exception as e:  # no driver, no library: the next source decides
        if "LibraryNotFound" not in type(e).__name__ and "DriverNotLoaded" not in type(e).__name__:
            probe.warnings.append(f"NVML could not start: {e}")
        return None
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda_int = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
        gpus = []
        for i in range(int(pynvml.nvmlDeviceGetCount())):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            migs: list[MigDevice] = []
            try:
                if pynvml.nvmlDeviceGetMigMode(h)[0] == 1:
                    for j in range(int(pynvml.nvmlDeviceGetMaxMigDeviceCount(h))):
                        try:
                            mh = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, j)
                        except Exception:
                            continue
                        mem = int(pynvml.nvmlDeviceGetMemoryInfo(mh).total) >> 20
                        migs.append(MigDevice(profile=f"{mem} MiB", uuid=_text(pynvml.nvmlDeviceGetUUID(mh))))
            except Exception:  # MIG not supported on this GPU
                pass
            gpus.append(GpuInfo(index=i, name=_text(pynvml.nvmlDeviceGetName(h)),
                                compute_capability=f"{major}.{minor}",
                                memory_mib=int(pynvml.nvmlDeviceGetMemoryInfo(h).total) >> 20,
                                uuid=_text(pynvml.nvmlDeviceGetUUID(h)), mig=tuple(migs)))
    except Exception as e:
        probe.warnings.append(f"NVML failed while reading the GPUs: {e}")
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
    cuda = f"{cuda_int // 1000}.{cuda_int % 1000 // 10}" if cuda_int else ""
    return HostFacts(vendor="nvidia", driver=driver, cuda_driver_max=cuda,
                     cuda_driver_max_from="NVML" if cuda else "", gpus=tuple(gpus), source="NVML")


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvidia_smi(probe: _Probe, smi: str) -> HostFacts | None:
    out = probe.run([smi, f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits"])
    if out is not None:
        try:
            driver, gpus = parse_smi_csv(out)
        except ValueError as e:
            probe.warnings.append(f"nvidia-smi --query-gpu output could not be read: {e}")
        else:
            cuda = ""
            if (table := probe.run([smi])) is not None and (m := _CUDA_IN_SMI.search(table)):
                cuda = m.group(1)
            if (listing := probe.run([smi, "-L"])) is not None:
                migs = parse_smi_list(listing)
                gpus = [_replace_mig(g, migs.get(g.index, ())) for g in gpus]
            return HostFacts(vendor="nvidia", driver=driver, cuda_driver_max=cuda,
                             cuda_driver_max_from="nvidia-smi" if cuda else "", gpus=tuple(gpus),
                             source="nvidia-smi --query-gpu")
    out = probe.run([smi, "-q", "-x"])
    if out is not None:
        try:
            driver, cuda, xgpus = parse_smi_xml(out)
        except ValueError as e:
            probe.warnings.append(f"nvidia-smi -q -x output could not be read: {e}")
        else:
            return HostFacts(vendor="nvidia", driver=driver, cuda_driver_max=cuda,
                             cuda_driver_max_from="nvidia-smi" if cuda else "", gpus=tuple(xgpus),
                             source="nvidia-smi -q -x")
    return None


def _replace_mig(g: GpuInfo, mig: tuple[MigDevice, ...]) -> GpuInfo:
    return GpuInfo(index=g.index, name=g.name, compute_capability=g.compute_capability, gfx=g.gfx,
                   memory_mib=g.memory_mib, uuid=g.uuid, mig=mig)


# -- AMD --------------------------------------------------------------------------------


def parse_amd_smi(text: str) -> tuple[str, list[GpuInfo]]:
    """``amd-smi static --json`` (a list of GPUs, or ``{"gpu_data": [...]}`` in newer releases)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at line {e.lineno})") from None
    if isinstance(data, dict):
        data = data.get("gpu_data")
    if not isinstance(data, list) or not data:
        raise ValueError("no GPU entries")
    driver = ""
    gpus: list[GpuInfo] = []
    for i, entry in enumerate(data):
        if not isinstance(entry, dict):
            raise ValueError(f"entry {i} is not an object")
        asic, vram, drv = (v if isinstance(v := entry.get(k), dict) else {} for k in ("asic", "vram", "driver"))
        size = vram.get("size", "")
        if isinstance(size, dict):
            mib = _int(str(size.get("value", "")))
        else:
            mib = _int(str(size))
        driver = driver or _value(str(drv.get("version") or drv.get("driver_version") or ""))
        gfx = _value(str(asic.get("target_graphics_version", ""))).lower()
        gpus.append(GpuInfo(index=int(entry.get("gpu", i)), name=_value(str(asic.get("market_name", ""))) or gfx,
                            gfx=gfx, memory_mib=mib, uuid=_value(str(entry.get("uuid", "")))))
    return driver, gpus


def parse_rocminfo(text: str) -> tuple[str, list[GpuInfo]]:
    """GPU agents of ``rocminfo``: gfx target, marketing name, UUID and VRAM (first GLOBAL pool)."""
    driver = m.group(1) if (m := re.search(r"ROCk module version (\S+) is loaded", text)) else ""
    gpus: list[GpuInfo] = []
    for block in re.split(r"\*{5,}\s*\n\s*Agent \d+\s*\n\s*\*{5,}", text)[1:]:
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if ":" in line and line.startswith("  ") and not line.startswith("    "):
                k, _, v = line.partition(":")
                fields.setdefault(k.strip(), v.strip())
        if fields.get("Device Type") != "GPU":
            continue
        size = re.search(r"Segment:\s+GLOBAL;[^\n]*\n\s+Size:\s+(\d+)\(", block)
        gfx = fields.get("Name", "").lower()
        uuid = _value(fields.get("Uuid", ""))
        gpus.append(GpuInfo(index=len(gpus), name=fields.get("Marketing Name", "") or gfx, gfx=gfx,
                            memory_mib=int(size.group(1)) // 1024 if size else None,
                            uuid="" if uuid.endswith("-XX") else uuid))
    if not gpus:
        raise ValueError("no agent with Device Type: GPU")
    return driver, gpus


def gfx_from_target_version(value: int) -> str:
    """KFD's ``gfx_target_version`` (90402) as a gfx target name (gfx942); "" for 0 (a CPU)."""
    if value <= 0:
        return ""
    major, minor, step = value // 10000, value // 100 % 100, value % 100
    return f"gfx{major}{minor:x}{step:x}"


def _amd(probe: _Probe) -> HostFacts | None:
    if smi := probe.which("amd-smi", probe.root / "opt/rocm/bin"):
        out = probe.run([smi, "static", "--json"])
        if out is not None:
            try:
                driver, gpus = parse_amd_smi(out)
            except ValueError as e:
                probe.warnings.append(f"amd-smi static --json output could not be read: {e}")
            else:
                return HostFacts(vendor="amd", driver=driver, gpus=tuple(gpus), source="amd-smi")
    if tool := probe.which("rocminfo", probe.root / "opt/rocm/bin"):
        out = probe.run([tool])
        if out is not None:
            try:
                driver, gpus = parse_rocminfo(out)
            except ValueError as e:
                probe.warnings.append(f"rocminfo output could not be read: {e}")
            else:
                return HostFacts(vendor="amd", driver=driver, gpus=tuple(gpus), source="rocminfo")
    if tool := probe.which("rocm_agent_enumerator", probe.root / "opt/rocm/bin"):
        out = probe.run([tool])
        if out is not None:
            names = [n.strip().lower() for n in out.splitlines() if re.match(r"^gfx[0-9a-f]+$", n.strip())]
            names = [n for n in names if n != "gfx000"]
            if names:
                return HostFacts(vendor="amd", gpus=tuple(GpuInfo(index=i, name=n, gfx=n)
                                                          for i, n in enumerate(names)),
                                 source="rocm_agent_enumerator")
    nodes = probe.root / "sys/class/kfd/kfd/topology/nodes"
    kfd: list[GpuInfo] = []
    for node in sorted(nodes.glob("*"), key=lambda p: int(p.name) if p.name.isdigit() else -1):
        text = probe.file(str((node / "properties").relative_to(probe.root)))
        m = re.search(r"^gfx_target_version\s+(\d+)", text or "", re.M)
        if m and (gfx := gfx_from_target_version(int(m.group(1)))):
            kfd.append(GpuInfo(index=len(kfd), name=gfx, gfx=gfx))
    if kfd:
        return HostFacts(vendor="amd", gpus=tuple(kfd), source="/sys/class/kfd")
    return None


# -- the whole host ----------------------------------------------------------------------


def _visible(gpus: tuple[GpuInfo, ...], value: str | None, var: str, probe: _Probe) -> tuple[GpuInfo, ...]:
    """The GPUs a CUDA/ROCm program sees under ``CUDA_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``:
    indices or UUIDs (or MIG UUIDs), in the order given, up to the first that matches none."""
    if value is None:
        return gpus
    picked: list[GpuInfo] = []
    for token in (t.strip() for t in value.split(",")):
        match = None
        if token.isdigit():
            match = next((g for g in gpus if g.index == int(token)), None)
        elif token:
            match = next((g for g in gpus if g.uuid and (g.uuid == token or g.uuid.startswith(token))), None)
            if match is None:
                for g in gpus:
                    mig = tuple(m for m in g.mig if m.uuid and m.uuid.startswith(token))
                    if mig:
                        match = _replace_mig(g, mig)
        if match is None:
            break  # the runtime stops at the first device it cannot find
        if match not in picked:
            picked.append(match)
    if len(picked) != len(gpus):
        probe.warnings.append(f"{var}={value!r} leaves {len(picked)} of {len(gpus)} GPUs visible")
    return tuple(picked)


def _override_gpus(value: str) -> tuple[str, tuple[GpuInfo, ...]]:
    """``ENVSOLVE_GPUS=H100,sm_80,gfx942``: GPUs a build host does not have (names or archs)."""
    gpus = []
    vendors = set()
    for i, label in enumerate(t.strip() for t in value.split(",") if t.strip()):
        cc = gfx = ""
        try:
            a = parse_arch(label)
        except ValueError:  # a model name, looked up in the data later
            a = None
        if a is not None and a.vendor == "amd":
            gfx = a.name
        elif a is not None:
            cc = a.compute_capability
        vendors.add("amd" if gfx or re.match(r"(?i)^(amd|mi\d|radeon|rx )", label) else "nvidia")
        gpus.append(GpuInfo(index=i, name=label, compute_capability=cc, gfx=gfx))
    vendor = vendors.pop() if len(vendors) == 1 else ("cpu" if not vendors else "mixed")
    return vendor, tuple(gpus)


def detect(*, environ: Mapping[str, str] | None = None, path: str | None = None, root: Path | None = None,
           timeout: float = DEFAULT_TIMEOUT, nvml: bool = True) -> HostFacts:
    """Describe this host's accelerators. Never raises for a missing, broken or hung tool.

    ``path`` is where tools are looked for (default: ``PATH``), ``root`` the file-system root
    for ``/proc``, ``/sys``, ``/etc`` and ``/usr/lib/wsl`` (default ``/``). ``ENVSOLVE_GPUS``
    and ``ENVSOLVE_DRIVER`` override what is found, for CI and build hosts without the GPUs.
    """
    env = os.environ if environ is None else environ
    search = env.get("PATH", os.defpath) if path is None else path
    probe = _Probe(path=[p for p in search.split(os.pathsep) if p], root=root or Path("/"), timeout=timeout)
    wsl = probe.root / "usr/lib/wsl/lib"
    platform = "wsl2" if wsl.is_dir() else "linux"
    l4t = ""
    if (tegra := probe.file("etc/nv_tegra_release")) is not None:
        platform = "jetson"
        m = re.search(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([0-9.]+)", tegra)
        l4t = f"R{m.group(1)}.{m.group(2)}" if m else tegra.strip().splitlines()[0] if tegra.strip() else ""
    container = any((probe.root / p).exists() for p in (".dockerenv", "run/.containerenv"))
    # the CPU architecture, as `uname -m` prints it (Linux 6.1+ also says it in /proc/sys/kernel/arch)
    machine = (probe.file("proc/sys/kernel/arch") or "").strip()
    if not machine and probe.root == Path("/"):
        machine = os.uname().machine
    facts = _nvml(probe) if nvml else None
    if facts is None and (smi := probe.which("nvidia-smi", wsl)):
        facts = _nvidia_smi(probe, smi)
    if facts is None and (text := probe.file("proc/driver/nvidia/version")) is not None:
        try:
            facts = HostFacts(vendor="nvidia", driver=parse_proc_version(text), source="/proc/driver/nvidia/version")
        except ValueError as e:
            probe.warnings.append(f"/proc/driver/nvidia/version could not be read: {e}")
    if facts is None:
        facts = _amd(probe)
    if facts is None:
        facts = HostFacts(vendor="cpu", source="no GPU tool found")
    if platform == "jetson" and not facts.gpus and (model := probe.file("proc/device-tree/model")):
        # a Jetson has no nvidia-smi list of GPUs: its board names the module
        # ("NVIDIA Jetson Orin NX Engineering Reference Developer Kit"); the data matches the name
        board = model.replace("\x00", "").strip()
        if board:
            facts = replace(facts, gpus=(GpuInfo(index=0, name=board),), source="/proc/device-tree/model")
    var = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "ROCR_VISIBLE_DEVICES"}.get(facts.vendor)
    gpus = _visible(facts.gpus, env.get(var) if var else None, var or "", probe)
    vendor, driver, source = facts.vendor, facts.driver, facts.source
    if env.get("ENVSOLVE_GPUS") is not None:
        vendor, gpus = _override_gpus(env["ENVSOLVE_GPUS"])
        source = "ENVSOLVE_GPUS"
        if vendor == "mixed":
            probe.warnings.append("ENVSOLVE_GPUS mixes NVIDIA and AMD GPUs; describe one vendor per host")
            vendor = "nvidia"
    if env.get("ENVSOLVE_DRIVER"):
        driver = env["ENVSOLVE_DRIVER"].strip()
        vendor = "nvidia" if vendor == "cpu" else vendor
        source = f"{source}, ENVSOLVE_DRIVER" if source != "no GPU tool found" else "ENVSOLVE_DRIVER"
    cuda = facts.cuda_driver_max if driver == facts.driver else ""
    rocm = (probe.file("opt/rocm/.info/version") or "").strip().split("-")[0] if vendor == "amd" else ""
    return HostFacts(vendor=vendor, driver=driver, cuda_driver_max=cuda,
                     cuda_driver_max_from=facts.cuda_driver_max_from if cuda else "", rocm=rocm,
                     gpus=gpus, source=source, platform=platform, l4t=l4t, container=container, machine=machine,
                     warnings=tuple(probe.warnings))


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """Installed distribution versions (importlib.metadata) of ``names``; absent ones are left out."""
    from importlib import metadata

    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def docker_tools(path: str | None = None) -> dict[str, bool]:
    """Whether docker and the NVIDIA container toolkit (nvidia-ctk, nvidia-container-runtime) are on PATH."""
    return {t: shutil.which(t, path=path) is not None
            for t in ("docker", "nvidia-ctk", "nvidia-container-runtime")}
