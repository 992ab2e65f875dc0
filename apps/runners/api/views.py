"""The runner API's enrollment and probe operations (docs/runner-protocol.md).

The attempt operations (heartbeat, claim, spec, progress, log, results, finish) belong to the
benchmarks app (apps/benchmarks/api/runner_views.py), which also owns the URL conf.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.runners.api import serializers as s
from apps.runners.api.authentication import IsRunner, RunnerAuthentication
from apps.runners.models import Runner
from apps.runners.selectors import runner_queues
from apps.runners.services import runner_enroll, runner_probe
from apps.runners.signals import runner_available

TAG = "runner"
CONFLICT = OpenApiResponse(s.ErrorOut, description="Refused in this state: drop the attempt.")


def _setup(runner: Runner) -> dict[str, Any]:
    return {
        "runner_id": runner.pk,
        "labels": runner.labels,
        "queues": runner_queues(runner),
        "heartbeat_interval_s": settings.RUNNER_HEARTBEAT_INTERVAL_S,
        "lease_seconds": settings.RUNNER_LEASE_SECONDS,
        "broker_url": settings.RUNNER_BROKER_URL,
        "broker_transport_options": settings.CELERY_BROKER_TRANSPORT_OPTIONS,
    }


def parsed_input(serializer_class: type, request: Request) -> dict[str, Any]:
    data = serializer_class(data=request.data)
    data.is_valid(raise_exception=True)
    return dict(data.validated_data)


class RunnerView(APIView):
    authentication_classes = [RunnerAuthentication]
    permission_classes = [IsRunner]

    @property
    def runner(self) -> Runner:
        return self.request.auth


class EnrollView(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(
        tags=[TAG],
        request=s.EnrollIn,
        responses={201: s.EnrollOut, 403: s.ErrorOut},
        auth=[],
        summary="Trade an enrollment token for a runner credential",
    )
    def post(self, request: Request) -> Response:
        data = parsed_input(s.EnrollIn, request)
        runner, credential = runner_enroll(
            token_plaintext=data["token"],
            name=data["name"],
            probe=data["probe"],
        )
        runner_available.send(sender=Runner, runner=runner)
        return Response({**_setup(runner), "credential": credential}, status=201)


class ProbeView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request=s.ProbeIn,
        responses=s.RunnerSetupOut,
        summary="Send the probe again (at every start, and when it changes); labels are re-derived",
    )
    def post(self, request: Request) -> Response:
        data = parsed_input(s.ProbeIn, request)
        runner = runner_probe(runner=self.runner, probe=data["probe"])
        runner_available.send(sender=Runner, runner=runner)
        return Response(_setup(runner))
