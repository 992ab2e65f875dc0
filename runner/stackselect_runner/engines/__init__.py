"""Engine adapters: how to launch, probe and stop each serving engine.

Importing an adapter module registers it under its slug (the catalog's engine slug), so the
modules below are imported here for that side effect.
"""

from stackselect_runner.engines import llama_cpp, lmdeploy, sglang, tensorrt_llm, tgi, vllm
from stackselect_runner.engines.base import (
    EngineAdapter,
    EngineProcess,
    EngineStartError,
    LaunchSpec,
    free_loopback_port,
)
from stackselect_runner.engines.registry import engine_slugs, get_engine_adapter, register_engine
from stackselect_runner.engines.simulated import SimulatedEngineAdapter
from stackselect_runner.engines.stack import StackSettings, UnsupportedSetting

__all__ = [
    "EngineAdapter",
    "EngineProcess",
    "EngineStartError",
    "LaunchSpec",
    "SimulatedEngineAdapter",
    "StackSettings",
    "UnsupportedSetting",
    "engine_slugs",
    "free_loopback_port",
    "get_engine_adapter",
    "llama_cpp",
    "lmdeploy",
    "register_engine",
    "sglang",
    "tensorrt_llm",
    "tgi",
    "vllm",
]
