"""Engine adapters: how to launch, probe and stop each serving engine."""

from stackselect_runner.engines.base import (
    EngineAdapter,
    EngineProcess,
    EngineStartError,
    LaunchSpec,
    free_loopback_port,
)
from stackselect_runner.engines.registry import engine_slugs, get_engine_adapter, register_engine
from stackselect_runner.engines.simulated import SimulatedEngineAdapter

__all__ = [
    "EngineAdapter",
    "EngineProcess",
    "EngineStartError",
    "LaunchSpec",
    "SimulatedEngineAdapter",
    "engine_slugs",
    "free_loopback_port",
    "get_engine_adapter",
    "register_engine",
]
