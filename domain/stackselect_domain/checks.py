"""Input checks shared by the job spec, the step cost, the SLO and the simulated engine.

Each raises ValueError naming the field, so bad input reads as a clear message, not a crash.
"""

from __future__ import annotations

from typing import Any

# One wording wherever a NUL character is refused (PostgreSQL text cannot hold one): the API's
# body and URL checks, the catalog import and the evidence schema.
NUL_REFUSED = "NUL characters are not accepted"


def require_int(value: Any, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def require_number(value: Any, name: str, minimum: float, *, strict: bool = False) -> float:
    """A real number >= minimum (> minimum when strict)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if number < minimum or (strict and number == minimum):
        relation = ">" if strict else ">="
        raise ValueError(f"{name} must be {relation} {minimum}, got {value}")
    return number
