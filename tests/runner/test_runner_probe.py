"""Probe parsers on captured-style tool outputs (no GPU here), and the assembled probe."""

from __future__ import annotations

import json
from collections.abc import Sequence

from stackselect_runner.config import SimulatedHardware
from stackselect_runner.probe import (
    NVIDIA_QUERY,
    ROCM_QUERY,
    ProbeSources,
    parse_cpu_model,
    parse_cuda_version,
    parse_llama_server_version,
    parse_memory_gib,
    parse_nvcc_version,
    parse_nvidia_smi_query,
    parse_nvidia_topology,
    parse_rocm_smi_json,
    parse_tgi_version,
    probe_environment,
)

NVIDIA_QUERY_OUTPUT = """\
NVIDIA H100 80GB HBM3, 81559, GPU-5d3c2f1e-8a9b-4c7d-9e0f-1a2b3c4d5e6f, 550.54.15
NVIDIA H100 80GB HBM3, 81559, GPU-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b, 550.54.15
"""

NVIDIA_BANNER = """\
Tue Mar 12 10:41:07 2024
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.54.15              Driver Version: 550.54.15      CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
"""

NVLINK_TOPOLOGY = """\
\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tNV18\tPXB\t0-55,112-167\t0\t\tN/A
GPU1\tNV18\t X \tPXB\t0-55,112-167\t0\t\tN/A
NIC0\tPXB\tPXB\t X \t\t\t\t

Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes
  NV#  = Connection traversing a bonded set of # NVLinks
"""

PCIE_TOPOLOGY = """\
\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID
GPU0\t X \tSYS\t0-15\t0\t\tN/A
GPU1\tSYS\t X \t16-31\t1\t\tN/A
"""

NVCC_OUTPUT = """\
nvcc: NVIDIA (R) Cuda compiler driver
Copyright (c) 2005-2024 NVIDIA Corporation
Built on Tue_Feb_27_16:19:38_PST_2024
Cuda compilation tools, release 12.4, V12.4.99
Build cuda_12.4.r12.4/compiler.33961263_0
"""

ROCM_SMI_JSON = json.dumps(
    {
        "card0": {
            "Card series": "AMD Instinct MI300X OAM",
            "Card model": "0x74a1",
            "Card vendor": "Advanced Micro Devices, Inc. [AMD/ATI]",
            "Card SKU": "M3000100",
            "VRAM Total Memory (B)": "206141652992",
            "VRAM Total Used Memory (B)": "297611264",
            "Unique ID": "0x18a2d1c1f4e3b2a7",
        },
        "card1": {
            "Card series": "AMD Instinct MI300X OAM",
            "VRAM Total Memory (B)": "206141652992",
            "Unique ID": "0x5c0b3e2d1a4f6789",
        },
        "system": {"Driver version": "6.7.0"},
    }
)

CPUINFO = """\
processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9654 96-Core Processor
cpu cores\t: 96

processor\t: 1
model name\t: AMD EPYC 9654 96-Core Processor
"""

MEMINFO = "MemTotal:       1584814136 kB\nMemFree:        1423329788 kB\n"


def test_nvidia_smi_rows_give_each_gpu_with_memory_in_mib_and_the_driver() -> None:
    gpus, driver = parse_nvidia_smi_query(NVIDIA_QUERY_OUTPUT)
    assert driver == "550.54.15"
    assert gpus == [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "memory_mib": 81559,
            "uuid": "GPU-5d3c2f1e-8a9b-4c7d-9e0f-1a2b3c4d5e6f",
        },
        {
            "name": "NVIDIA H100 80GB HBM3",
            "memory_mib": 81559,
            "uuid": "GPU-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
        },
    ]


def test_an_unreadable_memory_cell_is_none_not_zero() -> None:
    gpus, _ = parse_nvidia_smi_query("Tesla T4, [N/A], GPU-1, 535.104.05\n")
    assert gpus[0]["memory_mib"] is None


def test_cuda_version_comes_from_the_banner_or_nvcc() -> None:
    assert parse_cuda_version(NVIDIA_BANNER) == "12.4"
    assert parse_cuda_version("no banner") is None
    assert parse_nvcc_version(NVCC_OUTPUT) == "12.4"


def test_topology_tells_nvlink_from_pcie_and_ignores_nic_columns() -> None:
    assert parse_nvidia_topology(NVLINK_TOPOLOGY) == "nvlink"
    assert parse_nvidia_topology(PCIE_TOPOLOGY) == "pcie"
    assert parse_nvidia_topology("\tGPU0\tCPU Affinity\nGPU0\t X \t0-7\n") is None


