"""The decisions API (/api/v1/decisions/): team-scoped records, their lifecycle and triggers."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response

from apps.accounts.permissions import TeamRolePermission
from apps.core.parsers import BoundedJSONParser
from apps.core.request_context import request_team
from apps.decisions import selectors, services
from apps.decisions.api.serializers import (
    ProposeIn,
    ReasonIn,
    RecordCreateIn,
    RecordSerializer,
    RecordSummarySerializer,
    RecordUpdateIn,
    SupersedeIn,
)
from apps.decisions.models import DecisionRecord
from apps.decisions.services import DecisionText

TEXT_FIELDS = [item.name for item in fields(DecisionText)]


def decision_text(data: dict[str, Any]) -> DecisionText:
    return DecisionText(**{name: data[name] for name in TEXT_FIELDS})


def _valid(serializer_class: type, request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


class DecisionViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Decision records of the acting team. Writes need the engineer role; accept, reject and
    deprecate need an approver, and accept one who is not the author (403). Editing a record
    that is no longer a draft answers 409."""

    permission_classes = [TeamRolePermission]
    lookup_value_regex = r"[0-9]+"  # the actions parse it as an integer
    names_objects = True  # a new record's body names a selection (the schema's 404)
    conflicts_on_write = True  # a record no longer a draft, or moved meanwhile (409)

    def get_queryset(self):
        team = request_team(self.request)
        if self.action == "list":
            return selectors.records_of(team=team)
        return selectors.records_of(team=team).defer(None).prefetch_related("triggers")

    def get_serializer_class(self):
        return RecordSummarySerializer if self.action == "list" else RecordSerializer

    def _answer(self, record: DecisionRecord, code: int = status.HTTP_200_OK) -> Response:
        record = selectors.record_get(team=request_team(self.request), record_id=record.pk)
        return Response(RecordSerializer(record).data, status=code)

    @extend_schema(request=RecordCreateIn, responses={201: RecordSerializer})
    def create(self, request: Request, *args, **kwargs) -> Response:
        data = _valid(RecordCreateIn, request)
        record = services.record_create(
            actor_user=request.user,
            team=request_team(request),
            selection_id=data["selection"],
            text=decision_text(data),
            candidate_ids=data["candidates"],
        )
        return self._answer(record, status.HTTP_201_CREATED)

    @extend_schema(request=RecordUpdateIn, responses=RecordSerializer)
    def update(self, request: Request, pk: str, format: str | None = None) -> Response:
        data = _valid(RecordUpdateIn, request)
        record = services.record_update(
            actor_user=request.user,
            team=request_team(request),
            record_id=int(pk),
            text=decision_text(data),
            refresh=data["refresh"],
        )
        return self._answer(record)

    @extend_schema(request=ProposeIn, responses=RecordSerializer)
    @action(
        detail=True,
        methods=["post"],
        # a bare POST (no body, or an empty form) proposes without the simulation-only mark
        parser_classes=[BoundedJSONParser, FormParser, MultiPartParser],
    )
    def propose(self, request: Request, pk: str, format: str | None = None) -> Response:
        record = services.record_propose(
            actor_user=request.user,
            team=request_team(request),
            record_id=int(pk),
            simulation_only=_valid(ProposeIn, request)["simulation_only"],
        )
        return self._answer(record)

    @extend_schema(request=None, responses=RecordSerializer)
    @action(detail=True, methods=["post"])
    def accept(self, request: Request, pk: str, format: str | None = None) -> Response:
        record = services.record_accept(
            actor_user=request.user, team=request_team(request), record_id=int(pk)
        )
        return self._answer(record)

    @extend_schema(request=ReasonIn, responses=RecordSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str, format: str | None = None) -> Response:
        record = services.record_reject(
            actor_user=request.user,
            team=request_team(request),
            record_id=int(pk),
            reason=_valid(ReasonIn, request)["reason"],
        )
        return self._answer(record)

    @extend_schema(request=ReasonIn, responses=RecordSerializer)
    @action(detail=True, methods=["post"])
    def deprecate(self, request: Request, pk: str, format: str | None = None) -> Response:
        record = services.record_deprecate(
            actor_user=request.user,
            team=request_team(request),
            record_id=int(pk),
            reason=_valid(ReasonIn, request)["reason"],
        )
        return self._answer(record)

    @extend_schema(request=SupersedeIn, responses={201: RecordSerializer})
    @action(detail=True, methods=["post"])
    def supersede(self, request: Request, pk: str, format: str | None = None) -> Response:
        """A new draft superseding this accepted record; accepting it supersedes this one."""
        record = services.record_supersede(
            actor_user=request.user,
            team=request_team(request),
            record_id=int(pk),
            title=_valid(SupersedeIn, request)["title"],
        )
        return self._answer(record, status.HTTP_201_CREATED)
