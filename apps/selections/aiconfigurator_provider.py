"""Step times from NVIDIA AIConfigurator's measured kernel data (method "aiconfigurator").

AIConfigurator times each operator of a model from kernels measured per system, engine and
engine version, then sums a step. It covers NVIDIA systems with TensorRT-LLM, vLLM and SGLang;
for anything else `aiconfigurator_step_time` answers None with the reason, and the caller falls
back to the roofline. Its database holds few engine versions per system, so a stack on another
version is answered from the nearest one, and the choice says so.

Offline by construction: the model configuration handed to AIConfigurator is a local directory,
either a copy of the configuration the wheel ships for that checkpoint or, for a dense model it
lacks, one written from our catalog's architecture; AIConfigurator never sees a hub name.

`aiconfigurator_serving_estimate` is AIConfigurator's own answer for a fixed batch (method
"aiconfigurator-native"): its aggregated-serving formula over the same step times, which the
accuracy benchmark compares with our closed loop over them. The app itself does not use it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings
from django.db import models
from packaging.version import InvalidVersion, Version
from stackselect_domain.steptime import METHOD_AICONFIGURATOR, StepBatch

from apps.catalog import aiconfigurator_wheel
from apps.catalog.models import ModelSpec
from apps.catalog.published_sample import ENGINE_SLUGS, SYSTEM_ACCELERATORS

if TYPE_CHECKING:
    from apps.selections.estimator import Parallelism

BACKENDS = {slug: backend for backend, slug in ENGINE_SLUGS.items()}
SYSTEMS = {slug: system for system, slug in SYSTEM_ACCELERATORS.items()}

# Catalog model -> the configuration AIConfigurator ships for it (model_configs/, local data).
# DeepSeek-V3.1 and DeepSeek-V3 share every shape, so V3.1 uses V3's configuration.
SHIPPED_CONFIGS = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "llama-4-maverick": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "qwen3.5-397b-a17b": "Qwen/Qwen3.5-397B-A17B",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
    "deepseek-v3": "deepseek-ai/DeepSeek-V3",
    "deepseek-v3.1": "deepseek-ai/DeepSeek-V3",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "minimax-m2.5": "MiniMaxAI/MiniMax-M2.5",
    "kimi-k2.5": "moonshotai/Kimi-K2.5",
    "glm-5": "zai-org/GLM-5",
}

T = TypeVar("T")
Modes = tuple[str | None, str | None]  # AIConfigurator's (GEMM, MoE) quantisation names
# Our precision words -> AIConfigurator's GEMM / MoE quantisation modes, tried in order until
# its data answers. FP8 is per-tensor scaled first, as AIConfigurator's own measurement sample
# records its vLLM and TensorRT-LLM runs; then block-scaled experts (128 x 128 weight blocks, the
# scheme of the FP8 checkpoints Qwen and DeepSeek publish), as it records SGLang's, whose tables
# hold some MoE kernels only so; then block-scaled GEMMs too.
# None, None: AIConfigurator reads the checkpoint's own format from its configuration (MXFP4
# experts; a native FP8 checkpoint's blocks, tried after the modes above, which its sample's
# runs of those checkpoints state: on MiniMax-M2.5 with vLLM the configuration's own format timed
# decode steps about 2x the published TPOT, per-tensor FP8 within a fifth of it, on its sample's
# fitting rows, 2026-12-04; docs/predictions.md).
CHECKPOINT_FORMAT: Modes = (None, None)
_QUANT_MODES: dict[str, tuple[Modes, ...]] = {
    "bf16": (("bfloat16", "bfloat16"),),
    "fp16": (("bfloat16", "bfloat16"),),
    "fp8": (("fp8", "fp8"), ("fp8", "fp8_block"), ("fp8_block", "fp8_block")),
    "fp4": (("nvfp4", "nvfp4"),),
    "int4_awq": (("int4_wo", "int4_wo"),),
    "int4_gptq": (("int4_wo", "int4_wo"),),
}
# Systems whose shipped tables measure NVFP4 GEMMs (the RTX PRO 6000's TensorRT-LLM tables do).
FP4_SYSTEMS = {"b200_sxm", "b300_sxm", "gb200", "gb300", "rtx_pro_6000_server"}

# AIConfigurator's own TTFT/TPOT (its run_agg), told apart from its step times in our loop.
METHOD_AICONFIGURATOR_NATIVE = "aiconfigurator-native"

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AicStack:
    """What AIConfigurator needs to know about a stack. Parallelism as in `Parallelism`:
    a replica spans tp * pp GPUs, dp attention groups share the experts, ep divides tp * dp."""

    model: ModelSpec
    accelerator_slug: str
    engine_slug: str
    engine_version: str
    precision: str
    kv_dtype: str | None = None
    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    # AIConfigurator's own (GEMM, MoE) quantisation names where the stack states them, as a
    # published row does; None derives them from `precision`.
    quant_modes: Modes | None = None

    @classmethod
    def on_layout(cls, layout: Parallelism, **stack: Any) -> AicStack:
        """The stack on `layout`: AIConfigurator's degrees are the estimator's, one for one."""
        return cls(tp=layout.tp, pp=layout.pp, ep=layout.ep, dp=layout.dp, **stack)


@dataclass(frozen=True)
class AicChoice:
    """The provider for a stack, or None with the reason AIConfigurator cannot answer it.

    `database_version` is the engine version whose measurements answer; `note` says when it is
    not the stack's own version.
    """

    provider: AiconfiguratorStepTime | None
    reason: str = ""
    database_version: str | None = None
    note: str = ""


@dataclass(frozen=True, eq=False)
class AiconfiguratorStepTime:
    """A StepTimeProvider backed by a compiled AIConfigurator engine for one stack.

    A step's mix is read back from the batch: decode sequences of mean context c, and prefill
    chunks whose attention work says how long their prompts are (a prompt of L tokens from an
    empty cache adds L to kv_tokens_read and L(L+1)/2 to attn_token_ctx).
    """

    handle: Any = field(repr=False)
    label: str
    method: str = METHOD_AICONFIGURATOR

    def step_seconds(self, batch: StepBatch) -> float:
        return self.seconds(
            batch.prefill_tokens, batch.decode_seqs, batch.kv_tokens_read, batch.attn_token_ctx
        )

    def seconds(
        self, prefill_tokens: float, decode_seqs: float, kv_tokens_read: float, attn_ctx: float
    ) -> float:
        """The step time of a batch given as plain numbers, rounded to whole tokens as a
        StepBatch is: the simulator asks once per step, and building and checking a StepBatch
        each time was a third of a long simulation's time."""
        shape = _step_shape(
            round(prefill_tokens), round(decode_seqs), round(kv_tokens_read), round(attn_ctx)
        )
        return _step_ms(self, *shape) / 1e3


