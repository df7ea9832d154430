"""The only module that probes the machine: the accelerators (drivers, GPUs), the installed
frameworks and the container tools. What it finds is a :class:`~envsolve.host.HostFacts`.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import platform as _platform
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar
from xml.etree import ElementTree

import msgspec
from msgspec.structs import replace

from ..domain import Vendor
from ..paths import venv_python
from ..versions import parse_arch
from .facts import GpuInfo, HostFacts, HostOs, MigDevice

__all__ = ["DEFAULT_TIMEOUT", "PythonSite", "detect", "docker_tools", "gfx_from_target_version",
           "installed_versions", "parse_amd_smi", "parse_displays", "parse_lspci", "parse_proc_version",
           "parse_rocminfo", "parse_smi_csv", "parse_smi_list", "parse_smi_table", "parse_smi_xml", "parse_sycl_ls",
           "parse_xpu_smi", "python_site"]

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
# the driver in nvidia-smi's table: "Driver Version: 591.86", from R610 "KMD Version: 610.62"
_DRIVER_IN_SMI = re.compile(r"(?:Driver|KMD) Version:\s*([0-9]+(?:\.[0-9]+)+)")
# a GPU row of nvidia-smi's table: "|   0  NVIDIA GeForce RTX 3060      WDDM  |" (the name may be cut "...")
_SMI_ROW = re.compile(r"^\|\s+(\d+)\s+(\S.*?)\s+(?:On|Off|WDDM|TCC|MCDM|N/A)\s+\|")
_SMI_MEM = re.compile(r"\|\s*\d+MiB\s*/\s*(\d+)MiB\s*\|")
_PROC_VERSION = re.compile(r"Kernel Module(?: for \S+)?\s+([0-9]+(?:\.[0-9]+)+)")
_SMI_L_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: ([^)]+)\)")
_SMI_L_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: ([^)]+)\)")
_AGENT = re.compile(r"\*{5,}\s*\n\s*Agent \d+\s*\n\s*\*{5,}")  # rocminfo's agent header
_GFX = re.compile(r"^gfx[0-9a-f]+$")
_WSL = "usr/lib/wsl/lib"  # where WSL 2 puts nvidia-smi and the driver's libraries
# WSL 2's kernel release: "5.15.133.1-microsoft-standard-WSL2" (4.19 kernels: "-microsoft-standard");
# WSL 1 ("4.4.0-18362-Microsoft") runs no GPU
_WSL_KERNEL = re.compile(r"microsoft-standard", re.I)
# where Windows puts nvidia-smi.exe (the driver's System32 copy; older drivers' NVSMI folder)
_WINDOWS_SMI = ("Windows/System32", "Program Files/NVIDIA Corporation/NVSMI")
_NO_TOOL = "no GPU tool found"
# a vendor -> the variable that hides its GPUs from a program
_VISIBLE = {"nvidia": "CUDA_VISIBLE_DEVICES", "amd": "ROCR_VISIBLE_DEVICES"}
_T = TypeVar("_T")


class _Probe(msgspec.Struct):
    """The search path, roots and timeout of one detection, and the warnings it collects."""

    path: list[str]
    root: Path
    timeout: float
    nvml: bool = True  # whether NVML is tried (the tests serve recorded tool outputs instead)
    system: str = "linux"  # Python's sys.platform of the host: linux, win32, darwin
    warnings: list[str] = msgspec.field(default_factory=list)

    @property
    def windows(self) -> bool:
        return self.system.startswith("win")

    def tool(self, name: str, *extra: Path) -> str | None:
        """A tool on the search path (``name.exe`` on Windows) or in ``extra`` folders under the root."""
        return self.which(f"{name}.exe" if self.windows else name, *extra)

    def which(self, name: str, *extra: Path) -> str | None:
        folders: tuple[str | Path, ...] = (*self.path, *extra)
        for folder in folders:
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
            said = err.decode("utf-8", errors="replace").strip() or text.strip()
            self.warnings.append(f"`{shown}` exited with status {proc.returncode}: {_first_line(said)}")
            return None
        return text


def _first_line(said: str) -> str:
    return said.splitlines()[0].strip() if said else "no output"


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


def _nvidia(driver: str, cuda: str, gpus: Iterable[GpuInfo], *, said_by: str, source: str) -> HostFacts:
    """An NVIDIA host as a source found it; ``said_by`` names the tool that reported the CUDA."""
    return HostFacts(vendor="nvidia", driver=driver, cuda_driver_max=cuda, cuda_driver_max_from=said_by if cuda else "",
                     gpus=tuple(gpus), source=source)


def parse_smi_csv(text: str) -> tuple[str, list[GpuInfo]]:
    """``nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,uuid
    --format=csv,noheader,nounits`` into (driver, GPUs); ValueError on a malformed row."""
    parsed = [_smi_row(index, n, row) for index, (n, row) in enumerate(_csv_rows(text))]
    if not parsed:
        raise ValueError("no GPU rows")
    return _first([d for d, _ in parsed]), [g for _, g in parsed]


def _csv_rows(text: str) -> list[tuple[int, list[str]]]:
    """The rows that are not blank, each with its line number (from 0)."""
    rows = enumerate(csv.reader(io.StringIO(text), skipinitialspace=True))
    return [(n, row) for n, row in rows if "".join(row).strip()]


def _first(drivers: list[str]) -> str:
    """The driver the first GPU that says one reports."""
    return next((d for d in drivers if d), "")


def _smi_row(index: int, n: int, row: list[str]) -> tuple[str, GpuInfo]:
    """One CSV row (line ``n``) as (driver, GPU ``index``)."""
    if len(row) != 5:
        raise ValueError(f"line {n + 1} has {len(row)} fields, expected 5 ({_QUERY}): {','.join(row)!r}")
    name, driver, cc, mem, uuid = (_value(c) for c in row)
    if cc and not re.match(r"^\d+\.\d+$", cc):
        raise ValueError(f"line {n + 1}: compute capability {cc!r} is not of the form 9.0")
    return driver, GpuInfo(index=index, name=name, compute_capability=cc, memory_mib=_int(mem), uuid=uuid)


def parse_smi_names(text: str) -> dict[int, tuple[str, str]]:
    """(name, UUID) per GPU index from ``nvidia-smi -L`` (the names the table cuts)."""
    return {int(m.group(1)): (m.group(2).strip(), m.group(3).strip())
            for line in text.splitlines() if (m := _SMI_L_GPU.match(line))}


def parse_smi_table(text: str) -> tuple[str, str, list[GpuInfo]]:
    """nvidia-smi's table (no arguments) into (driver, CUDA, GPUs): the driver of ``Driver Version:``
    or, from R610, ``KMD Version:``; the CUDA of ``CUDA Version:`` / ``CUDA UMD Version:`` ("" for
    ``ERR!``); each GPU row's name (cut with "..." when long) and total memory."""
    m = _DRIVER_IN_SMI.search(text)
    if not m:
        raise ValueError("no 'Driver Version:' or 'KMD Version:' in it")
    cuda = c.group(1) if (c := _CUDA_IN_SMI.search(text)) else ""
    lines = text.split("Processes:")[0].splitlines()
    rows = [(int(r.group(1)), r.group(2), lines[n + 1] if n + 1 < len(lines) else "")
            for n, line in enumerate(lines) if (r := _SMI_ROW.match(line))]
    gpus = [GpuInfo(index=i, name=name, memory_mib=int(mem.group(1)) if (mem := _SMI_MEM.search(nxt)) else None)
            for i, name, nxt in rows]
    return m.group(1), cuda, gpus


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
    root = _smi_log(text)
    gpus = [_xml_gpu(i, g) for i, g in enumerate(root.findall("gpu"))]
    # from R610 driver_version carries "[Deprecated; ...]" after the number
    driver = _field(root, "kmd_version") or _field(root, "driver_version")
    return driver.split(" ")[0], _field(root, "cuda_version").split(" ")[0], gpus


