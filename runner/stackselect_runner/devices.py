"""The runner's GPUs as a pool: each job holds its own devices, pinned by the vendor's variable.

A runner with 8 GPUs runs up to eight 1-GPU jobs at once; a job waits (before its claim) until
enough devices are free, so two engines never share a GPU. NVIDIA engines see only their
devices through CUDA_VISIBLE_DEVICES, AMD engines through HIP_ and ROCR_VISIBLE_DEVICES; the
simulated engine gets CUDA_VISIBLE_DEVICES too, so the pinning can be observed without GPUs.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

NVIDIA_VARIABLES = ("CUDA_VISIBLE_DEVICES",)
AMD_VARIABLES = ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def device_variables(probe: Mapping[str, Any]) -> tuple[str, ...]:
    """The variables that pin an engine to its devices on this machine."""
    if not probe.get("simulated") and probe.get("rocm_version") and not probe.get("cuda_version"):
        return AMD_VARIABLES
    return NVIDIA_VARIABLES


class DevicePool:
    """GPU indices 0..count-1, handed out whole: a job gets all it asks for or waits."""

    def __init__(self, gpu_count: int, variables: tuple[str, ...] = NVIDIA_VARIABLES) -> None:
        if gpu_count < 0:
            raise ValueError(f"gpu_count must be >= 0, got {gpu_count}")
        self.gpu_count = gpu_count
        self.variables = variables
        self._free = set(range(gpu_count))
        self._changed = threading.Condition()

    @property
    def slots(self) -> int:
        """How many jobs may run at once: one per GPU (a machine without GPUs runs one)."""
        return max(self.gpu_count, 1)

    def acquire(self, count: int, *, timeout_s: float | None = None) -> tuple[int, ...] | None:
        """The lowest `count` free devices, waiting for them; None after `timeout_s`."""
        if count > self.gpu_count:
            raise ValueError(f"the job needs {count} GPU(s); this runner has {self.gpu_count}")
        with self._changed:
            if not self._changed.wait_for(lambda: len(self._free) >= count, timeout_s):
                return None
            devices = tuple(sorted(self._free)[:count])
            self._free.difference_update(devices)
            return devices

    def release(self, devices: tuple[int, ...]) -> None:
        with self._changed:
            self._free.update(devices)
            self._changed.notify_all()

    def free(self) -> int:
        with self._changed:
            return len(self._free)

    def env(self, devices: tuple[int, ...]) -> dict[str, str]:
        """The engine's environment entries that pin it to `devices`."""
        value = ",".join(str(device) for device in devices)
        return {variable: value for variable in self.variables}
