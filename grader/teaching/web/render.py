"""HTML for the browser lesson: the lessons' Markdown and the check report, every string escaped.

Pure functions from plain data to HTML fragments. Learner-derived text (test
messages, printed output, tracebacks, exception text) only ever reaches the
page through `esc`, so a learner's `print("<script>")` shows as text. The
report carries what the terminal's `check` shows: each test with its mark and
name, the failure (summary, smallest failing input, expected vs got with the
worst element, tolerance, the learner's traceback, a repro line), the named
mistake with explanation and nudge, the worked example with the first
diverging stage marked, and what to do next.
"""

from __future__ import annotations

import enum
import html
import re
from collections.abc import Sequence
from typing import Any

from attn_practice.grader.catalog import step_number
from attn_practice.grader.reports.terminal import repro_snippet
from attn_practice.grader.results import Status, StepResult, TestResult

#: status -> (mark, word): the mark is never the only carrier of meaning (the word is shown too)
MARKS = {
    Status.PASSED: ("✓", "passed"),
    Status.FAILED: ("✗", "failed"),
    Status.ERROR: ("!", "error"),
    Status.TIMEOUT: ("⧗", "timed out"),
    Status.MISSING: ("·", "missing"),
    Status.SKIPPED: ("–", "skipped"),
}
MAX_DETAILED_FAILURES = 2


class Audience(enum.Enum):
    """Who reads the page: a learner beside their workspace folder (`serve`), or in a hosted
    class's page, who has no folder, no terminal and no `attn-practice` command."""

    WORKSPACE = "workspace"
    HOSTED = "hosted"


OUTPUT_LIMIT = 1500
#: a <pre> may scroll sideways (long lines): a keyboard user must be able to reach it (WCAG 2.1.1)
_SCROLLS = ' tabindex="0"'
_CONTROL = {c: "\ufffd" for c in [*range(0, 9), 11, 12, *range(14, 32), 127]}


def esc(text: Any) -> str:
    """Escape for HTML text and attribute values; control characters become U+FFFD."""
    return html.escape(str(text), quote=True).translate(_CONTROL)


# ------------------------------------------------------------------ markdown
_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*|\*(?!\s)(.+?)\*")


def inline(text: str) -> str:
    """`code`, **bold**, *emphasis*; everything else escaped."""
    out, pos = [], 0
    for m in _INLINE.finditer(text):
        out.append(esc(text[pos:m.start()]))
        code, bold, em = m.groups()
        if code is not None:
            out.append(f"<code>{esc(code)}</code>")
        elif bold is not None:
            out.append(f"<strong>{inline(bold)}</strong>")
        else:
            out.append(f"<em>{inline(em)}</em>")
        pos = m.end()
    out.append(esc(text[pos:]))
    return "".join(out)


def markdown(text: str) -> str:
    """The Markdown our lessons use: headings, paragraphs, lists, fenced and indented code."""
    lines = text.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    para: list[str] = []
    items: list[list[str]] = []
    list_tag = ""
    i = 0

    def flush() -> None:
        nonlocal items, list_tag
        if para:
            out.append(f"<p>{inline(' '.join(para))}</p>")
            para.clear()
        if items:
            out.append(f"<{list_tag}>" + "".join(f"<li>{inline(' '.join(it))}</li>" for it in items)
                       + f"</{list_tag}>")
            items, list_tag = [], ""

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            code: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                code.append(lines[i])
                i += 1
            out.append(f'<pre class="code"{_SCROLLS}><code>{esc(chr(10).join(code))}</code></pre>')
        elif not stripped:
            flush()
        elif m := re.match(r"(#{1,4})\s+(.*)", stripped):
            flush()
            level = min(len(m.group(1)) + 2, 6)  # the page's h1/h2 are the step's own titles
            out.append(f"<h{level}>{inline(m.group(2))}</h{level}>")
        elif m := re.match(r"([-*]|\d+\.)\s+(.*)", stripped):
            tag = "ol" if m.group(1)[0].isdigit() else "ul"
            if para or (items and tag != list_tag):
                flush()
            list_tag = tag
            items.append([m.group(2)])
        elif items and line.startswith((" ", "\t")):
            items[-1].append(stripped)
        elif line.startswith("    ") and not para:
            flush()
            code = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                code.append(lines[i][4:])
                i += 1
            out.append(f'<pre class="code"{_SCROLLS}><code>{esc(chr(10).join(code).rstrip())}</code></pre>')
            continue
        else:
            if items:
                flush()
            para.append(stripped)
        i += 1
    flush()
    return "\n".join(out)