def test_rocm_smi_json_gives_cards_in_order_with_memory_in_mib() -> None:
    gpus, driver = parse_rocm_smi_json(ROCM_SMI_JSON)
    assert driver == "6.7.0"
    # 206141652992 B / 2**20 = 196592 MiB (192 GiB of HBM3 per MI300X)
    assert [gpu["memory_mib"] for gpu in gpus] == [196592, 196592]
    assert [gpu["uuid"] for gpu in gpus] == ["0x18a2d1c1f4e3b2a7", "0x5c0b3e2d1a4f6789"]
    assert gpus[0]["name"] == "AMD Instinct MI300X OAM"
    assert parse_rocm_smi_json("WARNING: no AMD GPUs") == ([], None)


def test_cpu_memory_and_engine_versions_are_read_from_their_outputs() -> None:
    assert parse_cpu_model(CPUINFO) == "AMD EPYC 9654 96-Core Processor"
    assert parse_memory_gib(MEMINFO) == 1511.4  # 1584814136 kB / 1024**2
    llama = "version: 4034 (3e0ba0e6)\nbuilt with cc (Ubuntu 11.4.0) 11.4.0 for x86_64-linux-gnu\n"
    assert parse_llama_server_version(llama) == "4034 (3e0ba0e6)"
    assert parse_tgi_version("text-generation-launcher 2.4.0\n") == "2.4.0"


def fake_sources(
    outputs: dict[tuple[str, ...], str],
    packages: dict[str, str],
    extra_files: dict[str, str] | None = None,
) -> ProbeSources:
    files = {"/proc/cpuinfo": CPUINFO, "/proc/meminfo": MEMINFO, **(extra_files or {})}

    def run(argv: Sequence[str]) -> str | None:
        return outputs.get(tuple(argv))

    return ProbeSources(
        run=run,
        read_text=files.get,
        package_version=packages.get,
        hostname=lambda: "gpu-box-1",
        cpu_count=lambda: 192,
    )


def test_the_probe_of_an_nvidia_host_lists_gpus_versions_topology_and_engines() -> None:
    sources = fake_sources(
        {
            tuple(NVIDIA_QUERY): NVIDIA_QUERY_OUTPUT,
            ("nvidia-smi",): NVIDIA_BANNER,
            ("nvidia-smi", "topo", "-m"): NVLINK_TOPOLOGY,
            ("text-generation-launcher", "--version"): "text-generation-launcher 2.4.0\n",
        },
        {"vllm": "0.6.3", "sglang": "0.3.5"},
    )
    probe = probe_environment(None, sources)
    assert probe["gpu_count"] == 2
    assert probe["gpu_model"] == "NVIDIA H100 80GB HBM3"
    assert (probe["driver_version"], probe["cuda_version"], probe["rocm_version"]) == (
        "550.54.15",
        "12.4",
        None,
    )
    assert probe["interconnect"] == "nvlink"
    assert probe["cpu"] == {"model": "AMD EPYC 9654 96-Core Processor", "cores": 192}
    assert probe["hostname"] == "gpu-box-1"
    assert probe["engines"]["vllm"] == "0.6.3"
    assert probe["engines"]["tgi"] == "2.4.0"
    assert "lmdeploy" not in probe["engines"]
    assert probe["simulated"] is False
    assert probe["simulated_accelerator"] is None
    json.dumps(probe)  # the probe travels as JSON


def test_the_probe_of_an_amd_host_reads_rocm_smi_and_the_rocm_version() -> None:
    sources = fake_sources(
        {tuple(ROCM_QUERY): ROCM_SMI_JSON}, {}, {"/opt/rocm/.info/version": "6.2.1-112\n"}
    )
    probe = probe_environment(None, sources)
    assert probe["gpu_count"] == 2
    assert probe["gpu_model"] == "AMD Instinct MI300X OAM"
    assert probe["rocm_version"] == "6.2.1-112"
    assert probe["cuda_version"] is None


def test_a_gpu_less_runner_declares_the_hardware_its_simulated_engine_stands_for() -> None:
    probe = probe_environment(SimulatedHardware("h100-sxm", 4), fake_sources({}, {}))
    assert probe["gpus"] == []
    assert probe["gpu_model"] is None
    assert probe["gpu_count"] == 4
    assert probe["simulated"] is True
    assert probe["simulated_accelerator"] == "h100-sxm"
    assert "simulated" in probe["engines"]
