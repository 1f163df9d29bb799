"""Who owns data: users, organizations, memberships, API keys and OAuth credentials."""
from __future__ import annotations

import hashlib
import hmac
import ipaddress
import uuid
from urllib.parse import urlsplit

from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models
from django.utils import timezone


class UserManager(BaseUserManager):
    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra):
        if not email:
            raise ValueError("A user needs an email address.")
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra):
        extra.setdefault("is_staff", True)
        extra.setdefault("is_superuser", True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person. Logs in with their email address."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    email = models.EmailField(unique=True)
    full_name = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()
    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"

    def __str__(self) -> str:
        return self.email


class Organization(models.Model):
    """A tenant: every piece of data belongs to exactly one organization.

    The `quota_*` fields override the server-wide quota settings for this organization
    (None: the setting applies; see airweave/tenancy/quotas.py).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)
    quota_entities = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most entities across all collections (empty: AIRWEAVE_QUOTA_ENTITIES).")
    quota_searches_per_month = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most searches per calendar month, UTC (empty: AIRWEAVE_QUOTA_SEARCHES_PER_MONTH).")
    quota_source_connections = models.PositiveIntegerField(
        null=True, blank=True, help_text="Most source connections (empty: AIRWEAVE_QUOTA_SOURCE_CONNECTIONS).")

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    """A user's place in an organization. Owners and admins manage members, invitations and
    organization-wide API keys; only owners make owners; an organization keeps at least one owner."""

    class Role(models.TextChoices):
        OWNER = "owner"
        ADMIN = "admin"
        MEMBER = "member"

    RANK = {Role.MEMBER: 0, Role.ADMIN: 1, Role.OWNER: 2}

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="memberships")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "organization"], name="uniq_membership")]

    def __str__(self) -> str:
        return f"{self.user} in {self.organization} ({self.role})"

    def has_role(self, at_least: str) -> bool:
        """True when this membership's role is `at_least` or higher (member < admin < owner)."""
        return self.RANK[self.role] >= self.RANK[at_least]


class Invitation(models.Model):
    """An invitation by email to join an organization with a role.

    The emailed link carries a random token; only its SHA-256 digest is stored. It is accepted
    once, by a logged-in user whose email is the invited one, before `expires_at`.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="invitations")
    email = models.EmailField()
    role = models.CharField(max_length=16, choices=Membership.Role.choices, default=Membership.Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    invited_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    accepted_at = models.DateTimeField(null=True, blank=True)
    accepted_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["organization", "email"], name="uniq_open_invitation",
                                    condition=models.Q(accepted_at__isnull=True, revoked_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.email} to {self.organization} ({self.role})"

    def is_open(self, now=None) -> bool:
        now = now or timezone.now()
        return self.accepted_at is None and self.revoked_at is None and self.expires_at > now


class APIKey(models.Model):
    """An API key. Only a SHA-256 digest of its secret is stored; `prefix` is shown to users.

    The full key reads `aw_<prefix>_<secret>`; it is looked up by `prefix` (unique index)
    and its secret compared in constant time. A key with a `user` acts as that user (a user
    principal: access control applies, and the key stops working when the user leaves the
    organization); a key without one acts organization-wide.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="api_keys")
    user = models.ForeignKey(User, null=True, blank=True, on_delete=models.CASCADE, related_name="api_keys",
                             help_text="Bound to this user (acts as them); empty: organization-wide.")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    secret_hash = models.CharField(max_length=64)
    created_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    modified_by = models.ForeignKey(User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    modified_at = models.DateTimeField(auto_now=True)
    expires_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    rotated_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
                                     help_text="The key this one replaced by rotation.")

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"aw_{self.prefix}_… ({self.organization})"

    def is_usable(self, now=None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and (self.expires_at is None or self.expires_at > now)


class UsageCounter(models.Model):
    """How much of a metered quantity (e.g. "searches") an organization used in one period.

    `period` is the first day of the calendar month (UTC). Incremented with one atomic upsert.
    """

    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    metric = models.CharField(max_length=32)
    period = models.DateField()
    count = models.BigIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["organization", "metric", "period"], name="uniq_usage_counter")]

    def __str__(self) -> str:
        return f"{self.organization} {self.metric} {self.period:%Y-%m}: {self.count}"


