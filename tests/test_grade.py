"""`attn-practice grade`: the CONTRACT §4 JSON, exit codes, course files, determinism."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli
from attn_practice.grader.results import without_timings

ROOT = Path(__file__).resolve().parent.parent
IMPL = ROOT / "tests" / "implementations"
CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
STATUSES = {"passed", "failed", "error", "timeout", "missing"}
TEST_STATUSES = {"passed", "failed", "error", "timeout", "skipped"}


def make_submission(folder: Path, wrong: dict[int, str] | None = None, steps=CORE) -> Path:
    """Reference code in every step file, with labelled wrong files swapped in."""
    folder.mkdir(parents=True, exist_ok=True)
    source = (ROOT / "reference" / "attention.py").read_text()
    for stem in steps:
        (folder / f"{stem}.py").write_text(source)
    for n, label in (wrong or {}).items():
        shutil.copy(IMPL / f"step{n}" / f"{label}.py", folder / f"{steps[n - 1]}.py")
    return folder


def grade_json(*args: str) -> tuple[int, object]:
    result = CliRunner().invoke(cli, ["grade", *args, "--format", "json", "--no-cache"])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, json.loads(result.output)


def check_schema(obj: dict) -> None:
    assert obj["schema"] == "attn-practice.grade/1"
    assert isinstance(obj["submission"], str)
    assert isinstance(obj["score"], float) and isinstance(obj["max_score"], float)
    assert obj["score"] == sum(s["score"] for s in obj["steps"])
    for s in obj["steps"]:
        assert s["status"] in STATUSES
        assert isinstance(s["score"], float) and isinstance(s["max_score"], float)
        assert isinstance(s["diagnoses"], list) and all(isinstance(d, str) for d in s["diagnoses"])
        for t in s["tests"]:
            assert t["status"] in TEST_STATUSES
            assert isinstance(t["name"], str) and isinstance(t["message"], str)


def test_correct_submission_scores_five_and_exits_zero(tmp_path):
    sub = make_submission(tmp_path / "alice")
    code, obj = grade_json(str(sub))
    assert code == 0
    check_schema(obj)
    assert obj["score"] == obj["max_score"] == 5.0
    assert [s["id"] for s in obj["steps"]] == ["step1", "step2", "step3", "step4", "step5"]
    assert obj["submission"] == str(sub)


def test_wrong_step_fails_alone_with_its_diagnosis(tmp_path):
    sub = make_submission(tmp_path / "bob", {2: "wrong_no_scale"})
    code, obj = grade_json(str(sub))
    assert code == 1
    check_schema(obj)
    by_id = {s["id"]: s for s in obj["steps"]}
    assert by_id["step2"]["status"] == "failed" and by_id["step2"]["score"] == 0.0
    assert "no-scale" in by_id["step2"]["diagnoses"]
    assert all(by_id[f"step{n}"]["status"] == "passed" for n in (1, 3, 4, 5))


def test_missing_steps_and_present_bonus(tmp_path):
    sub = make_submission(tmp_path / "carol", steps=CORE[:2])
    shutil.copy(ROOT / "reference" / "attention.py", sub / "step6_masked.py")
    code, obj = grade_json(str(sub))
    assert code == 1
    statuses = {s["id"]: s["status"] for s in obj["steps"]}
    assert statuses == {"step1": "passed", "step2": "passed", "step3": "missing", "step4": "missing",
                        "step5": "missing", "step6": "passed"}
    # CONTRACT §4.1: the default course counts the core steps only; the bonus is reported
    assert obj["max_score"] == 5.0 and obj["score"] == 2.0
    six = obj["steps"][-1]
    assert six["bonus"] is True and six["counted"] is False and six["score"] == 1.0


def test_several_submissions_give_an_array_in_order(tmp_path):
    a = make_submission(tmp_path / "a")
    b = make_submission(tmp_path / "b", {1: "wrong_elementwise_product"})
    code, obj = grade_json(str(b), str(a), "--jobs", "2")
    assert code == 1
    assert isinstance(obj, list) and [o["submission"] for o in obj] == [str(b), str(a)]
    for o in obj:
        check_schema(o)


def test_usage_errors_exit_two(tmp_path):
    runner = CliRunner()
    assert runner.invoke(cli, ["grade", str(tmp_path / "nope")]).exit_code == 2
    assert runner.invoke(cli, ["grade"]).exit_code == 2
    assert runner.invoke(cli, ["grade", str(tmp_path), "--format", "xml"]).exit_code == 2


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("steps: [step1, step9]\n", "line 1: key 'steps'"),
        ("max_examples: 5\npoints:\n  step2: -1\n", "line 3: key 'points'"),
        ("steps: [step1]\nbogus: 3\n", "line 2: key 'bogus'"),
        ("extra_suites: [nowhere/]\n", "key 'extra_suites'"),
        ("steps: [step1\n", "not valid YAML"),
        ("steps: [step1]\nshrink: maybe\n", "line 2: key 'shrink'"),
    ],
)
def test_course_errors_name_file_key_and_line(tmp_path, text, needle):
    course = tmp_path / "course.yaml"
    course.write_text(text)
    sub = make_submission(tmp_path / "s", steps=CORE[:1])
    result = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course)])
    assert result.exit_code == 2
    assert needle in result.output and "course.yaml" in result.output


def test_course_selects_steps_points_and_private_suites(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_private_step1.py").write_text(
        "import numpy as np\nimport pytest\n\n"
        "@pytest.mark.step('step1')\n"
        "def test_instructor_example(step):\n"
        "    \"\"\"Instructor's own example\"\"\"\n"
        "    step.check(np.eye(3), np.ones((2, 3)))\n"
    )
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step1, step2]\npoints: {step1: 3}\nmax_examples: 10\n"
                      "extra_suites: [private/]\n")
    sub = make_submission(tmp_path / "s")
    result = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course), "--format", "json",
                                      "--no-cache"])
    obj = json.loads(result.output)
    assert [s["id"] for s in obj["steps"]] == ["step1", "step2"]
    assert obj["max_score"] == 4.0 and obj["score"] == 4.0
    names = [t["name"] for t in obj["steps"][0]["tests"]]
    assert "Instructor's own example" in names


@pytest.mark.slow
def test_grades_are_identical_serially_and_in_parallel(tmp_path):
    subs = [
        make_submission(tmp_path / "ok"),
        make_submission(tmp_path / "w1", {3: "wrong_softmax_unstable"}),
        make_submission(tmp_path / "w2", {1: "wrong_transpose_all_axes", 5: "wrong_scale_by_dk"}),
        make_submission(tmp_path / "w3", {4: "wrong_weights_transposed"}),
    ]
    args = [str(s) for s in subs]
    _, serial = grade_json(*args, "--jobs", "1")
    _, parallel = grade_json(*reversed(args), "--jobs", "2")
    assert without_timings(serial) == without_timings(list(reversed(parallel)))
    _, again = grade_json(*args, "--jobs", "2")
    assert without_timings(serial) == without_timings(again)


def test_installed_console_script_grades(tmp_path):
    exe = shutil.which("attn-practice")
    if exe is None:
        pytest.skip("console script not installed")
    sub = make_submission(tmp_path / "dave", {2: "wrong_scale_by_dk"})
    proc = subprocess.run([exe, "grade", str(sub), "--format", "json", "--no-cache"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    obj = json.loads(proc.stdout)
    check_schema(obj)
    assert obj["score"] == 4.0


def test_python_dash_m_runs_the_cli():
    proc = subprocess.run([sys.executable, "-m", "attn_practice", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "attn-practice" in proc.stdout


def test_an_import_that_timed_out_beside_the_other_steps_is_judged_again_alone(tmp_path, monkeypatch):
    """Steps import side by side; a neighbour spinning at import must not cost this one its grade."""
    from attn_practice.grader.engine.engine import Engine
    from attn_practice.grader.results import Failure
    from attn_practice.grader.sandbox.learner import Learner, LoadInfo

    sub = make_submission(tmp_path / "s")
    real = Learner.load
    starved: list[str] = []

    def load(self):
        if self.step_id == "step4" and not starved:
            starved.append(self.step_id)  # as if a neighbour had held the CPU past the deadline
            real(self)
            return LoadInfo(False, failure=Failure(kind="timeout", summary="timeout: importing took too long"))
        return real(self)

    monkeypatch.setattr(Learner, "load", load)
    with Engine() as engine:
        report = engine.grade(sub)
    assert starved == ["step4"]
    assert [s.status.value for s in report.steps] == ["passed"] * 5


def test_an_unwritten_earlier_step_is_named_in_grade_too(tmp_path):
    """Step 5 calling step 4's untouched stub: the message names step 4's file and function."""
    sub = make_submission(tmp_path / "bob", steps=CORE[:3])
    (sub / "step4_weighted_sum.py").write_text(
        "def weighted_sum(weights, V):\n    raise NotImplementedError('step 4')\n")
    (sub / "step5_attention.py").write_text(
        "import numpy as np\nfrom step4_weighted_sum import weighted_sum\n\n\n"
        "def attention(Q, K, V):\n"
        "    s = np.matmul(Q, np.swapaxes(K, -1, -2)) / np.sqrt(Q.shape[-1])\n"
        "    w = np.exp(s - s.max(axis=-1, keepdims=True))\n"
        "    return weighted_sum(w / w.sum(axis=-1, keepdims=True), V)\n")
    code, obj = grade_json(str(sub))
    assert code == 1
    step5 = next(s for s in obj["steps"] if s["id"] == "step5")
    failing = [t for t in step5["tests"] if t["status"] != "passed"]
    assert failing
    message = failing[0]["message"]
    assert "weighted_sum in step4_weighted_sum.py is not written yet" in message
    assert "your attention calls it" in message
    assert "attention is not written yet" not in message
