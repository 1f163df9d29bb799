"""Accounts end to end through the pages: sign up → verify the email → log in → invite → accept →
switch organization; password reset; the API follows the organization chosen in the pages."""
from __future__ import annotations

import re

import pytest
from django.core import mail
from django.test import Client

from airweave.tenancy.models import Invitation, Membership, Organization, User

PASSWORD = "correct-horse-battery-7"


def _link(message, pattern=r"https?://testserver(/\S+)") -> str:
    match = re.search(pattern, message.body)
    assert match, message.body
    return match.group(1)


def _sign_up_and_verify(email: str, next_url: str | None = None) -> Client:
    """Sign up with `email`, follow the verification link, log in; returns the logged-in browser."""
    browser = Client()
    sent = len(mail.outbox)
    url = "/accounts/signup/" + (f"?next={next_url}" if next_url else "")
    response = browser.post(url, {"email": email, "password1": PASSWORD, "password2": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:2000]
    # Mandatory verification: no session before the link is followed.
    assert browser.get("/accounts/").status_code == 302
    (verification,) = mail.outbox[sent:]
    assert verification.to == [email]
    confirm = _link(verification)
    assert browser.get(confirm).status_code == 200
    assert browser.post(confirm).status_code == 302
    response = browser.post("/accounts/login/", {"login": email, "password": PASSWORD})
    assert response.status_code == 302, response.content.decode()[:2000]
    return browser


@pytest.fixture(autouse=True)
def console_like_mail(settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    settings.ACCOUNT_EMAIL_VERIFICATION = "mandatory"


def test_sign_up_verify_log_in_invite_accept_and_switch(db):
    alice = _sign_up_and_verify("alice@example.com")
    home = alice.get("/accounts/")
    assert home.status_code == 200
    personal = Organization.objects.get(memberships__user__email="alice@example.com")
    assert Membership.objects.get(organization=personal).role == "owner"
    assert personal.name in home.content.decode()

    # Alice creates a team organization and invites Bob as an admin.
    assert alice.post("/accounts/organizations/new", {"name": "Team Rocket"}).status_code == 302
    team = Organization.objects.get(name="Team Rocket")
    response = alice.post("/accounts/organization/members", {"action": "invite", "email": "Bob@Example.com",
                                                             "role": "admin"})
    assert response.status_code == 302
    (invitation_mail,) = [m for m in mail.outbox if m.to == ["bob@example.com"]]
    assert "Team Rocket" in invitation_mail.subject
    accept_path = _link(invitation_mail)
    token = accept_path.rsplit("/", 1)[1]
    assert token not in Invitation.objects.values_list("token_hash", flat=True)[0]  # only a digest is stored

    # Bob opens the link logged out, signs up, verifies, logs in and comes back to accept.
    anonymous = Client().get(accept_path)
    assert anonymous.status_code == 200 and "Team Rocket" in anonymous.content.decode()
    bob = _sign_up_and_verify("bob@example.com", next_url=accept_path)
    assert not Membership.objects.filter(user__email="bob@example.com").exists()  # no personal org: he was invited
    assert bob.get(accept_path).status_code == 200
    accepted = bob.post(accept_path)
    assert accepted.status_code == 302
    assert Membership.objects.get(user__email="bob@example.com", organization=team).role == "admin"
    assert bob.post(accept_path).status_code == 404  # used once: it no longer works
    assert Membership.objects.filter(user__email="bob@example.com").count() == 1

    # Alice switches between her organizations; the API follows the session's choice.
    assert alice.get("/collections/count").status_code == 200
    alice.post("/accounts/organizations/switch", {"organization_id": str(team.pk)})
    assert alice.post("/collections", '{"name": "Team documents", "readable_id": "team-docs"}',
                      content_type="application/json").json()["organization_id"] == str(team.pk)
    alice.post("/accounts/organizations/switch", {"organization_id": str(personal.pk)})
    assert alice.get("/collections/team-docs").status_code == 404
    assert alice.get("/collections/team-docs", headers={"X-Organization-ID": str(team.pk)}).status_code == 200
    # Bob cannot switch to Alice's personal organization.
    assert bob.post("/accounts/organizations/switch", {"organization_id": str(personal.pk)}).status_code == 404


def test_an_invitation_is_for_its_address_only(db):
    alice = _sign_up_and_verify("alice@example.com")
    alice.post("/accounts/organization/members", {"action": "invite", "email": "bob@example.com", "role": "member"})
    accept_path = _link([m for m in mail.outbox if m.to == ["bob@example.com"]][0])
    mallory = _sign_up_and_verify("mallory@example.com")
    page = mallory.get(accept_path).content.decode()
    assert "sent to bob@example.com" in page
    mallory.post(accept_path)
    assert not Membership.objects.filter(user__email="mallory@example.com", organization__name="alice@example.com")\
        .exists()


def test_unknown_or_revoked_invitations_do_not_work(db):
    alice = _sign_up_and_verify("alice@example.com")
    assert Client().get("/accounts/invitations/not-a-token").status_code == 404
    alice.post("/accounts/organization/members", {"action": "invite", "email": "carol@example.com", "role": "member"})
    accept_path = _link([m for m in mail.outbox if m.to == ["carol@example.com"]][0])
    invitation = Invitation.objects.get(email="carol@example.com")
    alice.post("/accounts/organization/members", {"action": "revoke_invitation", "invitation_id": str(invitation.pk)})
    assert Client().get(accept_path).status_code == 404


def test_password_reset_by_email(db):
    _sign_up_and_verify("dora@example.com")
    browser = Client()
    sent = len(mail.outbox)
    assert browser.post("/accounts/password/reset/", {"email": "dora@example.com"}).status_code == 302
    (reset,) = mail.outbox[sent:]
    link = _link(reset)
    form = browser.get(link, follow=True)
    assert form.status_code == 200
    new_password = "another-long-passphrase-9"
    response = browser.post(form.redirect_chain[-1][0] if form.redirect_chain else link,
                            {"password1": new_password, "password2": new_password})
    assert response.status_code == 302
    assert User.objects.get(email="dora@example.com").check_password(new_password)


def test_social_login_is_configured_by_settings():
    """AIRWEAVE_SOCIAL_PROVIDERS adds allauth providers with <NAME>_CLIENT_ID/SECRET (none by default)."""
    import os
    import subprocess
    import sys

    from django.conf import settings

    env = {**os.environ, "AIRWEAVE_SOCIAL_PROVIDERS": "github", "GITHUB_CLIENT_ID": "abc", "GITHUB_CLIENT_SECRET": "xyz",
           "DJANGO_SETTINGS_MODULE": "airweave.settings"}
    code = ("import django; django.setup(); from django.conf import settings as s; "
            "print('allauth.socialaccount.providers.github' in s.INSTALLED_APPS, s.SOCIALACCOUNT_PROVIDERS['github']['APP']['client_id'])")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=settings.BASE_DIR,
                         timeout=120)
    assert out.stdout.split() == ["True", "abc"], out.stderr[-2000:]
