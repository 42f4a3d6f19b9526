"""`--format junit`: JUnit XML for GitLab, Jenkins and dorny/test-reporter.

One `<testsuite>` per step (per submission), one `<testcase>` per hidden
test. A step that has no tests to show (missing file, syntax error) still
gets one testcase, so every step appears in the CI's test view; a step never
handed in is a `<failure>` ("not handed in"), not a skip, so GitLab shows it.
A bonus step graded but not counted (CONTRACT §4.1) carries the property
`counted=false` and shows a non-passing outcome as `<skipped>` (an untouched
bonus stub is no failure in GitLab's view); `graded_path` is a property when the step files were found
one folder down. Learner text
is cleaned of what XML 1.0 forbids and bounded, keeping files far below
GitLab's 30 MB limit even for a class.
"""

from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from attn_practice.grader.reports._text import bound, diagnosis_text, label, test_text, xml_safe
from attn_practice.grader.results import GradeReport, Status, StepResult, TestResult

#: Bounds per element, in characters.
MESSAGE_LIMIT = 500
TEXT_LIMIT = 20_000
OUTPUT_LIMIT = 20_000

_FAILED = (Status.FAILED, Status.MISSING)
_ERRORED = (Status.ERROR, Status.TIMEOUT)
_SKIPPED = (Status.SKIPPED,)
NOT_HANDED_IN = "not handed in"


@dataclass
class _Counts:
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0

    def add(self, status: Status) -> None:
        self.tests += 1
        self.failures += status in _FAILED
        self.errors += status in _ERRORED
        self.skipped += status in _SKIPPED

    def merge(self, other: _Counts) -> None:
        self.tests += other.tests
        self.failures += other.failures
        self.errors += other.errors
        self.skipped += other.skipped

    def attrs(self) -> dict[str, str]:
        return {
            "tests": str(self.tests),
            "failures": str(self.failures),
            "errors": str(self.errors),
            "skipped": str(self.skipped),
        }


def _time(seconds: float) -> str:
    return f"{max(0.0, float(seconds)):.3f}"


def _one_line(text: str) -> str:
    text = xml_safe(text).strip()
    first = text.splitlines()[0] if text else ""
    return bound(first, MESSAGE_LIMIT)


def step_file(report: GradeReport, step: StepResult) -> str:
    """The step's file as a repository-relative path, for CI links ("" if unknown)."""
    if not step.file:
        return ""
    sub = (report.graded_path or report.submission).replace("\\", "/").rstrip("/")
    path = step.file.replace("\\", "/")
    if posixpath.isabs(path) or sub in ("", ".") or path.startswith(sub + "/"):
        return path
    return posixpath.normpath(posixpath.join(sub, path))


def _outcome(case: ET.Element, status: Status, message: str, text: str, kind: str = "") -> None:
    """Attach the failure/error/skipped child that `status` calls for.

    `type` is the Failure's kind (value, shape, exception, ...) when known.
    """
    if status is Status.MISSING:
        tag, kind = "failure", "missing"
    elif status in _FAILED:
        tag, kind = "failure", kind or "AssertionError"
    elif status in _ERRORED:
        tag, kind = "error", "Timeout" if status is Status.TIMEOUT else kind or "Error"
    elif status in _SKIPPED:
        tag, kind = "skipped", status.value
    else:
        return
    child = ET.SubElement(case, tag, message=_one_line(message), type=kind)
    child.text = xml_safe(bound(text, TEXT_LIMIT))


def _test_case(step: StepResult, test: TestResult, classname: str, file: str) -> ET.Element:
    case = ET.Element("testcase", classname=classname, name=xml_safe(test.name))
    case.set("time", _time(test.duration))
    if file:
        case.set("file", xml_safe(file))
    if test.status not in (Status.PASSED, *_SKIPPED):
        body = test_text(test)
        diag = diagnosis_text(step)
        if diag:
            body = f"{body}\n\n{diag}"
        summary = test.failure.summary if test.failure else test.message
        _outcome(case, test.status, summary or body, body, test.failure.kind if test.failure else "")
    elif test.status in _SKIPPED:
        _outcome(case, test.status, test.message or "skipped", test.message)
    return case


