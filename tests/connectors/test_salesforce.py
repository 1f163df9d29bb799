"""The Salesforce source against Salesforce's documented REST shapes (fixtures/salesforce), served by
`responses`: SOQL paging by `nextRecordsUrl`, entity fields, a 429 retried, an expired session refreshed
with the stored refresh token, an incremental SystemModstamp run with getDeleted, and search."""
from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import parse_qs, urlsplit

import pytest
import responses

import connectors.sources.salesforce as salesforce
from airweave.collections.models import Entity, SyncCursor
from airweave.crypto import decrypt_json
from connectors.base import SourceError
from connectors.registry import source_for_connection
from connectors.sources.salesforce import (SalesforceAccountEntity, SalesforceCaseEntity, SalesforceContactEntity,
                                           SalesforceOpportunityEntity, SalesforceSource)
from tests.connectors.saas_cases import connect, fixture, run_sync, search_ids

INSTANCE = "https://acme.my.salesforce.com"
QUERY = f"{INSTANCE}/services/data/v60.0/query"
TOKEN_URL = "https://login.salesforce.com/services/oauth2/token"
NOW = datetime(2024, 4, 29, 9, 0, tzinfo=timezone.utc)
CREDENTIALS = {"access_token": "00DDn000000Xyz1!AQ4AQOld", "refresh_token": "5Aep861TSESvWeug_xvFHRBTTbf_YrTWgEyjBJ",
               "instance_url": INSTANCE, "client_id": "3MVG9consumer", "client_secret": "consumer-secret"}


@pytest.fixture(autouse=True)
def clock(monkeypatch):
    monkeypatch.setattr(salesforce, "_now", lambda: NOW)


@pytest.fixture
def rsps():
    with responses.RequestsMock() as mock:
        yield mock


def f(name):
    return fixture("salesforce", name)


def soql(*fragments):
    """Matches a query request whose SOQL contains every fragment."""
    def match(request):
        q = parse_qs(urlsplit(request.url).query).get("q", [""])[0]
        missing = [x for x in fragments if x not in q]
        return (not missing), f"SOQL {q!r} lacks {missing}" if missing else ""
    return [match]


def add_full_listing(rsps):
    rsps.add("GET", QUERY, match=soql("FROM Account ORDER BY SystemModstamp ASC"), json=f("accounts_page1"))
    rsps.add("GET", f"{INSTANCE}/services/data/v60.0/query/0r8Dn00000Ab1cdIAB-2", json=f("accounts_page2"))
    rsps.add("GET", QUERY, match=soql("FROM Contact "), json=f("contacts"))
    rsps.add("GET", QUERY, match=soql("FROM Opportunity "), json=f("opportunities"))
    rsps.add("GET", QUERY, match=soql("FROM Case "), json=f("cases"))


def records(sobject: str, rows: list[dict]) -> dict:
    """A SOQL query answer (`totalSize`, `done`, `records` with their `attributes`)."""
    return {"totalSize": len(rows), "done": True, "records": [
        {"attributes": {"type": sobject, **({"url": f"/services/data/v60.0/sobjects/{sobject}/{r['Id']}"}
                                            if "Id" in r else {})}, **r} for r in rows]}


ALICE, BOB, CAROL, DAVE = "005Dn000003kZ4PIAU", "005Dn000003kZ4QIAU", "005Dn000003kZ4RIAU", "005Dn000003kZ4SIAU"
SALES, VP_GROUP, REP_GROUP = "00GDn000001SaleAAA", "00GDn000002VpSuAAA", "00GDn000003RepSAAA"
VP, REP = "00EDn000000VpRoAAA", "00EDn000000RepRAAA"


