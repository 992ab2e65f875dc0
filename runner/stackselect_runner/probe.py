"""The environment probe: what hardware and engines this runner has (docs/runner-protocol.md).

The server derives routing labels from it, so it must never guess: a field it cannot read is
None. Parsing is split from running the tools so each parser is tested on captured output.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import stackselect_runner
from stackselect_runner.config import SimulatedHardware

COMMAND_TIMEOUT_S = 15.0
MIB_PER_GIB = 1024
NVIDIA_QUERY = [
    "nvidia-smi",
    "--query-gpu=name,memory.total,uuid,driver_version",
    "--format=csv,noheader,nounits",
]
ROCM_QUERY = [
    "rocm-smi",
    "--showproductname",
    "--showmeminfo",
    "vram",
    "--showuniqueid",
    "--showdriverversion",
    "--json",
]
ROCM_VERSION_FILE = "/opt/rocm/.info/version"
ROCM_TOPOLOGY = ["rocm-smi", "--showtopo"]
# Engines installed as Python distributions: probe key (the engine adapter's slug, which is the
# catalog's engine slug) -> distribution name.
PYTHON_ENGINES = {
    "vllm": "vllm",
    "sglang": "sglang",
    "tensorrt-llm": "tensorrt_llm",
    "lmdeploy": "lmdeploy",
    "llama-cpp-python": "llama_cpp_python",
}
# `nvidia-smi topo -m` link kinds between two GPUs; NV<n> is n bonded NVLinks.
PCIE_LINKS = frozenset({"SYS", "NODE", "PHB", "PXB", "PIX"})

CommandRunner = Callable[[Sequence[str]], str | None]
Gpu = dict[str, Any]


def run_command(argv: Sequence[str]) -> str | None:
    """stdout and stderr of a successful run; None when the tool is absent, fails or hangs."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        done = subprocess.run(
            list(argv), capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout + done.stderr


def read_text(path: str) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def package_version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def parse_nvidia_smi_query(text: str) -> tuple[list[Gpu], str | None]:
    """Rows of `name, memory.total (MiB), uuid, driver_version`; returns GPUs and the driver."""
    gpus: list[Gpu] = []
    driver = None
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != 4 or not cells[0]:
            continue
        name, memory, uuid, driver = cells
        memory_mib = int(float(memory)) if re.fullmatch(r"\d+(\.\d+)?", memory) else None
        gpus.append({"name": name, "memory_mib": memory_mib, "uuid": uuid})
    return gpus, driver


def parse_cuda_version(nvidia_smi_banner: str) -> str | None:
    """The `CUDA Version: 12.4` of the nvidia-smi banner: the newest CUDA the driver supports."""
    match = re.search(r"CUDA Version:\s*([\d.]+)", nvidia_smi_banner)
    return match.group(1) if match else None


def parse_nvcc_version(text: str) -> str | None:
    """`Cuda compilation tools, release 12.4, V12.4.131` -> `12.4`."""
    match = re.search(r"release\s+([\d.]+)", text)
    return match.group(1) if match else None


def parse_nvidia_topology(text: str) -> str | None:
    """`nvlink` when any GPU pair is NVLinked, `pcie` when pairs meet over PCIe, else None."""
    header = next((line for line in text.splitlines() if re.search(r"\bGPU0\b", line)), None)
    if header is None:
        return None
    gpu_columns = len(re.findall(r"\bGPU\d+\b", header))
    links: set[str] = set()
    for line in text.splitlines():
        cells = line.split()
        if cells and re.fullmatch(r"GPU\d+", cells[0]):
            links.update(cells[1 : 1 + gpu_columns])
    if any(re.fullmatch(r"NV\d+", link) for link in links):
        return "nvlink"
    if links & PCIE_LINKS:
        return "pcie"
    return None


def parse_rocm_topology(text: str) -> str | None:
    """`xgmi` or `pcie` from the "Link Type between two GPUs" table of `rocm-smi --showtopo`."""
    section = re.search(r"Link Type between two GPUs[^\n]*\n(.*?)(?:\n\s*\n|\n=|$)", text, re.S)
    if section is None:
        return None
    links = {
        cell.upper()
        for line in section.group(1).splitlines()
        if re.match(r"\s*GPU\d+\s", line)
        for cell in line.split()[1:]
    }
    if "XGMI" in links:
        return "xgmi"
    if "PCIE" in links:
        return "pcie"
    return None


def parse_rocm_smi_json(text: str) -> tuple[list[Gpu], str | None]:
    """`rocm-smi ... --json`: one `cardN` object per GPU and a `system` object."""
    try:
        data = json.loads(text)
    except ValueError:
        return [], None
    if not isinstance(data, Mapping):
        return [], None
    gpus: list[Gpu] = []
    cards = sorted(
        (key for key in data if re.fullmatch(r"card\d+", key)), key=lambda key: int(key[4:])
    )
    for key in cards:
        card = data[key]
        total = str(card.get("VRAM Total Memory (B)", ""))
        gpus.append(
            {
                "name": card.get("Card series") or card.get("Card SKU") or card.get("Card model"),
                "memory_mib": int(total) // (1024 * 1024) if total.isdigit() else None,
                "uuid": card.get("Unique ID"),
            }
        )
    system = data.get("system", {})
    driver = system.get("Driver version") if isinstance(system, Mapping) else None
    return gpus, driver


def parse_cpu_model(cpuinfo: str) -> str | None:
    match = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.MULTILINE)
    return match.group(1).strip() if match else None


