"""Small builders shared by the selections tests."""

from __future__ import annotations

from typing import Any

from apps.selections import services
from apps.selections.api.serializers import SelectionInputSerializer
from apps.selections.models import Selection

# An /estimate request: Llama 3.1 8B in BF16 on one H100 with vLLM, 1k-token prompts.
H100_VLLM_ESTIMATE = {
    "model": "llama-3.1-8b",
    "precision": "bf16",
    "accelerator": "h100-sxm",
    "gpu_count": 1,
    "tp": 1,
    "isl": 1024,
    "osl": 256,
    "engine": "vllm",
}


def create_selection(*, user: Any, team: Any, payload: dict[str, Any]) -> Selection:
    """Validate a goal document the way the API does (for the user's team) and store it."""
    document = SelectionInputSerializer(data=payload, context={"team": team})
    document.is_valid(raise_exception=True)
    return services.selection_create(actor_user=user, team=team, data=document.validated_data)


def update_selection(*, user: Any, selection: Selection, payload: dict[str, Any]) -> Selection:
    """Replace the goal the way the API's PUT does."""
    document = SelectionInputSerializer(data=payload, context={"team": selection.team})
    document.is_valid(raise_exception=True)
    return services.selection_update(
        actor_user=user, selection=selection, data=document.validated_data
    )


def kv_short_goal(payload: dict[str, Any]) -> dict[str, Any]:
    """The goal payload made 64 clients of 8k-token Llama 3.1 70B FP8 requests on one H200: more
    sequences than its KV cache holds, so KV layers are composed over each engine."""
    payload["workload"].update(
        model="llama-3.1-70b",
        precision="fp8",
        isl={"kind": "fixed", "value": 7168},
        osl={"kind": "fixed", "value": 1024},
        arrival={"concurrency": 64},
        max_context=8192,
    )
    payload["slo"] = {"ttft_ms": 20000, "tpot_ms": 500, "percentile": 99, "attainment": 0.9}
    payload["constraints"].update(accelerators=["h200-sxm"], max_gpus=1)
    return payload
