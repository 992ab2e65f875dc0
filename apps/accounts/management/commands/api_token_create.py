from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.choices import Role
from apps.accounts.models import Membership, Team
from apps.accounts.services import api_token_create, membership_ensure, team_create
from apps.audit.services import Actor


class Command(BaseCommand):
    help = (
        "Create an API token for USERNAME and print it as the last line. With --team (and --role), "
        "the team and membership are created when missing."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--team", help="team slug; default: the user's only team")
        parser.add_argument("--role", choices=Role.values, help="role to grant in --team")
        parser.add_argument("--name", default="automation", help="a label for the token")

    def handle(
        self, *args, username: str, team: str | None, role: str | None, name: str, **options
    ) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user is called {username!r}.")
        actor = Actor.system("api_token_create")
        try:
            chosen = self._team(user, team, role, actor)
            _, plaintext = api_token_create(actor=actor, user=user, team=chosen, name=name)
        except ValidationError as error:
            raise CommandError("; ".join(error.messages)) from error
        self.stderr.write(f"token for {username} in team {chosen.slug} (shown once):")
        self.stdout.write(plaintext)

    def _team(self, user, slug: str | None, role: str | None, actor: Actor) -> Team:
        if slug is None:
            if role:
                raise CommandError("--role needs --team.")
            teams = [m.team for m in Membership.objects.filter(user=user).select_related("team")]
            if len(teams) != 1:
                raise CommandError(
                    f"{user.username} is in {len(teams)} teams; name one with --team."
                )
            return teams[0]
        team = Team.objects.filter(slug=slug).first() or team_create(
            actor=actor, name=slug, slug=slug
        )
        if role or not Membership.objects.filter(user=user, team=team).exists():
            membership_ensure(actor=actor, team=team, user=user, role=role or Role.ENGINEER)
        return team
