"""Self-contained HTML pages: the class report (CONTRACT §6) and its shared shell.

Pure functions from plain data to text: `render_class` takes the aggregates
`grader.staff.class_report.aggregate` computed (a JSON-ready dict) and the
reports themselves; the learner's one-submission page is in `html_learner`.

One file that opens offline and prints: the CSS is inline, the charts are
inline SVG each with a table saying the same in text, and no resource is
fetched. Long lists fold into `<details>` (a 5,000-submission class stays a
few MB, and the page works with JavaScript off); a few lines of inline
script only add a filter box and open the folds before printing.

Everything that came from a learner or a file name (labels, messages,
printed output) is escaped here, at the one place text becomes HTML.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from attn_practice.grader.catalog import step_number
from attn_practice.grader.reports._text import bound, clean, step_headline
from attn_practice.grader.results import GradeReport, Status

#: Rows of a long table shown before the rest folds into "show more".
SHOWN_ROWS = 50
#: Submissions listed in the page before the rest fold away.
SHOWN_SUBMISSIONS = 200
#: Names listed openly in a misconception row before the rest fold away.
SHOWN_NAMES = 12
DETAIL_LIMIT = 200

#: ⏱ is missing from common fonts (a box in headless Chromium); ◷ is in DejaVu.
ICONS = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "◷", "missing": "·",
         "skipped": "-"}

CSS = """
:root{--ok:#1a7f37;--bad:#c62828;--warn:#9a6700;--dim:#57606a;--line:#d0d7de;--bg:#f6f8fa}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;
 margin:0 auto;max-width:1100px;padding:1.5rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.25rem;margin-top:2rem;border-bottom:1px solid
 var(--line);padding-bottom:.2rem}h3{font-size:1.05rem;margin:1.2rem 0 .4rem}
.meta,.dim{color:var(--dim)}.small{font-size:.85rem}
table{border-collapse:collapse;width:100%;margin:.4rem 0}
th,td{border-bottom:1px solid var(--line);padding:.3rem .45rem;text-align:left;vertical-align:top}
th{background:var(--bg);font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.85rem}
pre{background:var(--bg);padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-word;
 margin:.3rem 0}
.cards{display:flex;flex-wrap:wrap;gap:.8rem;margin:1rem 0}
.card{border:1px solid var(--line);border-radius:6px;padding:.6rem 1rem;min-width:10rem}
.card b{display:block;font-size:1.6rem}
.charts{display:flex;flex-wrap:wrap;gap:2rem}.charts figure{margin:0;flex:1 1 420px}
figcaption{font-weight:600;margin-bottom:.3rem}
.passed{color:var(--ok)}.failed,.error{color:var(--bad)}.timeout{color:var(--warn)}
.missing,.skipped{color:var(--dim)}
.bar{display:inline-block;height:.7rem;background:var(--bad);vertical-align:middle;margin-right:.3rem}
.bar.ok{background:var(--ok)}
details>summary{cursor:pointer}details.more>summary{color:var(--dim);margin:.3rem 0}
.sub{border-bottom:1px solid var(--line)}
.sub>summary{display:grid;grid-template-columns:minmax(9rem,2fr) 5rem minmax(8rem,2fr) 3fr;
 gap:.5rem;padding:.3rem .2rem;list-style-position:inside}
.sub>summary::-webkit-details-marker{display:none}
.sub>summary .name::before{content:"\u25B8  ";color:var(--dim)}
.sub[open]>summary .name::before{content:"\u25BE  "}
.subhead{display:grid;grid-template-columns:minmax(9rem,2fr) 5rem minmax(8rem,2fr) 3fr;gap:.5rem;
 padding:.3rem .2rem 0 1.2rem;font-weight:600;background:var(--bg)}
