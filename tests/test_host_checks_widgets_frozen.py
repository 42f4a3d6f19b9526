"""Warm widget sandboxes hold no running learner code between calls (issue 35 item 2).

A learner's step file starts a thread that spins forever at import; after a widget answer
its kept sandboxes are frozen (their CPU time does not move), and the next widget call
thaws them and answers as before. Real sandboxes and fork server, in this process acting
as a check worker.
"""

from __future__ import annotations

import time

import pytest
from conftest import solution_source

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.host.checks import widget_work, work

SPINNER = ("import threading\n\n"
           "def _spin():\n    while True:\n        pass\n\n"
           "threading.Thread(target=_spin, daemon=True).start()\n\n")


def cpu_ticks(pid: int) -> int:
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, all threads


@pytest.mark.slow
def test_kept_widget_sandboxes_are_frozen_between_calls():
    work.init_worker(work.host_options())
    try:
        files = {e.file: solution_source(e.id) for e in load_catalog()[:5]}
        files["step1_scores.py"] = SPINNER + files["step1_scores.py"]
        first = widget_work.widget_files("scale", (16,), files)
        fns = widget_work._functions[widget_work.files_hash(files)]
        pids = widget_work.sandbox_pids(fns)
        assert len(pids) == 1  # the five steps load into one sandbox (issue 40)
        before = {p: cpu_ticks(p) for p in pids}
        time.sleep(1.0)  # a spinning thread would use ~100 ticks meanwhile
        after = {p: cpu_ticks(p) for p in pids}
        assert after == before, (before, after)
        # thawed for the next call, which answers as the first did (a new parameter: no cache)
        second = widget_work.widget_files("scale", (32,), files)
        assert widget_work.sandbox_pids(fns) == pids
        assert second.keys() == first.keys()
    finally:
        widget_work.close()
        if work._ENGINE is not None:
            work._ENGINE.close()
            work._ENGINE = None
