"""The runner's model store: catalog model slug -> the checkpoint path on this machine.

A job names its model by the catalog's slug (`engine.model_key`), never by a path of the
server's host; the engine is launched on the path this store maps it to. The store is one JSON
object in a file next to the credentials (`STACKSELECT_RUNNER_MODELS` overrides where), edited
with `stackselect-runner models add/remove/list`, listed by `status` and `doctor`.

A speculative draft model (a small draft checkpoint, an EAGLE head) is an entry too, keyed by
the name a plan gives it (`speculative.draft_model`) and declared a draft of the models it
serves (`models add <key> <path> --draft-for <model>`): the probe reports the pairs, so the
server routes a speculating job only to a runner that has both. A model is stored as its path
(`{"llama-3.1-8b": "/models/llama"}`, the store's original shape, read unchanged); a draft as
`{"path": ..., "draft_for": [model, ...]}`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stackselect_runner.config import (
    MODELS_ENV,
    ConfigError,
    RunnerSettings,
    config_path,
    write_json_atomically,
)

MODELS_FILE = "models.json"


class ModelMissing(ValueError):
    """The job's model is not in this runner's store; the attempt fails before any launch."""


def models_path(environ: Mapping[str, str] = os.environ) -> Path:
    override = environ.get(MODELS_ENV)
    if override:
        return Path(override).expanduser()
    return config_path(environ).parent / MODELS_FILE


def _entry(path: Path, key: str, value: object) -> tuple[str, tuple[str, ...]]:
    """A stored entry as (path, the models it drafts for); a model drafts for none."""
    if isinstance(value, str):
        return value, ()
    if isinstance(value, Mapping) and set(value) == {"path", "draft_for"}:
        checkpoint, models = value["path"], value["draft_for"]
        if (
            isinstance(checkpoint, str)
            and isinstance(models, list)
            and models
            and all(isinstance(model, str) and model.strip() for model in models)
        ):
            return checkpoint, tuple(models)
    raise ConfigError(
        f"{path}: {key!r} must map to a checkpoint path, or for a draft model to "
        '{"path": ..., "draft_for": [model slug, ...]}'
    )


@dataclass
class ModelStore:
    path: Path
    # Model slug -> local checkpoint.
    models: dict[str, str] = field(default_factory=dict)
    # Draft model key -> (local checkpoint, the model slugs it drafts for).
    drafts: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)

    @classmethod
    def of(cls, settings: RunnerSettings) -> ModelStore:
        """The store these settings name, else the one next to the credentials."""
        return cls.load(settings.models_file or models_path())

    @classmethod
    def load(cls, path: Path) -> ModelStore:
        """An absent file is an empty store; a malformed one is a ConfigError naming the file."""
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return cls(path)
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read the model store {path}: {exc}") from None
        if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
            raise ConfigError(f"{path}: expected a JSON object of model slug -> checkpoint path")
        store = cls(path)
        for key, value in data.items():
            checkpoint, draft_for = _entry(path, key, value)
            if draft_for:
                store.drafts[key] = (checkpoint, draft_for)
            else:
                store.models[key] = checkpoint
        return store

    def save(self) -> None:
        entries: dict[str, object] = dict(self.models)
        for key, (checkpoint, draft_for) in self.drafts.items():
            entries[key] = {"path": checkpoint, "draft_for": list(draft_for)}
        write_json_atomically(self.path, dict(sorted(entries.items())), prefix=".models-")

    def add(self, slug: str, checkpoint: str, draft_for: Sequence[str] = ()) -> str:
        """Map `slug` to an existing file or folder, as a model or, with `draft_for`, as the
        draft of those models (replacing what `slug` was); returns the absolute path stored."""
        if not slug.strip():
            raise ConfigError("the model slug must not be empty")
        models = tuple(dict.fromkeys(model.strip() for model in draft_for))
        if "" in models:
            raise ConfigError("--draft-for: the model slug must not be empty")
        path = Path(checkpoint).expanduser().resolve()
        if not path.exists():
            raise ConfigError(f"{checkpoint}: no such file or folder on this machine")
        self.models.pop(slug, None)
        self.drafts.pop(slug, None)
        if models:
            self.drafts[slug] = (str(path), models)
        else:
            self.models[slug] = str(path)
        return str(path)

    def remove(self, slug: str) -> None:
        if self.models.pop(slug, None) is None and self.drafts.pop(slug, None) is None:
            raise ConfigError(f"{slug!r} is not in the model store {self.path}")

    def checkpoint_for(self, slug: str) -> str:
        """The local checkpoint of a job's model, or ModelMissing saying how to add it."""
        path = self.models.get(slug)
        if path is None:
            known = ", ".join(sorted(self.models)) or "none"
            raise ModelMissing(
                f"model {slug!r} is not in this runner's model store {self.path} (it has: "
                f"{known}); add it with `stackselect-runner models add {slug} /path/to/checkpoint`"
            )
        return _existing(f"model {slug!r}", path)

    def draft_checkpoint_for(self, draft: str, model: str) -> str:
        """The local checkpoint of a job's draft model for its `model`, or ModelMissing saying
        how to add or declare it."""
        entry = self.drafts.get(draft)
        add = f"`stackselect-runner models add {draft} /path/to/draft --draft-for {model}`"
        if entry is None:
            known = "; ".join(self.draft_lines()) or "none"
            raise ModelMissing(
                f"draft model {draft!r} for {model!r} is not in this runner's model store "
                f"{self.path} (its drafts: {known}); add it with {add}"
            )
        path, draft_for = entry
        if model not in draft_for:
            also = " ".join(f"--draft-for {slug}" for slug in (*draft_for, model))
            raise ModelMissing(
                f"draft model {draft!r} is in the model store {self.path} as a draft for "
                f"{', '.join(draft_for)}, not for {model!r}; declare it with "
                f"`stackselect-runner models add {draft} {path} {also}`"
            )
        return _existing(f"draft model {draft!r}", path)

    def draft_models(self) -> dict[str, list[str]]:
        """What the probe reports: each draft model key and the models it drafts for."""
        return {key: list(draft_for) for key, (_, draft_for) in sorted(self.drafts.items())}

    def draft_lines(self) -> list[str]:
        return [
            f"{key} -> {path} (draft for {', '.join(draft_for)})"
            for key, (path, draft_for) in sorted(self.drafts.items())
        ]

    def lines(self) -> list[str]:
        models = [f"{slug} -> {path}" for slug, path in sorted(self.models.items())]
        return models + self.draft_lines()


def _existing(what: str, path: str) -> str:
    if not Path(path).exists():
        raise ModelMissing(f"{what} maps to {path}, which no longer exists")
    return path
