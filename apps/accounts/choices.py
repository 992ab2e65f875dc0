"""Team roles, ordered: each role can do what the ones before it can."""

from django.db import models


class Role(models.TextChoices):
    VIEWER = "viewer", "Viewer"
    ENGINEER = "engineer", "Engineer"
    APPROVER = "approver", "Approver"
    ADMIN = "admin", "Admin"


ROLE_ORDER: tuple[str, ...] = (Role.VIEWER, Role.ENGINEER, Role.APPROVER, Role.ADMIN)


def role_at_least(role: str, minimum: str) -> bool:
    return ROLE_ORDER.index(role) >= ROLE_ORDER.index(minimum)