class OAuthClient(models.Model):
    """An OAuth client registered through dynamic client registration (RFC 7591).

    Public clients (`token_endpoint_auth_method` "none", e.g. desktop agents) have no secret;
    confidential clients have one, of which only a SHA-256 digest is stored. A registration
    expires at `expires_at` unless tokens keep being issued to it (each issuance extends it).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    client_id = models.CharField(max_length=64, unique=True)
    secret_hash = models.CharField(max_length=64, blank=True)
    client_name = models.CharField(max_length=200, blank=True)
    redirect_uris = models.JSONField(default=list)
    grant_types = models.JSONField(default=list)
    response_types = models.JSONField(default=list)
    token_endpoint_auth_method = models.CharField(max_length=32, default="none")
    scope = models.CharField(max_length=500, blank=True)
    metadata = models.JSONField(default=dict, blank=True)  # every registered metadata value, as answered
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField(db_index=True)

    class Meta:
        verbose_name = "OAuth client"

    def __str__(self) -> str:
        return f"{self.client_name or 'OAuth client'} ({self.client_id})"

    # The client interface the OAuth library's grants call (authlib's ClientMixin, duck-typed).
    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str | None:
        """The redirect URI when the request names none: only when exactly one is registered (OAuth 2.1)."""
        return self.redirect_uris[0] if len(self.redirect_uris) == 1 else None

    def get_allowed_scope(self, scope: str | None) -> str:
        """The granted scope: the requested scopes this client registered (tokens act for one
        organization like an API key; scopes only echo what the client asked for)."""
        if not scope:
            return ""
        registered = set(self.scope.split())
        return " ".join(s for s in scope.split() if s in registered)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return any(redirect_uri_matches(registered, redirect_uri) for registered in self.redirect_uris)

    def check_client_secret(self, client_secret: str) -> bool:
        digest = hashlib.sha256(client_secret.encode()).hexdigest()
        return bool(self.secret_hash) and hmac.compare_digest(self.secret_hash, digest)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        """A client authenticates the same way at every endpoint: the way it registered."""
        return method == self.token_endpoint_auth_method

    def check_response_type(self, response_type: str) -> bool:
        return response_type in self.response_types

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


LOOPBACK_HOSTS = {"localhost", "127.0.0.1", "::1"}


def redirect_uri_matches(registered: str, requested: str) -> bool:
    """Exact string match, except that a loopback `http` redirect URI matches on any port
    (RFC 8252 §7.3, OAuth 2.1 §8.4.2: native apps pick a free port at request time)."""
    if registered == requested:
        return True
    try:
        a, b = urlsplit(registered), urlsplit(requested)
        a.port, b.port  # noqa: B018  (raises ValueError on a malformed port)
    except ValueError:
        return False
    return (a.scheme == b.scheme == "http" and a.hostname in LOOPBACK_HOSTS and a.hostname == b.hostname
            and a.path == b.path and a.query == b.query and not b.fragment)


def is_loopback_host(host: str | None) -> bool:
    """True for localhost and loopback IP addresses (127.0.0.0/8, ::1)."""
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class OAuthAuthorizationCode(models.Model):
    """A one-time authorization code, bound to a client, a user, an organization, a redirect URI
    and a PKCE S256 challenge. Only its SHA-256 digest is stored.

    Redeeming marks `redeemed_at`; the tokens it yields share its `family`, so a code presented a
    second time revokes them (RFC 6749 §4.1.2).
    """

    code_hash = models.CharField(max_length=64, unique=True)
    family = models.UUIDField(default=uuid.uuid4)
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="+")
    redirect_uri = models.TextField()
    scope = models.CharField(max_length=500, blank=True)
    resource = models.TextField(blank=True)
    code_challenge = models.CharField(max_length=128)
    code_challenge_method = models.CharField(max_length=8, default="S256")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    redeemed_at = models.DateTimeField(null=True, blank=True)

    # The code interface the OAuth library's grant calls (authlib's AuthorizationCodeMixin, duck-typed).
    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


class OAuthToken(models.Model):
    """An access token and its refresh token, issued to one client for one user acting for one
    organization. Only SHA-256 digests of both are stored.

    Refreshing rotates: the old row is revoked and a new row of the same `family` is issued. A
    revoked refresh token presented again revokes the whole family (OAuth 2.1 reuse detection).
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    family = models.UUIDField(default=uuid.uuid4, db_index=True)
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="oauth_tokens")
    organization = models.ForeignKey(Organization, on_delete=models.CASCADE, related_name="oauth_tokens")
    access_token_hash = models.CharField(max_length=64, unique=True)
    refresh_token_hash = models.CharField(max_length=64, unique=True, null=True, blank=True)
    scope = models.CharField(max_length=500, blank=True)
    resource = models.TextField(blank=True)
    issued_at = models.DateTimeField(default=timezone.now)
    access_expires_at = models.DateTimeField()
    refresh_expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "OAuth token"

    def __str__(self) -> str:
        return f"OAuth token of {self.user_id} for {self.organization_id} via client {self.client_id}"

    def is_usable(self, now=None) -> bool:
        """Not revoked and the access token not expired."""
        now = now or timezone.now()
        return self.revoked_at is None and self.access_expires_at > now

    # The token interface the OAuth library's endpoints call (authlib's TokenMixin, duck-typed).
    def check_client(self, client) -> bool:
        return self.client_id == client.pk

    def get_scope(self) -> str:
        return self.scope

    def get_expires_in(self) -> int:
        return max(0, int((self.access_expires_at - self.issued_at).total_seconds()))

    def is_expired(self) -> bool:
        return self.access_expires_at <= timezone.now()

    def is_revoked(self) -> bool:
        return self.revoked_at is not None

    def get_client(self):
        return self.client
