from django.core.management.base import BaseCommand, CommandError

from apps.audit.checkpoints import CheckpointFileError, checkpoint_path
from apps.audit.verify import verify_and_checkpoint


class Command(BaseCommand):
    help = (
        "Walk the audit hash chain against the checkpoints outside the database; exit non-zero "
        "naming the first broken event, else append a checkpoint of the head."
    )

    def handle(self, *args, **options) -> None:
        try:
            result = verify_and_checkpoint()
        except CheckpointFileError as exc:
            raise CommandError(f"audit checkpoints unreadable: {exc}") from exc
        if result.broken is not None:
            found = result.broken
            raise CommandError(f"audit chain broken at event {found.event_id}: {found.reason}")
        compared = result.compared_with
        against = (
            f"matches the checkpoint of {compared.at} (event {compared.last_id})"
            if compared
            else "no earlier checkpoint to compare with"
        )
        written = f"; checkpoint appended to {checkpoint_path()}" if result.written else ""
        self.stdout.write(
            f"audit chain intact: {result.verified} events verified; {against}{written}"
        )