.sub .body{padding:0 1rem .5rem 1.6rem}.sub .body p{margin:.2rem 0}
.st,.sub i{display:inline-block;width:1.3em;text-align:center;font-weight:700;font-style:normal}
.sub i.p{color:var(--ok)}.sub i.f,.sub i.e{color:var(--bad)}.sub i.t{color:var(--warn)}
.sub i.m{color:var(--dim)}
.ids code{background:#fff8c5;padding:0 .2rem;margin-right:.2rem}
.names{margin:.1rem 0;padding-left:1.1rem}td.who{min-width:12rem}
.mistake{border-left:4px solid var(--warn);padding:.2rem .8rem;margin:.6rem 0;background:#fffbeb}
.filter{display:none;margin:.5rem 0}.js .filter{display:block}
.filter input{font:inherit;padding:.3rem .5rem;width:20rem;max-width:100%}
svg text{font:12px system-ui,sans-serif;fill:#1f2328}
@media print{body{max-width:none;padding:0;font-size:11pt}.filter{display:none!important}
 details{break-inside:avoid}a{color:inherit;text-decoration:none}h2{break-after:avoid}
 .sub{break-inside:avoid}}
"""

#: Adds the filter box and opens the folds for printing; the page is complete without it.
SCRIPT = """
document.documentElement.classList.add('js');
addEventListener('beforeprint',()=>{document.querySelectorAll('details.print-open').forEach(
 d=>d.open=true)});
const box=document.getElementById('filter');
if(box){box.addEventListener('input',()=>{const q=box.value.trim().toLowerCase();
 document.querySelectorAll('#submissions details.more').forEach(d=>{if(q)d.open=true});
 document.querySelectorAll('#submissions details.sub').forEach(d=>{
 d.hidden=q&&!d.querySelector('summary').textContent.toLowerCase().includes(q)})})}
"""


def esc(text: Any) -> str:
    """Text from anywhere (a learner, a file name) made safe to put in HTML."""
    return html.escape(clean(str(text)), quote=True)


_CODE = re.compile(r"`([^`]+)`")
_EMPH = re.compile(r"(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])")


def prose(text: Any) -> str:
    """Catalogue text (which marks `code` and *emphasis* as Markdown does), escaped, as HTML."""
    out = _CODE.sub(r"<code>\1</code>", esc(text))
    return _EMPH.sub(r"<em>\1</em>", out)


def page(title: str, body: str, *, script: str = "") -> str:
    """The whole document: one file, no external resource."""
    js = f"<script>{script}</script>" if script else ""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n{js}"
            "</body></html>\n")


def fmt_num(x: float | None) -> str:
    """A score as people write it: 3, 2.5, 2.875 (never 3.0000001); a dash for none."""
    if x is None:
        return "–"
    x = round(float(x), 4)
    return str(int(x)) if x.is_integer() else f"{x:g}"


def pct(rate: float) -> str:
    """0.125 -> "12.5%" (one decimal, trailing zero dropped)."""
    return f"{round(rate * 100, 1):g}%"


def status_icon(status: str) -> str:
    return f'<span class="st {esc(status)}" title="{esc(status)}">{ICONS.get(status, "?")}</span>'


def folded(items: Sequence[str], shown: int, *, wrap: tuple[str, str] = ("", ""),
           what: str = "more") -> str:
    """The first `shown` items, the rest inside a closed `<details>`."""
    head, tail = items[:shown], items[shown:]
    out = wrap[0] + "".join(head) + wrap[1]
    if tail:
        out += (f'<details class="more print-open"><summary>show {len(tail)} {what}</summary>'
                f'{wrap[0]}{"".join(tail)}{wrap[1]}</details>')
    return out


def svg_columns(bars: Sequence[tuple[str, int]], *, label: str, height: int = 180) -> str:
    """A column chart (the score histogram): one labelled column per bin."""
    n = max(len(bars), 1)
    width = max(320, 44 * n)
    top = max((v for _, v in bars), default=0) or 1
    plot = height - 40
    step = (width - 20) / n
    parts = [f'<svg role="img" aria-label="{esc(label)}" viewBox="0 0 {width} {height}" '
             f'width="100%" style="max-width:{width}px" xmlns="http://www.w3.org/2000/svg">']
    for i, (name, v) in enumerate(bars):
        h = plot * v / top
        x = 10 + i * step
        parts.append(f'<rect x="{x + 4:.1f}" y="{20 + plot - h:.1f}" width="{step - 8:.1f}" '
                     f'height="{h:.1f}" fill="#0969da"><title>{esc(name)}: {v}</title></rect>'
                     f'<text x="{x + step / 2:.1f}" y="{14 + plot - h:.1f}" '
                     f'text-anchor="middle">{v}</text>'
                     f'<text x="{x + step / 2:.1f}" y="{height - 6}" text-anchor="middle">'
                     f'{esc(name)}</text>')
    parts.append(f'<line x1="10" x2="{width - 10}" y1="{20 + plot}" y2="{20 + plot}" '
                 'stroke="#8c959f"/></svg>')
    return "".join(parts)


def svg_rates(rows: Sequence[tuple[str, float]], *, label: str) -> str:
    """Horizontal bars from 0 to 100% (per-step pass rates)."""
    width, row_h, left = 460, 24, 70
    height = row_h * max(len(rows), 1) + 10
    span = width - left - 60
    parts = [f'<svg role="img" aria-label="{esc(label)}" viewBox="0 0 {width} {height}" '
             f'width="100%" style="max-width:{width}px" xmlns="http://www.w3.org/2000/svg">']
    for i, (name, rate) in enumerate(rows):
        y = 5 + i * row_h
        parts.append(f'<text x="{left - 6}" y="{y + 15}" text-anchor="end">{esc(name)}</text>'
                     f'<rect x="{left}" y="{y + 3}" width="{span}" height="16" fill="#eaeef2"/>'
                     f'<rect x="{left}" y="{y + 3}" width="{span * rate:.1f}" height="16" '
                     f'fill="#1a7f37"><title>{esc(name)}: {pct(rate)} passed</title></rect>'
                     f'<text x="{left + span + 6}" y="{y + 15}">{pct(rate)}</text>')
    parts.append("</svg>")
    return "".join(parts)


# ------------------------------------------------------------------ the class page
def render_class(agg: dict[str, Any], reports: Sequence[GradeReport], *, title: str = "",
                 generator: str = "") -> str:
    """The instructor's page: headline, charts, misconceptions, undiagnosed failures,
    hardest tests, then every submission (folded)."""
    h = agg["headline"]
    title = title or f"Class report: {h['submissions']} submissions"
    body = [f"<header><h1>{esc(title)}</h1><p class=\"meta\">Course: {esc(agg.get('course', ''))}"
            + (f" · {esc(generator)}" if generator else "") + "</p></header>",
            _headline(h, agg.get("top_mistakes", ())), _charts(agg), _misconceptions(agg),
            _session_mistakes(agg), _undiagnosed(agg), _tests(agg), _submissions(agg, reports)]
    return page(title, "\n".join(body), script=SCRIPT)


def _headline(h: dict[str, Any], top_mistakes: Sequence[dict[str, Any]]) -> str:
    n = h["submissions"]
    cards = [
        ("submissions", "Submissions", str(n), ""),
        ("median_score", "Median score", fmt_num(h["median_score"]), f"of {fmt_num(h['max_score'])}"),
        ("mean_score", "Mean score", fmt_num(h["mean_score"]), f"of {fmt_num(h['max_score'])}"),
        ("completed_core", "Completed all core steps (1–5)", str(h["completed_core"]),
         pct(h["completed_core"] / n) if n else ""),
    ]
    if "completed_counted" in h:
        cards.append(("completed_counted", "Completed every counted step", str(h["completed_counted"]),
                      pct(h["completed_counted"] / n) if n else ""))
    for key, title in (("graded_with_warnings", "Graded with warnings"),
                       ("nothing_recognised", "Nothing recognised")):
        if h.get(key):
            cards.append((key, title, str(h[key]), pct(h[key] / n) if n else ""))
    if h.get("not_graded"):
        cards.append(("not_graded", "Could not be graded", str(h["not_graded"]), ""))
    items = "".join(f'<div class="card" data-key="{key}">{label}<b class="v">{value}</b>'
                    f'<span class="dim">{esc(note)}</span></div>' for key, label, value, note in cards)
    top = "".join(f'<li data-id="{esc(t["id"])}"><code>{esc(t["id"])}</code> {prose(t["title"])}: '
                  f'<span class="count">{t["count"]}</span> submission{"s" if t["count"] != 1 else ""}'
                  f' ({pct(t["share"])})</li>' for t in top_mistakes)
    top = (f'<p id="top-mistakes"><b>Most common known mistakes</b> (any step):</p><ol>{top}</ol>'
           if top else "")
    return f'<section id="headline"><div class="cards">{items}</div>{top}</section>'


def _bin_name(b: dict[str, Any]) -> str:
    if b["low"] == b["high"]:
        return fmt_num(b["low"])
    return f"{fmt_num(b['low'])}–{fmt_num(b['high'])}"


def _charts(agg: dict[str, Any]) -> str:
    bins = agg["score_histogram"]
    hist_rows = "".join(f'<tr data-bin="{esc(_bin_name(b))}"><td>{esc(_bin_name(b))}</td>'
                        f'<td class="n count">{b["count"]}</td></tr>' for b in bins)
    steps = agg["steps"]
    step_rows = "".join(
        f'<tr data-step="{esc(s["id"])}"><td>{esc(s["id"])}{" (bonus)" if s["bonus"] else ""}</td>'
        f'<td class="n passed">{s["passed"]}</td><td class="n graded">{s["graded"]}</td>'
        f'<td class="n rate">{pct(s["pass_rate"])}</td></tr>' for s in steps)
    return (
        '<section id="charts"><h2>Scores and steps</h2><div class="charts">'
        '<figure id="histogram"><figcaption>How many submissions got each score</figcaption>'
        + svg_columns([(_bin_name(b), b["count"]) for b in bins], label="score histogram")
        + '<details class="print-open"><summary>as a table</summary><table><thead><tr><th>score'
        f'</th><th class="n">submissions</th></tr></thead><tbody>{hist_rows}</tbody></table>'
        '</details></figure>'
        '<figure id="step-rates"><figcaption>Share of submissions passing each step</figcaption>'
        + svg_rates([(s["id"], s["pass_rate"]) for s in steps], label="pass rate per step")
        + '<details class="print-open"><summary>as a table</summary><table><thead><tr><th>step'
        '</th><th class="n">passed</th><th class="n">graded</th><th class="n">pass rate</th>'
        f'</tr></thead><tbody>{step_rows}</tbody></table></details></figure></div></section>')


def _names(labels: Sequence[str]) -> str:
    items = [f"<li>{esc(x)}</li>" for x in labels]
    return folded(items, SHOWN_NAMES, wrap=('<ul class="names">', "</ul>"), what="more submissions")


def _misconceptions(agg: dict[str, Any]) -> str:
    out = ['<section id="misconceptions"><h2>Misconceptions: the known mistakes the class made</h2>'
           '<p class="dim">Per step, each known mistake the grader recognised, with how many '
           'submissions showed it and who they are.</p>']
    if not agg["diagnoses"]:
        out.append("<p>No submission showed a known mistake.</p>")
    titles = {s["id"]: s["title"] for s in agg["steps"]}
    by_step: dict[str, list[dict[str, Any]]] = {}
    for d in agg["diagnoses"]:
        by_step.setdefault(d["step"], []).append(d)
    for sid, rows in by_step.items():
        out.append(f"<h3>{esc(sid)} · {esc(titles.get(sid, ''))}</h3><table><thead><tr>"
                   '<th>mistake</th><th class="n">submissions</th><th class="n">share</th>'
                   "<th>who</th></tr></thead><tbody>")
        for d in rows:
            words = f"<b>{prose(d['title'])}</b>"
            if d["explanation"]:
                words += f"<br>{prose(d['explanation'])}"
            if d["nudge"]:
                words += f'<br><span class="dim">Nudge for them: {prose(d["nudge"])}</span>'
            out.append(f'<tr data-step="{esc(sid)}" data-id="{esc(d["id"])}"><td><code>'
                       f'{esc(d["id"])}</code><br>{words}</td><td class="n count">{d["count"]}</td>'
                       f'<td class="n share">{pct(d["share"])}</td><td class="who">'
                       f'{_names(d["submissions"])}</td></tr>')
        out.append("</tbody></table>")
    out.append("</section>")
    return "".join(out)


def _session_mistakes(agg: dict[str, Any]) -> str:
    """A hosted session's export: every mistake met during it, beside those still open at the end."""
    met = agg.get("diagnoses_met")
    if met is None:
        return ""
    out = ['<section id="diagnoses-met"><h2>Mistakes met during the session</h2>'
           '<p class="dim">Every known mistake a check named during the session, fixed since or '
           'not: the misconceptions above are only those still open at the end.</p>']
    if not met:
        out.append("<p>No check during the session named a known mistake.</p></section>")
        return "".join(out)
    out.append('<table><thead><tr><th>mistake</th><th class="n">met it</th><th class="n">fixed</th>'
               '<th class="n">still open</th><th>who</th></tr></thead><tbody>')
    for did, d in met.items():
        steps = ", ".join(d.get("steps", ()))
        out.append(f'<tr data-id="{esc(did)}"><td><code>{esc(did)}</code><br><b>{prose(d["title"])}</b>'
                   + (f'<br><span class="dim">{esc(steps)}</span>' if steps else "")
                   + f'</td><td class="n count">{d["count"]}</td><td class="n fixed">{len(d["fixed"])}</td>'
                   f'<td class="n open">{len(d["still_open"])}</td><td class="who">'
                   f'{_names(d["submissions"])}</td></tr>')
    out.append("</tbody></table></section>")
    return "".join(out)


def _undiagnosed(agg: dict[str, Any]) -> str:
    out = ['<section id="undiagnosed"><h2>Failures without a known mistake</h2>'
           '<p class="dim">Steps that failed without matching any catalogued mistake, grouped by '
           'the first failing test and how it failed, largest group first: where new '
           'misconceptions show up.</p>']
    groups = agg["undiagnosed"]
    if not groups:
        out.append("<p>Every failure matched a known mistake.</p></section>")
        return "".join(out)
    rows = [
        f'<tr data-step="{esc(g["step"])}" data-test="{esc(g["test"])}" data-kind="{esc(g["kind"])}">'
        f'<td>{esc(g["step"])}</td><td>{esc(g["test"])}</td><td><code>{esc(g["kind"])}</code></td>'
        f'<td class="n count">{g["count"]}</td><td class="n share">{pct(g["share"])}</td>'
        f'<td><pre>{esc(g["example"])}</pre><span class="dim small">from '
        f'{esc(g["example_submission"])}</span><details><summary>{g["count"]} submission'
        f'{"s" if g["count"] != 1 else ""}</summary>{_names(g["submissions"])}</details></td></tr>'
        for g in groups]
    out.append('<table><thead><tr><th>step</th><th>first failing test</th><th>kind</th>'
               '<th class="n">submissions</th><th class="n">share</th><th>example message</th>'
               "</tr></thead><tbody>")
    out.append("".join(rows[:SHOWN_ROWS]))
    out.append("</tbody></table>")
    if len(rows) > SHOWN_ROWS:
        out.append(_more_table(rows[SHOWN_ROWS:], "smaller groups",
                               "<th>step</th><th>first failing test</th><th>kind</th>"
                               '<th class="n">submissions</th><th class="n">share</th>'
                               "<th>example message</th>"))
    out.append("</section>")
    return "".join(out)


def _more_table(rows: Sequence[str], what: str, head: str) -> str:
    """Rows beyond the first screenful, in a folded table of their own (valid HTML)."""
    return (f'<details class="more"><summary>show {len(rows)} {what}</summary><table><thead><tr>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></details>')


def _tests(agg: dict[str, Any]) -> str:
    head = ('<th>step</th><th>test</th><th class="n">failed</th><th class="n">out of</th>'
            '<th class="n">failure rate</th>')
    rows = [f'<tr data-step="{esc(t["step"])}" data-test="{esc(t["name"])}"><td>{esc(t["step"])}'
            f'</td><td>{esc(t["name"])}</td><td class="n failed">{t["failed"]}</td>'
            f'<td class="n out_of">{t["out_of"]}</td><td class="n rate"><span class="bar" '
            f'style="width:{4 * t["failure_rate"]:.2f}rem"></span>{pct(t["failure_rate"])}</td></tr>'
            for t in agg["tests"]]
    out = ['<section id="tests"><h2>Hardest tests</h2><p class="dim">Each hidden test, by the '
           'share of the submissions handing that step in that failed it (less any that skipped it).</p>'
           f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows[:SHOWN_ROWS])}</tbody></table>"]
    if len(rows) > SHOWN_ROWS:
        out.append(_more_table(rows[SHOWN_ROWS:], "easier tests", head))
    out.append("</section>")
    return "".join(out)


def _submissions(agg: dict[str, Any], reports: Sequence[GradeReport]) -> str:
    step_ids = [s["id"] for s in agg["steps"]]
    by_label = {r.submission: r for r in reports}
    items = [_submission(row, by_label.get(row["submission"]), step_ids)
             for row in agg["submissions"]]
    head = ('<div class="subhead"><span>submission</span><span>score</span>'
            f'<span>{" ".join(esc(str(step_number(s) or s)) for s in step_ids)}</span>'
            "<span>known mistakes</span></div>")
    return ('<section id="submissions"><h2>Every submission</h2><p class="dim">One row each; '
            'open a row for its per-step detail. Steps: ✓ passed, ✗ failed, ! error, ◷ timeout, '
            '· missing. A learner\'s full report (every test, inputs, expected and got): '
            '<code>attn-practice grade FOLDER --format html --out report.html</code>.</p><p class="filter"><label>Filter by name or mistake id: '
            '<input id="filter" type="search"></label></p>'
            + head + folded(items, SHOWN_SUBMISSIONS, what="more submissions") + "</section>")


def _submission(row: dict[str, Any], report: GradeReport | None, step_ids: Sequence[str]) -> str:
    statuses = "".join(short_icon(row["steps"].get(s, "missing")) for s in step_ids)
    ids = sorted({i for v in row["diagnoses"].values() for i in v})
    warned = (f'<span class="warned" title="{esc(_warned(row))}">⚠ {len(row["warnings"])}</span> '
              if row.get("warnings") else "")
    codes = "".join(f"<code>{esc(i)}</code>" for i in ids)
    summary = (f'<summary><span class="name">{esc(row["submission"])}</span>'
               f'<span class="score">{fmt_num(row["score"])} / {fmt_num(row["max_score"])}</span>'
               f'<span>{statuses}</span><span class="ids">{warned}{codes}</span></summary>')
    return (f'<details class="sub" data-submission="{esc(row["submission"])}" '
            f'data-score="{float(row["score"]):g}">{summary}'
            f'<div class="body">{_detail(row, report)}</div></details>')


def _warned(row: dict[str, Any]) -> str:
    return " | ".join(row.get("warnings", ()))


def short_icon(status: str) -> str:
    """A status as a bare icon (the legend above the list says which is which): small markup
    for the thousands of them on a big class's page."""
    return f'<i class="{_SHORT.get(status, "e")}">{ICONS.get(status, "?")}</i>'


_SHORT = {"passed": "p", "failed": "f", "error": "e", "timeout": "t", "missing": "m"}


def _detail(row: dict[str, Any], report: GradeReport | None) -> str:
    """What went wrong in each step that did not pass: compact, the full story is the
    learner's own page (`grade SUBMISSION --format html`)."""
    warned = "".join(f'<p class="warning">⚠ {esc(bound(w, DETAIL_LIMIT))}</p>'
                     for w in row.get("warnings", ()))
    if row["error"]:
        return warned + f'<p class="error">Not graded: {esc(bound(row["error"], DETAIL_LIMIT))}</p>'
    if report is None:
        return warned
    passed = [s.id for s in report.steps if s.status is Status.PASSED]
    lines = [warned] + ([f"<p>{short_icon('passed')} {esc(', '.join(passed))}</p>"] if passed else [])
    for s in report.steps:
        if s.status is Status.PASSED:
            continue
        failing = [t.name for t in s.tests if t.status not in (Status.PASSED, Status.SKIPPED)]
        line = (f"<p>{short_icon(s.status.value)} <b>{esc(s.id)}</b> {esc(s.status.value)}"
                + (" (bonus, not counted)" if s.bonus and not s.counted else "")
                + "".join(f" <code>{esc(d.id)}</code>" for d in s.diagnoses))
        headline = step_headline(s)
        if headline:
            line += f"<br>{esc(bound(headline, DETAIL_LIMIT))}"
        if failing:
            line += f' <span class="dim">({len(failing)} of {len(s.tests)} tests failed)</span>'
        lines.append(line + "</p>")
    return "".join(lines)
