"""Run one command with DATABASE_URL pointing at a private, throw-away PostgreSQL cluster.

For benchmarks that need PostgreSQL (bench_ingest.py) without touching the machine's shared
server: the cluster is initialised in a temporary folder on a free port (bench/faults/stack.py)
and removed when the command ends, whatever its exit status, which this script passes on.

    .venv/bin/python bench/with_private_postgres.py .venv/bin/python bench/bench_ingest.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "faults"))

from stack import PrivatePostgres


def main() -> int:
    command = sys.argv[1:]
    if not command:
        sys.exit(__doc__)
    folder = Path(tempfile.mkdtemp(prefix="stackselect-bench-pg-"))
    folder.chmod(0o755)  # the postgres user must reach its cluster folder inside
    postgres = PrivatePostgres(folder / "postgres")
    try:
        postgres.create()
        return subprocess.run(command, env={**os.environ, "DATABASE_URL": postgres.url}).returncode
    finally:
        if postgres.running():
            postgres.stop(mode="immediate")
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
