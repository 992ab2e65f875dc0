"""Forms, serializers and the catalog read their words from the domain vocabulary."""

from __future__ import annotations

from stackselect_domain.vocabulary import (
    ARRIVAL_PROCESSES,
    ATTENTION_KINDS,
    KV_DTYPES,
    LENGTH_KINDS,
    PRECISION_WORDS,
)

from apps.catalog.choices import AttentionKind
from apps.selections.api.serializers import ArrivalSerializer, LengthSerializer
from apps.selections.forms import ARRIVALS, LENGTH_CHOICES, GoalForm


def test_the_api_accepts_every_length_kind_the_sampler_accepts_replay_included() -> None:
    assert tuple(LengthSerializer().fields["kind"].choices) == LENGTH_KINDS
    replay = LengthSerializer(data={"kind": "replay", "values": [3, 5]})
    assert replay.is_valid(), replay.errors


def test_the_form_offers_only_words_of_the_vocabulary(db) -> None:
    assert {kind for kind, _ in LENGTH_CHOICES} <= set(LENGTH_KINDS)
    assert {process for process, _ in ARRIVALS} == {*ARRIVAL_PROCESSES, "closed"}
    assert tuple(ArrivalSerializer().fields["process"].choices) == ARRIVAL_PROCESSES
    form = GoalForm()
    assert [word for word, _ in form.fields["precision"].choices] == list(PRECISION_WORDS)
    assert {word for word, _ in form.fields["kv_dtype"].choices} - {""} == set(KV_DTYPES)


def test_the_catalog_attention_kinds_are_the_estimators() -> None:
    assert tuple(AttentionKind.values) == ATTENTION_KINDS


def test_a_goal_stored_with_a_plain_string_precision_reads_back_whole_into_the_form() -> None:
    initial = GoalForm.initial_from("Chat", {"precision": "fp8"}, {}, {})
    assert initial["precision"] == "fp8"
