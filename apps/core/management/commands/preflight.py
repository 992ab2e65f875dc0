from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.core.selectors import broker_check, database_check


class Command(BaseCommand):
    help = "Say plainly whether the database and the broker are reachable (used by `make test`)."

    def handle(self, *args, **options) -> None:
        database = settings.DATABASES["default"]
        where = {
            "database": f"{database['ENGINE'].rsplit('.', 1)[-1]} {database.get('HOST') or ''}"
            f"{':' + str(database['PORT']) if database.get('PORT') else ''}/{database['NAME']}",
            "broker": settings.CELERY_BROKER_URL,
        }
        problems = [
            f"  - {check.name} at {where[check.name]} is not reachable: {check.detail}"
            for check in (database_check(), broker_check())
            if not check.ok
        ]
        if problems:
            raise CommandError(
                "StackSelect cannot reach its services:\n" + "\n".join(problems) + "\n"
                "Start them (README: 'Services for the tests') or point DATABASE_URL / "
                "CELERY_BROKER_URL at running ones."
            )
        self.stdout.write("database and broker reachable.")
