"""OpenAPI descriptions of the API's authentication (drf-spectacular extension, loaded by the api app)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class APIKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "airweave.api.authentication.APIKeyAuthentication"
    name = "APIKeyHeader"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "X-API-Key",
                "description": "An API key of your organization (`manage.py create_api_key`)."}
