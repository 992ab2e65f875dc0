"""The agent commands of `stackselect-runner`: enroll, start, status and doctor."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from urllib.parse import urlsplit, urlunsplit

from stackselect_runner.api import (
    NO_RETRY,
    ApiError,
    ApiUnreachable,
    CredentialRejected,
    RunnerApi,
)
from stackselect_runner.config import (
    ConfigError,
    Credentials,
    RunnerSettings,
    SimulatedHardware,
    config_path,
    load_credentials,
    save_credentials,
)
from stackselect_runner.devices import DevicePool, device_variables
from stackselect_runner.doctor import diagnose
from stackselect_runner.heartbeat import Heartbeat
from stackselect_runner.jobrun import JobRunner
from stackselect_runner.model_store import ModelStore
from stackselect_runner.reprobe import ProbeWatch, QueueSwitch, runner_probe
from stackselect_runner.worker import build_worker_app, worker_argv

# A bad, used or expired enrollment token (the server answers 401 or 403).
REFUSED = frozenset({401, 403})


class CommandError(Exception):
    """Ends the command with this message and exit status 1."""


def _simulated(args: argparse.Namespace, settings: RunnerSettings) -> SimulatedHardware | None:
    if args.simulate_accelerator:
        try:
            return SimulatedHardware(args.simulate_accelerator, args.simulate_gpus)
        except ValueError as exc:
            raise CommandError(f"--simulate-gpus: {exc}") from None
    return settings.simulated


def _settings() -> RunnerSettings:
    try:
        return RunnerSettings.from_env()
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


def _model_store(settings: RunnerSettings) -> ModelStore:
    try:
        return ModelStore.of(settings)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


def _probe(settings: RunnerSettings, simulated: SimulatedHardware | None) -> dict:
    try:
        return runner_probe(settings, simulated)
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


def _credentials() -> Credentials:
    try:
        return load_credentials(config_path())
    except ConfigError as exc:
        raise CommandError(str(exc)) from None


def masked_url(url: str) -> str:
    """The broker URL without its password, fit to print."""
    parts = urlsplit(url)
    if not parts.password:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":****@")
    return urlunsplit(parts._replace(netloc=netloc))


def enroll(args: argparse.Namespace) -> None:
    settings = _settings()
    simulated = _simulated(args, settings)
    try:
        api = RunnerApi(args.url)
        answer = api.enroll(args.token, args.name, _probe(settings, simulated))
        credentials = Credentials.from_enrollment(api.base_url, answer, simulated)
    except ApiError as exc:
        verdict = "refused" if exc.status in REFUSED else "failed"
        raise CommandError(f"enrollment {verdict}: {exc.detail}") from None
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    path = config_path()
    save_credentials(credentials, path)
    print(f"enrolled runner {credentials.runner_id} ({args.name}) with {credentials.url}")
    print(f"queues: {', '.join(credentials.queues) or '(none yet)'}")
    print(f"credentials saved to {path}")


def start(args: argparse.Namespace) -> None:
    credentials = _credentials()
    settings = _settings()
    api = RunnerApi(credentials.url, credentials.credential)
    simulated = settings.simulated or credentials.simulated
    probe = _probe(settings, simulated)
    try:
        answer = api.send_probe(probe)
    except CredentialRejected as exc:
        raise CommandError(f"credential rejected (revoked or rotated?): {exc.detail}") from None
    except ApiError as exc:
        raise CommandError(f"cannot reach {credentials.url}: {exc.describe()}") from None
    queues = answer.get("queues") or list(credentials.queues)
    if not queues:
        raise CommandError("the server gave this runner no queues to consume")
    logging.basicConfig(
        level=args.loglevel, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    interval_s = answer.get("heartbeat_interval_s") or credentials.heartbeat_interval_s
    heartbeat = Heartbeat(api, float(interval_s))
    devices = DevicePool(int(probe["gpu_count"]), device_variables(probe))
    job_runner = JobRunner(api, settings, heartbeat=heartbeat, terminal=sys.stderr, devices=devices)
    switch = QueueSwitch(queues)
    app = build_worker_app(credentials, settings, job_runner, devices.slots, switch)
    watch = ProbeWatch(
        api,
        lambda: runner_probe(settings, simulated),
        switch,
        settings.reprobe_interval_s,
        sent=probe,
        server_queues=lambda: (heartbeat.last_answer or {}).get("queues"),
    )
    print(
        f"runner {credentials.runner_id}: consuming {', '.join(queues)} "
        f"({devices.slots} job slot(s), {devices.gpu_count} GPU(s))",
        flush=True,
    )
    heartbeat.start()
    watch.start()
    try:
        app.worker_main(worker_argv(credentials.runner_id, queues, args.loglevel, devices.slots))
    finally:
        watch.stop()
        heartbeat.stop()


def status(args: argparse.Namespace) -> None:
    credentials = _credentials()
    simulated = credentials.simulated
    print(f"config:      {config_path()}")
    print(f"server:      {credentials.url}")
    print(f"runner id:   {credentials.runner_id}")
    print(f"credential:  {credentials.masked_credential()}")
    print(f"broker:      {masked_url(credentials.broker_url)}")
    if simulated is not None:
        print(f"simulating:  {simulated.gpu_count} x {simulated.accelerator}")
    answer, error = _server_view(credentials)
    print(f"queues:      {_queues_line(credentials, answer)}")
    if error:
        raise CommandError(error)
    print("reachable:   yes")
    print(f"server view: {json.dumps(answer, sort_keys=True)}")
    settings = _settings()
    probe = _probe(settings, settings.simulated or simulated)
    for line in diagnose(probe, credentials, None, _model_store(settings)).lines():
        print(line)


def _queues_line(credentials: Credentials, answer: dict | None) -> str:
    """The queues the server gives this runner now (it re-derives them at every probe, so
    the list saved at enrollment goes stale when engines or models change); the saved list,
    said to be so, only when the server could not be asked."""
    if answer is not None and isinstance(answer.get("queues"), list):
        return f"{', '.join(answer['queues']) or '(none)'} (the server's current list)"
    why = "the server could not be asked" if answer is None else "the server's answer has none"
    return f"{', '.join(credentials.queues) or '(none)'} (saved at enrollment, may be stale: {why})"


def _server_view(credentials: Credentials) -> tuple[dict | None, str | None]:
    """The server's answer to an idle heartbeat, or why there is none."""
    api = RunnerApi(credentials.url, credentials.credential, timeout_s=10)
    try:
        return api.heartbeat([], retry=NO_RETRY), None
    except CredentialRejected as exc:
        return None, f"server reachable, credential rejected: {exc.detail}"
    except ApiUnreachable as exc:
        return None, f"server unreachable: {exc.describe()}"
    except ApiError as exc:
        return None, f"server reachable, heartbeat refused: {exc.describe()}"


