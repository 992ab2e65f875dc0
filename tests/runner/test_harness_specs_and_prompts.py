"""Job-spec validation and the synthetic prompt builder (no network)."""

from __future__ import annotations

import pytest
from stackselect_runner.harness import HarnessSpec, LoadPoint, RequestSpec, VocabularyPromptBuilder
from stackselect_runner.harness.records import RequestRecord, percentile

REQUESTS = [
    {"index": 0, "arrival_s": 0.0, "input_tokens": 8, "output_tokens": 4},
    {"index": 1, "arrival_s": 0.5, "input_tokens": 8, "output_tokens": 4},
]


def job_spec(**sections: object) -> dict[str, object]:
    """A job spec shaped like docs/runner-protocol.md's, with sections replaced as given."""
    base: dict[str, object] = {
        "engine": {"adapter": "simulated", "model": "llama", "served_model_name": "served"},
        "harness": {"endpoint": "completions", "ignore_eos": True, "timeout_s": 30},
        "requests": REQUESTS,
    }
    return {**base, **sections}


def test_a_protocol_job_spec_becomes_a_harness_spec_for_the_served_model() -> None:
    spec = HarnessSpec.from_job_spec(
        job_spec(harness={"endpoint": "chat", "timeout_s": 30, "min_tokens": True}),
        "http://127.0.0.1:9/",
    )
    assert spec.url == "http://127.0.0.1:9/v1/chat/completions"
    assert spec.model == "served"
    assert spec.request_timeout_s == 30
    assert spec.engine_options.min_tokens and spec.engine_options.ignore_eos
    assert [request.index for request in spec.requests] == [0, 1]


@pytest.mark.parametrize(
    ("sections", "field"),
    [
        ({"engine": {"adapter": "simulated"}}, "model"),
        ({"harness": {"endpoint": "embeddings"}}, "endpoint"),
        ({"requests": []}, "requests"),
        ({"harness": {"timeout_s": 0}}, "request_timeout_s"),
        ({"harness": {"ignore_eos": "yes"}}, "ignore_eos"),
        ({"harness": {"colour": "red"}}, "colour"),
        (
            {"requests": [{"index": 0, "arrival_s": 0, "input_tokens": 0, "output_tokens": 1}]},
            "input_tokens",
        ),
        ({"requests": [{"index": 0, "input_tokens": 3, "output_tokens": 1}]}, "arrival_s"),
    ],
)
def test_a_bad_job_spec_is_rejected_naming_the_field(
    sections: dict[str, object], field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        HarnessSpec.from_job_spec(job_spec(**sections), "http://127.0.0.1:9")


def test_duplicate_request_indexes_are_rejected() -> None:
    twice = {"index": 3, "arrival_s": 0, "input_tokens": 1, "output_tokens": 1}
    with pytest.raises(ValueError, match="unique"):
        HarnessSpec.from_job_spec(job_spec(requests=[twice, twice]), "http://127.0.0.1:9")


def test_a_load_point_needs_exactly_one_of_rate_or_concurrency() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        LoadPoint(rate_rps=1.0, concurrency=2)
    with pytest.raises(ValueError, match="exactly one"):
        LoadPoint()
    with pytest.raises(ValueError, match="rate_rps"):
        LoadPoint(rate_rps=0)
    point = {"index": 1, "concurrency": 4}
    assert LoadPoint.from_dict(point).as_dict() == point


def test_prompts_have_one_word_per_requested_token_and_are_reproducible() -> None:
    request = RequestSpec(index=7, arrival_s=0, input_tokens=123, output_tokens=1)
    first = VocabularyPromptBuilder(seed=5).build(request, shared_prefix_tokens=0)
    again = VocabularyPromptBuilder(seed=5).build(request, shared_prefix_tokens=0)
    other_seed = VocabularyPromptBuilder(seed=6).build(request, shared_prefix_tokens=0)
    assert len(first.split()) == 123
    assert first == again
    assert first != other_seed


def test_requests_of_one_prefix_group_share_an_identical_prefix_and_then_differ() -> None:
    builder = VocabularyPromptBuilder(seed=1)
    group_a1 = RequestSpec(index=0, arrival_s=0, input_tokens=60, output_tokens=1, prefix_group=0)
    group_a2 = RequestSpec(index=1, arrival_s=0, input_tokens=80, output_tokens=1, prefix_group=0)
    group_b = RequestSpec(index=2, arrival_s=0, input_tokens=60, output_tokens=1, prefix_group=1)
    a1, a2, b = (
        builder.build(r, shared_prefix_tokens=40).split() for r in (group_a1, group_a2, group_b)
    )
    assert a1[:40] == a2[:40]
    assert a1[40:] != a2[40:60]
    assert a1[:40] != b[:40]
    assert (len(a1), len(a2)) == (60, 80)


def test_a_prefix_longer_than_the_prompt_is_cut_to_the_prompt() -> None:
    request = RequestSpec(index=0, arrival_s=0, input_tokens=10, output_tokens=1, prefix_group=2)
    prompt = VocabularyPromptBuilder().build(request, shared_prefix_tokens=50)
    assert len(prompt.split()) == 10


def test_warm_up_prompts_differ_from_measured_ones_so_they_cannot_prime_a_prefix_cache() -> None:
    request = RequestSpec(index=0, arrival_s=0, input_tokens=30, output_tokens=1, prefix_group=0)
    builder = VocabularyPromptBuilder()
    measured = builder.build(request, shared_prefix_tokens=30).split()
    warmup = builder.build(request, shared_prefix_tokens=30, salt="warmup:").split()
    assert measured[:10] != warmup[:10]


def test_percentiles_interpolate_between_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 99) == pytest.approx(3.97)
    assert percentile([], 50) is None


def test_tpot_is_the_decode_time_spread_over_tokens_after_the_first() -> None:
    record = RequestRecord(
        index=0, send_s=0, input_tokens=1, output_tokens=5, ttft_s=0.1, e2e_s=0.5
    )
    assert record.tpot_s == pytest.approx(0.1)
    record.error = "timeout"
    assert record.tpot_s is None
