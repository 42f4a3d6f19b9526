"""CONTRACT 4.3: `grade` draws its examples from a secret, so harvested answers are worth nothing."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from test_grade import make_submission

from attn_practice.cli import cli
from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.course import CourseError, load_course
from attn_practice.grader.engine import secret as secret_mod
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import without_timings
from attn_practice.grader.sandbox import learner as learner_mod
from attn_practice.reference import attention as reference

ATTACK = Path(__file__).parent / "submissions" / "attack_harvested_table"


def _key(*arrays: np.ndarray) -> str:  # the attack's own key (see its step1_scores.py)
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """Own data, cache and example folders; no secret in the environment."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("ATTN_PRACTICE_CACHE", str(tmp_path / "cache" / "results"))
    monkeypatch.delenv("ATTN_PRACTICE_SECRET", raising=False)
    return tmp_path


@pytest.fixture(scope="module")
def harvested(tmp_path_factory) -> Path:
    """The attack folder with a table of every step1 input the public examples send, and the answers.

    What a learner gets by printing the inputs during `check`: here recorded on
    the trusted side while a correct submission is graded with public examples.
    """
    root = tmp_path_factory.mktemp("harvest")
    table: dict[str, tuple[str, tuple[int, ...], str]] = {}
    real = learner_mod.Learner.call

    def recording(self, *args, **kwargs):
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        if len(arrays) == 2:
            answer = np.asarray(reference.dot_scores(*arrays))
            table[_key(*arrays)] = (answer.dtype.str, answer.shape, answer.tobytes().hex())
        return real(self, *args, **kwargs)

    correct = make_submission(root / "correct", steps=["step1_scores"])
    mp = pytest.MonkeyPatch()
    mp.setattr(learner_mod.Learner, "call", recording)
    try:
        with Engine(RunOptions(shrink=False, persist_examples=False)) as engine:  # check's examples
            assert engine.grade(correct, [resolve_step("step1")]).passed
    finally:
        mp.undo()
    assert len(table) > 10
    attack = root / "attack"
    shutil.copytree(ATTACK, attack)
    (attack / "harvested.py").write_text(f"TABLE = {table!r}\n", encoding="utf-8")
    return attack


def _grade(*args: str, env: dict[str, str] | None = None) -> tuple[int, list[dict]]:
    result = CliRunner().invoke(cli, ["grade", *args, "--format", "json", "--no-cache"], env=env)
    assert "Traceback" not in result.output, result.output
    data = json.loads(result.output)
    return result.exit_code, data if isinstance(data, list) else [data]


def test_the_table_does_pass_the_public_examples(harvested):
    """The attack is real: on check's public examples, the table alone scores."""
    with Engine(RunOptions(shrink=False, persist_examples=False)) as engine:
        report = engine.grade(harvested, [resolve_step("step1")])
    assert report.passed, [t.message for t in report.steps[0].tests if t.message]


def test_grade_fails_a_submission_answering_from_harvested_inputs(harvested, isolated):
    for secret in ("course-secret-1", "another-secret"):
        code, (report,) = _grade(str(harvested), "--course", str(_course(isolated, "[step1]")),
                                 env={"ATTN_PRACTICE_SECRET": secret})
        assert code == 1
        step = report["steps"][0]
        assert step["status"] == "failed" and step["score"] == 0.0
        assert any(t["status"] == "failed" for t in step["tests"])


def _course(folder: Path, steps: str, extra: str = "") -> Path:
    path = folder / "course.yaml"
    path.write_text(f"steps: {steps}\n{extra}", encoding="utf-8")
    return path


def test_same_secret_same_report_and_a_correct_submission_passes_under_any(tmp_path, isolated):
    ok = make_submission(tmp_path / "ok")
    bad = make_submission(tmp_path / "bad", {3: "wrong_softmax_global"})
    runs = {}
    for secret in ("s1", "s2", "s1"):
        code, reports = _grade(str(ok), str(bad), env={"ATTN_PRACTICE_SECRET": secret})
        assert code == 1
        assert [r["score"] for r in reports] == [5.0, 4.0]
        runs.setdefault(secret, []).append(without_timings(reports))
    assert runs["s1"][0] == runs["s1"][1]


