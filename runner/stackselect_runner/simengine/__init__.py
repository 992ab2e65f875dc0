"""Simulated OpenAI-compatible engine whose token timing follows the step-cost model.

It lets the harness, runner and server be exercised end to end without a GPU; its
/v1/models `owned_by` and /version say `stackselect-simulated` so results are marked simulated.
"""

from stackselect_runner.simengine.server import (
    SIMULATED_MARK,
    EngineConfig,
    build_app,
    serve_simulated_engine,
)
from stackselect_runner.simengine.stepcost import DEFAULT_STEP_COST, StepCost

__all__ = [
    "DEFAULT_STEP_COST",
    "SIMULATED_MARK",
    "EngineConfig",
    "StepCost",
    "build_app",
    "serve_simulated_engine",
]