def _smi_log(text: str) -> ElementTree.Element:
    try:
        root = ElementTree.fromstring(re.sub(r"<!DOCTYPE[^>]*>", "", text))
    except ElementTree.ParseError as e:
        raise ValueError(f"not XML ({e})") from None
    if root.tag != "nvidia_smi_log":
        raise ValueError(f"root element is <{root.tag}>, not <nvidia_smi_log>")
    return root


def _field(node: ElementTree.Element, path: str) -> str:
    return _value(node.findtext(path) or "")


def _mib(node: ElementTree.Element, path: str) -> int | None:
    return _int(node.findtext(path) or "")


def _xml_gpu(index: int, g: ElementTree.Element) -> GpuInfo:
    migs = g.findall("mig_devices/mig_device") if _field(g, "mig_mode/current_mig").lower() == "enabled" else []
    return GpuInfo(index=index, name=_field(g, "product_name"), memory_mib=_mib(g, "fb_memory_usage/total"),
                   uuid=_field(g, "uuid"), mig=tuple(_xml_mig(m) for m in migs))


def _xml_mig(m: ElementTree.Element) -> MigDevice:
    """A MIG instance, named by its GPU instance (``gi1 (14 SMs, 9856 MiB)``)."""
    mem = _mib(m, "fb_memory_usage/total")
    sms = _field(m, "device_attributes/shared/multiprocessor_count")
    size = f" ({sms} SMs, {mem} MiB)" if sms and mem else ""
    return MigDevice(profile=f"gi{_field(m, 'gpu_instance_id')}{size}", uuid=_field(m, "uuid"))


def parse_proc_version(text: str) -> str:
    """The driver version in ``/proc/driver/nvidia/version`` (proprietary and open modules)."""
    m = _PROC_VERSION.search(text)
    if not m:
        raise ValueError("no 'Kernel Module <version>' in it")
    return m.group(1)


def _nvml(probe: _Probe) -> HostFacts | None:
    """NVML through nvidia-ml-py (the optional ``nvml`` extra), when it imports and loads."""
    pynvml = _pynvml() if probe.nvml else None
    if pynvml is None or not _nvml_started(pynvml, probe):
        return None
    try:
        return _nvml_facts(pynvml)
    except Exception as e:
        probe.warnings.append(f"NVML failed while reading the GPUs: {e}")
        return None
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()


def _pynvml() -> Any:
    try:
        import pynvml  # type: ignore[import-not-found,unused-ignore]  # noqa: PLC0415 - optional
    except Exception:
        return None
    return pynvml


def _nvml_started(pynvml: Any, probe: _Probe) -> bool:
    try:
        pynvml.nvmlInit()
    except Exception as e:  # no driver, no library: the next source decides, quietly
        if not any(quiet in type(e).__name__ for quiet in ("LibraryNotFound", "DriverNotLoaded")):
            probe.warnings.append(f"NVML could not start: {e}")
        return False
    return True


def _nvml_facts(pynvml: Any) -> HostFacts:
    driver = _text(pynvml.nvmlSystemGetDriverVersion())
    cuda_int = int(pynvml.nvmlSystemGetCudaDriverVersion_v2())
    gpus = [_nvml_gpu(pynvml, i) for i in range(int(pynvml.nvmlDeviceGetCount()))]
    cuda = f"{cuda_int // 1000}.{cuda_int % 1000 // 10}" if cuda_int else ""
    return _nvidia(driver, cuda, gpus, said_by="NVML", source="NVML")


def _nvml_gpu(pynvml: Any, index: int) -> GpuInfo:
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
    return GpuInfo(index=index, name=_text(pynvml.nvmlDeviceGetName(h)), compute_capability=f"{major}.{minor}",
                   memory_mib=int(pynvml.nvmlDeviceGetMemoryInfo(h).total) >> 20,
                   uuid=_text(pynvml.nvmlDeviceGetUUID(h)), mig=_nvml_migs(pynvml, h))


def _nvml_migs(pynvml: Any, h: Any) -> tuple[MigDevice, ...]:
    """The MIG instances of a GPU in MIG mode (those read before a failure)."""
    migs: list[MigDevice] = []
    with contextlib.suppress(Exception):  # MIG not supported on this GPU
        count = int(pynvml.nvmlDeviceGetMaxMigDeviceCount(h)) if pynvml.nvmlDeviceGetMigMode(h)[0] == 1 else 0
        for j in range(count):
            if (mh := _nvml_mig_handle(pynvml, h, j)) is not None:
                migs.append(MigDevice(profile=f"{int(pynvml.nvmlDeviceGetMemoryInfo(mh).total) >> 20} MiB",
                                      uuid=_text(pynvml.nvmlDeviceGetUUID(mh))))
    return tuple(migs)


