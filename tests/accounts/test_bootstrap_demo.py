"""bootstrap_demo: the demo team, its admin and (for `make demo`) a second user who approves."""

from io import StringIO

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from apps.accounts.models import Membership

pytestmark = pytest.mark.django_db


def bootstrap(*args: str) -> str:
    out = StringIO()
    call_command("bootstrap_demo", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def var_dir(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return tmp_path


def test_the_approver_joins_the_demo_team_with_the_approver_role_and_can_log_in(var_dir):
    banner = bootstrap("--approver", "carol")

    password = (var_dir / "carol_password").read_text().strip()
    assert f"Approver:  carol  /  {password}" in banner
    assert authenticate(username="carol", password=password) is not None
    roles = dict(Membership.objects.values_list("user__username", "role"))
    assert roles == {"demo": "admin", "carol": "approver"}


def test_running_it_again_keeps_the_users_and_their_passwords(var_dir):
    bootstrap("--approver", "carol")
    first = (var_dir / "carol_password").read_text()

    banner = bootstrap("--approver", "carol")

    assert (var_dir / "carol_password").read_text() == first
    assert f"carol  /  {first.strip()}" in banner
    assert Membership.objects.filter(user__username="carol").count() == 1


def test_without_the_flag_only_the_demo_admin_is_made(var_dir):
    banner = bootstrap()

    assert "Approver" not in banner
    assert list(Membership.objects.values_list("user__username", flat=True)) == ["demo"]
    assert (var_dir / "demo_password").exists()
