"""Odd text in every format (issue 12, items 10-12): each output fed to its consumer's parser.

Learner-derived text (messages, printed output, notes, folder names) carrying
lone surrogates, bidi overrides, zero-width and tag characters, ANSI codes,
Markdown and HTML must come out parseable, visible and unable to forge
anything; two different folder names never get the same label.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import unicodedata
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.grader.reports import csv_report, github, gradescope, json_report, junit
from attn_practice.grader.reports._text import clean, label
from attn_practice.grader.reports.output import render
from attn_practice.grader.reports.terminal import render_reports
from attn_practice.grader.results import Diagnosis, Failure, GradeReport, Status, StepResult
from attn_practice.grader.results import TestResult as Outcome

XSD = Path(__file__).parent / "data" / "junit.xsd"
INVISIBLE = ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069",
             "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2028", "\u2029", "\ufeff",
             "\U000e0001", "\U000e0041", "\U000e007f"]
NASTY = ("lone \udc80 surrogate, bidi \u202egnp.exe\u202c, zero\u200bwidth, tag \U000e0041, "
         "ansi \x1b[31mred\x1b[0m, nul \x00, cr \r, line sep \u2028 end")
INJECT = ("\n# ✅ passed\n![beacon](https://evil.example/p.png) [click](https://evil.example) "
          "<script>alert(1)</script> <img src=x onerror=alert(1)> **bold** | cell |")


def _report(name: str = "sub\u202eevil") -> GradeReport:
    failure = Failure(kind="value", summary=f"got a {NASTY}", details=INJECT, repro="dot_scores(Q, K)",
                      traceback=NASTY, hint=INJECT)
    step = StepResult(
        id="step1", title="Scores", status=Status.FAILED, score=0.0, max_score=1.0,
        diagnoses=(Diagnosis("scores-transposed", "Transposed", "why", "try"),),
        tests=(Outcome(f"values {NASTY}", Status.FAILED, message=NASTY, failure=failure),),
        output=NASTY + INJECT, notes=(f"returned an object of class {INJECT}",), file="step1_scores.py",
        line=3)
    ok = StepResult(id="step2", title="Scale", status=Status.PASSED, score=1.0, max_score=1.0)
    bonus = StepResult(id="step6", title="Masked", status=Status.FAILED, score=0.0, max_score=1.0,
                       error=NASTY, bonus=True, counted=False)
    return GradeReport(submission=name, steps=(step, ok, bonus), graded_path=f"{name}/src\u200b")


def _no_invisible(text: str) -> None:
    for ch in INVISIBLE + ["\x00", "\x1b", "\r"]:
        assert ch not in text, repr(ch)
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text), "lone surrogate"
    text.encode("utf-8")  # strict: always writable


def test_clean_and_label_escape_every_invisible_character():
    for ch in INVISIBLE:
        assert ch not in clean(f"a{ch}b") and ch not in label(f"a{ch}b")
        assert f"\\u{{{ord(ch):x}}}" in clean(f"a{ch}b")
    assert clean("a\nb\tc") == "a\nb\tc" and label("a\nb\tc") == "a\\u{a}b\\u{9}c"


@pytest.mark.parametrize("a, b", [
    ("a\x07b", "a\\u{7}b"), ("a\x07b", "a\\x07b"), ("x\u202ey", "x\\u{202e}y"), ("a\\", "a\\\\"),
    ("\\\x07", "\\u{7}"), ("a\nb", "a\\u{a}b"), ("a\x1b[0mb", "ab"), ("a\r\nb", "a\nb"),
    ("\udc80", "\\udc80"), ("a\tb", "a\\u{9}b"),
])
def test_labels_are_injective(a, b):
    assert label(a) != label(b)
    assert clean(a) != clean(b)


def test_labels_are_injective_on_many_generated_names():
    alphabet = ["a", "\\", "u", "{", "}", "7", "\x07", "\u202e", "\n", "x", "\t"]
    import itertools

    names = ["".join(p) for n in range(1, 5) for p in itertools.product(alphabet, repeat=n)]
    assert len({label(n) for n in names}) == len(names)


def test_json_parses_back_to_exactly_the_report_and_shows_nothing_invisible():
    report = _report()
    text = json_report.render([report])
    _no_invisible(text)
    data = json.loads(text)
    assert GradeReport.from_dict(data) == report
    assert data["graded_path"] == report.graded_path
    assert data["score"] == 1.0 and data["max_score"] == 2.0  # step6 is not counted


def test_junit_is_valid_against_the_xsd_and_clean():
    xmlschema = pytest.importorskip("xmlschema")
    text = junit.render([_report(), _report("other\u202e")])
    _no_invisible(text)
    xmlschema.XMLSchema(str(XSD)).validate(text)
    assert "sub\\u{202e}evil" in text


def test_csv_cells_are_neutralised_and_parse():
    names = ["=1+1", "+cmd", "-2", "@SUM(A1)", "\tTAB", "\rCR", "ok\u202e", "a\nb"]
    text = csv_report.render([_report(n) for n in names])
    _no_invisible(text.replace("\r\n", "\n"))
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == len(names)
    for row in rows:
        assert row["submission"][:1] not in ("=", "+", "-", "@", "\t", "\r")
        assert row["graded_path"][:1] not in ("=", "+", "-", "@", "\t", "\r")
    assert [r["submission"] for r in rows][:4] == ["'=1+1", "'+cmd", "'-2", "'@SUM(A1)"]


def test_gradescope_md_cannot_be_injected():
    data = json.loads(gradescope.render([_report()], output_format="md"))
    _no_invisible(json.dumps(data, ensure_ascii=False))
    for text in [data["output"], *(t["output"] for t in data["tests"])]:
        outside = _outside_fences(text)
        assert "<" not in outside and "](" not in outside.replace("\\](", ""), outside
        assert not re.search(r"^\s*#", outside, re.M), outside
        assert "**bold**" not in outside
    assert data["score"] == 1.0 and sum(t["max_score"] for t in data["tests"]) == 2.0


def _outside_fences(md: str) -> str:
    """The Markdown text that is not inside a fenced code block (fences of 3+ backticks)."""
    out, fence = [], None
    for line in md.split("\n"):
        m = re.match(r"^(`{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if line.startswith(fence) and line.strip("`") == "":
                fence = None
            continue
        out.append(line)
    assert fence is None, "unclosed fence"
    return "\n".join(out)


def test_github_never_crashes_and_every_line_follows_the_command_rules(tmp_path):
    out, summary = tmp_path / "out", tmp_path / "summary"
    log = github.render([_report()], env={"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)})
    _no_invisible(log)
    _no_invisible(summary.read_text(encoding="utf-8"))
    token = re.search(r"^::stop-commands::(\w+)$", log, re.M).group(1)
    inside = False
    for line in log.split("\n"):
        if line == f"::stop-commands::{token}":
            inside = True
            continue
        if line == f"::{token}::":
            inside = False
            continue
        if not inside and line:
            # FORMATS.md: `::error file=F,line=L::message`, message escaped onto one line
            assert re.fullmatch(r"::(error|notice)( [a-z]+=[^,:]*(,[a-z]+=[^,:]*)*)?::.*", line), line
    first = log.split("\n")[log.split("\n").index(f"::stop-commands::{token}") + 1]
    assert first.startswith("attn-practice sub\\u{202e}evil:")  # the headline line is cleaned
    obj = json.loads(base64.b64decode(out.read_text().split("=", 1)[1]))
    assert obj["max_score"] == 2.0 and {t["name"].split(":")[0] for t in obj["tests"]} == {"step1", "step2"}
    md = summary.read_text(encoding="utf-8")
    assert "<script>" not in _outside_fences(md)
    assert "sub\\\\u\\{202e\\}evil" in md  # Markdown-escaped: shows as sub\u{202e}evil


def test_github_cli_survives_a_lone_surrogate_in_a_message(tmp_path, monkeypatch):
    """End to end through the CLI: stdout gets clean UTF-8, exit 1 (a failed step), not 3."""
    from attn_practice.grader.staff import batch

    monkeypatch.setattr(batch, "run_grading", lambda request: [_report(str(request.labels[0]))])
    sub = tmp_path / "s\u200bub"
    sub.mkdir()
    (sub / "step1_scores.py").write_text("x = 1\n")
    from attn_practice.cli import cli

    res = CliRunner().invoke(cli, ["grade", str(sub), "--format", "github"])
    assert res.exit_code == 1, res.output
    _no_invisible(res.stdout)


def test_rich_output_cleans_labels_and_text():
    from rich.console import Console

    buf = io.StringIO()
    render_reports(Console(file=buf, width=100, no_color=True), [_report()], verbose=True)
    text = buf.getvalue()
    _no_invisible(text)
    assert "sub\\u{202e}evil" in text and "not counted" in text


@pytest.mark.parametrize("fmt", ["json", "junit", "csv"])
def test_render_knows_every_format_and_nothing_else(fmt):
    assert render([_report()], fmt)
    with pytest.raises(ValueError):
        render([_report()], "xml")


def test_no_category_cf_character_survives_clean():
    """Every format character (Unicode category Cf) that reorders or hides text is escaped."""
    dangerous = [c for c in map(chr, [*range(0x2000, 0x2070), 0xAD, 0x61C, 0x180E, 0xFEFF,
                                      *range(0xFFF9, 0xFFFC), *range(0xE0000, 0xE0080)])
                 if unicodedata.category(c) == "Cf"]
    for ch in dangerous:
        assert ch not in clean(ch), hex(ord(ch))
