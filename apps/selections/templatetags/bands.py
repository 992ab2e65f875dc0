"""Fixed wording kept in one place for the pages and the exported record: the error bands, how
a goal's simulated replicas read against their analytic figure, and what ranks a list.

It lives in this tag module so that the candidate rows' cache key, which holds the source of
every tag library the rows load, changes with it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

from django import template

register = template.Library()

OUTSIDE_BAND = (
    "measured on other engines or hardware than this stack's, so no measured bound for it"
)


@register.simple_tag
def outside_band() -> str:
    return OUTSIDE_BAND


# The figure a list is ranked by (Candidate.estimate["ranked_by"], a key the API gives as is).
RANKED_BY_WORDS = {
    "goodput_per_gpu_rps": "SLO goodput per GPU",
    "requests_per_dollar": "requests per dollar at the SLO",
}


@register.filter
def ranked_by_words(key: str | None) -> str:
    """The ranking key in words; a key without words shows as itself rather than vanishing."""
    return RANKED_BY_WORDS.get(key or "goodput_per_gpu_rps", str(key))


def simulated_share_words(share: Mapping[str, Any]) -> str:
    """How the goal's simulated replicas read against their own analytic goodput: why an
    analytic figure reads high, in one wording for the candidate page and the decision record."""
    replicas = share["replicas"]
    return (
        f"the {replicas} replica{'s' if replicas != 1 else ''} simulated for this goal read "
        f"\u00d7{share['low']:.2f} to \u00d7{share['high']:.2f} "
        f"(median \u00d7{share['median']:.2f}) of {'its' if replicas == 1 else 'their'} own "
        "analytic goodput per GPU"
    )


@register.filter(name="simulated_share_words")
def simulated_share_filter(share: Any) -> str:
    """The page's share is the selector's dataclass, the record's its stored mapping."""
    return simulated_share_words(asdict(share) if is_dataclass(share) else share)
