"""`make demo`: one selection through the real chain on one machine, driven by the public API.

It prepares its own var dir (SQLite file, filesystem broker), starts the product with
`manage.py run_all` on its own port together with simulated runners (run_local_runner), then
acts as a user would over HTTP: a goal, its candidates, three of them on different engines, a
small benchmark plan, the evidence, and a decision record proposed by its author and accepted
by a second user with the approver role. It prints where to look and stops everything, unless
--keep leaves it running until Ctrl-C. Any failing step ends it with exit status 1 and says why.

Only the standard library talks to the server (urllib), as any client could.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
APPROVER = "approver"
TERMINAL_PLAN_STATES = {"succeeded", "partial", "failed", "cancelled"}
SERVER_WAIT_S = 90
RUNNERS_WAIT_S = 120
COMPUTE_WAIT_S = 180
PLAN_WAIT_S = 20 * 60
POLL_S = 2.0


@dataclass(frozen=True)
class SimulatedRunner:
    name: str
    accelerator: str
    gpus: int


# Two machines, so the three jobs of the plan spread over both.
RUNNERS = (SimulatedRunner("demo-h100", "h100-sxm", 8), SimulatedRunner("demo-l40s", "l40s", 2))

# A chat assistant on Llama 3.1 8B: prompts around 1k tokens, answers around 128, 2 req/s.
GOAL: dict[str, Any] = {
    "title": "Demo: Llama 3.1 8B chat assistant",
    "workload": {
        "model": "llama-3.1-8b",
        "precision": "bf16",
        "isl": {"kind": "normal", "mean": 1024, "std": 256, "min": 128, "max": 2048},
        "osl": {"kind": "normal", "mean": 128, "std": 32, "min": 16, "max": 256},
        "arrival": {"process": "poisson", "rate_rps": 2},
    },
    "slo": {"ttft_ms": 1000, "tpot_ms": 60, "percentile": 95, "attainment": 0.9},
    "constraints": {"accelerators": [r.accelerator for r in RUNNERS], "max_gpus": 2},
}

# Small load points so the whole plan finishes in a few minutes on two cores. The demo's runners
# have no GPU, so the plan is a dry run on the simulated engine, and says so everywhere.
PLAN: dict[str, Any] = {
    "title": "Demo plan: three engines",
    "mode": "simulated",
    "load_points": [{"rate_rps": 1}, {"rate_rps": 3}, {"rate_rps": 6}],
    "request_count": 12,
    "warmup_requests": 2,
    "endpoint": "chat",
    "max_attempts": 2,
}


class JourneyError(RuntimeError):
    """A step that did not do what it should; the message says which and why."""


def say(message: str) -> None:
    print(message, flush=True)


def wait_until(check: Callable[[], Any], *, timeout: float, what: str) -> Any:
    """Poll `check` until it returns something truthy; JourneyError after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(POLL_S)
    raise JourneyError(f"timed out after {timeout:.0f} s waiting for {what}")