def add_sharing(rsps):
    """Accounts and opportunities private, contacts controlled by their account, cases public read; account
    Burlington shared with the public group Sales, which holds the VP role-and-subordinates group (carol is VP;
    the Rep role below it is empty); dave may view all data. Users: alice, bob, carol, dave (active)."""
    rsps.add("GET", QUERY, match=soql("FROM Organization"), json=records("Organization", [{
        "DefaultAccountAccess": "None", "DefaultContactAccess": "ControlledByParent",
        "DefaultOpportunityAccess": "None", "DefaultCaseAccess": "Read"}]))
    rsps.add("GET", QUERY, match=soql("FROM User WHERE IsActive = true"), json=records("User", [
        {"Id": ALICE, "Email": "Alice@Example.com", "UserRoleId": None},
        {"Id": BOB, "Email": "bob@example.com", "UserRoleId": REP},
        {"Id": CAROL, "Email": "carol@example.com", "UserRoleId": VP},
        {"Id": DAVE, "Email": "dave@example.com", "UserRoleId": None}]))
    rsps.add("GET", QUERY, match=soql("FROM AccountShare"), json=records("AccountShare", [
        {"AccountId": "001Dn00000Xw1JqIAJ", "UserOrGroupId": ALICE},
        {"AccountId": "001Dn00000Xw1JqIAJ", "UserOrGroupId": SALES},
        {"AccountId": "001Dn00000Xw1JrIAJ", "UserOrGroupId": ALICE},
        {"AccountId": "001Dn00000Xw1JsIAJ", "UserOrGroupId": BOB}]))
    rsps.add("GET", QUERY, match=soql("FROM OpportunityShare"), json=records("OpportunityShare", [
        {"OpportunityId": "006Dn00000C3bFxIAJ", "UserOrGroupId": ALICE}]))
    rsps.add("GET", QUERY, match=soql("FROM GroupMember"), json=records("GroupMember", [
        {"GroupId": SALES, "UserOrGroupId": VP_GROUP}]))
    rsps.add("GET", QUERY, match=soql("FROM UserRole"), json=records("UserRole", [
        {"Id": VP, "ParentRoleId": None}, {"Id": REP, "ParentRoleId": VP}]))
    rsps.add("GET", QUERY, match=soql("FROM Group"), json=records("Group", [
        {"Id": SALES, "Type": "Regular", "RelatedId": None},
        {"Id": VP_GROUP, "Type": "RoleAndSubordinates", "RelatedId": VP},
        {"Id": REP_GROUP, "Type": "RoleAndSubordinates", "RelatedId": REP}]))
    rsps.add("GET", QUERY, match=soql("FROM PermissionSetAssignment"), json=records("PermissionSetAssignment", [
        {"AssigneeId": DAVE}]))


def make(**config):
    return SalesforceSource(SalesforceSource.validate_config(config), dict(CREDENTIALS))


def test_a_full_listing_follows_next_records_urls(rsps):
    add_full_listing(rsps)
    source = make()
    entities = {e.entity_id: e for e in source.generate_entities({})}

    assert len(entities) == 6
    assert rsps.calls[0].request.headers["Authorization"] == f"Bearer {CREDENTIALS['access_token']}"
    q = parse_qs(urlsplit(rsps.calls[0].request.url).query)["q"][0]
    assert q.startswith("SELECT Id, OwnerId, CreatedDate, LastModifiedDate, SystemModstamp, Name, Type") and "WHERE" not in q
    account = entities["001Dn00000Xw1JqIAJ"]
    assert isinstance(account, SalesforceAccountEntity) and account.name == "Burlington Textiles Corp of America"
    assert account.web_url == f"{INSTANCE}/lightning/r/Account/001Dn00000Xw1JqIAJ/view"
    assert account.updated_at == datetime(2024, 4, 20, 16, 2, 11, tzinfo=timezone.utc)
    assert account.raw_source_fields == {"object_type": "Account", "owner_id": "005Dn000003kZ4PIAU",
                                         "type": "Customer - Direct", "industry": "Apparel", "billing_country": "USA"}
    assert "Industry: Apparel" in account.textual_representation()
    assert "EDI integration" in account.textual_representation()
    contact = entities["003Dn00000QmV2aIAF"]
    assert isinstance(contact, SalesforceContactEntity)
    assert [b.as_dict() for b in contact.breadcrumbs] == [{"entity_id": "001Dn00000Xw1JqIAJ",
                                                           "name": "Burlington Textiles Corp of America",
                                                           "entity_type": "SalesforceAccountEntity"}]
    assert "Account: Burlington Textiles Corp of America" in contact.textual_representation()
    opportunity = entities["006Dn00000C3bFxIAJ"]
    assert isinstance(opportunity, SalesforceOpportunityEntity)
    assert opportunity.raw_source_fields["amount"] == 235000.0 and opportunity.raw_source_fields["is_won"] is True
    case = entities["500Dn000001GlUxIAK"]
    assert isinstance(case, SalesforceCaseEntity)
    assert case.name == "Case 00001026: Generator emits a high-pitched hum under load"
    assert "Contact: Jack Rogers" in case.textual_representation()
    assert source.is_full_listing()
    assert source.next_cursor()["since"]["Account"] == "2024-04-25T10:00:00.000+0000"


