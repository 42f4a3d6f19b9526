"""LTI on a class kept in PostgreSQL and served by two `attn-practice host` processes.

A launch through one process is a session in both; a registration made with
`host lti register --db` reaches both; and a queued score is posted once,
though both processes run a score sender on the same outbox.
"""

from __future__ import annotations

import subprocess

import httpx
import pytest
from lti_platform import USERS, Platform, platform_fixture  # noqa: F401 - the `platform` fixture
from pg_cluster import cluster_or_skip
from serve_helpers import wait_until
from test_host_support import HostProcess, console_script
from test_lti_http import launch

from attn_practice.grader.host.store.factory import open_store

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow


def test_two_processes_one_outbox_each_score_posted_once(tmp_path, platform):
    with cluster_or_skip() as cluster:
        url = cluster.create_database("lti_two")
        data = tmp_path / "class"
        done = subprocess.run([console_script(), "host", "lti", "register", str(data), "--db", url,
                               *platform.register_args()], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        one = HostProcess(data, "--db", url)
        two = None
        try:
            two = HostProcess(data, "--db", url)
            platform.tool_base = one.base
            ann = httpx.Client(timeout=60)
            assert launch(one, platform, "ann", client=ann).status_code == 200
            # the session is the class's, not the process's
            assert ann.get(f"{two.base}/api/summary").json()["learner"] == "Ann Lee"
            store = open_store(url, data)
            try:
                learner = store.lti_learner(platform.issuer, USERS["ann"]["sub"])
                link = store.lti_links(learner.id)[0]
                for given in (1.0, 2.0, 3.0):  # as three checks in a row would queue them
                    store.enqueue_lti_score(link.id, learner.id, given, 5.0, False)
                assert wait_until(lambda: len(platform.scores) >= 3 and not store.unsent_lti_scores(),
                                  timeout=90), platform.scores
            finally:
                store.close()
            assert [s["body"]["scoreGiven"] for s in platform.scores] == [1.0, 2.0, 3.0]
        finally:
            one.stop()
            if two is not None:
                two.stop()