def _step_shape(
    prefill: int, decode: int, kv_tokens_read: int, attn_token_ctx: int
) -> tuple[int, int, int, int]:
    """(prefill tokens, decode sequences, prompt length, decode context), rounded to a grid
    of about 2% so a long simulation asks AIConfigurator a bounded number of questions."""
    extra = attn_token_ctx - kv_tokens_read
    prompt = round(2 * extra / prefill + 1) if prefill else 0
    context = max(1, round((kv_tokens_read - prefill) / decode)) if decode else 0
    return _grid(prefill), decode, _grid(max(prompt, 1) if prefill else 0), _grid(context)


def _grid(value: int) -> int:
    """`value` to 6 significant bits: steps of 2 ** (floor(log2(value)) - 5) above 64."""
    if value <= 64:
        return value
    step = 1 << (value.bit_length() - 6)
    return round(value / step) * step


@lru_cache(maxsize=200_000)
def _step_ms(provider: AiconfiguratorStepTime, prefill: int, decode: int, prompt: int, ctx: int):
    handle = provider.handle
    if not prefill:
        return handle.decode_step_latency(max(decode, 1), max(ctx, 1), 1)
    decode_osl = max(2 * (ctx - prompt), 1)
    return handle.mixed_step_latency(prefill, decode, min(prompt, prefill), decode_osl)


