"""The serve page's API, answered from the class store for one signed-in learner.

The page (`grader/teaching/web/static`, unchanged) talks to `serve`'s
`Bridge`; this module gives it the same JSON shapes, computed from the
learner's stored versions, reports and progress instead of a folder: every
save is a new version (nothing is overwritten, so "backed up" is always
true), a check runs the latest saved files through the fair queue, hints
and progress live in the store. The HTML is `render`'s, the solution and
lesson text the catalogue's, so the page reads exactly as under `serve`.

Every method takes the learner from the session, never from the request: a
learner can only ever name their own rows (CONTRACT §7).
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attn_practice.grader.catalog import Exercise
from attn_practice.grader.host.checks.base import CheckRequest, CheckResult
from attn_practice.grader.host.store.base import Learner, ReportRow, StandingRow, Store, Version
from attn_practice.grader.host.words import hosted_stub
from attn_practice.grader.results import GradeReport
from attn_practice.grader.teaching.web import render

MAX_FILE_BYTES = 1024 * 1024
#: the stored report's extra key for the check's worked-example HTML (GradeReport ignores it)
WORKED_KEY = "worked_html"
HISTORY_LIMIT = 100
#: what one learner's versions may hold in all: a class's disk is not one learner's to fill
LEARNER_QUOTA = 64 * 1024 * 1024


class Standing(str, enum.Enum):
    """A learner's standing on a step, as the page's sidebar and the instructor's grid say it."""

    PASSED = "passed"
    FAILING = "failed"
    STALE = "stale"  # checked, then edited since: the result is of an older version
    NOT_STARTED = "not started"


class EventKind(str, enum.Enum):
    """What the live views hear about (store events)."""

    JOINED = "joined"
    SAVED = "saved"
    CHECKED = "checked"
    HINT = "hint"
    REISSUED = "reissued"
    SETTINGS = "settings"


class NotFound(LookupError):
    """A step or version the learner named does not exist (for them): a 404, never a KeyError's."""


class BadInput(ValueError):
    """Input the page (or someone posing as it) sent that we refuse; the message says why."""


@dataclass(frozen=True)
class Conflict:
    """The step changed (another tab, another computer) since the page loaded it."""

    text: str
    version: str


def standing(report: ReportRow | StandingRow | None, latest_version_id: str | None) -> Standing:
    """Passed / failing as the latest report says; stale when a newer version was saved since."""
    if report is None:
        return Standing.NOT_STARTED
    if latest_version_id is not None and latest_version_id != report.version_id:
        return Standing.STALE
    return Standing.PASSED if report.passed else Standing.FAILING


def page_status(report: ReportRow | None) -> str:
    """The sidebar's three words (the serve page knows no 'stale')."""
    if report is None:
        return Standing.NOT_STARTED.value
    return Standing.PASSED.value if report.passed else Standing.FAILING.value


