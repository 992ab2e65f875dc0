"""The one place that imports NVIDIA's AIConfigurator (`aiconfigurator-core`, pinned in
pyproject.toml). Its wheel is built for manylinux x86_64 only; where it is missing the app runs
without it, and everything that needs it says so with `UNAVAILABLE_REASON`.

The wheel is local data: its measured kernel tables, model configurations and measurement
sample ship inside the package, so nothing here reaches the network.
"""

from __future__ import annotations

import logging
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType

PACKAGE = "aiconfigurator-core"
SAMPLE_NAME = "silicon_sample.csv"


def _load() -> tuple[ModuleType | None, str]:
    # Its per-query notes and data-fallback warnings would flood our logs; errors still show.
    logging.getLogger("aiconfigurator_core").setLevel(logging.ERROR)
    try:
        module = import_module("aiconfigurator_core")
    except ImportError as error:
        return None, (
            f"{PACKAGE} is not installed here ({error}); its wheel exists for manylinux x86_64 "
            "only, so the AIConfigurator method and its published sample are unavailable"
        )
    return module, ""


_MODULE, UNAVAILABLE_REASON = _load()
AVAILABLE = _MODULE is not None


def installed_version() -> str | None:
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return None


def package_dir() -> Path:
    """The installed package's directory; raises RuntimeError with the reason when absent."""
    if _MODULE is None:
        raise RuntimeError(UNAVAILABLE_REASON)
    return Path(_MODULE.__file__).parent


def sample_path() -> Path:
    """The measurement sample the wheel ships (systems/silicon_sample.csv)."""
    return package_dir() / "systems" / SAMPLE_NAME


def sdk(name: str) -> ModuleType:
    """A submodule of the SDK, e.g. sdk("engine"); raises RuntimeError when unavailable."""
    package_dir()
    return import_module(f"aiconfigurator_core.sdk.{name}")
