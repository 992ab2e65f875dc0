"""Shared shape of the real engine adapters: stack settings in, the engine's own flags out.

Each engine module subclasses `ServedEngineAdapter` with `command_for` (the flags, with the
engine's recommended settings applied where the stack leaves a choice open) and, where its
readiness or version endpoint differs, `readiness_url` / `version`. The effective
configuration that goes into every upload is the command line plus the parsed settings.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any

from stackselect_runner.engines.base import EngineAdapter, LaunchSpec, engine_cpus
from stackselect_runner.engines.stack import StackSettings


class Flags(list[str]):
    """A command line that skips settings left to the engine (None)."""

    def add(self, flag: str, value: object | None) -> Flags:
        if value is not None:
            self.extend([flag, str(value)])
        return self

    def switch(self, on: str, off: str | None, value: bool | None) -> Flags:
        """`on` for True, `off` for False (None: the engine has no off flag, leave it)."""
        if value is True:
            self.append(on)
        elif value is False and off is not None:
            self.append(off)
        return self


def speculative_flags(
    settings: StackSettings, algorithms: dict[str, str], *, draft_model_flag: str
) -> Flags:
    """SGLang's and LMDeploy's shared speculative group: `--speculative-algorithm` (our method
    word in the engine's name), the draft model and `--speculative-num-draft-tokens`; only the
    draft model's flag name differs between them."""
    flags = Flags()
    spec = settings.speculative
    if spec is None:
        return flags
    flags.add("--speculative-algorithm", algorithms[spec.method])
    flags.add(draft_model_flag, settings.draft_checkpoint)
    return flags.add("--speculative-num-draft-tokens", spec.num_tokens)


def thread_count() -> int | None:
    """Threads for a CPU engine: one per CPU it is pinned to (None when not pinned)."""
    cpus = engine_cpus()
    return len(cpus) if cpus else None


class ServedEngineAdapter(EngineAdapter):
    """A real engine launched from a candidate stack."""

    @abstractmethod
    def command_for(self, settings: StackSettings, launch: LaunchSpec) -> list[str]: ...

    def settings(self, launch: LaunchSpec) -> StackSettings:
        return StackSettings.from_options(launch.options)

    def build_command(self, launch: LaunchSpec) -> list[str]:
        return self.command_for(self.settings(launch), launch)

    def effective_config(self, launch: LaunchSpec) -> dict[str, Any]:
        settings = self.settings(launch)
        return {
            "engine": self.slug,
            "command": self.command_for(settings, launch),
            "settings": settings.as_dict(),
        }
