from django.core.exceptions import ValidationError
from django.db import OperationalError

from apps.core.api import exception_handler
from apps.core.errors import ConflictError


def test_an_unreachable_database_is_a_503_that_clients_retry():
    response = exception_handler(OperationalError("connection refused"), {})
    assert response.status_code == 503
    assert response["Retry-After"] == "5"
    assert response.data["code"] == "unavailable"


def test_a_service_conflict_is_a_409_with_its_code():
    response = exception_handler(ConflictError("accepted records are frozen", code="frozen"), {})
    assert (response.status_code, response.data["code"]) == (409, "frozen")


def test_a_service_validation_error_is_a_400_with_field_errors():
    response = exception_handler(ValidationError({"title": "Give the selection a title."}), {})
    assert response.status_code == 400
    assert response.data == {"title": ["Give the selection a title."]}
