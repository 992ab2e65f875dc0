"""The definitions printed on the evidence page and returned by the API (one wording)."""

DEFINITIONS: dict[str, str] = {
    "TTFT": "Time to first token: from sending the request to the first streamed token.",
    "TPOT": "Time per output token = (E2E - TTFT) / (output tokens - 1); missing for outputs "
    "of one token.",
    "ITL": "Inter-token latency: every gap between consecutive streamed tokens, pooled over "
    "the completed requests.",
    "E2E": "From sending the request to the end of the response.",
    "Percentiles": "Linear interpolation between closest ranks (numpy's default) over the "
    "completed requests.",
    "SLO attainment": "Share of all requests (failed ones included) that met every latency "
    "target of the selection's SLO.",
    "Goodput": "Requests per second that met every target: attainment x requests / duration.",
    "Tokens/s per GPU": "Output tokens of completed requests per second, divided by the GPUs "
    "of the stack.",
    "Tokens/s per user": "Mean over completed requests of 1 / TPOT.",
    "Max rate": "Highest offered rate whose attainment meets the SLO's target, interpolated "
    "between the last passing and the first failing load point.",
    "not_comparable": "The identity differs outside the stack under test (model, workload, "
    "arrival, measurement, harness, or simulated against real); the fields are named.",
    "missing": "Not measured. Never shown or counted as 0.",
    "better / worse": "Only with two or more runs per candidate: 95% bootstrap intervals of "
    "the mean that do not overlap. Otherwise indistinguishable or missing.",
}
