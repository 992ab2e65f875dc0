"""API conventions shared by every app: error bodies and service-error mapping."""

from __future__ import annotations

import logging

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError, InterfaceError, OperationalError
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from apps.core.errors import ConflictError, NotFoundError
from apps.core.parsers import InvalidBody

logger = logging.getLogger(__name__)


def exception_handler(exc: Exception, context: dict) -> Response | None:
    """Map service errors onto HTTP: validation -> 400 with field errors, not found -> 404
    (Django's Http404 too, so its body has a code like every other), conflicts -> 409."""
    if isinstance(exc, DjangoValidationError):
        detail = (
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
        exc = exceptions.ValidationError(detail=detail)
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, NotFoundError | Http404):
        exc = exceptions.NotFound(str(exc) or None)
    elif isinstance(exc, ConflictError):
        return Response({"detail": str(exc), "code": exc.code}, status=status.HTTP_409_CONFLICT)
    elif isinstance(exc, DataError):
        # The last line of defence: validation should have named the field before the database.
        logger.warning("value refused by the database: %s", exc)
        return Response(
            {"detail": "A value does not fit its database column.", "code": "out_of_range"},
            status=status.HTTP_400_BAD_REQUEST,
        )
    elif isinstance(exc, OperationalError | InterfaceError):
        # The database is unreachable: a passing condition that clients (runners) retry.
        logger.warning("database unavailable: %s", exc)
        return Response(
            {"detail": "The database is unavailable; retry shortly.", "code": "unavailable"},
            status=status.HTTP_503_SERVICE_UNAVAILABLE,
            headers={"Retry-After": "5"},
        )
    response = drf_exception_handler(exc, context)
    if response is not None and isinstance(exc, exceptions.APIException):
        _add_code(response, exc)
    return response


def _add_code(response: Response, exc: exceptions.APIException) -> None:
    """Every error body of one message is {detail, code}; a refused body also names its field."""
    data = response.data
    if not isinstance(data, dict) or set(data) != {"detail"}:
        return  # field errors: {field: [messages]}
    codes = exc.get_codes()
    data["code"] = codes if isinstance(codes, str) else exc.default_code
    if isinstance(exc, InvalidBody):
        data["field"] = exc.field
