"""The CI report writers, checked the way each CI system reads them."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from attn_practice.grader.reports import FORMATS, csv_report, github, gradescope, json_report, junit
from attn_practice.grader.results import Diagnosis, Failure, GradeReport, Status, StepResult
from attn_practice.grader.results import TestResult as TResult  # not collected by pytest

XSD = Path(__file__).parent / "data" / "junit.xsd"

NASTY_OUTPUT = (
    "hello\x00world\x1b[31m red \x1b[0m\x07bell\r\n"
    "::set-output name=score::100\n"
    "  ::add-mask::secret\n"
    "##[error]fake error\n"
    "::stop-commands::guess\n"
    "lone surrogate \udcff and ```` fences ``` and | pipes\n"
)


def _passing(name: str = "alice") -> GradeReport:
    steps = tuple(
        StepResult(
            id=f"step{i}",
            title=f"Step {i}",
            status=Status.PASSED,
            score=1.0,
            max_score=1.0,
            tests=(TResult(f"test_step{i}_values", Status.PASSED, duration=0.01),),
            file=f"step{i}_x.py",
            line=3,
            duration=0.2,
            notes=("returned float32 for float64 input",) if i == 3 else (),
            output="debug print\n" if i == 1 else "",
        )
        for i in range(1, 6)
    )
    return GradeReport(submission=name, steps=steps, duration=1.25, grader_version="0.1.0")


def _failing(name: str = "bob") -> GradeReport:
    no_scale = Diagnosis("no-scale", "did not divide by sqrt(d_k)", "Scores grow with d_k.", "Divide by sqrt(d_k).")
    unstable = Diagnosis("softmax-unstable", "overflow on large inputs", "exp(1000) is inf.")
    value_failure = Failure(
        kind="value",
        summary="scale_scores returned wrong values at [0, 1]: got 4.0, expected 2.0",
        details="rtol=1e-07, atol=1e-09; inputs: scores (2, 3) float64, d_k=4",
        repro="scale_scores(np.array([[1., 4.]]), d_k=4)",
        hint="Which number did you divide by?",
    )
    steps = (
        StepResult("step1", "Scores", Status.PASSED, 1.0, 1.0,
                   tests=(TResult("test_shapes", Status.PASSED),), file="step1_scores.py", line=4),
        StepResult(
            "step2", "Scale", Status.FAILED, 0.0, 1.0, diagnoses=(no_scale,),
            tests=(
                TResult("test_small", Status.PASSED, duration=0.002),
                TResult("test_values", Status.FAILED, "wrong values", failure=value_failure, duration=0.01),
                TResult("test_skipped_case", Status.SKIPPED, "not applicable"),
            ),
            output=NASTY_OUTPUT, file="step2_scale.py", function="scale_scores", line=7, duration=0.3,
        ),
        StepResult(
            "step3", "Softmax", Status.FAILED, 0.0, 1.0, diagnoses=(unstable,),
            tests=(TResult("test_large_inputs", Status.FAILED,
                              failure=Failure("nonfinite", "softmax returned nan for inputs near 1e300",
                                              traceback='File "step3_softmax.py", line 5\n  e = np.exp(x)')),),
            file="step3_softmax.py", line=2,
        ),
        StepResult("step4", "Weighted sum", Status.ERROR, 0.0, 1.0,
                   error="SyntaxError: invalid syntax (step4_weighted_sum.py, line 3)", file="step4_weighted_sum.py"),
        StepResult("step5", "Attention", Status.TIMEOUT, 0.0, 1.0,
                   tests=(TResult("test_values", Status.TIMEOUT, "attention took longer than 2.0 s"),),
                   file="step5_attention.py", line=1, duration=2.0),
        StepResult("step6", "Masked", Status.MISSING, 0.0, 1.0, file="step6_masked.py", bonus=True),
    )
    return GradeReport(submission=name, steps=steps, duration=3.5, grader_version="0.1.0")


def _broken(name: str = "carol") -> GradeReport:
    return GradeReport(submission=name, error="no step files found in carol (expected step1_scores.py, ...)")


ALL = [_passing(), _failing(), _broken()]


# -- FORMATS --------------------------------------------------------------------


def test_formats_cover_every_ci_format_and_render():
    assert {"json", "junit", "gradescope", "github", "csv"} <= set(FORMATS)
    for name, render in FORMATS.items():
        reports = [_failing()]
        text = render(reports, env={}) if name == "github" else render(reports)
        assert isinstance(text, str) and text


def test_reports_package_imports_no_writer_eagerly():
    code = (
        "import sys, attn_practice.grader.reports as r;"
        "print([m for m in sys.modules if m.startswith('attn_practice.grader.reports.')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# -- json -------------------------------------------------------------------------


def test_json_one_object_for_one_submission():
    data = json.loads(json_report.render([_failing()]))
    assert isinstance(data, dict)
    assert data["schema"] == "attn-practice.grade/1"
    assert data["submission"] == "bob"
    assert data["score"] == 1.0 and data["max_score"] == 6.0
    assert data["steps"][1]["diagnoses"] == ["no-scale"]
    assert GradeReport.from_dict(data).to_dict() == data


def test_json_array_in_given_order():
    data = json.loads(json_report.render(ALL))
    assert [d["submission"] for d in data] == ["alice", "bob", "carol"]
    assert data[2]["error"].startswith("no step files")


def test_json_is_valid_utf8_despite_surrogates():
    text = json_report.render([_failing()])
    text.encode("utf-8")  # would raise on a lone surrogate
    assert json.loads(text)["steps"][1]["output"] == NASTY_OUTPUT



def test_json_for_a_class_is_written_one_report_at_a_time_yet_byte_for_byte_the_same():
    """A 5,000-submission class is serialised report by report (the parent's memory), with
    exactly the text `json.dumps` of the whole list would give: multi-line learner output,
    surrogates and invisible characters included."""
    from attn_practice.grader.reports._text import json_text

    for reports in (ALL, [_failing(), _failing("dave")], []):
        assert json_report.render(reports) == json_text([r.to_dict() for r in reports]) + "\n"
    assert json_report.render([_passing()]) == json_text(_passing().to_dict()) + "\n"  # one: an object

# -- junit --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def schema():
    xmlschema = pytest.importorskip("xmlschema")
    return xmlschema.XMLSchema(str(XSD))


@pytest.mark.parametrize("reports", [[_passing()], [_failing()], [_broken()], ALL, []], ids=["pass", "fail", "error", "several", "none"])
def test_junit_validates_against_schema(schema, reports):
    text = junit.render(reports)
    schema.validate(text)
    assert text.startswith('<?xml version="1.0" encoding="UTF-8"?>')


def _cases(root: ET.Element) -> list[ET.Element]:
    return root.findall("./testsuite/testcase")


def test_junit_counts_add_up():
    root = ET.fromstring(junit.render(ALL))
    cases = _cases(root)
    assert int(root.get("tests")) == len(cases)
    for tag, attr in (("failure", "failures"), ("error", "errors"), ("skipped", "skipped")):
        assert int(root.get(attr)) == sum(c.find(tag) is not None for c in cases), attr
    for suite in root.findall("testsuite"):
        here = suite.findall("testcase")
        assert int(suite.get("tests")) == len(here)
        assert int(suite.get("failures")) == sum(c.find("failure") is not None for c in here)
        assert int(suite.get("errors")) == sum(c.find("error") is not None for c in here)


def test_junit_one_suite_per_step_with_names():
    root = ET.fromstring(junit.render([_failing()]))
    assert [s.get("name") for s in root.findall("testsuite")] == [f"step{i}" for i in range(1, 7)]
    case = root.find("./testsuite[@name='step2']/testcase[@name='test_values']")
    assert case.get("classname") == "attn-practice.step2"
    assert case.get("file") == "bob/step2_scale.py"  # repository-relative
    here = ET.fromstring(junit.render([_failing(".")]))
    assert here.find("./testsuite[@name='step2']/testcase").get("file") == "step2_scale.py"
    assert case.get("time") == "0.010"
    several = ET.fromstring(junit.render(ALL))
    names = [s.get("name") for s in several.findall("testsuite")]
    assert "bob:step2" in names and "alice:step1" in names and "carol:grade" in names
    assert len({(c.get("classname"), c.get("name")) for c in _cases(several)}) == len(_cases(several))


def test_junit_failure_carries_summary_details_and_diagnosis():
    root = ET.fromstring(junit.render([_failing()]))
    failure = root.find("./testsuite[@name='step2']/testcase[@name='test_values']/failure")
    assert failure.get("message").startswith("scale_scores returned wrong values")
    assert failure.get("type")
    text = failure.text
    for needle in ("got 4.0, expected 2.0", "rtol=1e-07", "scale_scores(np.array", "no-scale",
                   "Scores grow with d_k.", "Which number did you divide by?"):
        assert needle in text


def test_junit_error_timeout_missing_and_skipped():
    root = ET.fromstring(junit.render([_failing()]))
    err = root.find("./testsuite[@name='step4']/testcase/error")
    assert "SyntaxError" in err.get("message")
    timeout = root.find("./testsuite[@name='step5']/testcase/error")
    assert timeout.get("type") == "Timeout"
    missing = root.find("./testsuite[@name='step6']/testcase/failure")
    assert missing.get("message") == "not handed in"
    assert "step6_masked.py" in missing.text
    assert root.find("./testsuite[@name='step6']/testcase/skipped") is None
    assert root.find("./testsuite[@name='step2']/testcase[@name='test_skipped_case']/skipped") is not None
    passed = root.find("./testsuite[@name='step2']/testcase[@name='test_small']")
    assert list(passed) == []


def test_junit_learner_output_is_kept_but_xml_safe():
    text = junit.render([_failing()])
    assert "\x00" not in text and "\x1b" not in text and "\x07" not in text
    root = ET.fromstring(text.encode("utf-8"))
    out = root.find("./testsuite[@name='step2']/testcase[@name='test_values']/system-out")
    assert out is not None
    assert "hello\\u{0}world" in out.text and " red " in out.text and "::set-output" in out.text


def test_junit_whole_submission_error():
    root = ET.fromstring(junit.render([_broken()]))
    assert root.get("errors") == "1"
    assert "no step files" in root.find("./testsuite/testcase/error").get("message")


def test_junit_bounds_huge_output():
    step = StepResult("step1", "", Status.FAILED, 0, 1, output="x" * 10_000_000,
                      tests=(TResult("t", Status.FAILED, "m" * 1_000_000),))
    text = junit.render([GradeReport("big", steps=(step,))])
    assert len(text) < 200_000


# -- gradescope -------------------------------------------------------------------------


def test_gradescope_takes_exactly_one_report():
    with pytest.raises(ValueError):
        gradescope.render(ALL)
    with pytest.raises(ValueError):
        gradescope.render([])


@pytest.mark.parametrize("fmt", ["md", "text"])
def test_gradescope_results_json_shape(fmt):
    text = gradescope.render([_failing()], output_format=fmt)
    assert "\r" not in text and text.endswith("\n")
    data = json.loads(text)
    assert set(data) >= {"score", "execution_time", "output", "output_format", "test_output_format",
                         "visibility", "stdout_visibility", "tests"}
    assert data["output_format"] == data["test_output_format"] == fmt
    assert data["visibility"] in gradescope.VISIBILITIES and data["stdout_visibility"] in gradescope.VISIBILITIES
    assert isinstance(data["execution_time"], int | float) and data["execution_time"] >= 0
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
    for t in data["tests"]:
        assert isinstance(t["score"], float) and isinstance(t["max_score"], float)
        assert t["status"] in ("passed", "failed")
        assert isinstance(t["name"], str) and t["name"]
        assert re.fullmatch(r"\d+(\.\d+)*", t["number"])
        assert isinstance(t["output"], str) and t["output_format"] == fmt
        assert isinstance(t["tags"], list) and t["visibility"] == "visible"
        assert "\x00" not in t["output"] and "\x1b" not in t["output"]
    numbers = [t["number"] for t in data["tests"]]
    assert numbers == [str(i) for i in range(1, 7)]
    step2 = data["tests"][1]
    assert step2["status"] == "failed" and step2["tags"] == ["no-scale"]
    assert "got 4.0, expected 2.0" in step2["output"] and "no-scale" in step2["output"]
    assert "hello\\u{0}world" in step2["output"]
    assert data["tests"][0]["status"] == "passed"


def test_gradescope_markdown_fence_survives_backticks():
    out = json.loads(gradescope.render([_failing()]))["tests"][1]["output"]
    # The learner printed a run of four backticks: the fence must be longer.
    assert "`````\n" in out


def test_gradescope_error_report_still_valid():
    data = json.loads(gradescope.render([_broken()]))
    assert data["score"] == 0 and data["tests"] == []
    assert "no step files" in data["output"]


def test_gradescope_bounds_learner_output():
    step = StepResult("step1", "", Status.FAILED, 0, 1, output="y" * 1_000_000)
    out = json.loads(gradescope.render([GradeReport("s", steps=(step,))]))["tests"][0]["output"]
    assert len(out) < 20_000 and "more characters not shown" in out


def test_gradescope_rejects_bad_options():
    with pytest.raises(ValueError):
        gradescope.render([_passing()], output_format="html5")
    with pytest.raises(ValueError):
        gradescope.render([_passing()], visibility="public")


def test_write_atomic_replaces_whole_file(tmp_path):
    target = tmp_path / "results" / "results.json"
    gradescope.write_atomic(target, "old\n")
    gradescope.write_atomic(target, gradescope.render([_passing()]))
    assert json.loads(target.read_text())["score"] == 5.0
    assert os.listdir(target.parent) == ["results.json"]


def test_write_atomic_leaves_old_file_when_interrupted(tmp_path, monkeypatch):
    target = tmp_path / "results.json"
    target.write_text("old\n")

    def boom(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(gradescope.os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        gradescope.write_atomic(target, "new\n")
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["results.json"]


# -- github -----------------------------------------------------------------------------


def _decode(b64: str) -> dict:
    """What the reporter does: base64 -> utf-8 -> JSON."""
    return json.loads(base64.b64decode(b64).decode("utf-8"))


def _reporter_points(runner: dict) -> tuple[float, float]:
    """NotifyClassroom: sum of tests[].score over max_score."""
    return sum(t["score"] for t in runner["tests"]), runner["max_score"]


def _reporter_table_score(runner: dict) -> float:
    """AggregateResults: passes / len(tests) * max_score."""
    passes = sum(t["status"] == "pass" for t in runner["tests"])
    return passes / len(runner["tests"]) * (runner["max_score"] or 1)


@pytest.mark.parametrize("report", [_passing(), _failing()], ids=["pass", "fail"])
def test_github_result_decodes_like_the_reporter(report):
    obj = _decode(github.encode(report))
    assert obj["version"] == 1
    assert obj["status"] == ("pass" if report.passed else "fail")
    total, max_score = _reporter_points(obj)
    assert total == pytest.approx(report.score) and max_score == pytest.approx(report.max_score)
    assert _reporter_table_score(obj) == pytest.approx(total)
    for t in obj["tests"]:
        assert set(t) == {"name", "status", "score", "message", "test_code", "filename", "line_no", "duration"}
        assert t["status"] in ("pass", "fail", "error")
        assert isinstance(t["duration"], int) and isinstance(t["line_no"], int)
        for line in t["message"].splitlines():
            assert not line.lstrip().startswith(("::", "##[")), line


def test_github_statuses_per_step():
    tests = {t["name"].split(":")[0]: t for t in github.result_object(_failing("."))["tests"]}
    assert tests["step1"]["status"] == "pass" and tests["step1"]["score"] == 1.0
    assert tests["step2"]["status"] == "fail" and "no-scale" in tests["step2"]["message"]
    assert tests["step4"]["status"] == "error" and tests["step5"]["status"] == "error"
    assert tests["step6"]["status"] == "fail"
    assert tests["step2"]["filename"] == "step2_scale.py" and tests["step2"]["line_no"] == 7
    assert tests["step2"]["test_code"].startswith("scale_scores(")
    assert tests["step2"]["duration"] == 300


def test_github_error_report():
    obj = github.result_object(_broken())
    assert obj["status"] == "error" and obj["max_score"] == 0
    assert obj["tests"][0]["status"] == "error"


@pytest.mark.parametrize(
    ("maxes", "scores"),
    [([1, 2, 1], [1, 2, 0]), ([1, 1], [0.5, 1]), ([2, 3], [0, 3]), ([0.5, 1.5], [0.5, 0])],
)
def test_github_unequal_points_keep_reporter_table_consistent(maxes, scores):
    steps = tuple(
        StepResult(f"step{i}", "", Status.PASSED if s == m else Status.FAILED, s, m)
        for i, (m, s) in enumerate(zip(maxes, scores, strict=True), start=1)
    )
    obj = _decode(github.encode(GradeReport("x", steps=steps)))
    total, max_score = _reporter_points(obj)
    assert total == pytest.approx(sum(scores)) and max_score == pytest.approx(sum(maxes))
    assert _reporter_table_score(obj) == pytest.approx(total)


def test_github_escaping():
    assert github.escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


_ANNOTATION = re.compile(r"::(error|warning|notice)( [a-z]+=[^,:\r\n]*(,[a-z]+=[^,:\r\n]*)*)?::[^\r\n]*")


def test_github_annotations_are_single_escaped_lines():
    lines = github.annotations(_failing("."))
    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == 5  # steps 2-6
    for line in lines:
        assert _ANNOTATION.fullmatch(line), line
    step2 = next(line for line in errors if "step2_scale.py" in line)
    assert step2.startswith("::error file=step2_scale.py,line=7,title=step2 failed (0/1)::")
    assert "no-scale" in step2
    assert not any("file=step6" in line for line in lines)  # a missing file has nothing to point at
    assert any(line.startswith("::notice") for line in github.annotations(_passing()))


def _runner_commands(log: str) -> list[str]:
    """The workflow commands the Actions runner would act on, honouring stop-commands."""
    seen, stop = [], None
    for raw in log.split("\n"):
        line = raw.lstrip()
        if stop is not None:
            if line == f"::{stop}::":
                stop = None
            continue
        if line.startswith("::"):
            name = line[2:].split("::")[0].split(" ")[0]
            seen.append(name)
            if name == "stop-commands":
                stop = line.split("::")[2]
        elif line.startswith("##["):
            seen.append(line)
    return seen


def test_github_render_cannot_be_injected(tmp_path):
    out_file, summary_file = tmp_path / "out", tmp_path / "summary.md"
    summary_file.write_text("earlier step\n")
    log = github.render([_failing()], env={"GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(summary_file)})
    commands = _runner_commands(log)
    assert set(commands) <= {"error", "notice", "stop-commands"}, commands
    assert commands.count("stop-commands") == 1
    assert "::set-output name=score::100" in log  # shown, but inside the stopped block
    assert "\x00" not in log and "\x1b" not in log
    token = re.search(r"^::stop-commands::(\w+)$", log, re.M).group(1)
    assert len(token) >= 32 and log.count(token) == 2
    again = github.render([_failing()], env={})
    assert re.search(r"^::stop-commands::(\w+)$", again, re.M).group(1) != token

    lines = out_file.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("result=")
    obj = _decode(lines[0].removeprefix("result="))
    assert _reporter_points(obj) == (1.0, 6.0)
    summary = summary_file.read_text()
    assert summary.startswith("earlier step\n") and "| step2: Scale | ❌ failed | 0/1 | `no-scale` |" in summary


def test_github_render_without_env_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    github.render([_passing()], env={})
    assert os.listdir(tmp_path) == []


def test_github_several_submissions_combine():
    env_log = github.render(ALL, env={})
    assert _runner_commands(env_log).count("stop-commands") == 1
    combined = github._combine([github.result_object(r) for r in ALL], [r.submission for r in ALL])
    assert combined["status"] == "error"
    assert combined["max_score"] == 11.0
    assert any(t["name"].startswith("bob: step2") for t in combined["tests"])


def test_github_summary_markdown_escapes_cells():
    report = GradeReport("a|b", steps=(StepResult("step1", "x|y", Status.FAILED, 0, 1, error="bad | thing"),))
    md = github.summary_markdown([report])
    assert "a\\|b" in md and "step1: x\\|y" in md
    assert "<details>" in md and "bad | thing" in md


# -- csv -----------------------------------------------------------------------------------


def _parse(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def test_csv_columns_rows_and_line_endings():
    text = csv_report.render(ALL)
    assert text.endswith("\r\n") and "\n" not in text.replace("\r\n", "")
    rows = _parse(text)
    assert rows[0] == ["submission", "score", "max_score", *[f"step{i}" for i in range(1, 7)],
                       "status", "diagnoses", "duration_s", "graded_path", "warnings"]
    alice, bob, carol = (dict(zip(rows[0], r, strict=True)) for r in rows[1:])
    assert alice["score"] == "5" and alice["status"] == "passed" and alice["step6"] == ""
    assert bob["step1"] == "1" and bob["step2"] == "0" and bob["status"] == "failed"
    assert bob["diagnoses"] == "step2:no-scale;step3:softmax-unstable"
    assert bob["duration_s"] == "3.500"
    assert carol["status"] == "error" and carol["max_score"] == "0"


def test_csv_step_columns_in_number_order():
    r1 = GradeReport("a", steps=(StepResult("step10", "", Status.PASSED, 1, 1), StepResult("step2", "", Status.PASSED, 1, 1)))
    r2 = GradeReport("b", steps=(StepResult("step9", "", Status.PASSED, 0.5, 1),))
    assert csv_report.header(csv_report.step_ids([r1, r2]))[3:6] == ["step2", "step9", "step10"]
    assert csv_report.row(r2, ["step2", "step9", "step10"])[3:6] == ["", "0.5", ""]


def test_csv_quotes_awkward_names_and_blocks_formulas():
    reports = [GradeReport('x, "y"\nz', steps=()), GradeReport("=HYPERLINK(1)", steps=())]
    rows = _parse(csv_report.render(reports))
    assert rows[1][0] == 'x, "y"\\u{a}z'  # one line: a gradebook row never splits
    assert rows[2][0] == "'=HYPERLINK(1)"
