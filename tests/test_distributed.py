"""Dask scale-out: payloads, worker-side grading, and the cluster driver."""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import pytest

from attn_practice.grader.results import GradeReport, Status, StepResult
from attn_practice.grader.staff import distributed as dist

SUBMISSIONS = Path(__file__).parent / "submissions"


def _submission(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "step1_scores.py").write_text("def dot_scores(Q, K):\n    return Q @ K.T\n")
    (root / "pkg" / "helper.py").write_text("X = 1\n")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "a.pyc").write_bytes(b"\0")
    return root


@pytest.fixture
def fake_engine(monkeypatch):
    """An engine stand-in: reports which files it saw, and a traceback naming its path."""
    calls = []

    def grade_submission(path, *, steps=None, options=None):
        path = Path(path)
        calls.append({"steps": steps, "options": options})
        if (path / "CRASH").exists():
            raise RuntimeError("engine exploded")
        files = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())
        step = StepResult("step1", "Scores", Status.FAILED, 0.0, 1.0, output=",".join(files),
                          error=f'File "{path}/step1_scores.py", line 2')
        return GradeReport(submission=str(path), steps=(step,), duration=0.1)

    module = types.ModuleType("attn_practice.grader.engine.engine")
    module.grade_submission = grade_submission
    monkeypatch.setitem(sys.modules, "attn_practice.grader.engine.engine", module)
    return calls


