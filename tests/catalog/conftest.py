import pytest
from django.core.management import call_command

from apps.catalog.models import Capability
from tests.catalog.factories import make_cell, make_engine, make_feature, make_release


@pytest.fixture
def catalog(db) -> None:
    """The whole curated catalog, loaded the way `make run` loads it."""
    call_command("catalog_load", verbosity=0)


@pytest.fixture
def cell(db) -> Capability:
    release = make_release(make_engine())
    return make_cell(release, make_feature(), note="works with hashed blocks")