def _version_key(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def database_version(system: str, backend: str, wanted: str) -> tuple[str | None, str]:
    """The database version that answers for `wanted`: the same one, else the newest older
    one, else the oldest newer one, else the current one; with a note when it differs."""
    slots = aiconfigurator_wheel.sdk("perf_database").get_version_slots(system, backend) or {}
    versions = sorted(
        {v for v in slots.values() if v}, key=lambda v: _version_key(v) or Version("0")
    )
    if not versions:
        return None, f"AIConfigurator has no {backend} database for {system}"
    if wanted in versions:
        return wanted, ""
    key = _version_key(wanted)
    if key is None:
        chosen = slots.get("current") or versions[-1]
    else:
        older = [v for v in versions if (_version_key(v) or Version("0")) <= key]
        chosen = older[-1] if older else versions[0]
    shown = wanted or "unstated"
    return chosen, (
        f"measured {backend} {shown} is not in AIConfigurator's database for {system}; "
        f"answered from its nearest version {chosen}"
    )


def _models_dir() -> Path:
    return Path(settings.VAR_DIR) / "aiconfigurator" / "models"


def _written_config(model: ModelSpec) -> dict[str, Any] | None:
    """A Llama-style configuration from the catalog's shapes, for dense GQA/MHA models only:
    the one architecture our catalog fields describe completely."""
    dense = not model.experts_total and model.attention_kind in ("gqa", "mha")
    if not dense or not model.intermediate_size or not model.vocab_size:
        return None
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": model.hidden_size,
        "intermediate_size": model.intermediate_size,
        "num_hidden_layers": model.layers,
        "num_attention_heads": model.attention_heads,
        "num_key_value_heads": model.kv_heads,
        "head_dim": model.head_dim,
        "vocab_size": model.vocab_size,
        "max_position_embeddings": model.max_context or 131072,
        "torch_dtype": "bfloat16",
        "tie_word_embeddings": False,
    }


def model_config_dir(model: ModelSpec) -> tuple[Path | None, str]:
    """A local directory holding config.json for the model, or None with the reason.

    A configuration written from the catalog's shapes lives in a directory named by its
    content, so two custom models, or a model before and after a curator's edit, never share
    one (a compiled engine is cached by its directory)."""
    shipped = SHIPPED_CONFIGS.get(model.slug)
    if shipped:
        target = _models_dir() / model.slug
        source = (
            aiconfigurator_wheel.package_dir()
            / "model_configs"
            / f"{shipped.replace('/', '--')}_config.json"
        )
        if not source.exists():
            return None, f"the AIConfigurator wheel lacks its configuration of {shipped}"
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / "config.json")
        return target, ""
    written = _written_config(model)
    if written is None:
        return None, (
            f"AIConfigurator ships no configuration of {model.name}, and the catalog's shapes "
            "describe dense GQA/MHA models only"
        )
    text = json.dumps(written, indent=2)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    target = _models_dir() / f"{model.slug or 'custom'}-{digest}"
    target.mkdir(parents=True, exist_ok=True)
    (target / "config.json").write_text(text)
    return target, ""


def _quant_modes(stack: AicStack, system: str) -> tuple[Modes, ...] | str:
    """The modes to try for the stack, in order, or why there are none."""
    if stack.quant_modes:
        return (stack.quant_modes,)
    precision = stack.precision
    if precision == "fp4" and system not in FP4_SYSTEMS:
        return f"AIConfigurator has no FP4 kernels measured on {system}"
    if precision == "mxfp4":
        return (CHECKPOINT_FORMAT,)
    modes = _QUANT_MODES.get(precision)
    if modes is None:
        return f"AIConfigurator does not model precision {precision}"
    if precision == (stack.model.native_dtype or "") == "fp8":
        return (*modes, CHECKPOINT_FORMAT)  # an FP8 checkpoint: its own format, last
    return modes


def _kv_mode(kv_dtype: str | None) -> str:
    return "fp8" if (kv_dtype or "").startswith("fp8") else "bfloat16"


def coverage_reason(stack: AicStack) -> str:
    """Why AIConfigurator cannot answer for this stack, or "" when it might."""
    if not aiconfigurator_wheel.AVAILABLE:
        return aiconfigurator_wheel.UNAVAILABLE_REASON
    if stack.accelerator_slug not in SYSTEMS:
        return (
            f"AIConfigurator has no measured kernel data for {stack.accelerator_slug} "
            f"(it covers the NVIDIA systems {', '.join(sorted(SYSTEMS))})"
        )
    if stack.engine_slug not in BACKENDS:
        return f"AIConfigurator models TensorRT-LLM, vLLM and SGLang, not {stack.engine_slug}"
    return ""


