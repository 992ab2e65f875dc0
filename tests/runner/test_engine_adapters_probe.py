"""The probe's engine inventory (keyed by adapter slug) and AMD topology, on captured outputs."""

from __future__ import annotations

import json
from collections.abc import Sequence

from stackselect_runner.engines import engine_slugs
from stackselect_runner.probe import (
    PYTHON_ENGINES,
    ROCM_QUERY,
    ROCM_TOPOLOGY,
    ProbeSources,
    parse_rocm_topology,
    probe_environment,
)

# The shape of `rocm-smi --showtopo` on a two-GPU MI300X host (captured layout, values ours).
ROCM_TOPO_XGMI = """\
============================ ROCm System Management Interface ============================
================================ Weight between two GPUs =================================
       GPU0         GPU1
GPU0   0            15
GPU1   15           0

================================= Hops between two GPUs ==================================
       GPU0         GPU1
GPU0   0            1
GPU1   1            0

=============================== Link Type between two GPUs ===============================
       GPU0         GPU1
GPU0   0            XGMI
GPU1   XGMI         0

======================================= Numa Nodes =======================================
GPU[0]          : (Topology) Numa Node: 0
"""
ROCM_TOPO_PCIE = ROCM_TOPO_XGMI.replace("XGMI", "PCIE")
ROCM_CARDS = json.dumps(
    {
        "card0": {"Card series": "AMD Instinct MI300X OAM", "VRAM Total Memory (B)": "1048576"},
        "card1": {"Card series": "AMD Instinct MI300X OAM", "VRAM Total Memory (B)": "1048576"},
        "system": {"Driver version": "6.7.0"},
    }
)


def sources(outputs: dict[tuple[str, ...], str], packages: dict[str, str]) -> ProbeSources:
    def run(argv: Sequence[str]) -> str | None:
        return outputs.get(tuple(argv))

    return ProbeSources(
        run=run,
        read_text=lambda path: None,
        package_version=packages.get,
        hostname=lambda: "box",
        cpu_count=lambda: 8,
    )


def test_rocm_link_types_tell_xgmi_from_pcie_and_a_missing_table_is_none() -> None:
    assert parse_rocm_topology(ROCM_TOPO_XGMI) == "xgmi"
    assert parse_rocm_topology(ROCM_TOPO_PCIE) == "pcie"
    assert parse_rocm_topology("WARNING: No AMD GPUs specified") is None


def test_an_amd_host_reports_its_topology_text_and_interconnect() -> None:
    probe = probe_environment(
        None, sources({tuple(ROCM_QUERY): ROCM_CARDS, tuple(ROCM_TOPOLOGY): ROCM_TOPO_XGMI}, {})
    )
    assert probe["gpu_count"] == 2
    assert probe["interconnect"] == "xgmi"
    assert probe["topology"] == ROCM_TOPO_XGMI


def test_engines_are_listed_under_the_slug_of_the_adapter_that_runs_them() -> None:
    packages = {"tensorrt_llm": "1.0.0", "llama_cpp_python": "0.3.36", "vllm": "0.11.0"}
    engines = probe_environment(None, sources({}, packages))["engines"]
    assert engines["tensorrt-llm"] == "1.0.0"
    assert engines["vllm"] == "0.11.0"
    # Without llama-server on the host, the llama-cpp adapter runs llama-cpp-python.
    assert engines["llama-cpp"] == "llama-cpp-python 0.3.36"
    adapters = set(engine_slugs())
    assert set(PYTHON_ENGINES) - {"llama-cpp-python"} <= adapters


def test_llama_server_on_path_is_the_llama_cpp_version_reported() -> None:
    build = "version: 6500 (a1b2c3d4)\nbuilt with cc 13.2.0 for x86_64-linux-gnu\n"
    engines = probe_environment(
        None,
        sources({("llama-server", "--version"): build}, {"llama_cpp_python": "0.3.36"}),
    )["engines"]
    assert engines["llama-cpp"] == "6500 (a1b2c3d4)"
    assert engines["llama-cpp-python"] == "0.3.36"
