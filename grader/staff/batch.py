"""Grading many submissions: a pool of workers, each with one warm Engine.

Results stream back as they finish (into the cache, and the progress bar),
and come out in the order the submissions were given. One submission's
failure — even of its worker, whatever its content, depth or size — never
touches another's result: every submission gets a report.

A worker grades many submissions on one fork server, so after each one it
checks that server and rebuilds it if a hostile submission left it changed;
a step the grader itself failed on is graded once more on a fresh one, and
if it fails again the report says so and is never cached (CONTRACT 4.4).
`grade` draws its examples from the course's secret (CONTRACT 4.3).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from attn_practice.grader.course import Course, default_course
from attn_practice.grader.engine.engine import RunOptions, default_steps
from attn_practice.grader.engine.secret import grading_secret, secret_tag
from attn_practice.grader.results import GradeReport
from attn_practice.grader.staff.cache import PLACEHOLDER
from attn_practice.grader.staff.pool import (
    WorkerSetup,
    discard,
    grade_task,
    new_pool,
    start,
    take,
    worker_setup,
)
from attn_practice.grader.staff.worker import batch_engine, grade_with
from attn_practice.grader.staff.worker import grader_error as _grader_error


@dataclass
class GradeRequest:
    submissions: Sequence[Path]
    labels: Sequence[str] | None = None
    course: Course | None = None
    jobs: int | None = None
    use_cache: bool = True
    cache_dir: Path | None = None
    dask_address: str | None = None
    #: `--dask-security FILE`: TLS settings for `dask_address` (see `dask_security.load_security`)
    dask_security: Path | None = None
    progress: bool = False
    #: per submission, the folder graded inside it when the step files sat one level down
    graded_paths: Sequence[str] | None = None
    #: serve no cached report that holds a timeout (`grade --regrade-timeouts`)
    regrade_timeouts: bool = False


def options_for(course: Course, *, secret: str | None = None) -> RunOptions:
    """The engine settings a course asks for; the engine's own defaults otherwise.

    `secret`: the examples' secret (default: the course's `secret_env`, else
    this installation's; see `engine.secret`).
    """
    base = RunOptions()
    course_limits = (replace(base.limits, memory=course.memory_mb * 1024 * 1024)
                     if course.memory_mb else base.limits)
    limits = {sid: replace(course_limits, call_timeout=t) for sid, t in course.timeouts.items()}
    return RunOptions(
        max_examples=course.max_examples or base.max_examples,
        shrink=course.shrink,
        limits=course_limits,
        extra_suites=course.extra_suites,
        points=dict(course.points),
        step_limits=limits,
        secret=secret if secret is not None else grading_secret(course.secret_env),
    )


def step_ids_for(course: Course, submission: Path) -> list[str]:
    steps = course.steps if course.steps is not None else default_steps(submission)
    return [e.id for e in steps]


def worker_pool(options: RunOptions, jobs: int) -> tuple[ProcessPoolExecutor, WorkerSetup]:
    """Processes that each hold one warm Engine built from `options` (see `pool.grade_task`)."""
    return new_pool(jobs), worker_setup(options)


# -- driver --------------------------------------------------------------------
def run_grading(request: GradeRequest) -> list[GradeReport]:
    """Grade every submission; returns reports in the order given.

    Each submission is copied first and the copy is hashed and graded
    (`staff.snapshot`); reports are graded under the cache's PLACEHOLDER and
    attached to their own submission's path on the way out (`staff.cache`).
    """
    from attn_practice.grader.staff.cache import attach, normalise
    from attn_practice.grader.staff.progress import Progress
    from attn_practice.grader.staff.snapshot import Snapshots

    course = request.course or default_course()
    options = options_for(course)
    labels = list(request.labels or [str(p) for p in request.submissions])
    results: dict[int, GradeReport] = {}
    with Snapshots() as snapshots:
        paths, copied = _take_all(snapshots, request.submissions)
        cache, keys = _open_cache(request, course, paths, options.secret)
        keys = [k if ok else None for k, ok in zip(keys, copied, strict=True)]
        todo = []
        for i in range(len(paths)):
            cached = cache.get(keys[i]) if cache is not None and keys[i] else None
            if cached is not None:
                results[i] = cached
            else:
                todo.append(i)
        with Progress(len(paths), enabled=request.progress) as progress:
            for i in results:
                progress.advance(results[i])
            fresh = []
            anonymous = [PLACEHOLDER] * len(paths)
            for i, report in _grade_todo(request, options, course, paths, anonymous, todo):
                results[i] = normalise(report, str(paths[i]))
                fresh.append(i)
                progress.advance(report)
        if cache is not None:
            _confirm_timeouts(options, paths, results, fresh)
            for i in fresh:
                if keys[i]:
                    cache.put(keys[i], results[i])  # refuses what is not `cacheable`
    where = list(request.graded_paths or [""] * len(paths))
    # One total per course (CONTRACT 4.1), cached or fresh, whatever files each held.
    return [replace(course.apply(attach(results[i], labels[i])), graded_path=where[i])
            for i in range(len(paths)) if i in results]


def _take_all(snapshots: Any, sources: Sequence[Path]) -> tuple[list[Path], list[bool]]:
    """A copy of each submission to hash and grade; the original (never cached) if it cannot be copied."""
    paths, copied = [], []
    for source in sources:
        try:
            paths.append(snapshots.take(source))
            copied.append(True)
        except (OSError, ValueError):
            paths.append(Path(source))
            copied.append(False)
    return paths, copied


def _confirm_timeouts(options: RunOptions, paths: list[Path], results: dict[int, GradeReport],
                      fresh: list[int]) -> None:
    """Mark fresh timeouts that overran by a wide margin, so they may be cached (`staff.timeouts`)."""
    from attn_practice.grader.staff.timeouts import confirm, timed_out_steps

    timed = [i for i in fresh if timed_out_steps(results[i])]
    if timed:
        for i, report in zip(timed, confirm(options, [(paths[i], results[i]) for i in timed]), strict=True):
            results[i] = report


def _grade_todo(request: GradeRequest, options: RunOptions, course: Course, paths: list[Path],
                labels: list[str], todo: list[int]) -> Iterator[tuple[int, GradeReport]]:
    jobs = min(request.jobs or os.cpu_count() or 1, len(todo))
    if jobs <= 1 or request.dask_address:
        discard()  # workers started early for a batch that turned out not to need them
    if not todo:
        return
    step_ids = {i: step_ids_for(course, paths[i]) for i in todo}
    if request.dask_address:
        from attn_practice.grader.staff.distributed import grade_on_dask

        security = None
        if request.dask_security is not None:
            if request.dask_address == "local":
                raise RuntimeError("--dask-security is for a scheduler ADDRESS: --dask local makes "
                                   "its own throwaway TLS credentials")
            from attn_practice.grader.staff.dask_security import load_security

            security = load_security(request.dask_security)
        for i, report in grade_on_dask([paths[i] for i in todo], request.dask_address,
                                       step_ids=[step_ids[i] for i in todo], options=options,
                                       labels=[labels[i] for i in todo], security=security,
                                       workers=request.jobs):
            yield todo[i], report
        return
    if len(todo) > 1 and options.persist_examples:
        # Record the suites' examples once (against the reference) so that every
        # worker starts by replaying them instead of each running Hypothesis.
        from attn_practice.grader.engine.warm import warm

        try:
            warm(options.max_examples, secret=options.secret)
        except Exception:  # noqa: BLE001 - only an optimisation: workers record on their own
            pass
    if jobs <= 1:
        yield from _grade_here(options, paths, labels, todo, step_ids)
        return
    if os.geteuid() == 0:  # every sandbox has a uid of its own: no limit is shared
        yield from _grade_pool(options, paths, labels, todo, step_ids, jobs)
        return
    # As an ordinary user every sandbox runs as that user, so the per-user process
    # limit is shared by the submissions graded side by side: a fork storm in one
    # can leave an honest neighbour unable to start a thread. Such reports are
    # graded again, alone, once the pool is done.
    squeezed = []
    for i, report in _grade_pool(options, paths, labels, todo, step_ids, jobs):
        if _short_of_processes(report):
            squeezed.append(i)
        else:
            yield i, report
    yield from _grade_here(options, paths, labels, squeezed, step_ids)


#: What a call or an import says when the user's process limit is spent (threads count too).
_PROCESS_LIMIT_WORDS = ("can't start new thread", "Resource temporarily unavailable",
                        "by the process limit")


def _short_of_processes(report: GradeReport) -> bool:
    """Whether a step failed for want of processes or threads (maybe a neighbour's doing)."""
    return any(word in t.message for s in report.steps if not s.passed for t in s.tests
               for word in _PROCESS_LIMIT_WORDS)


#: A submission in flight when a worker died this many times is reported, not retried.
MAX_WORKER_DEATHS = 2


def _grade_pool(options: RunOptions, paths: list[Path], labels: list[str], todo: list[int],
                step_ids: dict[int, list[str]], jobs: int) -> Iterator[tuple[int, GradeReport]]:
    """Grade `todo` on worker processes; a dead worker's submissions are retried on a new pool.

    Bounded: a submission in flight at MAX_WORKER_DEATHS deaths gets an error report,
    and when workers cannot start here (two pools in a row), the rest is graded in
    this process instead.
    """
    setup = worker_setup(options)
    pending = dict.fromkeys(todo)  # in order; removal O(1) for a class of thousands
    deaths: dict[int, int] = {}
    failed_starts = 0
    while pending:
        if failed_starts >= 2:
            yield from _grade_here(options, paths, labels, list(pending), step_ids)
            return
        started = take(jobs) or start(jobs)
        with started.pool as pool:
            ping = started.ping
            futures: dict[Future[dict[str, Any]], int] = {}
            queue = deque(pending)
            # Keep a bounded number in flight so an interruption loses little.
            while queue or futures:
                while queue and len(futures) < jobs * 2:
                    i = queue.popleft()
                    futures[pool.submit(grade_task, setup, str(paths[i]), labels[i], step_ids[i])] = i
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    i = futures.pop(fut)
                    try:
                        report = GradeReport.from_dict(fut.result())
                    except BrokenProcessPool:
                        broken = True
                        if _failed(ping):
                            continue  # no worker started: not this submission's doing
                        deaths[i] = deaths.get(i, 0) + 1
                        if deaths[i] < MAX_WORKER_DEATHS:
                            continue
                        report = _grader_error(labels[i], f"the grading worker died {deaths[i]} times "
                                                          "while grading this submission")
                    except Exception as exc:  # noqa: BLE001 - one submission never stops the batch
                        report = _grader_error(labels[i], f"{type(exc).__name__}: {exc}")
                    del pending[i]
                    yield i, report
                if broken:
                    break
        failed_starts = failed_starts + 1 if _failed(ping) else 0


def _failed(future: Future[Any]) -> bool:
    try:
        future.result(timeout=0)
    except Exception:  # noqa: BLE001 - broken pool, or not run at all
        return True
    return False


def _grade_here(options: RunOptions, paths: list[Path], labels: list[str], todo: list[int],
                step_ids: dict[int, list[str]]) -> Iterator[tuple[int, GradeReport]]:
    """Grade `todo` one after another with an engine in this process (still sandboxed)."""
    with batch_engine(options, many=len(todo) > 1) as engine:
        for i in todo:
            yield i, grade_with(engine, paths[i], step_ids[i], label=labels[i])


def _open_cache(request: GradeRequest, course: Course, paths: list[Path],
                secret: str | None) -> tuple[Any, list[str | None]]:
    if not request.use_cache:
        return None, [None] * len(paths)
    from attn_practice.grader.staff.cache import ResultsCache, grader_fingerprint

    cache = ResultsCache(request.cache_dir, regrade_timeouts=request.regrade_timeouts).open()
    fingerprint = course.fingerprint or "default"
    version = grader_fingerprint()
    examples = secret_tag(secret)
    keys: list[str | None] = []
    for p in paths:
        try:
            keys.append(cache.key(p, grader_version=version, course_fingerprint=fingerprint,
                                  examples=examples))
        except Exception:  # noqa: BLE001 - a submission that cannot be keyed is graded, not cached
            keys.append(None)
    return cache, keys
