"""The step-cost formula is a wire contract: the server's estimator sends the coefficients and
the runner's simulated engine times its tokens with them. Both sides must compute the same."""

import random

from stackselect_runner.simengine.stepcost import StepCost as RunnerStepCost

from apps.selections.estimator import StepCost as ServerStepCost


def test_the_estimator_and_the_simulated_engine_compute_identical_step_times():
    rng = random.Random(7)
    for _ in range(200):
        coefficients = {
            "weight_bytes": rng.uniform(1e8, 2e11),
            "kv_bytes_per_token": rng.uniform(1e3, 4e5),
            "flops_per_token": rng.uniform(1e9, 2e12),
            "attn_flops_per_token_ctx": rng.uniform(1e3, 1e6),
            "hbm_bytes_per_s": rng.uniform(3e11, 8e12),
            "flops_per_s": rng.uniform(5e13, 2e15),
            "comm_s_per_token": rng.uniform(0, 1e-5),
            "step_overhead_s": rng.uniform(0, 5e-3),
        }
        batch, kv_read, attn = rng.randint(1, 8192), rng.randint(0, 10**6), rng.randint(0, 10**8)
        server = ServerStepCost.from_dict(coefficients).step_seconds(batch, kv_read, attn)
        runner = RunnerStepCost.from_dict(coefficients).step_seconds(batch, kv_read, attn)
        assert runner == server
