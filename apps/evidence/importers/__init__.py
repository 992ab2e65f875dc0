"""Importers for results made by other benchmark tools; each returns an ImportedRun."""

from apps.evidence.importers.aiperf import import_aiperf
from apps.evidence.importers.base import ImportedRun, ShapeError, read_json_lines
from apps.evidence.importers.guidellm import import_guidellm
from apps.evidence.importers.inference_perf import import_inference_perf
from apps.evidence.importers.vllm import import_vllm

__all__ = [
    "ImportedRun",
    "ShapeError",
    "import_aiperf",
    "import_guidellm",
    "import_inference_perf",
    "import_vllm",
    "read_json_lines",
]
