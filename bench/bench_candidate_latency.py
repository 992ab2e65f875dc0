"""Candidate-list latency under concurrent clients, against /healthz on the same server.

Starts gunicorn on a private PostgreSQL cluster (bench/faults/stack.py), or on a throw-away
database created on the server of `--database-url` (and dropped afterwards), loads the curated
catalog, computes the candidates of one selection (Llama 3.1 8B, BF16, up to 8 GPUs), chooses
the two leading stacks, imports a real guidellm result for the first (tests/evidence/data),
drafts a decision record on them and checkpoints the audit chain (as the periodic task does),
then sends `--clients` concurrent clients at GET /api/v1/selections/{id}/candidates/ (token
auth, first page), at the candidate list, plan, evidence and decision pages (a logged-in
session) and, the same way, at /healthz. Each client sends `--requests` requests, one after
the other. It prints p50/p99 of each and the p99 ratio: what each costs over a request that
does nothing. Then it serves each endpoint in this process under cProfile and prints where
one request's time goes (templates, database, our code, charts, the rest) and the functions
with the most own time: what is left between the measured ratio and its goal.

    .venv/bin/python bench/bench_candidate_latency.py [--clients 20] [--requests 25]
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from pathlib import Path
from time import perf_counter
from urllib.parse import urlsplit, urlunsplit
from uuid import uuid4

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent / "faults"))

from profiling import profile_lines, profile_rounds
from stack import private_stack

ROOT = Path(__file__).resolve().parent.parent

MODEL = "llama-3.1-8b"
WORKLOAD = {
    "precision": "bf16",
    "isl": {"kind": "lognormal", "median": 1024, "sigma": 0.6},
    "osl": {"kind": "fixed", "value": 256},
    "arrival": {"process": "poisson", "rate_rps": 4},
}
SLO = {"ttft_ms": 1000, "tpot_ms": 60, "percentile": 99, "attainment": 0.95}
GUIDELLM_REPORT = (
    Path(__file__).resolve().parent.parent / "tests/evidence/data/guidellm/benchmarks.json"
)


@contextmanager
def throwaway_database(server_url: str) -> Iterator[str]:
    """A new, empty database on the server of `server_url`, dropped on the way out."""
    import psycopg

    parts = urlsplit(server_url)
    name = f"bench_latency_{uuid4().hex[:8]}"
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def session_cookie(user) -> str:
    """A logged-in browser session of `user`, made as a login would, as a Cookie header."""
    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def selection_with_candidates() -> tuple[int, str, int, str]:
    """A team, an API token, a browser session and a computed selection; returns (selection
    id, token, kept, session cookie)."""
    from django.contrib.auth import get_user_model

    from apps.accounts.choices import Role
    from apps.accounts.models import Membership, Team
    from apps.accounts.services import api_token_create
    from apps.audit.services import Actor
    from apps.catalog.models import ModelSpec
    from apps.selections.models import Selection
    from apps.selections.services import candidates_compute

    team = Team.objects.create(slug="bench-latency", name="Latency bench")
    user = get_user_model().objects.create_user("bench-latency", password=None)
    Membership.objects.create(user=user, team=team, role=Role.ADMIN)
    selection = Selection.objects.create(
        team=team,
        title="Latency bench",
        created_by=user,
        model=ModelSpec.objects.get(slug=MODEL),
        workload=WORKLOAD,
        slo=SLO,
        constraints={"max_gpus": 8},
    )
    selection = candidates_compute(actor_user=user, selection=selection)
    _, token = api_token_create(actor=Actor.system("bench"), user=user, team=team, name="bench")
    kept = selection.candidates.filter(outcome="kept").count()
    return selection.pk, token, kept, session_cookie(user)


def evidence_and_decision(selection_id: int) -> int:
    """The two leading stacks chosen, a real guidellm result imported for the first, a draft
    decision record on them and the audit chain checkpointed; returns the record's id."""
    from apps.audit.verify import verify_and_checkpoint
    from apps.decisions.services import DecisionText, record_create
    from apps.evidence.services import RawFile, import_tool_results
    from apps.selections.models import Selection
    from apps.selections.services import candidates_choose

    selection = Selection.objects.get(pk=selection_id)
    user, team = selection.created_by, selection.team
    first, second = selection.candidates.filter(outcome="kept").order_by("rank")[:2]
    candidates_choose(actor_user=user, selection=selection, candidate_ids=[first.pk, second.pk])
    report = RawFile("benchmarks.json", GUIDELLM_REPORT.read_bytes())
    import_tool_results(
        actor_user=user,
        team=team,
        selection_id=selection_id,
        tool="guidellm",
        files={"report": report},
        candidate_id=first.pk,
    )
    text = DecisionText(
        title="Latency bench decision",
        chosen_candidate_id=first.pk,
        rationale="The leading stack, measured.",
        dropped={second.pk: "Ranked below the first."},
        risks="None stated: a benchmark record.",
        revalidate_after_days=90,
    )
    record = record_create(actor_user=user, team=team, selection_id=selection_id, text=text)
    verify_and_checkpoint()
    return record.pk


