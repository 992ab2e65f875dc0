"""Describes the runner credential scheme in the OpenAPI schema."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class RunnerCredentialScheme(OpenApiAuthenticationExtension):
    target_class = "apps.runners.api.authentication.RunnerAuthentication"
    name = "RunnerCredential"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "`Runner <credential>`: the credential `stackselect-runner enroll` "
            "received (docs/runner-protocol.md).",
        }
