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

import itertools
import os
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from attn_practice.grader.staff.taking import Keyer


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
    (`staff.snapshot`; the copies are taken on a thread, ahead of the workers:
    `staff.taking`); reports are graded under the cache's PLACEHOLDER and
    attached to their own submission's path on the way out (`staff.cache`).
    """
    from attn_practice.grader.staff.cache import attach, normalise
    from attn_practice.grader.staff.progress import Progress
    from attn_practice.grader.staff.snapshot import Snapshots
    from attn_practice.grader.staff.taking import Taken

    course = request.course or default_course()
    options = options_for(course)
    labels = list(request.labels or [str(p) for p in request.submissions])
    results: dict[int, GradeReport] = {}
    cache, keyer = _open_cache(request, course, options.secret)
    # Copies are taken (and hashed) on a thread while the first ones are graded (`staff.taking`).
    with Snapshots() as snapshots, Taken(snapshots, request.submissions, keyer) as paths:
        with Progress(len(paths), enabled=request.progress) as progress:

            def todo() -> Iterator[int]:
                """The submissions to grade, in order; a cached one is served on the way."""
                for i in range(len(paths)):
                    key = paths.key(i)
                    cached = cache.get(key) if cache is not None and key else None
                    if cached is None:
                        yield i
                    else:
                        results[i] = cached
                        progress.advance(cached)

            fresh = []
            anonymous = [PLACEHOLDER] * len(paths)
            for i, report in _grade_todo(request, options, course, paths, anonymous, todo()):
                results[i] = normalise(report, str(paths[i]))
                fresh.append(i)
                progress.advance(report)
        if cache is not None:
            _confirm_timeouts(options, paths, results, fresh)
            for i in fresh:
                key = paths.key(i)
                if key:
                    cache.put(key, results[i])  # refuses what is not `cacheable`
    where = list(request.graded_paths or [""] * len(paths))
    # One total per course (CONTRACT 4.1), cached or fresh, whatever files each held.
    return [replace(course.apply(attach(results[i], labels[i])), graded_path=where[i])
            for i in range(len(paths)) if i in results]


def _confirm_timeouts(options: RunOptions, paths: Sequence[Path], results: dict[int, GradeReport],
                      fresh: list[int]) -> None:
    """Mark fresh timeouts that overran by a wide margin, so they may be cached (`staff.timeouts`)."""
    from attn_practice.grader.staff.timeouts import confirm, timed_out_steps

    timed = [i for i in fresh if timed_out_steps(results[i])]
    if timed:
        for i, report in zip(timed, confirm(options, [(paths[i], results[i]) for i in timed]), strict=True):
            results[i] = report


def _grade_todo(request: GradeRequest, options: RunOptions, course: Course, paths: Sequence[Path],
                labels: list[str], todo: Iterator[int]) -> Iterator[tuple[int, GradeReport]]:
    """Grade the submissions `todo` yields (lazily: their copies may still be on the way)."""
    first = list(itertools.islice(todo, 2))  # none: nothing to start; one: nothing to share
    jobs = min(request.jobs or os.cpu_count() or 1, len(paths))
    here = jobs <= 1 or len(first) < 2  # one at a time, in this process
    if here or request.dask_address:
        discard()  # workers started early for a batch that turned out not to need them
    if not first:
        return
    todo = itertools.chain(first, todo)
    step_ids = _StepIds(course, paths)
    if request.dask_address:
        from attn_practice.grader.staff.distributed import grade_on_dask

        security = None
        if request.dask_security is not None:
            if request.dask_address == "local":
                raise RuntimeError("--dask-security is for a scheduler ADDRESS: --dask local makes "
                                   "its own throwaway TLS credentials")
            from attn_practice.grader.staff.dask_security import load_security

            security = load_security(request.dask_security)
        chosen = list(todo)
        for i, report in grade_on_dask([paths[i] for i in chosen], request.dask_address,
                                       step_ids=[step_ids[i] for i in chosen], options=options,
                                       labels=[labels[i] for i in chosen], security=security,
                                       workers=request.jobs):
            yield chosen[i], report
        return
    if len(first) > 1 and options.persist_examples:
        # Record the suites' examples once (against the reference) so that every
        # worker starts by replaying them instead of each running Hypothesis.
        from attn_practice.grader.engine.warm import warm

        try:
            warm(options.max_examples, secret=options.secret)
        except Exception:  # noqa: BLE001 - only an optimisation: workers record on their own
            pass
    if here:
        yield from _grade_here(options, paths, labels, list(todo), step_ids)
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


class _StepIds(dict):  # type: ignore[type-arg]
    """Submission index -> the ids of the steps it is graded on, looked up when first asked."""

    def __init__(self, course: Course, paths: Sequence[Path]):
        super().__init__()
        self.course, self.paths = course, paths

    def __missing__(self, i: int) -> list[str]:
        self[i] = step_ids_for(self.course, self.paths[i])
        return self[i]


#: What a call or an import says when the user's process limit is spent (threads count too).
_PROCESS_LIMIT_WORDS = ("can't start new thread", "Resource temporarily unavailable",
                        "by the process limit")


def _short_of_processes(report: GradeReport) -> bool:
    """Whether a step failed for want of processes or threads (maybe a neighbour's doing)."""
    return any(word in t.message for s in report.steps if not s.passed for t in s.tests
               for word in _PROCESS_LIMIT_WORDS)


#: A submission in flight when a worker died this many times is reported, not retried.
MAX_WORKER_DEATHS = 2


def _grade_pool(options: RunOptions, paths: Sequence[Path], labels: list[str], todo: Iterable[int],
                step_ids: Mapping[int, list[str]], jobs: int) -> Iterator[tuple[int, GradeReport]]:
    """Grade `todo` on worker processes; a dead worker's submissions are retried on a new pool.

    `todo` is drawn as workers free up (a few in flight), so grading starts while the
    class is still being copied. Bounded: a submission in flight at MAX_WORKER_DEATHS
    deaths gets an error report, and when workers cannot start here (two pools in a
    row), the rest is graded in this process instead.
    """
    setup = worker_setup(options)
    source = iter(todo)
    pending: dict[int, None] = {}  # drawn, not yet reported (in order; removal O(1))
    drawn_all = False
    deaths: dict[int, int] = {}
    failed_starts = 0
    while pending or not drawn_all:
        if failed_starts >= 2:
            yield from _grade_here(options, paths, labels, [*pending, *source], step_ids)
            return
        started = take(jobs) or start(jobs)
        with started.pool as pool:
            ping = started.ping
            futures: dict[Future[dict[str, Any]], int] = {}
            queue = deque(pending)  # those a broken pool left: first
            # Keep a bounded number in flight so an interruption loses little.
            while True:
                while len(futures) < jobs * 2 and (queue or not drawn_all):
                    if queue:
                        i = queue.popleft()
                    else:
                        drawn = next(source, None)
                        if drawn is None:
                            drawn_all = True
                            break
                        i = drawn
                        pending[i] = None
                    futures[pool.submit(grade_task, setup, str(paths[i]), labels[i], step_ids[i])] = i
                if not futures:
                    break
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


def _grade_here(options: RunOptions, paths: Sequence[Path], labels: list[str], todo: list[int],
                step_ids: Mapping[int, list[str]]) -> Iterator[tuple[int, GradeReport]]:
    """Grade `todo` one after another with an engine in this process (still sandboxed)."""
    with batch_engine(options, many=len(todo) > 1) as engine:
        for i in todo:
            yield i, grade_with(engine, paths[i], step_ids[i], label=labels[i])


def _open_cache(request: GradeRequest, course: Course, secret: str | None) -> tuple[Any, Keyer | None]:
    """The results cache and how a snapshot's key is made (None, None: `--no-cache`)."""
    if not request.use_cache:
        return None, None
    from attn_practice.grader.staff.cache import ResultsCache, grader_fingerprint

    cache = ResultsCache(request.cache_dir, regrade_timeouts=request.regrade_timeouts).open()
    fingerprint = course.fingerprint or "default"
    version = grader_fingerprint()
    examples = secret_tag(secret)

    def keyer(snapshot: Path) -> str | None:  # None: graded afresh, never cached
        return cache.key(snapshot, grader_version=version, course_fingerprint=fingerprint, examples=examples)

    return cache, keyer
