"""An LMS bulk download graded in one call (issue 36), through the installed console script.

The class (tests/handins_class.py) holds a flat Canvas download with two
attempts, a late Canvas module, a Blackboard "all attempts" download whose
files share one time, a Moodle per-student folder with the work under other
names, a plain folder with a Latin-1 comment and a `.py.txt`, a Colab notebook,
a zip with `__MACOSX/`, and a module whose name has a dash. `grade subs/`
must say in one line that it is a class, give every student a row in every
format, grade the attempt the LMS says is the latest, and print reproduce
lines and tracebacks that point at the students' own files.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import handins_class as C
import pytest

CORE_IDS = ["step1", "step2", "step3", "step4", "step5"]
pytestmark = pytest.mark.slow


_grade = C.grade


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("lms")
    C.build(base)
    out: dict[str, Any] = {"base": base}
    for fmt in ("json", "csv", "junit", "rich"):  # the first grades; the others are served from its cache
        out[fmt] = _grade(base, "subs", "--format", fmt)
    return out


def test_the_folder_is_a_class_said_in_one_line_with_a_row_per_student(graded):
    res = graded["json"]
    assert res.returncode == 1, res.stderr  # two students lose points
    lines = [ln for ln in res.stderr.splitlines() if "holds a class" in ln]
    assert len(lines) == 1 and "graded 9 submissions, each on its own row" in lines[0]
    reports = json.loads(res.stdout)
    assert sorted(r["submission"] for r in reports) == sorted(f"subs/{k}" for k in C.EXPECTED)


def test_every_student_is_graded_as_a_fair_teacher_would(graded):
    reports = {r["submission"][len("subs/"):]: r for r in json.loads(graded["json"].stdout)}
    for name, (score, status, phrases) in C.EXPECTED.items():
        r = reports[name]
        assert r["score"] == score, (name, r["score"], r["warnings"])
        core = [s["status"] for s in r["steps"] if s["id"] in CORE_IDS]
        if status != "mixed":
            assert core == [status] * 5, (name, core)
        said = " ".join(r["warnings"])
        for phrase in phrases:
            assert phrase in said, (name, phrase, r["warnings"])


def test_the_latest_attempt_by_the_lms_wins_and_the_warning_names_both_files_and_why(graded):
    reports = {r["submission"]: r for r in json.loads(graded["json"].stdout)}
    jlopez = " ".join(reports["subs/jlopez"]["warnings"])
    # Same file time for both: the date in Blackboard's name decides, and the warning says so.
    assert ("graded AttentionLab_jlopez_attempt_2024-03-04-23-59-01_step1_scores.py, the latest by what the "
            "LMS wrote in the names") in jlopez
    assert "AttentionLab_jlopez_attempt_2024-03-04-22-10-45_step1_scores.py is Blackboard attempt" in jlopez
    # Canvas: the older upload has the NEWER file time; the upload id still decides.
    smith = " ".join(reports["subs/smithjane_4411"]["warnings"])
    assert "smithjane_4411_98011_step3_softmax.py is Canvas upload 98011" in smith
    assert reports["subs/smithjane_4411"]["extra"]["student"] == "smithjane"
    assert reports["subs/Ada Lovelace_12345_assignsubmission_file_"]["extra"]["student"] == "Ada Lovelace"


def test_csv_and_junit_count_everyone(graded):
    rows = list(csv.DictReader(io.StringIO(graded["csv"].stdout)))
    assert sorted(r["submission"] for r in rows) == sorted(f"subs/{k}" for k in C.EXPECTED)
    assert {r["submission"]: float(r["score"]) for r in rows} == {f"subs/{k}": v[0] for k, v in C.EXPECTED.items()}
    root = ET.fromstring(graded["junit"].stdout)
    names = {s.get("name", "") for s in root.iter("testsuite")}
    for k in C.EXPECTED:
        assert any(k in n for n in names), (k, sorted(names)[:5])


def _reproduce_blocks(text: str) -> list[list[str]]:
    """Every 'Reproduce it' snippet on the terminal: its lines, up to the next indented line."""
    blocks, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("Reproduce it"):
            block = []
            for nxt in lines[i + 1:]:
                if nxt.startswith(" ") or not nxt.strip():
                    break
                block.append(nxt)
            blocks.append(block)
    return blocks


def test_every_reproduce_line_runs_where_the_students_code_is(graded):
    res = graded["rich"]
    base: Path = graded["base"]
    blocks = _reproduce_blocks(res.stdout)
    assert len(blocks) >= 3, res.stdout[-3000:]
    ran = 0
    for block in blocks:
        assert not any(re.search(r"from \S*[-/ .]\S* import|\.ipynb import", ln) for ln in block), block
        head = block[0]
        if head.startswith("# in ") and ".ipynb" in head:  # a notebook: the cell that defines it, then the call
            m = re.match(r"# in (.+\.ipynb): run cell (\d+) \(it defines (\w+)\)", head)
            assert m, head
            cells = json.loads((base / m.group(1)).read_text())["cells"]
            assert f"def {m.group(3)}(" in "".join(cells[int(m.group(2)) - 1]["source"])
            continue
        if head.startswith("# unzip "):  # the work is in a zip: a plain import once unpacked
            assert re.match(r"from [A-Za-z_]\w* import \w+", block[1]), block
            continue
        m = re.match(r"# run Python in the folder (.+)$", head)
        if not m:  # a plain step file at the top: imported by its module name
            assert re.match(r"from [A-Za-z_]\w* import \w+", head), block
            continue
        folder = base / m.group(1)
        code = "\n".join(block[1:])
        run = subprocess.run([sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=120)
        for bad in ("ModuleNotFoundError", "ImportError", "FileNotFoundError", "SyntaxError", "KeyError"):
            assert bad not in run.stderr, (block, run.stderr[-800:])
        ran += 1
    assert ran >= 1


def test_tracebacks_name_the_students_own_file_and_line(graded):
    out = graded["rich"].stdout
    files = re.findall(r'File "([^"]+)"(, cell (\d+))?, line (\d+)', out)
    assert files, out[-2000:]
    for path, _, _cell, line in files:
        assert "attn-intake" not in path and not path.startswith("/tmp")
        assert (graded["base"] / path).exists(), path
        assert int(line) > 0
    assert 'File "subs/obi_ngozi_colab.ipynb", cell 7, line 3, in attention' in out


@pytest.mark.parametrize("fmt", ["gradescope", "github"])
def test_one_student_in_the_single_submission_formats(graded, fmt):
    base: Path = graded["base"]
    ada = "subs/Ada Lovelace_12345_assignsubmission_file_"
    output = base / f"github-output-{fmt}"
    output.write_text("")
    res = _grade(base, ada, "--format", fmt, env={"GITHUB_OUTPUT": str(output)})
    assert res.returncode == 0, res.stderr
    if fmt == "gradescope":
        data = json.loads(res.stdout)
        assert data["score"] == 5.0 and "stable_softmax" in data["output"]
    else:
        import base64

        line = next(ln for ln in output.read_text().splitlines() if ln.startswith("result="))
        data = json.loads(base64.b64decode(line[len("result="):]))
        assert sum(t["score"] for t in data["tests"]) == 5
        assert "::warning" in res.stdout and "stable_softmax" in res.stdout
    assert "stable_softmax" in res.stderr  # the warning names the function it graded