def _nvml_mig_handle(pynvml: Any, h: Any, j: int) -> Any:
    try:
        return pynvml.nvmlDeviceGetMigDeviceHandleByIndex(h, j)
    except Exception:  # an empty MIG slot
        return None


def _text(v: Any) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvidia_smi(probe: _Probe) -> HostFacts | None:
    """nvidia-smi's query, else its XML report, else its table with ``-L`` (on WSL 2 it is outside
    PATH; on Windows it is nvidia-smi.exe, in System32 or the NVSMI folder)."""
    extra = [probe.root / d for d in _WINDOWS_SMI] if probe.windows else [probe.root / _WSL]
    smi = probe.tool("nvidia-smi", *extra)
    if smi is None:
        return None
    return _smi_query(probe, smi) or _smi_xml(probe, smi) or _smi_table(probe, smi)


def _smi_query(probe: _Probe, smi: str) -> HostFacts | None:
    out = probe.run([smi, f"--query-gpu={_QUERY}", "--format=csv,noheader,nounits"])
    parsed = _parsed(probe, out, parse_smi_csv, "nvidia-smi --query-gpu")
    if parsed is None:
        return None
    driver, gpus = parsed
    table = probe.run([smi]) or ""
    cuda = m.group(1) if (m := _CUDA_IN_SMI.search(table)) else ""
    return _nvidia(driver, cuda, _with_migs(probe, smi, gpus), said_by="nvidia-smi", source="nvidia-smi --query-gpu")


def _with_migs(probe: _Probe, smi: str, gpus: list[GpuInfo]) -> list[GpuInfo]:
    """``gpus`` with the MIG instances ``nvidia-smi -L`` lists."""
    listing = probe.run([smi, "-L"])
    migs = parse_smi_list(listing) if listing is not None else {}
    return [replace(g, mig=migs.get(g.index, ())) for g in gpus] if listing is not None else gpus


def _smi_xml(probe: _Probe, smi: str) -> HostFacts | None:
    parsed = _parsed(probe, probe.run([smi, "-q", "-x"]), parse_smi_xml, "nvidia-smi -q -x")
    if parsed is None:
        return None
    driver, cuda, gpus = parsed
    return _nvidia(driver, cuda, gpus, said_by="nvidia-smi", source="nvidia-smi -q -x")


def _smi_table(probe: _Probe, smi: str) -> HostFacts | None:
    """The table's driver, CUDA and GPU rows, named by ``nvidia-smi -L`` (the table cuts long names)."""
    parsed = _parsed(probe, probe.run([smi]), parse_smi_table, "nvidia-smi")
    if parsed is None:
        return None
    driver, cuda, gpus = parsed
    listing = probe.run([smi, "-L"])
    names = parse_smi_names(listing) if listing is not None else {}
    gpus = [replace(g, name=names[g.index][0], uuid=names[g.index][1]) if g.index in names else g for g in gpus]
    cut = [f"GPU {g.index} {g.name!r}" for g in gpus if g.name.endswith("...")]
    if cut:
        probe.warnings.append(f"nvidia-smi's table cuts the name of {', '.join(cut)}; name it in ENVSOLVE_GPUS")
    return _nvidia(driver, cuda, gpus, said_by="nvidia-smi", source="nvidia-smi")


def _proc_driver(probe: _Probe) -> HostFacts | None:
    """The kernel module's version, when no tool lists the GPUs."""
    text = probe.file("proc/driver/nvidia/version")
    if text is None:
        return None
    try:
        return HostFacts(vendor="nvidia", driver=parse_proc_version(text), source="/proc/driver/nvidia/version")
    except ValueError as e:
        probe.warnings.append(f"/proc/driver/nvidia/version could not be read: {e}")
        return None


def _parsed(probe: _Probe, out: str | None, parse: Callable[[str], _T], what: str) -> _T | None:
    """``parse(out)``; None when the tool said nothing, or (with a warning) when what it said
    cannot be read."""
    if out is None:
        return None
    try:
        return parse(out)
    except ValueError as e:
        probe.warnings.append(f"{what} output could not be read: {e}")
        return None


# -- AMD --------------------------------------------------------------------------------


def parse_amd_smi(text: str) -> tuple[str, list[GpuInfo]]:
    """``amd-smi static --json`` (a list of GPUs, or ``{"gpu_data": [...]}`` in newer releases)."""
    parsed = [_amd_smi_gpu(i, entry) for i, entry in enumerate(_amd_smi_entries(text))]
    return _first([d for d, _ in parsed]), [g for _, g in parsed]


def _amd_smi_entries(text: str) -> list[Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at line {e.lineno})") from None
    entries = data.get("gpu_data") if isinstance(data, dict) else data
    if not isinstance(entries, list) or not entries:
        raise ValueError("no GPU entries")
    return entries


def _amd_smi_gpu(i: int, entry: Any) -> tuple[str, GpuInfo]:
    """One amd-smi entry as (driver, GPU)."""
    if not isinstance(entry, dict):
        raise ValueError(f"entry {i} is not an object")
    asic, vram, drv = (_object(entry, k) for k in ("asic", "vram", "driver"))
    driver = _value(str(drv.get("version") or drv.get("driver_version") or ""))
    gfx = _value(str(asic.get("target_graphics_version", ""))).lower()
    return driver, GpuInfo(index=int(entry.get("gpu", i)), name=_value(str(asic.get("market_name", ""))) or gfx,
                           gfx=gfx, memory_mib=_vram_mib(vram), uuid=_value(str(entry.get("uuid", ""))))


def _vram_mib(vram: dict[str, Any]) -> int | None:
    """The VRAM size: a number, or ``{"value": ..., "unit": "MB"}`` in newer releases."""
    size = vram.get("size", "")
    return _int(str(size.get("value", "") if isinstance(size, dict) else size))


def _object(entry: dict[str, Any], key: str) -> dict[str, Any]:
    value = entry.get(key)
    return value if isinstance(value, dict) else {}


