"""Job-spec parsing for the load harness.

The server generates the request schedule (fixed seed) and sends it with the job; these
dataclasses validate it once up front so a bad spec fails with a message naming the field
instead of failing halfway through a measurement.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from stackselect_domain.checks import require_int, require_number

EndpointKind = Literal["completions", "chat"]
DEFAULT_TIMEOUT_S = 600.0
HARNESS_FIELDS = frozenset(
    {
        "endpoint",
        "ignore_eos",
        "min_tokens",
        "include_usage",
        "extra_body",
        "timeout_s",
        "warmup_requests",
        "shared_prefix_tokens",
        "prompt_seed",
    }
)
ENDPOINT_PATHS: dict[str, str] = {
    "completions": "/v1/completions",
    "chat": "/v1/chat/completions",
}


def _require(data: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in data:
        raise ValueError(f"{where}: missing field '{key}'")
    return data[key]


@dataclass(frozen=True, slots=True)
class RequestSpec:
    """One scheduled request; `arrival_s` is at unit rate (one request per second on average)."""

    index: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    prefix_group: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RequestSpec:
        where = f"request {data.get('index', '?')}"

        def count(name: str, minimum: int) -> int:
            return require_int(_require(data, name, where), f"{where}: {name}", minimum)

        group = data.get("prefix_group")
        if group is not None:
            group = require_int(group, f"{where}: prefix_group", 0)
        arrival_s = require_number(_require(data, "arrival_s", where), f"{where}: arrival_s", 0.0)
        return cls(
            index=count("index", 0),
            arrival_s=arrival_s,
            input_tokens=count("input_tokens", 1),
            output_tokens=count("output_tokens", 1),
            prefix_group=group,
        )


@dataclass(frozen=True, slots=True)
class EngineOptions:
    """Request fields that pin the output length so early stops do not distort results."""

    ignore_eos: bool = True
    min_tokens: bool = False
    include_usage: bool = True
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_harness(cls, harness: Mapping[str, Any]) -> EngineOptions:
        """Read the flags from the job spec's `harness` section."""
        extra = harness.get("extra_body", {})
        if not isinstance(extra, Mapping):
            raise ValueError("harness.extra_body must be an object")
        flags = {"ignore_eos": True, "min_tokens": False, "include_usage": True}
        for name, default in flags.items():
            flags[name] = harness.get(name, default)
            if not isinstance(flags[name], bool):
                raise ValueError(f"harness.{name} must be true or false")
        return cls(**flags, extra_body=dict(extra))


@dataclass(frozen=True, slots=True)
class HarnessSpec:
    """Everything a load point needs besides its load level."""

    engine_url: str
    model: str
    requests: tuple[RequestSpec, ...]
    endpoint: EndpointKind = "completions"
    engine_options: EngineOptions = field(default_factory=EngineOptions)
    shared_prefix_tokens: int = 0
    prompt_seed: int = 0
    warmup_requests: int = 0
    request_timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if not self.requests:
            raise ValueError("requests must not be empty")
        if self.endpoint not in ENDPOINT_PATHS:
            raise ValueError(
                f"endpoint must be one of {sorted(ENDPOINT_PATHS)}, got {self.endpoint!r}"
            )
        if not self.engine_url.startswith(("http://", "https://")):
            raise ValueError(f"engine_url must be an http(s) URL, got {self.engine_url!r}")
        if not self.model:
            raise ValueError("model must not be empty")
        require_int(self.shared_prefix_tokens, "shared_prefix_tokens", 0)
        require_int(self.warmup_requests, "warmup_requests", 0)
        require_number(self.request_timeout_s, "request_timeout_s", 0.0, strict=True)
        indexes = [request.index for request in self.requests]
        if len(set(indexes)) != len(indexes):
            raise ValueError("requests: index values must be unique")

    @property
    def url(self) -> str:
        return self.engine_url.rstrip("/") + ENDPOINT_PATHS[self.endpoint]

    @classmethod
    def from_job_spec(cls, job_spec: Mapping[str, Any], engine_url: str) -> HarnessSpec:
        """Read docs/runner-protocol.md's job spec: `engine`, `harness` and `requests`."""
        engine = _section(job_spec, "engine")
        harness = _section(job_spec, "harness")
        unknown = sorted(set(harness) - HARNESS_FIELDS)
        if unknown:
            raise ValueError(f"harness: unknown field(s) {unknown}")
        raw_requests = _require(job_spec, "requests", "job spec")
        if not isinstance(raw_requests, list):
            raise ValueError("requests must be a list")
        return cls(
            engine_url=engine_url,
            model=str(engine.get("served_model_name") or _require(engine, "model", "engine")),
            requests=tuple(RequestSpec.from_dict(item) for item in raw_requests),
            endpoint=harness.get("endpoint", "completions"),
            engine_options=EngineOptions.from_harness(harness),
            shared_prefix_tokens=harness.get("shared_prefix_tokens", 0),
            prompt_seed=harness.get("prompt_seed", 0),
            warmup_requests=harness.get("warmup_requests", 0),
            request_timeout_s=harness.get("timeout_s", DEFAULT_TIMEOUT_S),
        )


def _section(job_spec: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    section = job_spec.get(name, {})
    if not isinstance(section, Mapping):
        raise ValueError(f"{name} must be an object")
    return section


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One load level: open loop at `rate_rps`, or closed loop holding `concurrency` in flight."""

    rate_rps: float | None = None
    concurrency: int | None = None
    index: int | None = None

    def __post_init__(self) -> None:
        if self.index is not None:
            require_int(self.index, "load point index", 0)
        if (self.rate_rps is None) == (self.concurrency is None):
            raise ValueError("load point needs exactly one of rate_rps or concurrency")
        if self.rate_rps is not None:
            require_number(self.rate_rps, "rate_rps", 0.0, strict=True)
        if self.concurrency is not None:
            require_int(self.concurrency, "concurrency", 1)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LoadPoint:
        return cls(
            rate_rps=data.get("rate_rps"),
            concurrency=data.get("concurrency"),
            index=data.get("index"),
        )

    def as_dict(self) -> dict[str, float | int]:
        level: dict[str, float | int] = {} if self.index is None else {"index": self.index}
        if self.rate_rps is not None:
            return {**level, "rate_rps": self.rate_rps}
        assert self.concurrency is not None
        return {**level, "concurrency": self.concurrency}

    def label(self) -> str:
        if self.rate_rps is not None:
            return f"rate {self.rate_rps:g} req/s"
        return f"concurrency {self.concurrency}"
