"""Focused regressions for what the second LMS-style class (test_handins_heldout_style.py) found.

- a student folder in a class that holds no work (a PDF alone) still gets its row, and so does a Moodle
  student who handed in online text only;
- an empty step file is a missing step (saying the file is empty), never an `error`;
- the reproduce line for work in a zip at the zip's root, or in a zip inside a zip, says to unzip
  each one and runs there;
- a notebook's `.py` export that calls get_ipython() (or has `!pip` lines) is not importable by plain
  Python: its reproduce line runs it the way Jupyter/IPython does.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from handins_lms_class2 import (
    CORE,
    build_file,
    grade,
    module,
    step,
    unrunnable_reproduce_lines,
)


def _zip(files: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_a_student_folder_without_work_keeps_its_row(tmp_path: Path) -> None:
    for who in ("amy", "ben"):
        for s in CORE:
            build_file(tmp_path / "subs" / who / f"{s}.py", step(s))
    build_file(tmp_path / "subs" / "cat" / "essay.pdf", b"%PDF-1.4\n%%EOF\n")
    build_file(tmp_path / "subs" / "cat" / ".DS_Store", b"\0")
    build_file(tmp_path / "subs" / "dan" / ".DS_Store", b"\0")  # nothing handed in but litter: no student
    proc = grade(tmp_path, "subs", "--format", "json")
    rows = {r["submission"]: r for r in json.loads(proc.stdout)}
    assert set(rows) == {"subs/amy", "subs/ben", "subs/cat"}, proc.stderr
    assert rows["subs/cat"]["score"] == 0
    assert all(s["status"] == "missing" and "essay.pdf" in s["error"] for s in rows["subs/cat"]["steps"])
    assert "graded 3 submissions" in proc.stderr


def test_an_empty_step_file_is_missing_not_an_error(tmp_path: Path) -> None:
    for s in CORE[:3]:
        build_file(tmp_path / "kim" / f"{s}.py", step(s))
    build_file(tmp_path / "kim" / "step4_weighted_sum.py", "")
    build_file(tmp_path / "kim" / "step5_attention.py", "\n   \n")
    proc = grade(tmp_path, "kim", "--format", "json")
    steps = json.loads(proc.stdout)["steps"]
    assert [s["status"] for s in steps[:5]] == ["passed"] * 3 + ["missing"] * 2, proc.stdout[-2000:]
    assert "step4_weighted_sum.py (empty)" in steps[3]["error"]
    assert "step5_attention.py (empty)" in steps[4]["error"]


def test_reproduce_lines_for_work_in_a_zip_and_a_zip_in_a_zip_run(tmp_path: Path) -> None:
    flat = {f"{s}.py": step(s, s != "step2_scale") for s in CORE}
    build_file(tmp_path / "flat.zip", _zip(flat))
    build_file(tmp_path / "outer.zip", _zip({"inner.zip": _zip(flat)}))
    proc = grade(tmp_path, "flat.zip", "outer.zip", "--format", "rich")
    assert "# unzip flat.zip, then run Python in its folder ." in proc.stdout, proc.stdout[-3000:]
    assert "# unzip outer.zip, then unzip inner.zip inside it, then run Python" in proc.stdout
    assert proc.stdout.count("Reproduce it") >= 2
    assert not unrunnable_reproduce_lines(proc.stdout, tmp_path, tmp_path / "scratch")


def test_a_notebook_export_with_get_ipython_reproduces_in_ipython(tmp_path: Path) -> None:
    text = ("#!/usr/bin/env python\n# coding: utf-8\n\n# In[1]:\n\n\nget_ipython().system('pip install numpy')\n"
            "get_ipython().run_line_magic('matplotlib', 'inline')\n\n\n# In[2]:\n\n\n" + module(bad=("softmax",)))
    build_file(tmp_path / "kofi" / "lab.py", text)
    proc = grade(tmp_path, "kofi", "--format", "rich")
    assert "in Jupyter or IPython (lab.py has IPython lines" in proc.stdout, proc.stdout[-3000:]
    assert 'get_ipython().run_cell(open("lab.py"' in proc.stdout
    assert not unrunnable_reproduce_lines(proc.stdout, tmp_path, tmp_path / "scratch")


def test_a_moodle_student_with_online_text_only_keeps_a_row(tmp_path: Path) -> None:
    for who in ("Al Roy_30002", "Bo Li_30004"):
        for s in CORE:
            build_file(tmp_path / "dl" / f"{who}_assignsubmission_file_" / f"{s}.py", step(s))
        build_file(tmp_path / "dl" / f"{who}_assignsubmission_onlinetext_" / "onlinetext.html", "<p>see files</p>")
    build_file(tmp_path / "dl" / "Zoe Park_30001_assignsubmission_onlinetext_" / "onlinetext.html", "<p>x</p>")
    proc = grade(tmp_path, "dl", "--format", "json")
    rows = {r["submission"]: r for r in json.loads(proc.stdout)}
    assert set(rows) == {"dl/Al Roy_30002_assignsubmission_file_", "dl/Bo Li_30004_assignsubmission_file_",
                         "dl/Zoe Park_30001_assignsubmission_onlinetext_"}, proc.stderr
    zoe = rows["dl/Zoe Park_30001_assignsubmission_onlinetext_"]
    assert zoe["score"] == 0 and "onlinetext.html" in zoe["steps"][0]["error"]