def parse_rocminfo(text: str) -> tuple[str, list[GpuInfo]]:
    """GPU agents of ``rocminfo``: gfx target, marketing name, UUID and VRAM (first GLOBAL pool)."""
    driver = m.group(1) if (m := re.search(r"ROCk module version (\S+) is loaded", text)) else ""
    gpus = [_agent_gpu(i, fields, block) for i, (fields, block) in enumerate(_gpu_agents(text))]
    if not gpus:
        raise ValueError("no agent with Device Type: GPU")
    return driver, gpus


def _gpu_agents(text: str) -> list[tuple[dict[str, str], str]]:
    """Each GPU agent's fields and text (rocminfo also lists the CPUs as agents)."""
    agents = [(_agent_fields(block), block) for block in _AGENT.split(text)[1:]]
    return [(fields, block) for fields, block in agents if fields.get("Device Type") == "GPU"]


def _agent_fields(block: str) -> dict[str, str]:
    """An agent's ``  Key: value`` lines (the first of each key, outside the nested pools)."""
    lines = (ln.partition(":") for ln in block.splitlines()
             if ":" in ln and ln.startswith("  ") and not ln.startswith("    "))
    fields: dict[str, str] = {}
    for key, _, value in lines:
        fields.setdefault(key.strip(), value.strip())
    return fields


def _agent_gpu(index: int, fields: dict[str, str], block: str) -> GpuInfo:
    size = re.search(r"Segment:\s+GLOBAL;[^\n]*\n\s+Size:\s+(\d+)\(", block)
    gfx = fields.get("Name", "").lower()
    uuid = _value(fields.get("Uuid", ""))
    return GpuInfo(index=index, name=fields.get("Marketing Name", "") or gfx, gfx=gfx,
                   memory_mib=int(size.group(1)) // 1024 if size else None,
                   uuid="" if uuid.endswith("-XX") else uuid)  # -XX: a GPU without a unique id


def gfx_from_target_version(value: int) -> str:
    """KFD's ``gfx_target_version`` (90402) as a gfx target name (gfx942); "" for 0 (a CPU)."""
    if value <= 0:
        return ""
    major, minor, step = value // 10000, value // 100 % 100, value % 100
    return f"gfx{major}{minor:x}{step:x}"


def _amd(probe: _Probe) -> HostFacts | None:
    """The first AMD source that answers: amd-smi, rocminfo, rocm_agent_enumerator, the KFD topology."""
    return next((f for source in (_amd_smi, _rocminfo, _agent_enumerator, _kfd) if (f := source(probe))), None)


def _rocm_tool(probe: _Probe, name: str, *args: str) -> str | None:
    """What a ROCm tool (on PATH or in /opt/rocm/bin) prints; None when it is absent or fails."""
    tool = probe.which(name, probe.root / "opt/rocm/bin")
    return probe.run([tool, *args]) if tool else None


def _amd_host(parsed: tuple[str, list[GpuInfo]] | None, source: str) -> HostFacts | None:
    return HostFacts(vendor="amd", driver=parsed[0], gpus=tuple(parsed[1]), source=source) if parsed else None


def _amd_smi(probe: _Probe) -> HostFacts | None:
    out = _rocm_tool(probe, "amd-smi", "static", "--json")
    return _amd_host(_parsed(probe, out, parse_amd_smi, "amd-smi static --json"), "amd-smi")


def _rocminfo(probe: _Probe) -> HostFacts | None:
    return _amd_host(_parsed(probe, _rocm_tool(probe, "rocminfo"), parse_rocminfo, "rocminfo"), "rocminfo")


def _targets(names: list[str], source: str) -> HostFacts | None:
    """GPUs known by their gfx targets only."""
    gpus = tuple(GpuInfo(index=i, name=n, gfx=n) for i, n in enumerate(names))
    return HostFacts(vendor="amd", gpus=gpus, source=source) if gpus else None


def _agent_enumerator(probe: _Probe) -> HostFacts | None:
    out = _rocm_tool(probe, "rocm_agent_enumerator") or ""
    # one gfx target per agent; gfx000 is the CPU
    return _targets([n for n in map(str.strip, out.splitlines()) if _GFX.match(n) and n != "gfx000"],
                    "rocm_agent_enumerator")


def _kfd(probe: _Probe) -> HostFacts | None:
    nodes = probe.root / "sys/class/kfd/kfd/topology/nodes"
    ordered = sorted(nodes.glob("*"), key=lambda p: int(p.name) if p.name.isdigit() else -1)
    return _targets([gfx for node in ordered if (gfx := _kfd_target(probe, node))], "/sys/class/kfd")


def _kfd_target(probe: _Probe, node: Path) -> str:
    text = probe.file(str((node / "properties").relative_to(probe.root)))
    m = re.search(r"^gfx_target_version\s+(\d+)", text or "", re.M)
    return gfx_from_target_version(int(m.group(1))) if m else ""


# -- Intel ------------------------------------------------------------------------------
#
# PyTorch's XPU builds reach Intel GPUs through Level Zero: xpu-smi (Intel's data-center tool, which
# does not list every client GPU) and sycl-ls (oneAPI) answer through it; lspci's PCI ids say only
# that the GPU is there. The names are the driver's ("Intel(R) Arc(TM) A770 Graphics"), which the
# data matches later, or lspci's from pci.ids ("DG2 [Arc A770]"); the PCI id too.

_INTEL_ID = "8086"
# sycl-ls: "[level_zero:gpu][level_zero:0] Intel(R) Level-Zero, Intel(R) Arc(TM) A750 Graphics 12.55.8 [1.3.29735]"
# (oneAPI 2024: "[ext_oneapi_level_zero:gpu:0] ..."), and the OpenCL lines of the same GPUs
_SYCL_L0 = re.compile(r"\[(?:ext_oneapi_)?level_zero:gpu[^\]]*\](?:\[level_zero:\d+\])?\s+Intel\(R\) Level-Zero,\s+"
                      r"(.+?)\s+\d+(?:\.\d+)+\s+\[([0-9.]+)\]")
_SYCL_CL = re.compile(r"\[opencl:gpu[^\]]*\](?:\[opencl:\d+\])?\s+Intel\(R\) OpenCL Graphics,\s+(.+?)\s+OpenCL "
                      r"[0-9.]+ NEO\s+\[([^\]]+)\]")
