"""OAuth routes: RFC 8414 / RFC 9728 metadata at /.well-known/, the endpoints under /oauth/."""
from django.urls import path

from airweave.oauth import views
from airweave.oauth.metadata import MCP_PATH

urlpatterns = [
    path(".well-known/oauth-authorization-server", views.authorization_server_metadata),
    path(".well-known/oauth-protected-resource", views.protected_resource_metadata),
    path(".well-known/oauth-protected-resource/mcp", views.protected_resource_metadata,
         {"resource_path": MCP_PATH}),
    path("oauth/authorize", views.authorize, name="oauth-authorize"),
    path("oauth/token", views.token),
    path("oauth/register", views.register),
    path("oauth/revoke", views.revoke),
]
