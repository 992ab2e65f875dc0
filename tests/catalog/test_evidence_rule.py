"""The maturity-evidence rule on plain values (no database)."""

from datetime import date

from apps.catalog.maturity_rule import CellEvidence, maturity_change_errors

OLD = CellEvidence("beta", "https://example.org/a", date(2026, 1, 1))


def test_a_change_that_keeps_the_maturity_needs_no_new_evidence():
    same = CellEvidence("beta", "https://example.org/a", date(2026, 1, 1))
    assert maturity_change_errors(before=OLD, after=same) == {}


def test_a_maturity_change_with_the_same_url_and_date_is_refused():
    errors = maturity_change_errors(
        before=OLD, after=CellEvidence("stable", OLD.evidence_url, OLD.as_of)
    )
    assert "evidence_url" in errors
    assert "2026-01-01" in errors["evidence_url"]


def test_a_maturity_change_with_an_earlier_date_and_same_url_is_refused():
    after = CellEvidence("stable", OLD.evidence_url, date(2025, 12, 1))
    assert "evidence_url" in maturity_change_errors(before=OLD, after=after)


def test_a_later_as_of_counts_as_new_evidence():
    after = CellEvidence("stable", OLD.evidence_url, date(2026, 2, 1))
    assert maturity_change_errors(before=OLD, after=after) == {}


def test_a_new_url_counts_as_new_evidence():
    after = CellEvidence("stable", "https://example.org/release-notes", OLD.as_of)
    assert maturity_change_errors(before=OLD, after=after) == {}


def test_a_maturity_change_without_url_or_date_names_both_fields():
    errors = maturity_change_errors(before=OLD, after=CellEvidence("stable", "", None))
    assert set(errors) == {"evidence_url", "as_of"}
