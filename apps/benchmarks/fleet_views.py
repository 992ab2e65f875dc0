"""Runner pages: the fleet with each runner's current and recent attempts, a runner's detail
(rotate, revoke) and enrollment tokens. They live in the benchmarks layer because they show jobs."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.accounts.choices import Role
from apps.accounts.scoping import get_scoped_or_404
from apps.benchmarks.selectors import runner_recent_attempts, runner_rows
from apps.runners import install, services
from apps.runners.models import Runner
from apps.runners.selectors import enrollment_tokens_of, runner_queues


def _require_team(request: HttpRequest) -> None:
    if request.team is None:
        raise PermissionDenied("You are not in a team yet.")


def _is_admin(request: HttpRequest) -> bool:
    return request.membership is not None and request.membership.has_role(Role.ADMIN)


def server_url(request: HttpRequest) -> str:
    """The URL a runner reaches this server at: RUNNER_PUBLIC_URL, else this request's."""
    return (settings.RUNNER_PUBLIC_URL or request.build_absolute_uri("/")).rstrip("/")


@login_required
def runner_list(request: HttpRequest) -> HttpResponse:
    _require_team(request)
    context = {
        "rows": runner_rows(team=request.team),
        "is_admin": _is_admin(request),
        "server_url": server_url(request),
    }
    return render(request, "runners/runner_list.html", context)


def _detail(request: HttpRequest, runner: Runner, new_credential: str | None = None):
    context = {
        "runner": runner,
        "queues": runner_queues(runner),
        "attempts": runner_recent_attempts(runner),
        "is_admin": _is_admin(request),
        "new_credential": new_credential,
        "server_url": server_url(request),
    }
    return render(request, "runners/runner_detail.html", context)


@login_required
def runner_detail(request: HttpRequest, runner_id: int) -> HttpResponse:
    _require_team(request)
    return _detail(request, get_scoped_or_404(Runner.objects.all(), request.team, pk=runner_id))


@login_required
@require_POST
def runner_rotate(request: HttpRequest, runner_id: int) -> HttpResponse:
    _require_team(request)
    get_scoped_or_404(Runner.objects.all(), request.team, pk=runner_id)  # another team's: 404
    try:
        runner, credential = services.runner_rotate(
            actor_user=request.user, team=request.team, runner_id=runner_id
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("runners:list")
    return _detail(request, runner, new_credential=credential)


@login_required
@require_POST
def runner_revoke(request: HttpRequest, runner_id: int) -> HttpResponse:
    _require_team(request)
    get_scoped_or_404(Runner.objects.all(), request.team, pk=runner_id)  # another team's: 404
    try:
        runner = services.runner_revoke(
            actor_user=request.user, team=request.team, runner_id=runner_id
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("runners:list")
    messages.success(request, f"{runner.name} is revoked; its credential is refused from now on.")
    return redirect("runners:detail", runner_id=runner.pk)


@login_required
def enroll(request: HttpRequest) -> HttpResponse:
    """Admins make single-use enrollment tokens here; each is shown once."""
    _require_team(request)
    if not _is_admin(request):
        raise PermissionDenied("Only team admins enroll runners.")
    new_token = None
    if request.method == "POST":
        _token, new_token = services.enrollment_token_create(
            actor_user=request.user, team=request.team
        )
    url = server_url(request)
    warnings = [install.broker_warning(settings.RUNNER_BROKER_URL), install.server_url_warning(url)]
    context = {
        "new_token": new_token,
        "tokens": enrollment_tokens_of(team=request.team)[:20],
        "server_url": url,
        "ttl_hours": settings.RUNNER_ENROLLMENT_TTL_S / 3600,
        "install_commands": install.install_commands(server_url=url, token=new_token),
        "runner_version": install.package_version("runner"),
        "reach_warnings": [warning for warning in warnings if warning],
    }
    return render(request, "runners/enroll.html", context)
