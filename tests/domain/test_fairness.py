"""The fair-comparison checklist from identities (stackselect_domain/fairness.py)."""

from __future__ import annotations

from stackselect_domain.fairness import CandidateFacts, checklist, missed

IDENTITY = {
    "checkpoint": "m",
    "tokenizer": "m",
    "precision": {"weights": "bf16"},
    "arrival": {"seed": 0, "request_count": 10},
    "osl_distribution": {"ignore_eos": True},
}


def _facts(**changes) -> CandidateFacts:
    identity = {**IDENTITY, **changes.pop("identity", {})}
    values = {"load_points": 3, "tuning_origin": "sweep", "quality": "measured", **changes}
    return CandidateFacts(identity=identity, **values)


def _status(items) -> dict[str, str]:
    return {item.key: item.status for item in items}


def test_two_candidates_alike_but_the_stack_meet_every_item():
    assert set(_status(checklist([_facts(), _facts()])).values()) == {"met"}


def test_a_different_seed_misses_the_request_set_and_the_record_can_say_so():
    items = checklist([_facts(), _facts(identity={"arrival": {"seed": 1, "request_count": 10}})])
    assert _status(items)["same_requests"] == "not_met"
    assert missed(items) == ["same request set (seed and count)"]


def test_defaults_a_single_point_and_no_probe_are_not_met_and_a_simulated_probe_unknown():
    status = _status(checklist([_facts(tuning_origin="defaults", load_points=1, quality=None)]))
    assert status["tuned_settings"] == status["curves"] == status["quality_checked"] == "not_met"
    assert _status(checklist([_facts(quality="simulated")]))["quality_checked"] == "unknown"


def test_a_fact_nobody_recorded_is_unknown():
    status = _status(checklist([_facts(identity={"tokenizer": None}, tuning_origin=None)]))
    assert status["same_checkpoint"] == status["tuned_settings"] == "unknown"
    assert set(_status(checklist([])).values()) == {"unknown"}


def test_the_checklist_words_a_precision_recipe_by_its_parts():
    fp8 = {"precision": {"weights": "fp8", "kv_cache": "bf16"}}
    other = {"precision": {"weights": "fp8", "kv_cache": "fp8"}}

    (met,) = [item for item in checklist([_facts(identity=fp8)]) if item.key == "same_precision"]
    (differs,) = [
        item
        for item in checklist([_facts(identity=fp8), _facts(identity=other)])
        if item.key == "same_precision"
    ]

    assert met.detail == "weights fp8, kv cache bf16"
    assert differs.detail == "differs: weights fp8, kv cache bf16 vs weights fp8, kv cache fp8"
    (checkpoint,) = [item for item in checklist([_facts()]) if item.key == "same_checkpoint"]
    assert checkpoint.detail == "m; m"
