"""The runner's model store: catalog model slug -> the checkpoint path on this machine.

A job names its model by the catalog's slug (`engine.model_key`), never by a path of the
server's host; the engine is launched on the path this store maps it to. The store is one JSON
object in a file next to the credentials (`STACKSELECT_RUNNER_MODELS` overrides where), edited
with `stackselect-runner models add/remove/list`, listed by `status` and `doctor`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from stackselect_runner.config import (
    DIR_MODE,
    MODELS_ENV,
    ConfigError,
    RunnerSettings,
    config_path,
)

MODELS_FILE = "models.json"


class ModelMissing(ValueError):
    """The job's model is not in this runner's store; the attempt fails before any launch."""


def models_path(environ: Mapping[str, str] = os.environ) -> Path:
    override = environ.get(MODELS_ENV)
    if override:
        return Path(override).expanduser()
    return config_path(environ).parent / MODELS_FILE


@dataclass
class ModelStore:
    path: Path
    models: dict[str, str] = field(default_factory=dict)

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
        if not isinstance(data, dict) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in data.items()
        ):
            raise ConfigError(f"{path}: expected a JSON object of model slug -> checkpoint path")
        return cls(path, dict(data))

    def save(self) -> None:
        self.path.parent.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        descriptor, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".models-")
        try:
            with os.fdopen(descriptor, "w") as handle:
                json.dump(dict(sorted(self.models.items())), handle, indent=1)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def add(self, slug: str, checkpoint: str) -> str:
        """Map `slug` to an existing file or folder; returns the absolute path stored."""
        if not slug.strip():
            raise ConfigError("the model slug must not be empty")
        path = Path(checkpoint).expanduser().resolve()
        if not path.exists():
            raise ConfigError(f"{checkpoint}: no such file or folder on this machine")
        self.models[slug] = str(path)
        return str(path)

    def remove(self, slug: str) -> None:
        if self.models.pop(slug, None) is None:
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
        if not Path(path).exists():
            raise ModelMissing(f"model {slug!r} maps to {path}, which no longer exists")
        return path

    def lines(self) -> list[str]:
        return [f"{slug} -> {path}" for slug, path in sorted(self.models.items())]
