"""The instructor's live picture of the class, computed from store rows (pure functions).

- the grid: every learner × step, its standing (passed / failing / stale /
  not started), checks run, time on the step, hints revealed;
- the misconceptions right now: per step, each diagnosis id that learners'
  latest failing check shows, how many and who, with the catalogue's
  explanation and nudge (the class report's table, live);
- the stuck list: failing a step for longer than `STUCK_SECONDS` since
  opening it, or after `STUCK_CHECKS` checks.
Counting rule: each learner counts once per (step, id), from their latest
report of that step only. Texts (a mistake's explanation and nudge) stay
Markdown: the page escapes them and renders the few inline marks itself.
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
            "stuck": stuck, "stuck_rule": {"seconds": stuck_seconds, "checks": stuck_checks}, "now": now}


#: what the drill-down sends of one version's text, and of all of them (a learner saving 1 MiB
#: files over and over must not make the instructor's page download hundreds of them)
CODE_LIMIT = 64 * 1024
CODE_BUDGET = 2 * 1024 * 1024
VERSIONS_SHOWN = 50


def _checks_by_version(store: Store, learner_id: str) -> dict[str, dict[str, Any]]:
    """version id -> its latest check's result (status, passed, diagnoses, at)."""
    out: dict[str, dict[str, Any]] = {}
    for r in store.report_history(learner_id):
        out[r.version_id] = {"status": r.status, "passed": r.passed,
                             "diagnoses": list(r.diagnoses), "at": r.created}
    return out


def drilldown(store: Store, catalog: Sequence[Exercise], learner_id: str) -> dict[str, Any] | None:
    """One learner: per step, the latest code and report and every stored version, newest first,
    each with its text and the result of the check that ran on it (None: never checked)."""
    learner = store.learner(learner_id)
    if learner is None:
        return None
    files = store.latest_files(learner_id)
    checked = _checks_by_version(store, learner_id)
    progress = {p.step: p for p in store.progress(learner_id)}
    steps = []
    budget = [CODE_BUDGET]

    def text(content: str) -> str:
        shown = content[:min(CODE_LIMIT, budget[0])]
        budget[0] -= len(shown)
        return shown

    for e in catalog:
        rep = store.latest_report(learner_id, e.id)
        versions = store.versions(learner_id, e.id, limit=VERSIONS_SHOWN)
        prog = progress.get(e.id)
        steps.append({
            "step": e.id, "file": e.file, "function": e.function, "title": e.title,
            "code": files[e.id].content if e.id in files else None,
            "standing": standing(rep, files[e.id].id if e.id in files else None).value,
            "report": rep.report if rep else None,
            "diagnoses": list(rep.diagnoses) if rep else [],
            "checks": prog.checks if prog else 0, "hints": prog.hints if prog else 0,
            "history": [{"id": v.id, "created": v.created, "bytes": len(v.content.encode()),
                         "lines": v.content.count("\n") + 1, "code": (shown := text(v.content)),
                         "cut": len(shown) < len(v.content), "check": checked.get(v.id)}
                        for v in versions],
        })
    return {"learner": {"id": learner.id, "name": learner.display_name,
                        "student_id": learner.student_id, "created": learner.created},
            "mistakes": _catalogue(), "steps": steps}