def doctor(args: argparse.Namespace) -> None:
    """Say what this machine has and lacks as a runner; exit 1 when something is missing."""
    settings = _settings()
    path = config_path()
    credentials = _credentials() if path.exists() else None
    error = _server_view(credentials)[1] if credentials else None
    simulated = settings.simulated or (credentials.simulated if credentials else None)
    store = _model_store(settings)
    findings = diagnose(_probe(settings, simulated), credentials, error, store)
    print(f"config:   {path}{'' if credentials else ' (absent)'}")
    for line in findings.lines():
        print(line)
    if findings.missing:
        raise CommandError(f"{len(findings.missing)} thing(s) missing; see above")


def models(args: argparse.Namespace) -> None:
    """List, add or remove the model store's entries (catalog slug -> local checkpoint, and
    draft models with the models they draft for)."""
    store = _model_store(_settings())
    try:
        if args.action == "add":
            path = store.add(args.slug, args.checkpoint, args.draft_for)
            draft = f" (draft for {', '.join(args.draft_for)})" if args.draft_for else ""
            print(f"{args.slug} -> {path}{draft}")
            store.save()
        elif args.action == "remove":
            store.remove(args.slug)
            store.save()
            print(f"removed {args.slug}")
    except ConfigError as exc:
        raise CommandError(str(exc)) from None
    if args.action == "list":
        print(f"model store: {store.path}")
        for line in store.lines() or ["(empty)"]:
            print(line)


def _add_models_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "models", help="the model store: which local checkpoint serves each catalog model"
    )
    actions = parser.add_subparsers(dest="action", required=True)
    actions.add_parser("list", help="the models in the store")
    add = actions.add_parser("add", help="map a catalog model slug to a local checkpoint")
    add.add_argument("slug", help="the catalog model's slug, e.g. llama-3.1-8b")
    add.add_argument("checkpoint", help="a checkpoint folder or file (a .gguf for llama.cpp)")
    add.add_argument(
        "--draft-for",
        action="append",
        default=[],
        metavar="MODEL",
        help="store it as a speculative draft model of this catalog model (repeatable); the "
        "slug is then the draft name plans give, e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
    )
    remove = actions.add_parser("remove", help="forget a model")
    remove.add_argument("slug")
    parser.set_defaults(handler=models)


def add_agent_commands(commands: argparse._SubParsersAction) -> None:
    enroll_parser = commands.add_parser("enroll", help="trade an enrollment token for a credential")
    enroll_parser.add_argument(
        "--url", required=True, help="StackSelect URL, e.g. http://host:8000"
    )
    enroll_parser.add_argument("--token", required=True, help="enrollment token (sse_...)")
    enroll_parser.add_argument("--name", required=True, help="runner name shown on the page")
    enroll_parser.add_argument(
        "--simulate-accelerator",
        help="catalog slug of the hardware the simulated engine stands for (e.g. h100-sxm)",
    )
    enroll_parser.add_argument("--simulate-gpus", type=int, default=1, help="simulated GPU count")
    enroll_parser.set_defaults(handler=enroll)
    start_parser = commands.add_parser("start", help="probe, then run jobs from the queues")
    start_parser.add_argument("--loglevel", default="INFO", choices=["DEBUG", "INFO", "WARNING"])
    start_parser.set_defaults(handler=start)
    status_parser = commands.add_parser("status", help="saved config and the server's view")
    status_parser.set_defaults(handler=status)
    doctor_parser = commands.add_parser(
        "doctor", help="what this machine has and lacks as a runner (exit 1 if anything)"
    )
    doctor_parser.set_defaults(handler=doctor)
    _add_models_command(commands)
