"""Routing labels from probes: pure functions, no database."""

import re

import pytest

from apps.runners.labels import (
    CatalogAccelerator,
    JobNeeds,
    derive_labels,
    match_accelerator,
    pool_queue,
    pool_sizes,
    queues_for,
    unfit_reason,
    validate_probe,
)

CATALOG = [
    CatalogAccelerator("a100-sxm-80gb", "NVIDIA A100 80GB SXM", 80),
    CatalogAccelerator("h100-sxm", "NVIDIA H100 SXM", 80),
    CatalogAccelerator("h200-sxm", "NVIDIA H200 SXM", 141),
    CatalogAccelerator("l40s", "NVIDIA L40S", 48),
    CatalogAccelerator("l4", "NVIDIA L4", 24),
    CatalogAccelerator("rtx-4090", "NVIDIA GeForce RTX 4090", 24),
    CatalogAccelerator("mi300x", "AMD Instinct MI300X", 192),
]


@pytest.mark.parametrize(
    ("reported", "slug"),
    [
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
        ("NVIDIA L40S", "l40s"),
        ("NVIDIA L4", "l4"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("AMD Instinct MI300X", "mi300x"),
        ("h200-sxm", "h200-sxm"),
    ],
)
def test_it_maps_driver_gpu_names_to_catalog_slugs(reported, slug):
    assert match_accelerator(reported, None, CATALOG) == slug


def test_an_unknown_gpu_matches_nothing():
    assert match_accelerator("NVIDIA Tesla T4", 15360, CATALOG) is None


def test_memory_breaks_a_tie_between_two_variants_of_one_gpu():
    catalog = [
        CatalogAccelerator("a100-40", "NVIDIA A100 SXM", 40),
        CatalogAccelerator("a100-80", "NVIDIA A100 SXM", 80),
    ]
    assert match_accelerator("NVIDIA A100-SXM4", 81920, catalog) == "a100-80"
    assert match_accelerator("NVIDIA A100-SXM4", 40960, catalog) == "a100-40"


def test_a_gpu_machine_is_labelled_from_its_first_gpu_and_count():
    probe = validate_probe(
        {
            "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559}] * 4,
            "engines": {"vllm": "0.8.0"},
            "models": ["llama-3.1-8b"],
            "draft_models": {"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": ["llama-3.1-8b"]},
        }
    )
    labels = derive_labels(probe, CATALOG)
    assert labels.as_dict() == {
        "accelerator": "h100-sxm",
        "gpu_count": 4,
        "engines": ["vllm"],
        "simulated": False,
        "models": ["llama-3.1-8b"],
        "draft_models": {"yuhuili/EAGLE3-LLaMA3.1-Instruct-8B": ["llama-3.1-8b"]},
    }


def test_a_simulated_runner_takes_the_hardware_it_declares():
    probe = validate_probe(
        {"gpus": [], "gpu_count": 2, "simulated": True, "simulated_accelerator": "l40s"}
    )
    labels = derive_labels(probe, CATALOG)
    assert (labels.accelerator, labels.gpu_count, labels.simulated) == ("l40s", 2, True)


@pytest.mark.parametrize(
    ("probe", "field"),
    [
        ("not an object", "probe"),
        ({"gpus": "H100"}, "probe.gpus"),
        ({"gpus": [{"memory_mib": 1}]}, "probe.gpus[0].name"),
        ({"gpu_count": -1}, "probe.gpu_count"),
        ({"engines": ["vllm"]}, "probe.engines"),
        ({"simulated": True}, "probe.simulated_accelerator"),
        ({"models": "llama-3.1-8b"}, "probe.models"),
        ({"models": ["llama-3.1-8b", ""]}, "probe.models"),
        ({"draft_models": ["yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"]}, "probe.draft_models"),
        ({"draft_models": {"": ["llama-3.1-8b"]}}, "probe.draft_models"),
        ({"draft_models": {"eagle3": "llama-3.1-8b"}}, "probe.draft_models.eagle3"),
        ({"draft_models": {"eagle3": []}}, "probe.draft_models.eagle3"),
        ({"draft_models": {"eagle3": ["llama-3.1-8b", " "]}}, "probe.draft_models.eagle3"),
    ],
)
def test_a_bad_probe_names_the_field(probe, field):
    with pytest.raises(ValueError, match="^" + re.escape(field) + ":"):
        validate_probe(probe)


def test_a_runner_takes_pools_of_powers_of_two_up_to_its_count_and_its_own_count():
    assert pool_sizes(8) == [1, 2, 4, 8]
    assert pool_sizes(6) == [1, 2, 4, 6]
    assert pool_sizes(1) == [1]
    assert pool_sizes(0) == []


def test_queues_are_the_runner_queue_then_a_pool_per_engine_series_model_and_size():
    engines = {"vllm": "0.8.5", "simulated": "1"}
    probe = {"gpus": [{"name": "NVIDIA L40S"}] * 2, "engines": engines, "models": ["llama-3.1-8b"]}
    labels = derive_labels(validate_probe(probe), CATALOG)
    assert queues_for(runner_id=7, team_id=3, labels=labels) == [
        "runner.7",
        "pool.3.l40s.1.simulated",
        "pool.3.l40s.2.simulated",
        "pool.3.l40s.1.vllm.model-llama-3.1-8b",
        "pool.3.l40s.2.vllm.model-llama-3.1-8b",
        "pool.3.l40s.1.vllm.v0.8.model-llama-3.1-8b",
        "pool.3.l40s.2.vllm.v0.8.model-llama-3.1-8b",
    ]
    # A job for the catalog's vLLM 0.8.0 on that model waits on the pool this runner consumes.
    needs = JobNeeds("l40s", 2, "vllm", "0.8.0", "llama-3.1-8b")
    assert pool_queue(needs, team_id=3) == "pool.3.l40s.2.vllm.v0.8.model-llama-3.1-8b"


def test_a_runner_without_the_model_in_its_store_takes_no_real_engine_job_but_dry_runs():
    probe = {"gpus": [{"name": "NVIDIA L40S"}], "engines": {"vllm": "0.8.5", "simulated": "1"},
             "models": ["qwen2.5-7b"]}  # fmt: skip
    labels = derive_labels(validate_probe(probe), CATALOG)
    needs = JobNeeds("l40s", 1, "vllm", "0.8.0", "llama-3.1-8b")
    assert unfit_reason(labels, needs) == (
        "lacks model llama-3.1-8b in its store (it has qwen2.5-7b)"
    )
    assert pool_queue(needs, team_id=3) not in queues_for(runner_id=7, team_id=3, labels=labels)
    # The simulated engine needs no checkpoint.
    assert unfit_reason(labels, JobNeeds("l40s", 1, "simulated")) is None
    # With an empty store the runner consumes no real-engine pool at all.
    empty = derive_labels(validate_probe({**probe, "models": []}), CATALOG)
    assert queues_for(runner_id=7, team_id=3, labels=empty) == [
        "runner.7",
        "pool.3.l40s.1.simulated",
    ]
    assert unfit_reason(empty, needs) == "lacks model llama-3.1-8b in its store (it has no model)"


def test_a_runner_whose_engine_is_of_another_release_series_does_not_fit():
    engines = {"sglang": "0.4.9", "simulated": "1"}
    probe = {"gpus": [{"name": "NVIDIA L40S"}] * 2, "engines": engines}
    labels = derive_labels(validate_probe(probe), CATALOG)
    assert unfit_reason(labels, JobNeeds("l40s", 2, "sglang", "0.4.1")) is None
    assert unfit_reason(labels, JobNeeds("l40s", 2, "sglang", "0.5.23"), engine_name="SGLang") == (
        "lacks SGLang 0.5 (it has sglang 0.4.9, simulated)"
    )


def test_a_runner_without_the_engine_or_enough_gpus_says_why_it_does_not_fit():
    probe = {"gpus": [{"name": "NVIDIA L40S"}] * 2, "engines": {"simulated": "1"}}
    labels = derive_labels(validate_probe(probe), CATALOG)
    assert unfit_reason(labels, JobNeeds("l40s", 2, "simulated")) is None
    assert unfit_reason(labels, JobNeeds("l40s", 2, "sglang"), engine_name="SGLang") == (
        "lacks SGLang (it has simulated)"
    )
    assert unfit_reason(labels, JobNeeds("l40s", 4, "simulated")) == (
        "takes jobs of 1, 2 GPU(s), not 4"
    )
    assert unfit_reason(labels, JobNeeds("h100-sxm", 1, "simulated")) == (
        "has no h100-sxm (it has l40s)"
    )


def test_queue_names_keep_to_characters_the_embedded_filesystem_broker_accepts():
    engines = {"llama-cpp": "llama-cpp-python 0.3.36", "sglang": "0.5.23", "simulated": "0.1.0"}
    probe = {"gpus": [{"name": "NVIDIA L40S"}] * 2, "engines": engines, "models": ["gemma-3-1b"]}
    labels = derive_labels(validate_probe(probe), CATALOG)
    queues = queues_for(runner_id=7, team_id=3, labels=labels)
    # A custom model is keyed by its checkpoint name, whose "/" a queue name cannot hold.
    custom = JobNeeds("l40s", 1, "llama-cpp", "b10488", "google/gemma-3-1b-it")
    queues.append(pool_queue(custom, team_id=3))
    assert "pool.3.l40s.1.llama-cpp.any-build.model-google_gemma-3-1b-it" in queues
    assert "pool.3.l40s.2.sglang.v0.5.model-gemma-3-1b" in queues
    # kombu's filesystem transport refuses exchange names outside [A-Za-z0-9._-].
    assert [queue for queue in queues if not re.fullmatch(r"[A-Za-z0-9._-]+", queue)] == []


EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"


def test_a_job_speculating_with_a_draft_model_goes_only_to_a_runner_whose_store_pairs_them():
    engines = {"vllm": "0.8.5", "simulated": "1"}
    probe = {"gpus": [{"name": "NVIDIA L40S"}], "engines": engines,
             "models": ["llama-3.1-8b", "qwen2.5-7b"]}  # fmt: skip
    needs = JobNeeds("l40s", 1, "vllm", "0.8.0", "llama-3.1-8b", draft_model=EAGLE3)
    plain = derive_labels(validate_probe(probe), CATALOG)
    for_another = derive_labels(
        validate_probe({**probe, "draft_models": {EAGLE3: ["qwen2.5-7b"], "d": ["qwen2.5-7b"]}}),
        CATALOG,
    )
    paired = derive_labels(
        validate_probe({**probe, "draft_models": {EAGLE3: ["llama-3.1-8b", "qwen2.5-7b"]}}),
        CATALOG,
    )
    assert unfit_reason(plain, needs) == (
        f"lacks draft model {EAGLE3} for llama-3.1-8b in its store (it has no draft model for it)"
    )
    assert unfit_reason(for_another, needs) == unfit_reason(plain, needs)
    assert unfit_reason(paired, needs) is None
    queue = pool_queue(needs, team_id=3)
    assert queue == (
        "pool.3.l40s.1.vllm.v0.8.model-llama-3.1-8b.draft-yuhuili_EAGLE3-LLaMA3.1-Instruct-8B"
    )
    assert queue in queues_for(runner_id=7, team_id=3, labels=paired)
    for labels in (plain, for_another):
        assert queue not in queues_for(runner_id=7, team_id=3, labels=labels)
    # A job without speculation still waits on the model's own pool.
    assert pool_queue(JobNeeds("l40s", 1, "vllm", "0.8.0", "llama-3.1-8b"), team_id=3) in (
        queues_for(runner_id=7, team_id=3, labels=plain)
    )


LLAMA_SERVER = {"llama-cpp": "4034 (3e0ba0e6)", "simulated": "1"}
LLAMA_CPP_PYTHON = {"llama-cpp": "llama-cpp-python 0.3.36", "llama-cpp-python": "0.3.36"}


def _llama_labels(engines: dict[str, str], drafts: dict | None = None):
    probe = {"gpus": [{"name": "NVIDIA L40S"}], "engines": engines, "models": ["gemma-3-1b"],
             "draft_models": drafts or {}}  # fmt: skip
    return derive_labels(validate_probe(probe), CATALOG)


def test_a_llama_cpp_job_goes_only_to_a_runner_with_the_frontend_that_speculates_its_way():
    draft = JobNeeds("l40s", 1, "llama-cpp", "b4034", "gemma-3-1b", "gemma-draft", "llama-server")
    ngram = JobNeeds("l40s", 1, "llama-cpp", "b4034", "gemma-3-1b", frontend="llama-cpp-python")
    python_only = _llama_labels(LLAMA_CPP_PYTHON, {"gemma-draft": ["gemma-3-1b"]})
    server_only = _llama_labels(LLAMA_SERVER, {"gemma-draft": ["gemma-3-1b"]})
    both = _llama_labels(
        {**LLAMA_SERVER, "llama-cpp-python": "0.3.36"}, {"gemma-draft": ["gemma-3-1b"]}
    )
    assert unfit_reason(python_only, draft) == (
        "lacks llama-server (llama.cpp's own server, needed to speculate with a draft model; "
        "it has llama-cpp-python 0.3.36)"
    )
    assert unfit_reason(server_only, ngram) == (
        "lacks llama-cpp-python (llama.cpp's Python server, needed to speculate by prompt "
        "lookup; it has llama-server 4034 (3e0ba0e6))"
    )
    assert unfit_reason(server_only, draft) is None
    assert unfit_reason(python_only, ngram) is None
    assert (unfit_reason(both, draft), unfit_reason(both, ngram)) == (None, None)
    draft_queue, ngram_queue = pool_queue(draft, team_id=3), pool_queue(ngram, team_id=3)
    assert draft_queue == (
        "pool.3.l40s.1.llama-cpp.any-build.model-gemma-3-1b.draft-gemma-draft.frontend-llama-server"
    )
    assert (
        ngram_queue
        == "pool.3.l40s.1.llama-cpp.any-build.model-gemma-3-1b.frontend-llama-cpp-python"
    )
    queues = {
        name: queues_for(runner_id=7, team_id=3, labels=labels)
        for name, labels in (("python", python_only), ("server", server_only), ("both", both))
    }
    assert (draft_queue in queues["server"], draft_queue in queues["python"]) == (True, False)
    assert (ngram_queue in queues["python"], ngram_queue in queues["server"]) == (True, False)
    assert {draft_queue, ngram_queue} <= set(queues["both"])
    # Without the draft for its model even llama-server does not take the draft job.
    assert draft_queue not in queues_for(runner_id=7, team_id=3, labels=_llama_labels(LLAMA_SERVER))
    assert [queue for queue in queues["both"] if not re.fullmatch(r"[A-Za-z0-9._-]+", queue)] == []


def test_what_a_speculating_job_needs_reads_as_words_on_the_plan_page():
    needs = JobNeeds("l40s", 1, "llama-cpp", "b4034", "gemma-3-1b", "gemma-draft", "llama-server")
    assert needs.wanted("llama.cpp", "1 x NVIDIA L40S (l40s)") == (
        "llama.cpp (any build) through llama-server with model gemma-3-1b and draft model "
        "gemma-draft on 1 x NVIDIA L40S (l40s)"
    )


def test_only_llama_cpp_pools_get_frontend_variants_on_a_runner_that_also_has_vllm():
    engines = {**LLAMA_SERVER, "llama-cpp-python": "0.3.36", "vllm": "0.8.5"}
    probe = {"gpus": [{"name": "NVIDIA L40S"}], "engines": engines, "models": ["gemma-3-1b"],
             "draft_models": {"gemma-draft": ["gemma-3-1b"]}}  # fmt: skip
    labels = derive_labels(validate_probe(probe), CATALOG)
    queues = queues_for(runner_id=7, team_id=3, labels=labels)
    vllm = [queue for queue in queues if ".vllm." in queue]
    assert vllm == [
        "pool.3.l40s.1.vllm.model-gemma-3-1b",
        "pool.3.l40s.1.vllm.model-gemma-3-1b.draft-gemma-draft",
        "pool.3.l40s.1.vllm.v0.8.model-gemma-3-1b",
        "pool.3.l40s.1.vllm.v0.8.model-gemma-3-1b.draft-gemma-draft",
    ]
    assert [queue for queue in queues if ".frontend-" in queue and ".llama-cpp." not in queue] == []
    # A vLLM job, speculating or not, still waits on a pool this runner consumes.
    for draft in ("", "gemma-draft"):
        needs = JobNeeds("l40s", 1, "vllm", "0.8.0", "gemma-3-1b", draft_model=draft)
        assert pool_queue(needs, team_id=3) in vllm
    # The llama.cpp pools keep their frontend variants, with and without the draft.
    assert {
        "pool.3.l40s.1.llama-cpp.model-gemma-3-1b.frontend-llama-server",
        "pool.3.l40s.1.llama-cpp.model-gemma-3-1b.draft-gemma-draft.frontend-llama-server",
        "pool.3.l40s.1.llama-cpp.model-gemma-3-1b.frontend-llama-cpp-python",
    } <= set(queues)
