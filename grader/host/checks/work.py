"""The worker side of a hosted check: plain data in, plain data out, anywhere.

Runs in a pool process (local) or on a Dask worker: `check_files` grades one
step of a learner's in-memory files with this process's warm Engine (the
files never touch disk: the sandbox is handed their bytes), then computes the
worked example through the same sandboxes and renders it. Nothing here is
specific to the host's web side; it needs only the engine.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.engine.session import SuiteRunner, SuiteSession
from attn_practice.grader.sandbox.launcher import Limits
from attn_practice.grader.staff.spawn import leave_interrupts_to_the_parent

_ENGINE: Engine | None = None
_OPTIONS: RunOptions | None = None
_CHECKS = 0
#: Wall seconds one check may spend in the learner's code, sleeping included (issue 35): a
#: check that does nothing still ends, as a timeout, and frees its worker for the next learner.
CHECK_BUDGET = 12.0
#: what else this worker holds that must end with it (called when its server is gone)
AT_EXIT: list[Callable[[], None]] = []
#: a stand-in submission path; the files come from memory and no path is ever shown
SUBMISSION = Path("/attn-practice-hosted")
#: (report, files) -> (the worked example's rows, more of the result): see `check_files`
Teaching = Callable[[Any, dict[str, str]], tuple[Sequence[Any], dict[str, Any]]]


def host_options(course: Any = None) -> RunOptions:
    """A learner's check at batch cost, with the course's limits and points (no secret).

    As `check` runs it (public examples, speed notes, diagnoses), except that a
    failing test reports the smallest failing recorded example, as `grade`
    does, instead of shrinking one with Hypothesis per check: shrinking was
    three quarters of a mistake's check, paid again for every learner making
    it, and a lab of 200 cannot afford it (issue 40). Just as deterministic;
    the recordings start from the smallest shapes, so the example shown is
    as small in nearly every case, and the diagnosis is the same.
    """
    from attn_practice.grader.staff.batch import options_for

    base = RunOptions(speed_notes=True, shrink=False)
    base = replace(base, limits=budgeted(base.limits))
    if course is None:
        return base
    graded = options_for(course, secret="")
    return replace(base, limits=budgeted(graded.limits), points=graded.points,
                   step_limits={sid: budgeted(lim) for sid, lim in graded.step_limits.items()},
                   max_examples=graded.max_examples, extra_suites=())


def budgeted(limits: Limits, seconds: float = CHECK_BUDGET) -> Limits:
    """`limits` with a hosted check's own wall-clock budget over all its calls (see `Budget`),
    and each call's limit counted on the sandbox's CPU clock: in a full lab a right function
    kept waiting for a core is not told it timed out (an endless loop still is, after the same
    CPU seconds, and the check's wall budget still ends one that only sleeps)."""
    return replace(limits, step_timeout=min(limits.step_timeout, seconds),
                   submission_timeout=min(limits.submission_timeout, seconds), cpu_clock=True)


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
    _ENGINE = _warm_engine(options)


def _warm_engine(options: RunOptions) -> Engine:
    """The batch path's engine: one pytest session collected for every check this worker runs."""
    from attn_practice.grader.staff.worker import batch_engine

    return batch_engine(options)


def warm_up() -> dict[str, Any]:
    """Collect the session and fill the example store now, so no learner's check pays for it."""
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.engine.warm import warm

    eng = engine()
    if SuiteSession.collected == 0:
        warm(eng.options.max_examples)
        eng.replay = type(eng.replay)(eng.replay.store, secret=eng.replay.secret)
        eng.suites.replay = eng.replay
        stubs = {e.file: e.stub_source() for e in load_catalog()}
        global _CHECKS
        check_files("step1", stubs)  # collects the session (a stub fails at once)
        _CHECKS -= 1  # not a learner's
    return worker_stats()


def worker_stats() -> dict[str, Any]:
    """What this worker paid for: pytest collections (one when warm) and checks run."""
    import os

    return {"pid": os.getpid(), "collections": SuiteSession.collected + SuiteRunner.fresh_runs,
            "checks": _CHECKS}


def engine(options: RunOptions | None = None) -> Engine:
    """This process's engine (started on first use, e.g. on a Dask worker)."""
    global _ENGINE
    if _ENGINE is None:
        init_worker(options or _OPTIONS or RunOptions(speed_notes=True))
    assert _ENGINE is not None
    return _ENGINE


def check_files(step: str, files: dict[str, str], known_failing: frozenset[str] = frozenset(),
                known_unchecked: frozenset[str] = frozenset(),
                options: RunOptions | None = None,
                unchanged: frozenset[str] | None = None,
                teaching: Teaching | None = None) -> dict[str, Any]:
    """Grade `step` on `files` (name -> text); the report and worked example as plain data.

    `unchanged`: the steps whose code has not changed since their last result
    (the server knows). Given, the steps `step` imports that are not among
    them are graded first, and their reports come back under "imports" (step
    id -> report), to be stored as their latest results; None: `step` alone.
    `teaching(report, files)`: the worked example's rows and anything else to
    send back with the report (`widget_work.check_files`: the page's widgets,
    on one sandbox with the rows); None: the rows on the engine's own sandboxes.
    """
    from attn_practice.grader.host.checks.imports import to_grade_first
    from attn_practice.grader.staff.batch import grade_with
    from attn_practice.grader.teaching.web.render import worked_example_html
    from attn_practice.grader.teaching.worked_example import rows_after_check

    global _CHECKS
    t0 = time.perf_counter()
    _CHECKS += 1
    eng = engine(options)
    failing = frozenset(known_failing) - {step}
    unchecked = frozenset(known_unchecked) - {step}
    data = {name: text.encode("utf-8") for name, text in files.items()}
    imports: dict[str, Any] = {}
    first = to_grade_first(step, files, unchanged) if unchanged is not None else []
    if first:
        eng.options = replace(eng.options, known_failing=failing - set(first),
                              known_unchecked=unchecked - set(first))
        before = grade_with(eng, SUBMISSION, first, label="", files=data)
        if not before.error and not before.grader_failed:
            for s in before.steps:
                imports[s.id] = replace(before, steps=(s,)).to_dict()
            failing = (failing - set(first)) | {s.id for s in before.steps if not s.passed}
            unchecked = unchecked - set(first)
    eng.options = replace(eng.options, known_failing=failing, known_unchecked=unchecked)
    report = grade_with(eng, SUBMISSION, [step], label="", files=data)
    worked, extra = "", {}
    if not report.error:
        try:
            if teaching is None:
                rows = rows_after_check(report, SUBMISSION, eng.launcher, files=data)
            else:
                rows, extra = teaching(report, files)
            worked = worked_example_html(list(rows))
        except Exception:  # noqa: BLE001 - a teaching aid never breaks a check
            worked = ""
    return {**extra, "report": report.to_dict(), "worked_html": worked, "imports": imports,
            "seconds": round(time.perf_counter() - t0, 3)}


def _die_with_parent(parent: int) -> None:
    import os
    import threading

    def gone() -> bool:
        return os.getppid() != parent

    def stop() -> None:
        for hook in AT_EXIT:  # e.g. the widgets' sandboxes and fork server (`widget_work`)
            try:
                hook()
            except Exception:  # noqa: BLE001 - exiting anyway
                pass
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
