"""What this machine offers as a runner and what it lacks, in words (`status` and `doctor`).

Read from the same probe the server routes by: engines and their versions, GPUs, the models
and draft models in the store, and whether the enrolled broker and server can be reached from
here. A runner host is usually another machine than the server, so a loopback or filesystem
broker is named as a problem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from stackselect_domain.addresses import is_loopback_host

from stackselect_runner.config import Credentials
from stackselect_runner.devices import device_variables
from stackselect_runner.model_store import ModelStore
from stackselect_runner.probe import PYTHON_ENGINES

# Engines a real job can name (the simulated engine ships with the runner and runs only dry runs).
REAL_ENGINES = ("vllm", "sglang", "tensorrt-llm", "lmdeploy", "tgi", "llama-cpp")


@dataclass
class Findings:
    found: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        out = [f"found:    {line}" for line in self.found]
        out += [f"missing:  {line}" for line in self.missing] or ["missing:  nothing"]
        return out


def broker_problem(broker_url: str, server_url: str) -> str | None:
    """Why this runner may not reach its broker, or None: a filesystem broker works only on the
    server's own host, a loopback one only when the server is on this host too."""
    broker = urlsplit(broker_url)
    if broker.scheme == "filesystem":
        return (
            "the broker is filesystem:// (folders on the server's host): only a runner on that "
            "host can use it; give runners a Redis URL (RUNNER_BROKER_URL on the server)"
        )
    if is_loopback_host(broker.hostname) and not is_loopback_host(urlsplit(server_url).hostname):
        return (
            f"the broker is at {broker.hostname}, this machine's own address, but the server is "
            f"at {server_url}: set RUNNER_BROKER_URL on the server to an address runners reach, "
            "or STACKSELECT_RUNNER_BROKER_URL here"
        )
    return None


def _gpus(probe: Mapping[str, Any], findings: Findings) -> None:
    gpus = probe.get("gpus") or []
    if gpus:
        names = sorted({str(gpu.get("name")) for gpu in gpus})
        variable = "/".join(device_variables(probe))
        findings.found.append(
            f"{len(gpus)} GPU(s): {', '.join(names)} (jobs pinned with {variable})"
        )
        for key, label in (("driver_version", "driver"), ("cuda_version", "CUDA"),
                           ("rocm_version", "ROCm")):  # fmt: skip
            if probe.get(key):
                findings.found.append(f"{label} {probe[key]}")
    elif probe.get("simulated"):
        findings.found.append(
            f"no GPU; simulating {probe.get('gpu_count')} x {probe.get('simulated_accelerator')} "
            "(dry runs only)"
        )
    else:
        findings.missing.append(
            "GPUs: neither nvidia-smi nor rocm-smi answered; install the driver, or enroll with "
            "--simulate-accelerator for dry runs"
        )


def _engines(probe: Mapping[str, Any], findings: Findings) -> None:
    engines = dict(probe.get("engines") or {})
    real = {name: engines[name] for name in REAL_ENGINES if name in engines}
    for name, version in sorted(engines.items()):
        findings.found.append(f"engine {name} {version}")
    if not real:
        python = ", ".join(sorted(set(PYTHON_ENGINES) - {"llama-cpp-python"}))
        findings.missing.append(
            f"a real engine: none of {python} is installed in this Python, and neither "
            "llama-server nor text-generation-launcher is on PATH; measured plans need one"
        )


def _models(probe: Mapping[str, Any], store: ModelStore, findings: Findings) -> None:
    for slug, path in sorted(store.models.items()):
        findings.found.append(f"model {slug} -> {path}")
    for line in store.draft_lines():
        findings.found.append(f"draft model {line}")
    for draft, models in store.draft_models().items():
        for model in models:
            if model not in store.models:
                findings.missing.append(
                    f"model {model}, which draft model {draft} drafts for: a job speculates "
                    f"with the draft only on its model; `stackselect-runner models add {model} "
                    "/path/to/checkpoint`"
                )
    has_real_engine = any(name in (probe.get("engines") or {}) for name in REAL_ENGINES)
    if has_real_engine and not store.models:
        findings.missing.append(
            f"a model in the store {store.path}: measured jobs fail until you map their catalog "
            "model, e.g. `stackselect-runner models add llama-3.1-8b /models/Llama-3.1-8B`"
        )
    elif not store.models:
        findings.found.append(f"model store {store.path}: empty (dry runs need no model)")


def diagnose(
    probe: Mapping[str, Any],
    credentials: Credentials | None,
    server_error: str | None,
    store: ModelStore,
) -> Findings:
    """`server_error` is why the server did not answer (None when it did, or not asked)."""
    findings = Findings()
    _gpus(probe, findings)
    _engines(probe, findings)
    _models(probe, store, findings)
    if credentials is None:
        findings.missing.append(
            "enrollment: no credentials here; run `stackselect-runner enroll --url ... "
            "--token ... --name ...` with a token from the server's Enroll page"
        )
        return findings
    findings.found.append(f"enrolled as runner {credentials.runner_id} of {credentials.url}")
    if server_error:
        findings.missing.append(f"the server: {server_error}")
    else:
        findings.found.append("the server answers and accepts this runner's credential")
    problem = broker_problem(credentials.broker_url, credentials.url)
    if problem:
        findings.missing.append(f"a reachable broker: {problem}")
    return findings