def test_payload_holds_regular_files_only(tmp_path):
    sub = _submission(tmp_path / "alice")
    outside = tmp_path / "secret.txt"
    outside.write_text("do not ship")
    (sub / "link.txt").symlink_to(outside)
    (sub / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    payload = dist.submission_payload(sub)
    assert payload["name"] == str(sub)
    assert set(payload["files"]) == {"step1_scores.py", "pkg/helper.py"}
    assert payload["files"]["pkg/helper.py"] == b"X = 1\n"
    json.dumps({k: v for k, v in payload.items() if k != "files"})  # plain data besides bytes


def test_payload_is_size_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(dist, "MAX_FILE_BYTES", 100)
    monkeypatch.setattr(dist, "MAX_TOTAL_BYTES", 150)
    sub = tmp_path / "s"
    sub.mkdir()
    (sub / "a_big.bin").write_bytes(b"x" * 101)
    (sub / "b.py").write_bytes(b"y" * 90)
    (sub / "c.py").write_bytes(b"z" * 90)
    payload = dist.submission_payload(sub)
    assert set(payload["files"]) == {"b.py"}
    assert payload["skipped"] == ["a_big.bin", "c.py"]


def test_payload_of_a_missing_directory(tmp_path):
    with pytest.raises(NotADirectoryError):
        dist.submission_payload(tmp_path / "nope")


def test_grade_payload_relabels_and_resolves_steps(tmp_path, fake_engine):
    payload = dist.submission_payload(_submission(tmp_path / "alice"))
    payload["name"] = "class/alice"
    payload["step_ids"] = ["step1"]
    data = dist.grade_payload(payload, options="opts")
    assert data["submission"] == "class/alice"
    step = data["steps"][0]
    assert step["output"] == "pkg/helper.py,step1_scores.py"
    assert step["error"] == 'File "class/alice/step1_scores.py", line 2'  # no worker temp path
    assert [e.id for e in fake_engine[0]["steps"]] == ["step1"]
    assert fake_engine[0]["options"] == "opts"
    assert GradeReport.from_dict(data).submission == "class/alice"


@pytest.mark.parametrize("bad", ["../escape.py", "/etc/passwd", "a/../../b", ""])
def test_grade_payload_refuses_paths_outside(bad, fake_engine):
    with pytest.raises(ValueError):
        dist.grade_payload({"name": "x", "files": {bad: b"1"}})


def test_without_dask_a_plain_runtime_error(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(RuntimeError, match=r"pip install '\.\[dask\]'"):
        next(dist.grade_on_dask([tmp_path], "local"))


@pytest.fixture
def in_process_cluster():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    yield cluster
    cluster.close()


def test_grade_on_dask_yields_every_index(tmp_path, fake_engine, in_process_cluster):
    subs = [_submission(tmp_path / name) for name in ("alice", "bob", "carol")]
    (subs[1] / "CRASH").write_text("")
    paths = [*subs, tmp_path / "missing"]
    labels = ["A", "B", "C", "M"]
    got = dict(dist.grade_on_dask(paths, in_process_cluster.scheduler_address, labels=labels,
                                  step_ids=[["step1"], None, None, None], options="o"))
    assert set(got) == {0, 1, 2, 3}
    assert [got[i].submission for i in range(4)] == labels
    assert got[0].steps[0].output == "pkg/helper.py,step1_scores.py" and not got[0].error
    assert "engine exploded" in got[1].error
    assert got[3].error and not got[3].steps
    assert all(call["options"] == "o" for call in fake_engine)


@pytest.mark.slow
def test_grade_on_local_cluster_end_to_end(tmp_path):
    """Real engine, real worker processes: the same grades as a local run."""
    pytest.importorskip("distributed")
    engine = pytest.importorskip("attn_practice.grader.engine.engine")
    if not hasattr(engine, "grade_submission"):
        pytest.skip("the engine has no grade_submission yet")
    right, wrong = tmp_path / "right", tmp_path / "wrong"
    right.mkdir()
    wrong.mkdir()
    (right / "step1_scores.py").write_text(
        "import numpy as np\n\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2)\n")
    (wrong / "step1_scores.py").write_text("def dot_scores(Q, K):\n    return Q * K\n")
    cases = [right, wrong]
    if SUBMISSIONS.is_dir():
        cases += sorted(p for p in SUBMISSIONS.iterdir() if p.is_dir())[:2]
    got = dict(dist.grade_on_dask(cases, "local"))
    assert sorted(got) == list(range(len(cases)))
    assert got[0].step("step1").status is Status.PASSED
    assert got[1].step("step1").status is not Status.PASSED
    for i, case in enumerate(cases):
        local = engine.grade_submission(case)
        assert got[i].submission == str(case) and not got[i].error
        assert [(s.id, s.status, s.score, s.diagnosis_ids) for s in got[i].steps] == [
            (s.id, s.status, s.score, s.diagnosis_ids) for s in local.steps
        ]


def test_a_grader_failure_on_a_worker_is_graded_once_more(tmp_path, monkeypatch):
    from attn_practice.grader.results import Failure, TestResult

    calls = []

    def grade_submission(path, *, steps=None, options=None):
        calls.append(path)
        failure = Failure(kind="internal", summary="the grader could not start a sandbox")
        status = Status.ERROR if len(calls) == 1 else Status.PASSED
        tests = (TestResult("loads", status, failure.summary, failure if len(calls) == 1 else None),)
        return GradeReport(submission=str(path), steps=(StepResult("step1", "Scores", status, 0.0, 1.0,
                                                                   tests=tests),))

    module = types.ModuleType("attn_practice.grader.engine.engine")
    module.grade_submission = grade_submission
    monkeypatch.setitem(sys.modules, "attn_practice.grader.engine.engine", module)
    data = dist.grade_payload(dist.submission_payload(_submission(tmp_path / "alice")))
    assert len(calls) == 2
    assert data["steps"][0]["status"] == "passed"


def test_submissions_are_streamed_not_sent_up_front(tmp_path, fake_engine, in_process_cluster, monkeypatch):
    """At most a few submissions per worker thread are read and in flight at any time."""
    monkeypatch.setattr(dist, "IN_FLIGHT_PER_THREAD", 1)
    subs = [_submission(tmp_path / f"s{i:02d}") for i in range(12)]
    read: list[str] = []
    real = dist.submission_payload

    def payload(path):
        read.append(str(path))
        return real(path)

    monkeypatch.setattr(dist, "submission_payload", payload)
    threads = sum(in_process_cluster.scheduler_info["workers"][w]["nthreads"]
                  for w in in_process_cluster.scheduler_info["workers"])
    window = max(2, threads)
    seen = []
    for index, report in dist.grade_on_dask(subs, in_process_cluster.scheduler_address):
        assert len(read) <= len(seen) + window, (len(read), len(seen))
        seen.append(index)
        assert not report.error
    assert sorted(seen) == list(range(12)) and len(read) == 12


@pytest.mark.slow
def test_dask_local_on_the_command_line_reports_what_the_local_pool_does(tmp_path):
    """The console script: `--dask local` (TLS, warm engines on the workers) vs `--jobs 2`."""
    import shutil
    import subprocess

    from test_grade import make_submission

    from attn_practice.grader.results import without_timings

    subs = [make_submission(tmp_path / "right"), make_submission(tmp_path / "wrong", {3: "wrong_softmax_global"}),
            make_submission(tmp_path / "wrong5", {5: "wrong_no_scale"})]
    exe = shutil.which("attn-practice")
    assert exe
    runs = {}
    for how in (["--jobs", "2"], ["--dask", "local", "--jobs", "2"]):
        proc = subprocess.run([exe, "grade", *map(str, subs), "--format", "json", "--no-cache", *how],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 1, proc.stderr[-2000:]
        runs[how[1]] = without_timings(json.loads(proc.stdout))
    assert runs["local"] == runs["2"]
    assert [r["score"] for r in runs["local"]] == [5.0, 4.0, 4.0]


def test_a_task_carries_a_few_submissions_and_the_tail_one_each():
    assert dist.per_task(200, window=12, threads=2) == dist.MAX_PER_TASK
    assert dist.per_task(3, window=12, threads=2) == 1  # the end of a class: no worker left idle
    assert dist.per_task(200, window=2, threads=2) == 1  # a window of two: one per task


def test_a_task_that_fails_whole_is_graded_again_one_per_task(tmp_path, fake_engine, in_process_cluster,
                                                              monkeypatch):
    """A worker lost under a task of several: each submission is graded again alone, so
    only the one that brings a worker down loses its report."""
    monkeypatch.setattr(dist, "IN_FLIGHT_PER_THREAD", 6)
    subs = [_submission(tmp_path / f"s{i:02d}") for i in range(12)]
    log = tmp_path / "sizes"  # the task may run on a copy of this function: a file, not a list
    real = dist.grade_payloads

    def grade_payloads(payloads, **kw):
        with open(log, "a") as f:
            f.write(f"{len(payloads)}\n")
        if any(p["name"].endswith("s05") for p in payloads):
            raise RuntimeError("worker lost")
        return real(payloads, **kw)

    monkeypatch.setattr(dist, "grade_payloads", grade_payloads)
    got = dict(dist.grade_on_dask(subs, in_process_cluster.scheduler_address))
    assert sorted(got) == list(range(12))
    assert max(int(n) for n in log.read_text().split()) > 1  # submissions travelled several per task
    assert "worker lost" in got[5].error
    assert not any(got[i].error for i in range(12) if i != 5)
    assert [got[i].submission for i in range(12)] == [str(s) for s in subs]


@pytest.mark.slow
def test_local_cluster_workers_run_without_the_profilers(tmp_path):
    """`--dask local`: the statistical profiler, GIL monitor and 20 ms health tick are off on the
    workers, which grade with one BLAS thread and one malloc arena (as the local pool's workers
    do) and without the nanny's malloc trim threshold (which maps and unmaps arrays over and over)."""
    pytest.importorskip("distributed")
    import os

    import dask

    trim_before = os.environ.get("MALLOC_TRIM_THRESHOLD_")  # a nanny sets it in its own process too
    with dist._connect("local", None, 1) as client:
        assert set(client.run(dask.config.get, "distributed.worker.profile.enabled").values()) == {False}
        assert set(client.run(dask.config.get, "distributed.admin.system-monitor.gil.enabled").values()) == {False}
        env = client.run(os.environ.get, "MALLOC_ARENA_MAX")
        assert set(env.values()) == {os.environ.get("MALLOC_ARENA_MAX")}
        assert set(client.run(os.environ.get, "OPENBLAS_NUM_THREADS").values()) == {os.environ.get("OPENBLAS_NUM_THREADS")}
        trim = client.run(os.environ.get, "MALLOC_TRIM_THRESHOLD_")
        assert set(trim.values()) == {trim_before}
        assert set(client.run(dask.config.get, "distributed.admin.tick.interval").values()) == {"1s"}
        assert set(client.run(dask.config.get, "distributed.worker.memory.monitor-interval").values()) == {"1s"}


@pytest.mark.slow
def test_a_local_cluster_holds_a_bounded_number_of_payloads(tmp_path):
    """`--dask local` keeps a few windows of payloads alive in the grading process, however
    many it has sent: Dask's message logs would otherwise keep each one it sent (the scheduler
    runs in this process), and its memory would grow with the class."""
    pytest.importorskip("distributed")
    import gc

    def alive() -> int:
        gc.collect()
        return sum(1 for o in gc.get_objects() if isinstance(o, dict) and "files" in o and "skipped" in o)

    subs = []
    for i in range(80):
        sub = tmp_path / f"s{i:02d}"
        sub.mkdir()
        subs.append(sub)
    at_end = None
    for n, (_, report) in enumerate(dist.grade_on_dask(subs, "local", workers=1), 1):
        assert not (report.error or "").startswith("grading on the Dask cluster failed"), report.error
        if n == len(subs):
            at_end = alive()  # the cluster is still up while the last report is handed out
    window = dist.IN_FLIGHT_PER_THREAD  # one worker thread
    assert at_end is not None and at_end <= dist.LOW_LEVEL_LOG_LENGTH * dist.MAX_PER_TASK + window, at_end
