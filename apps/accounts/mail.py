"""The invitation e-mail, sent only when the operator configured an e-mail backend."""

from __future__ import annotations

import logging
from smtplib import SMTPException

from django.conf import settings
from django.core.mail import send_mail

from apps.accounts.models import Invitation

logger = logging.getLogger(__name__)


def mail_enabled() -> bool:
    return bool(settings.EMAIL_CONFIGURED)


def send_invitation(*, invitation: Invitation, link: str) -> bool:
    """Mail the link to the invited address; False when there is none or sending failed, so the
    admin is told to pass the link on themselves. Sent after the invitation is committed."""
    if not mail_enabled() or not invitation.email:
        return False
    inviter = invitation.invited_by.get_username() if invitation.invited_by else "A team admin"
    body = (
        f"{inviter} invites you to the team {invitation.team.name} on StackSelect "
        f"as {invitation.get_role_display().lower()}.\n\n"
        f"Open this link to accept: {link}\n\n"
        f"It works once and until {invitation.expires_at:%Y-%m-%d %H:%M} UTC.\n"
    )
    try:
        send_mail(f"Join {invitation.team.name} on StackSelect", body, None, [invitation.email])
    except (SMTPException, OSError):
        logger.warning("invitation %s could not be mailed", invitation.prefix, exc_info=True)
        return False
    return True
