"""ASGI entry point (daphne): HTTP through Django, websockets through Channels."""
import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "airweave.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()


def _warm_up() -> None:
    """Load the default embedding model in the background so the first search does not wait for it."""
    from django.conf import settings

    from airweave.providers.embeddings import get_embedder

    get_embedder(settings.AIRWEAVE_DEFAULT_EMBEDDING_MODEL).tokenizer


if os.environ.get("AIRWEAVE_WARM_UP", "1") == "1":
    import threading

    threading.Thread(target=_warm_up, name="embedding-warm-up", daemon=True).start()

from channels.routing import ProtocolTypeRouter  # noqa: E402

application = ProtocolTypeRouter({"http": django_asgi_app})
