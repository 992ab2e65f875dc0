"""The append-only, hash-chained audit trail.

The database itself refuses UPDATE, DELETE and TRUNCATE on this table (migrations 0002, 0003:
TRUNCATE only by the owner), so the app's role can only add rows; each row's hash covers the
previous row's hash, and checkpoints of the head kept outside the database
(apps/audit/checkpoints.py) pin the chain, so ``manage.py audit_verify`` finds an edit, deletion,
renumbering or rewrite made behind the triggers' back, even by the table's owner.

Note for future migrations: SQLite rebuilds a table on most ALTERs and drops its triggers;
re-create them in the same migration.
"""

from __future__ import annotations

from django.db import models

from apps.audit.choices import ActorType


class AuditEvent(models.Model):
    occurred_at = models.DateTimeField(db_index=True)
    actor_type = models.CharField(max_length=16, choices=ActorType.choices)
    actor_id = models.CharField(max_length=64, blank=True)
    actor_name = models.CharField(max_length=150, blank=True)
    team = models.ForeignKey(
        "accounts.Team", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    request_id = models.CharField(max_length=128, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=64, db_index=True)
    object_id = models.CharField(max_length=64, blank=True, db_index=True)
    object_repr = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    message = models.TextField(blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["team", "-id"], name="audit_team_recent")]

    def __str__(self) -> str:
        return f"{self.action} {self.object_type}#{self.object_id} by {self.actor_name}"
