"""An LMS-style class, built fresh in a temp folder: every hand-in pattern docs/handins.md documents.

Each student's expected result is in `EXPECTED` (score, core statuses, phrases
a warning must hold). The wrong versions are wrong in a way the suites catch
(a softmax that overflows, a scale by d_k), so grading the wrong attempt costs
points and the test sees it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "reference" / "attention.py").read_text()
CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
SAME_TIME = 1_700_000_000  # an "all attempts" download: every file the same time

UNSTABLE_SOFTMAX = '''import numpy as np


def softmax(x, axis=-1):
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
'''
SCALE_BY_DK = '''def scale_scores(scores, d_k):
    return scores / d_k
'''
RENAMED_SOFTMAX = '''import numpy as np


def stable_softmax(x, axis=-1):
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)
'''
RENAMED_ATTENTION = '''import numpy as np

from step3_softmax import softmax


def scaled_dot_product_attention(Q, K, V):
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return softmax(scores) @ V
'''
BROKEN_ATTENTION = '''import numpy as np


def attention(Q, K, V):
    d_k = Q.shape[-1]
    return Q @ V / d_k[0]
'''

#: label (relative to the class folder) -> (score, status of every core step or "mixed", warning phrases)
EXPECTED: dict[str, tuple[float, str, list[str]]] = {
    "smithjane_4411": (5, "passed", ["2 attempts", "Canvas upload 98012", "smithjane_4411_98012_step3_softmax.py"]),
    "doejohn_4412": (5, "passed", ["taken by name from doejohn_LATE_4412_98100_attention.py"]),
    "jlopez": (5, "passed", ["2 attempts", "Blackboard attempt 2024-03-04-23-59-01",
                             "AttentionLab_jlopez_attempt_2024-03-04-22-10-45_step1_scores.py"]),
    "Ada Lovelace_12345_assignsubmission_file_": (5, "passed", [
        "graded stable_softmax", "well-known name for softmax", "scaled_dot_product_attention"]),
    "kim": (5, "passed", ["step2_scale.py.txt"]),
    "obi_ngozi_colab.ipynb": (4, "mixed", ["taken by name from obi_ngozi_colab.ipynb"]),
    "lee.zip": (5, "passed", ["graded the folder lee/ inside lee.zip"]),
    "pat": (3, "mixed", ["taken by name from attention-lab.py"]),  # attention uses its scale_scores
    "mwangi_colab_export.py": (5, "passed", ["mwangi_colab_export.py has IPython lines (lines 7, 8"]),
}


EXE = Path(sys.executable).parent / "attn-practice"


def grade(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`attn-practice grade ARGS` through the installed console script, with a private cache in `cwd`."""
    return subprocess.run([str(EXE), "grade", *args, "--cache-dir", str(cwd / "cache")], cwd=cwd,
                          capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "COLUMNS": "400", "NO_COLOR": "1", **(env or {})})


def _write(path: Path, text: str | bytes, mtime: float = SAME_TIME) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    os.utime(path, (mtime, mtime))


def notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": c.splitlines(keepends=True)} for c in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def build(root: Path) -> Path:
    """The class folder `root/subs`, as an LMS download unpacked: one call grades it all."""
    subs = root / "subs"
    subs.mkdir(parents=True)
    # Canvas, flat: name_userid_attachmentid_file. Attempt 98011 (wrong, NEWER file time) and 98012 (right).
    for stem in CORE:
        _write(subs / f"smithjane_4411_98012_{stem}.py", REFERENCE)
    _write(subs / "smithjane_4411_98011_step3_softmax.py", UNSTABLE_SOFTMAX, SAME_TIME + 3600)
    # Canvas, late: name_LATE_userid_attachmentid_file; one module for everything.
    _write(subs / "doejohn_LATE_4412_98100_attention.py", REFERENCE)
    # Blackboard, all attempts: every file the same time; attempt 1 has a wrong step1; receipts beside.
    first, second = "AttentionLab_jlopez_attempt_2024-03-04-22-10-45", "AttentionLab_jlopez_attempt_2024-03-04-23-59-01"
    _write(subs / f"{first}_step1_scores.py", "def dot_scores(Q, K):\n    return Q @ K.T\n")
    _write(subs / f"{first}.txt", "Name: Jo Lopez (jlopez)\nAssignment: AttentionLab\n")
    for stem in CORE:
        _write(subs / f"{second}_{stem}.py", REFERENCE)
    _write(subs / f"{second}.txt", "Name: Jo Lopez (jlopez)\nAssignment: AttentionLab\n")
    # Moodle, a folder per student; the work under other names.
    ada = subs / "Ada Lovelace_12345_assignsubmission_file_"
    for stem in ("step1_scores", "step2_scale", "step4_weighted_sum"):
        _write(ada / f"{stem}.py", REFERENCE)
    _write(ada / "step3_softmax.py", RENAMED_SOFTMAX)
    _write(ada / "step5_attention.py", RENAMED_ATTENTION)
    # A plain folder: a Latin-1 comment without a coding line (CPython imports it), a .py.txt, CRLF.
    kim = subs / "kim"
    for stem in ("step1_scores", "step4_weighted_sum", "step5_attention"):
        _write(kim / f"{stem}.py", REFERENCE.replace("\n", "\r\n"))
    _write(kim / "step3_softmax.py", b"# softmax, caf\xe9 style\n" + REFERENCE.encode())
    _write(kim / "step2_scale.py.txt", REFERENCE)
    # A Colab notebook with !pip and %magic; attention is wrong (it raises).
    cells = ["!pip install numpy\n%matplotlib inline\nimport numpy as np",
             *[REFERENCE.split("\ndef ")[0]],
             "def dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n",
             "def scale_scores(scores, d_k):\n    return scores / np.sqrt(d_k)\n",
             "def softmax(x, axis=-1):\n    z = x - np.max(x, axis=axis, keepdims=True)\n    e = np.exp(z)\n"
             "    return e / e.sum(axis=axis, keepdims=True)\n",
             "def weighted_sum(weights, V):\n    return weights @ V\n",
             BROKEN_ATTENTION.split("\n\n\n", 1)[1]]
    _write(subs / "obi_ngozi_colab.ipynb", notebook(cells))
    # A zip of a folder, with macOS litter.
    with zipfile.ZipFile(subs / "lee.zip", "w") as z:
        for stem in CORE:
            z.writestr(zipfile.ZipInfo(f"lee/{stem}.py", (2024, 5, 1, 12, 0, 0)), REFERENCE)
        z.writestr(zipfile.ZipInfo("__MACOSX/lee/._step1_scores.py", (2024, 5, 1, 12, 0, 0)), b"\0\0")
    # A folder with one module whose name Python cannot import (a dash); softmax is scaled wrong.
    _write(subs / "pat" / "attention-lab.py", REFERENCE.replace(
        "def scale_scores(scores: np.ndarray, d_k: int) -> np.ndarray:",
        "def scale_scores(scores: np.ndarray, d_k: int) -> np.ndarray:\n    return scores / d_k\n\n\n"
        "def _unused(scores, d_k):"))
    # A Colab notebook downloaded as .py: its `!pip` and `%magic` lines are not Python.
    _write(subs / "mwangi_colab_export.py", '# -*- coding: utf-8 -*-\n"""Untitled0.ipynb\n\nAutomatically generated '
           'by Colaboratory.\n"""\n\n!pip install numpy\n%matplotlib inline\n' + REFERENCE.replace("from __future__ import annotations\n", ""))
    # Not work: the LMS's own index page is no student.
    _write(subs / "index.html", "<html></html>\n")
    return subs


__all__ = ["CORE", "EXPECTED", "REFERENCE", "build", "grade", "notebook"]