# ------------------------------------------------------------------ the report
def _pre(text: str, cls: str = "") -> str:
    return f'<pre class="{cls}"{_SCROLLS}>{esc(text.rstrip())}</pre>' if text.strip() else ""


def _bounded(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _distinct(failures: Sequence[TestResult]) -> list[TestResult]:
    """One failure per cause, as the terminal shows them."""
    seen: set[str] = set()
    out = []
    for t in failures:
        f = t.failure
        key = t.message if f is None else f"{f.kind}:{f.summary.split(':')[0]}"
        if key not in seen:
            seen.add(key)
            out.append(t)
    return out


def _details(text: str) -> str:
    """Failure details; the line naming the worst element is marked (text and style)."""
    rows = []
    for line in text.rstrip("\n").split("\n"):
        worst = re.search(r"\bworst\b|largest (difference|error)", line, re.I)
        tol = re.search(r"\batol=|\brtol=|tolerance", line)
        cls = ' class="worst"' if worst else ' class="tol"' if tol else ""
        mark = ('<span class="tag">worst element ▸</span> ' if worst else
                '<span class="tag">tolerance ▸</span> ' if tol else "")
        rows.append(f"<span{cls}>{mark}{esc(line)}</span>")
    return f'<pre class="details"{_SCROLLS}>' + "\n".join(rows) + "</pre>"


def short_paths(text: str, root: str) -> str:
    """`File "/abs/ws/step1_scores.py"` -> `File "step1_scores.py"`: the learner's file, by its name."""
    if not root:
        return text
    return text.replace(f'File "{root.rstrip("/")}/', 'File "')


# The engine's advice names terminal commands; a hosted learner has the page's buttons instead.
_REFERENCE_STEPS = re.compile(r",? or check this step with --reference-steps to use the reference versions "
                              r"of earlier steps|\s*\(or check this step alone with `attn-practice check "
                              r"step\d+ --reference-steps`\)")
_COMMAND = re.compile(r"(?:run )?`attn-practice (\w+)(?: (step\d+))?[^`]*`")
_ON_THE_PAGE = {"check": "check {step} on its page", "hint": "“Reveal a hint” (under the editor)",
                "show": "the lesson ({step}) on this page",
                "solution": "The reference solution (shown on this page once {step} passes)"}


def for_reader(text: str, audience: Audience) -> str:
    """The engine's words as this reader can act on them: terminal commands become the page's."""
    if audience is Audience.WORKSPACE or "attn-practice" not in text and "--reference-steps" not in text:
        return text
    text = _REFERENCE_STEPS.sub("", text)
    return _COMMAND.sub(lambda m: _ON_THE_PAGE.get(m.group(1), "the buttons under the editor").format(
        step=m.group(2) or "the step"), text)


def _repro_html(f: Any, step: StepResult, audience: Audience) -> str:
    """The lines that reproduce the failing call, with where to run them for this reader."""
    lines = repro_snippet(f, step)
    if not lines:
        return ""
    if audience is Audience.WORKSPACE:
        return (f'<p class="label">Reproduce it (run Python in the folder that holds '
                f'{esc(step.file)}):</p>{_pre(chr(10).join(lines), "repro")}')
    # No folder to import from: the learner's function is pasted above these lines instead.
    own = f"from {step.file.removesuffix('.py')} import " if step.file else "\0"
    lines = [kept for line in lines
             if (kept := "; ".join(p for p in line.split("; ") if not p.startswith(own)))]
    what = f"your <code>{esc(step.function)}</code> from the editor" if step.function else "your code"
    return (f'<p class="label">Reproduce it in a Python notebook (Jupyter, Colab): paste {what} '
            f'into a cell, then these lines:</p>{_pre(chr(10).join(lines), "repro")}')


def failure_html(t: TestResult, step: StepResult, root: str = "",
                 audience: Audience = Audience.WORKSPACE) -> str:
    f = t.failure
    assert f is not None
    mark, word = MARKS[t.status]
    parts = [f'<div class="failure"><h4><span class="mark" aria-hidden="true">{mark}</span> '
             f'<span class="word">{esc(word)}:</span> {esc(t.name)}</h4>',
             f'<p class="summary">{esc(f.summary)}</p>']
    if f.details:
        parts.append(_details(short_paths(f.details, root)))
    if f.traceback:
        parts.append('<p class="label">Your code (most recent call last):</p>'
                     + _pre(short_paths(f.traceback, root), "tb"))
    parts.append(_repro_html(f, step, audience))
    if f.hint:
        parts.append(f'<p class="next"><strong>Next:</strong> {esc(for_reader(f.hint, audience))}</p>')
    parts.append("</div>")
    return "".join(parts)


def step_html(step: StepResult, *, verbose: bool = False, root: str = "",
              audience: Audience = Audience.WORKSPACE) -> str:
    """One step's results: header, a line per test, the distinct failures, known mistakes, output."""
    mark, word = MARKS[step.status]
    passed = sum(t.status is Status.PASSED for t in step.tests)
    count = f' <span class="count">({passed}/{len(step.tests)} tests passed)</span>' if step.tests else ""
    parts = [f'<section class="step-result {esc(step.status.value)}" aria-label="{esc(step.id)} result">',
             f'<h3><span class="mark" aria-hidden="true">{mark}</span> {esc(step.id)} {esc(word)} · '
             f'{esc(step.title)}{count}</h3>']
    if step.error and (not step.tests or step.status is Status.MISSING):
        parts.append(f'<p class="error">{esc(for_reader(step.error, audience))}</p>')
    if step.tests:
        parts.append('<ul class="tests">')
        for t in step.tests:
            t_mark, t_word = MARKS[t.status]
            parts.append(f'<li class="{esc(t.status.value)}"><span class="mark" aria-hidden="true">'
                         f'{t_mark}</span> <span class="sr">{esc(t_word)}: </span>{esc(t.name)}</li>')
        parts.append("</ul>")
    failures = [t for t in step.tests if t.status is not Status.PASSED and t.failure is not None]
    shown = failures if verbose else _distinct(failures)[:MAX_DETAILED_FAILURES]
    parts.extend(failure_html(t, step, root, audience) for t in shown)
    if len(failures) > len(shown):
        more = len(failures) - len(shown)
        parts.append(f'<p class="dim">({more} more failing test{"s" if more > 1 else ""} with the '
                     "same or a similar cause: fix the one above first.)</p>")
    for d in step.diagnoses:
        parts.append(f'<div class="mistake" role="note"><h4>Known mistake: <code>{esc(d.id)}</code> · '
                     f'{esc(d.title)}</h4>')
        if d.explanation:  # course text (Markdown inline), escaped by `inline`
            parts.append(f"<p>{inline(d.explanation)}</p>")
        if d.nudge:
            parts.append(f"<p><strong>Try:</strong> {inline(d.nudge)}</p>")
        parts.append("</div>")
    if step.output.strip():
        parts.append(f'<p class="label">Your code printed:</p>{_pre(_bounded(step.output, OUTPUT_LIMIT), "out")}')
    for note in step.notes:
        parts.append(f'<p class="note"><strong>note:</strong> {esc(for_reader(note, audience))}</p>')
    parts.append("</section>")
    return "".join(parts)


def _num(a: Any) -> str:
    from attn_practice.grader.teaching.outcome import fmt

    return fmt(a)


def worked_example_html(rows: Sequence[Any]) -> str:
    """The worked example's stages (rows of `worked_example_rows`), first difference marked."""
    if not rows or all(getattr(r, "pending", False) for r in rows):
        return ""
    body = []
    for r in rows:
        if r.ok:
            mark, word, cls = "✓", "same as the lesson", "ok"
        elif r.pending:
            mark, word, cls = "·", "not written yet", "pending"
        elif r.first_divergence:
            mark, word, cls = "✗", "first difference", "first"
        elif r.inherited:
            mark, word, cls = "✗", "wrong only because an earlier stage was", "inherited"
        else:
            mark, word, cls = "✗", "differs", "bad"
        got = esc(r.problem) if r.got is None else esc(_num(r.got)) + (
            f" ({esc(r.problem)})" if r.problem else "")
        body.append(f'<tr class="{cls}"><th scope="row">{esc(str(step_number(r.step) or r.step))} '
                    f'{esc(r.stage)}</th><td><code>{esc(r.call)}</code></td><td>{esc(_num(r.expected))}'
                    f'</td><td>{got}</td><td><span aria-hidden="true">{mark}</span> {esc(word)}</td></tr>')
    first = next((r for r in rows if r.first_divergence), None)
    if first is not None:
        verdict = (f"Your numbers first differ at <strong>{esc(first.stage)}</strong> "
                   f"({esc(first.step)}, <code>{esc(first.call)}</code>). Work that stage out by "
                   "hand from the lesson's numbers above it.")
    else:
        verdict = "Your code reproduces the lesson's numbers at every stage it ran."
    return ('<section class="worked" aria-label="the worked example, computed by your code">'
            "<h3>The lesson's worked example, computed by your code</h3>"
            '<p class="dim">q = [1, 0, 1, 0], K = [[1, 0, 1, 0], [0, 1, 0, 1], [1, 0, 0, 0]], '
            "V = [[10, 0], [0, 5], [2, 2]], d_k = 4; each stage gets your previous answer.</p>"
            '<table><thead><tr><th scope="col">stage</th><th scope="col">call</th>'
            '<th scope="col">lesson</th><th scope="col">yours</th><th scope="col">verdict</th></tr>'
            f'</thead><tbody>{"".join(body)}</tbody></table><p>{verdict}</p></section>')


def next_html(step: StepResult, *, hints_used: int, hints_total: int, next_step: Any,
              other_step: Any = None, why: str | None = None,
              audience: Audience = Audience.WORKSPACE) -> str:
    """What to do now: the same advice as the terminal, in the page's words (buttons, not commands)."""
    if step.passed:
        if next_step is None:
            return ('<div class="next-box passed"><p><strong>All steps pass.</strong> You have built '
                    "attention from scratch! The widgets below run your own code.</p></div>")
        return (f'<div class="next-box passed"><p><strong>Passed.</strong> Next: '
                f'<a href="/step/{esc(next_step.id)}">{esc(next_step.id)} · {esc(next_step.title)}</a>'
                ". The solution is now shown under your editor.</p></div>")
    items = []
    if step.status is Status.MISSING:
        items.append(f"{esc(step.file)} is missing: use <strong>Reset</strong> to put a fresh stub back.")
    elif other_step is not None:
        fix = (f'<a href="/step/{esc(other_step.id)}">fix {esc(other_step.file)} first</a>')
        said = {
            "fails": f"Your step {step_number(step.id)} calls your <code>{esc(other_step.function)}"
                     f"</code> (step {other_step.number}), which fails: {fix}.",
            "not written": f"Your step {step_number(step.id)} calls your <code>"
                           f"{esc(other_step.function)}</code> (step {other_step.number}), which is "
                           f"not written yet: write it first ({fix.replace('fix ', 'open ')}).",
            "unchecked": f"Your step {step_number(step.id)} calls your <code>"
                         f"{esc(other_step.function)}</code> (step {other_step.number}), which has "
                         f"not been checked yet: {fix.replace('fix ', 'check ')}; if it passes, "
                         f"the problem is in {esc(step.file)}.",
        }
        items.append(said.get(str(why), f"The error happened inside {esc(other_step.file)} (your "
                                        f"{esc(other_step.id)}), which {esc(step.file)} uses: {fix}."))
        if audience is Audience.WORKSPACE:  # a hosted class has no terminal to run it in
            items.append(f"To try step {step_number(step.id)} on its own, with the reference versions "
                         f"of the earlier steps: <code>attn-practice check {esc(step.id)} "
                         "--reference-steps</code> in a terminal.")
    elif audience is Audience.HOSTED:
        items.append(f"Fix the first problem above in {esc(step.file)}, in the editor on this page.")
    else:
        items.append(f"Fix the first problem above in {esc(step.file)} (here or in your own editor).")
    items.append("Save (Ctrl+S): the page checks again by itself.")
    stuck = (f"Stuck? Reveal a hint ({hints_used} of {hints_total} revealed), or reread the lesson."
             if hints_used < hints_total else
             f"Stuck? All {hints_total} hints are revealed above; reread the lesson.")
    return ('<div class="next-box"><h3>What now</h3><ol>' + "".join(f"<li>{i}</li>" for i in items)
            + f'</ol><p>{stuck}</p></div>')
