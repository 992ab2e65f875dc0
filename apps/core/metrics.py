"""A small Prometheus text-format registry.

Request counters live in the serving process (each gunicorn worker reports its own, as the
Prometheus client does without multiprocess mode); gauges that describe shared state (jobs by
state, runners online) are read from the database at scrape time by registered collectors.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Iterable

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

GaugeSample = tuple[str, str, dict[str, str], float]  # name, help, labels, value
Collector = Callable[[], Iterable[GaugeSample]]

_lock = threading.Lock()
_request_counts: dict[tuple[str, str, str], int] = defaultdict(int)
_latency_buckets: dict[str, list[int]] = defaultdict(lambda: [0] * len(LATENCY_BUCKETS))
_latency_sum: dict[str, float] = defaultdict(float)
_latency_count: dict[str, int] = defaultdict(int)
_collectors: list[Collector] = []


def observe_request(*, view: str, method: str, status: int, seconds: float) -> None:
    with _lock:
        _request_counts[(view, method, str(status))] += 1
        buckets = _latency_buckets[view]
        for i, bound in enumerate(LATENCY_BUCKETS):
            if seconds <= bound:
                buckets[i] += 1
        _latency_sum[view] += seconds
        _latency_count[view] += 1


def register_collector(collector: Collector) -> None:
    """Add a scrape-time gauge source; apps call this from AppConfig.ready()."""
    if collector not in _collectors:
        _collectors.append(collector)


def _labels(labels: dict[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(
        f'{key}="{str(value).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for key, value in sorted(labels.items())
    )
    return "{" + inner + "}"


def render() -> str:
    lines = [
        "# HELP stackselect_http_requests_total HTTP requests by view, method and status.",
        "# TYPE stackselect_http_requests_total counter",
    ]
    with _lock:
        for (view, method, status), count in sorted(_request_counts.items()):
            labels = _labels({"view": view, "method": method, "status": status})
            lines.append(f"stackselect_http_requests_total{labels} {count}")
        lines += [
            "# HELP stackselect_http_request_duration_seconds Request latency by view.",
            "# TYPE stackselect_http_request_duration_seconds histogram",
        ]
        for view in sorted(_latency_count):
            for bound, count in zip(LATENCY_BUCKETS, _latency_buckets[view], strict=True):
                labels = _labels({"view": view, "le": str(bound)})
                lines.append(f"stackselect_http_request_duration_seconds_bucket{labels} {count}")
            inf_labels = _labels({"view": view, "le": "+Inf"})
            total = _latency_count[view]
            lines.append(f"stackselect_http_request_duration_seconds_bucket{inf_labels} {total}")
            lines.append(
                f"stackselect_http_request_duration_seconds_sum{_labels({'view': view})} "
                f"{_latency_sum[view]:.6f}"
            )
            lines.append(
                f"stackselect_http_request_duration_seconds_count{_labels({'view': view})} "
                f"{_latency_count[view]}"
            )
    described: set[str] = set()
    for collector in list(_collectors):
        for name, help_text, labels, value in collector():
            if name not in described:
                lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
                described.add(name)
            lines.append(f"{name}{_labels(labels)} {value}")
    return "\n".join(lines) + "\n"
