"""Text helpers shared by the CI writers.

Learner output, exception messages and folder names reach these writers
verbatim and can hold anything: ANSI colour codes, NUL bytes, lone
surrogates from undecodable bytes, bidi overrides that reorder what a reader
sees, zero-width characters, a megabyte of prints. Every writer cleans and
bounds that text here, in one way, so no CI system ever receives a file it
rejects and no reader sees text that differs from what is there.
"""

from __future__ import annotations

import re

from attn_practice.grader.results import Failure, Status, StepResult, TestResult

#: Default bound for learner output shown per step (characters).
OUTPUT_LIMIT = 4000

# Characters no report shows as they are: C0 controls (tab and newline aside),
# DEL, C1 controls, lone surrogates, the bidi overrides and isolates (which
# reorder what a reader sees), zero-width and invisible characters, line and
# paragraph separators, the BOM, tag characters, and XML's two non-characters.
_INVISIBLE = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufff9-\ufffb\xad"
              "\ufeff\ufffe\uffff\ud800-\udfff\U000e0000-\U000e007f")
_CLEAN = re.compile(rf"\\(?=[\\u{_INVISIBLE}])|[{_INVISIBLE}]")
_LABEL = re.compile(rf"\\(?=[\\u\t\n{_INVISIBLE}])|[\t\n{_INVISIBLE}]")
# What XML 1.0 cannot hold at all, even escaped (its Char production).
# Compiled on first use: its wide ranges take milliseconds every process start.
_XML_FORBIDDEN = r"[^\x09\x0a\x0d\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
_STEP_NUMBER = re.compile(r"(\d+)$")


def _visible(match: re.Match[str]) -> str:
    ch = match.group()
    return "\\\\" if ch == "\\" else f"\\u{{{ord(ch):x}}}"


def clean(text: str) -> str:
    """Text safe to show anywhere: every invisible or control character as `\\u{hex}`.

    Showing a stray character (rather than deleting it) tells the learner
    their output contained one, and keeps the mapping injective: two
    different texts never look the same after cleaning (a backslash that
    could be read as the start of an escape is doubled). Tab and newline are
    kept; an ANSI colour code shows as `\\u{1b}[31m`, a bidi override as
    `\\u{202e}`.
    """
    return _CLEAN.sub(_visible, text)


def label(text: str) -> str:
    """A submission name (a folder name) as one line: `clean`, with tabs and newlines escaped too.

    Injective like `clean`: two folders never get the same label.
    """
    return _LABEL.sub(_visible, text)


def xml_safe(text: str) -> str:
    """`clean` text, minus anything XML 1.0 forbids (a belt to `clean`'s braces)."""
    return re.sub(_XML_FORBIDDEN, _visible, clean(text))


def md_escape(text: str) -> str:
    """One line of learner-derived text that Markdown shows literally: no heading, link or HTML.

    Every ASCII punctuation character is backslash-escaped (CommonMark allows
    it for all of them), and `<`, `>`, `&` become entities, so no raw HTML or
    image beacon can be formed whatever the renderer.
    """
    out = []
    for ch in label(text):
        if ch in "<>&":
            out.append({"<": "&lt;", ">": "&gt;", "&": "&amp;"}[ch])
        elif ch in "!\"#$%'()*+,-./:;=?@[\\]^_`{|}~":
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


_JSON_INVISIBLE = re.compile(rf"[{_INVISIBLE}]")


def _json_escape(match: re.Match[str]) -> str:
    units = match.group().encode("utf-16-le", "surrogatepass")
    return "".join(f"\\u{int.from_bytes(units[i:i + 2], 'little'):04x}" for i in range(0, len(units), 2))


def json_text(obj: object, indent: int | None = 2) -> str:
    """JSON text whose invisible characters are `\\uXXXX` escapes: the same data once parsed.

    Lone surrogates (undecodable learner bytes) stay valid JSON this way too, and
    a bidi override in a message cannot reorder what someone reading the file sees.
    """
    import json

    return _JSON_INVISIBLE.sub(_json_escape, json.dumps(obj, indent=indent, ensure_ascii=False))


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
