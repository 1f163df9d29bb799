"""django-allauth adapters: every new account (email or social sign-up) is onboarded by the
tenancy services — a personal organization, unless an invitation waits for the address."""
from __future__ import annotations

from allauth.account.adapter import DefaultAccountAdapter
from allauth.socialaccount.adapter import DefaultSocialAccountAdapter
from django.conf import settings

from airweave.tenancy.services import user_onboard


class AccountAdapter(DefaultAccountAdapter):
    def is_open_for_signup(self, request) -> bool:
        """Sign-up is open unless AIRWEAVE_SIGNUP_ENABLED is false (invitations still need an account)."""
        return settings.ACCOUNT_SIGNUP_ENABLED

    def save_user(self, request, user, form, commit=True):
        user = super().save_user(request, user, form, commit=commit)
        if commit:
            user_onboard(user)
        return user


class SocialAccountAdapter(DefaultSocialAccountAdapter):
    def save_user(self, request, sociallogin, form=None):
        user = super().save_user(request, sociallogin, form)
        user_onboard(user)
        return user
