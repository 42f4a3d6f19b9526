"""Issue 18 item 3: examples no one can harvest, through the package or through earlier reports.

`grade` rebuilds every generated input from the secret *and the submission's
own bytes* (`secret.submission_salt`). A learner who collects every input one
version of a submission was sent (here: recorded on the trusted side, the
most any report, printing or timing could ever reveal) and ships the answers
in the next version gets new inputs, so the table answers nothing. Reports of
`grade` echo one failing input per step, with capped text.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine import engine as engine_mod
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.engine.secret import submission_salt
from attn_practice.grader.sandbox import learner as learner_mod
from attn_practice.grader.sandbox.submission import sandbox_files
from attn_practice.reference import attention as reference

ROOT = Path(__file__).resolve().parents[1]
ATTACK = ROOT / "tests" / "submissions" / "attack_harvested_table"
CLI = Path(sys.executable).with_name("attn-practice")
SECRET = "harvest-secret"


def _key(*arrays: np.ndarray) -> str:  # the attack's own key (see its step1_scores.py)
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _harvest(folder: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, tuple[str, tuple[int, ...], str]]:
    """Grade `folder` (a correct version) under the secret; every step1 input it was sent, with answers."""
    table: dict[str, tuple[str, tuple[int, ...], str]] = {}
    real = learner_mod.Learner.call

    def recording(self, *args, **kwargs):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if len(arrays) == 2:
            answer = np.asarray(reference.dot_scores(*arrays))
            table[_key(*arrays)] = (answer.dtype.str, answer.shape, answer.tobytes().hex())
        return real(self, *args, **kwargs)

    monkeypatch.setattr(learner_mod.Learner, "call", recording)
    with Engine(RunOptions(secret=SECRET, shrink=False, persist_examples=False)) as engine:
        assert engine.grade(folder, [resolve_step("step1")]).passed
    monkeypatch.undo()
    return table


def _grade_cli(tmp: Path, folder: Path) -> dict:
    env = dict(os.environ, XDG_DATA_HOME=str(tmp / "data"), XDG_CACHE_HOME=str(tmp / "cache"),
               ATTN_PRACTICE_SECRET=SECRET)
    env.pop("ATTN_PRACTICE_CACHE", None)
    course = tmp / "course.yaml"
    course.write_text("steps: [step1]\n", encoding="utf-8")
    proc = subprocess.run([str(CLI), "grade", str(folder), "--course", str(course), "--format", "json",
                           "--no-cache"], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_a_table_of_the_previous_versions_inputs_fails_the_next(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # v1 computes right answers (and could print every input it gets); v2 answers from a table.
    v1 = tmp_path / "v1"
    v1.mkdir()
    (v1 / "step1_scores.py").write_text(
        "import numpy as np\n\n\ndef dot_scores(Q, K):\n    print(Q.tolist(), K.tolist())\n"
        "    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)\n", encoding="utf-8")
    table = _harvest(v1, monkeypatch)
    assert len(table) >= 20
    v2 = tmp_path / "v2"
    shutil.copytree(ATTACK, v2, ignore=shutil.ignore_patterns("README.md"))
    (v2 / "harvested.py").write_text(f"TABLE = {table!r}\n", encoding="utf-8")

    # The attack is real: were v2 sent v1's inputs, its table would answer every one.
    salt_v1 = submission_salt(SECRET, sandbox_files(v1))
    with monkeypatch.context() as mp:
        mp.setattr(engine_mod, "submission_salt", lambda secret, files: salt_v1)
        with Engine(RunOptions(secret=SECRET, shrink=False, persist_examples=False)) as engine:
            held = engine.grade(v2, [resolve_step("step1")])
    assert held.passed, [t.message for t in held.steps[0].tests if t.message]

    # Graded as it is, v2 gets inputs of its own: the table is worth nothing.
    report = _grade_cli(tmp_path, v2)
    step = report["steps"][0]
    assert step["status"] == "failed" and report["score"] == 0.0
    generated = [t for t in step["tests"] if t["status"] == "failed"]
    assert generated, step


def test_inputs_follow_the_submissions_bytes_and_nothing_else(tmp_path: Path) -> None:
    a = tmp_path / "a"
    a.mkdir()
    (a / "step1_scores.py").write_text("import numpy as np\n\n\ndef dot_scores(Q, K):\n    return Q @ K.T\n")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    (b / "step1_scores.py").write_text((a / "step1_scores.py").read_text() + "# one comment more\n")
    salts = {submission_salt(SECRET, sandbox_files(p)) for p in (a, b)}
    assert len(salts) == 2
    assert submission_salt(SECRET, sandbox_files(a)) == submission_salt(SECRET, sandbox_files(a))
    assert submission_salt("other", sandbox_files(a)) not in salts
    # Same bytes under another folder name: same inputs (a copy is graded alike).
    c = tmp_path / "c"
    shutil.copytree(a, c)
    assert submission_salt(SECRET, sandbox_files(c)) == submission_salt(SECRET, sandbox_files(a))


def test_grade_echoes_one_failing_input_per_step_with_capped_text(tmp_path: Path) -> None:
    sub = tmp_path / "noisy"
    sub.mkdir()
    (sub / "step1_scores.py").write_text(
        "import numpy as np\n\n\ndef dot_scores(Q, K):\n"
        "    print('x' * 5000)\n"
        "    raise ValueError('y' * 3000)\n")
    report = _grade_cli(tmp_path, sub)
    step = report["steps"][0]
    failed = [t for t in step["tests"] if t["status"] != "passed"]
    assert len(failed) >= 5
    assert all(len(t["message"]) < 800 for t in failed)
    assert len(step.get("output", "")) < 1200
    text = json.dumps(step)
    assert text.count("dot_scores(") <= 3, "more than one failing call echoed"
