"""Reading AIConfigurator's measurement sample (systems/silicon_sample.csv, Apache-2.0) into rows
the catalog can hold, and the held-out split the accuracy figures are measured on.

Pure Python (no Django): the importer stores these rows, the calibration fits on the rows that
are not held out, and the accuracy benchmark reads the same file through the same code.

The CSV names models by Hugging Face path, systems by AIConfigurator's system names and engines
by its backend names; the maps below translate them to catalog slugs. A quantised checkpoint
(nvidia/...-NVFP4) is the catalog model it was made from, at the precision of the row.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import ClassVar, Protocol

from stackselect_domain.vocabulary import (
    MODE_AGGREGATED,
    MODE_DISAGGREGATED,
    SCENARIO_FIXED_CONCURRENCY,
)

SOURCE_NAME = "AIConfigurator measurement sample (aiconfigurator-core 0.12.0, silicon_sample.csv)"
SOURCE_URL = "https://pypi.org/project/aiconfigurator-core/0.12.0/"
LICENCE = "Apache-2.0"
SOURCE_AS_OF = date(2026, 12, 1)  # the day we read the file from the pinned wheel
HOLD_OUT_MODULUS = 5

ENGINE_SLUGS = {"trtllm": "tensorrt-llm", "vllm": "vllm", "sglang": "sglang"}

# AIConfigurator system name -> catalog accelerator slug (only systems the catalog holds).
SYSTEM_ACCELERATORS = {
    "a100_sxm": "a100-sxm-80gb",
    "h100_sxm": "h100-sxm",
    "h200_sxm": "h200-sxm",
    "b200_sxm": "b200",
    "b300_sxm": "b300",
    "gb200": "gb200",
    "gb300": "gb300",
    "l40s": "l40s",
    "l4": "l4",
    "rtx_pro_6000_server": "rtx-pro-6000-server",
}

# Hugging Face path in the sample -> catalog model slug.
MODEL_SLUGS = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "nvidia/Llama-3.1-8B-Instruct-FP8": "llama-3.1-8b",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "nvidia/Qwen3-32B-NVFP4": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "Qwen/Qwen3.5-397B-A17B": "qwen3.5-397b-a17b",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "nvidia/DeepSeek-V3.1-NVFP4": "deepseek-v3.1",
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "nvidia/DeepSeek-R1-NVFP4": "deepseek-r1",
    "openai/gpt-oss-120b": "gpt-oss-120b",
    "MiniMaxAI/MiniMax-M2.5": "minimax-m2.5",
    "moonshotai/Kimi-K2.5": "kimi-k2.5",
    "zhipuai/GLM-5": "glm-5",
}

# The sample's precision column -> our precision word. Empty means the checkpoint's 16 bits;
# int4 is Kimi-K2.5's weight-only INT4 experts, whose nearest catalog word is int4_gptq.
PRECISIONS = {"": "bf16", "bf16": "bf16", "fp8": "fp8", "fp4": "fp4", "int4": "int4_gptq"}
# Checkpoints published only with MXFP4 experts (the catalog's native_dtype for them). The sample
# labels their runs fp4, with nvfp4 quantisation modes, on H100 and H200 too, where no FP4
# format runs natively: the engines served the checkpoint's own MXFP4, so that is the word.
MXFP4_CHECKPOINTS = frozenset({"openai/gpt-oss-120b", "openai/gpt-oss-20b"})


def held_out(model_path: str, system: str, backend: str) -> bool:
    """The accuracy split: a row is held out when sha256("model_path|system|backend") is 0 mod 5.

    The CSV's own column values are joined, so one (model, system, engine) group is either all
    held out or all available for fitting; a fitted factor never sees a held-out group.
    """
    digest = hashlib.sha256(f"{model_path}|{system}|{backend}".encode()).hexdigest()
    return int(digest, 16) % HOLD_OUT_MODULUS == 0


class MeasuredRun(Protocol):
    """A published row's lengths, clients and figures (None where it states none)."""

    isl: int
    osl: int
    concurrency: int | None
    ttft_ms: float | None
    tpot_ms: float | None
    output_tokens_s_per_gpu: float | None


