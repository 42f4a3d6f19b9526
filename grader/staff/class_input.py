"""Reading a class: grade JSON files into `Member`s, checked to be one course.

Reading is tolerant (schema `attn-practice.grade/1`, unknown keys ignored,
a failure `kind` this grader does not know read as `other`, a status newer than this grader read as
`error`), because reports outlive the grader version that wrote them; what
is not a grade report at all is refused with the file named.

Reports from different courses cannot be summed into one picture (a pass
rate over steps half the class was never asked to do means nothing). A
report names its course by a fingerprint when the grader wrote one
(`course_fingerprint`, `course.fingerprint` or `extra.course_fingerprint`);
otherwise the course is recognised by the steps it counts and their points
(a bonus step that does not count, `"counted": false` or plain `"bonus":
true`, is no part of it). A mix is refused (`MixedCourses`), naming one
file per course, so the instructor reports each course on its own.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attn_practice.grader.results import FailureKind, GradeReport, Status

GRADE_SCHEMA_PREFIX = "attn-practice.grade/"


class ClassReportError(ValueError):
    """Input that cannot make a class report; the message names the file and what to do."""


class NotAGradeReport(ClassReportError):
    """A file whose JSON is not what `grade --format json` writes."""


class MixedCourses(ClassReportError):
    """Reports from more than one course were given together."""


class EmptyClass(ClassReportError):
    """No submissions at all."""


@dataclass(frozen=True)
class Member:
    """One submission of the class, as its grade report told it."""

    report: GradeReport
    source: str  # the file it came from
    score: float
    max_score: float
    counted: tuple[str, ...]  # step ids that count towards the score (core, or listed by the course)
    course: str  # the fingerprint or a description of the steps and points

    @property
    def label(self) -> str:
        return self.report.submission

    @property
    def completed_core(self) -> bool:
        """Every core step (1-5 in the catalogue, CONTRACT 1) passed, whatever else the course counts."""
        if self.report.error:
            return False
        core = core_step_ids()
        by_id = {s.id: s for s in self.report.steps}
        return all(i in by_id and by_id[i].status is Status.PASSED for i in core)

    @property
    def completed_counted(self) -> bool:
        """Every step the course counts passed (the core, plus any bonus step it lists)."""
        if self.report.error:
            return False
        by_id = {s.id: s for s in self.report.steps}
        return bool(self.counted) and all(
            i in by_id and by_id[i].status is Status.PASSED for i in self.counted)


def core_step_ids() -> tuple[str, ...]:
    """The catalogue's core steps (not bonus): what "completed all core steps" means."""
    from attn_practice.grader.catalog import load_catalog

    return tuple(e.id for e in load_catalog() if not e.bonus)


@dataclass
class _Loaded:
    members: list[Member] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


# ------------------------------------------------------------------ reading
def load_members(paths: Sequence[Path]) -> tuple[list[Member], list[str]]:
    """Every grade report in `paths`, checked for one course; plus warnings to show.

    Raises `NotAGradeReport` naming the file, `MixedCourses`, or `EmptyClass`.
    A submission given twice (same label) in different files is kept once, the later one
    winning (a regrade); twice in ONE file it is two learners under one label (an export
    where two claimed one student id): both are kept, the second relabelled, and a warning
    names them.
    """
    loaded = _Loaded()
    by_label: dict[str, int] = {}
    repeats: list[tuple[str, str]] = []  # (label, where again): summarised in one line below
    twins: list[tuple[str, str, str]] = []  # (label, new label, file): two learners, one label
    for path in paths:
        here: set[str] = set()
        for i, data in enumerate(_read_file(path)):
            where = f"{path}" + (f" (item {i + 1})" if i else "")
            member = member_from_dict(data, source=where)
            if member.label in here:
                member, old = _relabelled(member, by_label), member.label
                twins.append((old, member.label, str(path)))
            here.add(member.label)
            if member.label in by_label:
                repeats.append((member.label, where))
                loaded.members[by_label[member.label]] = member
            else:
                by_label[member.label] = len(loaded.members)
                loaded.members.append(member)
    if not loaded.members:
        names = ", ".join(str(p) for p in paths)
        raise EmptyClass(f"{names} hold{'s' if len(paths) == 1 else ''} no grade reports: "
                         "nothing to report. Write them with "
                         "`attn-practice grade SUBMISSIONS... --format json --out results.json`.")
    check_one_course(loaded.members)
    if repeats:
        loaded.warnings.append(repeated_warning(repeats))
    loaded.warnings += [f"{where} holds more than one report labelled {old!r}: two learners under one "
                        f"id? Both are kept, the later as {new!r}. Give each learner their own id "
                        "(the instructor page lists id clashes) and export again."
                        for old, new, where in twins]
    return loaded.members, loaded.warnings