# lspci -nn: "03:00.0 VGA compatible controller [0300]: Intel Corporation DG2 [Arc A770] [8086:56a0] (rev 08)"
# (VGA [0300], 3D [0302], Display [0380] controllers)
_LSPCI = re.compile(r"\[03(?:00|02|80)\]:\s+(.*?)\s+\[8086:([0-9a-fA-F]{4})\]")


def parse_xpu_smi(text: str) -> tuple[str, list[GpuInfo]]:
    """``xpu-smi discovery`` (boxed 1.x and borderless 2.x tables) into (driver, GPUs)."""
    fields = [(k.strip(), v.strip()) for k, _, v in (ln.replace("|", " ").partition(":") for ln in text.splitlines())
              if v.strip()]
    gpus: list[GpuInfo] = []
    for key, value in fields:
        if key.endswith("Device Name"):
            gpus.append(GpuInfo(index=len(gpus), name=value))
        elif key == "PCI Device ID" and gpus:
            gpus[-1] = replace(gpus[-1], pci_id=_pci_id(value))
    if not gpus:
        raise ValueError("no 'Device Name:' in it")
    return next((v for k, v in fields if k == "Driver Version"), ""), gpus


def _pci_id(value: str) -> str:
    """``0x56a0`` -> ``8086:56a0``: an Intel device's PCI id as lspci -nn prints it."""
    return f"{_INTEL_ID}:{value.lower().removeprefix('0x').zfill(4)}"


def parse_sycl_ls(text: str) -> tuple[str, list[GpuInfo], bool]:
    """``sycl-ls`` into (version, Intel GPUs, whether Level Zero lists them): the Level Zero GPUs
    and their runtime's version, else the OpenCL ones and their driver's (a GPU PyTorch's XPU
    builds cannot use yet); no GPU: an empty list."""
    for pattern, level_zero in ((_SYCL_L0, True), (_SYCL_CL, False)):
        found = [m for line in text.splitlines() if (m := pattern.search(line))]
        if found:
            return found[0].group(2), [GpuInfo(index=i, name=m.group(1)) for i, m in enumerate(found)], level_zero
    return "", [], False


def parse_lspci(text: str) -> list[GpuInfo]:
    """Intel display controllers of ``lspci -nn``: the pci.ids name in brackets ("Arc A770"), else the
    whole description ("Intel Corporation Device e223": pci.ids older than the GPU), and the id."""
    found = [m for line in text.splitlines() if (m := _LSPCI.search(line))]
    return [GpuInfo(index=i, name=_bracketed(m.group(1)), pci_id=f"{_INTEL_ID}:{m.group(2).lower()}")
            for i, m in enumerate(found)]


def _bracketed(description: str) -> str:
    m = re.search(r"\[([^\]]+)\]$", description)
    return m.group(1) if m else description


def _intel(probe: _Probe) -> HostFacts | None:
    """The first Intel source that finds a GPU: xpu-smi, sycl-ls, lspci, the kernel's PCI devices."""
    return next((f for source in (_xpu_smi, _sycl_ls, _lspci, _pci_sysfs) if (f := source(probe))), None)


def _intel_tool(probe: _Probe, name: str, *args: str) -> str | None:
    tool = probe.tool(name, probe.root / "opt/intel/oneapi/compiler/latest/bin")
    return probe.run([tool, *args]) if tool else None


def _xpu_smi(probe: _Probe) -> HostFacts | None:
    parsed = _parsed(probe, _intel_tool(probe, "xpu-smi", "discovery"), parse_xpu_smi, "xpu-smi discovery")
    return HostFacts(vendor="intel", driver=parsed[0], gpus=tuple(parsed[1]), source="xpu-smi discovery",
                     level_zero=True) if parsed else None


def _sycl_ls(probe: _Probe) -> HostFacts | None:
    version, gpus, level_zero = parse_sycl_ls(_intel_tool(probe, "sycl-ls") or "")
    if gpus and not level_zero:
        probe.warnings.append("sycl-ls lists the Intel GPUs through OpenCL only, not Level Zero, which PyTorch's "
                              "XPU builds need: install Intel's GPU driver (compute runtime with Level Zero)")
    return HostFacts(vendor="intel", driver=version, gpus=tuple(gpus), source="sycl-ls",
                     level_zero=level_zero) if gpus else None


def _lspci(probe: _Probe) -> HostFacts | None:
    out = probe.run([tool, "-nn"]) if (tool := probe.tool("lspci", probe.root / "usr/bin")) else None
    gpus = parse_lspci(out or "")
    return HostFacts(vendor="intel", gpus=tuple(gpus), source="lspci -nn") if gpus else None


def _pci_sysfs(probe: _Probe) -> HostFacts | None:
    """Intel display controllers (class 0x03xxxx) in /sys/bus/pci/devices, when lspci is not installed
    (a slim container): known by their PCI id only."""
    devices = probe.root / "sys/bus/pci/devices"
    ids = [_pci_id(device) for d in sorted(devices.glob("*")) if (device := _intel_display(probe, d))]
    gpus = tuple(GpuInfo(index=i, name=f"Intel GPU [{pci}]", pci_id=pci) for i, pci in enumerate(ids))
    return HostFacts(vendor="intel", gpus=gpus, source="/sys/bus/pci/devices") if gpus else None


def _intel_display(probe: _Probe, device: Path) -> str:
    """The device id (``0xe20b``) of an Intel display controller's sysfs folder, else ""."""
    rel = str(device.relative_to(probe.root))
    vendor, cls = ((probe.file(f"{rel}/{k}") or "").strip().lower() for k in ("vendor", "class"))
    if vendor != f"0x{_INTEL_ID}" or not cls.startswith("0x03"):
        return ""
    return (probe.file(f"{rel}/device") or "").strip()


# -- Apple --------------------------------------------------------------------------------


def parse_displays(text: str) -> list[tuple[str, str]]:
    """(chipset, vendor) of each GPU ``system_profiler SPDisplaysDataType`` lists ("Apple M3",
    "Apple (0x106b)")."""
    found: list[tuple[str, str]] = []
    for key, _, value in (ln.strip().partition(":") for ln in text.splitlines()):
        if key == "Chipset Model":
            found.append((value.strip(), ""))
        elif key == "Vendor" and found:
            found[-1] = (found[-1][0], value.strip())
    return found


