"""Account pages under /accounts/ (mounted before django-allauth's, which share the prefix)."""
from django.urls import path

from airweave.web.accounts import views

urlpatterns = [
    path("", views.home, name="accounts_home"),
    path("organizations/switch", views.organization_switch, name="accounts_switch"),
    path("organizations/new", views.organization_create, name="accounts_organization_create"),
    path("organization/members", views.members, name="accounts_members"),
    path("invitations/<str:token>", views.invitation, name="accounts_invitation"),
    path("api-keys", views.api_keys, name="accounts_api_keys"),
]
