"""A batch's pool starts every worker at once, beside the intake (`staff.pool.start`).

A spawning pool starts one worker per task submitted; started with a single ping, the
second worker began its start-up only when the first submission was handed out.
"""

from __future__ import annotations

from attn_practice.grader.staff import pool


def test_every_worker_is_started_with_the_pool_not_with_the_first_submission() -> None:
    started = pool.start(2)
    try:
        assert len(started.pool._processes) == 2  # both spawning before any task was submitted
        assert started.ping.result(timeout=120) is True
        pids = {p.pid for p in started.pool._processes.values()}
        assert len(pids) == 2
    finally:
        started.pool.shutdown(wait=True, cancel_futures=True)
