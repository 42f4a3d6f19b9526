"""One learner's requests never stall anyone else's (issue 35, class 1), through the real server
(its SQLite store, and PostgreSQL started by the tests).

A learner whose code sleeps opens sixty widget requests at once: one is
computed, the rest are answered 429 at once, and meanwhile a classmate's page,
their summary and /healthz answer before that one slow widget does (the
order is what is checked, never a time). A learner holds a few event streams,
not thousands; hints are rate limited like saves.
"""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
from pg_cluster import cluster_or_skip
from test_host_support import HostProcess

httpx = pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow

SLEEPY_STEP1 = '''import time

import numpy as np


def dot_scores(Q, K):
    time.sleep(6)
    return np.einsum("...qd,...kd->...qk", Q, K)
'''
FLOOD = 60
_names = itertools.count()


@pytest.fixture(scope="module")
def cluster():
    with cluster_or_skip() as c:
        yield c


@pytest.fixture(params=["sqlite", "postgres"])
def host(request, tmp_path):
    extra: tuple[str, ...] = ()
    if request.param == "postgres":
        extra = ("--db", request.getfixturevalue("cluster").create_database(f"stall_{next(_names)}"))
    proc = HostProcess(tmp_path / "class", *extra)
    try:
        yield proc
    finally:
        proc.stop()


def _twin(host: HostProcess, client) -> httpx.Client:
    """Another connection of the same browser (its cookies), as a page's parallel requests are."""
    twin = host.client()
    twin.cookies = client.cookies
    return twin


def test_sixty_slow_widgets_from_one_learner_stall_no_one_else(host):
    attacker, token, _ = host.join("Sleepy")
    code = SLEEPY_STEP1 + f"# {uuid.uuid4()}\n"  # code no worker has seen: its calls really sleep
    r = attacker.post("/api/step/step1/save", json={"content": code}, headers={"X-Attn-Token": token})
    assert r.status_code == 200, r.text
    classmate, _, _ = host.join("Honest")
    outsider = host.client()
    done: list[tuple[float, int]] = []
    lock = threading.Lock()
    twins = [_twin(host, attacker) for _ in range(FLOOD)]  # made before: a client costs CPU to make
    start = threading.Barrier(FLOOD + 1)

    def widget(i: int) -> None:
        start.wait()
        got = twins[i].get("/api/widget/scale", params={"d_k": str(8 + i)})
        with lock:
            done.append((time.monotonic(), got.status_code))

    pool = ThreadPoolExecutor(FLOOD)
    try:
        flood = [pool.submit(widget, i) for i in range(FLOOD)]
        start.wait()
        deadline = time.monotonic() + 120
        while len(done) < FLOOD - 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        for path in ("/", "/api/summary", "/api/step/step2"):
            assert classmate.get(path).status_code == 200, path
        assert outsider.get("/healthz").status_code == 200
        classmate_done = time.monotonic()
        for f in flood:
            f.result(timeout=120)
    finally:
        pool.shutdown(wait=True)
        for c in twins:
            c.close()
    codes = [code for _, code in done]
    # one call computed on the sleeping code; every other one was 429 at once, before it ended
    assert codes.count(200) == 1 and codes.count(429) == FLOOD - 1, done
    (slow_done,) = [at for at, code in done if code == 200]
    assert all(at < slow_done for at, code in done if code == 429)
    # and the classmate and /healthz were answered meanwhile, not after it
    assert classmate_done < slow_done


def test_a_learner_holds_a_few_event_streams_not_thousands(host):
    learner, _, _ = host.join("Tabs")
    opened, refused = [], []
    streams = []
    try:
        for _ in range(12):
            c = _twin(host, learner)
            cm = c.stream("GET", "/api/events", timeout=30)
            r = cm.__enter__()
            streams.append((c, cm))
            (opened if r.status_code == 200 else refused).append(r)
        assert 1 <= len(opened) <= 6 and refused, (len(opened), len(refused))
        assert all(r.status_code == 429 and r.headers.get("retry-after") for r in refused)
        classmate, _, _ = host.join("Other")
        with _twin(host, classmate).stream("GET", "/api/events", timeout=30) as mine:
            assert mine.status_code == 200  # the cap is per learner, not the class's
    finally:
        for c, cm in streams:
            cm.__exit__(None, None, None)
            c.close()
    # closed streams give their places back
    deadline = time.monotonic() + 60
    while True:
        with _twin(host, learner).stream("GET", "/api/events", timeout=30) as again:
            if again.status_code == 200 or time.monotonic() > deadline:
                break
        time.sleep(0.5)
    assert again.status_code == 200


@pytest.mark.parametrize("action", ["hint", "reset", "save"])
def test_every_learner_write_is_rate_limited(host, action):
    learner, token, _ = host.join("Writer")
    body = {"content": "x = 1\n"} if action == "save" else {}
    answers = [learner.post(f"/api/step/step1/{action}", json=body, headers={"X-Attn-Token": token})
               for _ in range(80)]
    codes = [r.status_code for r in answers]
    assert 429 in codes and 200 in codes, codes
    assert set(codes) <= {200, 429}, codes
    refused = next(r for r in answers if r.status_code == 429)
    assert int(refused.headers["retry-after"]) >= 1 and "nothing was lost" in refused.json()["error"]
    other, other_token, _ = host.join("Unhurried")  # the limit is the learner's, not the class's
    assert other.post(f"/api/step/step1/{action}", json=body,
                      headers={"X-Attn-Token": other_token}).status_code == 200
