import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

pytestmark = pytest.mark.django_db


@override_settings(CELERY_BROKER_URL="redis://127.0.0.1:1/0", CELERY_BROKER_TRANSPORT_OPTIONS={})
def test_preflight_says_plainly_which_service_is_missing():
    with pytest.raises(CommandError, match=r"broker at redis://127.0.0.1:1/0 is not reachable"):
        call_command("preflight")