def test_a_429_is_retried(rsps):
    limited = rsps.add("GET", QUERY, status=429, headers={"Retry-After": "0"},
                       json=[{"message": "Too many requests", "errorCode": "REQUEST_LIMIT_EXCEEDED"}])
    rsps.add("GET", QUERY, json=f("cases"))
    assert [e.entity_id for e in make(object_types=["Case"]).generate_entities({})] == ["500Dn000001GlUxIAK"]
    assert limited.call_count == 1


def test_an_expired_session_is_refreshed_with_the_refresh_token(rsps, make_collection):
    connection = connect(make_collection(), "salesforce", CREDENTIALS, config={"object_types": ["Case"]})
    rsps.add("GET", QUERY, status=401, json=f("session_expired"),
             match=[responses.matchers.header_matcher({"Authorization": f"Bearer {CREDENTIALS['access_token']}"})])
    token = rsps.add("POST", TOKEN_URL, json=f("token_refreshed"))
    rsps.add("GET", QUERY, json=f("cases"), match=[responses.matchers.header_matcher(
        {"Authorization": f"Bearer {f('token_refreshed')['access_token']}"})])

    entities = list(source_for_connection(connection).generate_entities({}))

    assert [e.entity_id for e in entities] == ["500Dn000001GlUxIAK"]
    form = parse_qs(token.calls[0].request.body)
    assert form["grant_type"] == ["refresh_token"] and form["refresh_token"] == [CREDENTIALS["refresh_token"]]
    stored = decrypt_json(connection.__class__.objects.get(pk=connection.pk).encrypted_credentials)
    assert stored["access_token"] == f("token_refreshed")["access_token"]
    assert stored["instance_url"] == INSTANCE and stored["refresh_token"] == CREDENTIALS["refresh_token"]


def test_sync_search_then_an_incremental_run_with_deletions(rsps, make_collection, client):
    connection = connect(make_collection(), "salesforce", CREDENTIALS)
    add_full_listing(rsps)
    add_sharing(rsps)
    job = run_sync(connection)
    assert (job.status, job.entities_inserted) == ("completed", 6)
    assert search_ids(client, "generator hum cooling fan bearing", limit=1) == ["500Dn000001GlUxIAK"]

    rsps.reset()
    add_sharing(rsps)
    rsps.add("GET", QUERY, match=soql("FROM Account WHERE SystemModstamp >= 2024-04-25T10:00:00Z"),
             json=f("accounts_changed"))
    deleted = rsps.add("GET", f"{INSTANCE}/services/data/v60.0/sobjects/Account/deleted/",
                       json=f("accounts_deleted"))
    for name in ("Contact", "Opportunity", "Case"):
        rsps.add("GET", QUERY, match=soql(f"FROM {name} WHERE SystemModstamp >= "), json=f("empty_query"))
        rsps.add("GET", f"{INSTANCE}/services/data/v60.0/sobjects/{name}/deleted/", json=f("nothing_deleted"))
    job = run_sync(connection)

    assert (job.status, job.entities_updated, job.entities_deleted) == ("completed", 1, 1)
    assert parse_qs(urlsplit(deleted.calls[0].request.url).query) == {"start": ["2024-04-25T10:00:00+00:00"],
                                                                      "end": ["2024-04-29T09:00:00+00:00"]}
    ids = set(Entity.objects.filter(source_connection=connection).values_list("entity_id", flat=True))
    assert "001Dn00000Xw1JrIAJ" not in ids and len(ids) == 5
    assert SyncCursor.objects.get(sync_id=job.sync_id).data["since"]["Account"] == "2024-04-28T12:00:00.000+0000"
    assert search_ids(client, "renewal signed for three years", limit=1) == ["001Dn00000Xw1JqIAJ"]


