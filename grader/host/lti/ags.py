"""Grade passback (AGS 2.0): what a learner's course score is, where it goes, and posting it.

A launch with the AGS claim leaves a *link* (its line item, or the line
items URL when the tool may create one). `sync_learner` compares each link's
last queued score with the learner's course score now (CONTRACT §4.1: the
course's points for each counted step whose latest check passed) and queues
a new one when it changed; the sender (`sender.py`) posts the queue in order.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

from attn_practice.grader.course import Course, default_course
from attn_practice.grader.host.lti import http, registry
from attn_practice.grader.host.lti.claims import Media, Scope
from attn_practice.grader.host.lti.tokens import TOKENS
from attn_practice.grader.host.lti.validate import Launch
from attn_practice.grader.host.store.base import Store
from attn_practice.grader.host.store.sql_lti import LtiLink, OutboxScore

LINEITEM_TAG = "attn-practice"


def scores_url(lineitem: str) -> str:
    """The line item's path with `/scores` appended, its query kept (AGS §3.4.1)."""
    parts = urlsplit(lineitem)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def scorable(link: LtiLink) -> bool:
    if Scope.SCORE.value not in link.scopes:
        return False
    return bool(link.lineitem) or (bool(link.lineitems) and Scope.LINEITEM.value in link.scopes)


def course_score(store: Store, course: Course | None, learner_id: str) -> tuple[float, float, bool]:
    """(points, max points, every counted step passed) under the class's course."""
    course = course or default_course()
    counted = course.counted_steps()
    latest = store.latest_standings(learner_id)
    passed = [e for e in counted if latest.get(e.id, ("", False, ""))[1]]
    return (float(sum(course.points_for(e) for e in passed)), course.max_score,
            len(passed) == len(counted))


def remember_link(store: Store, learner_id: str, launched: Launch) -> None:
    claim = launched.ags
    if not claim:
        return
    scopes = [s for s in claim.get("scope", []) if isinstance(s, str)] if isinstance(claim.get("scope"), list) else []
    lineitem = claim.get("lineitem") if isinstance(claim.get("lineitem"), str) else ""
    lineitems = claim.get("lineitems") if isinstance(claim.get("lineitems"), str) else ""
    lineitem = lineitem if lineitem and registry.url_ok(lineitem) else ""
    lineitems = lineitems if lineitems and registry.url_ok(lineitems) else ""
    p = launched.platform
    store.save_lti_link(learner_id, p.issuer, p.client_id, launched.sub, launched.context_id,
                        launched.resource_link_id, lineitem, lineitems, scopes)


def sync_learner(store: Store, course: Course | None, learner_id: str) -> int:
    """Queue the learner's score on every link where it changed; how many were queued."""
    links = [link for link in store.lti_links(learner_id) if scorable(link)]
    if not links:
        return 0
    given, maximum, completed = course_score(store, course, learner_id)
    return sum(store.enqueue_lti_score(link.id, learner_id, given, maximum, completed) is not None
               for link in links)


def _platform(store: Store, link: LtiLink) -> registry.Platform:
    found = registry.find(store, link.issuer, link.client_id)
    if not found:
        raise http.PlatformError(f"the platform {link.issuer} is no longer registered with this class")
    return found[0]


def _ensure_lineitem(store: Store, platform: registry.Platform, link: LtiLink, maximum: float) -> str:
    """The link's line item, created (or found, by resource link and tag) when the launch gave none."""
    if link.lineitem:
        return link.lineitem
    token = TOKENS.get(store, platform, [Scope.LINEITEM.value, Scope.SCORE.value])
    auth = {"Authorization": f"Bearer {token}"}
    parts = urlsplit(link.lineitems)
    query = "&".join(x for x in (parts.query, urlencode({"resource_link_id": link.resource_link_id,
                                                          "tag": LINEITEM_TAG})) if x)
    found = http.call("GET", urlunsplit(parts._replace(query=query)),
                      headers={**auth, "Accept": Media.LINEITEMS.value})
    if found.status == 200:
        items = found.json()
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("tag") == LINEITEM_TAG and isinstance(item.get("id"), str) \
                    and item.get("resourceLinkId", link.resource_link_id) == link.resource_link_id:
                store.set_lti_lineitem(link, item["id"])
                return str(item["id"])
    body = {"scoreMaximum": maximum, "label": "attn-practice", "tag": LINEITEM_TAG}
    if link.resource_link_id:
        body["resourceLinkId"] = link.resource_link_id
    made = http.call("POST", link.lineitems, body=json.dumps(body).encode(),
                     headers={**auth, "Content-Type": Media.LINEITEM.value, "Accept": Media.LINEITEM.value})
    if made.status not in (200, 201):
        raise http.PlatformError(f"creating the line item was refused: {made.brief()}")
    data: Any = made.json()
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise http.PlatformError("the platform created a line item but gave no id")
    store.set_lti_lineitem(link, data["id"])
    return data["id"]


def post_score(store: Store, score: OutboxScore) -> str:
    """Post one queued score; returns the platform's answer (raises PlatformError when refused)."""
    link = store.lti_link(score.link_id)
    if link is None:
        raise http.PlatformError("the launch link of this score is gone")
    platform = _platform(store, link)
    lineitem = _ensure_lineitem(store, platform, link, score.score_max)
    token = TOKENS.get(store, platform, [Scope.SCORE.value])
    body = {"userId": link.sub, "scoreGiven": score.score_given, "scoreMaximum": score.score_max,
            "activityProgress": "Completed" if score.completed else "InProgress",
            "gradingProgress": "FullyGraded", "timestamp": score.stamp}
    answer = http.call("POST", scores_url(lineitem), body=json.dumps(body).encode(),
                       headers={"Authorization": f"Bearer {token}", "Content-Type": Media.SCORE.value})
    if answer.status == 401:
        TOKENS.forget(platform)
    if not 200 <= answer.status < 300:
        raise http.PlatformError(answer.brief())
    return answer.brief()
