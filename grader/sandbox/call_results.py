"""What a call of the learner's function gives back: its result, its load info, its errors.

Plain data and exceptions, apart from `Learner` (learner.py) so that modules which
only catch a `LearnerError` or read a `CallResult` need not import the sandbox client.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attn_practice.grader.results import CarriesFailure, Failure, FailureKind


class Budget:
    """Seconds shared by every step of one submission: in the learner's code, and in all.

    Pass the same `Budget` to each `Learner` of a submission; once it is
    spent, every later load or call fails at once with a timeout. Two
    bounds: `seconds` of the learner's code (wall clock, sleeping counted),
    and `wall` seconds since the budget was made, the grader's own work
    included (examples drawn, answers checked): a submission's whole grading
    ends within about that long, whatever it does (issue 40).
    """

    #: the whole grading may take this many times the learner's share
    WALL_FACTOR = 2.0

    def __init__(self, seconds: float, wall: float | None = None):
        self.seconds = float(seconds)
        self.wall = float(wall) if wall is not None else self.seconds * self.WALL_FACTOR
        self.started = time.monotonic()
        self.used = 0.0

    @property
    def over_wall(self) -> bool:
        return time.monotonic() - self.started > self.wall

    @property
    def exhausted(self) -> bool:
        return self.used > self.seconds or self.over_wall

    @property
    def remaining(self) -> float:
        return min(self.seconds - self.used, self.wall - (time.monotonic() - self.started))

    def charge(self, seconds: float) -> None:
        self.used += max(0.0, seconds)


class LearnerError(CarriesFailure, Exception):
    """The learner's code did not produce a usable answer; `.failure` says why.

    Raised in quiet mode (see `Learner.quiet`), the failure is built by `complete()`.
    """

    def __init__(self, failure: Failure | None = None, *, kind: FailureKind | None = None,
                 build: Callable[[], Failure] | None = None):
        kind = FailureKind(kind) if kind is not None else (failure.kind if failure else FailureKind.EXCEPTION)
        failure = failure or Failure(kind=kind, summary="")
        super().__init__(failure.summary)
        self.failure = failure
        self.kind = kind
        self.build = build


class LoadError(LearnerError):
    """The learner's module could not be loaded (syntax, import, missing function)."""


@dataclass
class CallResult:
    value: np.ndarray
    dtype: str
    returned: str
    mutated: list[int]
    seconds: float
    output: str


@dataclass
class LoadInfo:
    ok: bool
    line: int = 0
    signature: str = ""
    imported_steps: list[str] = field(default_factory=list)
    failure: Failure | None = None
