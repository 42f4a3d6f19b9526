"""What a class got wrong: aggregates over many grade reports (CONTRACT §6).

Input is the JSON `grade --format json` wrote (read by `class_input`), so a
class is never re-graded to get its report. The output is plain JSON-ready
data: `report --format json` prints it and the HTML page renders exactly it.

Counting rules (one per number, so a count on the page is checkable by hand
against the per-submission reports):

- a submission's score and max_score are the ones its report states;
- "completed all core steps": the core steps 1-5 all passed (a bonus step a
  course counts does not change it); "completed every counted step": every
  step the course counts passed;
- "graded with warnings": reports carrying any intake warning (a near-miss
  name, a notebook, two versions...); "nothing recognised": every step
  `missing`; "not graded": an error for the whole submission, or nothing
  recognised;
- every rate is part / whole, unrounded in the JSON; the page rounds each
  percentage once, from those counts; mean and median to two decimals;
- a step's pass rate: passed / submissions whose report has that step;
- a diagnosis id's count: submissions showing it at that step (once each),
  its share: count / submissions in the class;
- an undiagnosed failure: a step that did not pass (failed, error, timeout;
  not missing) and named no known mistake, grouped by its signature: the
  first failing test and that test's failure kind;
- a test's failure rate: failed / out_of, where out_of counts the submissions
  that handed that step in (status not missing) less those that skipped the
  test: a test absent from a step that could not load counts as not failed
  there, and the step's own "loads" check is out of everyone, not of the few
  it failed for;
- the top mistakes: each id over all steps, counting each submission once.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from attn_practice.grader.results import GradeReport, Status
from attn_practice.grader.staff.class_input import (
    ClassReportError,
    EmptyClass,
    Member,
    MixedCourses,
    NotAGradeReport,
    check_one_course,
    load_members,
    member_from_dict,
)
from attn_practice.grader.staff.session_history import History, diagnoses_met

__all__ = ["ClassReportError", "EmptyClass", "Member", "MixedCourses", "NotAGradeReport",
           "aggregate", "from_reports", "histogram", "load_members", "misconception_csv"]

CLASS_SCHEMA = "attn-practice.class/1"
#: Statuses that count as "the step did not pass for a reason in the code".
FAILING = frozenset({Status.FAILED, Status.ERROR, Status.TIMEOUT})
#: A step without tests that failed as a whole (syntax error, missing function).
WHOLE_STEP = "(whole step)"
#: Longest example message kept per undiagnosed group (characters).
EXAMPLE_LIMIT = 600
#: How many mistakes the headline names ("plan the next lecture around the top three").
TOP_MISTAKES = 3


# ------------------------------------------------------------------ aggregating
def from_reports(reports: Iterable[GradeReport]) -> list[Member]:
    """Members from in-memory reports (`grade --format html`), through the very JSON text
    `grade --format json` writes: str enums become plain strings, and the page is the one
    `report` would make from that file."""
    members = [member_from_dict(json.loads(r.to_json(indent=None)), source="this run")
               for r in reports]
    check_one_course(members)
    return members


def aggregate(members: Sequence[Member], *, catalogue: dict[str, dict[str, str]] | None = None,
              sort: str = "given", history: History | None = None) -> dict[str, Any]:
    """The §6 aggregates as plain JSON-ready data (the page renders exactly these numbers).

    `catalogue` maps a diagnosis id to its title/explanation/nudge, for ids a
    report names without its words; by default `reference.mistakes`. `sort`:
    "given" keeps the submissions as read; "score" lists the lowest score first
    (then by name), the ones to look at first after a deadline. `history` (a
    hosted session's, by submission label) adds `diagnoses_met`: every mistake
    met during the session, fixed or not (`session_history`).
    """
    n = len(members)
    scores = [m.score for m in members]
    max_score = max((m.max_score for m in members), default=0.0)
    step_order = _step_order(members)
    titles: dict[str, str] = {}
    bonus: dict[str, bool] = {}
    step_counts: dict[str, Counter[str]] = {s: Counter() for s in step_order}
    tests: dict[tuple[str, str], list[int]] = {}
    handed_in: Counter[str] = Counter()
    diag: dict[tuple[str, str], list[str]] = defaultdict(list)
    words: dict[str, dict[str, str]] = {}
    groups: dict[tuple[str, str, str], dict[str, Any]] = {}

    for m in members:
        for s in m.report.steps:
            titles.setdefault(s.id, s.title)
            bonus[s.id] = bonus.get(s.id, False) or s.id not in m.counted
            step_counts[s.id][s.status.value] += 1
            if s.status is not Status.MISSING:
                handed_in[s.id] += 1
            for t in s.tests:
                skipped_failed = tests.setdefault((s.id, t.name), [0, 0])
                skipped_failed[0] += t.status is Status.SKIPPED
                skipped_failed[1] += t.status in FAILING
            for d in s.diagnoses:
                if diag[(s.id, d.id)][-1:] != [m.label]:  # labels are unique: once per submission
                    diag[(s.id, d.id)].append(m.label)
                if d.explanation or (d.title and d.title != d.id):
                    words.setdefault(d.id, {"title": d.title, "explanation": d.explanation,
                                            "nudge": d.nudge})
            if s.status in FAILING and not s.diagnoses:
                test, kind, message = _signature(s)
                g = groups.setdefault((s.id, test, kind), {"submissions": [], "example": message,
                                                           "example_submission": m.label})
                g["submissions"].append(m.label)

    missing_words = {i for _, i in diag if i not in words}
    if missing_words:
        words.update({i: w for i, w in (catalogue if catalogue is not None
                                        else _catalogue()).items() if i in missing_words})

    steps_out = []
    for sid in step_order:
        c = step_counts[sid]
        graded = sum(c.values())
        steps_out.append({
            "id": sid, "title": titles.get(sid, ""), "bonus": bonus.get(sid, False),
            "graded": graded, "passed": c["passed"], "pass_rate": _rate(c["passed"], graded),
            "statuses": {st.value: c[st.value] for st in Status if st is not Status.SKIPPED},
        })
    order = {sid: i for i, sid in enumerate(step_order)}
    diagnoses_out = [{
        "step": sid, "id": did,
        "title": words.get(did, {}).get("title") or did,
        "explanation": words.get(did, {}).get("explanation", ""),
        "nudge": words.get(did, {}).get("nudge", ""),
        "count": len(labels), "share": _rate(len(labels), n), "submissions": labels,
    } for (sid, did), labels in diag.items()]
    diagnoses_out.sort(key=lambda d: (order[d["step"]], -d["count"], d["id"]))
    undiagnosed = [{
        "step": sid, "test": test, "kind": kind, "count": len(g["submissions"]),
        "share": _rate(len(g["submissions"]), n), "submissions": g["submissions"],
        "example": g["example"], "example_submission": g["example_submission"],
    } for (sid, test, kind), g in groups.items()]
    undiagnosed.sort(key=lambda g: (-g["count"], order[g["step"]], g["test"], g["kind"]))
    tests_out = [{"step": sid, "name": name, "failed": failed,
                  "out_of": handed_in[sid] - skipped,
                  "failure_rate": _rate(failed, handed_in[sid] - skipped)}
                 for (sid, name), (skipped, failed) in tests.items()]
    tests_out.sort(key=lambda t: (-t["failure_rate"], -t["failed"], order[t["step"]], t["name"]))

    anywhere: dict[str, set[str]] = defaultdict(set)
    for (_, did), labels in diag.items():
        anywhere[did].update(labels)
    top = sorted(anywhere.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:TOP_MISTAKES]
    session: dict[str, Any] = {}
    if history is not None:
        met_ids = {d for checks in history.values() for c in checks for d in c.get("diagnoses", ())}
        unnamed = met_ids - set(words)
        if unnamed:
            words.update({i: w for i, w in (catalogue if catalogue is not None
                                            else _catalogue()).items() if i in unnamed})
        session["diagnoses_met"] = diagnoses_met(history, anywhere, words)
    return {**{
        "schema": CLASS_SCHEMA,
        "headline": {
            "submissions": n,
            "median_score": round(statistics.median(scores), 2) if scores else None,
            "mean_score": round(statistics.fmean(scores), 2) if scores else None,
            "max_score": max_score,
            "completed_core": sum(m.completed_core for m in members),
            "completed_counted": sum(m.completed_counted for m in members),
            "graded_with_warnings": sum(bool(m.report.warnings) for m in members),
            "nothing_recognised": sum(m.report.nothing_recognised for m in members),
            "not_graded": sum(bool(m.report.error) or m.report.nothing_recognised for m in members),
        },
        "course": members[0].course if members else "",
        "top_mistakes": [{"id": did, "title": words.get(did, {}).get("title") or did,
                          "count": len(labels), "share": _rate(len(labels), n)}
                         for did, labels in top],
        "score_histogram": histogram(scores, max_score),
        "steps": steps_out,
        "diagnoses": diagnoses_out,
        "undiagnosed": undiagnosed,
        "tests": tests_out,
        "submissions": [{
            "submission": m.label, "score": m.score, "max_score": m.max_score,
            "completed_core": m.completed_core, "completed_counted": m.completed_counted,
            "error": m.report.error, "warnings": list(m.report.warnings),
            "nothing_recognised": m.report.nothing_recognised,
            "steps": {s.id: s.status.value for s in m.report.steps},
            "diagnoses": {s.id: s.diagnosis_ids for s in m.report.steps if s.diagnoses},
        } for m in (sorted(members, key=lambda m: (m.score, m.label)) if sort == "score" else members)],
    }, **session}


def _signature(step: Any) -> tuple[str, str, str]:
    """(first failing test, its failure kind, an example message) for an undiagnosed step."""
    for t in step.tests:
        if t.status in FAILING:
            kind = t.failure.kind if t.failure is not None and t.failure.kind else t.status.value
            message = t.failure.summary if t.failure is not None and t.failure.summary else t.message
            return t.name, str(kind), _bounded(message or step.error)
    return WHOLE_STEP, step.status.value, _bounded(step.error or f"{step.id} {step.status.value}")


def _bounded(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EXAMPLE_LIMIT else text[:EXAMPLE_LIMIT] + " ..."


def _rate(part: int, whole: int) -> float:
    """Unrounded: a percentage is rounded once, where it is shown (never 84.85 -> 84.9)."""
    return part / whole if whole else 0.0


def _step_order(members: Sequence[Member]) -> list[str]:
    seen: dict[str, None] = {}
    for m in members:
        for s in m.report.steps:
            seen.setdefault(s.id, None)
    return sorted(seen, key=_step_key)


def _step_key(step_id: str) -> tuple[int, str]:
    digits = "".join(ch for ch in step_id if ch.isdigit())
    return (int(digits) if digits else 1 << 30, step_id)


def histogram(scores: Sequence[float], max_score: float) -> list[dict[str, Any]]:
    """Score bins: one per whole point when scores are whole and few, else ten equal bins.

    Each bin is `{"low", "high", "count"}`: a whole-point bin has
    `low == high` (that score); an equal-width bin holds `low <= score < high`,
    the last one closed (`score == max_score` falls in it).
    """
    if not scores:
        return []
    top = max(max_score, max(scores))
    if all(float(s).is_integer() for s in scores) and float(top).is_integer() and top <= 20:
        counts = Counter(int(s) for s in scores)
        return [{"low": float(v), "high": float(v), "count": counts[v]} for v in range(int(top) + 1)]
    width = top / 10 if top > 0 else 1.0
    bins = [{"low": round(i * width, 4), "high": round((i + 1) * width, 4), "count": 0}
            for i in range(10)]
    for s in scores:
        bins[min(int(s // width), 9) if s >= 0 else 0]["count"] += 1
    return bins


def _catalogue() -> dict[str, dict[str, str]]:
    """Diagnosis id -> its words, from the catalogue of known mistakes."""
    from attn_practice.reference.mistakes import MISTAKES

    return {i: {"title": m.title, "explanation": m.explanation, "nudge": m.nudge}
            for i, m in MISTAKES.items()}


MISCONCEPTION_COLUMNS = ["step", "id", "title", "count", "share", "submissions", "explanation"]


def misconception_csv(agg: dict[str, Any]) -> str:
    """The misconception table as CSV (`report --format csv`): one row per step and id.

    `submissions` lists the labels separated by "; "; a label a spreadsheet
    would run as a formula is quoted, as in the gradebook CSV. RFC 4180 line ends.
    """
    import csv
    import io

    from attn_practice.grader.reports.csv_report import safe_cell

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(MISCONCEPTION_COLUMNS)
    for d in agg["diagnoses"]:
        writer.writerow([d["step"], d["id"], safe_cell(d["title"]), d["count"], d["share"],
                         safe_cell("; ".join(d["submissions"])),
                         safe_cell(d["explanation"])])
    return buf.getvalue()
