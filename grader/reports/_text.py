"""Text helpers shared by the CI writers.

Learner output and exception messages reach these writers verbatim and can
hold anything: ANSI colour codes, NUL bytes, lone surrogates from undecodable
bytes, a megabyte of prints. Every writer cleans and bounds that text here,
in one way, so no CI system ever receives a file it rejects.
"""

from __future__ import annotations

import re

from attn_practice.grader.results import Failure, Status, StepResult, TestResult

#: Default bound for learner output shown per step (characters).
OUTPUT_LIMIT = 4000

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-Z\\-_])")
# C0 controls except tab and newline, DEL, C1 controls, and lone surrogates.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# What XML 1.0 cannot hold at all, even escaped (its Char production).
# Compiled on first use: its wide ranges take milliseconds every process start.
_XML_FORBIDDEN = r"[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
_STEP_NUMBER = re.compile(r"(\d+)$")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def clean(text: str) -> str:
    """Plain printable text: ANSI sequences dropped, other controls shown as `\\xNN`.

    Showing a stray control character (rather than deleting it) tells the
    learner their output contained one; `\\r\\n` and lone `\\r` become `\\n`.
    """
    text = _ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL.sub(_visible, text)


def xml_safe(text: str) -> str:
    """`clean` text, minus anything XML 1.0 forbids (a belt to `clean`'s braces)."""
    return re.sub(_XML_FORBIDDEN, _visible, clean(text))


def bound(text: str, limit: int = OUTPUT_LIMIT) -> str:
    """At most `limit` characters, with a note saying how much was cut."""
    if len(text) <= limit:
        return text
    cut = len(text) - limit
    return f"{text[:limit]}\n... [{cut} more characters not shown]"


def fence(text: str, info: str = "") -> str:
    """A Markdown code block that no backtick run inside `text` can close early."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text.rstrip()}\n{ticks}"


def step_number(step_id: str) -> int | None:
    """3 for "step3"; None when the id carries no number."""
    m = _STEP_NUMBER.search(step_id)
    return int(m.group(1)) if m else None


def step_sort_key(step_id: str) -> tuple[int, str]:
    """Order step ids by number (step10 after step9), unnumbered ones last."""
    n = step_number(step_id)
    return (n if n is not None else 1 << 30, step_id)


def num(x: float) -> str:
    """A score as a gradebook wants it: "1", "0.5", never "1.0000000002"."""
    x = round(float(x), 4)
    return str(int(x)) if x.is_integer() else repr(x)


def failure_text(failure: Failure) -> str:
    """Everything a Failure says, in reading order."""
    parts = [failure.summary]
    if failure.details:
        parts.append(failure.details)
    if failure.repro:
        parts.append(f"Reproduce with:\n    {failure.repro}")
    if failure.traceback:
        parts.append(failure.traceback)
    if failure.hint:
        parts.append(f"Hint: {failure.hint}")
    return "\n".join(p.rstrip() for p in parts if p)


def test_text(test: TestResult) -> str:
    """Why one test did not pass: its Failure when there is one, else its message."""
    if test.failure is not None:
        return failure_text(test.failure)
    return test.message or f"{test.name}: {test.status}"


def diagnosis_text(step: StepResult) -> str:
    """The known mistakes named for a step, one paragraph each, ids first."""
    paras = []
    for d in step.diagnoses:
        lines = [f"Likely mistake [{d.id}]: {d.title}"]
        lines += [s for s in (d.explanation, d.nudge) if s]
        paras.append("\n".join(lines))
    return "\n\n".join(paras)


def step_problem(step: StepResult) -> str:
    """One paragraph saying why a step did not pass (empty for a passing step)."""
    if step.status is Status.PASSED:
        return ""
    if step.error:
        return step.error
    for t in step.tests:
        if t.status is not Status.PASSED and t.status is not Status.SKIPPED:
            return test_text(t)
    if step.status is Status.MISSING:
        return f"{step.file or step.id} was not found in the submission."
    return f"{step.id} {step.status}."


def step_headline(step: StepResult) -> str:
    """A single line for a non-passing step: its first summary or error line."""
    for t in step.tests:
        if t.status not in (Status.PASSED, Status.SKIPPED):
            line = t.failure.summary if t.failure else t.message
            if line:
                return line.strip().splitlines()[0]
    text = step_problem(step).strip()
    return text.splitlines()[0] if text else ""
