"""Identity fingerprints, when two results may be compared, and what a run's identity keeps of
the engine configuration a runner reports."""

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
from stackselect_domain.speculative import DRAFT_MODEL_METHODS, ENGINE_METHODS
from stackselect_runner.engines import LaunchSpec, get_engine_adapter

from apps.evidence.run_identity import stable_engine_config


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
        ({"gpu_count": 0}, "gpu_count: must be an integer from 1 to 32767"),
        ({"gpu_count": 32_768}, "gpu_count: must be an integer from 1 to 32767"),
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


def _draft_engines() -> list[tuple[str, str]]:
    """Each engine that speculates with a draft model, with one such method."""
    return sorted(
        (engine, min(methods & DRAFT_MODEL_METHODS))
        for engine, methods in ENGINE_METHODS.items()
        if methods & DRAFT_MODEL_METHODS
    )


def _stable_reported_config(engine: str, method: str, model: str, draft: str, tmp_path):
    """What a runner reports launching `engine` on checkpoint `model` speculating with the
    checkpoint `draft`, as its run identity keeps it."""
    speculative = {"method": method, "draft_model": "org/draft", "num_tokens": 3}
    options = {
        "precision": "bf16",
        "speculative": speculative,
        "model_path": model,
        "draft_model_path": draft,
        **({"frontend": "llama-server"} if engine == "llama-cpp" else {}),
    }
    launch = LaunchSpec(
        model="meta-llama/Llama-3.1-8B-Instruct",
        served_model_name="llama",
        port=8100,
        log_path=tmp_path / "attempt-1" / "engine.log",
        options=options,
    )
    store = {
        "model_key": "llama-3.1-8b",
        "path": model,
        "draft_model_key": "org/draft",
        "draft_path": draft,
    }
    reported = {"options": options, **get_engine_adapter(engine).effective_config(launch)}
    return stable_engine_config(reported, store)


@pytest.mark.parametrize(("engine", "method"), _draft_engines())
def test_a_model_used_as_its_own_draft_has_the_identity_of_one_whose_draft_is_kept_elsewhere(
    engine, method, tmp_path
):
    own = _stable_reported_config(engine, method, "/models/m.gguf", "/models/m.gguf", tmp_path)
    apart = _stable_reported_config(engine, method, "/models/m.gguf", "/drafts/d.gguf", tmp_path)
    assert own == apart
    assert "<model store: org/draft>" in json.dumps(own)
    assert "/models/" not in json.dumps(own)
