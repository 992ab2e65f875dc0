from django.core.management.base import BaseCommand, CommandError

from apps.audit.models import AuditEvent
from apps.audit.selectors import audit_chain_first_break


class Command(BaseCommand):
    help = "Walk the audit hash chain; exit non-zero naming the first broken event."

    def handle(self, *args, **options) -> None:
        found = audit_chain_first_break()
        if found is not None:
            raise CommandError(f"audit chain broken at event {found.event_id}: {found.reason}")
        self.stdout.write(f"audit chain intact: {AuditEvent.objects.count()} events verified")