def _mac_tool(probe: _Probe, name: str, *args: str) -> str:
    tool = probe.tool(name, probe.root / "usr/sbin", probe.root / "usr/bin")
    return (probe.run([tool, *args]) or "").strip() if tool else ""


def _apple(probe: _Probe, chip: str) -> HostFacts | None:
    """Apple silicon's GPU, named by system_profiler (else by the chip: "Apple M2 Pro"); an Intel
    Mac's GPUs run no framework's GPU builds (no CUDA or ROCm on macOS, MPS needs Apple silicon)."""
    displays = parse_displays(_mac_tool(probe, "system_profiler", "SPDisplaysDataType"))
    apple = [n for n, vendor in displays if vendor.startswith("Apple")]
    if apple:
        return HostFacts(vendor="apple", gpus=tuple(GpuInfo(index=i, name=n) for i, n in enumerate(apple)),
                         source="system_profiler SPDisplaysDataType")
    if chip.startswith("Apple"):
        return HostFacts(vendor="apple", gpus=(GpuInfo(index=0, name=chip),), source="sysctl machdep.cpu.brand_string")
    if displays:
        probe.warnings.append(f"this Mac's GPUs ({', '.join(n for n, _ in displays)}) run no framework's GPU builds: "
                              "macOS has no CUDA or ROCm, and MPS needs Apple silicon; the frameworks run on the CPU")
    return None


# -- the whole host ----------------------------------------------------------------------


def _visible(facts: HostFacts, environ: Mapping[str, str], probe: _Probe) -> HostFacts:
    """The GPUs a CUDA/ROCm program sees under ``CUDA_VISIBLE_DEVICES`` / ``ROCR_VISIBLE_DEVICES``:
    indices or UUIDs (or MIG UUIDs), in the order given, up to the first that matches none."""
    var = _VISIBLE.get(facts.vendor, "")
    value = environ.get(var) if var else None
    if value is None:
        return facts
    picked = _picked(facts.gpus, value)
    if len(picked) != len(facts.gpus):
        probe.warnings.append(f"{var}={value!r} leaves {len(picked)} of {len(facts.gpus)} GPUs visible")
    return replace(facts, gpus=picked)


def _picked(gpus: tuple[GpuInfo, ...], value: str) -> tuple[GpuInfo, ...]:
    picked: list[GpuInfo] = []
    for match in (_device(gpus, t.strip()) for t in value.split(",")):
        if match is None:
            break  # the runtime stops at the first device it cannot find
        picked += [match] if match not in picked else []
    return tuple(picked)


def _device(gpus: tuple[GpuInfo, ...], token: str) -> GpuInfo | None:
    """The GPU an entry of ``CUDA_VISIBLE_DEVICES`` names: an index, a UUID or its prefix, or a
    MIG instance's UUID (that GPU with that instance only)."""
    if token.isdigit():
        return next((g for g in gpus if g.index == int(token)), None)
    if not token:
        return None
    return next((g for g in gpus if g.uuid.startswith(token)), None) or _mig_device(gpus, token)


def _mig_device(gpus: tuple[GpuInfo, ...], token: str) -> GpuInfo | None:
    """The (last) GPU with a MIG instance whose UUID starts with ``token``, with those instances only."""
    found = [replace(g, mig=mig) for g in gpus if (mig := tuple(m for m in g.mig if m.uuid.startswith(token)))]
    return found[-1] if found else None


def _override_gpus(value: str, probe: _Probe) -> tuple[Vendor, tuple[GpuInfo, ...]]:
    """``ENVSOLVE_GPUS=H100,sm_80,gfx942``: GPUs a build host does not have (names or archs)."""
    gpus = tuple(_named_gpu(i, label) for i, label in enumerate(t.strip() for t in value.split(",") if t.strip()))
    vendors = {_vendor_of(g) for g in gpus}
    if len(vendors) > 1:
        probe.warnings.append("ENVSOLVE_GPUS mixes GPUs of several vendors; describe one vendor per host")
        return "nvidia", gpus
    return next(iter(vendors), "cpu"), gpus


def _named_gpu(index: int, label: str) -> GpuInfo:
    """A GPU of ``ENVSOLVE_GPUS``: an architecture, or a model name the data is asked about later."""
    try:
        arch = parse_arch(label)
    except ValueError:
        return GpuInfo(index=index, name=label)
    if arch.vendor == "amd":
        return GpuInfo(index=index, name=label, gfx=arch.name)
    if arch.vendor in ("intel", "apple"):
        return GpuInfo(index=index, name=label, arch_name=arch.name)
    return GpuInfo(index=index, name=label, compute_capability=arch.compute_capability)


def _vendor_of(g: GpuInfo) -> Vendor:
    if g.arch_name:
        return "apple" if parse_arch(g.arch_name).vendor == "apple" else "intel"
    return "amd" if g.gfx or re.match(r"(?i)^(amd|mi\d|radeon|rx )", g.name) else "nvidia"


class _Machine(msgspec.Struct, frozen=True):
    """What the host is, apart from its accelerators."""

    platform: HostOs
    l4t: str  # a Jetson's L4T release
    container: bool
    machine: str  # `uname -m` (Windows: platform.machine(), AMD64 or ARM64)
    chip: str = ""  # a Mac's chip (machdep.cpu.brand_string)
    os_version: str = ""  # a Mac's macOS release (sw_vers -productVersion)


def _machine(probe: _Probe, machine: str) -> _Machine:
    """The OS, from Python's sys.platform (a fixture's, in the tests), then what the host is."""
    if probe.windows:
        return _Machine(platform="windows", l4t="", container=False, machine=machine)
    if probe.system == "darwin":
        return _mac(probe, machine)
    tegra = probe.file("etc/nv_tegra_release")
    platform: HostOs = "jetson" if tegra is not None else "wsl2" if _wsl(probe) else "linux"
    container = any((probe.root / p).exists() for p in (".dockerenv", "run/.containerenv"))
    return _Machine(platform=platform, l4t=_l4t(tegra or ""), container=container, machine=_cpu(probe, machine))


def _wsl(probe: _Probe) -> bool:
    """WSL 2: its kernel's release ("...-microsoft-standard-WSL2"), its GPU device /dev/dxg, or the
    Windows driver's folder /usr/lib/wsl/lib."""
    kernel = probe.file("proc/sys/kernel/osrelease") or probe.file("proc/version") or ""
    return bool(_WSL_KERNEL.search(kernel)) or any((probe.root / p).exists() for p in ("dev/dxg", _WSL))


