"""`host --dask`: checks on a real Dask LocalCluster give the local pool's reports, and a
worker killed mid-check costs the learner nothing (CONTRACT §4.4).

One LocalCluster of two single-threaded worker processes for the module (made by the
runner itself, as `--dask local` makes it); the local side is `work.check_files`, the
function every local pool worker runs, called here directly.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from conftest import solution_source

from attn_practice.grader.host.checks import work
from attn_practice.grader.host.checks.base import CheckRequest
from attn_practice.grader.host.checks.dask import READY_TTL
from attn_practice.grader.host.checks.factory import open_runner

pytest.importorskip("distributed", reason="Dask is not installed (pip install 'attn-practice[dask]')")
pytestmark = pytest.mark.slow

NO_SCALE = "import numpy as np\n\ndef scale_scores(scores, d_k):\n    return scores\n"


@pytest.fixture(scope="module")
def runner():
    from attn_practice.grader.host.checks.dask import DaskCheckRunner

    r = open_runner("local", work.host_options(), None)
    assert isinstance(r, DaskCheckRunner)
    try:
        yield r
    finally:
        r.close()


def _essence(report: dict) -> list[tuple]:
    """What a learner is told, without timings: per step status, diagnoses, tests' outcomes."""
    out = []
    for step in report["steps"]:
        out.append((step["id"], step["status"], tuple(step.get("diagnoses", ())),
                    tuple((t["name"], t["status"]) for t in step.get("tests", ()))))
    return out


def _request(step: str, source: str, learner: str = "L1") -> CheckRequest:
    files = {"step1_scores.py": solution_source("step1")}
    files[f"{step}_{'scale' if step == 'step2' else 'scores'}.py"] = source
    return CheckRequest(learner_id=learner, step=step, files=files)


def test_dask_runner_is_ready_with_a_worker_per_check_slot(runner):
    assert runner.ready()
    assert runner.capacity == 2


@pytest.mark.parametrize("step, source", [("step1", solution_source("step1")), ("step2", NO_SCALE)],
                         ids=["correct", "no-scale"])
def test_dask_check_gives_the_local_pools_report(runner, step, source):
    request = _request(step, source)
    remote = runner.run(request)
    local = work.check_files(request.step, dict(request.files), options=work.host_options())
    assert not remote.get("grader_failed"), remote["report"].get("error")
    assert _essence(remote["report"]) == _essence(local["report"])
    assert remote["worked_html"] == local["worked_html"]
    if step == "step2":
        assert "no-scale" in remote["report"]["steps"][0]["diagnoses"]
    else:
        assert remote["report"]["steps"][0]["status"] == "passed"


def test_warm_builds_every_workers_engine(runner):
    deadline = time.monotonic() + 240  # run before the tests that kill workers
    while len(runner.client.scheduler_info(n_workers=-1)["workers"]) < 2:
        assert time.monotonic() < deadline, "the cluster's two workers did not start"
        time.sleep(0.1)
    runner.warm()
    time.sleep(READY_TTL)  # past a cached answer from while they were away
    assert runner.ready()


def test_worker_killed_mid_check_is_retried_on_another_and_not_charged(runner):
    """Kill -9 the worker running a check: the check still passes, run by the other worker."""
    client = runner.client
    client.restart()  # fresh workers: the first check on each builds its engine (a wide window)
    deadline = time.monotonic() + 60
    while len(client.scheduler_info(n_workers=-1)["workers"]) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = client.run(os.getpid)
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(runner.run(_request("step1", solution_source("step1")))))
    thread.start()
    victim = None
    while victim is None and time.monotonic() < deadline:
        for address, keys in client.processing().items():
            if any(str(k).startswith("attn-check-") for k in keys):
                victim = pids.get(address)
        time.sleep(0.02)
    assert victim is not None, "the check never reached a worker"
    os.kill(victim, signal.SIGKILL)
    thread.join(timeout=180)
    assert not thread.is_alive()
    assert not result.get("grader_failed"), result["report"].get("error")
    assert result["report"]["steps"][0]["status"] == "passed"
    assert result["worker_pid"] != victim


