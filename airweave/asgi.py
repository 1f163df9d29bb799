"""ASGI entry point (daphne): HTTP through Django (but `/mcp`: the MCP app), websockets through Channels."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

# Static files (the web UI's vendored htmx and Pico CSS, the API docs page, the admin) are served by
# WhiteNoise's middleware, DEBUG on or off: the product runs as one process on a laptop.
django_asgi_app = get_asgi_application()


def _warm_up() -> None:
    """Load the default embedding model in the background so the first search does not wait for it."""
    from django.conf import settings

    from airweave.providers.embeddings import get_embedder

    get_embedder(settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL).tokenizer


if os.environ.get("AIRWEAVE_WARM_UP", "1") == "1":
    import threading

    threading.Thread(target=_warm_up, name="embedding-warm-up", daemon=True).start()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from django.urls import path  # noqa: E402

from airweave.api.consumers import SearchConsumer, SyncJobConsumer  # noqa: E402
from airweave.api.ws_auth import OriginCheck, WebsocketAuthStack  # noqa: E402
from airweave.mcp.http import mcp_app  # noqa: E402

websocket_urlpatterns = [
    path("ws/collections/<str:readable_id>/search/", SearchConsumer.as_asgi()),
    path("ws/sync/job/<uuid:job_id>/", SyncJobConsumer.as_asgi()),
]


async def http_app(scope, receive, send):
    """`/mcp` (streamable HTTP MCP) goes to the MCP app, everything else to Django."""
    if scope["path"] == "/mcp":
        return await mcp_app(scope, receive, send)
    return await django_asgi_app(scope, receive, send)


application = ProtocolTypeRouter({
    "http": http_app,
    "websocket": OriginCheck(WebsocketAuthStack(URLRouter(websocket_urlpatterns))),
})
