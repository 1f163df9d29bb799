"""The authorization server, on authlib's Django integration (the protocol is authlib's; storage
goes through `airweave.tenancy.oauth`, which keeps digests only).

- Authorization code grant with PKCE required of every client, S256 only (OAuth 2.1 §4.1.1).
- Refresh token grant with rotation: each refresh revokes the old pair and issues a new one.
- Dynamic client registration (RFC 7591), open, for public ("none") and confidential clients;
  redirect URIs must be https, loopback http, or a private-use scheme (RFC 8252).
- Revocation (RFC 7009), authenticated like the token endpoint.
- `resource` (RFC 8707) must name this server; it is recorded on the code and tokens.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from authlib.integrations.django_oauth2 import AuthorizationServer as DjangoAuthorizationServer
from authlib.oauth2.rfc6749 import OAuth2Error, grants
from authlib.oauth2.rfc6749.errors import InvalidRequestError
from authlib.oauth2.rfc6750 import BearerTokenGenerator
from authlib.oauth2.rfc7009 import RevocationEndpoint as BaseRevocationEndpoint
from authlib.oauth2.rfc7591 import ClientMetadataClaims, ClientRegistrationEndpoint
from authlib.oauth2.rfc7591.errors import InvalidClientMetadataError, InvalidRedirectURIError
from authlib.oauth2.rfc7636 import CodeChallenge

from airweave.tenancy.models import OAuthClient, OAuthToken, Organization, User, is_loopback_host
from airweave.tenancy.oauth import (
    access_token_seconds, new_access_token, new_refresh_token, oauth_client_get, oauth_client_register,
    oauth_code_issue, oauth_code_redeem, oauth_refresh_token_redeem, oauth_token_find, oauth_token_revoke,
    oauth_token_save,
)

CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
GRANT_TYPES = ["authorization_code", "refresh_token"]
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
FORBIDDEN_REDIRECT_SCHEMES = {"javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss"}


@dataclass(frozen=True)
class ResourceOwner:
    """Who a grant is for: the user who consented and the organization they chose for it."""

    user: User
    organization: Organization


class InvalidTargetError(OAuth2Error):
    """RFC 8707 §2: the `resource` parameter names a resource this server does not serve."""

    error = "invalid_target"


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


def check_resource(request) -> str:
    """The request's `resource` parameter (RFC 8707), "" when absent. Raises InvalidTargetError
    unless it is an absolute URL on this server's own origin."""
    resource = (request.payload.data.get("resource") or "").strip()
    if not resource:
        return ""
    parts = urlsplit(resource)
    if parts.fragment or not parts.scheme or _origin(resource) != _origin(request.uri):
        raise InvalidTargetError(f"resource {resource} is not served by this server")
    return resource


class S256CodeChallenge(CodeChallenge):
    """PKCE required on every authorization request, with the S256 method only."""

    DEFAULT_CODE_CHALLENGE_METHOD = "S256"
    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri):
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: send code_challenge and code_challenge_method=S256")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("Only code_challenge_method=S256 is supported")
        super().validate_code_challenge(grant, redirect_uri)