def parse_memory_gib(meminfo: str) -> float | None:
    match = re.search(r"^MemTotal:\s*(\d+)\s*kB", meminfo, re.MULTILINE)
    return round(int(match.group(1)) / (1024 * 1024), 1) if match else None


def parse_llama_server_version(text: str) -> str | None:
    """`version: 4034 (3e0ba0e6)` -> `4034 (3e0ba0e6)` (llama.cpp builds are numbered)."""
    match = re.search(r"^version:\s*(.+)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def parse_tgi_version(text: str) -> str | None:
    """`text-generation-launcher 2.4.0` -> `2.4.0`."""
    match = re.search(r"text-generation-launcher\s+(\S+)", text)
    return match.group(1) if match else None


@dataclass(frozen=True, slots=True)
class ProbeSources:
    """Where the probe reads from; tests swap in captured outputs."""

    run: CommandRunner = run_command
    read_text: Callable[[str], str | None] = read_text
    package_version: Callable[[str], str | None] = package_version
    hostname: Callable[[], str] = socket.gethostname
    cpu_count: Callable[[], int | None] = os.cpu_count


def _accelerator_fields(
    gpus: list[Gpu],
    driver: str | None = None,
    *,
    cuda: str | None = None,
    rocm: str | None = None,
    topology: str | None = None,
    interconnect: str | None = None,
) -> dict[str, Any]:
    return {
        "gpus": gpus,
        "driver_version": driver,
        "cuda_version": cuda,
        "rocm_version": rocm,
        "interconnect": interconnect,
        "topology": topology,
    }


def _nvidia(sources: ProbeSources) -> dict[str, Any] | None:
    listing = sources.run(NVIDIA_QUERY)
    if listing is None:
        return None
    gpus, driver = parse_nvidia_smi_query(listing)
    cuda = parse_cuda_version(sources.run(["nvidia-smi"]) or "")
    if cuda is None:
        cuda = parse_nvcc_version(sources.run(["nvcc", "--version"]) or "")
    topology = sources.run(["nvidia-smi", "topo", "-m"]) if len(gpus) > 1 else None
    interconnect = parse_nvidia_topology(topology) if topology else None
    return _accelerator_fields(
        gpus, driver, cuda=cuda, topology=topology, interconnect=interconnect
    )


def _rocm(sources: ProbeSources) -> dict[str, Any] | None:
    listing = sources.run(ROCM_QUERY)
    if listing is None:
        return None
    gpus, driver = parse_rocm_smi_json(listing)
    version = (sources.read_text(ROCM_VERSION_FILE) or "").strip() or None
    topology = sources.run(ROCM_TOPOLOGY) if len(gpus) > 1 else None
    interconnect = parse_rocm_topology(topology) if topology else None
    return _accelerator_fields(
        gpus, driver, rocm=version, topology=topology, interconnect=interconnect
    )


def installed_engines(sources: ProbeSources) -> dict[str, str]:
    """Engine name -> version; the simulated engine ships with the runner, so it is always here."""
    engines = {"simulated": stackselect_runner.__version__}
    for name, distribution in PYTHON_ENGINES.items():
        version = sources.package_version(distribution)
        if version:
            engines[name] = version
    command_engines = (
        ("llama-cpp", ["llama-server", "--version"], parse_llama_server_version),
        ("tgi", ["text-generation-launcher", "--version"], parse_tgi_version),
    )
    for name, argv, parse in command_engines:
        output = sources.run(argv)
        version = parse(output) if output else None
        if version:
            engines[name] = version
    # The llama-cpp adapter also runs through llama-cpp-python when llama-server is absent.
    if "llama-cpp" not in engines and "llama-cpp-python" in engines:
        engines["llama-cpp"] = f"llama-cpp-python {engines['llama-cpp-python']}"
    return engines


def offered_engines(
    installed: Mapping[str, str], offered: Collection[str] | None
) -> dict[str, str]:
    if offered is None:
        return dict(installed)
    keep = set(offered) | {"simulated"}
    return {name: version for name, version in installed.items() if name in keep}


def probe_environment(
    simulated: SimulatedHardware | None = None,
    sources: ProbeSources | None = None,
    *,
    models: Sequence[str] = (),
    drafts: Mapping[str, Sequence[str]] | None = None,
    offered: Collection[str] | None = None,
) -> dict[str, Any]:
    """The probe document; a simulated runner's gpu_count is the count it declares, `models`
    are the catalog slugs its model store serves, `drafts` its draft models (key -> the models
    each drafts for), and `offered` (STACKSELECT_RUNNER_ENGINES)
    limits the engines it reports to those its operator offers (the simulated engine stays)."""
    sources = sources or ProbeSources()
    accelerators = _nvidia(sources) or _rocm(sources) or _accelerator_fields([])
    gpus = accelerators["gpus"]
    return {
        **accelerators,
        "gpu_count": simulated.gpu_count if simulated else len(gpus),
        "gpu_model": gpus[0]["name"] if gpus else None,
        "cpu": {
            "model": parse_cpu_model(sources.read_text("/proc/cpuinfo") or ""),
            "cores": sources.cpu_count(),
        },
        "memory_gib": parse_memory_gib(sources.read_text("/proc/meminfo") or ""),
        "hostname": sources.hostname(),
        "engines": offered_engines(installed_engines(sources), offered),
        "simulated": simulated is not None,
        "simulated_accelerator": simulated.accelerator if simulated else None,
        "models": list(models),
        "draft_models": {key: list(slugs) for key, slugs in (drafts or {}).items()},
    }
