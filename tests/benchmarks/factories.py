"""Catalog rows, a selection with chosen candidates, runners and runner-API calls for the tests."""

from __future__ import annotations

import gzip
import json
from typing import Any

from django.test import Client

from apps.catalog.models import Accelerator, Engine, EngineRelease, ModelSpec
from apps.runners.services import enrollment_token_create, runner_enroll
from apps.selections.models import Candidate, Selection

WORKLOAD = {
    "isl": {"kind": "fixed", "value": 512},
    "osl": {"kind": "fixed", "value": 128},
    "arrival": {"process": "poisson", "rate_rps": 2.0},
    "precision": "bf16",
}
SLO = {"ttft_ms": 500, "tpot_ms": 50}


def simulated_probe(accelerator: str = "h100-sxm", gpu_count: int = 1) -> dict[str, Any]:
    return {
        "gpus": [],
        "gpu_count": gpu_count,
        "simulated": True,
        "simulated_accelerator": accelerator,
        "engines": {"simulated": "0.1.0"},
        "hostname": "laptop",
    }


def _accelerator(
    slug: str, name: str, family: str, memory: float, tbps: float, tflops: float, link: float
) -> Accelerator:
    """Test figures in the shape of the curated catalog (not used as facts anywhere)."""
    return Accelerator.objects.create(
        slug=slug,
        vendor="nvidia",
        family=family,
        name=name,
        memory_gb=memory,
        bandwidth_tbps=tbps,
        bf16_tflops=tflops,
        interconnect_gbps=link,
    )


def catalog() -> dict[str, Any]:
    engine = Engine.objects.create(slug="vllm", name="vLLM", kind="engine")
    release = EngineRelease.objects.create(engine=engine, version="0.8.0", max_num_seqs=128)
    h100 = _accelerator("h100-sxm", "NVIDIA H100 SXM", "hopper", 80, 3.35, 989, 450)
    l40s = _accelerator("l40s", "NVIDIA L40S", "ada", 48, 0.864, 362, 32)
    model = ModelSpec.objects.create(
        slug="llama-3.1-8b",
        name="Llama 3.1 8B",
        family="llama",
        architecture="arch_llama",
        checkpoint="meta-llama/Llama-3.1-8B-Instruct",
        native_dtype="bf16",
        params_total_b=8.0,
        params_active_b=8.0,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        kv_heads=8,
        head_dim=128,
        attention_kind="gqa",
        max_context=131072,
    )
    return {"release": release, "h100": h100, "l40s": l40s, "model": model}


def stack(accelerator: str, gpu_count: int = 1, precision: str = "bf16") -> dict[str, Any]:
    return {
        "engine": "vllm",
        "engine_version": "0.8.0",
        "backend": None,
        "accelerator": accelerator,
        "gpu_count": gpu_count,
        "tp": gpu_count,
        "pp": 1,
        "ep": 1,
        "dp": 1,
        "precision": precision,
    }


def selection_with_candidates(
    team: Any, user: Any, rows: dict[str, Any], *, layouts: list[tuple[str, int, str]]
) -> Selection:
    """A selection whose chosen candidates are (accelerator slug, gpu count, precision)."""
    selection = Selection.objects.create(
        team=team,
        title="Chat assistant",
        created_by=user,
        state="candidates_ready",
        model=rows["model"],
        workload=WORKLOAD,
        slo=SLO,
    )
    accelerators = {"h100-sxm": rows["h100"], "l40s": rows["l40s"]}
    for rank, (slug, gpus, precision) in enumerate(layouts, start=1):
        Candidate.objects.create(
            selection=selection,
            outcome="kept",
            rank=rank,
            release=rows["release"],
            accelerator=accelerators[slug],
            stack=stack(slug, gpus, precision),
            chosen=True,
        )
    return selection


def enrolled_runner(admin: Any, team: Any, name: str = "sim-1", **probe: Any):
    """A runner enrolled through the service; returns (runner, credential)."""
    _, token = enrollment_token_create(actor_user=admin, team=team)
    return runner_enroll(token_plaintext=token, name=name, probe=simulated_probe(**probe))


class RunnerClient:
    """Calls /api/runner/v1/ with `Authorization: Runner <credential>`."""

    def __init__(self, credential: str) -> None:
        self.client = Client()
        self.auth = {"HTTP_AUTHORIZATION": f"Runner {credential}"}

    def post(self, path: str, body: Any = None, **headers: Any):
        return self.client.post(
            f"/api/runner/v1/{path}",
            data=json.dumps(body if body is not None else {}),
            content_type="application/json",
            **self.auth,
            **headers,
        )

    def get(self, path: str):
        return self.client.get(f"/api/runner/v1/{path}", **self.auth)

    def upload(self, attempt_id: int, document: dict[str, Any], key: str, *, gz: bool = True):
        raw = json.dumps(document).encode()
        headers = {"HTTP_IDEMPOTENCY_KEY": key}
        if gz:
            headers["HTTP_CONTENT_ENCODING"] = "gzip"
        return self.client.post(
            f"/api/runner/v1/attempts/{attempt_id}/results",
            data=gzip.compress(raw) if gz else raw,
            content_type="application/json",
            **self.auth,
            **headers,
        )


def result_document(
    load_point_index: int = 0, records: list[dict] | None = None, *, rate_rps: float | None = None
) -> dict:
    """An upload of the plans the fixtures make: load point n runs at n + 1 req/s."""
    records = records or [
        {
            "index": i,
            "send_s": i * 0.5,
            "ttft_s": 0.1,
            "itl_s": [0.02] * 3,
            "e2e_s": 0.16,
            "input_tokens": 512,
            "output_tokens": 4,
            "error": None,
            "status": 200,
        }
        for i in range(4)
    ]
    return {
        "load_point_index": load_point_index,
        "load_point": {"index": load_point_index, "rate_rps": rate_rps or load_point_index + 1.0},
        "started_at": "2026-01-01T00:00:00Z",
        "duration_s": 2.0,
        "chunk_index": 0,
        "chunk_count": 1,
        "engine": {"version": "sim-0.1", "effective_config": {}},
        "harness": {"name": "stackselect-harness", "version": "0.1"},
        "records": records,
    }
