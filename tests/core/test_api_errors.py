from django.core.exceptions import ValidationError
from django.db import DataError, OperationalError
from rest_framework.exceptions import NotAuthenticated

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


def test_a_value_the_database_refuses_is_a_400_not_a_500():
    response = exception_handler(DataError("value too long for type character varying(80)"), {})
    assert (response.status_code, response.data["code"]) == (400, "out_of_range")


def test_a_single_message_error_carries_its_code():
    response = exception_handler(NotAuthenticated(), {})
    assert response.data == {
        "detail": "Authentication credentials were not provided.",
        "code": "not_authenticated",
    }