_CHOICES: dict[tuple, AicChoice] = {}


def _model_content(model: ModelSpec) -> tuple:
    """Every field of the model but its row id and its JSON documents (the figures' sources):
    what an answer depends on, and hashable."""
    return tuple(
        getattr(model, item.attname)
        for item in model._meta.concrete_fields
        if not item.primary_key and not isinstance(item, models.JSONField)
    )


def aiconfigurator_step_time(stack: AicStack) -> AicChoice:
    """The AIConfigurator provider for a stack, or None with the reason it does not apply.

    Cached per stack and model content, not per database row: the ranking and the accuracy
    benchmark ask again for every batch shape they try, the same provider object lets the
    simulator's caches answer a repeated goal, and a curator's edit of a model's shapes (or a
    second custom model) gets its own answer rather than the one cached before."""
    key = (_model_content(stack.model), *(getattr(stack, f.name) for f in fields(stack)[1:]))
    if key not in _CHOICES:
        _CHOICES[key] = _choose(stack)
    return _CHOICES[key]


@dataclass(frozen=True)
class _Setup:
    """What both of AIConfigurator's answers for a stack start from: its system, backend and
    database version, the local model configuration and the quantisation modes to try."""

    system: str
    backend: str
    version: str
    note: str
    model_dir: str
    mode_choices: tuple[Modes, ...]


def _setup(stack: AicStack) -> _Setup | str:
    """The stack in AIConfigurator's terms, or the reason it cannot answer."""
    reason = coverage_reason(stack)
    if reason:
        return reason
    system, backend = SYSTEMS[stack.accelerator_slug], BACKENDS[stack.engine_slug]
    modes = _quant_modes(stack, system)
    if isinstance(modes, str):
        return modes
    version, note = database_version(system, backend, stack.engine_version)
    if version is None:
        return note
    model_dir, why = model_config_dir(stack.model)
    if model_dir is None:
        return why
    return _Setup(system, backend, version, note, str(model_dir), modes)


def _choose(stack: AicStack) -> AicChoice:
    setup = _setup(stack)
    if isinstance(setup, str):
        return AicChoice(None, setup)
    try:
        handle, modes = _compiled(setup, stack)
    except Exception as error:  # AIConfigurator raises many kinds for "no data for this"
        return AicChoice(None, f"AIConfigurator cannot time this stack: {_short(error)}")
    label = f"AIConfigurator {setup.system} {setup.backend} {setup.version}"
    return AicChoice(
        AiconfiguratorStepTime(handle, label), "", setup.version, _answer_note(setup, modes)
    )


def _answer_note(setup: _Setup, used: Modes) -> str:
    """The version note, and a sentence when the stack was answered in other quantisation
    modes than its first."""
    wanted = setup.mode_choices[0]
    if used == wanted:
        return setup.note
    modes = (
        f"timed with {_modes_text(used)} kernels: AIConfigurator has no "
        f"{_modes_text(wanted)} data for this stack on {setup.system}"
    )
    return f"{setup.note}; {modes}" if setup.note else modes


def _modes_text(modes: Modes) -> str:
    return (
        "the checkpoint's own format" if modes == CHECKPOINT_FORMAT else "/".join(map(str, modes))
    )


@dataclass(frozen=True)
class AicServingEstimate:
    """AIConfigurator's own mean TTFT and TPOT for a batch, or None with the reason."""

    ttft_ms: float | None
    tpot_ms: float | None
    reason: str = ""
    database_version: str | None = None
    note: str = ""
    method: str = METHOD_AICONFIGURATOR_NATIVE


def aiconfigurator_serving_estimate(
    stack: AicStack, *, isl: int, osl: int, batch_size: int
) -> AicServingEstimate:
    """What AIConfigurator itself predicts for `batch_size` requests per attention rank of
    `isl` prompt and `osl` output tokens in one aggregated pool: its backend's `run_agg`, with
    a context budget of one prompt per step (its estimate's default). A layout that does not
    fit in memory is not answered, as AIConfigurator's estimate refuses it."""
    setup = _setup(stack)
    if isinstance(setup, str):
        return AicServingEstimate(None, None, setup)
    try:
        summary, modes = _run_agg(setup, stack, isl=isl, osl=osl, batch_size=batch_size)
    except Exception as error:  # AIConfigurator raises many kinds for "no data for this"
        reason = f"AIConfigurator cannot estimate this stack: {_short(error)}"
        return AicServingEstimate(None, None, reason)
    if summary.check_oom():
        reason = f"AIConfigurator: the model does not fit in {setup.system} memory at this layout"
        return AicServingEstimate(None, None, reason)
    result = summary.get_result_dict()
    return AicServingEstimate(
        float(result["ttft"]), float(result["tpot"]), "", setup.version, _answer_note(setup, modes)
    )


