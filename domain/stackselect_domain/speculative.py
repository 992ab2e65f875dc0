"""Speculative decoding in engine-neutral words, declared once for the planner and the runner.

A plan may run every candidate with speculative decoding: a `method`, the draft model where the
method needs one and the number of draft tokens proposed per step. The plan form and API check
a person's setting with `Speculative.from_dict` (where="speculative"); the runner's StackSettings
parses the job's `engine.options.speculative` with the same function
(runner/stackselect_runner/engines/stack.py), and each adapter translates the method into its
engine's own name. `ENGINE_METHODS` says which methods each engine's adapter accepts, so the
planner refuses a candidate whose engine cannot speculate that way instead of letting the job
fail on a runner; tests/runner/test_speculative_engine_methods.py holds every adapter to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Our method words: a separate draft model, EAGLE and EAGLE-3 draft heads (their own
# checkpoints), the model's own multi-token-prediction layers, and n-gram (prompt lookup)
# proposals, which need no second model.
SPECULATIVE_METHODS: tuple[str, ...] = ("draft", "eagle", "eagle3", "mtp", "ngram")
METHOD_LABELS: dict[str, str] = {
    "draft": "Draft model",
    "eagle": "EAGLE draft head",
    "eagle3": "EAGLE-3 draft head",
    "mtp": "Multi-token prediction (the model's own MTP layers)",
    "ngram": "N-gram prompt lookup",
}
DRAFT_MODEL_METHODS = frozenset({"draft", "eagle", "eagle3"})
# Our bound on draft tokens per step (not an engine's): wide enough for the tree drafts some
# engines take, and it catches a typo (400 for 4) before a runner spends an engine start on it.
MIN_DRAFT_TOKENS = 1
MAX_DRAFT_TOKENS = 64
MAX_DRAFT_MODEL_LENGTH = 300
ALL_METHODS = frozenset(SPECULATIVE_METHODS)
# The methods each engine's runner adapter translates (each adapter's module docstring says
# where its engine documents them). llama.cpp's depend on the runner's frontend: llama-server
# drafts with a draft model, llama-cpp-python only by prompt lookup (n-gram). TGI's --speculate
# proposes n-grams (or uses Medusa heads a checkpoint brings). LMDeploy has EAGLE and EAGLE-3
# proposers only (its MTP proposers are named per model family). The simulated engine does not
# model speculation, so it is absent.
ENGINE_METHODS: dict[str, frozenset[str]] = {
    "vllm": ALL_METHODS,
    "sglang": ALL_METHODS,
    "tensorrt-llm": ALL_METHODS,
    "lmdeploy": frozenset({"eagle", "eagle3"}),
    "tgi": frozenset({"ngram"}),
    "llama-cpp": frozenset({"draft", "ngram"}),
}
# The frontend a speculating job must run on, for engines whose runner has more than one:
# llama.cpp drafts only in llama-server and does prompt lookup only in llama-cpp-python. The
# planner sets it in engine.options.frontend, so routing sends the job only to a runner that
# has that frontend instead of letting the runner pick one that cannot speculate that way.
METHOD_FRONTENDS: dict[str, dict[str, str]] = {
    "llama-cpp": {"draft": "llama-server", "ngram": "llama-cpp-python"},
}


class SpeculativeError(ValueError):
    """A bad speculative setting; `field` is method, draft_model or num_tokens ("" for the
    setting as a whole)."""

    def __init__(self, where: str, field: str, message: str) -> None:
        self.field = field
        self.message = message
        super().__init__(f"{where}.{field} {message}" if field else f"{where} {message}")


@dataclass(frozen=True, slots=True)
class Speculative:
    """Speculative decoding: `method`, its draft model (draft/eagle/eagle3 only) and tokens."""

    method: str
    num_tokens: int
    draft_model: str | None = None

    @classmethod
    def from_dict(cls, data: Any, *, where: str = "speculative") -> Speculative:
        """Check a setting, naming the field (`where` prefixes it: the plan's "speculative",
        the runner's "engine.options.speculative")."""
        if not isinstance(data, Mapping):
            raise SpeculativeError(where, "", "must be an object {method, draft_model, num_tokens}")
        unknown = sorted(set(data) - {"method", "draft_model", "num_tokens"})
        if unknown:
            raise SpeculativeError(where, unknown[0], "is not a speculative setting")
        method = data.get("method")
        method = method.strip().lower() if isinstance(method, str) else method
        if method not in ALL_METHODS:
            known = ", ".join(SPECULATIVE_METHODS)
            raise SpeculativeError(where, "method", f"must be one of {known}, got {method!r}")
        draft = data.get("draft_model")
        draft = draft.strip() if isinstance(draft, str) else draft
        if method in DRAFT_MODEL_METHODS:
            if not draft:
                raise SpeculativeError(
                    where, "draft_model", f"is required for {method} (the draft checkpoint)"
                )
            if not isinstance(draft, str) or len(draft) > MAX_DRAFT_MODEL_LENGTH:
                raise SpeculativeError(
                    where,
                    "draft_model",
                    f"must be a checkpoint name of at most {MAX_DRAFT_MODEL_LENGTH} characters",
                )
            if any(character.isspace() for character in draft):
                raise SpeculativeError(where, "draft_model", "must not contain spaces")
        elif draft:
            raise SpeculativeError(where, "draft_model", f"is not used by {method}: leave it empty")
        tokens = data.get("num_tokens")
        if tokens is None:
            raise SpeculativeError(where, "num_tokens", "is required (draft tokens per step)")
        if isinstance(tokens, bool) or not isinstance(tokens, int):
            raise SpeculativeError(where, "num_tokens", f"must be a whole number, got {tokens!r}")
        if not MIN_DRAFT_TOKENS <= tokens <= MAX_DRAFT_TOKENS:
            raise SpeculativeError(
                where,
                "num_tokens",
                f"must be from {MIN_DRAFT_TOKENS} to {MAX_DRAFT_TOKENS}, got {tokens}",
            )
        return cls(method=method, num_tokens=tokens, draft_model=draft or None)

    def as_dict(self) -> dict[str, Any]:
        """The job spec's engine.options.speculative (and the plan identity's) shape."""
        return {
            "method": self.method,
            "draft_model": self.draft_model,
            "num_tokens": self.num_tokens,
        }


def engine_refusal(engine: str, method: str) -> str | None:
    """Why `engine` cannot speculate with `method` (None when its adapter can)."""
    methods = ENGINE_METHODS.get(engine)
    if methods is None:
        return f"{engine} has no speculative decoding"
    if method in methods:
        return None
    can = ", ".join(m for m in SPECULATIVE_METHODS if m in methods)
    return f"{engine} cannot speculate with {method} (it can with {can})"


def speculative_frontend(engine: str, method: str) -> str | None:
    """The frontend `engine` must speculate with `method` on (None: the engine has one)."""
    return METHOD_FRONTENDS.get(engine, {}).get(method)
