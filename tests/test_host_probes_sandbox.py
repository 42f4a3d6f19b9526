"""Probes: learner code in checks and widgets stays in its sandbox and holds no one up.

A learner's step file, run by a check and by the widgets, tries what a
curious learner would: read the class's database and the server's process
(to reach classmates' work), connect back to the server, write outside its
workspace, fork, sleep on every call, flood its output. Each attempt is
refused or bounded; the class's database and the server's files are not
reached; an honest classmate's check still passes and /healthz answers.
"""

from __future__ import annotations

import concurrent.futures
import html
from pathlib import Path

import pytest
from host_probes import Learner, running_host
from test_host_support import implementation

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow

SECRET = "ADA_SECRET_WORK_51b2"

PRYING = r'''
import os, socket

def dot_scores(Q, K):
    found = []
    for attempt in (
        lambda: open(DATA + "/class.sqlite3", "rb").read().count(SECRET.encode()),
        lambda: os.listdir(DATA),
        lambda: open("/proc/%d/cmdline" % os.getppid(), "rb").read()[:200],
        lambda: os.listdir("/proc/%d/cwd" % os.getppid()),
        lambda: open("/proc/%d/environ" % os.getppid(), "rb").read()[:200],
        lambda: socket.create_connection(("127.0.0.1", PORT), timeout=2).recv(1),
        lambda: open(PLANT, "w").write("planted"),
        lambda: [e.name for e in os.scandir(DATA)],
    ):
        try:
            found.append(("GOT", attempt()))
        except Exception as exc:
            found.append(type(exc).__name__)
    raise RuntimeError("PROBE " + repr(found))
'''


def _prying(data: Path, port: int, plant: Path) -> str:
    return (f"DATA = {str(data)!r}\nPORT = {port}\nPLANT = {str(plant)!r}\nSECRET = {SECRET[::-1]!r}[::-1]\n"
            + PRYING)


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    with running_host(tmp_path_factory.mktemp("sandbox") / "class") as h:
        yield h


def test_a_check_reaches_no_database_process_network_or_file_outside(host, tmp_path):
    ada, eve = Learner(host, "Ada"), Learner(host, "Eve")
    assert ada.save("step1", f"# {SECRET}\n" + implementation("step1", "correct_einsum")).status_code == 200
    plant = tmp_path / "planted.txt"
    assert eve.save("step1", _prying(host.data_dir, host.port, plant)).status_code == 200
    r = eve.post("/api/step/step1/check")
    assert r.status_code == 200, r.text
    text = html.unescape(r.json()["html"])
    assert "PROBE" in text, text[:2000]
    assert "'GOT'" not in text, text[text.find("PROBE"):][:1000]
    assert SECRET not in r.text and not plant.exists()
    assert host.client().get("/healthz").status_code == 200


def test_widgets_on_prying_code_reach_nothing_either(host, tmp_path):
    eve = Learner(host, "Widget Eve")
    plant = tmp_path / "planted-widget.txt"
    assert eve.save("step1", _prying(host.data_dir, host.port, plant)).status_code == 200
    for name, query in (("heatmap", ""), ("example", "?q=1"), ("scale", "?d_k=4")):
        r = eve.client.get(f"/api/widget/{name}{query}")
        assert r.status_code < 500, (name, r.status_code, r.text[:300])
        assert SECRET not in r.text and "'GOT'" not in r.text
    assert not plant.exists()


SLEEPER = ("import os, time\n\ndef dot_scores(Q, K):\n    try:\n        os.fork()\n    except OSError:\n"
           "        pass\n    print('x' * 200000)\n    time.sleep(1.5)\n    return Q @ K.swapaxes(-1, -2)\n")


def test_code_that_sleeps_forks_and_floods_holds_no_honest_learner_up(host):
    sleepers = [Learner(host, f"Sleeper {i}") for i in range(2)]
    honest = Learner(host, "Honest")
    for s in sleepers:
        assert s.save("step1", SLEEPER).status_code == 200
    assert honest.save("step1", implementation("step1", "correct_einsum")).status_code == 200
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        slow = [pool.submit(s.post, "/api/step/step1/check") for s in sleepers]
        widgets = [pool.submit(s.client.get, "/api/widget/heatmap") for s in sleepers for _ in range(3)]
        mine = honest.post("/api/step/step1/check")
        assert mine.status_code == 200 and mine.json()["status"] == "passed", mine.text[:500]
        assert host.client().get("/healthz").status_code == 200
        for f in slow:
            r = f.result(timeout=600)
            assert r.status_code in (200, 429), r.text[:300]
            if r.status_code == 200:
                assert r.json()["status"] != "passed"  # a budget ran out: it says so, it does not pass
        codes = sorted(f.result(timeout=600).status_code for f in widgets)
        assert all(c in (200, 400, 429, 503, 504) for c in codes), codes
        assert codes.count(429) >= 2, codes  # one widget call in flight per learner


def test_dask_run_checks_stay_in_the_sandbox_too(tmp_path):
    pytest.importorskip("distributed", reason="dask is not installed (pip install '.[dask]')")
    with running_host(tmp_path / "class", "--dask", "local") as h:
        ada, eve = Learner(h, "Ada"), Learner(h, "Eve")
        assert ada.save("step1", f"# {SECRET}\n" + implementation("step1", "correct_einsum")).status_code == 200
        plant = tmp_path / "planted-dask.txt"
        assert eve.save("step1", _prying(h.data_dir, h.port, plant)).status_code == 200
        r = eve.post("/api/step/step1/check")
        assert r.status_code == 200, r.text
        text = html.unescape(r.json()["html"])
        assert "PROBE" in text and "'GOT'" not in text, text[text.find("PROBE"):][:1000]
        assert SECRET not in r.text and not plant.exists()
