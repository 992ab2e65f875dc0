"""One canonical JSON form: key order and spacing never change a hash; non-finite numbers do
not hash at all."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pytest
from stackselect_domain.canonical import canonical_hash, canonical_json


def test_key_order_and_spacing_do_not_change_the_hash() -> None:
    assert canonical_hash({"b": [1, 2], "a": "é"}) == canonical_hash({"a": "é", "b": [1, 2]})
    assert canonical_json({"b": 1, "a": "é"}) == '{"a":"é","b":1}'


def test_the_prefix_is_hashed_before_the_json() -> None:
    expected = hashlib.sha256(b'prev{"a":1}').hexdigest()
    assert canonical_hash({"a": 1}, prefix="prev") == expected


def test_dates_become_strings_and_non_finite_numbers_are_refused() -> None:
    moment = datetime(2026, 12, 1, tzinfo=UTC)
    assert canonical_json({"at": moment}) == '{"at":"2026-12-01 00:00:00+00:00"}'
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})
