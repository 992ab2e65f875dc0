"""Writes for the runner fleet: enrollment tokens, enrollment, probes, heartbeats, rotation.

Each service is one transaction with its audit event. Heartbeats are audited only when a runner
comes back online: one row every ten seconds per runner would bury the trail.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone

from apps.accounts.choices import Role
from apps.accounts.models import Team
from apps.accounts.secrets import issue_secret
from apps.accounts.services import require_role
from apps.audit.services import Actor, audit_record
from apps.audit.snapshots import snapshot
from apps.runners.choices import CREDENTIAL_KIND, ENROLLMENT_TOKEN_KIND
from apps.runners.labels import derive_labels, validate_probe
from apps.runners.models import EnrollmentToken, Runner
from apps.runners.selectors import catalog_accelerators, enrollment_token_find, is_online
from apps.runners.signals import runner_probed

SECRET_FIELDS = ["digest", "credential_digest"]
MAX_NAME_LENGTH = 80


def _runner_snapshot(runner: Runner) -> dict[str, Any]:
    return snapshot(runner, exclude=[*SECRET_FIELDS, "probe", "last_heartbeat_at"])


@transaction.atomic
def enrollment_token_create(*, actor_user: Any, team: Team) -> tuple[EnrollmentToken, str]:
    """A team admin's single-use token; the plaintext is returned once and never stored."""
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    secret = issue_secret(ENROLLMENT_TOKEN_KIND)
    token = EnrollmentToken.objects.create(
        team=team,
        created_by=actor_user,
        prefix=secret.prefix,
        digest=secret.digest,
        expires_at=timezone.now() + timedelta(seconds=settings.RUNNER_ENROLLMENT_TTL_S),
    )
    audit_record(
        actor=Actor.for_user(actor_user),
        action="enrollment_token.create",
        obj=token,
        team=team,
        after=snapshot(token, exclude=SECRET_FIELDS),
    )
    return token, secret.plaintext


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise ValidationError({"name": "A runner needs a name."})
    if len(name.strip()) > MAX_NAME_LENGTH:
        raise ValidationError({"name": f"A runner name has at most {MAX_NAME_LENGTH} characters."})
    return name.strip()


def _apply_probe(runner: Runner, probe: Any) -> None:
    try:
        probe = validate_probe(probe)
    except ValueError as error:
        raise ValidationError({"probe": str(error)}) from error
    labels = derive_labels(probe, catalog_accelerators())
    runner.probe = probe
    runner.labels = labels.as_dict()
    runner.gpu_count = labels.gpu_count
    runner.engines = labels.engines
    runner.simulated = labels.simulated
    runner.probed_at = timezone.now()


@transaction.atomic
def runner_enroll(*, token_plaintext: str, name: Any, probe: Any) -> tuple[Runner, str]:
    """Trade a valid enrollment token for a runner and its credential (returned once)."""
    token = enrollment_token_find(plaintext=token_plaintext or "")
    now = timezone.now()
    if token is None or token.used_at is not None or token.expires_at <= now:
        raise PermissionDenied("The enrollment token is unknown, already used or expired.")
    name = _clean_name(name)
    if Runner.objects.filter(team=token.team, name=name, revoked_at__isnull=True).exists():
        raise ValidationError({"name": f"The team already has an active runner named {name!r}."})
    if EnrollmentToken.objects.filter(pk=token.pk, used_at__isnull=True).update(used_at=now) != 1:
        raise PermissionDenied("The enrollment token is unknown, already used or expired.")
    secret = issue_secret(CREDENTIAL_KIND)
    runner = Runner(
        team=token.team,
        name=name,
        credential_prefix=secret.prefix,
        credential_digest=secret.digest,
        last_heartbeat_at=now,
    )
    _apply_probe(runner, probe)
    runner.save()
    EnrollmentToken.objects.filter(pk=token.pk).update(runner=runner)
    audit_record(
        actor=Actor.for_runner(runner),
        action="runner.enroll",
        obj=runner,
        team=runner.team,
        after=_runner_snapshot(runner),
        message=f"Enrolled with token {token.prefix}….",
    )
    return runner, secret.plaintext


@transaction.atomic
def runner_probe(*, runner: Runner, probe: Any) -> Runner:
    """Store a fresh probe (sent at every start and when it changes) and re-derive the
    routing labels."""
    runner = Runner.objects.select_for_update().get(pk=runner.pk)
    before = _runner_snapshot(runner)
    _apply_probe(runner, probe)
    runner.last_heartbeat_at = timezone.now()
    runner.save()
    audit_record(
        actor=Actor.for_runner(runner),
        action="runner.probe",
        obj=runner,
        team=runner.team,
        before=before,
        after=_runner_snapshot(runner),
    )
    runner_probed.send(sender=Runner, runner_id=runner.pk)
    return runner


@transaction.atomic
def runner_heartbeat_touch(*, runner: Runner) -> bool:
    """Record a heartbeat; True when the runner was offline before it (then audited)."""
    was_online = is_online(runner)
    now = timezone.now()
    Runner.objects.filter(pk=runner.pk).update(last_heartbeat_at=now)
    runner.last_heartbeat_at = now
    if not was_online:
        audit_record(
            actor=Actor.for_runner(runner),
            action="runner.online",
            obj=runner,
            team=runner.team,
            message="First heartbeat after being offline.",
        )
    return not was_online


def _admin_runner(*, actor_user: Any, team: Team, runner_id: int) -> Runner:
    require_role(user=actor_user, team=team, minimum=Role.ADMIN)
    runner = Runner.objects.select_for_update().filter(pk=runner_id, team=team).first()
    if runner is None:
        raise ValidationError({"runner": "No such runner in this team."})
    if not runner.is_active:
        raise ValidationError({"runner": f"{runner.name} is revoked."})
    return runner


@transaction.atomic
def runner_rotate(*, actor_user: Any, team: Team, runner_id: int) -> tuple[Runner, str]:
    """A new credential for the runner (shown once); the old one stops working at once."""
    runner = _admin_runner(actor_user=actor_user, team=team, runner_id=runner_id)
    before = _runner_snapshot(runner)
    secret = issue_secret(CREDENTIAL_KIND)
    runner.credential_prefix = secret.prefix
    runner.credential_digest = secret.digest
    runner.rotated_at = timezone.now()
    runner.save(update_fields=["credential_prefix", "credential_digest", "rotated_at"])
    audit_record(
        actor=Actor.for_user(actor_user),
        action="runner.rotate",
        obj=runner,
        team=team,
        before=before,
        after=_runner_snapshot(runner),
    )
    return runner, secret.plaintext


@transaction.atomic
def runner_revoke(*, actor_user: Any, team: Team, runner_id: int) -> Runner:
    """Refuse the runner's credential from now on; its leased attempt is reaped as lost."""
    runner = _admin_runner(actor_user=actor_user, team=team, runner_id=runner_id)
    before = _runner_snapshot(runner)
    runner.revoked_at = timezone.now()
    runner.save(update_fields=["revoked_at"])
    audit_record(
        actor=Actor.for_user(actor_user),
        action="runner.revoke",
        obj=runner,
        team=team,
        before=before,
        after=_runner_snapshot(runner),
    )
    return runner
