"""The columns curators edit, shared by the page forms and the API serializers so the two
cannot drift apart."""

ENGINE_FIELDS = (
    "slug",
    "name",
    "kind",
    "homepage",
    "licence",
    "status",
    "status_as_of",
    "status_source",
    "description",
)
# A release's serving defaults and their sources: what a new release carries over from the last.
RELEASE_DEFAULT_FIELDS = (
    "max_num_batched_tokens",
    "max_num_seqs",
    "budget_tiers",
    "kv_block_size",
    "chunked_prefill_default",
    "unchunked_limit",
    "prefix_cache_kind",
    "prefix_cache_default_on",
    "memory_fraction",
    "memory_fraction_basis",
    "memory_fraction_source",
    "memory_fraction_as_of",
    "defaults_source",
    "defaults_as_of",
)
RELEASE_FIELDS = (
    "engine",
    "version",
    "release_date",
    "source",
    "as_of",
    *RELEASE_DEFAULT_FIELDS,
    "needs_review",
)
BACKEND_FIELDS = (
    "slug",
    "name",
    "homepage",
    "description",
    "attention_kinds",
    "precisions",
    "families",
    "applicability_source",
    "applicability_as_of",
    "applicability_note",
)
FEATURE_FIELDS = ("key", "name", "contract", "description")
CAPABILITY_FIELDS = (
    "release",
    "feature",
    "backend",
    "vendor",
    "family",
    "maturity",
    "note",
    "evidence_url",
    "as_of",
    "verified_by",
    "needs_review",
)
