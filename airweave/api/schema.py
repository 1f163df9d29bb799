"""OpenAPI descriptions of the API's authentication (drf-spectacular extension, loaded by the api app)."""
from drf_spectacular.extensions import OpenApiAuthenticationExtension


class APIKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "airweave.api.authentication.APIKeyAuthentication"
    name = "APIKeyHeader"

    def get_security_definition(self, auto_schema):
        return {"type": "apiKey", "in": "header", "name": "X-API-Key",
                "description": "An API key of your organization (`manage.py create_api_key`)."}


# The error answers every operation can give, by when they apply (airweave/api/errors.py):
# 401 no or a bad key, 403 a role or quota that forbids it, 404 an unknown id in the path, 422
# a bad parameter or body, 429 a rate limit, 503 the database or a model provider unavailable.
ERROR_SCHEMA = {
    "type": "object", "required": ["detail"],
    "properties": {"detail": {"oneOf": [
        {"type": "string"},
        {"type": "array", "items": {"type": "object", "required": ["loc", "msg", "type"], "properties": {
            "loc": {"type": "array", "items": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
            "msg": {"type": "string"}, "type": {"type": "string"}}}},
    ]}},
}
ERROR_DESCRIPTIONS = {
    "401": "No API key, or one that is unknown, revoked or expired",
    "403": "The caller's role or the organization's quota does not allow it",
    "404": "An id in the path (or one the body names) is nothing of the organization",
    "422": "A parameter or the body is invalid; `detail` lists each fault with its location",
    "429": "Too many requests (see Retry-After)",
    "503": "The database or a model provider is unavailable; try again (see Retry-After)",
}


def document_error_responses(result, generator, request, public):
    """drf-spectacular postprocessing hook: document, on each operation, the error answers that
    apply to it (each with the `{"detail": ...}` shape), keeping any documented already."""
    result.setdefault("components", {}).setdefault("schemas", {})["ErrorResponse"] = ERROR_SCHEMA
    reference = {"$ref": "#/components/schemas/ErrorResponse"}
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            secured = any(requirement for requirement in operation.get("security", [{}]))
            parameters = operation.get("parameters", [])
            codes = ["503"]
            if secured:
                codes += ["401", "403", "429"]
            if any(p.get("in") == "path" for p in parameters) or (secured and "requestBody" in operation):
                codes.append("404")  # an id in the path, or one the body names (a collection)
            if parameters or "requestBody" in operation:
                codes.append("422")
            for code in codes:
                operation["responses"].setdefault(code, {"description": ERROR_DESCRIPTIONS[code]})
            for code, response in operation["responses"].items():
                if code[0] in "45" and "content" not in response:  # every error answers `{"detail": ...}`
                    response["content"] = {"application/json": {"schema": reference}}
    return result
