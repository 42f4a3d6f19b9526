"""A class handed in every shape, graded by the installed console script (CONTRACT 4.5).

One batch holds zips (of a folder, of files, nested), notebooks (in a folder,
given directly, broken), a single module, misnamed files, two versions, an
empty folder, an unreadable zip beside notes, and hostile zips. Each must get
the report written beside it below, in JSON and CSV and JUnit; no real work
may score 0 without a warning naming the problem; a hostile zip never stops
the others, and nothing is written outside the grader's temp folder.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import intake_helpers as H
import pytest

EXE = Path(sys.executable).parent / "attn-practice"
CORE_IDS = ["step1", "step2", "step3", "step4", "step5"]

#: name -> (score, statuses of the core steps, phrases every one of which a warning must hold)
EXPECTED: dict[str, tuple[float, str, list[str]]] = {
    "clean": (5, "passed", []),
    "zip_of_folder.zip": (5, "passed", ["graded the folder attention-practice/ inside zip_of_folder.zip"]),
    "zip_of_files.zip": (5, "passed", []),
    "nested.zip": (5, "passed", ["graded the folder outer/inner/attention-practice/ inside nested.zip"]),
    "notebook": (5, "passed", ["taken by name from attention.ipynb", "nothing else in that file ran"]),
    "attention.ipynb": (5, "passed", ["taken by name from attention.ipynb"]),
    "broken_notebook": (0, "missing", ["nothing recognised", "attention.ipynb (unreadable: broken notebook JSON"]),
    "single_module": (5, "passed", ["taken by name from attention.py"]),
    "misnamed": (5, "passed", ["graded step1.py as step1_scores.py", "graded Step2_Scale.py as step2_scale.py",
                               "graded step3_softmax (1).py as step3_softmax.py",
                               "graded step4_weighted_sum - Copy.py as step4_weighted_sum.py",
                               "attention (step5) taken by name from scaled_dot_product.py"]),
    "two_versions": (5, "passed", ["2 of its subfolders", "newer_version", "rule: newest modification time",
                                   "v1"]),
    "empty": (0, "missing", ["nothing recognised", "found: nothing (empty folder)"]),
    "notes": (0, "missing", ["attention.zip (unreadable", "notes.txt"]),
    "slip.zip": (0, "missing", ["slip.zip is refused", "outside the folder"]),
    "absolute.zip": (0, "missing", ["absolute.zip is refused", "absolute name"]),
    "symlink.zip": (0, "missing", ["symlink.zip is refused", "symbolic link"]),
    "bomb.zip": (0, "missing", ["bomb.zip is refused", "zip bomb"]),
    "members.zip": (0, "missing", ["members.zip is refused", "at most 10000"]),
    "declared.zip": (0, "missing", ["declared.zip is refused", "declares 2.0 GiB"]),
    "attention.py": (5, "passed", ["taken by name from attention.py"]),
    "download": (5, "passed", []),  # a zip whatever its name
    "near_functions": (5, "passed", ["no function named softmax; graded Softmax from hw.py.txt",
                                     "taken by name from hw.py.txt"]),
    "workspace_notebook": (5, "passed", ["step3: step3_softmax.py is still the stub; graded softmax from "
                                         "attention.ipynb instead"]),
    "per_step_folders": (5, "passed", ["the steps are in several folders: graded step1 from Step 1/; "
                                       "step2 from Step 2/"]),
    "mixed": (5, "passed", ["no step file for step4, step5", "taken by name from rest.ipynb"]),
    "syntax_cell": (1, "", ["taken by name from work.ipynb"]),  # statuses: see its own test
}


def _build(root: Path) -> list[Path]:
    H.solved(root / "clean")
    H.zip_of(root / "zip_of_folder.zip", H.solved_members("attention-practice/"))
    H.zip_of(root / "zip_of_files.zip", H.solved_members())
    H.zip_of(root / "nested.zip", H.solved_members("outer/inner/attention-practice/"))
    for shape in ("notebook", "broken_notebook", "single_module", "misnamed", "empty"):
        shutil.copytree(H.SHAPES / f"shapes_{shape}", root / shape)
    shutil.copy(H.SHAPES / "shapes_notebook" / "attention.ipynb", root / "attention.ipynb")
    old = H.solved(root / "two_versions" / "work" / "v1",
                   H.REFERENCE.replace("return np.asarray(scores) / np.sqrt(d_k)", "return np.asarray(scores)"))
    for f in old.iterdir():
        os.utime(f, (1_000_000, 1_000_000))
    H.solved(root / "two_versions" / "work" / "newer_version")  # newer, though its path is longer
    (root / "notes").mkdir()
    (root / "notes" / "notes.txt").write_text("my notes\n")
    (root / "notes" / "attention.zip").write_bytes(b"this is not a zip")
    H.slip_zip(root / "slip.zip")
    H.slip_zip(root / "absolute.zip", "/tmp/attn_absolute_escape.py")
    H.symlink_zip(root / "symlink.zip")
    H.ratio_bomb(root / "bomb.zip")
    H.many_members(root / "members.zip")
    H.declared_2gib(root / "declared.zip")
    shutil.copy(H.SHAPES / "shapes_single_module" / "attention.py", root / "attention.py")
    H.zip_of(root / "download", H.solved_members())
    (root / "near_functions").mkdir()
    (root / "near_functions" / "hw.py.txt").write_text(
        H.REFERENCE.replace("def softmax(", "def Softmax(").replace(" softmax(", " Softmax("))
    made = subprocess.run([str(EXE), "start", str(root / "workspace_notebook")], capture_output=True, text=True,
                          timeout=120)
    assert made.returncode == 0, made.stderr
    shutil.copy(H.SHAPES / "shapes_notebook" / "attention.ipynb", root / "workspace_notebook")
    for i, stem in enumerate(H.CORE, 1):  # one folder per step; step 5 imports step 3 by module name
        body = (H.REFERENCE + "\nfrom step3_softmax import softmax  # noqa\n") if i == 5 else H.REFERENCE
        (root / "per_step_folders" / f"Step {i}").mkdir(parents=True)
        (root / "per_step_folders" / f"Step {i}" / f"{stem}.py").write_text(body)
    mixed = root / "mixed"
    mixed.mkdir()
    for stem in H.CORE[:3]:
        (mixed / f"{stem}.py").write_text(H.REFERENCE)
    H.notebook(["import numpy as np\nfrom step3_softmax import softmax\n",
                "def weighted_sum(weights, V):\n    return weights @ V\n",
                "def attention(Q, K, V):\n    d = Q.shape[-1]\n"
                "    return weighted_sum(softmax(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)), V)\n"],
               mixed / "rest.ipynb")
    (root / "syntax_cell").mkdir()
    H.notebook(["import numpy as np\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n",
                "def softmax(x, axis=-1)\n    return x\n"], root / "syntax_cell" / "work.ipynb")
    return [root / name for name in EXPECTED]


def _lost(report: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Each step that did not pass: its id, status and what it said (for a failure's message)."""
    return [(s["id"], s["status"], str(s.get("error") or [t for t in s["tests"] if t.get("status") != "passed"])[:800])
            for s in report["steps"] if s["status"] != "passed"]


