from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from airweave.tenancy.models import (
    APIKey, Invitation, Membership, OAuthClient, OAuthToken, Organization, UsageCounter, User,
)
from airweave.tenancy.oauth import oauth_token_revoke


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    ordering = ["email"]
    list_display = ["email", "full_name", "is_staff", "is_active", "date_joined"]
    search_fields = ["email", "full_name"]
    fieldsets = [
        (None, {"fields": ["email", "password", "full_name"]}),
        ("Permissions", {"fields": ["is_active", "is_staff", "is_superuser", "groups", "user_permissions"]}),
    ]
    add_fieldsets = [(None, {"classes": ["wide"], "fields": ["email", "password1", "password2"]})]


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ["name", "created_at"]
    search_fields = ["name"]
    inlines = [MembershipInline]


@admin.register(APIKey)
class APIKeyAdmin(admin.ModelAdmin):
    list_display = ["prefix", "name", "organization", "created_at", "expires_at", "last_used_at", "revoked_at"]
    list_filter = ["organization"]
    search_fields = ["prefix", "name"]
    readonly_fields = ["prefix", "secret_hash", "created_at", "last_used_at"]


@admin.register(Invitation)
class InvitationAdmin(admin.ModelAdmin):
    list_display = ["email", "organization", "role", "invited_by", "created_at", "expires_at", "accepted_at", "revoked_at"]
    list_filter = ["role", "organization"]
    search_fields = ["email", "organization__name"]
    exclude = ["token_hash"]  # the link's token is never stored; its digest is of no use to an operator
    readonly_fields = ["created_at", "accepted_at", "accepted_by"]


@admin.register(UsageCounter)
class UsageCounterAdmin(admin.ModelAdmin):
    list_display = ["organization", "metric", "period", "count"]
    list_filter = ["metric", "period"]
    search_fields = ["organization__name"]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "organization", "role", "created_at"]
    list_filter = ["role", "organization"]
    search_fields = ["user__email", "organization__name"]
    list_select_related = ["user", "organization"]
    autocomplete_fields = ["user", "organization"]


@admin.register(OAuthClient)
class OAuthClientAdmin(admin.ModelAdmin):
    list_display = ["client_name", "client_id", "token_endpoint_auth_method", "created_at", "expires_at"]
    search_fields = ["client_name", "client_id"]
    readonly_fields = ["client_id", "secret_hash", "redirect_uris", "grant_types", "response_types",
                       "token_endpoint_auth_method", "scope", "metadata", "created_at"]


@admin.register(OAuthToken)
class OAuthTokenAdmin(admin.ModelAdmin):
    list_display = ["user", "organization", "client", "issued_at", "access_expires_at", "refresh_expires_at",
                    "last_used_at", "revoked_at"]
    list_filter = ["organization"]
    search_fields = ["user__email", "client__client_name"]
    list_select_related = ["user", "organization", "client"]
    readonly_fields = [f.name for f in OAuthToken._meta.fields]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected tokens (and the rest of their grants)")
    def revoke(self, request, queryset):
        for token in queryset:
            oauth_token_revoke(token)
        self.message_user(request, f"Revoked {queryset.count()} grant(s).")

    def has_add_permission(self, request):
        return False