def test_different_secrets_draw_different_inputs(tmp_path, isolated, monkeypatch):
    sub = make_submission(tmp_path / "ok", steps=["step1_scores"])
    seen: list[str] = []
    real = learner_mod.Learner.call

    def recording(self, *args, **kwargs):
        seen.append(_key(*[a for a in args if isinstance(a, np.ndarray)]))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(learner_mod.Learner, "call", recording)
    drawn = {}
    for secret in ("a", "b", "a", None):
        seen.clear()
        with Engine(RunOptions(secret=secret, shrink=False, persist_examples=False)) as engine:
            assert engine.grade(sub, [resolve_step("step1")]).passed
        drawn.setdefault(secret, []).append(set(seen))
    assert drawn["a"][0] == drawn["a"][1]
    # Only the few fixed (explicit) examples are shared; everything generated differs.
    assert len(drawn["a"][0] - drawn["b"][0]) >= len(drawn["a"][0]) // 2
    assert len(drawn["a"][0] - drawn[None][0]) >= len(drawn["a"][0]) // 2


def test_installation_secret_is_created_once_private_and_never_stored_in_clear(tmp_path, isolated):
    ok = make_submission(tmp_path / "ok", steps=["step1_scores"])
    course = _course(isolated, "[step1]")
    runner = CliRunner()
    for _ in range(2):
        result = runner.invoke(cli, ["grade", str(ok), "--course", str(course), "--format", "json"])
        assert result.exit_code == 0, result.output
    path = isolated / "data" / "attn-practice" / secret_mod.SECRET_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    secret = path.read_text().strip()
    assert len(secret) >= 32 and secret == secret_mod.installation_secret()
    assert secret_mod.grading_secret() == secret
    cached = [p for p in (isolated / "cache").rglob("*") if p.is_file()]
    assert cached, "the results cache and the example store were written"
    for p in cached:
        assert secret.encode() not in p.read_bytes(), p


def test_concurrent_creators_agree(tmp_path):
    folder = tmp_path / "data"
    first = secret_mod.installation_secret(folder)
    assert all(secret_mod.installation_secret(folder) == first for _ in range(3))
    assert secret_mod.new_secret() != secret_mod.new_secret()
    assert [p.name for p in folder.iterdir()] == [secret_mod.SECRET_FILE]  # no temp files left


def test_course_secret_env_names_the_variable(tmp_path, isolated):
    ok = make_submission(tmp_path / "ok", steps=["step1_scores"])
    course = _course(isolated, "[step1]", "secret_env: MY_COURSE_SECRET\n")
    assert load_course(course).secret_env == "MY_COURSE_SECRET"
    code, (report,) = _grade(str(ok), "--course", str(course), env={"MY_COURSE_SECRET": "xyz"})
    assert code == 0 and report["score"] == 1.0
    assert not (isolated / "data").exists()  # the course's variable was used: no installation secret
    for bad in ("'has space'", "'1ABC'", "[A]", "''"):
        with pytest.raises(CourseError, match="secret_env"):
            load_course(_course(isolated, "[step1]", f"secret_env: {bad}\n"))
    result = CliRunner().invoke(cli, ["grade", str(ok), "--course", str(_course(isolated, "[step1]", "secret_env: 'a b'\n"))])
    assert result.exit_code == 2 and "secret_env" in result.output


def test_check_keeps_the_public_examples():
    from attn_practice.grader.teaching.practice import check_options
    from attn_practice.grader.teaching.workspace import State

    assert check_options(State(), []).secret is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_data_folder_says_what_to_do(tmp_path, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    with pytest.raises(secret_mod.SecretError, match="ATTN_PRACTICE_SECRET"):
        secret_mod.installation_secret(ro / "attn-practice")


def test_the_sandbox_cannot_read_the_secret(tmp_path, isolated):
    """Not from its environment, the grader's /proc/<pid>/environ, or the installation's file."""
    secret_mod.installation_secret()  # the file exists too
    file = isolated / "data" / "attn-practice" / secret_mod.SECRET_FILE
    sub = tmp_path / "peek"
    sub.mkdir()
    (sub / "step1_scores.py").write_text(f"""
import os

found = [os.environ.get("ATTN_PRACTICE_SECRET", "")]
try:
    pids = os.listdir("/proc")
except OSError:
    pids = [str(os.getppid()), "1"]
for pid in pids:
    try:
        with open(f"/proc/{{pid}}/environ", "rb") as f:
            found.append(f.read().decode("latin-1"))
    except OSError:
        pass
try:
    with open({str(file)!r}) as f:
        found.append(f.read())
except OSError:
    pass
print("PEEK", "|".join(found))


def dot_scores(Q, K):
    return Q @ K.T
""")
    code, (report,) = _grade(str(sub), "--course", str(_course(isolated, "[step1]")),
                             env={"ATTN_PRACTICE_SECRET": "env-secret-value-1234"})
    output = report["steps"][0]["output"]
    assert "PEEK" in output, report["steps"][0]["error"]
    assert "env-secret-value-1234" not in output
    assert file.read_text().strip() not in output
