"""The layout, the redirect from /, login required, the organization from the session, roles, 404s."""
from __future__ import annotations

import pytest

from airweave.tenancy.context import SESSION_ORGANIZATION_KEY


@pytest.mark.django_db
def test_root_redirects_to_the_ui_and_the_ui_needs_a_login(client):
    assert client.get("/")["Location"] == "/ui/"
    response = client.get("/ui/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_layout_has_navigation_pico_and_htmx(team, browser):
    page = browser(team[1]).get("/ui/").content.decode()
    assert '/static/vendor/pico/pico.min.css' in page and '/static/vendor/htmx/htmx.min.js' in page
    assert 'aria-label="Main"' in page and "Team (owner)" in page


def test_account_pages_share_the_layout(team, browser):
    page = browser(team[3]).get("/accounts/api-keys").content.decode()
    assert '/static/vendor/pico/pico.min.css' in page and 'href="/ui/collections/"' in page


def test_static_files_are_served_without_debug(team, browser, settings):
    settings.DEBUG = False
    response = browser(team[1]).get("/static/vendor/htmx/htmx.min.js")
    assert response.status_code == 200
    assert b"htmx" in b"".join(response.streaming_content) if response.streaming else response.content


def test_another_organizations_urls_answer_404(team, docs, stranger, browser):
    collection, connection, job, _ = docs
    eve = browser(stranger)
    entity = collection.entities.first()
    for url in (f"/ui/collections/{collection.readable_id}/", f"/ui/collections/{collection.readable_id}/search",
                f"/ui/collections/{collection.readable_id}/entities/",
                f"/ui/collections/{collection.readable_id}/entities/{entity.pk}/",
                f"/ui/collections/{collection.readable_id}/sources/",
                f"/ui/collections/{collection.readable_id}/connections/{connection.id}/jobs/",
                f"/ui/collections/{collection.readable_id}/connections/{connection.id}/panel"):
        assert eve.get(url).status_code == 404, url
    assert eve.post(f"/ui/collections/{collection.readable_id}/connections/{connection.id}/action",
                    {"action": "run"}).status_code == 404
    assert eve.post(f"/ui/collections/{collection.readable_id}/delete", {"confirm": "handbook"}).status_code == 404
    collection.refresh_from_db()  # still there


def test_the_session_organization_is_used(team, stranger, browser, make_collection):
    from airweave.tenancy.models import Membership

    organization = team[0]
    Membership.objects.create(user=stranger, organization=organization, role="member")
    make_collection(readable_id="team-docs", name="Team docs", organization=organization)
    eve = browser(stranger)
    assert "team-docs" not in eve.get("/ui/collections/").content.decode()  # her oldest organization first
    session = eve.session
    session[SESSION_ORGANIZATION_KEY] = str(organization.pk)
    session.save()
    assert "team-docs" in eve.get("/ui/collections/").content.decode()


def test_organization_switch_comes_back_to_the_ui(team, stranger, browser):
    from airweave.tenancy.models import Membership

    Membership.objects.create(user=stranger, organization=team[0], role="member")
    response = browser(stranger).post("/accounts/organizations/switch",
                                      {"organization_id": str(team[0].pk), "next": "/ui/collections/"})
    assert response["Location"] == "/ui/collections/"


def test_a_member_cannot_delete_a_collection(team, docs, browser):
    collection = docs[0]
    member = browser(team[3])
    page = member.get(f"/ui/collections/{collection.readable_id}/").content.decode()
    assert "Delete this collection" not in page
    response = member.post(f"/ui/collections/{collection.readable_id}/delete", {"confirm": "handbook"})
    assert response.status_code == 403 and "needs the admin role" in response.content.decode()
    collection.refresh_from_db()


def test_an_admin_deletes_a_collection_after_confirming(team, docs, browser):
    from airweave.collections.models import Collection, Entity

    collection = docs[0]
    admin = browser(team[2])
    page = admin.get("/ui/collections/handbook/").content.decode()
    assert "Delete this collection" in page and "2 entities" in page
    wrong = admin.post("/ui/collections/handbook/delete", {"confirm": "nope"}, follow=True)
    assert "Type the readable id" in wrong.content.decode() and Collection.objects.filter(pk=collection.pk).exists()
    done = admin.post("/ui/collections/handbook/delete", {"confirm": "handbook"})
    assert done["Location"] == "/ui/collections/"
    assert not Collection.objects.filter(pk=collection.pk).exists()
    assert not Entity.objects.filter(collection_id=collection.pk).exists()


def test_a_user_without_organization_is_sent_to_create_one(db, browser):
    from airweave.tenancy.models import User

    lonely = User.objects.create_user("lonely@x.example", "pw-123456")
    response = browser(lonely).get("/ui/")
    assert response["Location"] == "/accounts/"
