"""One submission's report as a standalone HTML page (for LMSs that take an HTML feedback file).

The same content as the terminal report (`terminal.py`), in the same order:
a summary table, then per step that did not pass each test with ✓/✗, the
failure (smallest failing input, expected vs got, the learner's own
traceback, a line that reproduces it), the named mistake with its
explanation and nudge, what the code printed; and at the end what to do
next. Pure: a `GradeReport` in, text out; all learner text is escaped.
"""

from __future__ import annotations

from attn_practice.grader.reports._text import OUTPUT_LIMIT, bound, clean, step_problem
from attn_practice.grader.reports.html import esc, fmt_num, page, prose, status_icon
from attn_practice.grader.reports.terminal import (
    MAX_DETAILED_FAILURES,
    _distinct,
    repro_snippet,
    step_label,
)
from attn_practice.grader.results import Failure, GradeReport, Status, StepResult, TestResult


def render_learner(report: GradeReport, *, generator: str = "") -> str:
    """The learner's own report page."""
    title = f"attn-practice report: {report.submission}"
    body = [f"<header><h1>{esc(report.submission)}</h1>"
            f'<p class="meta">attn-practice grade report{" · " + esc(generator) if generator else ""}'
            "</p></header>"]
    if report.warnings:  # how the submission was read (CONTRACT 4.5)
        items = "".join(f"<li>{esc(w)}</li>" for w in report.warnings)
        body.append(f'<section id="warnings"><h2>Warnings</h2><ul class="warnings">{items}</ul></section>')
    if report.error:
        body.append(f'<section id="error"><p class="error">This submission could not be graded: '
                    f"{esc(report.error)}</p></section>")
    else:
        body.append(_summary(report))
        for s in report.steps:
            if s.status not in (Status.PASSED, Status.MISSING):
                body.append(_step(s))
        body.append(_next(report))
    return page(title, "\n".join(body))


def _summary(report: GradeReport) -> str:
    score, max_score = report.score, report.max_score
    rows = "".join(
        f'<tr data-step="{esc(s.id)}"><td>{esc(step_label(s))}</td><td>{esc(s.title)}</td>'
        f'<td class="{esc(s.status.value)}">{status_icon(s.status.value)} {esc(s.status.value)}</td>'
        f'<td class="n">{fmt_num(s.score)}/{fmt_num(s.max_score)}</td>'
        f'<td class="ids">{"".join(f"<code>{esc(i)}</code>" for i in s.diagnosis_ids)}</td></tr>'
        for s in report.steps)
    return (f'<section id="summary"><div class="cards"><div class="card" data-key="score">Score'
            f'<b class="v">{fmt_num(score)} / {fmt_num(max_score)}</b></div></div>'
            '<table><thead><tr><th>step</th><th>title</th><th>status</th><th class="n">score</th>'
            f"<th>known mistake</th></tr></thead><tbody>{rows}</tbody></table></section>")


