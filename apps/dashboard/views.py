"""The home page: a signed-in member sees where the team's work stands."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from apps.dashboard.selectors import team_dashboard


def home(request: HttpRequest) -> HttpResponse:
    team = getattr(request, "team", None)
    board = None
    if request.user.is_authenticated and team is not None:
        board = team_dashboard(user=request.user, team=team)
    return render(request, "dashboard/home.html", {"board": board})
