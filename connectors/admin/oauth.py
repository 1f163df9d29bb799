"""The admin's "Connect with OAuth" button: starts a connection's browser OAuth flow."""
from __future__ import annotations

import logging

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.urls import reverse

from connectors.admin.forms import source_of

logger = logging.getLogger(__name__)
OAUTH_CALLBACK_PATH = "/source-connections/callback"


def oauth_start(model_admin, request, object_id):
    """Starts the browser OAuth flow of a connection: redirects to the provider's consent page.

    `model_admin` is the SourceConnectionAdmin serving the request. Calls
    connectors.authorization.start_authorization(connection, redirect_uri) -> auth URL; when the
    source needs settings it lacks (e.g. no client id), or that module cannot be imported, says so
    and goes back to the change page.
    """
    connection = model_admin.get_object(request, object_id)
    if connection is None:
        return HttpResponseRedirect(reverse("admin:collections_sourceconnection_changelist"))
    if not model_admin.has_change_permission(request, connection):
        raise PermissionDenied
    back = HttpResponseRedirect(reverse("admin:collections_sourceconnection_change", args=[connection.pk]))
    if "oauth_browser" not in getattr(source_of(connection.short_name), "auth_methods", ()):
        model_admin.message_user(request, f"{connection.short_name} does not authenticate with OAuth.", messages.ERROR)
        return back
    try:
        from connectors.authorization import start_authorization
    except ImportError:
        model_admin.message_user(request, "OAuth is not configured on this server (connectors.authorization is not "
                                          "installed); authenticate this connection with credentials instead.",
                                 messages.ERROR)
        return back
    try:
        url = start_authorization(connection, request.build_absolute_uri(OAUTH_CALLBACK_PATH))
    except Exception as exc:  # e.g. no client id configured for this source: say so, do not crash the page
        logger.warning("OAuth start failed for source connection %s", connection.pk, exc_info=True)
        model_admin.message_user(request, f"OAuth cannot start: {exc}", messages.ERROR)
        return back
    return HttpResponseRedirect(url)
