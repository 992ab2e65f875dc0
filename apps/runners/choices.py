"""Vocabularies of the runner fleet: secret kinds and the states a runner is shown in."""

from django.db import models

ENROLLMENT_TOKEN_KIND = "sse"
CREDENTIAL_KIND = "ssr"


class RunnerState(models.TextChoices):
    """Derived at read time from the heartbeat age and the current attempt; never stored."""

    ONLINE = "online", "Online"
    BUSY = "busy", "Busy"
    OFFLINE = "offline", "Offline"
    REVOKED = "revoked", "Revoked"
