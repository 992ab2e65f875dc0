"""Each importer checks the shape of what it reads: a value of another type anywhere in a tool's
files (a number where a list belongs, a string where an object does, null, an infinite count)
imports or is refused with a ValueError naming where, never another exception. The sample files,
cut to what the importers read, are mutated one key at a time (a list's first element standing
for the rest)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from apps.evidence.tool_files import ImportOptions, read_tool_files

DATA = Path(__file__).parent / "data"
WRONG = [None, 5, float("inf"), "x", [], {}]


def _json(path: str) -> Any:
    return json.loads((DATA / path).read_text())


def _documents(tool: str) -> dict[str, Any]:
    """The tool's sample files, cut to the keys its importer reads and two requests."""
    if tool == "vllm":
        return {"result": _json("vllm/vllm-bench-serve-format.json")}
    if tool == "guidellm":
        report = _json("guidellm/benchmarks.json")
        benchmark = report["benchmarks"][0]
        requests = {kind: (rows or [])[:2] for kind, rows in benchmark["requests"].items()}
        read = {key: benchmark[key] for key in ("config", "start_time", "duration")}
        return {"report": {**report, "benchmarks": [{**read, "requests": requests}]}}
    if tool == "aiperf":
        summary = _json("aiperf/profile_export_aiperf.json")
        lines = (DATA / "aiperf/profile_export.jsonl").read_text().splitlines()[:2]
        keys = ("aiperf_version", "input_config", "benchmark_duration")
        return {
            "summary": {key: summary[key] for key in keys},
            "records": [json.loads(line) for line in lines],
        }
    return {
        "summary": _json("inference_perf/summary_lifecycle_metrics.json"),
        "per_request": _json("inference_perf/per_request_lifecycle_metrics.json")[:2],
    }


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list) and value:
        yield from _paths(value[0], (*prefix, 0))


def _replaced(document: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    document = copy.deepcopy(document)
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = value
    return document


def _encoded(role: str, document: Any) -> bytes:
    if role == "records" and isinstance(document, list):
        return "\n".join(json.dumps(line) for line in document).encode()
    return json.dumps(document).encode()


@pytest.mark.parametrize("tool", ["vllm", "guidellm", "aiperf", "inference_perf"])
def test_a_value_of_another_type_anywhere_in_a_tools_files_is_imported_or_refused(tool):
    documents = _documents(tool)
    options = ImportOptions(rate_rps=1.0) if tool == "inference_perf" else ImportOptions()
    read_tool_files(tool, {r: _encoded(r, d) for r, d in documents.items()}, options)
    crashes = []
    for role, document in documents.items():
        for path in _paths(document):
            for value in WRONG:
                files = {r: _encoded(r, d) for r, d in documents.items()}
                files[role] = _encoded(role, _replaced(document, path, value))
                try:
                    read_tool_files(tool, files, options)
                except ValueError:
                    pass
                except Exception as error:  # what escapes: a shape no importer checks
                    crashes.append((role, path, value, f"{type(error).__name__}: {error}"))
    assert crashes == []


SUCCESSFUL = ("benchmarks", 0, "requests", "successful", 0)


@pytest.mark.parametrize("value", ["12.5", True, float("inf")])
@pytest.mark.parametrize(
    ("tool", "role", "path", "named"),
    [
        ("guidellm", "report", (*SUCCESSFUL, "request_latency"), "request_latency"),
        ("guidellm", "report", (*SUCCESSFUL, "prompt_tokens"), "prompt_tokens"),
        ("vllm", "result", ("duration",), "duration"),
        ("aiperf", "summary", ("benchmark_duration", "avg"), "benchmark_duration"),
    ],
)
def test_a_number_written_as_text_true_or_infinite_is_refused_naming_where(
    tool, role, path, named, value
):
    documents = _documents(tool)
    files = {r: _encoded(r, d) for r, d in documents.items()}
    files[role] = _encoded(role, _replaced(documents[role], path, value))
    with pytest.raises(ValueError, match=named):
        read_tool_files(tool, files, ImportOptions())