class Lesson:
    def __init__(self, store: Store, catalog: Sequence[Exercise]):
        self.store = store
        self.catalog = list(catalog)
        self._stubs = {e.id: hosted_stub(e.stub_source()) for e in self.catalog}
        self.quota = LEARNER_QUOTA

    # ------------------------------------------------------------ lookups
    def step(self, name: str) -> Exercise:
        """A step by id only (step1..step8): anything else is unknown."""
        for e in self.catalog:
            if name == e.id:
                return e
        raise NotFound(f"unknown step {name[:40]!r}")

    def text_of(self, learner: Learner, ex: Exercise) -> tuple[str, str]:
        """(text, version id) of the learner's step file; a step never saved is its stub ('')."""
        latest = self.store.versions(learner.id, ex.id, limit=1)
        return (latest[0].content, latest[0].id) if latest else (self._stubs[ex.id], "")

    def files(self, learner: Learner) -> dict[str, str]:
        latest = self.store.latest_files(learner.id)
        return {e.file: latest[e.id].content if e.id in latest else self._stubs[e.id]
                for e in self.catalog}

    def passed(self, learner: Learner) -> dict[str, bool]:
        """step -> whether its latest check passed, for the steps checked (one light query)."""
        return {step: passed for step, (_, passed, _) in self.store.latest_standings(learner.id).items()}

    # ------------------------------------------------------------ what the page shows
    def summary(self, learner: Learner) -> dict[str, Any]:
        standings = self.store.latest_standings(learner.id)
        passed = {step: ok for step, (_, ok, _) in standings.items()}
        latest = {step: v.id for step, v in self.store.latest_files(learner.id).items()}
        stale = {step for step, (_, _, vid) in standings.items() if latest.get(step, vid) != vid}
        hints = {p.step: p.hints for p in self.store.progress(learner.id)}
        current = next((e for e in self.catalog if not passed.get(e.id)), None)
        return {
            "workspace": f"kept by the class server for {learner.display_name}",
            "learner": learner.display_name,
            "current": current.id if current else None,
            "checking": None,
            "warnings": [],
            "steps": [{"id": e.id, "number": e.number, "title": e.title, "file": e.file,
                       "bonus": e.bonus, "status": _word(passed.get(e.id)), "stale": e.id in stale,
                       "hints": hints.get(e.id, 0), "hints_total": len(e.hints)}
                      for e in self.catalog],
        }

    def page(self, learner: Learner, ex: Exercise) -> dict[str, Any]:
        text, version = self.text_of(learner, ex)
        report = self.store.latest_report(learner.id, ex.id)
        progress = next((p for p in self.store.progress(learner.id) if p.step == ex.id), None)
        if progress is None:  # the first visit: a write (later visits only read)
            progress = self.store.open_step(learner.id, ex.id)
        i = self.catalog.index(ex)
        return {
            "id": ex.id, "number": ex.number, "title": ex.title, "file": ex.file,
            "function": ex.function, "signature": ex.signature, "bonus": ex.bonus,
            "path": f"{ex.file} (kept by the class server: every save is a version)",
            "lesson_html": render.markdown(ex.lesson), "task_html": render.markdown(ex.task),
            "content": text, "version": version, "file_problem": "",
            "status": page_status(report), "attempts": progress.checks,
            "stale": report is not None and report.version_id != version,
            "last_report": self.last_report(learner, ex, report, version),
            "hints": [render.markdown(h) for h in ex.hints[: progress.hints]],
            "hints_total": len(ex.hints),
            "solution": self.solution(ex) if ex.id in self.store.passed_steps(learner.id) else None,
            "prev": self.catalog[i - 1].id if i > 0 else None,
            "next": self.catalog[i + 1].id if i + 1 < len(self.catalog) else None,
        }

    def last_report(self, learner: Learner, ex: Exercise, row: ReportRow | None,
                    version: str) -> dict[str, Any] | None:
        """The step's last stored report as the page shows a check's answer, as `serve` keeps it:
        a reload, a restart or another computer shows what the learner last saw, marked stale
        when the code was saved again since (the header says the same)."""
        if row is None:
            return None
        report = GradeReport.from_dict(row.report)
        if not report.steps:
            return None
        answer = self._answer(learner, ex, report.steps[0], str(row.report.get(WORKED_KEY) or ""))
        return {**answer, "version": row.version_id, "checked_at": row.created,
                "stale": row.version_id != version}

    def _answer(self, learner: Learner, ex: Exercise, step: Any, extra_html: str) -> dict[str, Any]:
        """A check's report as the page shows it: the step's results, what to do next."""
        passed = self.passed(learner)
        next_step = next((e for e in self.catalog if not passed.get(e.id)), None)
        hints = next((p.hints for p in self.store.progress(learner.id) if p.step == ex.id), 0)
        html = (render.step_html(step, audience=render.Audience.HOSTED) + extra_html
                + render.next_html(step, hints_used=hints, hints_total=len(ex.hints),
                                   next_step=next_step, audience=render.Audience.HOSTED))
        return {"step": ex.id, "status": step.status.value, "passed": step.passed,
                "diagnoses": step.diagnosis_ids, "html": html,
                "next": next_step.id if next_step else None}

    @staticmethod
    def solution(ex: Exercise) -> dict[str, str]:
        from attn_practice.reference import attention as reference

        return {"code": inspect.getsource(reference.FUNCTIONS[ex.function]),
                "note_html": render.markdown(ex.solution_note)}

    # ------------------------------------------------------------ changes
    def save(self, learner: Learner, ex: Exercise, content: Any, base: Any,
             force: bool = False) -> Version | Conflict:
        text = checked_text(content)
        if base is not None and not isinstance(base, str):
            raise BadInput("'base' must be the version the page loaded")
        current_text, current = self.text_of(learner, ex)
        if base is not None and base != current and not force:
            return Conflict(current_text, current)
        self._within_quota(learner, text)
        return self.store.save_version(learner.id, ex.id, text)

    def _within_quota(self, learner: Learner, text: str) -> None:
        if self.store.learner_bytes(learner.id) + len(text.encode("utf-8")) > self.quota:
            raise BadInput(f"your saved versions have reached this class's limit "
                           f"({self.quota // (1024 * 1024) or 1} MiB in all); nothing was saved. "
                           "Ask your instructor.")

    def hint(self, learner: Learner, ex: Exercise) -> dict[str, Any]:
        before = next((p.hints for p in self.store.progress(learner.id) if p.step == ex.id), 0)
        n = self.store.reveal_hint(learner.id, ex.id, len(ex.hints))
        return {"hints": [render.markdown(h) for h in ex.hints[:n]], "hints_total": len(ex.hints),
                "new": n > before}

    def reset(self, learner: Learner, ex: Exercise) -> dict[str, Any]:
        """A fresh stub as a new version: the learner's own stays in the history."""
        v = self.store.save_version(learner.id, ex.id, self._stubs[ex.id])
        return {"backup": "the version history (Earlier versions, below the editor)", "link": None,
                "content": v.content, "version": v.id}

    def history(self, learner: Learner, ex: Exercise) -> list[dict[str, Any]]:
        """The step's versions, newest first, each with the result of the check run on it."""
        checks = {r.version_id: {"status": r.status, "passed": r.passed, "diagnoses": list(r.diagnoses)}
                  for r in self.store.report_history(learner.id) if r.step == ex.id}
        return [{"id": v.id, "created": v.created, "bytes": len(v.content.encode()),
                 "lines": v.content.count("\n") + 1, "check": checks.get(v.id)}
                for v in self.store.versions(learner.id, ex.id, limit=HISTORY_LIMIT)]

    def restore(self, learner: Learner, ex: Exercise, version_id: Any) -> Version:
        """Save an earlier version again as the newest (scoped: only this learner's, this step's)."""
        if not isinstance(version_id, str) or not version_id or len(version_id) > 64:
            raise BadInput("'version' must be one of your versions' ids")
        old = self.store.version(learner.id, version_id)
        if old is None or old.step != ex.id:
            raise NotFound("no such version of yours for this step")
        self._within_quota(learner, old.content)
        return self.store.save_version(learner.id, ex.id, old.content)

    # ------------------------------------------------------------ checks
    def check_request(self, learner: Learner, ex: Exercise) -> tuple[CheckRequest, str]:
        """What to check (the latest saved files) and the version id the report will be of."""
        passed = self.passed(learner)
        failing = frozenset(s for s, ok in passed.items() if not ok and s != ex.id)
        unchecked = frozenset(e.id for e in self.catalog if e.id not in passed and e.id != ex.id)
        _, version = self.text_of(learner, ex)
        return CheckRequest(learner.id, ex.id, self.files(learner), failing, unchecked), version

    def check_answer(self, learner: Learner, ex: Exercise, result: CheckResult,
                     version: str) -> dict[str, Any]:
        """Store the report (unless the grader failed) and answer as serve's check does."""
        report = GradeReport.from_dict(result["report"])
        if result.get("grader_failed") or report.error or not report.steps or report.grader_failed:
            why = report.error or "the grader could not finish this check"
            return {"step": ex.id, "status": "error", "passed": False, "diagnoses": [],
                    "html": f'<p class="error">{render.esc(why)}</p>', "version": version,
                    "next": None, "seconds": result.get("seconds", 0),
                    "waited": result.get("waited", 0), "counted": False}
        worked = str(result.get("worked_html") or "")
        # the worked example is kept beside the report: a reload shows all the learner saw
        row = self.store.save_report(learner.id, ex.id, version,
                                     {**result["report"], WORKED_KEY: worked} if worked else result["report"])
        answer = self._answer(learner, ex, report.steps[0], worked)
        return {**answer, "version": version, "checked_at": row.created, "stale": False,
                "seconds": result.get("seconds", 0), "waited": result.get("waited", 0),
                "counted": True}


def _word(passed: bool | None) -> str:
    if passed is None:
        return Standing.NOT_STARTED.value
    return Standing.PASSED.value if passed else Standing.FAILING.value


def checked_text(content: Any) -> str:
    if not isinstance(content, str):
        raise BadInput("the file's content must be text")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput("the text is not valid Unicode (a lone surrogate?); nothing was saved") from None
    if len(data) > MAX_FILE_BYTES:
        raise BadInput(f"the file would be {len(data)} bytes; the limit is 1 MiB. Nothing was saved.")
    if "\0" in content:
        raise BadInput("the text holds a NUL character; nothing was saved")
    return content
