"""Every argument a row, sources read as Python reads them, the right work under another name,
and a Gradescope exit 3 that says what happened (issue 36), through the installed console script.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import handins_class as C
import pytest

CORE_IDS = ["step1", "step2", "step3", "step4", "step5"]
pytestmark = pytest.mark.slow

LATIN1_LITERAL = b'import numpy as np\n\n\ndef scale_scores(scores, d_k):\n    label = "caf\xe9"\n' \
                 b'    return np.asarray(scores) / np.sqrt(d_k)\n'
AMBIGUOUS = '''import numpy as np


def normalise_rows(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=axis, keepdims=True)


def probabilities(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=axis, keepdims=True)
'''
ONE_FIT = '''import numpy as np


def _swap(K):
    return np.swapaxes(K, -1, -2)


def qk_product(Q, K):
    return Q @ _swap(K)
'''


_grade = C.grade


def _folder(path: Path, **files: str | bytes) -> Path:
    path.mkdir(parents=True)
    for stem in C.CORE:
        (path / f"{stem}.py").write_text(C.REFERENCE)
    for name, body in files.items():
        name = name.replace("__", ".")
        (path / name).write_bytes(body if isinstance(body, bytes) else body.encode())
    return path


@pytest.fixture(scope="module")
def args_class(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    base = tmp_path_factory.mktemp("args")
    (base / "hw.py.txt").write_text(C.REFERENCE)  # an LMS that refuses .py
    (base / "hw.txt").write_text(C.REFERENCE)
    (base / "notes.txt").write_text("my notes: softmax needs the max subtracted\n")
    (base / "report.pdf").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    inside = base / "inside"
    inside.mkdir()
    (inside / "hw.py.txt").write_text(C.REFERENCE)
    named = _folder(base / "named")
    (named / "step3_softmax.py").unlink()
    (named / "step3_softmax.txt").write_text(C.REFERENCE)
    _folder(base / "latin1_comment", step3_softmax__py=b"# caf\xe9, no coding line\n" + C.REFERENCE.encode())
    _folder(base / "latin1_literal", step2_scale__py=LATIN1_LITERAL)
    _folder(base / "declared", step2_scale__py=b"# -*- coding: latin-1 -*-\n" + LATIN1_LITERAL)
    _folder(base / "bom_crlf", step4_weighted_sum__py=b"\xef\xbb\xbf" + C.REFERENCE.replace("\n", "\r\n").encode())
    module = base / "module"
    module.mkdir()
    (module / "attention.py").write_bytes(C.REFERENCE.encode() + b'\nGREETING = "caf\xe9"\n')
    _folder(base / "ambiguous", step3_softmax__py=AMBIGUOUS)
    _folder(base / "one_fit", step1_scores__py=ONE_FIT)
    order = ["hw.py.txt", "hw.txt", "notes.txt", "report.pdf", "inside", "named", "latin1_comment",
             "latin1_literal", "declared", "bom_crlf", "module", "ambiguous", "one_fit"]
    out = {"base": base, "order": order}
    for fmt in ("json", "csv", "junit", "rich"):
        out[fmt] = _grade(base, *order, "--format", fmt)
    return out


def _reports(args_class) -> dict[str, dict]:
    return {r["submission"]: r for r in json.loads(args_class["json"].stdout)}


def test_every_argument_gets_a_row_in_every_format(args_class):
    order = args_class["order"]
    reports = json.loads(args_class["json"].stdout)
    assert [r["submission"] for r in reports] == order
    rows = list(csv.DictReader(io.StringIO(args_class["csv"].stdout)))
    assert [r["submission"] for r in rows] == order
    root = ET.fromstring(args_class["junit"].stdout)
    text = ET.tostring(root, encoding="unicode")
    assert all(name in text for name in order)
    rich = " ".join(args_class["rich"].stdout.split())
    assert f"{len(order)} submissions:" in rich
    assert "skipped" not in args_class["json"].stderr


def test_python_handed_in_as_text_is_graded_with_a_warning_and_as_it_would_be_in_a_folder(args_class):
    r = _reports(args_class)
    for name in ("hw.py.txt", "hw.txt", "inside", "named"):
        assert r[name]["score"] == 5.0, (name, r[name]["warnings"])
    assert any("hw.txt as Python source" in w for w in r["hw.txt"]["warnings"])
    assert any("hw.py.txt" in w for w in r["hw.py.txt"]["warnings"])
    assert any("step3_softmax.txt" in w for w in r["named"]["warnings"])
    assert r["inside"]["score"] == r["hw.py.txt"]["score"]


def test_what_is_not_a_submission_is_missing_and_says_what_was_found(args_class):
    r = _reports(args_class)
    for name, what in (("notes.txt", "found: notes.txt (text, not Python)"), ("report.pdf", "found: report.pdf")):
        assert r[name]["score"] == 0
        assert [s["status"] for s in r[name]["steps"]] == ["missing"] * 5
        assert all(what in s["error"] for s in r[name]["steps"]), r[name]["steps"][0]["error"]


def test_sources_are_read_as_python_imports_them(args_class):
    r = _reports(args_class)
    assert r["latin1_comment"]["score"] == 5.0  # CPython imports a Latin-1 byte in a comment
    assert r["declared"]["score"] == 5.0  # PEP 263 coding line
    assert r["bom_crlf"]["score"] == 5.0
    step2 = {s["id"]: s for s in r["latin1_literal"]["steps"]}["step2"]
    assert step2["status"] == "error" and "line 5" in json.dumps(step2)
    said = " ".join(r["module"]["warnings"])
    assert r["module"]["score"] == 0  # Python would not import it, so neither does the grader
    assert f"attention.py is not valid Python (line {len(C.REFERENCE.splitlines()) + 2}: " in said and "not valid in any encoding" in said


def test_the_right_work_under_another_name(args_class):
    r = _reports(args_class)
    one = r["one_fit"]
    assert one["score"] == 5.0
    assert any("graded qk_product" in w and "the only function in the file that can be called like dot_scores"
               in w for w in one["warnings"]), one["warnings"]
    amb = r["ambiguous"]
    assert amb["score"] == 4.0
    said = " ".join(amb["warnings"])
    assert "normalise_rows(x, axis=-1)" in said and "probabilities(x, axis=-1)" in said and "none was graded" in said


def test_gradescope_exit_3_says_what_happened(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    (private / "test_fragile.py").write_text(
        'import numpy as np\nimport pytest\n\n\n@pytest.mark.step("step2")\ndef test_fragile(step):\n'
        '    """Reads the corner of the answer"""\n    got = np.asarray(step.call(np.ones((2, 2)), 4))\n'
        '    assert abs(float(got[1, 1]) - 0.5) < 1e-9\n')
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step2]\nmax_examples: 5\nextra_suites: [private/]\n")
    sub = tmp_path / "submission"
    sub.mkdir()
    (sub / "step2_scale.py").write_text("import numpy as np\n\n\ndef scale_scores(scores, d_k):\n"
                                        "    return np.zeros(1)\n")
    out = tmp_path / "results.json"
    res = _grade(tmp_path, str(sub), "--course", str(course), "--format", "gradescope", "--out", str(out),
                 env={"XDG_CACHE_HOME": str(tmp_path / "xdg"), "XDG_DATA_HOME": str(tmp_path / "xdg-data"),
                      "ATTN_PRACTICE_SECRET": "h36"})
    assert res.returncode == 3, res.stderr
    data = json.loads(out.read_text())
    assert "What happened" in data["output"] and "step2:" in data["output"], data["output"]
