"""The runner API's attempt operations (docs/runner-protocol.md), one view per operation.

Views parse input and call one service of apps/benchmarks/attempts.py; errors map onto HTTP in
apps.core.api (400 validation, 403 not eligible, 404 not this runner's, 409 conflict) and here
(413 too large, 409 log offset). Enrollment and probes are the runners app's.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from apps.benchmarks import attempts
from apps.benchmarks.models import JobAttempt
from apps.benchmarks.results import UploadError, UploadTooLarge
from apps.benchmarks.selectors import attempt_spec
from apps.core.collector import collector_paused
from apps.runners.api import serializers as s
from apps.runners.api.views import CONFLICT, TAG, RunnerView, parsed_input


class HeartbeatView(RunnerView):
    names_objects = True  # the body names attempts (the schema's 404)

    @extend_schema(
        tags=[TAG],
        request=s.HeartbeatIn,
        responses=s.HeartbeatOut,
        summary="Extend the leases of the runner's attempts; learn about cancels",
    )
    def post(self, request: Request) -> Response:
        data = parsed_input(s.HeartbeatIn, request)
        answer = attempts.runner_heartbeat(
            runner=self.runner,
            attempt_id=data.get("attempt_id"),
            progress=data.get("progress"),
            attempts=data.get("attempts"),
        )
        return Response(s.HeartbeatOut(answer).data)


ATTEMPT_ID = OpenApiParameter("attempt_id", int, OpenApiParameter.PATH)


def _state_answer(attempt: JobAttempt) -> dict[str, Any]:
    attempt.refresh_from_db()
    job = attempt.job
    job.refresh_from_db()
    return {
        "attempt_id": attempt.pk,
        "state": attempt.state,
        "job_state": job.state,
        "cancel": job.cancel_requested,
    }


class ClaimView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request=None,
        parameters=[ATTEMPT_ID],
        responses={200: s.JobSpecOut, 403: s.ErrorOut, 404: s.ErrorOut, 409: CONFLICT},
        summary="Claim a dispatched attempt (exactly once); answers its job spec",
    )
    def post(self, request: Request, attempt_id: int) -> Response:
        attempt = attempts.attempt_claim(runner=self.runner, attempt_id=attempt_id)
        return Response(attempt_spec(attempt))


class SpecView(RunnerView):
    @extend_schema(
        tags=[TAG],
        parameters=[ATTEMPT_ID],
        responses={200: s.JobSpecOut},
        summary="The job spec of an attempt this runner claimed",
    )
    def get(self, request: Request, attempt_id: int) -> Response:
        attempt = attempts.attempt_of_runner(runner=self.runner, attempt_id=attempt_id)
        return Response(attempt_spec(attempt))


class ProgressView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request=s.ProgressIn,
        parameters=[ATTEMPT_ID],
        responses={200: s.AttemptStateOut, 409: CONFLICT},
        summary="Report progress through the load points",
    )
    def post(self, request: Request, attempt_id: int) -> Response:
        data = parsed_input(s.ProgressIn, request)
        attempt = attempts.attempt_progress(
            runner=self.runner, attempt_id=attempt_id, progress=data
        )
        return Response(_state_answer(attempt))


class LogView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request=s.LogIn,
        parameters=[ATTEMPT_ID],
        responses={
            200: s.LogOut,
            409: OpenApiResponse(
                s.ErrorOut, description="Wrong offset: resend from expected_offset."
            ),
        },
        summary="Append to the attempt's log at the stored length",
    )
    def post(self, request: Request, attempt_id: int) -> Response:
        data = parsed_input(s.LogIn, request)
        try:
            next_offset = attempts.attempt_log_append(
                runner=self.runner, attempt_id=attempt_id, **data
            )
        except attempts.LogOffsetMismatch as error:
            body = {
                "detail": str(error),
                "code": error.code,
                "expected_offset": error.expected_offset,
            }
            return Response(body, status=status.HTTP_409_CONFLICT)
        return Response({"next_offset": next_offset})


class ResultsView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request={"application/json": s.ResultsIn},
        parameters=[
            ATTEMPT_ID,
            OpenApiParameter("Idempotency-Key", str, OpenApiParameter.HEADER, required=True),
            OpenApiParameter(
                "Content-Encoding", str, OpenApiParameter.HEADER, required=True, enum=["gzip"]
            ),
        ],
        responses={
            201: s.ResultUploadOut,
            200: s.ResultUploadOut,
            400: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="A bad upload ({detail, code}) or field errors by header or field.",
            ),
            409: CONFLICT,
            413: s.ErrorOut,
        },
        summary="Upload one gzip chunk of a load point's per-request records (idempotent)",
    )
    def post(self, request: Request, attempt_id: int) -> Response:
        limit = settings.BENCHMARK_UPLOAD_MAX_BYTES
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > limit:
            return _too_large(f"body: more than {limit} bytes")
        try:
            with collector_paused():  # thousands of records decode into acyclic objects
                upload, created = attempts.result_upload(
                    runner=self.runner,
                    attempt_id=attempt_id,
                    idempotency_key=request.headers.get("Idempotency-Key", ""),
                    content_encoding=request.headers.get("Content-Encoding", ""),
                    body=request.body,
                )
        except UploadTooLarge as error:
            return _too_large(str(error))
        except UploadError as error:
            return Response({"detail": str(error), "code": "bad_upload"}, status=400)
        return Response(s.ResultUploadOut(upload).data, status=201 if created else 200)


def _too_large(message: str) -> Response:
    return Response(
        {"detail": message, "code": "too_large"}, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    )


class QualityView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request=OpenApiTypes.OBJECT,
        parameters=[ATTEMPT_ID],
        responses={201: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT, 409: CONFLICT},
        summary="Upload the quality probe's outputs (sent again: replaces them)",
    )
    def post(self, request: Request, attempt_id: int) -> Response:
        result = attempts.quality_upload(
            runner=self.runner, attempt_id=attempt_id, payload=request.data
        )
        body = {"attempt_id": attempt_id, "probe_set": result.probe_set, "score": result.score}
        return Response(body, status=status.HTTP_201_CREATED)


class FinishView(RunnerView):
    @extend_schema(
        tags=[TAG],
        request=s.FinishIn,
        parameters=[ATTEMPT_ID],
        responses={200: s.AttemptStateOut, 409: CONFLICT},
        summary="End the attempt as succeeded, failed or cancelled",
    )
    def post(self, request: Request, attempt_id: int) -> Response:
        data = parsed_input(s.FinishIn, request)
        attempt = attempts.attempt_finish(runner=self.runner, attempt_id=attempt_id, **data)
        return Response(_state_answer(attempt))
