"""Access control: the principals of a caller, and the access an entity carries.

Principals are strings. An entity (and each of its chunks) carries `access_viewers`, a list of
principals, and `access_is_public`, which opens it to the whole organization. A caller acting as
a user sees a chunk when it is public or when its viewers share a principal with the caller's.

- `user:<email>`: a person, by e-mail address (lower-case). Global across sources: the same
  address in two sources is the same person.
- `group:<source connection id>:<group id>`: a group of one source connection. Sources name their
  groups with their own ids (`group:eng`); the sync namespaces them with the connection's id, so
  two connections' "eng" never collide. Group ids longer than GROUP_ID_MAX_CHARS are replaced by
  `sha256-<hex digest>` so that a principal always fits the viewers column.

Who counts as what:
- an organization-wide API key: no filter at all (`None`);
- a session user, an OAuth user, or an API key bound to a user (`api_key.user`): that user's
  principals, i.e. `user:<email>` plus every group they belong to, directly or through groups
  nested inside groups, up to settings.AIRWEAVE_ACCESS_GROUP_MAX_DEPTH levels;
- anything else: `[]`, which sees public entities only (closed by default).

Memberships are stored per source connection (AccessGroupMembership) and kept by sync.
"""
from __future__ import annotations

import hashlib
from typing import Iterable

from django.conf import settings
from django.db import connection as db_connection
from django.db.models import Q

USER_PREFIX = "user:"
GROUP_PREFIX = "group:"
GROUP_ID_MAX_CHARS = 200
MEMBERSHIP_FIELD_MAX_CHARS = 512  # AccessGroupMembership.group_id / member
VIEWER_MAX_CHARS = 320  # one element of Entity/Chunk.access_viewers


def user_principal(email: str) -> str:
    """`user:<email>`, the address stripped and lower-cased."""
    return USER_PREFIX + email.strip().lower()


def group_principal(source_connection_id, group_id: str) -> str:
    """`group:<source connection id>:<group id>`: the principal of one connection's group."""
    group_id = str(group_id)
    if len(group_id) > GROUP_ID_MAX_CHARS:
        group_id = "sha256-" + hashlib.sha256(group_id.encode()).hexdigest()
    return f"{GROUP_PREFIX}{source_connection_id}:{group_id}"


def normalize_access(*, supports_access_control: bool, source_connection_id, viewers: Iterable[str] | None,
                     is_public: bool | None) -> tuple[list[str], bool]:
    """The (viewers, is_public) to store for an entity as its source gave them.

    A source that does not declare `supports_access_control` gives org-visible entities: its
    access fields are ignored and the result is ([], True). For a source that does, `is_public`
    None (not said) counts as False, so an entity without an access list is closed: only
    organization-wide callers see it. Viewers are `user:<email>` (lower-cased) or `group:<id>`
    (namespaced with the connection, see group_principal); anything else is dropped. The result
    is sorted and without duplicates, so that content hashes stay stable.
    """
    if not supports_access_control:
        return [], True
    out = set()
    for viewer in viewers or ():
        if not isinstance(viewer, str):
            continue
        if viewer.startswith(USER_PREFIX) and viewer[len(USER_PREFIX):].strip():
            principal = user_principal(viewer[len(USER_PREFIX):])
        elif viewer.startswith(GROUP_PREFIX) and len(viewer) > len(GROUP_PREFIX):
            principal = group_principal(source_connection_id, viewer[len(GROUP_PREFIX):])
        else:
            continue
        if len(principal) <= VIEWER_MAX_CHARS:
            out.add(principal)
    return sorted(out), bool(is_public)


def visible_q(principals: list[str] | None, prefix: str = "") -> Q:
    """The access rule as an ORM filter on Entity or Chunk rows (everything when None).

    `prefix` reaches the rows through a relation, e.g. "entities__" from a SourceConnection.
    """
    if principals is None:
        return Q()
    return Q(**{f"{prefix}access_is_public": True}) | Q(**{f"{prefix}access_viewers__overlap": list(principals)})


def is_visible(principals: list[str] | None, viewers: Iterable[str], is_public: bool) -> bool:
    """The access rule of the SQL filter, for rows that never reach SQL (federated results)."""
    return principals is None or bool(is_public) or not set(principals).isdisjoint(viewers or ())


_GROUPS_SQL = """
    WITH RECURSIVE reached(source_connection_id, group_id, depth) AS (
        SELECT m.source_connection_id, m.group_id, 0
        FROM collections_accessgroupmembership m
        WHERE m.member = %s AND m.organization_id = %s
      UNION
        SELECT m.source_connection_id, m.group_id, r.depth + 1
        FROM reached r
        JOIN collections_accessgroupmembership m
          ON m.source_connection_id = r.source_connection_id AND m.member = 'group:' || r.group_id
        WHERE r.depth < %s
    )
    SELECT DISTINCT source_connection_id, group_id FROM reached
"""


def principals_for_user(*, user, organization) -> list[str]:
    """`user:<email>` and the groups `user` belongs to in `organization`, sorted.

    Groups count through nesting: when group A lists group B as a member, B's members belong to
    A. Nesting is followed up to settings.AIRWEAVE_ACCESS_GROUP_MAX_DEPTH levels beyond direct
    membership (cycles end there too). One query.
    """
    email = (getattr(user, "email", "") or "").strip()
    if not email:
        return []
    me = user_principal(email)
    depth = int(getattr(settings, "AIRWEAVE_ACCESS_GROUP_MAX_DEPTH", 10))
    with db_connection.cursor() as cur:
        cur.execute(_GROUPS_SQL, [me, getattr(organization, "pk", organization), max(depth, 0)])
        groups = {group_principal(conn, gid) for conn, gid in cur.fetchall()}
    return [me, *sorted(groups)]


def access_user(actor):
    """The user whose access applies to `actor`, or None for an organization-wide API key.

    `actor` is `request.user`: a User (session), an APIKeyActor (its key's `user` when the key
    is bound to one), or any caller object carrying `user` or, failing that, its own `email`
    (an OAuth caller). Raises NotAUser for anonymous or unknown callers, who must see public
    entities only. (Not to be confused with the author recorded on writes.)
    """
    api_key = getattr(actor, "api_key", None)
    if api_key is not None:
        return getattr(api_key, "user", None)
    bound = getattr(actor, "user", None)
    if bound is not None:
        return bound
    if getattr(actor, "is_authenticated", False) and not getattr(actor, "is_anonymous", True) \
            and getattr(actor, "email", None):
        return actor
    raise NotAUser()


class NotAUser(Exception):
    """The caller is neither an organization-wide key nor a user."""


def principals_for(*, actor, organization) -> list[str] | None:
    """The principals that restrict what `actor` sees in `organization`.

    None for an organization-wide API key (no filter); the user's principals for a session
    user, an OAuth user or an API key bound to a user; [] (public entities only) for any other
    caller. Every face that searches calls this once per request.
    """
    try:
        user = access_user(actor)
    except NotAUser:
        return []
    if user is None:
        return None
    return principals_for_user(user=user, organization=organization)
