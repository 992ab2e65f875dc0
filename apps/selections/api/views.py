"""The selections API: goals, candidate computation and listing, traces, and the estimate."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import TeamRolePermission
from apps.core.query import check_query
from apps.core.request_context import request_team
from apps.selections import published_nearest, selectors, services
from apps.selections.api.serializers import (
    CandidateChoiceSerializer,
    CandidateListSerializer,
    CandidateQuerySerializer,
    ComputationSerializer,
    EstimateInputSerializer,
    EstimateOutputSerializer,
    SelectionInputSerializer,
    SelectionSerializer,
    TraceSerializer,
    TraceUploadSerializer,
)
from apps.selections.choices import CandidateOutcome
from apps.selections.models import Selection
from apps.selections.stack_capability import StackCannotRun
from apps.selections.stateless_estimate import stateless_estimate


class SelectionViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    viewsets.GenericViewSet,
):
    """A team's selections: the goal (workload, SLO, constraints) and its candidate stacks."""

    permission_classes = [TeamRolePermission]
    serializer_class = SelectionSerializer
    http_method_names = ["get", "post", "put", "head", "options"]

    def get_queryset(self):
        return selectors.selections_of(team=request_team(self.request))

    def get_object(self):
        return selectors.selection_get(
            team=request_team(self.request), selection_id=self.kwargs["pk"]
        )

    def _input(self, request: Request) -> SelectionInputSerializer:
        """The goal document, validated with the team that owns any trace it replays."""
        data = SelectionInputSerializer(data=request.data, context={"team": request_team(request)})
        data.is_valid(raise_exception=True)
        return data

    @extend_schema(request=SelectionInputSerializer, responses={201: SelectionSerializer})
    def create(self, request: Request, format: str | None = None) -> Response:
        data = self._input(request)
        data.is_valid(raise_exception=True)
        selection = services.selection_create(
            actor_user=request.user, team=request_team(request), data=data.validated_data
        )
        return Response(SelectionSerializer(selection).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SelectionInputSerializer, responses={200: SelectionSerializer})
    def update(self, request: Request, pk: str, format: str | None = None) -> Response:
        selection = self.get_object()
        data = self._input(request)
        selection = services.selection_update(
            actor_user=request.user, selection=selection, data=data.validated_data
        )
        return Response(SelectionSerializer(selection).data)

    @extend_schema(parameters=[CandidateQuerySerializer], responses={200: CandidateListSerializer})
    @action(detail=True, methods=["get"])
    def candidates(self, request: Request, pk: str, format: str | None = None) -> Response:
        """Kept stacks ranked with score, estimate and hints; dropped ones with their reasons.

        Both lists are paged with the same page and page_size; dropped_groups covers all."""
        selection = self.get_object()
        check_query(request, CandidateQuerySerializer().fields)
        query = CandidateQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        params = dict(query.validated_data)
        page, size = params.pop("page"), params.pop("page_size")
        window = slice((page - 1) * size, page * size)
        lists = {
            outcome: selectors.candidates_filtered(
                selection=selection, outcome=outcome, params=params
            )
            for outcome in (CandidateOutcome.KEPT, CandidateOutcome.DROPPED)
        }
        kept = list(lists[CandidateOutcome.KEPT][window])
        body = {
            "kept_count": lists[CandidateOutcome.KEPT].count(),
            "dropped_count": lists[CandidateOutcome.DROPPED].count(),
            "page": page,
            "page_size": size,
            "kept": kept,
            "dropped": list(lists[CandidateOutcome.DROPPED][window]),
            "dropped_groups": selectors.dropped_groups(selection=selection),
            "simulated_share": selectors.simulated_comparison(selection=selection).share,
        }
        published = published_nearest.published_for(selection=selection, candidates=kept)
        for candidate in kept:  # one nested serializer for the page, not one per candidate
            candidate.published_rows = published[candidate.pk]
        return Response(CandidateListSerializer(body).data)

    @extend_schema(request=None, responses={202: ComputationSerializer})
    @action(detail=True, methods=["post"], url_path="candidates/compute")
    def compute(self, request: Request, pk: str, format: str | None = None) -> Response:
        """Queue the (re)computation of the candidates of the selection's current goal.

        Answers 202 at once; poll `status_url` until `computation` is done (then read the
        candidates) or failed (then `error` says why)."""
        selection = services.candidates_request(
            actor_user=request.user, selection=self.get_object()
        )
        return Response(self._status(selection), status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses={200: ComputationSerializer})
    @action(detail=True, methods=["get"], url_path="candidates/status", url_name="status")
    def computation(self, request: Request, pk: str, format: str | None = None) -> Response:
        """Where the candidate computation stands: queued, running, done or failed."""
        return Response(self._status(self.get_object()))

    def _status(self, selection: Selection) -> dict[str, Any]:
        url = reverse("selection-status", kwargs={"pk": selection.pk})
        body = selectors.computation_status(selection=selection, status_url=url)
        return ComputationSerializer(body).data

    @extend_schema(request=CandidateChoiceSerializer, responses={200: CandidateChoiceSerializer})
    @action(detail=True, methods=["post"], url_path="candidates/choose")
    def choose(self, request: Request, pk: str, format: str | None = None) -> Response:
        """Mark exactly these kept candidates as chosen for the benchmark plan."""
        selection = self.get_object()
        data = CandidateChoiceSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        ids = data.validated_data["chosen"]
        services.candidates_choose(actor_user=request.user, selection=selection, candidate_ids=ids)
        return Response({"chosen": sorted(set(ids))})

    @extend_schema(request=TraceUploadSerializer, responses={201: TraceSerializer})
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def traces(self, request: Request, pk: str, format: str | None = None) -> Response:
        """Upload a CSV or JSONL trace; by default its lengths and arrival become the workload."""
        selection = self.get_object()
        data = TraceUploadSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        upload = data.validated_data["file"]
        trace = services.trace_upload(
            actor_user=request.user,
            selection=selection,
            name=upload.name,
            content=upload.read(),
            apply=data.validated_data["apply"],
            replay=data.validated_data["replay"],
        )
        return Response(TraceSerializer(trace).data, status=status.HTTP_201_CREATED)


class EstimateView(APIView):
    """Stateless memory and latency estimate of one replica layout (no goal is stored)."""

    @extend_schema(request=EstimateInputSerializer, responses={200: EstimateOutputSerializer})
    def post(self, request: Request) -> Response:
        data = EstimateInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = stateless_estimate(**data.validated_data)
        except StackCannotRun as error:
            raise DjangoValidationError(error.errors) from error
        except ValueError as error:
            field, _, message = str(error).partition(": ")
            raise DjangoValidationError({field: message or field}) from error
        return Response(EstimateOutputSerializer(result).data)