def test_a_check_that_keeps_losing_its_worker_is_a_grader_failure_not_a_verdict(runner):
    """Every worker that takes the check dies: after the bounded retries the learner is told
    the grader failed (not their code), and the result is marked so it is not counted."""
    client = runner.client
    result: dict = {}
    since = time.time_ns()  # keys are named by when they were submitted: ours come after this
    thread = threading.Thread(target=lambda: result.update(runner.run(_request("step1", solution_source("step1")))))
    thread.start()
    killed: set[int] = set()
    keys: set[str] = set()  # the check's submissions (one key each) that reached a worker
    deadline = time.monotonic() + 240
    while thread.is_alive() and time.monotonic() < deadline:
        try:
            pids = client.run(os.getpid)
            processing = client.processing()
        except Exception:  # a worker is restarting under us: ask again
            time.sleep(0.05)
            continue
        for address, running in processing.items():
            pid = pids.get(address)
            checks = {str(k) for k in running if str(k).startswith("attn-check-")
                      and int(str(k).rsplit("-", 1)[1]) >= since}  # not an earlier test's
            if pid and pid not in killed and checks:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
                keys.update(checks)
        time.sleep(0.02)
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert result.get("grader_failed") is True
    assert "not a problem with your code" in result["report"]["error"]
    assert result["report"]["steps"] == []
    # a check is tried on (1 + ALLOWED_FAILURES) workers per submission, ATTEMPTS submissions;
    # under load the scheduler may run a submission once more (a result lost with a worker
    # before our cancel of it arrived is recomputed: seen once in CI), never without bound
    from attn_practice.grader.host.checks.dask import ALLOWED_FAILURES, ATTEMPTS

    assert len(keys) == ATTEMPTS, keys
    assert ATTEMPTS * (1 + ALLOWED_FAILURES) <= len(killed) <= ATTEMPTS * (2 + ALLOWED_FAILURES)


def test_an_unreachable_scheduler_is_said_plainly_at_start():
    from attn_practice.grader.host.checks.dask import DaskCheckRunner, DaskUnavailable

    with pytest.raises(DaskUnavailable) as info:
        DaskCheckRunner("tcp://127.0.0.1:9", work.host_options(), None, connect_timeout=2)
    assert "tcp://127.0.0.1:9" in str(info.value) and "dask scheduler" in str(info.value)


def test_a_scheduler_that_dies_mid_class_fails_checks_as_grader_failures_not_hangs(tmp_path):
    """A remote scheduler (the `dask` CLI, as an operator runs it) killed while the class runs:
    /readyz's answer turns false and a check ends as a grader failure in bounded time."""
    import socket
    import subprocess
    import sys
    from pathlib import Path

    from attn_practice.grader.host.checks.dask import (
        CHECK_TIMEOUT,
        READY_TTL,
        SCHEDULER_GRACE,
        DaskCheckRunner,
    )

    dask_cli = Path(sys.executable).with_name("dask")
    if not dask_cli.exists():
        pytest.skip("the dask command line is not installed beside this Python")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = f"tcp://127.0.0.1:{port}"
    procs = []
    log = open(tmp_path / "dask.log", "w")  # noqa: SIM115 - closed below
    try:
        procs.append(subprocess.Popen([str(dask_cli), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                       "--no-dashboard"], stdout=log, stderr=log, start_new_session=True))
        procs.append(subprocess.Popen([str(dask_cli), "worker", address, "--nthreads", "1", "--no-dashboard"],
                                      stdout=log, stderr=log, start_new_session=True))
        runner = DaskCheckRunner(address, work.host_options(), None, connect_timeout=30)
        try:
            deadline = time.monotonic() + 60
            while runner._workers() < 1:
                assert time.monotonic() < deadline, "the worker never joined"
                time.sleep(0.2)
            assert runner.ready()
            ok = runner.run(_request("step1", solution_source("step1")))
            assert ok["report"]["steps"][0]["status"] == "passed"
            os.killpg(procs[0].pid, signal.SIGKILL)
            procs[0].wait()
            time.sleep(READY_TTL + 0.1)
            assert not runner.ready()
            t0 = time.monotonic()
            failed = runner.run(_request("step1", solution_source("step1")))
            assert time.monotonic() - t0 < 4 * SCHEDULER_GRACE < CHECK_TIMEOUT
            assert failed.get("grader_failed") is True
            assert "not a problem with your code" in failed["report"]["error"]
            # The operator restarts the scheduler and a worker: checks run again, no server restart.
            procs.append(subprocess.Popen([str(dask_cli), "scheduler", "--host", "127.0.0.1", "--port",
                                           str(port), "--no-dashboard"], stdout=log, stderr=log,
                                          start_new_session=True))
            procs.append(subprocess.Popen([str(dask_cli), "worker", address, "--nthreads", "1",
                                           "--no-dashboard"], stdout=log, stderr=log, start_new_session=True))
            deadline = time.monotonic() + 120
            while True:
                again = runner.run(_request("step1", solution_source("step1")))
                if not again.get("grader_failed"):
                    break
                assert time.monotonic() < deadline, "checks never ran again after the scheduler returned"
            assert again["report"]["steps"][0]["status"] == "passed"
        finally:
            runner.close()
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        log.close()