def get(url: str, headers: dict[str, str]) -> bytes:
    """The body of a GET that must answer 200."""
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as answer:
        body = answer.read()
        if answer.status != 200:
            raise RuntimeError(f"GET {url} answered {answer.status}")
    return body


def timed_get(url: str, headers: dict[str, str]) -> float:
    start = perf_counter()
    get(url, headers)
    return perf_counter() - start


def page_rows(body: bytes) -> tuple[int, int]:
    """How many kept and dropped rows a candidate list response holds."""
    page = json.loads(body)
    return len(page["kept"]), len(page["dropped"])


def latencies(url: str, headers: dict[str, str], clients: int, requests: int) -> np.ndarray:
    """Seconds of every request of `clients` clients sending `requests` each, back to back."""

    def client(_: int) -> list[float]:
        return [timed_get(url, headers) for _ in range(requests)]

    with ThreadPoolExecutor(max_workers=clients) as pool:
        return np.array([s for one in pool.map(client, range(clients)) for s in one])


# Where a function's own time is counted, by the first fragment of its file path that matches.
LAYERS = (
    ("charts (plotly)", "/plotly/"),
    ("templates", "/django/template/"),
    ("database", "/psycopg/"),
    ("database", "/django/db/"),
    ("serializers", "/rest_framework/"),
    ("our code", "/apps/"),
    ("our code", "/stackselect_domain/"),
)


def where_time_goes(name: str, path: str, meta: dict[str, str], rounds: int) -> None:
    """One endpoint served `rounds` times in this process under cProfile (the profiler slows
    it, so the shares matter, not the milliseconds): its own time by layer and the five
    functions with the most own time."""
    from django.test import Client

    client = Client()
    if client.get(path, **meta).status_code != 200:  # warm, and check it is the real page
        raise RuntimeError(f"GET {path} did not answer 200 in-process")
    profiler, wall_ms = profile_rounds(lambda _: client.get(path, **meta), rounds)
    print("\n".join(profile_lines(name, profiler, wall_ms, rounds, LAYERS)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=25, help="per client and endpoint")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--database-url", default="", help="a PostgreSQL server to use")
    parser.add_argument("--profile-rounds", type=int, default=5, help="0: no profile")
    args = parser.parse_args()
    if args.clients < 1 or args.requests < 1 or args.workers < 1 or args.profile_rounds < 0:
        sys.exit("--clients, --requests and --workers must be at least 1, --profile-rounds 0")
    with (
        throwaway_database(args.database_url) if args.database_url else nullcontext("") as url,
        private_stack(web_workers=args.workers, database_url=url) as stack,
    ):
        stack.manage("load_curated")
        stack.manage("collectstatic", "--noinput", "-v", "0")  # the pages' manifest storage
        stack.use_django()
        selection_id, token, kept, cookie = selection_with_candidates()
        record_id = evidence_and_decision(selection_id)
        candidates = f"{stack.url}/api/v1/selections/{selection_id}/candidates/"
        auth = {"Authorization": f"Token {token}"}
        browser = {"Cookie": cookie}
        pages = {
            "candidates": (candidates, auth),
            "candidate page": (f"{stack.url}/selections/{selection_id}/candidates/", browser),
            "plan page": (f"{stack.url}/selections/{selection_id}/plan/", browser),
            "evidence page": (f"{stack.url}/evidence/selections/{selection_id}/", browser),
            "decision page": (f"{stack.url}/decisions/{record_id}/", browser),
            "healthz": (f"{stack.url}/healthz", {}),
        }
        # Warm the workers' caches once before measuring. Nothing changes while measuring, so
        # the candidate list's first answer holds the rows of every measured one.
        first = {name: get(url, headers) for name, (url, headers) in pages.items()}
        kept_shown, dropped_shown = page_rows(first["candidates"])
        figures = {
            name: latencies(url, headers, args.clients, args.requests)
            for name, (url, headers) in pages.items()
        }
        print(
            f"{args.clients} clients x {args.requests} requests, gunicorn {args.workers} worker(s)"
        )
        print(
            f"selection: {kept} kept candidates of {MODEL} "
            f"(first page of {kept_shown} kept + {dropped_shown} dropped)"
        )
        p99 = {}
        for name, seconds in figures.items():
            p50, p99[name] = np.percentile(seconds * 1e3, [50, 99])
            print(f"{name:<15} p50 {p50:8.1f} ms   p99 {p99[name]:8.1f} ms")
        print(f"p99 ratio candidates / healthz: {p99['candidates'] / p99['healthz']:.1f}x")
        for name in ("candidate page", "plan page", "evidence page", "decision page"):
            print(f"p99 ratio {name} / healthz: {p99[name] / p99['healthz']:.1f}x")

        if args.profile_rounds:
            host = urlsplit(stack.url).netloc
            for name, (url, headers) in pages.items():
                if name != "healthz":
                    meta = {"HTTP_HOST": host}
                    meta |= {f"HTTP_{key.upper()}": value for key, value in headers.items()}
                    where_time_goes(name, urlsplit(url).path, meta, args.profile_rounds)


if __name__ == "__main__":
    main()
