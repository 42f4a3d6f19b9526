"""Each grading worker, with its fork server and sandboxes, on a core of its own (`staff.affinity`).

Seen the way it matters: the learner's own code, run in a sandbox by `grade --jobs 2`,
prints the cores it may run on. The speed it buys is measured in bench/, never here.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import run_script
from test_grade import make_submission

from attn_practice.grader.staff import affinity

USABLE = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
needs_two_cores = pytest.mark.skipif(not 2 <= len(USABLE) <= 8,
                                     reason="pinning needs two usable cores (and a worker per core, at most 8 here)")

PRINTS_ITS_CORES = 'import os\nprint("cores", sorted(os.sched_getaffinity(0)))\n'


def _cores_seen(tmp_path: Path, jobs: int, env: dict[str, str] | None = None, *extra: str) -> list[list[int]]:
    """Grade four submissions whose step 3 prints its cores; the cores each one printed."""
    subs = []
    for i in range(4):
        sub = make_submission(tmp_path / f"s{i}")
        (sub / "step3_softmax.py").write_text((sub / "step3_softmax.py").read_text() + PRINTS_ITS_CORES)
        subs.append(str(sub))
    out = tmp_path / f"report-{jobs}.json"
    res = run_script(["grade", *subs, "--format", "json", "--no-cache", "--jobs", str(jobs), "--out", str(out),
                      *extra], cwd=tmp_path, env=env)
    assert res.exit_code == 0, res
    seen = []
    for report in json.loads(out.read_text()):
        (step3,) = [s for s in report["steps"] if s["id"] == "step3"]
        assert step3["status"] == "passed", step3
        found = re.search(r"cores \[([\d, ]+)\]", step3["output"])
        assert found, step3["output"]
        seen.append([int(c) for c in found.group(1).split(",")])
    return seen


@needs_two_cores
def test_each_worker_s_sandboxes_run_on_one_core_of_its_own(tmp_path: Path) -> None:
    seen = _cores_seen(tmp_path, len(USABLE))
    assert all(len(cores) == 1 and cores[0] in USABLE for cores in seen), seen


@needs_two_cores
def test_a_local_dask_cluster_s_workers_each_grade_on_one_core(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    seen = _cores_seen(tmp_path, len(USABLE), None, "--dask", "local")
    assert all(len(cores) == 1 and cores[0] in USABLE for cores in seen), seen


@needs_two_cores
def test_pinning_can_be_turned_off(tmp_path: Path) -> None:
    assert all(cores == USABLE for cores in _cores_seen(tmp_path, len(USABLE), env={affinity.PIN_ENV: "0"}))


@pytest.mark.skipif(not 3 <= len(USABLE) <= 8, reason="needs a core more than the two workers")
def test_fewer_workers_than_cores_are_left_to_the_scheduler(tmp_path: Path) -> None:
    assert all(cores == USABLE for cores in _cores_seen(tmp_path, 2))


@needs_two_cores
def test_more_workers_than_cores_are_left_to_the_scheduler(tmp_path: Path) -> None:
    assert all(cores == USABLE for cores in _cores_seen(tmp_path, len(USABLE) + 1))


def test_cores_are_handed_out_only_when_there_is_one_worker_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2, 5, 7}, raising=False)
    monkeypatch.delenv(affinity.PIN_ENV, raising=False)
    assert affinity.cores_for(3) == [2, 5, 7]
    assert affinity.cores_for(2) is None  # fewer workers than cores: a second run beside would share them
    assert affinity.cores_for(4) is None  # more workers than cores
    assert affinity.cores_for(1) is None  # one worker: nothing to keep apart
    monkeypatch.setenv(affinity.PIN_ENV, "0")
    assert affinity.cores_for(2) is None


def test_a_worker_without_a_core_left_runs_where_the_scheduler_puts_it() -> None:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    assert affinity.pin_from(None) is None
    empty = context.Queue()
    assert affinity.pin_from(empty) is None  # waits briefly, then leaves the affinity alone


@pytest.mark.slow
def test_a_local_dask_cluster_leaves_no_core_list_behind(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core list is for the cluster's own workers: taken back once they started, as it was."""
    pytest.importorskip("distributed", reason="the dask extra is not installed")
    from attn_practice.grader.staff import distributed

    for before in (None, "7"):
        if before is None:
            monkeypatch.delenv(affinity.DASK_CORES_ENV, raising=False)
        else:
            monkeypatch.setenv(affinity.DASK_CORES_ENV, before)
        with distributed._connect("local", None, workers=1) as client:
            assert os.environ.get(affinity.DASK_CORES_ENV) == before
            assert len(client.scheduler_info()["workers"]) == 1
        assert os.environ.get(affinity.DASK_CORES_ENV) == before