class Api:
    """The user API with one personal token (which also fixes the acting team)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base_url = base_url.rstrip("/")
        self.token = token

    def get(self, path: str) -> Any:
        return self._call("GET", path, None)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._call("POST", path, body or {})

    def _call(self, method: str, path: str, body: dict[str, Any] | None) -> Any:
        request = urllib.request.Request(
            f"{self.base_url}/api/v1/{path.lstrip('/')}",
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers={
                "Authorization": f"Token {self.token}",
                "Content-Type": "application/json",
                "Accept": "application/json",
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:800]
            raise JourneyError(f"{method} {path} answered {error.code}: {detail}") from error
        except OSError as error:
            raise JourneyError(f"{method} {path} failed: {error}") from error


class Product:
    """StackSelect on this machine: its var dir, set-up commands and the run_all processes."""

    def __init__(self, var_dir: Path, port: int) -> None:
        self.var_dir = var_dir
        self.url = f"http://127.0.0.1:{port}"
        self.port = port
        self.process: subprocess.Popen | None = None
        self.log = var_dir / "demo.log"
        self.env = self._env()

    def _env(self) -> dict[str, str]:
        """The embedded set-up of `make run` (SQLite, filesystem broker) in the demo's folder."""
        env = {
            key: value
            for key, value in os.environ.items()
            if key not in {"DATABASE_URL", "CELERY_BROKER_URL", "RUNNER_BROKER_URL", "DEBUG"}
            and not key.startswith("DJANGO")
        }
        env.update(
            STACKSELECT_VAR_DIR=str(self.var_dir),
            SECRET_KEY_FILE=str(self.var_dir / "secret_key"),
            PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT / "runner"), env.get("PYTHONPATH")])),
        )
        return env

    def manage(self, *args: str) -> str:
        """Run a management command; its stdout, or JourneyError with what it printed."""
        result = subprocess.run(
            [PYTHON, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0:
            raise JourneyError(f"manage.py {args[0]} failed:\n{result.stdout}{result.stderr}")
        return result.stdout

    def prepare(self) -> None:
        self.var_dir.mkdir(parents=True, exist_ok=True)
        key = self.var_dir / "secret_key"
        if not key.exists():
            key.write_text(secrets.token_urlsafe(50))
            key.chmod(0o600)
        self.manage("migrate", "--noinput", "-v", "0")
        self.manage("collectstatic", "--noinput", "-v", "0")
        self.manage("load_curated")
        self.manage("bootstrap_demo", "--url", f"{self.url}/", "--approver", APPROVER)

    def token(self, username: str) -> str:
        """A fresh API token of the user in the demo team (the command prints it last)."""
        output = self.manage("api_token_create", username, "--team", "demo", "--name", "demo")
        return output.strip().splitlines()[-1]

    def password(self, username: str) -> str:
        name = "demo_password" if username == "demo" else f"{username}_password"
        return (self.var_dir / name).read_text().strip()

    def start(self) -> None:
        manage = f"{PYTHON} {ROOT / 'manage.py'}"
        extras = []
        for runner in RUNNERS:
            command = (
                f"{manage} run_local_runner --url {self.url} --name {runner.name} "
                f"--home runners/{runner.name} --accelerator {runner.accelerator} "
                f"--gpus {runner.gpus}"
            )
            extras += ["--extra", f"{runner.name}={command}"]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [PYTHON, "manage.py", "run_all", "--bind", f"127.0.0.1:{self.port}", *extras],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_until(self._ready, timeout=SERVER_WAIT_S, what=f"{self.url}/readyz")

    def _ready(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise JourneyError(f"run_all exited early; see {self.log}")
        try:
            with urllib.request.urlopen(f"{self.url}/readyz", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def wait_forever(self) -> None:
        if self.process is not None:
            self.process.wait()

    def stop(self) -> None:
        """What one Ctrl-C does to `make run`: run_all stops its children, then exits."""
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGINT)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


@contextmanager
def step(number: int, title: str) -> Iterator[None]:
    say(f"\n[{number}] {title}")
    started = time.monotonic()
    yield
    say(f"    done in {time.monotonic() - started:.1f} s")


def runners_online(api: Api) -> bool:
    runners = {runner["name"]: runner["state"] for runner in api.get("runners/")["results"]}
    return all(runners.get(r.name) in ("online", "busy") for r in RUNNERS)


def computed(api: Api, selection_id: int) -> dict[str, Any] | None:
    status = api.get(f"selections/{selection_id}/candidates/status/")
    if status["computation"] == "failed":
        raise JourneyError(f"candidate computation failed: {status['error']}")
    return status if status["computation"] == "done" else None


def takes(runner: SimulatedRunner, stack: dict[str, Any]) -> bool:
    """A runner takes jobs of its accelerator on its own GPU count or a power of two below it
    (docs/runner-protocol.md, "Queues and dispatch")."""
    count = stack["gpu_count"]
    fits = count == runner.gpus or (count <= runner.gpus and count & (count - 1) == 0)
    return stack["accelerator"] == runner.accelerator and fits


def runnable(stack: dict[str, Any]) -> bool:
    return any(takes(runner, stack) for runner in RUNNERS)


def three_engines(kept: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Three runnable candidates of different engines, best rank first, preferring one that
    puts a job on an accelerator no earlier pick uses, so every runner gets work."""
    pool = [c for c in sorted(kept, key=lambda c: c["rank"]) if runnable(c["stack"])]
    chosen: list[dict[str, Any]] = []
    while len(chosen) < 3:
        engines = {c["stack"]["engine"] for c in chosen}
        covered = {c["stack"]["accelerator"] for c in chosen}
        fresh = [c for c in pool if c["stack"]["engine"] not in engines]
        if not fresh:
            raise JourneyError(f"only {len(chosen)} engines have a runnable candidate; 3 needed")
        chosen.append(
            next((c for c in fresh if c["stack"]["accelerator"] not in covered), fresh[0])
        )
    return chosen


def describe(stack: dict[str, Any]) -> str:
    backend = f" ({stack['backend']})" if stack.get("backend") else ""
    return (
        f"{stack['engine']} {stack['engine_version']}{backend} on {stack['gpu_count']} x "
        f"{stack['accelerator']}, TP{stack['tp']}, {stack['precision']}"
    )


class PlanWatcher:
    """Prints a line whenever a job's state or progress changes."""

    def __init__(self, api: Api, plan_id: int) -> None:
        self.api = api
        self.plan_id = plan_id
        self.seen: dict[int, str] = {}

    def finished(self) -> dict[str, Any] | None:
        plan = self.api.get(f"benchmarks/plans/{self.plan_id}/")
        for job in plan["jobs"]:
            line = f"{job['state']}{job_progress(job['progress'] or {})}"
            if self.seen.get(job["id"]) != line:
                self.seen[job["id"]] = line
                label = f"{job['stack'].get('engine', '?')} on {job['accelerator']}"
                say(f"    job {job['id']} ({label}): {line}")
        return plan if plan["state"] in TERMINAL_PLAN_STATES else None


def job_progress(progress: dict[str, Any]) -> str:
    """ ", load point 1: 6/12 requests" from the runner's last progress report."""
    if progress.get("total") is None:
        return ""
    return (
        f", load point {progress.get('load_point')}: {progress.get('done')}/{progress['total']}"
        f" {progress.get('message') or ''}".rstrip()
    )


def metric(point: dict[str, Any], name: str) -> str:
    value = point["metrics"].get(name)
    return "missing" if value is None else f"{value:.3g}"


def print_evidence(evidence: dict[str, Any]) -> None:
    for candidate in evidence["candidates"]:
        max_rate = candidate["max_rate"] or {}
        rate = max_rate.get("rate_rps")
        say(
            f"    {candidate['label']}: {candidate['comparability']['status']}, max rate "
            f"{'missing' if rate is None else f'{rate:.2f} req/s'} ({max_rate.get('bound', '-')})"
        )
        for point in candidate["load_points"]:
            say(
                f"      at {point['offered_rate_rps']:g} req/s: TTFT p95 "
                f"{metric(point, 'ttft_p95_ms')} ms, TPOT p95 {metric(point, 'tpot_p95_ms')} ms, "
                f"SLO attainment {metric(point, 'slo_attainment')}, errors "
                f"{metric(point, 'errors')}"
            )


@dataclass(frozen=True)
class Standing:
    """How a candidate did: max rate within the SLO, then attainment and TTFT p95 at the
    highest load point (the tie-breakers when several meet the SLO everywhere)."""

    label: str
    candidate_id: int
    max_rate_rps: float
    bound: str
    attainment: float
    ttft_p95_ms: float

    @classmethod
    def of(cls, candidate: dict[str, Any]) -> Standing:
        max_rate = candidate["max_rate"] or {}
        top = candidate["load_points"][-1]["metrics"] if candidate["load_points"] else {}
        return cls(
            label=candidate["label"],
            candidate_id=candidate["candidate_id"],
            max_rate_rps=max_rate.get("rate_rps") or 0.0,
            bound=max_rate.get("bound", "missing"),
            attainment=top.get("slo_attainment") or 0.0,
            ttft_p95_ms=top.get("ttft_p95_ms") or float("inf"),
        )

    def order(self) -> tuple[float, float, float]:
        return (-self.max_rate_rps, -self.attainment, self.ttft_p95_ms)

    def ties(self, other: Standing) -> bool:
        """Same max rate and attainment, so only the TTFT tells them apart."""
        return self.order()[:2] == other.order()[:2]

    def summary(self) -> str:
        rate = f"{self.max_rate_rps:.2f} req/s"
        rate = f"at least {rate}" if self.bound == "at_least" else f"{rate} ({self.bound})"
        return (
            f"max rate within the SLO {rate}; at the top load point SLO attainment "
            f"{self.attainment:.0%}, TTFT p95 {self.ttft_p95_ms:.1f} ms"
        )


def dropped_reason(loser: Standing, winner: Standing) -> str:
    if loser.ties(winner):
        return (
            f"{loser.summary()}. Same max rate and attainment as the chosen stack; a higher TTFT "
            f"p95 at the top load point ({loser.ttft_p95_ms:.1f} ms against "
            f"{winner.ttft_p95_ms:.1f} ms, one run each)."
        )
    return f"{loser.summary()}: a lower max rate or attainment than the chosen stack."


def decision_text(evidence: dict[str, Any]) -> dict[str, Any]:
    """Choose the best measured candidate and say, with its figures, why each other lost."""
    measured = [Standing.of(c) for c in evidence["candidates"] if c["candidate_id"] is not None]
    if len(measured) < 3:
        raise JourneyError(f"the evidence holds {len(measured)} measured candidates; expected 3")
    winner, *others = sorted(measured, key=Standing.order)
    return {
        "title": "Serve the demo chat assistant",
        "chosen_candidate_id": winner.candidate_id,
        "rationale": f"{winner.label}: {winner.summary()}. Ranked by max rate, then "
        "attainment, then TTFT p95 at the top load point.",
        "dropped": {str(o.candidate_id): dropped_reason(o, winner) for o in others},
        "risks": "A dry run on the simulated engine with one small run per load point: measure "
        "the plan on real GPUs, with more requests and runs, before production.",
    }


def journey(product: Product, author: Api, approver: Api) -> dict[str, str]:
    """The user's steps; returns the pages to look at."""
    with step(3, "Waiting for the simulated runners to come online"):
        wait_until(lambda: runners_online(author), timeout=RUNNERS_WAIT_S, what="the runners")
        for runner in RUNNERS:
            say(f"    {runner.name}: {runner.gpus} x {runner.accelerator} (simulated)")

    with step(4, "Creating the selection (goal: workload and SLO)"):
        selection = author.post("selections/", GOAL)
        selection_id = selection["id"]
        say(f"    selection {selection_id}: {selection['title']}")

    with step(5, "Computing candidates (queued on the web app's Celery worker)"):
        author.post(f"selections/{selection_id}/candidates/compute/")
        status = wait_until(
            lambda: computed(author, selection_id), timeout=COMPUTE_WAIT_S, what="candidates"
        )
        say(f"    {status['kept_count']} kept, {status['dropped_count']} dropped with reasons")

    with step(6, "Choosing three candidates of different engines"):
        kept = author.get(f"selections/{selection_id}/candidates/?page_size=500")["kept"]
        chosen = three_engines(kept)
        author.post(
            f"selections/{selection_id}/candidates/choose/", {"chosen": [c["id"] for c in chosen]}
        )
        for candidate in chosen:
            say(f"    #{candidate['rank']}: {describe(candidate['stack'])}")

    with step(7, "Running the benchmark plan on the runners"):
        plan = author.post("benchmarks/plans/", {"selection": selection_id, **PLAN})
        say(f"    plan {plan['id']}: {len(plan['jobs'])} jobs, load points {PLAN['load_points']}")
        watcher = PlanWatcher(author, plan["id"])
        plan = wait_until(watcher.finished, timeout=PLAN_WAIT_S, what="the plan to finish")
        if plan["state"] != "succeeded":
            reasons = "; ".join(f"job {j['id']}: {j['state_reason']}" for j in plan["jobs"])
            raise JourneyError(f"the plan ended {plan['state']}: {reasons}")

    with step(8, "Reading the evidence"):
        evidence = author.get(f"selections/{selection_id}/evidence/")
        print_evidence(evidence)

    with step(9, "Writing the decision record and proposing it (as demo)"):
        record = author.post("decisions/", {"selection": selection_id, **decision_text(evidence)})
        # Its evidence is simulated only: the record says so and its title too.
        record = author.post(f"decisions/{record['id']}/propose/", {"simulation_only": True})
        say(f"    {record['reference']}: {record['status']} by {record['proposed_by']}")

    with step(10, f"Accepting it (as {APPROVER}, an approver who is not the author)"):
        record = approver.post(f"decisions/{record['id']}/accept/")
        if record["status"] != "accepted":
            raise JourneyError(f"{record['reference']} is {record['status']} after accepting")
        say(f"    {record['reference']}: {record['status']} by {record['decided_by']}")
        say("    " + product.manage("audit_verify").strip().splitlines()[-1])

    return {
        "selection": f"/selections/{selection_id}/",
        "plan": f"/benchmarks/{plan['id']}/",
        "evidence": f"/evidence/selections/{selection_id}/",
        "decision": f"/decisions/{record['id']}/",
        "decision (Markdown)": f"/decisions/{record['id']}/markdown/",
        "audit trail": "/audit/",
    }


def print_where_to_look(product: Product, pages: dict[str, str]) -> None:
    say("\nWhere to look:")
    for name, path in pages.items():
        say(f"    {name:<20} {product.url}{path}")
    say("Logins:")
    say(f"    demo / {product.password('demo')}   (the author; team admin)")
    say(f"    {APPROVER} / {product.password(APPROVER)}   (approver)")
    say(f"Server and runner logs: {product.log}")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8766)
    parser.add_argument("--var-dir", type=Path, default=ROOT / "var" / "demo")
    parser.add_argument("--fresh", action="store_true", help="delete the var dir first")
    parser.add_argument("--keep", action="store_true", help="leave everything running until Ctrl-C")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    var_dir = args.var_dir.resolve()
    if args.fresh and var_dir.exists():
        shutil.rmtree(var_dir)
    product = Product(var_dir, args.port)
    try:
        with step(1, f"Preparing {var_dir} (migrations, curated catalog, demo users)"):
            product.prepare()
            author, approver = (Api(product.url, product.token(u)) for u in ("demo", APPROVER))
        with step(2, f"Starting web, Celery worker and beat, {len(RUNNERS)} runners"):
            product.start()
            say(f"    serving {product.url}; logs in {product.log}")
        pages = journey(product, author, approver)
        print_where_to_look(product, pages)
        if args.keep:
            say("\nEverything keeps running; Ctrl-C stops it.")
            product.wait_forever()
    except JourneyError as error:
        say(f"\nThe demo failed: {error}\nServer and runner logs: {product.log}")
        return 1
    except KeyboardInterrupt:
        say("\nInterrupted.")
        return 130
    finally:
        product.stop()
    say("\nAll demo processes stopped.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
