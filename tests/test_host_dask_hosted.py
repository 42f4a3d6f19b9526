"""The whole deployment at once: two `host` processes on one PostgreSQL, checks on a Dask
cluster, a worker killed mid-check and the database restarted during the class.

The Dask cluster is a real scheduler with two single-threaded worker processes
(a LocalCluster here, with the scheduler set to give a check one more worker
after one dies, as README "Deploying past one machine" advises); the host
processes reach it by address, as they would reach a remote one.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from conftest import solution_source
from test_host_pg_processes import Browser, HostProcess

distributed = pytest.importorskip("distributed", reason="Dask is not installed (pip install 'attn-practice[dask]')")
pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow

from pg_cluster import cluster_or_skip  # noqa: E402

NO_SCALE = "import numpy as np\n\ndef scale_scores(scores, d_k):\n    return scores\n"


@pytest.fixture(scope="module")
def dask_cluster():
    import dask

    from attn_practice.grader.host.checks.dask import ALLOWED_FAILURES

    with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None, scheduler_port=0)
    client = distributed.Client(cluster)
    try:
        yield cluster, client
    finally:
        client.close()
        cluster.close()


@pytest.fixture(scope="module")
def class_on_dask(dask_cluster, tmp_path_factory):
    cluster, _ = dask_cluster
    with cluster_or_skip() as pg:
        url = pg.create_database("hosted_dask")
        root = tmp_path_factory.mktemp("dask-class")
        a = HostProcess(root / "a", url, "--dask", cluster.scheduler_address)
        b = None
        try:
            b = HostProcess(root / "b", url, "--dask", cluster.scheduler_address)
            yield pg, a, b
        finally:
            a.stop()
            if b is not None:
                b.stop()


def _check(browser: Browser, proc: HostProcess, step: str) -> dict:
    res = browser.post_json(f"{proc.base}/api/step/{step}/check", {})
    assert res.status_code == 200, res.text
    return res.json()


def test_checks_on_dask_with_a_worker_killed_mid_check_and_the_database_restarted(dask_cluster,
                                                                                 class_on_dask):
    _, client = dask_cluster
    pg, a, b = class_on_dask
    teacher, ada, bo = Browser(), Browser(), Browser()
    try:
        assert teacher.get(b.base + b.teach_path).status_code == 200
        ada.join(a, "Ada")
        bo.join(b, "Bo")
        assert ada.post_json(f"{a.base}/api/step/step1/save",
                             {"content": solution_source("step1"), "base": None}).status_code == 200
        assert bo.post_json(f"{b.base}/api/step/step2/save",
                            {"content": NO_SCALE, "base": None}).status_code == 200

        # Kill the worker that takes Ada's check, the moment it has it.
        pids = client.run(os.getpid)
        killed: list[int] = []

        def killer() -> None:
            deadline = time.monotonic() + 120
            while not killed and time.monotonic() < deadline:
                for address, keys in client.processing().items():
                    if any(str(k).startswith("attn-check-step1") for k in keys) and address in pids:
                        os.kill(pids[address], signal.SIGKILL)
                        killed.append(pids[address])
                        return
                time.sleep(0.01)

        k = threading.Thread(target=killer)
        k.start()
        answers: dict[str, dict] = {}
        bo_thread = threading.Thread(target=lambda: answers.update(bo=_check(bo, b, "step2")))
        bo_thread.start()
        answers["ada"] = _check(ada, a, "step1")
        bo_thread.join(timeout=300)
        k.join(timeout=5)
        assert killed, "the check finished before a worker could be killed"
        assert answers["ada"]["status"] == "passed", answers["ada"]
        assert answers["bo"]["status"] == "failed"
        assert "no-scale" in str(answers["bo"])

        # The database goes away and comes back; the class picture on either process is whole.
        pg.stop("fast")
        assert ada.post_json(f"{a.base}/api/step/step1/save",
                             {"content": "# away\n", "base": None}).status_code == 503
        pg.start()
        deadline = time.monotonic() + 120  # a generous ceiling: each process recovers by itself
        for p, name in ((a, "a"), (b, "b")):
            while teacher.get(p.base + "/teach/api/class").status_code != 200:
                assert time.monotonic() < deadline, f"process {name} never recovered"
                time.sleep(0.2)
        pictures = [teacher.get(p.base + "/teach/api/class").json() for p in (a, b)]
        for picture in pictures:
            text = str(picture)
            assert "Ada" in text and "Bo" in text and "no-scale" in text
        again = _check(ada, b, "step1")  # checks still run on the cluster after all this
        assert again["status"] == "passed"
    finally:
        for person in (teacher, ada, bo):
            person.close()
