"""Pages for the profile (API tokens), the team switcher, team membership and the invitation
link."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from apps.accounts import services
from apps.accounts.choices import Role
from apps.accounts.forms import (
    ApiTokenForm,
    InvitationForm,
    RoleForm,
    SignUpForm,
    TeamSwitchForm,
)
from apps.accounts.mail import mail_enabled, send_invitation
from apps.accounts.middleware import SESSION_TEAM_KEY
from apps.accounts.models import Invitation, Membership
from apps.accounts.scoping import get_scoped_or_404
from apps.accounts.selectors import (
    api_tokens_of,
    invitation_for_link,
    memberships_of,
    pending_invitations,
    team_members,
)
from apps.audit.services import Actor

# The session holds an opened invitation link's secret under this key, and the page that reads
# it there has this word where the secret was (Django's password reset says "set-password").
SESSION_INVITATION_KEY = "_invitation_link"
OPENED_LINK = "open"


def _add_service_errors(form, error: ValidationError) -> None:
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for field, field_errors in error.message_dict.items():
        form.add_error(field if field in form.fields else None, field_errors)


@login_required
def profile(request: HttpRequest) -> HttpResponse:
    form = ApiTokenForm(request.POST or None)
    new_token = None
    if request.method == "POST" and form.is_valid():
        if request.team is None:
            form.add_error(None, "Join a team before creating an API token.")
        else:
            try:
                _, new_token = services.api_token_create(
                    actor=Actor.for_user(request.user),
                    user=request.user,
                    team=request.team,
                    name=form.cleaned_data["name"],
                )
            except ValidationError as error:
                _add_service_errors(form, error)
            else:
                form = ApiTokenForm()
    context = {"form": form, "new_token": new_token, "tokens": api_tokens_of(user=request.user)}
    return render(request, "accounts/profile.html", context)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    get_object_or_404(api_tokens_of(user=request.user), pk=token_id)  # another's: 404
    try:
        token = services.api_token_revoke(actor_user=request.user, token_id=token_id)
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"Token {token.name} ({token.prefix}…) is revoked.")
    return redirect("accounts:profile")


@login_required
@require_POST
def team_switch(request: HttpRequest) -> HttpResponse:
    form = TeamSwitchForm(request.POST)
    allowed = {m.team_id: m.team for m in memberships_of(user=request.user)}
    if form.is_valid() and form.cleaned_data["team_id"] in allowed:
        request.session[SESSION_TEAM_KEY] = form.cleaned_data["team_id"]
        messages.info(request, f"You now act for {allowed[form.cleaned_data['team_id']]}.")
    else:
        messages.error(request, "You are not a member of that team.")
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}):
        target = "dashboard:home"
    return redirect(target)


def _team_admin(request: HttpRequest) -> None:
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")
    if not request.membership.has_role(Role.ADMIN):
        raise PermissionDenied("Only team admins change membership.")


@login_required
def members(request: HttpRequest) -> HttpResponse:
    """The team's members and, for admins, role changes, invitations and their one-time links."""
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")
    if request.method == "POST":
        _team_admin(request)
    form = InvitationForm(request.POST or None)
    new_invitation = new_link = mailed = None
    if request.method == "POST" and form.is_valid():
        try:
            new_invitation, secret = services.invitation_create(
                actor_user=request.user, team=request.team, **form.cleaned_data
            )
        except ValidationError as error:
            _add_service_errors(form, error)
        else:
            new_link = request.build_absolute_uri(reverse("accounts:invitation", args=[secret]))
            mailed = send_invitation(invitation=new_invitation, link=new_link)
            form = InvitationForm()
    is_admin = request.membership.has_role(Role.ADMIN)
    context = {
        "form": form,
        "new_invitation": new_invitation,
        "new_link": new_link,
        "mailed": mailed,
        "mail_enabled": mail_enabled(),
        "members": team_members(team=request.team),
        "invitations": pending_invitations(team=request.team) if is_admin else [],
        "roles": Role.choices,
        "is_admin": is_admin,
    }
    return render(request, "accounts/members.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def member_role(request: HttpRequest, membership_id: int) -> HttpResponse:
    membership = get_scoped_or_404(Membership.objects.all(), request.team, pk=membership_id)
    _team_admin(request)
    form = RoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose one of the roles.")
        return redirect("accounts:members")
    try:
        services.membership_role_set(
            actor_user=request.user,
            team=request.team,
            membership_id=membership_id,
            role=form.cleaned_data["role"],
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        role = Role(form.cleaned_data["role"]).label.lower()
        messages.success(request, f"{membership.user.get_username()} is now {role}.")
    return redirect("accounts:members")


@login_required
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    """GET asks to confirm; POST removes."""
    membership = get_scoped_or_404(
        Membership.objects.select_related("user"), request.team, pk=membership_id
    )
    _team_admin(request)
    if request.method != "POST":
        return render(request, "accounts/member_remove.html", {"membership": membership})
    try:
        services.membership_remove(
            actor_user=request.user, team=request.team, membership_id=membership_id
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(
            request, f"{membership.user.get_username()} was removed from {request.team}."
        )
    return redirect("accounts:members")


@login_required
@require_POST
def invitation_withdraw(request: HttpRequest, invitation_id: int) -> HttpResponse:
    get_scoped_or_404(Invitation.objects.all(), request.team, pk=invitation_id)
    _team_admin(request)
    try:
        invitation = services.invitation_withdraw(
            actor_user=request.user, team=request.team, invitation_id=invitation_id
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, f"The invitation of {invitation.invitee} is withdrawn.")
    return redirect("accounts:members")


def invitation(request: HttpRequest, token: str) -> HttpResponse:
    """The one-time link: a signed-in user accepts; anyone else signs up (e-mail invitations).

    As in Django's password reset, a usable link's secret moves into the session and the browser
    goes on to a URL without it (`OPENED_LINK`), so the secret stays out of the history, the
    server's access log and any Referer header from the page that asks for a password.
    """
    opened = token == OPENED_LINK
    if opened:
        token = request.session.get(SESSION_INVITATION_KEY, "")
    found = invitation_for_link(plaintext=token)
    if found is None:
        return _invitation_page(request, None, problem=services.INVALID_LINK, status=404)
    problem = found.problem(timezone.now())
    if problem:
        return _invitation_page(request, found, problem=problem, spent=True, status=410)
    if not opened:
        request.session[SESSION_INVITATION_KEY] = token
        return redirect("accounts:invitation", token=OPENED_LINK)
    if request.user.is_authenticated:
        return _accept(request, found, token)
    return _sign_up(request, found, token)


def _invitation_page(
    request: HttpRequest, invitation: Invitation | None, status: int = 200, **extra: object
) -> HttpResponse:
    context = {"invitation": invitation, **extra}
    return render(request, "accounts/invitation.html", context, status=status)


def _accept(request: HttpRequest, invitation: Invitation, token: str) -> HttpResponse:
    if request.method != "POST":
        return _invitation_page(request, invitation)
    try:
        membership = services.invitation_accept(user=request.user, plaintext=token)
    except ValidationError as error:
        return _invitation_page(request, invitation, problem=" ".join(error.messages), status=400)
    request.session[SESSION_TEAM_KEY] = membership.team_id
    request.session.pop(SESSION_INVITATION_KEY, None)
    messages.success(
        request, f"You joined {membership.team} as {membership.get_role_display().lower()}."
    )
    return redirect("dashboard:home")


def _sign_up(request: HttpRequest, invitation: Invitation, token: str) -> HttpResponse:
    form = SignUpForm(request.POST or None, email=invitation.email)
    if request.method == "POST" and form.is_valid():
        try:
            services.invitation_sign_up(
                plaintext=token,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password1"],
            )
        except ValidationError as error:
            _add_service_errors(form, error)
        else:
            request.session.pop(SESSION_INVITATION_KEY, None)
            messages.success(
                request,
                f"Your account {form.cleaned_data['username']} is ready and you are in "
                f"{invitation.team}. Log in to start.",
            )
            return redirect("accounts:login")
    status = 400 if form.errors else 200
    return _invitation_page(request, invitation, form=form, status=status)