class AuthorizationCodeGrant(grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def validate_authorization_request(self):
        redirect_uri = super().validate_authorization_request()
        try:
            check_resource(self.request)
        except OAuth2Error as error:
            error.redirect_uri = redirect_uri
            raise
        return redirect_uri

    def save_authorization_code(self, code, request):
        owner: ResourceOwner = request.user
        oauth_code_issue(code=code, client=request.client, user=owner.user, organization=owner.organization,
                         redirect_uri=request.payload.redirect_uri or "", scope=request.scope or "",
                         resource=check_resource(request), code_challenge=request.payload.data["code_challenge"])

    def query_authorization_code(self, code, client):
        return oauth_code_redeem(code, client)

    def delete_authorization_code(self, authorization_code):
        """Nothing to do: redeeming marked the code used (it is kept to detect a replay)."""

    def authenticate_user(self, authorization_code):
        return ResourceOwner(user=authorization_code.user, organization=authorization_code.organization)


class RefreshTokenGrant(grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token):
        return oauth_refresh_token_redeem(refresh_token, self.request.client)

    def _validate_token_scope(self, token):
        """Accept any requested scope: scopes grant nothing here (a token acts for its organization
        like an API key), and the new token's scope is filtered by the client's registration."""

    def authenticate_user(self, refresh_token):
        return ResourceOwner(user=refresh_token.user, organization=refresh_token.organization)

    def revoke_old_credential(self, refresh_token):
        """Nothing to do: redeeming revoked the old pair."""


class RevocationEndpoint(BaseRevocationEndpoint):
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def query_token(self, token_string, token_type_hint):
        return oauth_token_find(token_string)

    def revoke_token(self, token, request):
        oauth_token_revoke(token)


def redirect_uri_problem(uri) -> str | None:
    """Why `uri` cannot be registered as a redirect URI, or None when it can (OAuth 2.1 §2.3.1)."""
    if not isinstance(uri, str) or not uri or len(uri) > MAX_URI_CHARS:
        return f"redirect URIs must be strings of 1 to {MAX_URI_CHARS} characters"
    if not all("\x21" <= c <= "\x7e" and c not in '"\\<>' for c in uri):
        # RFC 3986: a URI is ASCII; anything else is percent-encoded (and never echoed back here).
        return "redirect URIs must be ASCII without spaces, quotes, backslashes, angle brackets or control " \
               "characters (percent-encode them, RFC 3986)"
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018  (raises ValueError on a malformed port)
    except ValueError:
        return f"{uri} is not a valid URI"
    scheme = parts.scheme.lower()
    if parts.fragment or "#" in uri:
        return f"{uri} must not contain a fragment"
    if not scheme:
        return f"{uri} must be an absolute URI"
    if scheme == "https":
        return None if parts.hostname else f"{uri} has no host"
    if scheme == "http":
        return None if is_loopback_host(parts.hostname) else f"{uri}: http is only allowed for loopback hosts"
    if scheme in FORBIDDEN_REDIRECT_SCHEMES:
        return f"{uri}: the {scheme} scheme is not allowed"
    return None  # a private-use scheme of a native app, e.g. cursor:// or com.example.app:/cb


class RedirectCheckedClaims(ClientMetadataClaims):
    def validate_redirect_uris(self):
        """Checked before, by RegistrationEndpoint (authlib's check refuses RFC 8252 private-use URIs)."""


class RegistrationEndpoint(ClientRegistrationEndpoint):
    """Open dynamic client registration (RFC 7591 §3: no initial access token)."""

    def __init__(self, server=None, claims_classes=None):
        super().__init__(server, claims_classes or [RedirectCheckedClaims])

    def authenticate_token(self, request):
        return True

    def get_server_metadata(self):
        return {"grant_types_supported": GRANT_TYPES, "response_types_supported": ["code"],
                "token_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS}

    def extract_client_metadata(self, request):
        data = request.payload.data
        uris = data.get("redirect_uris")
        if not isinstance(uris, list) or not 1 <= len(uris) <= MAX_REDIRECT_URIS:
            raise InvalidRedirectURIError(f"redirect_uris must be a list of 1 to {MAX_REDIRECT_URIS} URIs")
        for uri in uris:
            if problem := redirect_uri_problem(uri):
                raise InvalidRedirectURIError(problem.replace('"', "'"))
        for name, limit in (("client_name", 200), ("scope", 500), ("token_endpoint_auth_method", 32)):
            if name in data and not (isinstance(data[name], str) and len(data[name]) <= limit):
                raise InvalidClientMetadataError(f"{name} must be a string of at most {limit} characters")
        for name, allowed in (("grant_types", GRANT_TYPES), ("response_types", ["code"])):
            value = data.get(name)
            if value is not None and not (isinstance(value, list) and value and set(value) <= set(allowed)):
                raise InvalidClientMetadataError(f"{name} must be a non-empty list drawn from {', '.join(allowed)}")
        method = data.get("token_endpoint_auth_method")
        if method is not None and method not in CLIENT_AUTH_METHODS:
            raise InvalidClientMetadataError(f"token_endpoint_auth_method must be one of {', '.join(CLIENT_AUTH_METHODS)}")
        try:
            metadata = super().extract_client_metadata(request)
        except (TypeError, ValueError, AttributeError) as exc:
            raise InvalidClientMetadataError(f"invalid client metadata: {type(exc).__name__}") from exc
        metadata.setdefault("grant_types", ["authorization_code"])
        metadata.setdefault("response_types", ["code"])
        if "authorization_code" not in metadata["grant_types"]:
            raise InvalidClientMetadataError("grant_types must include authorization_code")
        return metadata

    def generate_client_info(self, request):
        return {}  # the client id and secret are made by oauth_client_register (see save_client)

    def save_client(self, client_info, client_metadata, request):
        return oauth_client_register(
            client_name=client_metadata.get("client_name", ""), redirect_uris=client_metadata["redirect_uris"],
            grant_types=client_metadata["grant_types"], response_types=client_metadata["response_types"],
            token_endpoint_auth_method=client_metadata["token_endpoint_auth_method"],
            scope=client_metadata.get("scope", ""), metadata=client_metadata)

    def generate_client_registration_info(self, issued, request):
        client = issued.client
        info = {"client_id": client.client_id, "client_id_issued_at": int(client.created_at.timestamp())}
        if issued.client_secret:
            info["client_secret"] = issued.client_secret
            info["client_secret_expires_at"] = int(client.expires_at.timestamp())
        return info


class AuthorizationServer(DjangoAuthorizationServer):
    """The one authorization server of the product (see the module docstring)."""

    def __init__(self):
        super().__init__(client_model=OAuthClient, token_model=OAuthToken)
        self.register_token_generator("default", BearerTokenGenerator(
            access_token_generator=new_access_token, refresh_token_generator=new_refresh_token,
            expires_generator=lambda client, grant_type: access_token_seconds()))
        self.register_grant(AuthorizationCodeGrant, [S256CodeChallenge(required=True)])
        self.register_grant(RefreshTokenGrant)
        self.register_endpoint(RevocationEndpoint)
        self.register_endpoint(RegistrationEndpoint)

    def query_client(self, client_id):
        return oauth_client_get(client_id)

    def save_token(self, token, request):
        owner: ResourceOwner = request.user
        origin = request.authorization_code or request.refresh_token
        return oauth_token_save(
            client=request.client, user=owner.user, organization=owner.organization,
            access_token=token["access_token"], refresh_token=token.get("refresh_token"),
            expires_in=token["expires_in"], scope=token.get("scope", ""), resource=origin.resource,
            family=origin.family)


server = AuthorizationServer()
