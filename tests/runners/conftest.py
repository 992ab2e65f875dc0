from tests.benchmarks.conftest import attempt, plan, rows, selection, sim_runner  # noqa: F401
