import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.accounts.choices import Role
from apps.accounts.models import Membership, Team
from apps.accounts.services import membership_ensure, team_create
from apps.audit.services import Actor

DEMO_USERNAME = "demo"
DEMO_TEAM_SLUG = "demo"


def password_file(username: str) -> Path:
    """Where the generated password of a demo user is kept (the demo user's name predates it)."""
    name = "demo_password" if username == DEMO_USERNAME else f"{username}_password"
    return settings.VAR_DIR / name


def _user_once(username: str, *, is_staff: bool):
    """The user, created with a generated password (written to var/) when missing."""
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        password = secrets.token_urlsafe(12)
        user = get_user_model().objects.create_user(username, password=password, is_staff=is_staff)
        password_file(username).write_text(password)
        password_file(username).chmod(0o600)
    return user


def _password(username: str) -> str:
    path = password_file(username)
    return path.read_text().strip() if path.exists() else "(set before; see var/)"


class Command(BaseCommand):
    help = "Create the demo team and its admin user once (for `make run`), then print the login."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/")
        parser.add_argument(
            "--approver",
            metavar="USERNAME",
            help="also create this user once, with the approver role in the demo team",
        )

    def handle(self, *args, url: str, approver: str | None, **options) -> None:
        actor = Actor.system("bootstrap_demo")
        with transaction.atomic():
            user = _user_once(DEMO_USERNAME, is_staff=True)
            team = Team.objects.filter(slug=DEMO_TEAM_SLUG).first()
            if team is None:
                team = team_create(actor=actor, name="Demo team", slug=DEMO_TEAM_SLUG)
                membership_ensure(actor=actor, team=team, user=user, role=Role.ADMIN)
            if approver:
                approving = _user_once(approver, is_staff=False)
                if not Membership.objects.filter(team=team, user=approving).exists():
                    membership_ensure(actor=actor, team=team, user=approving, role=Role.APPROVER)
        self.stdout.write(
            f"\n  StackSelect is starting at {url}\n"
            f"  Log in as  {DEMO_USERNAME}  /  {_password(DEMO_USERNAME)}\n"
            "  (a staff user, so it may also curate the catalog)\n"
        )
        if approver:
            self.stdout.write(f"  Approver:  {approver}  /  {_password(approver)}\n")