def run_identity(system: str, engine: str, row: MeasuredRun) -> tuple:
    """What identifies the run a row measured, on a system with an engine. A source that merges
    overlapping exports repeats one run as several records (in another collection, under a
    sibling model's name, with another layout label), their figures equal to the last digit."""
    figures = (row.ttft_ms, row.tpot_ms, row.output_tokens_s_per_gpu)
    return (system, engine, row.isl, row.osl, row.concurrency, *figures)


@dataclass(frozen=True)
class PublishedRow:
    """One measured configuration of the sample, in the sample's own terms plus catalog slugs."""

    key: str
    model_path: str
    system: str
    backend: str
    backend_version: str
    mode: str
    precision: str
    isl: int
    osl: int
    concurrency: int | None
    tp: int | None
    pp: int | None
    ep: int | None
    dp: int | None
    ttft_ms: float
    tpot_ms: float
    measured_on: date | None
    detail: str
    layout: dict[str, int] = field(default_factory=dict)
    # The engine's batch per attention rank (the CSV's batch_size): usually the concurrency
    # split over the ranks, smaller where the engine capped it and the other clients queued.
    batch_size: int | None = None
    # AIConfigurator's GEMM and MoE quantisation names for the run; "" is the checkpoint's own.
    gemm_quant_mode: str = ""
    moe_quant_mode: str = ""
    # What the sample never gives: every row is a fixed number of clients, with no per-GPU
    # throughput (the overview's rows, published_overview.OverviewRow, have the other kind).
    scenario: ClassVar[str] = SCENARIO_FIXED_CONCURRENCY
    output_tokens_s_per_gpu: ClassVar[float | None] = None

    @property
    def model_slug(self) -> str | None:
        return MODEL_SLUGS.get(self.model_path)

    @property
    def accelerator_slug(self) -> str | None:
        return SYSTEM_ACCELERATORS.get(self.system)

    @property
    def engine_slug(self) -> str | None:
        return ENGINE_SLUGS.get(self.backend)

    @property
    def held_out(self) -> bool:
        return held_out(self.model_path, self.system, self.backend)

    @property
    def aggregated(self) -> bool:
        return self.mode == MODE_AGGREGATED

    @property
    def run(self) -> tuple:
        """What identifies the run the row measured (run_identity)."""
        return run_identity(self.system, self.backend, self)

    @property
    def layout_label(self) -> tuple[int | None, ...]:
        return (self.tp, self.pp, self.ep, self.dp)


COPY_REPEATED = "repeats a run another row already counts"
COPY_CONFLICTING = "is one of the copies of a run that state different layouts"


def copies_by_run(rows: Iterable[PublishedRow]) -> dict[tuple, list[PublishedRow]]:
    """The rows of each run (run_identity), in key order: the first is the copy that counts."""
    copies: dict[tuple, list[PublishedRow]] = defaultdict(list)
    for row in sorted(rows, key=lambda row: row.key):
        copies[row.run].append(row)
    return copies


def repeated_runs(rows: Iterable[PublishedRow]) -> dict[str, str]:
    """The rows a fit should not count, by key, with why: each copy of a run after the first
    (in key order), so a run weighs once however often the sample repeats it, and every copy of
    a run whose copies state different layouts (tp, pp, ep, dp), as which label is true cannot
    be told."""
    left_out = {}
    for same_run in copies_by_run(rows).values():
        if len({row.layout_label for row in same_run}) > 1:
            left_out.update((row.key, COPY_CONFLICTING) for row in same_run)
        else:
            left_out.update((row.key, COPY_REPEATED) for row in same_run[1:])
    return left_out


class SampleError(ValueError):
    """The file is not the sample this reader knows; the message names the line."""


REQUIRED_COLUMNS = (
    "id",
    "silicon_data_source",
    "backend",
    "backend_version",
    "model_path",
    "system",
    "precision",
    "mode",
    "isl",
    "osl",
    "batch_size",
    "tp_size",
    "pp_size",
    "attention_dp_size",
    "moe_ep_size",
    "silicon_ttft_ms",
    "silicon_tpot_ms",
)
LAYOUT_COLUMNS = tuple(
    f"{phase}_{name}"
    for phase in ("prefill", "decode")
    for name in (
        "batch_size",
        "num_workers",
        "tp_size",
        "pp_size",
        "attention_dp_size",
        "moe_tp_size",
        "moe_ep_size",
    )
)


