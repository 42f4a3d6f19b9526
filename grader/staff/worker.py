"""One warm engine grading many submissions: what a local pool worker and a Dask worker share.

`batch_engine` makes an engine for many submissions (its pytest session
collected once); `grade_with` grades one submission on it and leaves it fit
for the next (CONTRACT 4.4). No pool, no cluster here: `batch` and
`distributed` each drive their workers and call these.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Hashable, Sequence
from pathlib import Path

from attn_practice import __version__
from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.results import GradeReport


def batch_engine(options: RunOptions, *, many: bool = True) -> Engine:
    """An engine for many submissions: its pytest session is collected once and reused.

    `many`: more than one submission is sure to come, so the session (every
    catalogued step's suite) is collected for the first already; a lone
    submission keeps the plain pytest run of its own steps.
    """
    engine = Engine(options)
    engine.suites.reuse = True
    if many:
        engine.suites.reuse_from = 1
    return engine


class WarmEngine:
    """The engine last asked for: kept warm across submissions, and closed and built anew
    when its options, or what else it was built under (`key`), change (a pool worker, a Dask
    worker thread)."""

    def __init__(self) -> None:
        self.built_for: tuple[RunOptions, Hashable] | None = None
        self.engine: Engine | None = None

    def get(self, options: RunOptions, key: Hashable = None) -> Engine:
        if self.engine is None or (options, key) != self.built_for:
            self.close()
            self.engine, self.built_for = batch_engine(options), (options, key)
        return self.engine

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
        self.engine = self.built_for = None


def grade_with(engine: Engine, path: Path, step_ids: Sequence[str], *, label: str,
               files: dict[str, bytes] | None = None) -> GradeReport:
    """Grade one submission on a warm engine, leaving the engine fit for the next (CONTRACT 4.4).

    The fork server is checked before (a poisoned one makes an honest step
    look like the learner's fault: "ran out of memory while being imported")
    and after, and rebuilt whenever it is not as it started. A report with a
    step the grader failed on (its sandbox could not start...) is graded once
    more on a fresh one. Never raises for the submission's sake: the worst is
    a report with `error`.
    """
    if engine.launcher.check():
        engine.launcher.refresh()
    try:
        steps = [resolve_step(s) for s in step_ids]
        report = engine.grade(path, steps, label=label, files=files)
        if report.grader_failed:
            engine.launcher.refresh()
            report = engine.grade(path, steps, label=label, files=files)
    except Exception as exc:  # noqa: BLE001 - one submission's trouble is its own report
        engine.launcher.refresh()
        return grader_error(label, f"{type(exc).__name__}: {exc}")
    if engine.launcher.check():
        engine.launcher.refresh()
    if engine.suites.runs >= _SETTLED_AFTER and engine not in _SETTLED:
        _SETTLED.add(engine)
        _settle()
    return report


#: The engine is warm after this many runs (its pytest session and recordings are built).
_SETTLED_AFTER = 2
_SETTLED: weakref.WeakSet[Engine] = weakref.WeakSet()


def _settle() -> None:
    """Keep the collector off what a warm engine holds for good (session, suites, recordings).

    Every full collection would walk those tens of thousands of objects again,
    once per few submissions, for nothing: collect once (so no garbage is kept),
    then freeze what is left. Later garbage is collected as usual.
    """
    gc.collect()
    gc.freeze()


def grader_error(label: str, what: str) -> GradeReport:
    """The report of a submission the grader failed on (never the submission's fault, never cached)."""
    return GradeReport(submission=label, grader_version=__version__,
                       error=f"internal grader error (not a problem with this submission; it was not "
                             f"graded, please report it to the course staff): {what[:500]}")


__all__ = ["batch_engine", "grade_with", "grader_error"]
