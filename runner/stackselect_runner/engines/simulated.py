"""Adapter for the simulated engine (`python -m stackselect_runner.simengine`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import stackselect_runner
from stackselect_runner.engines.base import EngineAdapter, LaunchSpec
from stackselect_runner.engines.registry import register_engine

# LaunchSpec.options key -> command-line flag of the simulated engine.
OPTION_FLAGS = {
    "max_num_seqs": "--max-num-seqs",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "time_scale": "--time-scale",
    "seed": "--seed",
}
# Accepted so a tuning sweep over the CUDA-graph capture limit runs on the simulator too; the
# simulator has no CUDA graphs, so the setting is recorded in the job's identity and changes
# no timing.
NOT_MODELLED = frozenset({"cuda_graph_max_batch"})
PACKAGE_ROOT = str(Path(stackselect_runner.__file__).resolve().parent.parent)


@register_engine
class SimulatedEngineAdapter(EngineAdapter):
    """Options: step_cost (dict), max_num_seqs, max_num_batched_tokens, time_scale, seed
    (and cuda_graph_max_batch, accepted and not modelled)."""

    slug = "simulated"

    def build_command(self, launch: LaunchSpec) -> list[str]:
        unknown = sorted(set(launch.options) - set(OPTION_FLAGS) - {"step_cost"} - NOT_MODELLED)
        if unknown:
            raise ValueError(f"simulated engine: unknown option(s) {unknown}")
        command = [sys.executable, "-m", "stackselect_runner.simengine"]
        command += [
            "--host",
            launch.host,
            "--port",
            str(launch.port),
            "--model",
            launch.served_name,
        ]
        if "step_cost" in launch.options:
            command += ["--step-cost-json", json.dumps(launch.options["step_cost"])]
        for option, flag in OPTION_FLAGS.items():
            if option in launch.options:
                command += [flag, str(launch.options[option])]
        return command

    def build_env(self, launch: LaunchSpec) -> dict[str, str]:
        """Make the package importable even when it runs from a source checkout."""
        env = super().build_env(launch)
        paths = [PACKAGE_ROOT, *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        return env
