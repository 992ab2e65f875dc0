import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.services import membership_ensure, team_create
from apps.audit.services import Actor

DEMO_USERNAME = "demo"
DEMO_TEAM_SLUG = "demo"


class Command(BaseCommand):
    help = "Create the demo team and its admin user once (for `make run`), then print the login."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--url", default="http://127.0.0.1:8000/")

    def handle(self, *args, url: str, **options) -> None:
        password_file = settings.VAR_DIR / "demo_password"
        with transaction.atomic():
            user = get_user_model().objects.filter(username=DEMO_USERNAME).first()
            if user is None:
                password = secrets.token_urlsafe(12)
                user = get_user_model().objects.create_user(
                    DEMO_USERNAME, password=password, is_staff=True
                )
                password_file.write_text(password)
                password_file.chmod(0o600)
            actor = Actor.system("bootstrap_demo")
            team = Team.objects.filter(slug=DEMO_TEAM_SLUG).first()
            if team is None:
                team = team_create(actor=actor, name="Demo team", slug=DEMO_TEAM_SLUG)
                membership_ensure(actor=actor, team=team, user=user, role=Role.ADMIN)
        password = (
            password_file.read_text().strip()
            if password_file.exists()
            else "(set before; see var/)"
        )
        self.stdout.write(
            f"\n  StackSelect is starting at {url}\n"
            f"  Log in as  {DEMO_USERNAME}  /  {password}\n"
            "  (a staff user, so it may also curate the catalog)\n"
        )
