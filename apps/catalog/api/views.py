"""The catalog API: read for everyone signed in, write for staff, writes through the services."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status, viewsets
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.accounts.permissions import StaffWritePermission
from apps.audit.services import Actor
from apps.catalog import services
from apps.catalog.api import serializers as s
from apps.catalog.filters import (
    AcceleratorFilter,
    CapabilityFilter,
    EngineFilter,
    EngineReleaseFilter,
    FeatureFilter,
    KernelBackendFilter,
    ModelSpecFilter,
)
from apps.catalog.interchange import FILE_FORMATS, export_matrix
from apps.catalog.models import (
    Accelerator,
    Capability,
    Engine,
    EngineRelease,
    Feature,
    KernelBackend,
    ModelSpec,
)
from apps.catalog.views.import_export import CONTENT_TYPES
from apps.core.query import check_query

READ_AND_WRITE = ["get", "post", "put", "patch", "head", "options"]


class CatalogViewSet(viewsets.ModelViewSet):
    """Create and update go through `entry_create` / `entry_update` (validation and audit).

    Deleting is offered for cells only: removing an engine or release would cascade over its
    cells without an event for each.
    """

    permission_classes = [StaffWritePermission]
    http_method_names = READ_AND_WRITE

    def _actor(self) -> Actor:
        return Actor.for_user(self.request.user)

    def perform_create(self, serializer) -> None:
        serializer.instance = services.entry_create(
            actor=self._actor(), model=self.queryset.model, values=serializer.validated_data
        )

    def perform_update(self, serializer) -> None:
        serializer.instance = services.entry_update(
            actor=self._actor(), instance=serializer.instance, changes=serializer.validated_data
        )


class EngineViewSet(CatalogViewSet):
    queryset = Engine.objects.all()
    serializer_class = s.EngineSerializer
    filterset_class = EngineFilter
    lookup_field = "slug"


class EngineReleaseViewSet(CatalogViewSet):
    queryset = EngineRelease.objects.select_related("engine").prefetch_related("backends__backend")
    serializer_class = s.EngineReleaseSerializer
    filterset_class = EngineReleaseFilter


class KernelBackendViewSet(CatalogViewSet):
    queryset = KernelBackend.objects.all()
    serializer_class = s.KernelBackendSerializer
    filterset_class = KernelBackendFilter
    lookup_field = "slug"


class AcceleratorViewSet(CatalogViewSet):
    queryset = Accelerator.objects.all()
    serializer_class = s.AcceleratorSerializer
    filterset_class = AcceleratorFilter
    lookup_field = "slug"


class ModelSpecViewSet(CatalogViewSet):
    queryset = ModelSpec.objects.all()
    serializer_class = s.ModelSpecSerializer
    filterset_class = ModelSpecFilter
    lookup_field = "slug"
    lookup_value_regex = "[^/]+"  # model slugs carry version dots (llama-3.1-8b)


class FeatureViewSet(CatalogViewSet):
    queryset = Feature.objects.all()
    serializer_class = s.FeatureSerializer
    filterset_class = FeatureFilter
    lookup_field = "key"


class CapabilityViewSet(CatalogViewSet):
    queryset = Capability.objects.select_related("release__engine", "feature", "backend")
    serializer_class = s.CapabilitySerializer
    filterset_class = CapabilityFilter
    http_method_names = [*READ_AND_WRITE, "delete"]
    conflicts_on_write = True  # a cell that evidence still cites is not deleted (409)

    def perform_destroy(self, instance: Capability) -> None:
        services.entry_delete(actor=self._actor(), instance=instance)


class MatrixExportView(APIView):
    permission_classes = [StaffWritePermission]

    @extend_schema(
        summary="The whole capability matrix as a CSV or JSON file",
        parameters=[
            OpenApiParameter("file_format", OpenApiTypes.STR, enum=FILE_FORMATS, default="csv")
        ],
        responses={
            (200, "text/csv"): OpenApiTypes.STR,
            (200, "application/json"): OpenApiTypes.ANY,
        },
    )
    def get(self, request: Request) -> HttpResponse:
        check_query(request, ["file_format"])
        file_format = request.query_params.get("file_format", "csv")
        if file_format not in FILE_FORMATS:
            return Response(
                {"file_format": [f"Use one of {', '.join(FILE_FORMATS)}."]},
                status=status.HTTP_400_BAD_REQUEST,
            )
        return HttpResponse(export_matrix(file_format), content_type=CONTENT_TYPES[file_format])


class MatrixImportView(APIView):
    permission_classes = [StaffWritePermission]
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        summary="Import the whole matrix: a dry run shows the diff, apply writes it",
        request={"multipart/form-data": s.MatrixImportInputSerializer},
        responses={
            200: s.ImportPlanSerializer,
            400: OpenApiResponse(s.ImportPlanSerializer, description="Rows with errors"),
        },
    )
    def post(self, request: Request) -> Response:
        form = s.MatrixImportInputSerializer(data=request.data)
        form.is_valid(raise_exception=True)
        try:
            plan = services.matrix_import(
                actor=Actor.for_user(request.user),
                content=form.validated_data["file"].read(),
                file_format=form.validated_data["file_format"],
                apply=form.validated_data["apply"],
            )
        except ValueError as error:
            return Response({"file": [str(error)]}, status=status.HTTP_400_BAD_REQUEST)
        body = s.ImportPlanSerializer(plan).data
        return Response(body, status=status.HTTP_400_BAD_REQUEST if plan.errors else 200)