def _step_case(step: StepResult, classname: str, file: str) -> ET.Element:
    """A stand-in testcase for a step whose tests could not run or were not kept."""
    case = ET.Element("testcase", classname=classname, name=step.id)
    case.set("time", _time(step.duration))
    if file:
        case.set("file", xml_safe(file))
    if step.status is Status.MISSING:
        why = f"{step.file or step.id} was not found in the submission"
        _outcome(case, step.status, NOT_HANDED_IN, f"{NOT_HANDED_IN}: {why}")
    elif step.status in _SKIPPED:
        why = step.error or f"{step.id} skipped"
        _outcome(case, step.status, why, why)
    else:
        body = step.error or f"{step.id} {step.status}"
        diag = diagnosis_text(step)
        _outcome(case, step.status, body, f"{body}\n\n{diag}" if diag else body)
    return case


def _suite(report: GradeReport, step: StepResult, several: bool) -> tuple[ET.Element, _Counts]:
    sub = label(report.submission)
    name = f"{sub}:{step.id}" if several else step.id
    classname = f"attn-practice.{sub}.{step.id}" if several else f"attn-practice.{step.id}"
    classname = xml_safe(classname)
    file = step_file(report, step)
    cases: list[tuple[ET.Element, Status]] = [
        (_test_case(step, t, classname, file), t.status) for t in step.tests
    ]
    step_errored = step.status in _ERRORED and not any(s in _ERRORED for _, s in cases)
    if not cases or step_errored:
        cases.append((_step_case(step, classname, file), step.status))
    if not step.counted:
        cases = [(_not_counted(case), status if status is Status.PASSED else Status.SKIPPED)
                 for case, status in cases]
    counts = _Counts()
    for _, status in cases:
        counts.add(status)
    suite = ET.Element("testsuite", name=xml_safe(name), **counts.attrs())
    suite.set("time", _time(step.duration))
    if file:
        suite.set("file", xml_safe(file))
    _properties(suite, report, step)
    for case, _ in cases:
        suite.append(case)
    if step.output:
        out = ET.Element("system-out")
        out.text = xml_safe(bound(step.output, OUTPUT_LIMIT))
        # GitLab shows a testcase's output, not a suite's: give it to the first
        # case that did not pass, else keep it on the suite.
        target = next((c for c, s in cases if s is not Status.PASSED), suite)
        target.append(out)
    return suite, counts


def _not_counted(case: ET.Element) -> ET.Element:
    """A bonus step the course does not count never shows as a failure: its outcome is a skip."""
    for child in case:
        if child.tag in ("failure", "error"):
            child.tag = "skipped"
            child.set("message", _one_line(f"bonus step, not counted by this course: "
                                           f"{child.get('message', '')}"))
            child.set("type", "not-counted")
    return case


def _properties(suite: ET.Element, report: GradeReport, step: StepResult | None) -> None:
    props = []
    if step is not None and not step.counted:
        props.append(("counted", "false"))
    if report.graded_path:
        props.append(("graded_path", label(report.graded_path)))
    props += [("warning", label(w)) for w in report.warnings]  # CONTRACT 4.5: on every suite
    if props:
        el = ET.SubElement(suite, "properties")
        for k, v in props:
            ET.SubElement(el, "property", name=k, value=xml_safe(v))


def _error_suite(report: GradeReport, several: bool) -> tuple[ET.Element, _Counts]:
    """The whole submission could not be graded: one errored testcase says why."""
    name = f"{label(report.submission)}:grade" if several else "grade"
    case = ET.Element("testcase", classname="attn-practice", name="grade", time=_time(0))
    _outcome(case, Status.ERROR, report.error, report.error)
    counts = _Counts()
    counts.add(Status.ERROR)
    suite = ET.Element("testsuite", name=xml_safe(name), **counts.attrs())
    suite.set("time", _time(report.duration))
    suite.append(case)
    return suite, counts


def render(reports: Sequence[GradeReport]) -> str:
    """The JUnit XML document for these reports, UTF-8, with an XML declaration."""
    several = len(reports) > 1
    root = ET.Element("testsuites", name="attn-practice")
    total = _Counts()
    time = 0.0
    for report in reports:
        parts = [_suite(report, s, several) for s in report.steps]
        if report.error:
            parts.append(_error_suite(report, several))
        for suite, counts in parts:
            root.append(suite)
            total.merge(counts)
        time += report.duration
    for key, value in total.attrs().items():
        root.set(key, value)
    root.set("time", _time(time))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
