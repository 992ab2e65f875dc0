"""The OpenAPI schema documents every status an operation can answer, not only its success.

Views declare their successes (and any error with a body of its own); `ApiAutoSchema` adds
the errors that come from the shared machinery, each where it really occurs:

- 400: a body to parse, query parameters or a path value to check (apps/core/middleware.py
  refuses a NUL in any), or a write a service may refuse;
- 401 and 403: any operation behind authentication (unknown credential; role or CSRF);
- 404: a path naming an object, a list's page beyond the last, or a body naming objects
  (`names_objects` on the view);
- 409: a write refused in the object's state (`conflicts_on_write` on the view);
- 413 and 415: a body over the endpoint's limit or of another media type;
- 429 (with Retry-After): every operation is throttled, and refused credentials count per
  address; 503 (with Retry-After): the database is unreachable.

Every error body is `Error` ({detail, code}) except a 400 that names fields, which is
`FieldErrors` ({field: [messages]}); apps/core/api.py makes them so. A view that declares a
400 body of its own keeps it, documented beside those two.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers
from rest_framework.permissions import AllowAny

WRITES = {"POST", "PUT", "PATCH", "DELETE"}
RETRY_AFTER = {"Retry-After": {"schema": {"type": "integer"}, "description": "Seconds to wait."}}


class ErrorSerializer(serializers.Serializer):
    """{detail, code}: one message and a stable code; a refused body also names its field."""

    detail = serializers.CharField()
    code = serializers.CharField()
    field = serializers.CharField(required=False, help_text="The refused value's path.")

    class Meta:
        ref_name = "Error"


FIELD_ERRORS = {
    "type": "object",
    "description": "{field: [messages]} (nested for nested fields); `non_field_errors` for "
    "the whole.",
    "additionalProperties": {},
    "minProperties": 1,
}


DESCRIPTIONS = {
    "400": "The body, a query parameter, a path value or the request in this state is refused.",
    "401": "No credential, or an unknown, rotated or revoked one.",
    "403": "The credential lacks the role this needs (or a session's CSRF token is missing).",
    "404": "No such object for this caller (another team's looks the same), or no such page.",
    "409": "Refused in the object's present state.",
    "413": "The body is over this endpoint's limit.",
    "415": "The body is not of a media type this operation reads.",
    "429": "Too many requests, or too many refused credentials from this address.",
    "503": "The database is unavailable; retry shortly.",
}


class ApiAutoSchema(AutoSchema):
    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is not None:
            responses = operation["responses"]
            for code in self._error_codes(operation):
                if code not in responses:
                    responses[code] = self._error_response(code)
                elif code == "400":
                    self._widen_declared_400(responses[code])
        return operation

    def _widen_declared_400(self, response: dict[str, Any]) -> None:
        """A view's own 400 body (an import's rows with errors) is not the only one: a body
        the serializer or parser refuses still answers `Error` or `FieldErrors`."""
        shared = self._error_response("400")["content"]["application/json"]["schema"]["anyOf"]
        for media in response.get("content", {}).values():
            media["schema"] = {"anyOf": [media["schema"], *shared]}

    def _error_codes(self, operation: dict[str, Any]) -> list[str]:
        has_body = "requestBody" in operation
        in_query = any(p.get("in") == "query" for p in operation.get("parameters", []))
        in_path = "{" in self.path
        listed = self.method == "GET" and not in_path and self._is_list_view()
        write = self.method in WRITES
        codes = ["429", "503"]
        if has_body or in_query or in_path or write:
            codes.append("400")
        if self._authenticated():
            codes += ["401", "403"]
        if in_path or listed or (getattr(self.view, "names_objects", False) and write):
            codes.append("404")
        if write and getattr(self.view, "conflicts_on_write", False):
            codes.append("409")
        if has_body:
            codes += ["413", "415"]
        return sorted(codes)

    def _authenticated(self) -> bool:
        permissions = self.view.get_permissions()
        open_to_all = all(isinstance(permission, AllowAny) for permission in permissions)
        return bool(self.view.get_authenticators()) and not open_to_all

    def _error_response(self, code: str) -> dict[str, Any]:
        error = self.resolve_serializer(ErrorSerializer, "response").ref
        schema: dict[str, Any] = error
        if code == "400":
            schema = {"anyOf": [error, self._field_errors()]}
        response: dict[str, Any] = {
            "description": DESCRIPTIONS[code],
            "content": {"application/json": {"schema": schema}},
        }
        if code in ("429", "503"):
            response["headers"] = RETRY_AFTER
        return response

    def _field_errors(self) -> dict[str, str]:
        component = ResolvedComponent(
            name="FieldErrors",
            type=ResolvedComponent.SCHEMA,
            object="FieldErrors",
            schema=FIELD_ERRORS,
        )
        self.registry.register_on_missing(component)
        return component.ref
