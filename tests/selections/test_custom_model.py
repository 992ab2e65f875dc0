"""A custom architecture instead of a catalog model: the API, the form and the candidates."""

from __future__ import annotations

import copy

import pytest

from apps.selections import services
from apps.selections.choices import CandidateOutcome
from apps.selections.models import Selection
from tests.selections.helpers import create_selection
from tests.selections.test_pages import FORM

pytestmark = pytest.mark.django_db
URL = "/api/v1/selections/"
# Llama-3.1-8B's shapes under another name, so only the architecture key differs between runs.
CUSTOM = {
    "name": "Acme-8B",
    "architecture": "arch_llama",
    "params_total_b": 8.03,
    "params_active_b": 8.03,
    "layers": 32,
    "hidden_size": 4096,
    "attention_heads": 32,
    "kv_heads": 8,
    "head_dim": 128,
    "attention_kind": "gqa",
    "max_context": 131072,
}


def _custom(payload, **changes):
    """A copy of the goal with the custom architecture in place of the catalog model."""
    payload = copy.deepcopy(payload)
    payload["workload"].pop("model")
    payload["workload"]["custom_model"] = {**CUSTOM, **changes}
    return payload


def test_alice_creates_a_selection_for_a_custom_architecture(catalog, alice_client, goal_payload):
    response = alice_client.post(URL, _custom(goal_payload), content_type="application/json")

    assert response.status_code == 201, response.json()
    selection = Selection.objects.get()
    assert selection.model is None
    assert selection.custom_model["architecture"] == "arch_llama"
    assert response.json()["workload"]["custom_model"]["name"] == "Acme-8B"


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"kv_heads": 5}, "kv_heads"),  # 5 does not divide 32 heads
        ({"architecture": "prefix_caching"}, "architecture"),  # a feature, not an arch_*
        ({"architecture": "arch_nonesuch"}, "architecture"),
        ({"attention_kind": "mla"}, "kv_lora_rank"),  # MLA needs its latent rank
        ({"params_active_b": 9.0}, "params_active_b"),
    ],
)
def test_a_bad_custom_architecture_is_a_400_on_its_field(
    catalog, alice_client, goal_payload, changes, field
):
    payload = _custom(goal_payload, **changes)

    response = alice_client.post(URL, payload, content_type="application/json")

    assert response.status_code == 400
    assert field in response.json()["workload"]["custom_model"]


def test_a_workload_names_exactly_one_of_a_catalog_model_and_a_custom_one(
    catalog, alice_client, goal_payload
):
    both = _custom(goal_payload)
    both["workload"]["model"] = goal_payload["workload"]["model"]
    assert (
        "model" in alice_client.post(URL, both, content_type="application/json").json()["workload"]
    )

    both["workload"].pop("model")
    both["workload"].pop("custom_model")
    response = alice_client.post(URL, both, content_type="application/json")
    assert "model" in response.json()["workload"]


def _ollama_model_codes(user, team, payload):
    selection = create_selection(user=user, team=team, payload=payload)
    services.candidates_compute(actor_user=user, selection=selection)
    dropped = selection.candidates.filter(outcome=CandidateOutcome.DROPPED, stack__engine="ollama")
    return {
        (reason["code"], "Acme-8B" in reason["message"])
        for candidate in dropped
        for reason in candidate.reasons
        if reason["code"].startswith("model_")
    }


def test_the_custom_architecture_key_decides_model_support(catalog, alice, acme, goal_payload):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    as_llama = _custom(goal_payload)
    # The catalog records arch_llama for Ollama but not arch_mixtral.
    assert _ollama_model_codes(alice, acme, as_llama) == set()

    as_mixtral = _custom(goal_payload, architecture="arch_mixtral")
    codes = _ollama_model_codes(alice, acme, as_mixtral)
    assert codes and all(named for _, named in codes)


def test_the_custom_model_is_kept_where_it_fits_with_the_catalog_models_memory(
    catalog, alice, acme, goal_payload
):
    goal_payload["constraints"].update(accelerators=["h100-sxm"], max_gpus=1)
    catalog_run = create_selection(user=alice, team=acme, payload=goal_payload)
    services.candidates_compute(actor_user=alice, selection=catalog_run)
    custom_run = create_selection(user=alice, team=acme, payload=_custom(goal_payload))
    services.candidates_compute(actor_user=alice, selection=custom_run)

    # The two rank differently (AIConfigurator times catalog models only), so compare a stack.
    first = custom_run.candidates.get(rank=1)
    twin = catalog_run.candidates.get(stack=first.stack)

    # 8.03e9 parameters x 2 bytes (bf16) on one GPU, as for the catalog's Llama-3.1-8B.
    assert first.estimate["memory"]["weights_gb_per_gpu"] == pytest.approx(16.06, rel=0.01)
    assert first.estimate["memory"] == twin.estimate["memory"]
    assert first.estimate["method"] == "roofline" and "custom" in first.estimate["method_note"]


def test_the_goal_form_takes_a_custom_architecture_and_puts_errors_on_its_fields(
    catalog, alice_client
):
    custom = {f"custom_{key}": str(value) for key, value in CUSTOM.items()}
    form = {**FORM, "model": "custom-architecture", **custom}

    assert alice_client.post("/selections/new/", form).status_code == 302
    assert Selection.objects.get().custom_model["kv_heads"] == 8

    response = alice_client.post("/selections/new/", {**form, "custom_kv_heads": "5"})
    assert "custom_kv_heads" in response.context["form"].errors
    assert Selection.objects.count() == 1
