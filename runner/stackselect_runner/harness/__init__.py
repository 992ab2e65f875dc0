"""Load harness for OpenAI-compatible streaming servers.

`HarnessSpec.from_job_spec(job_spec, engine_url)` reads the job spec of docs/runner-protocol.md:
engine.served_model_name (else engine.model); requests [{index, arrival_s, input_tokens,
output_tokens, prefix_group}]; harness {endpoint ("completions" | "chat"), ignore_eos,
min_tokens, include_usage, extra_body, timeout_s, warmup_requests, shared_prefix_tokens,
prompt_seed}. A load point is {"index", "rate_rps": R} (open loop: arrival_s / R) or
{"index", "concurrency": C} (closed loop).
"""

from stackselect_runner import __version__
from stackselect_runner.harness.loadpoint import ProgressCallback, arun_load_point, run_load_point
from stackselect_runner.harness.prompts import PromptBuilder, VocabularyPromptBuilder
from stackselect_runner.harness.records import LoadPointResult, RequestRecord, records_verdict
from stackselect_runner.harness.specs import EngineOptions, HarnessSpec, LoadPoint, RequestSpec

HARNESS_NAME = "stackselect-runner"
HARNESS_VERSION = __version__

__all__ = [
    "HARNESS_NAME",
    "HARNESS_VERSION",
    "EngineOptions",
    "HarnessSpec",
    "LoadPoint",
    "LoadPointResult",
    "ProgressCallback",
    "PromptBuilder",
    "RequestRecord",
    "RequestSpec",
    "VocabularyPromptBuilder",
    "arun_load_point",
    "records_verdict",
    "run_load_point",
]
