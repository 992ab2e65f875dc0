"""Shared helpers for the runner tests: a fast, hand-computable step cost and engine fixtures
(the simulated engine, and the llama-server binary `make` builds)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from stackselect_runner.engines import (
    EngineProcess,
    LaunchSpec,
    SimulatedEngineAdapter,
    free_loopback_port,
)
from stackselect_runner.simengine import StepCost

MODEL = "sim-test-model"
LLAMA_SERVER_ENV = "STACKSELECT_LLAMA_SERVER"

# Each batch token costs 1 ms of compute; every step costs at least 20 ms of memory time.
# So a lone prefill of P >= 20 tokens takes P ms and a decode step (small batch) takes 20 ms.
FAST_STEP_COST = StepCost(
    weight_bytes=0.02,
    kv_bytes_per_token=0.0,
    flops_per_token=1e-3,
    attn_flops_per_token_ctx=0.0,
    hbm_bytes_per_s=1.0,
    flops_per_s=1.0,
    comm_s_per_token=0.0,
    step_overhead_s=0.0,
)


@pytest.fixture
def engine_process(tmp_path: Path) -> Iterator[EngineProcess]:
    """The simulated engine as a subprocess on a free loopback port, ready to serve."""
    launch = LaunchSpec(
        model=MODEL,
        port=free_loopback_port(),
        log_path=tmp_path / "engine.log",
        options={"step_cost": FAST_STEP_COST.as_dict(), "time_scale": 0.1},
    )
    process = SimulatedEngineAdapter().start(launch)
    try:
        process.wait_ready(timeout_s=20)
        yield process
    finally:
        process.stop(grace_s=5)


@pytest.fixture(scope="session")
def llama_server() -> Path:
    """The llama-server `make` builds from the pinned sdist: $STACKSELECT_LLAMA_SERVER (the
    Makefile's TEST_ENV names it), else .venv/libexec/llama-server; never one found on PATH, which
    could be any build. Missing, the test fails under `make` or CI and skips only on a bare
    pytest run where `make llama-server` has not run yet."""
    named = os.environ.get(LLAMA_SERVER_ENV)
    path = Path(named) if named else Path(sys.prefix) / "libexec" / "llama-server"
    if path.is_file() and os.access(path, os.X_OK):
        return path
    message = f"{path} is missing; `make llama-server` builds it"
    if named or os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)