def _relabelled(member: Member, taken: dict[str, int]) -> Member:
    """The same report under the first free label "LABEL (2)", "LABEL (3)", ..."""
    from dataclasses import replace

    n = 2
    while f"{member.label} ({n})" in taken:
        n += 1
    return replace(member, report=replace(member.report, submission=f"{member.label} ({n})"))


def repeated_warning(repeats: Sequence[tuple[str, str]]) -> str:
    """One line for every repeated submission, with counts (never one line per repeat)."""
    labels = list(dict.fromkeys(label for label, _ in repeats))
    files = list(dict.fromkeys(where.split(" (item ")[0] for _, where in repeats))
    shown = ", ".join(labels[:3]) + (f" and {len(labels) - 3} more" if len(labels) > 3 else "")
    return (f"{len(labels)} submission{'s' if len(labels) != 1 else ''} appear more than once "
            f"({len(repeats)} repeated report{'s' if len(repeats) != 1 else ''}: {shown}; again in "
            f"{', '.join(files[:3])}{' and more' if len(files) > 3 else ''}): each is counted once, "
            "the later report is used.")


def _read_file(path: Path) -> list[dict[str, Any]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ClassReportError(f"{path}: no such file.") from None
    except UnicodeDecodeError:
        raise NotAGradeReport(f"{path} is not a grade report: it is not UTF-8 text. "
                              "Give the JSON that `attn-practice grade --format json --out FILE` "
                              "wrote.") from None
    except OSError as exc:
        raise ClassReportError(f"{path}: cannot read it ({exc.strerror or exc}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotAGradeReport(f"{path} is not a grade report: not valid JSON (line {exc.lineno}, "
                              f"column {exc.colno}: {exc.msg}). Give the JSON that "
                              "`attn-practice grade --format json --out FILE` wrote.") from None
    except RecursionError:
        data = None
    if data is None and text.strip() != "null" or _too_deep(data):
        raise NotAGradeReport(f"{path} is not a grade report: its JSON is nested more than "
                              f"{MAX_JSON_DEPTH} levels deep. Give the JSON that "
                              "`attn-practice grade --format json --out FILE` wrote.")
    items = data if isinstance(data, list) else [data]
    for i, item in enumerate(items):
        problem = _not_a_report(item)
        if problem:
            where = f"{path}" + (f", item {i + 1} of the array," if isinstance(data, list) else "")
            raise NotAGradeReport(f"{where} is not a grade report: {problem}. Give the JSON that "
                                  "`attn-practice grade --format json --out FILE` wrote.")
    return items


#: A grade report is about six levels deep; anything far deeper is not one (and is not
#: walked: a hostile file of 100,000 brackets must be refused, not recursed into).
MAX_JSON_DEPTH = 64


def _too_deep(data: Any) -> bool:
    """Whether parsed JSON nests deeper than MAX_JSON_DEPTH (checked without recursion)."""
    stack = [(data, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def _not_a_report(item: Any) -> str:
    """Why `item` is not a grade report object, or "" when it is one."""
    if not isinstance(item, dict):
        return f"expected a JSON object, found {type(item).__name__}"
    schema = item.get("schema")
    if not isinstance(schema, str) or not schema.startswith(GRADE_SCHEMA_PREFIX):
        return (f'its "schema" is {json.dumps(schema)}, not "attn-practice.grade/1"' if schema is not None
                else 'it has no "schema": "attn-practice.grade/1"')
    if not isinstance(item.get("submission"), str):
        return 'it has no "submission" name'
    steps = item.get("steps", [])
    if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("id"), str)
                                              for s in steps):
        return '"steps" is not a list of step objects with an "id"'
    return ""


def member_from_dict(data: dict[str, Any], *, source: str = "") -> Member:
    """A `Member` from one report object, reading what newer or older graders add or omit."""
    report = GradeReport.from_dict(_tolerant(data))
    counted = tuple(s["id"] for s in data.get("steps", ()) if _counts(s))
    score = _number(data.get("score"), report.score)
    max_score = _number(data.get("max_score"), sum(
        _number(s.get("max_score"), 0.0) for s in data.get("steps", ()) if _counts(s)))
    return Member(report=report, source=source, score=score, max_score=max_score,
                  counted=counted, course=_course_key(data, counted))


def _counts(step: dict[str, Any]) -> bool:
    """Whether a step counts towards the score: `counted` when stated, else "not bonus"."""
    if "counted" in step:
        return bool(step["counted"])
    return not step.get("bonus", False)


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return float(default)


def _course_key(data: dict[str, Any], counted: tuple[str, ...]) -> str:
    """The course a report was graded under: its fingerprint, else its counted steps and points."""
    extra = data.get("extra") if isinstance(data.get("extra"), dict) else {}
    course = data.get("course") if isinstance(data.get("course"), dict) else {}
    for value in (data.get("course_fingerprint"), course.get("fingerprint"),
                  extra.get("course_fingerprint")):
        if isinstance(value, str) and value:
            return f"course {value}"
    points = {s["id"]: _number(s.get("max_score"), 0.0) for s in data.get("steps", ())}
    if not counted:
        return "no graded steps"
    return "steps " + ", ".join(f"{i} ({points.get(i, 0):g} pt)" for i in counted)


_STATUSES = {s.value for s in Status}
_KINDS = {k.value for k in FailureKind}
_FAILURE_KEYS = ("kind", "summary", "details", "repro", "traceback", "hint")
_DIAGNOSIS_KEYS = ("id", "title", "explanation", "nudge")


def _tolerant(data: dict[str, Any]) -> dict[str, Any]:
    """`data` reshaped so `GradeReport.from_dict` accepts it: unknown keys dropped,
    unknown statuses read as `error`, missing numbers as 0, text as text."""
    steps = []
    for s in data.get("steps", ()):
        tests = []
        for t in s.get("tests", ()) if isinstance(s.get("tests"), list) else ():
            if not isinstance(t, dict):
                continue
            failure = t.get("failure")
            tests.append({
                "name": str(t.get("name", "")),
                "status": _status(t.get("status")),
                "message": _str(t.get("message")),
                "duration": _number(t.get("duration"), 0.0),
                "failure": {**{k: _str(failure.get(k)) for k in _FAILURE_KEYS},
                            "kind": _kind(failure.get("kind"))}
                if isinstance(failure, dict) else None,
            })
        details = [{k: _str(d.get(k)) for k in _DIAGNOSIS_KEYS}
                   for d in s.get("diagnosis_details", ()) if isinstance(d, dict) and d.get("id")]
        ids = [str(i) for i in s.get("diagnoses", ()) if isinstance(i, str)]
        known = {d["id"] for d in details}
        details += [{"id": i, "title": "", "explanation": "", "nudge": ""} for i in ids if i not in known]
        steps.append({
            "id": s["id"], "title": _str(s.get("title")), "status": _status(s.get("status")),
            "score": _number(s.get("score"), 0.0), "max_score": _number(s.get("max_score"), 0.0),
            "diagnosis_details": details, "tests": tests, "output": _str(s.get("output")),
            "notes": [_str(n) for n in s.get("notes", ()) if isinstance(n, str)],
            "error": _str(s.get("error")), "file": _str(s.get("file")),
            "function": _str(s.get("function")), "line": int(_number(s.get("line"), 0)),
            "duration": _number(s.get("duration"), 0.0), "bonus": bool(s.get("bonus", False)),
            "counted": _counts(s),
        })
    return {"submission": data["submission"], "steps": steps,
            "duration": _number(data.get("duration"), 0.0),
            "grader_version": _str(data.get("grader_version")), "error": _str(data.get("error")),
            "extra": data.get("extra") if isinstance(data.get("extra"), dict) else {},
            "graded_path": _str(data.get("graded_path")),
            "warnings": [_str(w) for w in data.get("warnings", ()) if isinstance(w, str)]
            if isinstance(data.get("warnings"), list) else []}


def _kind(value: Any) -> str:
    return value if value in _KINDS else FailureKind.OTHER.value


def _status(value: Any) -> str:
    return value if value in _STATUSES else Status.ERROR.value


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ("" if value is None else str(value))


def check_one_course(members: Sequence[Member]) -> None:
    """Refuse a class whose reports come from different courses, naming an example of each."""
    groups: dict[str, list[Member]] = defaultdict(list)
    for m in members:
        if m.report.error and not m.report.steps:
            continue  # a submission that could not be graded at all belongs to any course
        groups[m.course].append(m)
    if len(groups) <= 1:
        return
    lines = [f"  - {key}: {len(ms)} report{'s' if len(ms) > 1 else ''}, e.g. {ms[0].label} "
             f"(from {ms[0].source})" for key, ms in sorted(groups.items(), key=lambda kv: -len(kv[1]))]
    raise MixedCourses("these reports come from different courses (the steps they count or their "
                       "points differ), so one class page would mix them:\n" + "\n".join(lines) +
                       "\nReport each course on its own: `attn-practice report` with only that "
                       "course's JSON files.")
