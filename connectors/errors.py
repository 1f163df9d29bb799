"""The errors of the source contract, below everything else of `connectors`.

Converters, the HTTP client and auth raise these; the sync pipeline catches them. `connectors.base`
re-exports them as part of the contract a source stands on.
"""
from __future__ import annotations


class SourceError(Exception):
    """A failure of the whole source (bad config, unreachable service). Fails the sync job.

    `category` is a short machine-readable tag, e.g. "config_error", "auth_error".
    """

    def __init__(self, message: str, category: str = "source_error"):
        super().__init__(message)
        self.category = category


AUTH_ERROR_CATEGORIES = frozenset({
    "invalid_credentials",   # the service refused the credentials (401 after any refresh)
    "token_expired",         # an access token expired and cannot be refreshed (no refresh token)
    "refresh_failed",        # the token endpoint refused the refresh token (revoked, rotated away)
    "insufficient_scope",    # the grant lacks a scope the source needs
    "oauth_error",           # the authorization flow itself failed (denied, bad state, bad code)
})


class AuthFailure(SourceError):
    """The connection's credentials no longer work; the user must authenticate again.

    Raising it (or letting the HTTP client raise it) fails the sync job and marks the source
    connection `needs_reauth` with `error_category` = `category`, one of AUTH_ERROR_CATEGORIES.
    """

    def __init__(self, message: str, category: str = "invalid_credentials"):
        if category not in AUTH_ERROR_CATEGORIES:
            raise ValueError(f"unknown auth error category '{category}'")
        super().__init__(message, category)


class SkipEntity(Exception):
    """One entity cannot be indexed (unreadable, encrypted, empty, too large).

    Counted as skipped on the job with `reason`; never fails the sync.
    """

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
