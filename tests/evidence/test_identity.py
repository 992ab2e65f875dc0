"""Identity fingerprints and when two results may be compared."""

from __future__ import annotations

import hashlib
import json

import pytest
from stackselect_domain.identity import (
    IDENTITY_FIELDS,
    canonical_identity,
    comparability,
    fingerprint,
)


def identity(**fields):
    base = {
        "model": "llama-3.1-8b",
        "tokenizer": "llama-3.1-8b",
        "precision": "bf16",
        "accelerator": "h100-sxm",
        "gpu_count": 1,
        "parallelism": {"tp": 1, "pp": 1},
        "engine": "vllm",
        "engine_version": "0.11.0",
        "engine_config": {"max_num_seqs": 256},
        "isl_distribution": {"kind": "fixed", "tokens": 512},
        "osl_distribution": {"kind": "fixed", "tokens": 128},
        "arrival": {"kind": "poisson", "seed": 7},
        "harness_tool": "stackselect-runner",
        "harness_version": "0.1.0",
        "simulated": False,
    }
    return {**base, **fields}


def test_the_fingerprint_is_the_sha256_of_the_sorted_compact_canonical_json():
    canonical = canonical_identity(identity())
    expected = hashlib.sha256(
        json.dumps(canonical, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()

    assert fingerprint(identity()) == expected


def test_the_fingerprint_ignores_key_order_and_the_spelling_of_whole_numbers():
    reordered = dict(reversed(list(identity().items())))

    assert fingerprint(reordered) == fingerprint(identity())
    assert fingerprint(identity(gpu_count=1, prefix_share=0.0)) == fingerprint(
        identity(prefix_share=0)
    )


def test_the_fingerprint_changes_when_any_field_changes():
    assert fingerprint(identity(engine_version="0.11.1")) != fingerprint(identity())
    assert fingerprint(identity(engine_config={"max_num_seqs": 128})) != fingerprint(identity())


def test_the_canonical_identity_lists_every_field_with_missing_ones_as_none():
    canonical = canonical_identity({"model": "m"})

    assert tuple(canonical) == IDENTITY_FIELDS
    assert canonical["kernel"] is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"modle": "m"}, "identity: unknown fields modle"),
        ({"simulated": "yes"}, "simulated: must be true or false"),
        ({"gpu_count": 0}, "gpu_count: must be an integer >= 1"),
        ({"prefix_share": float("nan")}, "prefix_share: must be a finite number"),
        ({"engine_config": {"ratio": float("inf")}}, "engine_config.ratio: must be a finite"),
        ({"engine_config": {1, 2}}, "engine_config: set is not an identity value"),
    ],
)
def test_a_bad_identity_is_refused_naming_the_field(raw, message):
    with pytest.raises(ValueError, match=message):
        canonical_identity(raw)


def test_candidates_that_differ_only_in_the_stack_under_test_are_comparable():
    sglang = identity(engine="sglang", engine_version="0.5.0", engine_config={"chunk": 8192})

    result = comparability(identity(), sglang)

    assert result.comparable
    assert result.status == "comparable"
    assert result.differing == ()


def test_a_workload_or_harness_difference_makes_the_pair_not_comparable_and_names_it():
    other = identity(
        engine="sglang",
        isl_distribution={"kind": "fixed", "tokens": 1024},
        harness_version="0.2.0",
    )

    result = comparability(identity(), other)

    assert result.status == "not_comparable"
    assert result.differing == ("isl_distribution.tokens", "harness_version")


def test_the_stack_under_test_is_chosen_by_the_caller():
    tuned = identity(engine_config={"max_num_seqs": 128})

    assert comparability(identity(), tuned).comparable
    only_engine = comparability(identity(), tuned, stack_fields={"engine", "engine_version"})
    assert only_engine.differing == ("engine_config.max_num_seqs",)


def test_a_simulated_result_never_compares_with_real_hardware():
    simulated = identity(simulated=True)

    result = comparability(identity(), simulated, stack_fields=IDENTITY_FIELDS)

    assert result.status == "not_comparable"
    assert result.differing == ("simulated",)


def test_an_unknown_stack_field_is_refused():
    with pytest.raises(ValueError, match="stack_fields: unknown fields engin"):
        comparability(identity(), identity(), stack_fields={"engin"})
