"""The instructor's live picture of the class, computed from store rows (pure functions).

- the grid: every learner × step, its standing (passed / failing / stale /
  not started), checks run, time on the step, hints revealed;
- the misconceptions right now: per step, each diagnosis id that learners'
  latest failing check shows, how many and who, with the catalogue's
  explanation and nudge (the class report's table, live);
- the stuck list: failing a step for longer than `STUCK_SECONDS` since
  opening it, or after `STUCK_CHECKS` checks.
Counting rule: each learner counts once per (step, id), from their latest
report of that step only.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from attn_practice.grader.catalog import Exercise
from attn_practice.grader.host.lesson import standing
from attn_practice.grader.host.store.base import Store

STUCK_SECONDS = 10 * 60
STUCK_CHECKS = 5


def _catalogue() -> dict[str, dict[str, str]]:
    from attn_practice.reference.mistakes import MISTAKES

    return {i: {"title": m.title, "explanation": m.explanation, "nudge": m.nudge}
            for i, m in MISTAKES.items()}


def class_picture(store: Store, catalog: Sequence[Exercise], *, now: float | None = None,
                  stuck_seconds: float = STUCK_SECONDS, stuck_checks: int = STUCK_CHECKS) -> dict[str, Any]:
    now = time.time() if now is None else now
    learners = store.learners()
    reports = {(r.learner_id, r.step): r for r in store.class_standings()}
    latest = store.latest_version_ids()
    progress = {(p.learner_id, p.step): p for p in store.progress()}
    names = {lr.id: lr.display_name for lr in learners}
    words = _catalogue()
    grid, stuck = [], []
    mis: dict[tuple[str, str], list[str]] = defaultdict(list)
    for lr in learners:
        row = []
        for e in catalog:
            rep = reports.get((lr.id, e.id))
            vid = latest.get((lr.id, e.id))
            st = standing(rep, vid)
            prog = progress.get((lr.id, e.id))
            started = prog.started if prog else None
            end = rep.created if rep is not None and rep.passed else now
            row.append({"step": e.id, "standing": st.value, "checks": prog.checks if prog else 0,
                        "hints": prog.hints if prog else 0,
                        "seconds": round(max(0.0, end - started), 1) if started else 0.0,
                        "diagnoses": list(rep.diagnoses) if rep is not None and not rep.passed else []})
            if rep is not None and not rep.passed:
                for d in dict.fromkeys(rep.diagnoses):
                    mis[(e.id, d)].append(lr.id)
                long = started is not None and now - started > stuck_seconds
                if long or (prog is not None and prog.checks >= stuck_checks):
                    stuck.append({"learner": lr.id, "name": lr.display_name, "step": e.id,
                                  "checks": prog.checks if prog else 0,
                                  "seconds": round(now - started, 1) if started else 0.0,
                                  "diagnoses": list(rep.diagnoses)})
        grid.append({"learner": lr.id, "name": lr.display_name, "student_id": lr.student_id,
                     "steps": row})
    order = {e.id: i for i, e in enumerate(catalog)}
    misconceptions = [{"step": step, "id": did, "count": len(who),
                       "title": words.get(did, {}).get("title", did),
                       "explanation": words.get(did, {}).get("explanation", ""),
                       "nudge": words.get(did, {}).get("nudge", ""),
                       "learners": [{"id": i, "name": names.get(i, "?")} for i in who]}
                      for (step, did), who in mis.items()]
    misconceptions.sort(key=lambda m: (order.get(m["step"], 99), -m["count"], m["id"]))
    stuck.sort(key=lambda s: (-s["seconds"], s["name"]))
    return {"steps": [{"id": e.id, "title": e.title, "bonus": e.bonus} for e in catalog],
            "learners": len(learners), "grid": grid, "misconceptions": misconceptions,
            "stuck": stuck, "now": now}


def drilldown(store: Store, catalog: Sequence[Exercise], learner_id: str) -> dict[str, Any] | None:
    """One learner: latest code, latest report and version history per step."""
    learner = store.learner(learner_id)
    if learner is None:
        return None
    files = store.latest_files(learner_id)
    steps = []
    for e in catalog:
        rep = store.latest_report(learner_id, e.id)
        steps.append({
            "step": e.id, "file": e.file,
            "code": files[e.id].content if e.id in files else None,
            "standing": standing(rep, files[e.id].id if e.id in files else None).value,
            "report": rep.report if rep else None,
            "diagnoses": list(rep.diagnoses) if rep else [],
            "history": [{"id": v.id, "created": v.created, "bytes": len(v.content.encode())}
                        for v in store.versions(learner_id, e.id, limit=50)],
        })
    return {"learner": {"id": learner.id, "name": learner.display_name,
                        "student_id": learner.student_id, "created": learner.created},
            "steps": steps}