def _grade(args: list[str], cwd: Path, cache: Path, tmp: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    if tmp is not None:
        env["TMPDIR"] = str(tmp)
    return subprocess.run([str(EXE), "grade", *args, "--cache-dir", str(cache), "--jobs", "2"],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=900)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    base = tmp_path_factory.mktemp("class")
    root = base / "subs"
    root.mkdir()
    args = [str(p) for p in _build(root)]
    before = sorted(os.listdir(base))
    # A temp folder of its own: other graders running on this machine have intake folders too.
    tmp = tmp_path_factory.mktemp("grader-tmp")
    res = _grade([*args, "--format", "json"], root, base / "cache", tmp)
    left = set(tmp.glob("attn-intake-*"))
    return {"root": root, "args": args, "base": base, "json": res, "before": before, "left": left}


def test_every_shape_gets_the_report_it_must_in_json(graded):
    res = graded["json"]
    assert "Traceback" not in res.stderr and res.returncode == 1, res.stderr[-3000:]
    reports = json.loads(res.stdout)
    assert [r["submission"] for r in reports] == graded["args"]  # in the order given, none lost
    for r in reports:
        name = Path(r["submission"]).name
        score, status, phrases = EXPECTED[name]
        core = {s["id"]: s for s in r["steps"] if s["id"] in CORE_IDS}
        assert r["score"] == score and r["max_score"] == 5.0, (name, r["score"], r["warnings"], _lost(r))
        if status:
            assert [core[i]["status"] for i in CORE_IDS] == [status] * 5, name
        assert isinstance(r["warnings"], list)
        said = " | ".join(r["warnings"])
        for phrase in phrases:
            assert phrase in said, (name, phrase, said)
        if not phrases:
            assert r["warnings"] == [], name
        if score == 0:  # no zero without a warning and a message saying what was found
            assert r["warnings"] and all(core[i]["error"].startswith("no step file") for i in CORE_IDS), name
    # the warnings reach stderr too, one line each (the first 20; then how many more)
    assert "zip_of_folder.zip: graded the folder attention-practice/ inside zip_of_folder.zip" in res.stderr
    assert "more warnings: see the report's warnings" in res.stderr


def test_steps_name_the_learners_own_file(graded):
    reports = {Path(r["submission"]).name: r for r in json.loads(graded["json"].stdout)}
    files = {s["id"]: (s["file"], s["line"]) for s in reports["misnamed"]["steps"]}
    assert files["step2"] == ("Step2_Scale.py", 4)  # a renamed copy: its lines hold
    # taken apart: the line of its `def` in the learner's module (issue 36), never the copy's
    module = (graded["root"] / "misnamed" / "scaled_dot_product.py").read_text().splitlines()
    assert files["step5"][0] == "scaled_dot_product.py"
    assert module[files["step5"][1] - 1].startswith("def attention(")


def test_a_cell_that_does_not_parse_is_graded_so_its_syntax_error_shows_not_missing(graded):
    reports = {Path(r["submission"]).name: r for r in json.loads(graded["json"].stdout)}
    steps = {s["id"]: s for s in reports["syntax_cell"]["steps"]}
    assert [steps[i]["status"] for i in CORE_IDS] == ["passed", "missing", "error", "missing", "missing"]
    assert "syntax" in json.dumps(steps["step3"]["tests"]).lower()
    assert steps["step2"]["error"] == ("no step2_scale.py (nor a module or notebook defining scale_scores); "
                                       "found: work.ipynb (cell 2 not Python)")
    assert any("work.ipynb, cell 2 is not valid Python" in w for w in reports["syntax_cell"]["warnings"])


def test_the_rich_report_shows_the_warnings(graded):
    res = subprocess.run([str(EXE), "grade", str(graded["root"] / "misnamed"), "--format", "rich",
                          "--cache-dir", str(graded["base"] / "cache")], capture_output=True, text=True,
                         env={**os.environ, "COLUMNS": "300"}, timeout=600)
    assert "warning: step2: graded Step2_Scale.py as step2_scale.py" in res.stdout
    empty = subprocess.run([str(EXE), "grade", str(graded["root"] / "empty"), "--format", "rich",
                            "--cache-dir", str(graded["base"] / "cache")], capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": "300"}, timeout=600)
    assert "step1, step2, step3, step4, step5 missing: no step file; found: nothing (empty folder)" in empty.stdout


def test_nothing_escapes_the_temp_folder(graded):
    assert not (graded["root"].parent / "escaped_by_zip.py").exists()
    assert not Path("/tmp/attn_absolute_escape.py").exists()
    assert sorted(os.listdir(graded["base"])) == sorted([*graded["before"], "cache"])
    assert graded["left"] == set()  # the intake's temp folder (all it unpacked) is gone
    # nothing unpacked or generated beside the submissions
    assert not any(p.name in ("step1_scores.py",) for p in graded["root"].iterdir())


def test_csv_carries_a_warnings_column_last(graded):
    res = _grade([*graded["args"], "--format", "csv"], graded["root"], graded["base"] / "cache")
    assert res.returncode == 1 and "Traceback" not in res.stderr
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    header = res.stdout.splitlines()[0].split(",")
    assert header[-1] == "warnings" and header[-2] == "graded_path"
    by_name = {Path(r["submission"]).name: r for r in rows}
    assert set(by_name) == set(EXPECTED)
    for name, (score, _status, phrases) in EXPECTED.items():
        row = by_name[name]
        assert float(row["score"]) == score, (name, row)
        for phrase in phrases:
            assert phrase in row["warnings"], (name, phrase)


def test_junit_and_gradescope_and_github_carry_the_warnings(graded):
    root = graded["root"]
    res = _grade([*graded["args"], "--format", "junit"], root, graded["base"] / "cache")
    doc = ET.fromstring(res.stdout)
    props = [p.get("value") for p in doc.iter("property") if p.get("name") == "warning"]
    assert any("graded Step2_Scale.py as step2_scale.py" in (v or "") for v in props)
    assert any("slip.zip is refused" in (v or "") for v in props)
    one = str(root / "misnamed")
    gs = json.loads(_grade([one, "--format", "gradescope"], root, graded["base"] / "cache").stdout)
    assert "Warning: step2: graded Step2_Scale.py as step2_scale.py" in gs["output"]
    out = graded["base"] / "gh_out"
    env_out = subprocess.run([str(EXE), "grade", one, "--format", "github", "--cache-dir",
                              str(graded["base"] / "cache")], cwd=root, capture_output=True, text=True,
                             env={**os.environ, "GITHUB_OUTPUT": str(out)}, timeout=600)
    assert any(line.startswith("::warning ") and "Step2_Scale.py" in line for line in env_out.stdout.splitlines())


def test_a_step_the_course_counts_is_never_labelled_bonus(tmp_path):
    sub = H.solved(tmp_path / "s")
    (sub / "step6_masked.py").write_text("def masked_attention(Q, K, V, mask):\n    return Q\n")
    course = tmp_path / "course.yaml"
    course.write_text("points:\n  step6: 3\n")
    common = ["--course", str(course), "--cache-dir", str(tmp_path / "cache")]
    env = {**os.environ, "COLUMNS": "300"}
    rich = subprocess.run([str(EXE), "grade", str(sub), "--format", "rich", *common],
                          capture_output=True, text=True, env=env, timeout=600)
    assert "step6" in rich.stdout and "Score: 5 / 8" in rich.stdout, rich.stdout[-2000:]
    assert "bonus" not in rich.stdout
    page = tmp_path / "me.html"
    subprocess.run([str(EXE), "grade", str(sub), "--format", "html", "--out", str(page), *common],
                   capture_output=True, text=True, env=env, timeout=600)
    assert "Step 6" in page.read_text() and "(bonus" not in page.read_text()