def _step(s: StepResult) -> str:
    passed = sum(t.status is Status.PASSED for t in s.tests)
    out = [f'<section class="step" id="{esc(s.id)}"><h2>{status_icon(s.status.value)} '
           f"{esc(step_label(s))} · {esc(s.title)}"
           + (f' <span class="dim small">({passed}/{len(s.tests)} tests passed)</span>'
              if s.tests else "") + "</h2>"]
    if s.file:
        out.append(f'<p class="dim">File: <code>{esc(s.file)}</code>'
                   + (f", line {s.line}" if s.line else "") + "</p>")
    if s.error and not s.tests:
        out.append(f"<pre>{esc(s.error)}</pre>")
    if s.tests:
        out.append('<ul class="tests" style="list-style:none;padding-left:.5rem">'
                   + "".join(f"<li>{status_icon(t.status.value)} {esc(t.name)}</li>" for t in s.tests)
                   + "</ul>")
    failures = [t for t in s.tests if t.status is not Status.PASSED and t.failure is not None]
    shown = _distinct(failures)[:MAX_DETAILED_FAILURES]
    for i, t in enumerate(shown, 1):
        out.append(_failure(t, s, number=i if len(shown) > 1 else 0))
    rest = [t for t in failures if t not in shown]
    if rest:
        out.append(f'<details class="more"><summary>{len(rest)} more failing test'
                   f'{"s" if len(rest) > 1 else ""} (the same or a similar cause: fix the one above '
                   "first)</summary>" + "".join(_failure(t, s) for t in rest) + "</details>")
    if not failures and s.status is not Status.PASSED and not (s.error and not s.tests):
        out.append(f"<pre>{esc(step_problem(s))}</pre>")
    for d in s.diagnoses:
        out.append(f'<div class="mistake"><p><b>Known mistake</b> <code>{esc(d.id)}</code> '
                   f"<b>{prose(d.title)}</b></p>"
                   + (f"<p>{prose(d.explanation)}</p>" if d.explanation else "")
                   + (f"<p><b>Try:</b> {prose(d.nudge)}</p>" if d.nudge else "") + "</div>")
    if s.output.strip():
        out.append("<p><b>Your code printed:</b></p>"
                   f"<pre>{esc(bound(clean(s.output).rstrip(), OUTPUT_LIMIT))}</pre>")
    for note in s.notes:
        out.append(f'<p class="dim">note: {esc(note)}</p>')
    out.append("</section>")
    return "".join(out)


def _failure(t: TestResult, s: StepResult, *, number: int = 0) -> str:
    f: Failure | None = t.failure
    assert f is not None
    label = f"Failure {number}: " if number else "Failed: "
    out = [f'<div class="failure"><h3>{status_icon(t.status.value)} {label}{esc(t.name)}</h3>',
           f"<p><b>{esc(f.summary)}</b></p>"]
    if f.details:
        out.append(f"<pre>{esc(f.details.rstrip())}</pre>")
    if f.traceback:
        out.append("<p><b>Your code (most recent call last):</b></p>"
                   f"<pre>{esc(f.traceback.rstrip())}</pre>")
    lines = repro_snippet(f, s)
    if lines:
        where = f" (run Python in the folder that holds {s.file})" if s.file else ""
        out.append(f"<p><b>Reproduce it</b>{esc(where)}:</p><pre>{esc(chr(10).join(lines))}</pre>")
    if f.hint:
        out.append(f'<p><b class="passed">Next:</b> {esc(f.hint)}</p>')
    out.append("</div>")
    return "".join(out)


def _next(report: GradeReport) -> str:
    """What to do next: the first step to fix, the command that re-checks it."""
    todo = [s for s in report.steps if s.status is not Status.PASSED and not s.bonus]
    todo += [s for s in report.steps if s.status is not Status.PASSED and s.bonus]
    if not todo:
        text = "<p>Every graded step passed. Well done.</p>"
    else:
        s = todo[0]
        where = f"<code>{esc(s.file)}</code>" if s.file else esc(s.id)
        advice = next((d.nudge for d in s.diagnoses if d.nudge), "")
        if not advice:
            advice = next((t.failure.hint for t in s.tests if t.failure and t.failure.hint), "")
        if s.status is Status.MISSING:
            advice = advice or f"Create {s.file or s.id} with the function the lesson describes."
        text = (f"<p>Start with {esc(step_label(s))}: open {where}"
                + (f" ({esc(s.function)})" if s.function else "") + ".</p>"
                + (f"<p>{esc(advice)}</p>" if advice else "")
                + f"<p>Check it again with <code>attn-practice check {esc(s.id)}</code>.</p>")
        if len(todo) > 1:
            text += ("<p class=\"dim\">Then: " + ", ".join(esc(step_label(x)) for x in todo[1:])
                     + ".</p>")
    return f'<section id="next"><h2>What next</h2>{text}</section>'