def _mac(probe: _Probe, machine: str) -> _Machine:
    """A Mac: its chip, macOS release, and CPU (arm64 on Apple silicon even for a process under
    Rosetta 2, whose `uname -m` says x86_64)."""
    chip = _mac_tool(probe, "sysctl", "-n", "machdep.cpu.brand_string")
    return _Machine(platform="darwin", l4t="", container=False, chip=chip,
                    machine="arm64" if chip.startswith("Apple") else machine,
                    os_version=_mac_tool(probe, "sw_vers", "-productVersion"))


def _l4t(tegra: str) -> str:
    """The L4T release of /etc/nv_tegra_release (``R36.4.3``), else its first line."""
    m = re.search(r"#\s*R(\d+)\s*\(release\),\s*REVISION:\s*([0-9.]+)", tegra)
    return f"R{m.group(1)}.{m.group(2)}" if m else next(iter(tegra.strip().splitlines()), "")


def _cpu(probe: _Probe, machine: str) -> str:
    """The CPU architecture, as `uname -m` prints it (Linux 6.1+ also says it in /proc/sys/kernel/arch)."""
    return (probe.file("proc/sys/kernel/arch") or "").strip() or machine


def _accelerators(probe: _Probe, host: _Machine) -> HostFacts:
    """The first source that finds accelerators: on Linux NVML, nvidia-smi, the NVIDIA kernel
    module, AMD's tools, Intel's; on Windows NVML, nvidia-smi.exe, Intel's; on a Mac its GPU."""
    if host.platform == "darwin":
        return _apple(probe, host.chip) or HostFacts(vendor="cpu", source=_NO_TOOL)
    sources: tuple[Callable[[_Probe], HostFacts | None], ...] = (
        (_nvml, _nvidia_smi, _intel) if host.platform == "windows" else
        (_nvml, _nvidia_smi, _proc_driver, _amd, _intel))
    found = next((f for source in sources if (f := source(probe))), None)
    return found or HostFacts(vendor="cpu", source=_NO_TOOL)


def _jetson_board(facts: HostFacts, probe: _Probe, platform: HostOs) -> HostFacts:
    """A Jetson has no nvidia-smi list of GPUs: its board names the module ("NVIDIA Jetson Orin NX
    Engineering Reference Developer Kit"), which the data matches later."""
    if platform != "jetson" or facts.gpus:
        return facts
    board = (probe.file("proc/device-tree/model") or "").replace("\x00", "").strip()
    return replace(facts, gpus=(GpuInfo(index=0, name=board),), source="/proc/device-tree/model") if board else facts


def _gpus_override(facts: HostFacts, environ: Mapping[str, str], probe: _Probe) -> HostFacts:
    if environ.get("ENVSOLVE_GPUS") is None:
        return facts
    vendor, gpus = _override_gpus(environ["ENVSOLVE_GPUS"], probe)
    return replace(facts, vendor=vendor, gpus=gpus, source="ENVSOLVE_GPUS")


def _driver_override(facts: HostFacts, environ: Mapping[str, str]) -> HostFacts:
    """``ENVSOLVE_DRIVER``: the driver a build host does not have (what the tools said of the CUDA
    it runs is then dropped)."""
    if not environ.get("ENVSOLVE_DRIVER"):
        return facts
    driver = environ["ENVSOLVE_DRIVER"].strip()
    source = f"{facts.source}, ENVSOLVE_DRIVER" if facts.source != _NO_TOOL else "ENVSOLVE_DRIVER"
    kept = driver == facts.driver
    return replace(facts, vendor="nvidia" if facts.vendor == "cpu" else facts.vendor, driver=driver, source=source,
                   cuda_driver_max=facts.cuda_driver_max if kept else "",
                   cuda_driver_max_from=facts.cuda_driver_max_from if kept else "")


def _rocm(probe: _Probe, vendor: Vendor) -> str:
    """The ROCm install's version (``6.3.1`` of ``6.3.1-48``) on an AMD host."""
    info = probe.file("opt/rocm/.info/version") if vendor == "amd" else None
    return (info or "").strip().split("-")[0]


def detect(*, environ: Mapping[str, str] | None = None, path: str | None = None, root: Path | None = None,
           timeout: float = DEFAULT_TIMEOUT, nvml: bool = True, system: str | None = None,
           machine: str | None = None) -> HostFacts:
    """Describe this host's accelerators. Never raises for a missing, broken or hung tool.

    ``path`` is where tools are looked for (default: ``PATH``), ``root`` the file-system root
    for ``/proc``, ``/sys``, ``/etc``, ``/dev``, ``/usr/lib/wsl`` and Windows' ``Windows/System32``
    (default ``/``). ``system`` and ``machine`` are Python's ``sys.platform`` and
    ``platform.machine()`` (default: this interpreter's; under another root, no machine), so a
    recorded Windows or macOS host replays anywhere. ``ENVSOLVE_GPUS`` and ``ENVSOLVE_DRIVER``
    override what is found, for CI and build hosts without the GPUs.
    """
    env = os.environ if environ is None else environ
    search = env.get("PATH", os.defpath) if path is None else path
    probe = _Probe(path=list(filter(None, search.split(os.pathsep))), root=root or Path("/"), timeout=timeout,
                   nvml=nvml, system=sys.platform if system is None else system)
    here = _platform.machine() if probe.root == Path("/") else ""
    host = _machine(probe, here if machine is None else machine)
    facts = _jetson_board(_accelerators(probe, host), probe, host.platform)
    facts = _driver_override(_gpus_override(_visible(facts, env, probe), env, probe), env)
    return replace(facts, rocm=_rocm(probe, facts.vendor), platform=host.platform, l4t=host.l4t,
                   container=host.container, machine=host.machine, chip=host.chip, os_version=host.os_version,
                   cuda_compat=_cuda_compat(probe) if host.container else (), warnings=tuple(probe.warnings))


