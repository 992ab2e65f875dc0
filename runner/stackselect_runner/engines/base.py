"""The engine adapter interface and the managed engine process.

An adapter only describes an engine (command, environment, readiness, version); launching,
readiness polling, log capture and the SIGTERM-then-SIGKILL stop are shared here so each
real engine (vLLM, SGLang, ...) adds a small subclass and a `register_engine` line.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, TextIO

READINESS_POLL_S = 0.1
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>
# CPUs the engine is pinned to ("1" or "2-3,6"); the harness keeps the others, so on a small
# host the load generator never starves the engine it measures.
ENGINE_CPUS_ENV = "STACKSELECT_RUNNER_ENGINE_CPUS"
PROBE_TIMEOUT_S = 2.0
LOG_TAIL_CHARS = 2000


class EngineStartError(RuntimeError):
    """The engine exited or never became ready; the message carries the log tail."""


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """What to launch: `options` are engine-specific settings (e.g. max_num_seqs).

    `model` is the checkpoint; clients ask for `served_name` (the served model name, when the
    job spec gives one, else the checkpoint).
    """

    model: str
    port: int
    log_path: Path
    host: str = "127.0.0.1"
    options: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)
    served_model_name: str | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def served_name(self) -> str:
        return self.served_model_name or self.model


def free_loopback_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (the engine binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def parse_cpu_list(text: str) -> frozenset[int]:
    """`"0,2-3"` -> {0, 2, 3}; a malformed list is a ValueError naming the variable."""
    cpus: set[int] = set()
    try:
        for part in filter(None, (piece.strip() for piece in text.split(","))):
            low, _, high = part.partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    except ValueError:
        raise ValueError(f"{ENGINE_CPUS_ENV}: not a CPU list: {text!r}") from None
    if not cpus:
        raise ValueError(f"{ENGINE_CPUS_ENV}: empty CPU list")
    return frozenset(cpus)


def engine_cpus(environ: Mapping[str, str] = os.environ) -> frozenset[int] | None:
    """The CPUs engines are pinned to, or None when the runner does not pin them."""
    text = environ.get(ENGINE_CPUS_ENV, "").strip()
    return parse_cpu_list(text) if text else None


def http_get(url: str) -> tuple[int, bytes] | None:
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as response:
            return response.status, response.read()
    except (urllib.error.URLError, OSError):
        return None


def json_field(launch: LaunchSpec, path: str, key: str) -> str | None:
    """`key` of the JSON object an engine serves at `path`, or None when it does not say."""
    reply = http_get(launch.base_url + path)
    if reply is None or reply[0] != 200:
        return None
    try:
        value = json.loads(reply[1]).get(key)
    except (ValueError, AttributeError):
        return None
    return str(value) if value is not None else None


class EngineAdapter(ABC):
    """Describes how to run one engine; subclasses set `slug` and `build_command`."""

    slug: ClassVar[str]

    @abstractmethod
    def build_command(self, launch: LaunchSpec) -> list[str]: ...

    def build_env(self, launch: LaunchSpec) -> dict[str, str]:
        return {**os.environ, **launch.env}

    def readiness_url(self, launch: LaunchSpec) -> str:
        return launch.base_url + "/health"

    def is_ready(self, launch: LaunchSpec) -> bool:
        reply = http_get(self.readiness_url(launch))
        return reply is not None and reply[0] == 200

    def version(self, launch: LaunchSpec) -> str | None:
        """The engine's self-reported version (`GET /version`), None when it does not say."""
        return json_field(launch, "/version", "version")

    def effective_config(self, launch: LaunchSpec) -> dict[str, Any]:
        """What the engine was actually started with; real adapters add their resolved settings."""
        return {"command": self.build_command(launch)}

    def start(self, launch: LaunchSpec) -> EngineProcess:
        return EngineProcess.launch(self, launch)


def _prepare_engine_child(cpus: frozenset[int] | None) -> Callable[[], None]:
    """What runs in the engine's child before exec: pin it to `cpus`, and make a runner killed
    outright (SIGKILL, OOM) take its engine along, so no engine keeps the GPU and the port."""

    def prepare() -> None:
        if cpus:
            os.sched_setaffinity(0, cpus)
        if sys.platform.startswith("linux"):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)

    return prepare


class EngineProcess:
    """A running engine in its own process group, with stdout and stderr in a log file."""

    def __init__(
        self,
        adapter: EngineAdapter,
        launch: LaunchSpec,
        popen: subprocess.Popen[bytes],
        log: TextIO,
    ) -> None:
        self.adapter = adapter
        self.launch_spec = launch
        self.popen = popen
        self._log = log

    @classmethod
    def launch(cls, adapter: EngineAdapter, launch: LaunchSpec) -> EngineProcess:
        launch.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = launch.log_path.open("a")
        popen = subprocess.Popen(
            adapter.build_command(launch),
            env=adapter.build_env(launch),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_prepare_engine_child(engine_cpus()),
        )
        return cls(adapter, launch, popen, log)

    def __enter__(self) -> EngineProcess:
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self) -> str:
        self._log.flush()
        return self.launch_spec.log_path.read_text(errors="replace")[-LOG_TAIL_CHARS:]

    def wait_ready(self, timeout_s: float, *, interrupt: threading.Event | None = None) -> None:
        """Poll readiness until `timeout_s`; raise EngineStartError if it exits or times out.

        Returns early, not ready, once `interrupt` is set (a cancel); the caller checks it.
        """
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if interrupt is not None and interrupt.is_set():
                return
            if not self.running:
                raise EngineStartError(
                    f"engine exited with code {self.popen.returncode}:\n{self.log_tail()}"
                )
            if self.adapter.is_ready(self.launch_spec):
                return
            time.sleep(READINESS_POLL_S)
        raise EngineStartError(f"engine not ready after {timeout_s:g}s:\n{self.log_tail()}")

    def _signal_group(self, signum: signal.Signals) -> None:
        with suppress(ProcessLookupError):
            os.killpg(self.popen.pid, signum)

    def stop(self, grace_s: float = 10.0) -> int:
        """SIGTERM the process group, SIGKILL it after `grace_s`; reap and return the exit code."""
        if self.running:
            self._signal_group(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.popen.wait()
        # Children that outlived the leader would keep GPU memory; end the whole group.
        self._signal_group(signal.SIGKILL)
        self._log.close()
        return self.popen.returncode