def _run_agg(
    setup: _Setup, stack: AicStack, *, isl: int, osl: int, batch_size: int
) -> tuple[Any, Modes]:
    sdk = aiconfigurator_wheel.sdk
    database = sdk("perf_database").get_database(setup.system, setup.backend, setup.version)
    if database is None:
        raise LookupError(f"no {setup.backend} {setup.version} database for {setup.system}")
    runtime = sdk("config").RuntimeConfig(isl=isl, osl=osl, batch_size=batch_size)

    def run(arguments: dict[str, Any]) -> Any:
        config = sdk("config_builders").build_model_config(**arguments)
        model = sdk("models").get_model(setup.model_dir, config, setup.backend)
        backend = sdk("backends.factory").get_backend(setup.backend)
        return backend.run_agg(model, database, runtime, ctx_tokens=isl)

    return _first_answer(setup, stack, run)


def _first_answer(
    setup: _Setup, stack: AicStack, attempt: Callable[[dict[str, Any]], T]
) -> tuple[T, Modes]:
    """The first of the stack's quantisation modes, each with each attention mode, that
    AIConfigurator's data answers, with the modes used; else the first failure is raised,
    the one about the stack's own modes."""
    failures: list[Exception] = []
    for modes in setup.mode_choices:
        for fmha in _FMHA_MODES:
            try:
                return attempt({**_layout(stack, modes), "fmha_quant_mode": fmha}), modes
            except Exception as failure:  # AIConfigurator raises many kinds for "no data"
                failures.append(failure)
    raise failures[0]


def _short(error: Exception) -> str:
    return str(error).splitlines()[0][:300] if str(error) else type(error).__name__


_HANDLES: dict[tuple, Any] = {}
# Attention quantisations to try, in order: 16-bit attention first, then AIConfigurator's own
# default for the checkpoint (some databases hold only one of them).
_FMHA_MODES = ("bfloat16", None)


def _layout(stack: AicStack, modes: Modes) -> dict[str, Any]:
    """The stack's parallelism and quantisation as AIConfigurator's model-configuration
    arguments, the same for its step times and its own serving estimate."""
    gemm, moe = modes
    moe_model = bool(stack.model.experts_total)
    ep = stack.ep if moe_model else 1
    return {
        "tp_size": stack.tp,
        "pp_size": stack.pp,
        "attention_dp_size": stack.dp,
        "moe_tp_size": max(stack.tp * stack.dp // ep, 1) if moe_model else 1,
        "moe_ep_size": ep,
        "gemm_quant_mode": gemm,
        "moe_quant_mode": moe,
        "kvcache_quant_mode": _kv_mode(stack.kv_dtype),
    }


def _compiled(setup: _Setup, stack: AicStack) -> tuple[Any, Modes]:
    """A compiled engine and the quantisation modes it was compiled in, trying the modes and
    attention quantisations the data may hold. Cached per stack; compiling takes about a second
    the first time a system's database loads and milliseconds after."""
    key = (setup, stack.precision, stack.tp, stack.pp, stack.ep, stack.dp, stack.kv_dtype)
    if key not in _HANDLES:
        _HANDLES[key] = _first_answer(setup, stack, partial(_compile, setup))
    return _HANDLES[key]


def _compile(setup: _Setup, arguments: dict[str, Any]) -> Any:
    """An engine compiled and probed once: a table it lacks fails here, not mid-simulation."""
    handle = aiconfigurator_wheel.sdk("engine").EngineHandle.compile(
        setup.model_dir, setup.system, setup.backend, backend_version=setup.version, **arguments
    )
    handle.decode_step_latency(1, 128, 2)
    handle.mixed_step_latency(128, 1, 128, 2)
    return handle
