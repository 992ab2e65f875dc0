"""The runner's saved credentials and its environment settings.

Enrollment writes one small JSON file (mode 0600: it holds the runner credential); everything
else is read from `STACKSELECT_RUNNER_*` environment variables, so a runner host is configured
the way a CI builder is, with nothing to edit in place.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stackselect_domain.checks import require_int, require_number

CONFIG_ENV = "STACKSELECT_RUNNER_CONFIG"
MODELS_ENV = "STACKSELECT_RUNNER_MODELS"
DEFAULT_CONFIG_PATH = Path("~/.config/stackselect-runner/credentials.json")
DEFAULT_WORK_DIR = Path("~/.cache/stackselect-runner")
DEFAULT_HEARTBEAT_INTERVAL_S = 10.0
# Longer than any job: the server's lease, not the broker, decides when a job is lost.
DEFAULT_VISIBILITY_TIMEOUT_S = 12 * 3600
# Large checkpoints can take many minutes to load before an engine answers /health.
DEFAULT_ENGINE_READY_TIMEOUT_S = 1200.0
DEFAULT_ENGINE_STOP_GRACE_S = 30.0
DEFAULT_REPORT_INTERVAL_S = 2.0
# How often a running runner probes again, so a model added to its store is consumed from.
DEFAULT_REPROBE_INTERVAL_S = 30.0
# A chunk holds at most this many records and UPLOAD_CHUNK_BYTES of their JSON (uploads.py). Each
# upload costs the server a fixed round of queries, so short records travel many to a chunk:
# a whole load point of the protocol's most (20,000 requests, ~5 MB at 4 output tokens). Long
# ones (every inter-token gap, ~10 kB at 512 tokens) fill the byte budget at some 800 records,
# fewer than the 1,000 of a chunk before, so the largest chunk a worker decodes did not grow.
DEFAULT_UPLOAD_CHUNK_RECORDS = 20_000
UPLOAD_CHUNK_BYTES = 8 * 1024 * 1024
FILE_MODE = 0o600
DIR_MODE = 0o700


class ConfigError(ValueError):
    """The credentials file or an environment variable is missing or malformed."""


def config_path(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get(CONFIG_ENV) or DEFAULT_CONFIG_PATH).expanduser()


@dataclass(frozen=True, slots=True)
class SimulatedHardware:
    """What a GPU-less runner declares so it can take simulated jobs for that hardware."""

    accelerator: str
    gpu_count: int = 1

    def __post_init__(self) -> None:
        if not self.accelerator:
            raise ConfigError("simulated accelerator must not be empty")
        require_int(self.gpu_count, "simulated gpu_count", 1)


@dataclass(frozen=True, slots=True)
class Credentials:
    """What enrollment returned, plus the simulated hardware declared at enrollment."""

    url: str
    runner_id: int
    credential: str
    broker_url: str
    queues: tuple[str, ...] = ()
    heartbeat_interval_s: float = DEFAULT_HEARTBEAT_INTERVAL_S
    broker_transport_options: Mapping[str, Any] = field(default_factory=dict)
    simulated: SimulatedHardware | None = None

    @classmethod
    def from_enrollment(
        cls, url: str, answer: Mapping[str, Any], simulated: SimulatedHardware | None
    ) -> Credentials:
        """Read the `POST enroll` answer of docs/runner-protocol.md."""
        try:
            return cls.from_dict({**answer, "url": url, "simulated": simulated})
        except ConfigError as exc:
            raise ConfigError(f"unexpected enroll answer: {exc}") from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Credentials:
        for name in ("url", "runner_id", "credential", "broker_url"):
            if not data.get(name) and data.get(name) != 0:
                raise ConfigError(f"missing field '{name}'")
        simulated = data.get("simulated")
        if isinstance(simulated, Mapping):
            simulated = SimulatedHardware(**simulated)
        options = data.get("broker_transport_options") or {}
        if not isinstance(options, Mapping):
            raise ConfigError("broker_transport_options must be an object")
        try:
            interval = require_number(
                data.get("heartbeat_interval_s", DEFAULT_HEARTBEAT_INTERVAL_S),
                "heartbeat_interval_s",
                0.0,
                strict=True,
            )
            runner_id = require_int(data["runner_id"], "runner_id", 1)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        return cls(
            url=str(data["url"]).rstrip("/"),
            runner_id=runner_id,
            credential=str(data["credential"]),
            broker_url=str(data["broker_url"]),
            queues=tuple(data.get("queues") or ()),
            heartbeat_interval_s=interval,
            broker_transport_options=dict(options),
            simulated=simulated,
        )

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["queues"] = list(self.queues)
        data["broker_transport_options"] = dict(self.broker_transport_options)
        return data

    def masked_credential(self) -> str:
        """`ssr_<prefix8>_…`: the readable prefix identifies it on the runners page."""
        prefix, _, _secret = self.credential.rpartition("_")
        return f"{prefix}_…" if prefix else "…"


def write_json_atomically(path: Path, data: Any, *, prefix: str) -> None:
    """Write `data` as JSON to `path` (its folder made with mode 0700) through a temporary file
    of mode 0600 beside it, flushed to disk and renamed over `path`: a crash leaves the old
    file or the new one, never half of one, and never a file others can read."""
    path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=prefix)
    try:
        os.fchmod(descriptor, FILE_MODE)
        with os.fdopen(descriptor, "w") as handle:
            json.dump(data, handle, indent=1)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def save_credentials(credentials: Credentials, path: Path) -> None:
    """Write atomically with mode 0600, so a crash never leaves a half file or a readable secret."""
    write_json_atomically(path, credentials.as_dict(), prefix=".credentials-")


def load_credentials(path: Path) -> Credentials:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigError(
            f"no credentials at {path}; run `stackselect-runner enroll` first"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: expected a JSON object")
    try:
        return Credentials.from_dict(data)
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _env_number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {raw!r}") from None
    if value <= 0:
        raise ConfigError(f"{name} must be > 0, got {raw!r}")
    return value


def _env_json_object(environ: Mapping[str, str], name: str) -> dict[str, Any] | None:
    raw = environ.get(name)
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"{name} must be a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{name} must be a JSON object, got {raw!r}")
    return value


def _env_list(environ: Mapping[str, str], name: str) -> tuple[str, ...] | None:
    raw = environ.get(name)
    if not raw:
        return None
    return tuple(word.strip() for word in raw.split(",") if word.strip())


@dataclass(frozen=True, slots=True)
class RunnerSettings:
    """Tunables of a runner host; every field has a `STACKSELECT_RUNNER_<NAME>` variable."""

    work_dir: Path = DEFAULT_WORK_DIR
    broker_url: str | None = None
    broker_transport_options: Mapping[str, Any] | None = None
    visibility_timeout_s: float = DEFAULT_VISIBILITY_TIMEOUT_S
    engine_ready_timeout_s: float = DEFAULT_ENGINE_READY_TIMEOUT_S
    engine_stop_grace_s: float = DEFAULT_ENGINE_STOP_GRACE_S
    report_interval_s: float = DEFAULT_REPORT_INTERVAL_S
    reprobe_interval_s: float = DEFAULT_REPROBE_INTERVAL_S
    upload_chunk_records: int = DEFAULT_UPLOAD_CHUNK_RECORDS
    simulated: SimulatedHardware | None = None
    # The model store's file; None: models.json next to the credentials (model_store.py).
    models_file: Path | None = None
    # The engines this runner offers (slugs); None: every engine the probe finds.
    engines: tuple[str, ...] | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> RunnerSettings:
        simulated = None
        if environ.get("STACKSELECT_RUNNER_SIMULATE_ACCELERATOR"):
            gpus = _env_number(environ, "STACKSELECT_RUNNER_SIMULATE_GPUS", 1)
            if gpus != int(gpus):
                raise ConfigError("STACKSELECT_RUNNER_SIMULATE_GPUS must be a whole number")
            simulated = SimulatedHardware(
                environ["STACKSELECT_RUNNER_SIMULATE_ACCELERATOR"], int(gpus)
            )
        chunk = _env_number(
            environ, "STACKSELECT_RUNNER_UPLOAD_CHUNK_RECORDS", DEFAULT_UPLOAD_CHUNK_RECORDS
        )
        return cls(
            work_dir=Path(environ.get("STACKSELECT_RUNNER_WORK_DIR") or DEFAULT_WORK_DIR),
            broker_url=environ.get("STACKSELECT_RUNNER_BROKER_URL") or None,
            broker_transport_options=_env_json_object(
                environ, "STACKSELECT_RUNNER_BROKER_TRANSPORT_OPTIONS"
            ),
            visibility_timeout_s=_env_number(
                environ, "STACKSELECT_RUNNER_VISIBILITY_TIMEOUT_S", DEFAULT_VISIBILITY_TIMEOUT_S
            ),
            engine_ready_timeout_s=_env_number(
                environ, "STACKSELECT_RUNNER_ENGINE_READY_TIMEOUT_S", DEFAULT_ENGINE_READY_TIMEOUT_S
            ),
            engine_stop_grace_s=_env_number(
                environ, "STACKSELECT_RUNNER_ENGINE_STOP_GRACE_S", DEFAULT_ENGINE_STOP_GRACE_S
            ),
            report_interval_s=_env_number(
                environ, "STACKSELECT_RUNNER_REPORT_INTERVAL_S", DEFAULT_REPORT_INTERVAL_S
            ),
            reprobe_interval_s=_env_number(
                environ, "STACKSELECT_RUNNER_REPROBE_INTERVAL_S", DEFAULT_REPROBE_INTERVAL_S
            ),
            upload_chunk_records=max(1, int(chunk)),
            simulated=simulated,
            models_file=Path(environ[MODELS_ENV]).expanduser() if environ.get(MODELS_ENV) else None,
            engines=_env_list(environ, "STACKSELECT_RUNNER_ENGINES"),
        )

    @property
    def resolved_work_dir(self) -> Path:
        return self.work_dir.expanduser()
