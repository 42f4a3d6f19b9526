"""The "returned float64 for float32 input" note: only when the reference itself does not.

The reference's output dtype is worked out once per kind of input (`assertions._reference_dtype`),
so the note must still follow each call's input dtypes exactly.
"""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_script
from test_grade import make_submission

NOTE = "returned float64 for float32 input"

WIDENS = '''import numpy as np


def dot_scores(Q, K):
    return np.asarray(Q, dtype=np.float64) @ np.swapaxes(np.asarray(K, dtype=np.float64), -1, -2)
'''


def _notes(tmp_path: Path, sub: Path) -> dict[str, list[str]]:
    out = tmp_path / f"{sub.name}.json"
    res = run_script(["grade", str(sub), "--format", "json", "--no-cache", "--out", str(out)], cwd=tmp_path)
    assert res.exit_code in (0, 1), res
    report = json.loads(out.read_text())  # one submission: its report alone
    return {s["id"]: s.get("notes", []) for s in report["steps"]}


def test_code_that_widens_float32_where_the_reference_does_not_is_told(tmp_path: Path) -> None:
    sub = make_submission(tmp_path / "widens")
    (sub / "step1_scores.py").write_text(WIDENS)
    notes = _notes(tmp_path, sub)
    assert any(NOTE in n for n in notes["step1"]), notes


def test_code_that_returns_what_the_reference_returns_is_told_nothing(tmp_path: Path) -> None:
    # the reference keeps float32 at step 1 and gives float64 at steps 2 and 5 (/ np.sqrt(d_k))
    notes = _notes(tmp_path, make_submission(tmp_path / "reference"))
    assert not any(NOTE in n for ns in notes.values() for n in ns), notes