def _cuda_compat(probe: _Probe) -> tuple[tuple[str, str], ...]:
    """The libcuda.so.* a cuda-compat package installed (/usr/local/cuda-X.Y/compat), as paths
    from the root, what a forward-compatibility image loads first, each with why the dynamic
    loader refuses it ("" when it loads: dlopen in a child, so a broken library harms no one)."""
    found = sorted((probe.root / "usr" / "local").glob("cuda-*/compat/libcuda.so.*"))
    return tuple(("/" + str(p.relative_to(probe.root)), _load_error(p, probe.timeout)) for p in found)


# dlopen of one library in a child Python: its error on stderr's last line, exit 1 when it does not load
_DLOPEN = "import ctypes, sys\ntry:\n    ctypes.CDLL(sys.argv[1])\nexcept OSError as e:\n    sys.exit(str(e))\n"


def _load_error(library: Path, timeout: float) -> str:
    """Why the dynamic loader refuses ``library`` ("" when it loads)."""
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _DLOPEN, str(library)], capture_output=True, text=True,
                              timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"could not be tried: {e}"
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["does not load"])[-1]


def installed_versions(names: Iterable[str], site: PythonSite) -> dict[str, str]:
    """Installed distribution versions of ``names`` in ``site`` (:func:`python_site`); absent ones
    are left out."""
    from ..domain import canonical_name

    return {n: site.distributions[canonical_name(n)] for n in names if canonical_name(n) in site.distributions}


class PythonSite(msgspec.Struct, frozen=True, kw_only=True):
    """A Python and the distributions it has installed, as it lists them itself."""

    path: str  # the executable that was run (sys.executable for the Python envsolve runs in)
    version: str  # its version, ``3.12.3``
    prefix: str  # its sys.prefix: a venv's folder
    own: bool  # the Python envsolve runs in (the same sys.prefix)
    distributions: dict[str, str]  # canonical name -> version, the first of each name on its sys.path


# What a Python runs to list its distributions (3.8 and newer): the current folder off sys.path
# first, so no file there stands in for json or importlib; then (name, version) of each
# distribution in sys.path's order, and the interpreter's own facts, as one JSON object
_LIST_DISTRIBUTIONS = """\
import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
import json
from importlib import metadata
dists = [(d.metadata["Name"], d.version) for d in metadata.distributions()]
print(json.dumps({"version": "%d.%d.%d" % sys.version_info[:3], "prefix": sys.prefix,
                  "distributions": [[n, v] for n, v in dists if n and v]}))
"""
_LIST_TIMEOUT = 60.0  # listing a venv of a few hundred distributions takes well under a second
_PYTHON_TIP = "pass --python a Python 3.8 or newer (its executable, or a venv's folder), or leave --python out"


def python_site(python: Path | None = None, *, timeout: float = _LIST_TIMEOUT, tip: str = _PYTHON_TIP) -> PythonSite:
    """The distributions of the Python ``python`` (an executable, a name on PATH, or a venv's
    folder: its ``bin/python``, ``Scripts/python.exe`` on Windows), listed by running it (``-E``:
    no PYTHONPATH or PYTHONHOME of envsolve's own environment); None: the Python envsolve runs in,
    read here. A path that is no working Python raises :class:`~envsolve.errors.SpecError` (exit 2)
    naming it, with ``tip``."""
    from ..errors import Problem, SpecError
    from ..scratch import run

    if python is None:
        from importlib import metadata

        found = [(d.metadata["Name"], d.version) for d in metadata.distributions()]
        return PythonSite(path=sys.executable, version="{}.{}.{}".format(*sys.version_info[:3]), prefix=sys.prefix,
                          own=True, distributions=_first_of_each([(n, v) for n, v in found if n and v]))

    def bad(why: str) -> SpecError:
        return SpecError([Problem(str(python), "", why)], tip=tip)

    exe = _python_executable(python)
    if exe is None:
        inside = venv_python(python).relative_to(python)
        raise bad(f"is a folder but no venv: it has no {inside}" if python.is_dir() else
                  "does not exist" if not os.path.lexists(python) else "is not a file")
    try:
        done = run([exe, "-E", "-c", _LIST_DISTRIBUTIONS], timeout=timeout)
    except subprocess.TimeoutExpired:
        raise bad(f"is no working Python: listing its distributions took more than {timeout:g} s") from None
    except OSError as e:
        raise bad(f"could not be run: {e.strerror or e}") from None
    answer = _listed(done.stdout) if done.returncode == 0 else None
    if answer is None:
        said = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}" if done.returncode else
                                                     "it printed no list of its distributions"])[-1]
        raise bad(f"is no working Python 3.8 or newer ({said[:200]})")
    version, prefix, dists = answer
    return PythonSite(path=os.path.abspath(exe), version=version, prefix=prefix,
                      own=os.path.realpath(prefix) == os.path.realpath(sys.prefix), distributions=_first_of_each(dists))


def _listed(stdout: str) -> tuple[str, str, list[tuple[str, str]]] | None:
    """The version, prefix and (name, version) of each distribution a Python printed (the last line
    of its output: a sitecustomize may print before it); None for anything else."""
    try:
        answer = json.loads(stdout.strip().splitlines()[-1])
        dists = [(str(n), str(v)) for n, v in answer["distributions"]]
        version, prefix = answer["version"], answer["prefix"]
    except (ValueError, IndexError, KeyError, TypeError):
        return None
    return (version, prefix, dists) if isinstance(version, str) and isinstance(prefix, str) and prefix else None


def _first_of_each(found: list[tuple[str, str]]) -> dict[str, str]:
    """Canonical name -> version of the first distribution of each name (the one Python imports)."""
    from ..domain import canonical_name

    out: dict[str, str] = {}
    for name, version in found:
        out.setdefault(canonical_name(name), version)
    return dict(sorted(out.items()))


def _python_executable(python: Path) -> str | None:
    """The executable to run for ``--python``: a venv folder's Python, the file itself, or a name
    found on PATH; None when there is none."""
    if python.is_dir():
        exe = venv_python(python)
        return str(exe) if exe.is_file() else None
    if python.is_file():
        return str(python)
    if os.sep not in str(python) and not os.path.lexists(python):
        return shutil.which(str(python))
    return None


def docker_tools(path: str | None = None) -> dict[str, bool]:
    """Whether docker and the NVIDIA container toolkit (nvidia-ctk, nvidia-container-runtime) are on PATH."""
    return {t: shutil.which(t, path=path) is not None
            for t in ("docker", "nvidia-ctk", "nvidia-container-runtime")}
