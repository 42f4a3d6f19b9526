"""Student-id clashes for the instructor: what the page lists and the two ways to settle one.

Two kinds (`ClashKind`): a *refused* claim (someone joined with an id another
learner holds; they were not signed up) and a *shared* id (learners from
before the one-id-one-learner rule who hold the same id). The instructor
settles a refused claim by keeping the id with its holder, or by giving it
to the claimant (the holder's id is cleared, their work stays; the claimant
then joins again); any learner's id can be set or cleared.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from attn_practice.grader.host.store.base import Learner, Store
from attn_practice.grader.host.store.sql_integrity import student_id_key


class ClashKind(str, enum.Enum):
    REFUSED = "refused"
    SHARED = "shared"


class GiveTo(str, enum.Enum):
    HOLDER = "holder"
    CLAIMANT = "claimant"


def readable_id(student_id: str) -> bool:
    """Whether an id says something once spaces and invisible characters are gone ("" is none)."""
    return not student_id or bool(student_id_key(student_id))


def shared_ids(learners: Sequence[Learner]) -> dict[str, list[Learner]]:
    """id key -> its learners, for every id more than one learner holds."""
    by_key: dict[str, list[Learner]] = {}
    for x in learners:
        key = student_id_key(x.student_id)
        if key:
            by_key.setdefault(key, []).append(x)
    return {k: v for k, v in by_key.items() if len(v) > 1}


def _who(x: Learner | None) -> dict[str, Any] | None:
    return None if x is None else {"learner": x.id, "name": x.display_name, "student_id": x.student_id}


def id_conflicts(store: Store, learners: Sequence[Learner] | None = None) -> list[dict[str, Any]]:
    """Every open clash, refused claims first (oldest first), as plain JSON data."""
    learners = store.learners() if learners is None else learners
    by_id = {x.id: x for x in learners}
    out: list[dict[str, Any]] = [
        {"kind": ClashKind.REFUSED.value, "conflict": c.id, "student_id": c.student_id,
         "claimant": c.display_name, "at": c.created, "holder": _who(by_id.get(c.holder_id))}
        for c in store.id_conflicts()]
    out += [{"kind": ClashKind.SHARED.value, "student_id": group[0].student_id,
             "learners": [_who(x) for x in group]} for group in shared_ids(learners).values()]
    return out


def settle(store: Store, conflict_id: str, give_to: GiveTo) -> bool:
    """Settle a refused claim; False when there is no such open claim."""
    conflict = next((c for c in store.id_conflicts() if c.id == conflict_id), None)
    if conflict is None:
        return False
    if give_to is GiveTo.CLAIMANT:
        holder = store.learner(conflict.holder_id)
        if holder is not None and student_id_key(holder.student_id) == student_id_key(conflict.student_id):
            store.set_student_id(holder.id, "")
    return store.settle_id_conflict(conflict_id)
