"""Pages for the profile (API tokens), the team switcher and team membership."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from apps.accounts import services
from apps.accounts.choices import Role
from apps.accounts.forms import ApiTokenForm, MembershipForm, TeamSwitchForm
from apps.accounts.middleware import SESSION_TEAM_KEY
from apps.accounts.models import Membership
from apps.accounts.scoping import get_scoped_or_404
from apps.accounts.selectors import api_tokens_of, memberships_of, team_members
from apps.audit.services import Actor


def _add_service_errors(form, error: ValidationError) -> None:
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
        target = "core:home"
    return redirect(target)


@login_required
def members(request: HttpRequest) -> HttpResponse:
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")
    is_admin = request.membership.has_role(Role.ADMIN)
    form = MembershipForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.membership_set(actor_user=request.user, team=request.team, **data)
        except ValidationError as error:
            _add_service_errors(form, error)
        else:
            messages.success(request, f"{data['username']} is now {data['role']}.")
            return redirect("accounts:members")
    context = {"form": form, "members": team_members(team=request.team), "is_admin": is_admin}
    return render(request, "accounts/members.html", context)


@login_required
@require_POST
def member_remove(request: HttpRequest, membership_id: int) -> HttpResponse:
    get_scoped_or_404(Membership.objects.all(), request.team, pk=membership_id)
    try:
        services.membership_remove(
            actor_user=request.user, team=request.team, membership_id=membership_id
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
    else:
        messages.success(request, "The member was removed from the team.")
    return redirect("accounts:members")
