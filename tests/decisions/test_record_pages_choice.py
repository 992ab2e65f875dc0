"""The new-record form makes the person choose the selection: none is chosen for them."""

import pytest

from tests.conftest import logged_in
from tests.decisions.factories import decision_catalog, two_candidate_selection

pytestmark = pytest.mark.django_db


def test_the_new_record_form_chooses_no_selection_by_default(alice, acme):
    two_candidate_selection(acme, alice, decision_catalog())
    form = logged_in(alice).get("/decisions/").context["new_form"]
    choices = list(form.fields["selection"].choices)
    assert choices[0][0] == "" and str(choices[0][1]) == "Choose a selection"
    assert form["selection"].value() is None
