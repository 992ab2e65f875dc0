"""The runner's GPUs as a pool: whole sets of devices per job, the vendor's pinning variable."""

from __future__ import annotations

import threading

import pytest
from stackselect_runner.devices import AMD_VARIABLES, NVIDIA_VARIABLES, DevicePool, device_variables
from stackselect_runner.heartbeat import cancelled_attempts


def test_eight_gpus_go_to_four_one_gpu_jobs_as_distinct_devices() -> None:
    pool = DevicePool(8)
    held = [pool.acquire(1) for _ in range(4)]
    assert held == [(0,), (1,), (2,), (3,)]
    assert pool.free() == 4 and pool.slots == 8
    assert pool.env((2,)) == {"CUDA_VISIBLE_DEVICES": "2"}


def test_a_job_waits_until_enough_devices_are_free_and_then_gets_them() -> None:
    pool = DevicePool(2)
    first = pool.acquire(1)
    assert pool.acquire(2, timeout_s=0.05) is None
    got: list[tuple[int, ...] | None] = []
    waiter = threading.Thread(target=lambda: got.append(pool.acquire(2, timeout_s=5)))
    waiter.start()
    pool.release(first)
    waiter.join(timeout=5)
    assert got == [(0, 1)] and pool.free() == 0


def test_a_job_larger_than_the_machine_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match="needs 4 GPU"):
        DevicePool(2).acquire(4)


def test_amd_machines_pin_with_hip_and_rocr_and_the_simulator_with_cuda() -> None:
    assert device_variables({"rocm_version": "6.2.0", "cuda_version": None}) == AMD_VARIABLES
    assert device_variables({"cuda_version": "12.4"}) == NVIDIA_VARIABLES
    assert device_variables({"simulated": True, "rocm_version": "6.2.0"}) == NVIDIA_VARIABLES
    assert DevicePool(4, AMD_VARIABLES).env((1, 3)) == {
        "HIP_VISIBLE_DEVICES": "1,3",
        "ROCR_VISIBLE_DEVICES": "1,3",
    }


def test_cancels_are_read_per_attempt_and_from_a_single_attempt_server() -> None:
    answer = {"attempts": [{"attempt_id": 4, "cancel": True}, {"attempt_id": 5, "cancel": False}]}
    assert cancelled_attempts(answer, [4, 5]) == {4}
    assert cancelled_attempts({"cancel": True}, [7]) == {7}
    assert cancelled_attempts({"cancel": True}, [7, 8]) == set()