def _int(text: str, column: str, *, positive: bool = True) -> int | None:
    if text == "":
        return None
    try:
        value = int(text)
    except ValueError as error:
        raise SampleError(f"{column}: {text!r} is not a whole number") from error
    if value < 0 or (positive and value == 0):
        raise SampleError(f"{column}: {value} must be positive")
    return value


def _degree(text: str, column: str) -> int | None:
    """A parallel degree; the sample writes 0 where the degree is not used, which means 1."""
    value = _int(text, column, positive=False)
    return None if value is None else max(value, 1)


def _float(text: str, column: str) -> float:
    try:
        value = float(text)
    except ValueError as error:
        raise SampleError(f"{column}: {text!r} is not a number") from error
    if not value > 0:
        raise SampleError(f"{column}: {value} must be positive")
    return value


def _concurrency(raw: dict[str, str]) -> int | None:
    found = re.search(r"silicon_concurrency=(\d+)", raw["silicon_data_source"])
    if found:
        return int(found.group(1))
    if raw["mode"] == MODE_AGGREGATED:
        return _int(raw["batch_size"], "batch_size")
    return None


def _measured_on(detail: str) -> date | None:
    found = re.search(r"measured=(\d{4}-\d{2}-\d{2})", detail)
    return date.fromisoformat(found.group(1)) if found else None


def _precision(raw: dict[str, str]) -> str:
    try:
        precision = PRECISIONS[raw["precision"]]
    except KeyError as error:
        raise SampleError(f"precision: {raw['precision']!r} is not one we map") from error
    if precision == "fp4" and raw["model_path"] in MXFP4_CHECKPOINTS:
        return "mxfp4"
    return precision


def parse_row(raw: dict[str, str]) -> PublishedRow:
    """One CSV record as a PublishedRow; raises SampleError naming the bad column."""
    mode = raw["mode"]
    if mode not in (MODE_AGGREGATED, MODE_DISAGGREGATED):
        raise SampleError(f"mode: {mode!r} is neither agg nor disagg")
    aggregated = mode == MODE_AGGREGATED
    prefix = "" if aggregated else "decode_"
    layout = {}
    if not aggregated:
        layout = {
            column: value
            for column in LAYOUT_COLUMNS
            if (value := _degree(raw.get(column, ""), column)) is not None
        }
    return PublishedRow(
        key=raw["id"],
        model_path=raw["model_path"],
        system=raw["system"],
        backend=raw["backend"],
        backend_version=raw["backend_version"],
        mode=mode,
        precision=_precision(raw),
        isl=_int(raw["isl"], "isl") or 0,
        osl=_int(raw["osl"], "osl") or 0,
        concurrency=_concurrency(raw),
        tp=_degree(raw.get(f"{prefix}tp_size", ""), f"{prefix}tp_size"),
        pp=_degree(raw.get(f"{prefix}pp_size", ""), f"{prefix}pp_size"),
        ep=_degree(raw.get(f"{prefix}moe_ep_size", ""), f"{prefix}moe_ep_size"),
        dp=_degree(raw.get(f"{prefix}attention_dp_size", ""), f"{prefix}attention_dp_size"),
        ttft_ms=_float(raw["silicon_ttft_ms"], "silicon_ttft_ms"),
        tpot_ms=_float(raw["silicon_tpot_ms"], "silicon_tpot_ms"),
        measured_on=_measured_on(raw["silicon_data_source"]),
        detail=raw["silicon_data_source"],
        layout=layout,
        batch_size=_int(raw["batch_size"], "batch_size") if aggregated else None,
        gemm_quant_mode=raw.get("gemm_quant_mode", ""),
        moe_quant_mode=raw.get("moe_quant_mode", ""),
    )


def parse_sample(lines: Iterable[str]) -> Iterator[PublishedRow]:
    """Every record of the sample, in file order; a bad record raises SampleError with its line."""
    reader = csv.DictReader(lines)
    missing = [column for column in REQUIRED_COLUMNS if column not in (reader.fieldnames or [])]
    if missing:
        raise SampleError(f"line 1: missing column(s) {', '.join(missing)}")
    for raw in reader:
        try:
            yield parse_row(raw)
        except SampleError as error:
            raise SampleError(f"line {reader.line_num}: {error}") from error


def read_sample(path: Path) -> list[PublishedRow]:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return list(parse_sample(handle))
    except OSError as error:
        raise SampleError(f"{path}: cannot read the sample ({error})") from error
