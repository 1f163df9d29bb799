"""Sixteen sources end to end: a first sync against the vendor's fake (the `responses` fakes of
tests/connectors), then an edit in the fake, then the vendor's signed notification.

A Case knows how to list the source (`first_sync`), how to edit one item in the fake
(`edit`: registers the answers of the incremental run that the notification causes), the text
the edit brought (`phrase`) and where (`entity_id`), and how the vendor calls (`call(secret, url)`
→ headers, body). `handshake(client, url)`: the vendor's validation call before any event, for
vendors that teach the secret that way (Asana, Notion); it returns the learned secret.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Callable

import responses

from tests.connectors import slack_api
from tests.connectors import test_asana as asana_fake
from tests.connectors import test_box as box_fake
from tests.connectors import test_dropbox as dropbox_fake
from tests.connectors import test_github as github_fake
from tests.connectors import test_gitlab as gitlab_fake
from tests.connectors import test_google_drive as drive_fake
from tests.connectors import test_linear as linear_fake
from tests.connectors import test_msgraph as msgraph_fake
from tests.connectors import test_notion as notion_fake
from tests.connectors import test_outlook_calendar as calendar_fake
from tests.connectors import test_stripe as stripe_fake
from tests.connectors import test_trello as trello_fake
from tests.connectors import test_zendesk as zendesk_fake
from tests.connectors.saas_cases import query
from tests.notifications import vendor_calls


@dataclass
class Case:
    short_name: str
    credentials: dict
    first_sync: Callable
    edit: Callable
    phrase: str
    entity_id: str
    call: Callable
    secret: str | None = None  # the vendor's secret, set with PUT .../notifications (None: learned by handshake)
    handshake: Callable | None = None
    config: dict = field(default_factory=dict)
    patches: Callable | None = None  # (monkeypatch) -> None: what the source's own tests patch
    subscription: Callable | None = None  # (rsps) -> the vendor's answer to the subscription this server makes

    def __str__(self):
        return self.short_name


# --- Asana: the handshake teaches X-Hook-Secret; task T2 gets a new comment ---------------------------
def _asana_handshake(client, url):
    secret = "b5e4c2a1d0f98e7c6b5a4f3e2d1c0b9a"
    r = client.post(url, b"", content_type="application/json", HTTP_X_HOOK_SECRET=secret)
    assert r.status_code == 200 and r["X-Hook-Secret"] == secret
    return secret


def _asana_edit(rsps):
    f, api, project = asana_fake.f, asana_fake.API, asana_fake.PROJECT
    rsps.add("GET", f"{api}/workspaces", json=f("workspaces"))
    rsps.add("GET", f"{api}/projects", json=f("projects"))
    rsps.add("GET", f"{api}/tasks", match=[query(project=project, modified_since="2024-05-02T11:30:00.000Z")],
             json=f("tasks_changed"))
    rsps.add("GET", f"{api}/tasks/{asana_fake.T2}/stories", json=f("stories_task2_new"))
    rsps.add("GET", f"{api}/tasks", match=[query(project=project, opt_fields="gid", absent=("modified_since",))],
             json=f("task_ids"))


ASANA = Case(
    "asana", {"personal_access_token": "2/1201/1207:abc"}, asana_fake.add_full_listing, _asana_edit,
    "Risk assessment v3 approved by the site manager", f"task:{asana_fake.T2}",
    lambda secret, url: vendor_calls.asana(secret, {"events": [{
        "user": {"gid": "1201994503261001", "resource_type": "user"}, "created_at": "2024-05-06T09:00:00.000Z",
        "action": "changed", "resource": {"gid": asana_fake.T2, "resource_type": "task"},
        "parent": None, "change": {"field": "notes", "action": "changed"}}]}),
    handshake=_asana_handshake)


# --- Stripe: customer.updated events ------------------------------------------------------------------
def _stripe_edit(rsps):
    rsps.add("GET", f"{stripe_fake.API}/events", match=[query(**{"created[gte]": stripe_fake.NOW - 60})],
             json=stripe_fake.f("events"))


STRIPE = Case(
    "stripe", {"api_key": stripe_fake.KEY}, stripe_fake.add_full_listing, _stripe_edit,
    "Fleet of 55 e-bikes since May", "cus_Q1a2b3c4d5e6f7",
    lambda secret, url: vendor_calls.stripe(secret, stripe_fake.f("events")["data"][0]),
    secret="whsec_5f1c0a6b2e7d48e39a0b1c2d3e4f5a6b",
    patches=lambda mp: mp.setattr(stripe_fake.stripe, "_now", lambda: stripe_fake.NOW))


# --- Zendesk: a ticket's new comment, sent by a webhook on ticket events --------------------------------
def _zendesk_first(rsps):
    zendesk_fake.add_first_run(rsps)
    zendesk_fake.add_agents(rsps)


def _zendesk_edit(rsps):
    f = zendesk_fake.f
    zendesk_fake.add_agents(rsps)
    rsps.add("GET", zendesk_fake.EXPORT, match=[query(cursor="MTU3NjYxMzU2MC4wfHw0Njh8", absent=("start_time",))],
             json=f("tickets_changes"))
    rsps.add("GET", zendesk_fake.comments_url(35437), json=f("comments_35437_solved"))
    rsps.add("GET", zendesk_fake.ARTICLES, json=f("articles"))


ZENDESK = Case(
    "zendesk", dict(zendesk_fake.CREDENTIALS), _zendesk_first, _zendesk_edit,
    "re-issued invoice INV-2291 with the corrected VAT number", "ticket:35437",
    lambda secret, url: vendor_calls.zendesk(secret, {
        "type": "zen:event-type:ticket.comment_added", "account_id": 22129848, "id": "cbe4028c-7239-495d-b020",
        "time": "2024-05-06T09:00:00Z", "zendesk_event_version": "2022-11-06", "subject": "zen:ticket:35437",
        "detail": {"id": "35437", "status": "SOLVED"}, "event": {"comment": {"id": "8830"}}}),
    secret="dGhpc19zZWNyZXRfaXNfZm9yX3Rlc3Rpbmdfb25seQ==", config={"subdomain": "acme"})


# --- Trello: a comment on card C2, signed with the app secret and the callback URL -----------------------
def _trello_edit(rsps):
    f, api, board, c2 = trello_fake.f, trello_fake.API, trello_fake.B, trello_fake.C2
    rsps.add("GET", f"{api}/members/me/boards", json=f("boards"))
    rsps.add("GET", f"{api}/boards/{board}/lists", json=f("lists"))
    rsps.add("GET", f"{api}/boards/{board}/actions", match=[query(since="2024-05-02T14:00:00.000Z", absent=("before",))],
             json=f("actions_since"))
    rsps.add("GET", f"{api}/boards/{board}/actions", match=[query(before="660f00000000000000000010")], json=[])
    rsps.add("GET", f"{api}/boards/{board}/cards", match=[query(fields="id")], json=f("card_ids"))
    rsps.add("GET", f"{api}/cards/{c2}", match=[query(actions="commentCard")], json=f("card_c2"))


TRELLO = Case(
    "trello", dict(trello_fake.CREDENTIALS), trello_fake.add_full_listing, _trello_edit,
    "Consent banner approved by legal", f"card:{trello_fake.C2}",
    lambda secret, url: vendor_calls.trello(secret, {
        "model": {"id": trello_fake.B, "name": "Website relaunch"},
        "action": {"id": "660f00000000000000000011", "type": "commentCard", "date": "2024-05-06T08:05:00.000Z",
                   "data": {"text": "Consent banner approved by legal; shipping Thursday.",
                            "card": {"id": trello_fake.C2, "name": "Cookie banner"}}}}, url),
    secret="8c4f0e2d6a1b3c5d7e9f0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1d",
    patches=lambda mp: mp.setattr(trello_fake.trello, "PAGE", 2))


# --- Linear: an issue's description edited ------------------------------------------------------------
LINEAR_ISSUE = "a3f6c2d1-7b8e-4f90-a1b2-c3d4e5f60718"
LINEAR_PHRASE = "Meter events now flush through the quokka relay in Tallinn"


def _linear_first(rsps):
    linear_fake.GraphQL(rsps, linear_fake.listing())


def _linear_edit(rsps):
    load = linear_fake.load
    changed = copy.deepcopy(load("issues_page_2")["data"]["issues"]["nodes"][0])
    changed.update(description=LINEAR_PHRASE + ".", updatedAt="2024-06-04T11:00:00.000Z")
    changed["comments"] = {"nodes": changed["comments"]["nodes"][:1], "pageInfo": {"hasNextPage": False,
                                                                                    "endCursor": None}}
    empty = {"nodes": [], "pageInfo": {"hasNextPage": False, "endCursor": None}}
    linear_fake.GraphQL(rsps, {("Teams", None): load("teams"), ("Projects", None): {"data": {"projects": empty}},
                               ("Issues", None): {"data": {"issues": {"nodes": [changed], "pageInfo": {
                                   "hasNextPage": False, "endCursor": None}}}}})


LINEAR = Case(
    "linear", {"api_key": "lin_api_test"}, _linear_first, _linear_edit, LINEAR_PHRASE, LINEAR_ISSUE,
    lambda secret, url: vendor_calls.linear(secret, {
        "action": "update", "type": "Issue", "createdAt": "2024-06-04T11:00:00.000Z", "organizationId": "org-1",
        "url": "https://linear.app/acme/issue/ENG-142", "data": {"id": LINEAR_ISSUE, "identifier": "ENG-142"},
        "updatedFrom": {"description": "Send one meter event per billable API call batch."}}),
    secret="lin_wh_3JmL9b8Y0sQ2vT4xZ6aC8eG0iK2mO4qS")


# --- GitHub: an issue retitled and re-described --------------------------------------------------------
GITHUB_PHRASE = "Regression: pagination drops the quokka header on the last page"


def _github_issue():
    return github_fake.recorded_body("Issue_comments", 0)


def _github_first(rsps):
    issue = _github_issue()
    github_fake.add_repository(rsps, "ossani24/github3.py")
    rsps.add("GET", f"{github_fake.API}/repos/ossani24/github3.py/issues?state=all&per_page=100", json=[issue])
    github_fake.add_recorded(rsps, github_fake.RECORDED / "Issue_comments.json",
                             only=lambda i: i["request"]["uri"].endswith("comments?per_page=100"))


def _github_edit(rsps):
    issue = _github_issue()
    changed = {**issue, "title": GITHUB_PHRASE, "body": GITHUB_PHRASE + ".", "comments": 0}
    github_fake.add_repository(rsps, "ossani24/github3.py")
    rsps.add("GET", f"{github_fake.API}/repos/ossani24/github3.py/issues",
             match=[responses.matchers.query_param_matcher({"state": "all", "per_page": "100",
                                                            "since": issue["updated_at"]})], json=[changed])


GITHUB = Case(
    "github", {"personal_access_token": "ghp_test"}, _github_first, _github_edit, GITHUB_PHRASE,
    "ossani24/github3.py#187",
    lambda secret, url: vendor_calls.github(secret, {
        "action": "edited", "issue": {"number": 187, "title": GITHUB_PHRASE},
        "repository": {"full_name": "ossani24/github3.py"}, "sender": {"login": "octocat"}}),
    secret="It's a Secret to Everybody", config={"repositories": ["ossani24/github3.py"]})


# --- GitLab: an issue re-described; GitLab sends the secret token itself ------------------------------
GITLAB_PHRASE = "Runners now drain through the quokka queue before an upgrade"


def _gitlab_first(rsps):
    gitlab_fake.add_full(rsps, files=False, notes=False)


def _gitlab_edit(rsps):
    changed = copy.deepcopy(gitlab_fake.load("issues_page_1")[1])
    changed.update(description=GITLAB_PHRASE + ".", updated_at="2024-06-06T08:00:00.000Z")
    gitlab_fake.add_full(rsps, since="2024-06-04T10:11:12.000Z", issues=[changed], mrs=[], files=False, notes=False)
    for kind in ("issues", "merge_requests"):
        rsps.add("GET", f"{gitlab_fake.P}/{kind}", json=gitlab_fake.load("issues_page_1" if kind == "issues"
                                                                          else "merge_requests"),
                 match=[responses.matchers.query_param_matcher({"scope": "all", "per_page": "100"})])


def _gitlab_call(secret, url):
    issue = gitlab_fake.load("issues_page_1")[1]
    return vendor_calls.gitlab(secret, {
        "object_kind": "issue", "event_type": "issue",
        "project": {"id": 278964, "path_with_namespace": gitlab_fake.PATH},
        "object_attributes": {"iid": issue["iid"], "action": "update", "description": GITLAB_PHRASE + "."}})


GITLAB = Case(
    "gitlab", {"private_token": "glpat-test"}, _gitlab_first, _gitlab_edit, GITLAB_PHRASE,
    f"{gitlab_fake.PATH}#{gitlab_fake.load('issues_page_1')[1]['iid']}", _gitlab_call,
    secret="gitlab-webhook-secret-token-1", config={"projects": [gitlab_fake.PATH], "include_files": False,
                                                    "include_notes": False})


# --- Notion: the verification_token handshake, then page.content_updated ----------------------------
NOTION_CHILD = "393abc1e-edcd-8000-8000-0000000000aa"
NOTION_PHRASE = "Root cause: the quokka certificate renewal job never ran"


def _notion_child(edited="2026-07-04T09:30:00.000Z"):
    return notion_fake.page_under(notion_fake.PAGE, NOTION_CHILD, "Incident review", edited)


def _notion_first(rsps):
    child = _notion_child()
    notion_fake.add_search(rsps, notion_fake.search_page([child, notion_fake.PAGE], next_cursor="c2"),
                           notion_fake.search_page([notion_fake.ROOT]))
    notion_fake.add_children(rsps, child["id"], [notion_fake.paragraph_block(
        child["id"], "393abc1e-edcd-8000-8000-0000000000b1", "The outage came from an expired TLS certificate.")])
    notion_fake.add_recorded_page_content(rsps)
    notion_fake.add_children(rsps, notion_fake.ROOT["id"])


def _notion_edit(rsps):
    edited = _notion_child("2026-07-06T08:00:00.000Z")
    notion_fake.add_search(rsps, notion_fake.search_page([edited, notion_fake.PAGE], next_cursor="c2"),
                           notion_fake.search_page([notion_fake.ROOT]))
    notion_fake.add_children(rsps, NOTION_CHILD, [notion_fake.paragraph_block(
        NOTION_CHILD, "393abc1e-edcd-8000-8000-0000000000b1", NOTION_PHRASE + ".")])


def _notion_handshake(client, url):
    token = "secret_tMrlL1qK5vuQAh1b6cZGhFChZTSYJlce98V0pYn7yBl"
    r = client.post(url, {"verification_token": token}, content_type="application/json")
    assert r.status_code == 200, r.content
    return token


NOTION = Case(
    "notion", {"integration_secret": "ntn_test"}, _notion_first, _notion_edit, NOTION_PHRASE, NOTION_CHILD,
    lambda secret, url: vendor_calls.notion(secret, {
        "id": "367cba44-b6f3-4c92-81e7-6a2e9659efd4", "timestamp": "2026-07-06T08:00:00.000Z",
        "workspace_id": "13950b26-c203-4f3b-b97d-93ec06319565", "subscription_id": "29d75c0d-5546-4c3b",
        "integration_id": "0ef104cd-477e-4c1d", "type": "page.content_updated", "attempt_number": 1,
        "entity": {"id": NOTION_CHILD, "type": "page"}, "data": {"parent": {"id": notion_fake.PAGE["id"]}}}),
    handshake=_notion_handshake,
    patches=lambda mp: mp.setattr(notion_fake.NotionSource, "page_size", 2))


# --- Slack: a message edited in #contributing-to-olake --------------------------------------------------
SLACK_CHANNEL = "contributing-to-olake"
SLACK_PHRASE = "edited: the quokka connector merged after review"


def _slack_conv():
    return slack_api.channel(SLACK_CHANNEL)


def _slack_first(rsps):
    slack_api.add_workspace(rsps, {SLACK_CHANNEL: _slack_conv()})


def _slack_window():
    latest = max(slack_api.messages(SLACK_CHANNEL), key=lambda m: float(m["ts"]))["ts"]
    oldest = f"{float(latest) - 7 * 86400:.6f}"
    return latest, oldest, [m for m in slack_api.history(SLACK_CHANNEL) if float(m["ts"]) >= float(oldest)]


def _slack_edited():
    latest, _, window = _slack_window()
    return {**window[0], "text": window[0]["text"] + f" ({SLACK_PHRASE})",
            "edited": {"user": window[0]["user"], "ts": f"{float(latest) + 60:.6f}"}}


def _slack_edit(rsps):
    conv = _slack_conv()
    _, oldest, window = _slack_window()
    edited = _slack_edited()
    slack_api.add(rsps, "auth.test", {}, slack_api.ok(url=slack_api.TEAM["url"], team="OLake",
                                                      team_id=slack_api.TEAM["id"], user_id=slack_api.ME))
    slack_api.add_pages(rsps, "users.list", {"limit": 200}, "members", slack_api.users())
    slack_api.add_pages(rsps, "conversations.list", {"types": "public_channel,private_channel",
                                                     "exclude_archived": "false", "limit": 200}, "channels", [conv])
    slack_api.add_pages(rsps, "conversations.history", {"channel": conv["id"], "limit": 200, "oldest": oldest},
                        "messages", [edited, *window[1:]])
    for m in [edited, *window[1:]]:
        if m.get("reply_count"):
            slack_api.add_pages(rsps, "conversations.replies", {"channel": conv["id"], "ts": m["ts"], "limit": 200},
                                "messages", slack_api.threads(SLACK_CHANNEL)[m["ts"]])


def _slack_call(secret, url):
    conv, edited = _slack_conv(), _slack_edited()
    return vendor_calls.slack(secret, {
        "token": "XXYYZZ", "team_id": slack_api.TEAM["id"], "api_app_id": "A0123456789", "type": "event_callback",
        "event_id": "Ev0123456789", "event_time": int(float(edited["edited"]["ts"])),
        "event": {"type": "message", "subtype": "message_changed", "channel": conv["id"], "hidden": True,
                  "message": {"type": "message", "text": edited["text"], "ts": edited["ts"]}, "ts": edited["edited"]["ts"]}})


def _slack_patches(mp):
    from connectors.sources.slack import SlackSource

    mp.setattr(SlackSource, "rate_limit_level", None)


SLACK = Case(
    "slack", {"access_token": "xoxp-test"}, _slack_first, _slack_edit, SLACK_PHRASE, "",  # entity id: see below
    _slack_call, secret="8f742231b10e8888abcd99yyyzzz85a5", config={"channels": [f"#{SLACK_CHANNEL}"]},
    patches=_slack_patches)
SLACK.entity_id = f"{_slack_conv()['id']}:{_slack_edited()['ts']}"

# --- OneDrive: this server subscribes (Microsoft Graph), Graph echoes its clientState ----------------
def _onedrive_patches(mp):
    from connectors.sources.onedrive import OneDriveSource

    mp.setattr(OneDriveSource, "rate_limit_level", None)


def _onedrive_first(rsps):
    msgraph_fake.onedrive_first_round(rsps)


def _onedrive_items():
    return {i["name"]: i["id"] for p in ("delta_page_1", "delta_page_2")
            for i in msgraph_fake.fixture(f"onedrive/{p}.json")["value"]}


ONEDRIVE_PHRASE = "Carry-over is capped at 240 quokka hours"


def _onedrive_edit(rsps):
    graph, fixture = msgraph_fake.GRAPH, msgraph_fake.fixture
    msgraph_fake.serve_permissions(rsps)
    rsps.add("GET", f"{graph}/me/drive?%24select=id%2Cname%2CwebUrl", json=fixture("onedrive/drive.json"))
    rsps.add("GET", fixture("onedrive/delta_page_2.json")["@odata.deltaLink"], json=fixture("onedrive/delta_incremental.json"))
    msgraph_fake._content(rsps, _onedrive_items()["leave-policy.md"],
                          msgraph_fake._leave_policy() + f"\n\n{ONEDRIVE_PHRASE}.\n".encode())


def _onedrive_subscription(rsps):
    def answer(request):
        body = json.loads(request.body)
        return 201, {}, json.dumps({"id": "7f105c7d-2dc5-4530-97cd-4e7ae6534c07", "resource": body["resource"],
                                    "changeType": body["changeType"], "clientState": body["clientState"],
                                    "notificationUrl": body["notificationUrl"],
                                    "expirationDateTime": body["expirationDateTime"]})

    rsps.add_callback("POST", f"{msgraph_fake.GRAPH}/subscriptions", callback=answer)


ONEDRIVE = Case(
    "onedrive", {"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"}, _onedrive_first, _onedrive_edit,
    ONEDRIVE_PHRASE, _onedrive_items()["leave-policy.md"],
    lambda client_state, url: vendor_calls.graph(client_state, "7f105c7d-2dc5-4530-97cd-4e7ae6534c07",
                                                 "me/drive/root"),
    subscription=_onedrive_subscription, patches=_onedrive_patches)

# --- Outlook mail: a Graph subscription on /me/messages; a message's body changes --------------------
OUTLOOK_PHRASE = "The quokka package now cleans its user directory on detach"
OUTLOOK_MESSAGE = next(m["id"] for m in msgraph_fake.fixture("outlook_mail/inbox_delta_incremental.json")["value"]
                       if m["id"].endswith("0117BE3FAAA="))


def _outlook_patches(mp):
    from connectors.sources.outlook_mail import OutlookMailSource

    mp.setattr(OutlookMailSource, "rate_limit_level", None)


def _outlook_edit(rsps):
    fixture, om = msgraph_fake.fixture, msgraph_fake.OM
    msgraph_fake.outlook_folders(rsps)
    for name in ("inbox", "projects", "sent"):
        link = fixture(f"{om}/{name}_delta{'_page_2' if name == 'inbox' else ''}.json")["@odata.deltaLink"]
        body = fixture(f"{om}/{name}_delta_incremental.json")
        for message in body["value"]:
            if message["id"] == OUTLOOK_MESSAGE:
                message["body"] = {"contentType": "text", "content": OUTLOOK_PHRASE + "."}
                message["lastModifiedDateTime"] = "2025-01-04T08:00:00Z"
        rsps.add("GET", link, json=body)


OUTLOOK = Case(
    "outlook_mail", {"access_token": "eyJ0eXAiOiJKV1QiLCJub25jZSI6Ik1pY3Jvc29mdA"}, msgraph_fake.outlook_first_round,
    _outlook_edit, OUTLOOK_PHRASE, OUTLOOK_MESSAGE,
    lambda client_state, url: vendor_calls.graph(client_state, "7f105c7d-2dc5-4530-97cd-4e7ae6534c07", "me/messages"),
    subscription=_onedrive_subscription, patches=_outlook_patches)


# --- Outlook calendar: a Graph subscription on /me/events; a meeting's agenda changes ---------------
CALENDAR_PHRASE = "The quokka pricing review moves to the second half"


def _calendar_patches(mp):
    from connectors.sources.outlook_calendar import OutlookCalendarSource

    mp.setattr(OutlookCalendarSource, "rate_limit_level", None)


def _calendar_edit(rsps):
    calendar_fake.serve_me(rsps)
    edited = copy.deepcopy(calendar_fake.PLANNING)
    edited["body"] = {"contentType": "text", "content": CALENDAR_PHRASE + "."}
    edited["lastModifiedDateTime"] = "2026-11-20T08:00:00.0000000Z"
    rsps.add("GET", calendar_fake.DELTA_LINK, json={"@odata.deltaLink": calendar_fake.LATER_LINK, "value": [edited]})


CALENDAR = Case(
    "outlook_calendar", {"access_token": calendar_fake.TOKEN}, calendar_fake.serve_first_round, _calendar_edit,
    CALENDAR_PHRASE, calendar_fake.PLANNING["id"],
    lambda client_state, url: vendor_calls.graph(client_state, "7f105c7d-2dc5-4530-97cd-4e7ae6534c07", "me/events"),
    config={"future_days": 30}, subscription=_onedrive_subscription, patches=_calendar_patches)


# --- Google Drive: this server opens a changes.watch channel; Drive sends the channel token back ------
DRIVE_PHRASE = "Also: quokka expense reports are due on the 5th"
DRIVE_CHANNEL = {}


def _drive_first(rsps):
    drive_fake.serve_drive(rsps)


def _drive_edit(rsps):
    drive_fake.serve_drive(rsps, onboarding=drive_fake.ONBOARDING + " " + DRIVE_PHRASE + ".")
    rsps.add("GET", f"{drive_fake.API}/changes", json=drive_fake.fixture("changes.json"),
             match=[responses.matchers.query_param_matcher({"pageToken": "5012", "includeRemoved": "true"},
                                                           strict_match=False)])


def _drive_subscription(rsps):
    def answer(request):
        body = json.loads(request.body)
        DRIVE_CHANNEL.update(id=body["id"], resource_id="o3hgv1538sdjfh")
        return 200, {}, json.dumps({"kind": "api#channel", "id": body["id"], "resourceId": "o3hgv1538sdjfh",
                                    "resourceUri": f"{drive_fake.API}/changes?alt=json&pageToken=5012",
                                    "token": body["token"], "expiration": str(body["expiration"])})

    rsps.add_callback("POST", f"{drive_fake.API}/changes/watch", callback=answer)


DRIVE = Case(
    "google_drive", {"access_token": "ya29.a0-test"}, _drive_first, _drive_edit, DRIVE_PHRASE, drive_fake.DOC,
    lambda token, url: vendor_calls.drive(token, DRIVE_CHANNEL.get("id", ""), DRIVE_CHANNEL.get("resource_id", "")),
    subscription=_drive_subscription)

# --- Box: a file's content changed; the webhook names the file, the run reads the event stream -------------
BOX_PHRASE = "Legal approved the renewal of the quokka clause"


def _box_edit(rsps):
    box_fake.serve_box(rsps, notes=box_fake.NOTES + BOX_PHRASE + ".\n")
    api, params = box_fake.API, box_fake.params
    rsps.add("GET", f"{api}/events", json={"chunk_size": 0, "next_stream_position": "1152923110164312445",
                                           "entries": []}, match=params(stream_position="1152923110164312445"))
    rsps.add("GET", f"{api}/events", json=box_fake.fixture("events_changes.json"),
             match=params(stream_type="changes", stream_position="1152922976252290886"))
    item = box_fake.fixture("root_items_page2.json")["entries"][0]
    rsps.add("GET", f"{api}/files/12345679", json={**item, "sequence_id": "2", "size": 124,
                                                  "content_modified_at": "2024-02-02T10:00:00-08:00"})


BOX = Case(
    "box", {"access_token": "box-token"}, box_fake.serve_box, _box_edit, BOX_PHRASE, "12345679",
    lambda secret, url: vendor_calls.box(secret, {
        "type": "webhook_event", "id": "eb0c4e06-751f-442c-86f8-fd5bb404dbec", "created_at": "2024-02-02T10:00:01-08:00",
        "trigger": "FILE.UPLOADED", "webhook": {"id": "53", "type": "webhook"},
        "created_by": {"type": "user", "id": "17738362", "name": "Dana Kim", "login": "dana@example.com"},
        "source": {"id": "12345679", "type": "file", "name": "vendor-notes.txt"}}),
    secret="SamplePrimaryKey1Bx9aZ7")


# --- Dropbox: a change in the account; the run reads list_folder/continue from the saved cursor ----------
DROPBOX_PHRASE = "Pack a quokka-proof rain jacket"


def _dropbox_edit(rsps):
    dropbox_fake.serve_dropbox(rsps, packing=dropbox_fake.PACKING_TEXT + DROPBOX_PHRASE + ".\n")
    rsps.add("POST", f"{dropbox_fake.API}/files/list_folder/continue", json=dropbox_fake.fixture("changes.json"),
             match=[responses.matchers.json_params_matcher(
                 {"cursor": "AAGvDt2WSkpNqf1WgNQ-kqVqNjg6xgO0nvqyBqRqBOBSDrGsH0Dn3l8"})])


DROPBOX = Case(
    "dropbox", {"access_token": "sl.test"}, dropbox_fake.serve_dropbox, _dropbox_edit, DROPBOX_PHRASE,
    dropbox_fake.PACKING,
    lambda secret, url: vendor_calls.dropbox(secret, {
        "list_folder": {"accounts": ["dbid:AAH4f99T0taONIb-OurWxbNQ6ywGRopQngc"]},
        "delta": {"users": [12336]}}),
    secret="dbx-app-secret-4f2a9c")


CASES = [ASANA, STRIPE, ZENDESK, TRELLO, LINEAR, GITHUB, GITLAB, NOTION, SLACK, ONEDRIVE, OUTLOOK, CALENDAR, DRIVE,
         BOX, DROPBOX]
