"""The evidence API: a selection's evidence (GET) and importing a tool's files (POST)."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import TeamRolePermission
from apps.core.query import check_query
from apps.core.request_context import request_team
from apps.evidence import selectors, services
from apps.evidence.api.serializers import (
    FILE_ROLES,
    EvidenceOut,
    ImportIn,
    RunOut,
    evidence_body,
)
from apps.evidence.tool_files import ImportOptions


class SelectionEvidenceView(APIView):
    """Candidates x metrics at each load point, comparability, intervals and calibration."""

    permission_classes = [TeamRolePermission]

    @extend_schema(
        operation_id="selections_evidence",
        parameters=[
            OpenApiParameter(
                "reference", str, description="Identity fingerprint to compare against."
            )
        ],
        responses={200: EvidenceOut},
    )
    def get(self, request: Request, selection_id: int) -> Response:
        check_query(request, ["reference"])
        evidence = selectors.selection_evidence(
            team=request_team(request),
            selection_id=selection_id,
            reference=request.query_params.get("reference") or None,
        )
        return Response(evidence_body(evidence))


class ImportView(APIView):
    """Import the result files of vllm bench, guidellm, AIPerf or inference-perf."""

    permission_classes = [TeamRolePermission]
    parser_classes = [MultiPartParser]
    names_objects = True  # the form names a selection (the schema's 404)

    @extend_schema(operation_id="evidence_import", request=ImportIn, responses={201: RunOut})
    def post(self, request: Request) -> Response:
        data = ImportIn(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        files = {
            role: services.RawFile(values[role].name, values[role].read())
            for role in FILE_ROLES
            if values.get(role) is not None
        }
        run = services.import_tool_results(
            actor_user=request.user,
            team=request_team(request),
            selection_id=values["selection"],
            tool=values["tool"],
            files=files,
            identity=values.get("identity") or {},
            candidate_id=values.get("candidate"),
            options=ImportOptions(
                tool_version=values.get("tool_version") or None,
                rate_rps=values.get("rate_rps"),
                concurrency=values.get("concurrency"),
            ),
        )
        return Response(RunOut(run).data, status=status.HTTP_201_CREATED)
