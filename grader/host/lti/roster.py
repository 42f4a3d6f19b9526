"""Names and Roles (NRPS 2.0): a course's members become the class's learners before they launch.

Each member who is not staff is mapped to a learner by (issuer, user_id), as
a launch would map them (created with their name when new), so the
instructor's grid lists who has not started yet and their first launch
resumes that same learner. Pages of the roster are followed by the `Link:
<...>; rel="next"` header, at most `MAX_PAGES`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from attn_practice.grader.host.auth import hash_secret, new_secret
from attn_practice.grader.host.lti import http, registry
from attn_practice.grader.host.lti.claims import Media, Scope, is_instructor
from attn_practice.grader.host.lti.signin import give_student_id
from attn_practice.grader.host.lti.tokens import TOKENS
from attn_practice.grader.host.store.base import Store
from attn_practice.grader.host.store.sql_lti import LtiContext

MAX_PAGES = 50
NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
STAFF = ("Instructor", "Administrator", "ContentDeveloper", "Mentor", "TeachingAssistant")


@dataclass(frozen=True)
class Imported:
    context: str
    members: int
    added: int


def _staff(roles: object) -> bool:
    if not isinstance(roles, list):
        return False
    if is_instructor(roles):
        return True
    return any(isinstance(r, str) and r.rsplit("#", 1)[-1].rsplit("/", 1)[-1] in STAFF for r in roles)


def _name(member: dict) -> str:
    name = member.get("name") or " ".join(str(member.get(k, "")) for k in ("given_name", "family_name"))
    clean = "".join(c for c in str(name) if c.isprintable()).strip()
    return clean[:80] or "LMS learner"


def import_roster(store: Store, context: LtiContext) -> Imported:
    found = registry.find(store, context.issuer, context.client_id)
    if not found or not context.memberships_url:
        raise http.PlatformError("this course gave no roster URL (its launches carry no Names and Roles "
                                 "claim)")
    platform = found[0]
    token = TOKENS.get(store, platform, [Scope.MEMBERSHIPS.value])
    url, members, added = context.memberships_url, 0, 0
    for _ in range(MAX_PAGES):
        answer = http.call("GET", url, headers={"Authorization": f"Bearer {token}",
                                                "Accept": Media.MEMBERSHIPS.value})
        if answer.status != 200:
            raise http.PlatformError(f"the roster was refused: {answer.brief()}")
        data = answer.json()
        for member in data.get("members", []) if isinstance(data, dict) else []:
            if not isinstance(member, dict) or not isinstance(member.get("user_id"), str):
                continue
            if member.get("status", "Active") != "Active" or _staff(member.get("roles")):
                continue
            members += 1
            learner, new = store.lti_learner_or_create(platform.issuer, member["user_id"][:255],
                                                       _name(member), "", hash_secret(new_secret()))
            sourcedid = member.get("lis_person_sourcedid")
            if new and isinstance(sourcedid, str) and sourcedid.strip():
                give_student_id(store, learner, "".join(c for c in sourcedid if c.isprintable()).strip()[:64])
            added += int(new)
        more = NEXT.search(answer.headers.get("link", ""))
        if not more or not registry.url_ok(more.group(1)):
            break
        url = more.group(1)
    return Imported(context.title or context.context_id, members, added)
