"""A bulk catalog change evaluates the decision records once, not once per row."""

import pytest

from apps.audit.services import Actor
from apps.catalog.loading import catalog_load
from apps.decisions.triggers import CATALOG_TASK

pytestmark = pytest.mark.django_db


def test_loading_the_whole_catalog_sends_one_evaluation_with_every_changed_id(
    sent_tasks, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        report = catalog_load(actor=Actor.system("test"))
    catalog_sends = [kwargs for name, kwargs in sent_tasks if name == CATALOG_TASK]
    assert len(catalog_sends) == 1
    assert len(catalog_sends[0]["capability_ids"]) == report.created["capability"]
    assert catalog_sends[0]["model_ids"] and catalog_sends[0]["release_ids"]


def test_loading_it_again_changes_nothing_and_sends_nothing(
    sent_tasks, django_capture_on_commit_callbacks
):
    catalog_load(actor=Actor.system("test"))
    with django_capture_on_commit_callbacks(execute=True):
        catalog_load(actor=Actor.system("test"))
    assert [name for name, _ in sent_tasks] == []
