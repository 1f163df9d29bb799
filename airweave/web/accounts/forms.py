"""Forms of the account pages: they validate input; services decide."""
from __future__ import annotations

from django import forms

from airweave.tenancy.models import Membership
from airweave.tenancy.services import API_KEY_DEFAULT_DAYS, API_KEY_MAX_DAYS


class OrganizationForm(forms.Form):
    name = forms.CharField(min_length=2, max_length=200)


class SwitchOrganizationForm(forms.Form):
    organization_id = forms.UUIDField()


class InvitationForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.MEMBER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class APIKeyForm(forms.Form):
    name = forms.CharField(max_length=200, required=False)
    expiration_days = forms.IntegerField(min_value=1, max_value=API_KEY_MAX_DAYS, initial=API_KEY_DEFAULT_DAYS)
    user_bound = forms.BooleanField(required=False, initial=True,
                                    label="Acts as me (access control applies); unticked: organization-wide")
