"""SLO presets the goal form offers: published latency limits, each with its source and date.

A preset only fills the SLO fields; the team edits them afterwards, and the goal remembers which
preset it started from so the selection page can say where its numbers came from (and whether
they were changed). MLPerf judges TTFT and TPOT each at its own 99th percentile; the share of
requests that must meet every target at once (attainment) is ours, so a preset leaves it alone.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

MLPERF_SOURCE = "MLPerf Inference LoadGen configuration (loadgen/mlperf.conf), Server scenario"
MLPERF_URL = (
    "https://github.com/mlcommons/inference/blob/"
    "b66003e10e2db4b8c36a448b0545ec90fcc6e9e9/loadgen/mlperf.conf"
)
MLPERF_AS_OF = "2026-08-20"
GUIDELLM_SOURCE = "GuideLLM documentation, Service Level Objectives: chat applications"
GUIDELLM_URL = (
    "https://github.com/neuralmagic/guidellm/blob/"
    "af897879d4957ba000c5c2099cd11ad8880bfda2/docs/service_level_objectives.md"
)
GUIDELLM_AS_OF = "2025-08-21"


@dataclass(frozen=True)
class SloPreset:
    key: str
    label: str
    ttft_ms: float | None
    tpot_ms: float | None
    e2e_ms: float | None
    percentile: float
    source: str
    url: str
    as_of: str
    note: str

    def targets(self) -> dict[str, Any]:
        """The SLO fields this preset fills."""
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "e2e_ms": self.e2e_ms,
            "percentile": self.percentile,
        }


def _mlperf(key: str, model: str, setting: str, ttft_ms: float, tpot_ms: float) -> SloPreset:
    return SloPreset(
        key=f"mlperf-{key}-{setting}",
        label=f"MLPerf Inference {model}, {setting}",
        ttft_ms=ttft_ms,
        tpot_ms=tpot_ms,
        e2e_ms=None,
        percentile=99.0,
        source=MLPERF_SOURCE,
        url=MLPERF_URL,
        as_of=MLPERF_AS_OF,
        note=f"the {model} benchmark's {setting} latency limits, TTFT and TPOT each at p99",
    )


PRESETS: tuple[SloPreset, ...] = (
    _mlperf("llama3.1-8b", "Llama-3.1-8B", "server", 2000, 100),
    _mlperf("llama3.1-8b", "Llama-3.1-8B", "interactive", 500, 30),
    _mlperf("llama2-70b", "Llama-2-70B", "server", 2000, 200),
    _mlperf("llama2-70b", "Llama-2-70B", "interactive", 450, 40),
    _mlperf("llama3.1-405b", "Llama-3.1-405B", "server", 6000, 175),
    _mlperf("llama3.1-405b", "Llama-3.1-405B", "interactive", 4500, 80),
    SloPreset(
        key="chat",
        label="Chat application",
        ttft_ms=200,
        tpot_ms=50,
        e2e_ms=None,
        percentile=99.0,
        source=GUIDELLM_SOURCE,
        url=GUIDELLM_URL,
        as_of=GUIDELLM_AS_OF,
        note="a customer-support chatbot: TTFT and inter-token latency (our TPOT) for 99% of "
        "requests",
    ),
)
BY_KEY = {preset.key: preset for preset in PRESETS}


def preset_choices() -> list[tuple[str, str]]:
    return [(preset.key, preset.label) for preset in PRESETS]


def presets_for_page() -> dict[str, dict[str, Any]]:
    """What the goal form's script fills in, by preset key."""
    return {preset.key: asdict(preset) for preset in PRESETS}


def preset_origin(slo: dict[str, Any]) -> dict[str, Any] | None:
    """The preset a stored SLO started from and whether its numbers were changed since."""
    preset = BY_KEY.get(slo.get("preset") or "")
    if preset is None:
        return None
    edited = any(slo.get(name) != value for name, value in preset.targets().items())
    return {"preset": preset, "edited": edited}