def test_a_cursor_older_than_the_deleted_records_log_lists_everything(rsps):
    rsps.add("GET", QUERY, match=soql("FROM Case ORDER BY"), json=f("cases"))
    source = make(object_types=["Case"])
    list(source.generate_entities({"since": {"Case": "2024-03-01T00:00:00.000+0000"}}))
    assert source.is_full_listing() and len(rsps.calls) == 1  # no getDeleted: absent records are deleted


def test_an_object_the_org_lacks_is_a_config_error(rsps):
    rsps.add("GET", QUERY, status=400, json=f("invalid_type"))
    with pytest.raises(SourceError) as info:
        list(make(object_types=["Case"]).generate_entities({}))
    assert info.value.category == "config_error" and "Case" in str(info.value)


def test_an_injected_token_needs_the_instance_url():
    source = SalesforceSource(SalesforceSource.validate_config({}), {"access_token": "x"})
    with pytest.raises(SourceError, match="instance_url"):
        source.http
    with pytest.raises(ValueError, match="instance_url"):
        SalesforceSource.validate_config({"instance_url": "http://acme.my.salesforce.com/x"})
    assert SalesforceSource.validate_config({"instance_url": "https://acme.my.salesforce.com/"})["instance_url"] == INSTANCE


# --- access control -------------------------------------------------------------------------------


def test_owners_shares_groups_roles_and_org_wide_defaults_decide_who_sees_a_record():
    with responses.RequestsMock(assert_all_requests_are_fired=True) as rsps:
        add_full_listing(rsps)
        add_sharing(rsps)
        source = make()
        memberships = {(m.group_id, m.member) for m in source.generate_access_memberships()}
        entities = {e.entity_id: e for e in source.generate_entities({})}
    assert memberships == {(SALES, f"group:{VP_GROUP}"), (VP_GROUP, "user:carol@example.com"),
                           (VP_GROUP, f"group:{REP_GROUP}"), (REP_GROUP, "user:bob@example.com"),
                           ("view_all", "user:dave@example.com")}
    burlington = ["group:00GDn000001SaleAAA", "group:view_all", "user:alice@example.com"]
    assert entities["001Dn00000Xw1JqIAJ"].access_viewers == burlington
    assert entities["003Dn00000QmV2aIAF"].access_viewers == burlington  # its account's
    assert entities["001Dn00000Xw1JsIAJ"].access_viewers == ["group:view_all", "user:bob@example.com"]
    assert entities["006Dn00000C3bFxIAJ"].access_viewers == ["group:view_all", "user:alice@example.com"]
    assert entities["500Dn000001GlUxIAK"].access_is_public  # cases: public read


def test_records_listed_without_the_sharing_tables_are_closed(rsps):
    rsps.add("GET", QUERY, json=f("cases"))
    [case] = list(make(object_types=["Case"]).generate_entities({}))
    assert (case.access_viewers, case.access_is_public) == ([], False)


def acl_world(rsps):
    """The access world of tests/access/test_source_matrix.py (see add_sharing): bob reaches Burlington through
    the Rep role below the VP role-and-subordinates group in Sales."""
    from tests.access.test_source_matrix import AclWorld

    add_full_listing(rsps)
    add_sharing(rsps)
    everything = {"001Dn00000Xw1JqIAJ", "001Dn00000Xw1JrIAJ", "001Dn00000Xw1JsIAJ", "003Dn00000QmV2aIAF",
                  "006Dn00000C3bFxIAJ", "500Dn000001GlUxIAK"}
    burlington = {"001Dn00000Xw1JqIAJ", "003Dn00000QmV2aIAF"}
    return AclWorld(short_name="salesforce", credentials=dict(CREDENTIALS), config={},
                    visible={"alice": everything - {"001Dn00000Xw1JsIAJ"},
                             "bob": burlington | {"001Dn00000Xw1JsIAJ", "500Dn000001GlUxIAK"},
                             "carol": burlington | {"500Dn000001GlUxIAK"}},
                    everything=everything)
