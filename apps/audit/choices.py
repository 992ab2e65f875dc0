from django.db import models


class ActorType(models.TextChoices):
    USER = "user", "User"
    RUNNER = "runner", "Runner"
    SYSTEM = "system", "System"
