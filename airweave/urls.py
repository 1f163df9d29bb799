"""URL map: the REST API at the root paths of docs/api.md, admin, accounts pages, schema and its docs
page, OAuth, and the web UI under /ui/ (`/` redirects there). `/mcp` is not here: asgi.py routes it to the MCP app before Django."""
from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("", RedirectView.as_view(url="/ui/", permanent=False)),
    path("ui/", include("airweave.web.ui.urls")),
    path("admin/", admin.site.urls),
    path("accounts/", include("airweave.web.accounts.urls")),
    path("accounts/", include("allauth.urls")),
    path("", include("airweave.oauth.urls")),
    path("", include("airweave.api.urls")),
]

handler500 = "airweave.api.compat.server_error"
