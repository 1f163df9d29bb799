"""Who owns data: users, organizations, memberships and API keys."""
from __future__ import annotations

import uuid

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
