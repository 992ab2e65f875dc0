"""Enrollment tokens and enrolled runners; secrets are kept only as sha256 digests."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class EnrollmentToken(models.Model):
    """Single use and expiring: trading it for a runner credential sets `used_at` and `runner`."""

    team = models.ForeignKey(
        "accounts.Team", on_delete=models.CASCADE, related_name="enrollment_tokens"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    runner = models.OneToOneField(
        "runners.Runner",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="enrollment_token",
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"enrollment token {self.prefix}…"


class Runner(models.Model):
    team = models.ForeignKey("accounts.Team", on_delete=models.CASCADE, related_name="runners")
    name = models.CharField(max_length=80)
    credential_prefix = models.CharField(max_length=16, unique=True)
    credential_digest = models.CharField(max_length=64)
    enrolled_at = models.DateTimeField(auto_now_add=True)
    rotated_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_heartbeat_at = models.DateTimeField(null=True, blank=True)
    probed_at = models.DateTimeField(null=True, blank=True)
    probe = models.JSONField(default=dict, blank=True)
    labels = models.JSONField(
        default=dict, blank=True, help_text="accelerator, gpu_count, engines, simulated"
    )
    gpu_count = models.PositiveIntegerField(default=0)
    engines = models.JSONField(default=dict, blank=True, help_text="engine slug -> version")
    simulated = models.BooleanField(default=False)

    class Meta:
        ordering = ["team", "name", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["team", "name"],
                condition=models.Q(revoked_at__isnull=True),
                name="one_active_runner_name_per_team",
            )
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def accelerator(self) -> str | None:
        return self.labels.get("accelerator")
