"""The identity of a measured run, assembled from what the plan, the job and the files state.

No Django: callers pass the documents in. The benchmark plan's identity document
(apps/benchmarks/plan_identity.py) has its own shape; this maps it onto the identity fields of
`identity.py`, so runner results and imported results are judged by one rule.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any

from stackselect_domain.identity import canonical_identity

PARALLELISM_KEYS = ("tp", "pp", "dp", "ep", "cp")
PREFIX_KEYS = ("prefix_share", "prefix_tokens", "prefix_groups")
# Engine-command flags whose values say where the engine listens or which process it is, never
# how it serves: two runs that differ only in these are repeats of one stack.
PLACE_FLAGS = frozenset({"--port", "--host", "--hostname", "--pid-file", "--pidfile"})
# Paths made for one attempt (its work directory, a temporary file) differ on every run.
TEMPORARY_PATH = re.compile(r"^(/tmp/|/var/tmp/|/dev/shm/)|/attempt-\d+(/|$)")
TEMPORARY = "<temporary path>"
# Where an engine's configuration names the speculative draft model's checkpoint: the value of
# these flags (llama-server's, SGLang's, LMDeploy's, vLLM's JSON --speculative-config) and of
# these keys (the runner's options and settings; TensorRT-LLM's speculative_config). A model
# may be its own draft, so only where a path is used says whose store key names it.
DRAFT_FLAGS = frozenset(
    {
        "--model-draft",
        "--speculative-draft-model-path",
        "--speculative-draft-model",
        "--speculative-config",
    }
)
DRAFT_KEYS = frozenset({"draft_model_path", "speculative_model"})


def _stable_argument(argument: str) -> str:
    flag, equals, value = argument.partition("=")
    if equals and flag.startswith("-") and TEMPORARY_PATH.search(value):
        return f"{flag}={TEMPORARY}"
    return TEMPORARY if TEMPORARY_PATH.search(argument) else argument


def stable_command(command: Sequence[Any]) -> list[str]:
    """The engine command without what does not change the result: the listening address and
    port, process ids, per-attempt paths, and where the program is installed."""
    arguments = [str(argument) for argument in command]
    if not arguments:
        return []
    stable = [posixpath.basename(arguments[0])]
    skip_value = False
    for argument in arguments[1:]:
        if skip_value:
            skip_value = False
            continue
        flag = argument.split("=", 1)[0]
        if flag in PLACE_FLAGS:
            skip_value = "=" not in argument
            continue
        stable.append(_stable_argument(argument))
    return stable


def _json_document(value: str) -> dict | list | None:
    """A flag value that is itself a JSON object or list (vLLM's --speculative-config), else
    None."""
    if not value.startswith(("{", "[")):
        return None
    try:
        document = json.loads(value)
    except ValueError:
        return None
    return document if isinstance(document, dict | list) else None


def _checkpoint_names(store: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """For each role a checkpoint plays in an engine's configuration ("model", "draft"), the
    name each of the store's paths gets there: its store key, the role's own key winning when
    the model is its own draft (one path for both)."""
    stored = {
        role: (str(store.get(path_key) or ""), f"<model store: {store.get(name_key)}>")
        for role, path_key, name_key in (
            ("model", "path", "model_key"),
            ("draft", "draft_path", "draft_model_key"),
        )
    }
    return {
        role: {path: name for path, name in (stored[other], stored[role]) if path}
        for role, other in (("model", "draft"), ("draft", "model"))
    }


def _role(key: Any, role: str) -> str:
    """The role of what a flag or key names: the draft's for a draft one, else the enclosing
    one."""
    return "draft" if isinstance(key, str) and (key in DRAFT_FLAGS or key in DRAFT_KEYS) else role


def _named_checkpoints(value: Any, names: Mapping[str, Mapping[str, str]], role: str) -> Any:
    """`value` with every string equal to a stored checkpoint path (or a flag's `=path`, or a
    string of a JSON document holding one) replaced by its name in the role it is used in
    (see _checkpoint_names): the draft's after a draft flag or under a draft key, else
    `role`'s."""
    if isinstance(value, str):
        flag, equals, rest = value.partition("=")
        if value in names[role]:
            return names[role][value]
        named = names[_role(flag, role)] if equals else {}
        if rest in named:
            return f"{flag}={named[rest]}"
        document = _json_document(value)
        if document is None:
            return value
        replaced = _named_checkpoints(document, names, role)
        return value if replaced == document else json.dumps(replaced, sort_keys=True)
    if isinstance(value, Mapping):
        return {
            key: _named_checkpoints(item, names, _role(key, role)) for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        # A command's value takes the role of the flag before it.
        previous = [None, *value][:-1]
        return [
            _named_checkpoints(item, names, _role(flag, role))
            for flag, item in zip(previous, value, strict=True)
        ]
    return value


def stable_engine_config(
    config: Mapping[str, Any] | None, model_store: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The engine's reported configuration with its command made stable (see stable_command),
    and the checkpoint paths a runner's model store gave (the model's, the draft model's) named
    by their store keys instead: where a machine keeps the weights does not change what they
    measure. A path is named by the key of what it is used as, so a model drafting for itself
    has the identity of one whose draft is a copy kept elsewhere."""
    if not config:
        return None
    stable = _named_checkpoints(dict(config), _checkpoint_names(model_store or {}), "model")
    if isinstance(stable.get("command"), list | tuple):
        stable["command"] = stable_command(stable["command"])
    return stable


def stack_identity(stack: Mapping[str, Any], *, kv_dtype: str | None = None) -> dict[str, Any]:
    """The stack-under-test fields of a candidate's stack document."""
    return {
        "precision": {"weights": stack.get("precision"), "kv_cache": kv_dtype},
        "accelerator": stack.get("accelerator"),
        "gpu_count": stack.get("gpu_count"),
        "parallelism": {key: stack[key] for key in PARALLELISM_KEYS if key in stack} or None,
        "engine": stack.get("engine"),
        "engine_version": stack.get("engine_version"),
        "backend": stack.get("backend"),
    }


def runner_identity(
    *,
    plan_identity: Mapping[str, Any],
    stack: Mapping[str, Any],
    engine: Mapping[str, Any] | None,
    harness: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Identity of a runner's results: the plan's shared part, the job's stack, and what the
    engine and harness reported about themselves (the executed version wins over the plan's)."""
    model = plan_identity.get("model") or {}
    workload = plan_identity.get("workload") or {}
    settings = plan_identity.get("harness") or {}
    engine, harness = engine or {}, harness or {}
    prefix = {key: workload[key] for key in PREFIX_KEYS if key in workload}
    identity = {
        **stack_identity(stack, kv_dtype=plan_identity.get("kv_dtype")),
        "model": model.get("slug") or model.get("name"),
        "tokenizer": model.get("tokenizer"),
        "checkpoint": model.get("checkpoint"),
        "isl_distribution": workload.get("isl"),
        "osl_distribution": {
            "lengths": workload.get("osl"),
            "ignore_eos": settings.get("ignore_eos"),
        },
        # The request set and how it is sent: same seed and count give the same requests.
        "arrival": {
            "process": workload.get("arrival"),
            "seed": workload.get("seed"),
            "request_count": workload.get("request_count"),
            "endpoint": settings.get("endpoint"),
            # Absent for plans made before they chose it: their fingerprints stay as they were.
            **({"temperature": settings["temperature"]} if "temperature" in settings else {}),
        },
        "prefix_share": prefix or None,
        "engine_config": stable_engine_config(
            engine.get("effective_config"), engine.get("model_store")
        ),
        "warmup": {"requests": settings.get("warmup_requests")},
        "measurement_window": plan_identity.get("measurement_window_s"),
        "failure_policy": {
            **(plan_identity.get("failure_policy") or {}),
            "timeout_s": settings.get("timeout_s"),
        },
        "harness_tool": harness.get("name"),
        "harness_version": harness.get("version"),
        "simulated": bool(plan_identity.get("simulated")),
    }
    if engine.get("version"):
        identity["engine_version"] = engine["version"]
    return canonical_identity(identity)


def merged_identity(
    *, stated: Mapping[str, Any], from_files: Mapping[str, Any], stack: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A person's stated identity, completed by the candidate's stack and the tool's files.

    A field the files state wins over an empty one; a stated value that contradicts the files
    is refused by name rather than silently overwritten.
    """
    merged: dict[str, Any] = {}
    if stack is not None:
        merged.update(stack_identity(stack))
    merged.update({key: value for key, value in stated.items() if value is not None})
    for field, value in from_files.items():
        if value is None:
            continue
        if merged.get(field) not in (None, value):
            raise ValueError(
                f"identity.{field}: the files say {value!r} but {merged[field]!r} was given"
            )
        merged[field] = value
    return canonical_identity(merged)
