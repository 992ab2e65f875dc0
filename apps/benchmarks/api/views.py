"""The user API for benchmark plans and jobs (/api/v1/benchmarks/...): team-scoped."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.permissions import TeamRolePermission
from apps.benchmarks import services
from apps.benchmarks.api.serializers import JobSerializer, PlanCreateIn, PlanSerializer
from apps.benchmarks.plan_identity import PlanOptionError, PlanOptions
from apps.benchmarks.selectors import jobs_of, plans_of
from apps.core.request_context import request_team


class PlanViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Plans of the acting team; POST makes one from a selection's chosen candidates."""

    serializer_class = PlanSerializer
    permission_classes = [TeamRolePermission]
    names_objects = True  # the body names a selection (the schema's 404)
    lookup_value_regex = r"[0-9]+"  # the actions parse it as an integer

    def get_queryset(self):
        return plans_of(team=request_team(self.request)).prefetch_related("jobs__attempts")

    @extend_schema(request=PlanCreateIn, responses={201: PlanSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        data = PlanCreateIn(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            options = PlanOptions(**data.plan_options())
        except PlanOptionError as error:
            raise ValidationError({error.field: str(error)}) from error
        plan = services.plan_create(
            actor_user=request.user,
            team=request_team(request),
            selection_id=data.validated_data["selection"],
            options=options,
            title=data.validated_data["title"],
        )
        return Response(PlanSerializer(plan).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=PlanSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str, format: str | None = None) -> Response:
        plan = services.plan_cancel(
            actor_user=request.user, team=request_team(request), plan_id=int(pk)
        )
        return Response(PlanSerializer(plan).data)


class JobViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = JobSerializer
    permission_classes = [TeamRolePermission]
    lookup_value_regex = r"[0-9]+"  # the actions parse it as an integer

    def get_queryset(self):
        return jobs_of(team=request_team(self.request)).prefetch_related("attempts")

    @extend_schema(request=None, responses=JobSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str, format: str | None = None) -> Response:
        job = services.job_cancel(
            actor_user=request.user, team=request_team(request), job_id=int(pk)
        )
        return Response(JobSerializer(job).data)
