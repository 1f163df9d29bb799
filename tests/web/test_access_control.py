"""What a member sees in the playground and the explorer is what access control lets them see; an
admin may search as a member to check it."""
from __future__ import annotations

import pytest

from connectors.sync.push import PushDocument, documents_push


@pytest.fixture
def restricted(team, make_collection):
    """A collection with one public document and one only the admin may see."""
    organization, owner, admin, member = team
    collection = make_collection(readable_id="payroll", name="Payroll notes", organization=organization)
    documents_push(collection=collection, delete_ids=[], documents=[
        PushDocument(id="public-handbook", name="Payroll calendar", text="Payroll runs on the last Friday of the month."),
        PushDocument(id="salaries", name="Salary bands", text="Payroll salary bands for engineers, confidential.",
                     viewers=["user:admin@team.example"], is_public=False),
    ])
    return collection


def test_a_member_sees_only_what_access_control_allows(team, restricted, browser):
    member = browser(team[3])
    page = member.get("/ui/collections/payroll/search?query=payroll+salary&tier=instant").content.decode()
    assert "Payroll calendar" in page and "Salary bands" not in page
    listing = member.get("/ui/collections/payroll/entities/").content.decode()
    assert "Payroll calendar" in listing and "Salary bands" not in listing
    secret = restricted.entities.get(entity_id="salaries")
    assert member.get(f"/ui/collections/payroll/entities/{secret.pk}/").status_code == 404


def test_the_viewer_sees_it_and_its_page_names_who_may(team, restricted, browser):
    admin = browser(team[2])
    page = admin.get("/ui/collections/payroll/search?query=payroll+salary&tier=instant").content.decode()
    assert "Salary bands" in page
    secret = restricted.entities.get(entity_id="salaries")
    detail = admin.get(f"/ui/collections/payroll/entities/{secret.pk}/").content.decode()
    assert "user:admin@team.example" in detail and "member of this organization" in detail


def test_an_admin_searches_as_a_member(team, restricted, browser):
    from airweave.tenancy.models import Membership

    admin = browser(team[2])
    as_member = Membership.objects.get(user=team[3]).pk
    page = admin.get("/ui/collections/payroll/search", {"query": "payroll salary", "tier": "instant",
                                                        "as_member": as_member}).content.decode()
    assert "Payroll calendar" in page and "Salary bands" not in page and "as member@team.example" in page


def test_a_member_cannot_search_as_someone_else(team, restricted, browser):
    from airweave.tenancy.models import Membership

    member = browser(team[3])
    as_admin = Membership.objects.get(user=team[2]).pk
    page = member.get("/ui/collections/payroll/search", {"query": "payroll", "as_member": as_admin})
    assert page.status_code == 403 and "needs the admin role" in page.content.decode()
    assert 'name="as_member"' not in member.get("/ui/collections/payroll/search").content.decode()
