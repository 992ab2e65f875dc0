"""Which files each importable tool needs, and turning the uploaded bytes into an ImportedRun.

No Django. Each tool names its files by role (the multipart field names of the import API),
so a missing or broken file is refused with the role and file name in the message.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from apps.evidence.importers import (
    ImportedRun,
    ShapeError,
    import_aiperf,
    import_guidellm,
    import_inference_perf,
    import_vllm,
    read_json_lines,
)
from apps.evidence.schema import LoadPoint


@dataclass(frozen=True)
class ImportOptions:
    """What the files do not state: the tool's version (vLLM, inference-perf) and, for
    inference-perf, the load point its single stage ran."""

    tool_version: str | None = None
    rate_rps: float | None = None
    concurrency: int | None = None

    def load_point(self) -> LoadPoint:
        if (self.rate_rps is None) == (self.concurrency is None):
            raise ValueError("load_point: give exactly one of rate_rps and concurrency")
        return LoadPoint(rate_rps=self.rate_rps, concurrency=self.concurrency)


@dataclass(frozen=True)
class ToolFiles:
    label: str
    roles: dict[str, str]  # role -> the file the tool writes
    read: Callable[[Mapping[str, bytes], ImportOptions], ImportedRun]


def _text(files: Mapping[str, bytes], role: str) -> str:
    try:
        return files[role].decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{role}: not UTF-8 text ({error.reason})") from error


def _json(files: Mapping[str, bytes], role: str) -> Any:
    try:
        return json.loads(_text(files, role))
    except json.JSONDecodeError as error:
        raise ValueError(f"{role}: not JSON (line {error.lineno}: {error.msg})") from error


def _vllm(files: Mapping[str, bytes], options: ImportOptions) -> ImportedRun:
    return import_vllm(_json(files, "result"), tool_version=options.tool_version)


def _guidellm(files: Mapping[str, bytes], options: ImportOptions) -> ImportedRun:
    return import_guidellm(_json(files, "report"))


def _aiperf(files: Mapping[str, bytes], options: ImportOptions) -> ImportedRun:
    try:
        records = read_json_lines(_text(files, "records"))
    except ValueError as error:
        raise ValueError(f"records: {error}") from error
    return import_aiperf(_json(files, "summary"), records)


def _inference_perf(files: Mapping[str, bytes], options: ImportOptions) -> ImportedRun:
    return import_inference_perf(
        _json(files, "summary"),
        _json(files, "per_request"),
        load_point=options.load_point(),
        tool_version=options.tool_version,
    )


TOOLS: dict[str, ToolFiles] = {
    "vllm": ToolFiles(
        "vllm bench serve", {"result": "the --save-result --save-detailed JSON"}, _vllm
    ),
    "guidellm": ToolFiles("guidellm", {"report": "benchmarks.json"}, _guidellm),
    "aiperf": ToolFiles(
        "NVIDIA AIPerf",
        {"summary": "profile_export_aiperf.json", "records": "profile_export.jsonl"},
        _aiperf,
    ),
    "inference_perf": ToolFiles(
        "inference-perf",
        {
            "summary": "summary_lifecycle_metrics.json",
            "per_request": "per_request_lifecycle_metrics.json",
        },
        _inference_perf,
    ),
}


def read_tool_files(tool: str, files: Mapping[str, bytes], options: ImportOptions) -> ImportedRun:
    """The tool's run, or ValueError naming the tool, the file role and what is wrong."""
    spec = TOOLS.get(tool)
    if spec is None:
        raise ValueError(f"tool: must be one of {', '.join(sorted(TOOLS))}")
    missing = [f"{role} ({name})" for role, name in spec.roles.items() if role not in files]
    if missing:
        raise ValueError(f"files: {spec.label} needs {', '.join(missing)}")
    unexpected = sorted(set(files) - set(spec.roles))
    if unexpected:
        raise ValueError(f"files: {spec.label} takes no {', '.join(unexpected)}")
    try:
        return spec.read(files, options)
    except ShapeError as error:
        raise ValueError(f"files: not laid out as {spec.label} writes them ({error})") from error
