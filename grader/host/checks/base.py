"""How the host runs a learner's check: a `CheckRunner`, thread-based and blocking.

`run(request)` is called from a worker thread of the fair queue (never the
event loop) and blocks until the check finished; a runner may be called
concurrently up to its `capacity`. It returns plain data (`CheckResult`, a
dict): the engine's `GradeReport.to_dict()` for the step and the worked
example's HTML, exactly what `attn-practice check` computes, learner code
having run only in the grader's sandbox (on this machine's pool, or on a Dask
worker). A runner never raises for the learner's code: the worst is a report
whose `error` says the grader failed (CONTRACT §4.4).

Implementations: `local.LocalCheckRunner` (a bounded process pool, one
worker per core) and `dask.DaskCheckRunner` (`--dask ADDRESS`), both built by
`open_runner` with the same arguments.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


class WorkersBusy(TimeoutError):
    """A widget call never reached a worker in time: the class's checks held them all.

    Said apart from a call that started and ran too long, so the page does not blame
    the learner's code for the class being busy.
    """


#: What run() returns: {"report": GradeReport.to_dict(), "worked_html": str, "seconds": float}
CheckResult = dict[str, Any]


@dataclass(frozen=True)
class CheckRequest:
    """One learner's check of one step on the files as saved (file name -> text).

    `files` holds every step file of the learner (later steps import earlier
    ones); `known_failing` / `known_unchecked` are the other steps' standing,
    as `check` passes them, so a failure is blamed on the right file.
    """

    learner_id: str
    step: str
    files: dict[str, str]
    known_failing: frozenset[str] = frozenset()
    known_unchecked: frozenset[str] = frozenset()
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class CheckRunner(Protocol):
    #: how many checks it runs at once (the fair queue keeps this many in flight)
    capacity: int

    def run(self, request: CheckRequest) -> CheckResult:
        """Run the check (blocking; thread-safe); learner code only in the sandbox."""

    def ready(self) -> bool:
        """True while checks can run (workers alive / cluster reachable)."""

    def close(self) -> None: ...
