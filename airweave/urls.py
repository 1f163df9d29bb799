"""URL map: the REST API at the root paths of API.md, admin, schema and its docs page, OAuth.

`/mcp` is not here: asgi.py routes it to the MCP app before Django."""
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("airweave.oauth.urls")),
    path("", include("airweave.api.urls")),
]
