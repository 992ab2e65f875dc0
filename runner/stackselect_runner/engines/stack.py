"""The candidate stack in engine-neutral words, as a real engine adapter receives it.

The job spec's `engine.options` for a real engine carries the stack (precision, KV dtype,
parallel layout, batch limits, chunked prefill, prefix caching, speculative decoding, whose
words and checks are stackselect_domain.speculative's, shared with the planner) and the
local checkpoints the runner's model store gave the job (`model_path`, `draft_model_path`).
Each adapter translates these words into its engine's own flags; a word the engine cannot
express raises `UnsupportedSetting` naming the engine and the setting, so a stack is never
silently run with a different configuration than the one its identity claims.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from stackselect_domain.checks import require_int, require_number
from stackselect_domain.speculative import Speculative

# KV words that mean "the model's own 16-bit dtype": every engine's default, so no flag.
DEFAULT_KV_WORDS = frozenset({"auto", "bf16", "fp16"})
LAYOUT_KEYS = ("tp", "pp", "ep", "dp")
STACK_OPTION_KEYS = frozenset(
    {
        *LAYOUT_KEYS,
        "model_path",
        "draft_model_path",
        "precision",
        "kv_dtype",
        "max_num_seqs",
        "max_num_batched_tokens",
        "cuda_graph_max_batch",
        "max_model_len",
        "chunked_prefill",
        "prefix_caching",
        "speculative",
        "gpu_memory_fraction",
        "frontend",
    }
)


# Local paths the runner's model store gives a job: kept as they are (not lower-cased).
PATH_KEYS = frozenset({"model_path", "draft_model_path"})


class UnsupportedSetting(ValueError):
    """The engine has no flag for a setting of the stack; the message names both."""

    def __init__(self, engine: str, what: str) -> None:
        super().__init__(f"{engine} {what}")


def _optional_int(options: Mapping[str, Any], key: str) -> int | None:
    value = options.get(key)
    return None if value is None else require_int(value, f"engine.options.{key}", minimum=1)


def _optional_bool(options: Mapping[str, Any], key: str) -> bool | None:
    value = options.get(key)
    if value is not None and not isinstance(value, bool):
        raise ValueError(f"engine.options.{key} must be true or false, got {value!r}")
    return value


def _optional_word(options: Mapping[str, Any], key: str) -> str | None:
    value = options.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"engine.options.{key} must be a string, got {value!r}")
    return value if key in PATH_KEYS else value.strip().lower()


@dataclass(frozen=True, slots=True)
class StackSettings:
    """Parsed `engine.options`; None means "the engine's own (recommended) choice"."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    model_path: str | None = None
    # The speculative draft model's local checkpoint, from the runner's model store.
    draft_model_path: str | None = None
    precision: str | None = None
    kv_dtype: str | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    # The largest decode batch captured as a CUDA graph; None ties it to max_num_seqs where the
    # engine has a capture flag (each adapter says how).
    cuda_graph_max_batch: int | None = None
    max_model_len: int | None = None
    chunked_prefill: bool | None = None
    prefix_caching: bool | None = None
    speculative: Speculative | None = None
    gpu_memory_fraction: float | None = None
    frontend: str | None = None

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> StackSettings:
        unknown = sorted(set(options) - STACK_OPTION_KEYS)
        if unknown:
            raise ValueError(f"engine.options: unknown setting(s) {unknown}")
        layout = {
            key: require_int(options.get(key, 1), f"engine.options.{key}", minimum=1)
            for key in LAYOUT_KEYS
        }
        fraction = options.get("gpu_memory_fraction")
        if fraction is not None:
            fraction = require_number(
                fraction, "engine.options.gpu_memory_fraction", 0.0, strict=True
            )
            if fraction > 1.0:
                raise ValueError("engine.options.gpu_memory_fraction must be <= 1")
        speculative = options.get("speculative")
        return cls(
            **layout,
            model_path=_optional_word(options, "model_path"),
            draft_model_path=_optional_word(options, "draft_model_path"),
            precision=_optional_word(options, "precision"),
            kv_dtype=_optional_word(options, "kv_dtype"),
            max_num_seqs=_optional_int(options, "max_num_seqs"),
            max_num_batched_tokens=_optional_int(options, "max_num_batched_tokens"),
            cuda_graph_max_batch=_optional_int(options, "cuda_graph_max_batch"),
            max_model_len=_optional_int(options, "max_model_len"),
            chunked_prefill=_optional_bool(options, "chunked_prefill"),
            prefix_caching=_optional_bool(options, "prefix_caching"),
            speculative=(
                Speculative.from_dict(speculative, where="engine.options.speculative")
                if speculative
                else None
            ),
            gpu_memory_fraction=fraction,
            frontend=_optional_word(options, "frontend"),
        )

    @property
    def draft_checkpoint(self) -> str | None:
        """The draft model's local checkpoint (None when the method needs none). Never the
        plan's draft name: an engine given that would fetch it from a hub."""
        spec = self.speculative
        if spec is None or spec.draft_model is None:
            return None
        if self.draft_model_path is None:
            raise ValueError(
                f"engine.options.draft_model_path: missing; the runner launches draft model "
                f"{spec.draft_model!r} from the checkpoint its model store maps it to"
            )
        return self.draft_model_path

    @property
    def graph_batch_limit(self) -> int | None:
        """The CUDA-graph capture limit: the stack's own, else its batch limit."""
        return self.cuda_graph_max_batch or self.max_num_seqs

    @property
    def kv_is_default(self) -> bool:
        return self.kv_dtype is None or self.kv_dtype in DEFAULT_KV_WORDS

    def as_dict(self) -> dict[str, Any]:
        return {key: value for key, value in asdict(self).items() if value is not None}


def refuse_layout_beyond(engine: str, settings: StackSettings, **flags: str | None) -> None:
    """Refuse every parallel size above 1 whose engine flag is None (the engine has none)."""
    for key in LAYOUT_KEYS:
        size = getattr(settings, key)
        if size > 1 and flags.get(key) is None:
            raise UnsupportedSetting(engine, f"has no {_LAYOUT_NAMES[key]} flag ({key}={size})")


_LAYOUT_NAMES = {
    "tp": "tensor parallelism",
    "pp": "pipeline parallelism",
    "ep": "expert parallelism",
    "dp": "data parallelism",
}


def powers_of_two_up_to(limit: int) -> list[int]:
    """CUDA-graph batch sizes 1, 2, 4, ... up to `limit`, ending at `limit` itself."""
    sizes = [1 << power for power in range(limit.bit_length()) if 1 << power <= limit]
    return sizes if sizes[-1] == limit else [*sizes, limit]


def lookup(engine: str, table: Mapping[str, str], word: str, what: str) -> str:
    """The engine's value for a stack word, or UnsupportedSetting naming the word."""
    try:
        return table[word]
    except KeyError:
        raise UnsupportedSetting(engine, f"has no {what} flag value for {word!r}") from None
