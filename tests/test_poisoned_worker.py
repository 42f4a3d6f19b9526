"""CONTRACT 4.4: a worker's fork server poisoned by one submission never costs the next one.

Grader failures (a sandbox that cannot start, a fork server left changed) are
retried on a fresh fork server, reported as the grader's fault when they
persist, and never cached.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_grade import make_submission

from attn_practice.cli import cli
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.staff.batch import grade_with

SUBMISSIONS = Path(__file__).parent / "submissions"
CORE = ["step1", "step2", "step3", "step4", "step5"]


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTN_PRACTICE_SECRET", "poison-tests")
    monkeypatch.setenv("ATTN_PRACTICE_CACHE", str(tmp_path / "cache" / "results"))
    return tmp_path


@pytest.mark.parametrize("limit, value", [(resource.RLIMIT_AS, 64 << 20), (resource.RLIMIT_NOFILE, 5),
                                          (resource.RLIMIT_FSIZE, 0)])
def test_a_poisoned_fork_server_is_rebuilt_before_the_next_submission(env, limit, value):
    ok = make_submission(env / "ok")
    with Engine(RunOptions(secret="s")) as engine:
        assert grade_with(engine, ok, CORE, label="ok").score == 5.0
        first = engine.launcher.pid
        assert engine.launcher.check() == ""
        # What a same-user sandbox can do to its fork server when the jail lets it.
        resource.prlimit(first, limit, (value, value))
        assert "limits" in engine.launcher.check()
        for _ in range(2):
            report = grade_with(engine, ok, CORE, label="ok")
            assert report.score == 5.0, [(s.id, s.error) for s in report.steps if not s.passed]
        assert engine.launcher.pid != first
        assert engine.launcher.check() == ""


def test_a_spawn_that_fails_is_retried_on_a_fresh_fork_server(env):
    ok = make_submission(env / "ok", steps=["step1_scores"])
    with Engine(RunOptions(secret="s")) as engine:
        engine.grade(ok)
        first = engine.launcher.pid
        resource.prlimit(first, resource.RLIMIT_NOFILE, (5, 5))  # the next fork cannot take its socket
        report = engine.grade(ok)  # not through grade_with: the launcher's own retry
        assert report.step("step1").passed, report.step("step1").error
        assert engine.launcher.pid != first


def test_a_persistent_grader_failure_is_an_error_not_a_verdict_and_is_never_cached(env, monkeypatch):
    ok = make_submission(env / "ok")
    calls = []

    def broken(self, *args, **kwargs):
        calls.append(1)
        raise RuntimeError("sandbox spawn failed: fork failed: Resource temporarily unavailable")

    monkeypatch.setattr(Launcher, "spawn", broken)
    cache = env / "cache"
    result = CliRunner().invoke(cli, ["grade", str(ok), "--format", "json", "--jobs", "1",
                                      "--cache-dir", str(cache)])
    assert "Traceback" not in result.output
    assert result.exit_code == 3  # the grader failed (CONTRACT 4.4): no verdict, a note for staff
    assert "the grader itself failed" in " ".join(result.stderr.split())
    report = json.loads(result.stdout)
    assert report["score"] == 0.0 and report["max_score"] == 5.0
    for step in report["steps"]:
        assert step["status"] == "error"
        message = step["tests"][0]["message"]
        assert "not your fault" in message and "could not start a sandbox" in message
        assert "not your fault" in step["error"]
        assert step["tests"][0]["failure"]["kind"] == "internal"
    assert len(calls) >= 2 * len(report["steps"])  # graded once more on a fresh fork server
    assert not [p for p in cache.rglob("*.json")]  # never cached
    monkeypatch.undo()
    monkeypatch.setenv("ATTN_PRACTICE_SECRET", "poison-tests")
    result = CliRunner().invoke(cli, ["grade", str(ok), "--format", "json", "--jobs", "1",
                                      "--cache-dir", str(cache)])
    assert json.loads(result.output)["score"] == 5.0  # the next run grades it afresh


def _class(root: Path) -> list[str]:
    """The subtle poisoner, an honest submission twice, the loud poisoner, the honest one again."""
    subtle, loud = root / "subtle", root / "loud"
    shutil.copytree(SUBMISSIONS / "attack_poison_worker", subtle)
    shutil.copytree(SUBMISSIONS / "attack_poison_fork", loud)
    honest = str(make_submission(root / "honest"))
    return [str(subtle), honest, honest, str(loud), honest]


@pytest.mark.slow
def test_hostile_then_honest_through_one_worker(env):
    subs = _class(env)
    result = CliRunner().invoke(cli, ["grade", *subs, "--format", "json", "--jobs", "1", "--no-cache"])
    assert "Traceback" not in result.output
    reports = json.loads(result.output)
    assert [r["submission"] for r in reports] == subs
    assert [r["score"] for i, r in enumerate(reports) if i in (1, 2, 4)] == [5.0, 5.0, 5.0]


@pytest.mark.slow
def test_hostile_then_honest_through_one_worker_as_an_ordinary_user():
    """The case that poisoned workers: the sandbox shares the grader's uid."""
    if os.geteuid() != 0:
        pytest.skip("the whole suite already runs unprivileged (see the test above)")
    import test_attacks

    home = Path(tempfile.mkdtemp(prefix="attnp-poison-home-"))
    try:
        cmd = test_attacks._unprivileged_command(home / ".stage", test_attacks.RUN_AS["poison"])
        if cmd is None:
            pytest.skip("cannot run Python as an unprivileged user here (setpriv/unshare missing)")
        os.chmod(home, 0o777)
        subs = _class(home / "class")
        for dirpath, dirnames, filenames in os.walk(home / "class"):
            for name in dirnames + filenames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        os.chmod(home / "class", 0o755)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
               "PYTHONDONTWRITEBYTECODE": "1", "TMPDIR": "/tmp", "ATTN_PRACTICE_SECRET": "poison-tests"}
        proc = subprocess.run([*cmd, sys.executable, "-m", "attn_practice", "grade", *subs, "--format", "json",
                               "--jobs", "1", "--no-cache"], env=env, cwd=str(home), capture_output=True,
                              text=True, timeout=600, stdin=subprocess.DEVNULL)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr[-3000:]
    reports = json.loads(proc.stdout)
    assert [r["score"] for i, r in enumerate(reports) if i in (1, 2, 4)] == [5.0, 5.0, 5.0], proc.stderr[-2000:]
