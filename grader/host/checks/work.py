"""The worker side of a hosted check: plain data in, plain data out, anywhere.

Runs in a pool process (local) or on a Dask worker: `check_files` grades one
step of a learner's in-memory files with this process's warm Engine (the
files never touch disk: the sandbox is handed their bytes), then computes the
worked example through the same sandboxes and renders it. Nothing here is
specific to the host's web side; it needs only the engine.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.staff.spawn import leave_interrupts_to_the_parent

_ENGINE: Engine | None = None
_OPTIONS: RunOptions | None = None
#: a stand-in submission path; the files come from memory and no path is ever shown
SUBMISSION = Path("/attn-practice-hosted")


def host_options(course: Any = None) -> RunOptions:
    """A learner's check as `check` runs it, with the course's limits and points (no secret)."""
    from attn_practice.grader.staff.batch import options_for

    base = RunOptions(speed_notes=True)
    if course is None:
        return base
    graded = options_for(course, secret="")
    return replace(base, limits=graded.limits, step_limits=graded.step_limits, points=graded.points,
                   max_examples=graded.max_examples, extra_suites=())


def init_worker(options: RunOptions, server_pid: int | None = None) -> None:
    """Pool initialiser: one warm engine per worker process, which dies with the server.

    A server killed with -9 must not leave its checking workers (and their
    sandboxes) behind: a watcher thread ends the worker once its server is
    gone, even if that happened while the worker was still starting
    (`server_pid` is the server's, passed in, not read after the fact).
    Not PR_SET_PDEATHSIG: it fires when the *thread* that started the worker
    ends, and pool workers are started by whichever thread submitted first.
    """
    global _ENGINE, _OPTIONS
    if server_pid is not None:  # a local pool's worker (a Dask worker's life is Dask's business)
        leave_interrupts_to_the_parent()  # Ctrl-C stops the server, which closes this pool
        _die_with_parent(server_pid)
    _yield_to_the_server()
    _OPTIONS = options
    _ENGINE = Engine(options)


def engine(options: RunOptions | None = None) -> Engine:
    """This process's engine (started on first use, e.g. on a Dask worker)."""
    global _ENGINE
    if _ENGINE is None:
        init_worker(options or _OPTIONS or RunOptions(speed_notes=True))
    assert _ENGINE is not None
    return _ENGINE


def check_files(step: str, files: dict[str, str], known_failing: frozenset[str] = frozenset(),
                known_unchecked: frozenset[str] = frozenset(),
                options: RunOptions | None = None) -> dict[str, Any]:
    """Grade `step` on `files` (name -> text); the report and worked example as plain data."""
    from attn_practice.grader.staff.batch import grade_with
    from attn_practice.grader.teaching.web.render import worked_example_html
    from attn_practice.grader.teaching.worked_example import rows_after_check

    t0 = time.perf_counter()
    eng = engine(options)
    eng.options = replace(eng.options, known_failing=frozenset(known_failing) - {step},
                          known_unchecked=frozenset(known_unchecked) - {step})
    data = {name: text.encode("utf-8") for name, text in files.items()}
    report = grade_with(eng, SUBMISSION, [step], label="", files=data)
    worked = ""
    if not report.error:
        try:
            worked = worked_example_html(list(rows_after_check(report, SUBMISSION, eng.launcher,
                                                               files=data)))
        except Exception:  # noqa: BLE001 - a teaching aid never breaks a check
            worked = ""
    return {"report": report.to_dict(), "worked_html": worked,
            "seconds": round(time.perf_counter() - t0, 3)}


def _die_with_parent(parent: int) -> None:
    import os
    import threading

    def gone() -> bool:
        return os.getppid() != parent

    def stop() -> None:
        if _ENGINE is not None:
            try:
                _ENGINE.close()  # its sandboxes and zygote go too
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
        os._exit(1)

    if gone():
        stop()

    def watch() -> None:
        while not gone():
            time.sleep(0.5)
        stop()

    threading.Thread(target=watch, name="attnp-parent-watch", daemon=True).start()


#: niceness of a checking worker (and so of its sandboxes): pages and saves go first
WORKER_NICE = 5


def _yield_to_the_server() -> None:
    """Checks take whole seconds of CPU; a save or a page takes milliseconds. On a shared
    machine the server's answers should not wait behind a check, so workers run niced."""
    import os

    try:
        os.nice(WORKER_NICE)
    except OSError:
        pass
