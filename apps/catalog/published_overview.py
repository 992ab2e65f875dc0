"""Reading the TensorRT-LLM performance overview's throughput tables into published rows.

The overview publishes one figure per cell: output tokens/s per GPU under maximum load (every
request queued at once by `trtllm-bench throughput`), for a model, GPU, layout and ISL/OSL. No
TTFT or TPOT is published, so those stay unknown (never zero), and no fitted factor uses these
rows: they are capacity evidence shown beside predictions.

data/trtllm_perf_overview.csv holds the tables' cells as published, one row a cell, with the
table heading, checkpoint, GPU, layout and precision label the source prints. Pure Python (no
Django): the importer stores these rows; catalog_stats counts the ones the catalog can hold.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from stackselect_domain.vocabulary import SCENARIO_MAX_THROUGHPUT

DATA_FILE = Path(__file__).parent / "data" / "trtllm_perf_overview.csv"
SOURCE_NAME = "TensorRT-LLM performance overview (throughput tables)"
SOURCE_URL = (
    "https://github.com/NVIDIA/TensorRT-LLM/blob/03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d/"
    "docs/source/developer-guide/perf-overview.md"
)
LICENCE = "Apache-2.0"
SOURCE_AS_OF = date(2026, 12, 4)  # the day we read the file at the commit above
ENGINE_SLUG = "tensorrt-llm"

# The overview's GPU names -> catalog accelerator slugs (a GPU not here is not representable).
GPU_ACCELERATORS = {
    "H100": "h100-sxm",
    "H200": "h200-sxm",
    "B200": "b200",
    "GB200": "gb200",
    "RTX 6000 Pro Blackwell Server Edition": "rtx-pro-6000-server",
}

# Checkpoint -> catalog model slug. An NVIDIA-quantised checkpoint is the model it was made
# from; DeepSeek-R1-0528 is DeepSeek-R1's architecture with updated weights.
CHECKPOINT_MODELS = {
    "nvidia/DeepSeek-R1-0528-NVFP4-v2": "deepseek-r1",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-r1",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "openai/gpt-oss-20b": "gpt-oss-20b",
    "nvidia/Llama-3.3-70B-Instruct-FP4": "llama-3.3-70b",
    "nvidia/Llama-3.3-70B-Instruct-FP8": "llama-3.3-70b",
    "nvidia/Qwen3-235B-A22B-FP4": "qwen3-235b-a22b",
    "nvidia/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "nvidia/Qwen3-30B-A3B-FP4": "qwen3-30b-a3b",
    "nvidia/Llama-4-Maverick-17B-128E-Instruct-NVFP4": "llama-4-maverick",
    "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8": "llama-4-maverick",
}

# The overview's precision label -> our precision word. gpt-oss ships its experts in MXFP4,
# which the overview labels FP4; NVIDIA's own FP4 checkpoints are NVFP4.
PRECISIONS = {"FP8": "fp8", "FP4": "fp4"}
MXFP4_CHECKPOINTS = frozenset({"openai/gpt-oss-120b", "openai/gpt-oss-20b"})

COLUMNS = (
    "table",
    "checkpoint",
    "system",
    "layout",
    "precision",
    "isl",
    "osl",
    "output_tokens_s_per_gpu",
)
# TP2, DEP8 (attention data parallel with experts spread over the same GPUs), TP1,PP2, DEP2,PP2
_LAYOUT = re.compile(r"^(?P<kind>TP|DEP)(?P<degree>\d+)(?:,PP(?P<pp>\d+))?$")


class OverviewError(ValueError):
    """The file is not the table this reader knows; the message names the line and column."""


@dataclass(frozen=True)
class OverviewRow:
    """One cell of the overview, with the attributes the published import stores."""

    key: str
    table: str
    model_path: str  # the checkpoint the source names
    system: str  # the GPU as the source names it
    precision: str
    precision_label: str
    layout_label: str
    tp: int
    pp: int
    ep: int | None
    dp: int | None
    isl: int
    osl: int
    output_tokens_s_per_gpu: float
    model_slug: str | None
    accelerator_slug: str | None
    engine_slug: str = ENGINE_SLUG
    backend_version: str = ""  # the overview does not say which release measured it
    mode: str = "agg"
    concurrency: int | None = None
    batch_size: int | None = None  # the overview does not state the engine's batch
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    measured_on: date | None = None
    held_out: bool = False  # the accuracy split is the sample's; no fit reads these rows
    scenario: str = SCENARIO_MAX_THROUGHPUT
    layout: dict[str, int] = field(default_factory=dict)

    @property
    def representable(self) -> bool:
        return self.model_slug is not None and self.accelerator_slug is not None

    @property
    def detail(self) -> str:
        return (
            f"table {self.table!r}, column {self.system} {self.layout_label} "
            f"({self.precision_label}), ISL/OSL {self.isl}/{self.osl}; output tokens/s per GPU "
            "under maximum load (trtllm-bench throughput)"
        )

    @property
    def unrepresentable_reason(self) -> str | None:
        if self.model_slug is None:
            return f"model {self.model_path} is not in the catalog"
        if self.accelerator_slug is None:
            return f"GPU {self.system} is not in the catalog"
        return None


def _whole(text: str, column: str) -> int:
    if not text.isdigit() or int(text) == 0:
        raise OverviewError(f"{column}: {text!r} is not a positive whole number")
    return int(text)


def parse_row(raw: dict[str, str]) -> OverviewRow:
    """One CSV record as an OverviewRow; raises OverviewError naming the bad column."""
    layout = _LAYOUT.match(raw["layout"])
    if layout is None:
        raise OverviewError(f"layout: {raw['layout']!r} is not TPn or DEPn, optionally ,PPm")
    label = raw["precision"]
    if label not in PRECISIONS:
        raise OverviewError(f"precision: {label!r} is not one of {', '.join(PRECISIONS)}")
    try:
        throughput = float(raw["output_tokens_s_per_gpu"])
    except ValueError as error:
        raise OverviewError(
            f"output_tokens_s_per_gpu: {raw['output_tokens_s_per_gpu']!r} is not a number"
        ) from error
    if not throughput > 0:
        raise OverviewError(f"output_tokens_s_per_gpu: {throughput} must be positive")
    checkpoint = raw["checkpoint"]
    degree = int(layout["degree"])
    attention_dp = layout["kind"] == "DEP"
    isl, osl = _whole(raw["isl"], "isl"), _whole(raw["osl"], "osl")
    return OverviewRow(
        key=f"{checkpoint}|{raw['system']}|{raw['layout']}|{isl}/{osl}",
        table=raw["table"],
        model_path=checkpoint,
        system=raw["system"],
        precision="mxfp4" if checkpoint in MXFP4_CHECKPOINTS else PRECISIONS[label],
        precision_label=label,
        layout_label=raw["layout"],
        tp=1 if attention_dp else degree,
        pp=int(layout["pp"] or 1),
        ep=degree if attention_dp else None,
        dp=degree if attention_dp else None,
        isl=isl,
        osl=osl,
        output_tokens_s_per_gpu=throughput,
        model_slug=CHECKPOINT_MODELS.get(checkpoint),
        accelerator_slug=GPU_ACCELERATORS.get(raw["system"]),
    )


def parse_overview(lines: Iterable[str]) -> list[OverviewRow]:
    """Every cell of the table file, in file order; a bad record raises with its line."""
    reader = csv.DictReader(lines)
    missing = [column for column in COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise OverviewError(f"line 1: missing column(s) {', '.join(missing)}")
    rows = []
    for raw in reader:
        try:
            rows.append(parse_row(raw))
        except OverviewError as error:
            raise OverviewError(f"line {reader.line_num}: {error}") from error
    keys = [row.key for row in rows]
    if len(set(keys)) != len(keys):
        raise OverviewError("two cells share one checkpoint, GPU, layout and ISL/OSL")
    return rows


def read_overview(path: Path = DATA_FILE) -> list[OverviewRow]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return parse_overview(handle)
    except OSError as error:
        raise OverviewError(f"{path}: cannot read the overview table ({error})") from error
