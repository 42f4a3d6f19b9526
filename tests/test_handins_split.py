"""Which folders are a class and which are one student, and what LMS names say (issue 36).

The rules are read directly (fast, many cases); the console script is run for
the two outcomes a user meets: a class of workspaces graded one row each, and
one student's notebook with its `.py` export graded as one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import handins_class as C
import pytest

from attn_practice.grader.staff.intake.classes import split_class
from attn_practice.grader.staff.intake.lms import Lms, parse_name

EXE = Path(sys.executable).parent / "attn-practice"


@pytest.mark.parametrize(("name", "lms", "student", "original", "attempt"), [
    ("smithjane_4411_98012_step1_scores.py", Lms.CANVAS, "smithjane_4411", "step1_scores.py", (98012, 0)),
    ("smithjane_LATE_4411_98013_step1_scores-2.py", Lms.CANVAS, "smithjane_4411", "step1_scores-2.py", (98013, 2)),
    ("Ada Lovelace_12345_assignsubmission_file_", Lms.MOODLE, "Ada Lovelace_12345", "", ()),
    ("Ada Lovelace_12345_assignsubmission_file_attention.ipynb", Lms.MOODLE, "Ada Lovelace_12345",
     "attention.ipynb", ()),
    ("AttentionLab_jlopez_attempt_2024-03-04-22-10-45_step1_scores.py", Lms.BLACKBOARD, "jlopez",
     "step1_scores.py", (2024, 3, 4, 22, 10, 45)),
    ("Attention_Lab_2_jlopez_attempt_2024-03-04-22-10-45.txt", Lms.BLACKBOARD, "jlopez", "", (2024, 3, 4, 22, 10, 45)),
])
def test_lms_names_are_read_back(name, lms, student, original, attempt):
    got = parse_name(name)
    assert got is not None and got.lms is lms and got.student == student
    assert got.original == original and got.attempt == attempt
    assert got.receipt == (name.endswith(".txt") and lms is Lms.BLACKBOARD)


@pytest.mark.parametrize("name", ["step1_scores.py", "attention.ipynb", "step_1.py", "hw_2_final.py", "kim"])
def test_ordinary_names_are_no_lms_name(name):
    assert parse_name(name) is None


def _ws(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for stem in C.CORE:
        (folder / f"{stem}.py").write_text(C.REFERENCE)
    return folder


def _nb(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(C.notebook(["import numpy as np", C.REFERENCE]))
    return path


def test_a_workspace_is_one_submission(tmp_path):
    ws = _ws(tmp_path / "ws")
    _ws(ws / "backup")  # a copy inside: the step files at the top decide
    assert split_class(ws) is None


def test_folders_of_students_are_a_class_and_parts_of_one_work_are_not(tmp_path):
    subs = tmp_path / "subs"
    _ws(subs / "alice")
    _ws(subs / "bob")
    (subs / "grades.csv").write_text("x\n")
    members = split_class(subs)
    assert [Path(m.label).name for m in members] == ["alice", "bob"]
    assert split_class(subs, alone=False) is None  # `grade subs/* other/`: two are one student's versions
    spread = tmp_path / "spread"
    for i, stem in enumerate(C.CORE, 1):
        (spread / f"Step {i}").mkdir(parents=True)
        (spread / f"Step {i}" / f"{stem}.py").write_text(C.REFERENCE)
    assert split_class(spread) is None


def test_notebooks_make_a_class_from_three_and_an_export_is_its_notebook(tmp_path):
    one = tmp_path / "one"
    _nb(one / "colab.ipynb")
    (one / "colab.py").write_text(C.REFERENCE)  # the notebook's .py export
    assert split_class(one) is None
    two = tmp_path / "two"
    _nb(two / "attention.ipynb")
    _nb(two / "attention_v2.ipynb")
    assert split_class(two) is None
    many = tmp_path / "many"
    for name in ("alice", "bob", "carol"):
        _nb(many / f"{name}.ipynb")
    assert [Path(m.label).name for m in split_class(many)] == ["alice.ipynb", "bob.ipynb", "carol.ipynb"]


def test_one_students_lms_files_are_one_submission_and_many_are_a_class(tmp_path):
    one = tmp_path / "one"
    one.mkdir()
    for stamp in ("2024-03-04-22-10-45", "2024-03-04-23-59-01"):
        for stem in C.CORE:
            (one / f"Lab_jlopez_attempt_{stamp}_{stem}.py").write_text(C.REFERENCE)
    assert split_class(one) is None
    flat = tmp_path / "flat"
    flat.mkdir()
    for who in ("smithjane_4411_98012", "doejohn_4412_98013"):
        for stem in C.CORE:
            (flat / f"{who}_{stem}.py").write_text(C.REFERENCE)
    members = split_class(flat)
    assert sorted(Path(m.label).name for m in members) == ["doejohn_4412", "smithjane_4411"]
    assert all(len(m.paths) == 5 for m in members)


@pytest.mark.slow
def test_the_console_script_grades_a_class_of_workspaces_and_one_notebook_with_its_export(tmp_path):
    subs = tmp_path / "subs"
    _ws(subs / "alice")
    _ws(subs / "bob")
    one = tmp_path / "one"
    _nb(one / "colab.ipynb")
    (one / "colab.py").write_text(C.REFERENCE)
    env = {**os.environ, "NO_COLOR": "1"}
    res = subprocess.run([str(EXE), "grade", "subs", "--format", "json", "--cache-dir", str(tmp_path / "c")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr
    assert [r["submission"] for r in json.loads(res.stdout)] == ["subs/alice", "subs/bob"]
    assert "subs holds a class, not one submission: graded 2 submissions" in " ".join(res.stderr.split())
    res = subprocess.run([str(EXE), "grade", "one", "--format", "json", "--cache-dir", str(tmp_path / "c")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900, env=env)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["submission"] == "one" and report["score"] == 5.0
    assert "holds a class" not in res.stderr


def test_a_later_attempt_wins_even_when_an_older_one_has_the_step_files(tmp_path):
    """Each Blackboard attempt is a whole hand-in: attempt 2's notebook beats attempt 1's step files,
    though every file has the same time and step files usually come first."""
    from attn_practice.grader.staff.intake.recognise import recognise

    first, second = "Lab_jo_attempt_2024-03-04-22-10-45", "Lab_jo_attempt_2024-03-04-23-59-01"
    (tmp_path / f"{first}_step1_scores.py").write_text("def dot_scores(Q, K):\n    return Q @ K.T\n")
    _nb(tmp_path / f"{second}_attention.ipynb")
    (tmp_path / f"{first}.txt").write_text("Name: Jo\n")
    for f in tmp_path.iterdir():
        os.utime(f, (1e9, 1e9))
    rec = recognise(tmp_path)
    assert rec.chosen["step1"].entry.name == f"{second}_attention.ipynb"
    said = " ".join(rec.warnings)
    assert f"graded {second}_attention.ipynb, the latest" in said and f"{first}_step1_scores.py is Blackboard" in said
    assert f"{first}.txt (Blackboard's receipt for attempt 2024-03-04-22-10-45)" in rec.found


def test_a_module_with_two_names_for_a_step_grades_neither_and_lists_them(tmp_path):
    from attn_practice.grader.staff.intake.recognise import recognise

    (tmp_path / "attention.py").write_text(
        "import numpy as np\n\n\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n\n\n"
        "def stable_softmax(x, axis=-1):\n    return x\n\n\ndef safe_softmax(x, axis=-1):\n    return x\n")
    rec = recognise(tmp_path)
    assert "step1" in rec.chosen and "step3" not in rec.chosen
    said = " ".join(rec.warnings)
    assert "safe_softmax(x, axis=-1)" in said and "stable_softmax(x, axis=-1)" in said and "none was graded" in said


def test_ipython_lines_in_a_module_or_step_file_are_skipped_with_a_warning(tmp_path):
    """A notebook's .py export keeps `!pip install` and `%matplotlib`: not Python, but the work is."""
    from attn_practice.grader.staff.intake.recognise import recognise

    for stem in C.CORE:
        (tmp_path / f"{stem}.py").write_text(C.REFERENCE)
    (tmp_path / "step3_softmax.py").write_text("!pip install numpy\n" + C.REFERENCE.replace("from __future__ import annotations\n", ""))
    rec = recognise(tmp_path)
    step3 = rec.chosen["step3"]
    assert step3.text is not None and b"!pip" not in step3.text
    assert step3.text.count(b"\n") >= C.REFERENCE.count("\n") - 1  # its lines hold
    assert any("step3_softmax.py has IPython lines (line 1" in w for w in rec.warnings), rec.warnings
