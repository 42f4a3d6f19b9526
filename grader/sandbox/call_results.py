"""What a call of the learner's function gives back: its result, its load info, its errors.

Plain data and exceptions, apart from `Learner` (learner.py) so that modules which
only catch a `LearnerError` or read a `CallResult` need not import the sandbox client.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from attn_practice.grader.results import CarriesFailure, Failure, FailureKind


class Budget:
    """Wall-clock seconds shared by every step of one submission.

    Pass the same `Budget` to each `Learner` of a submission; once it is
    spent, every later load or call fails at once with a timeout.
    """

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.used = 0.0

    @property
    def exhausted(self) -> bool:
        return self.used > self.seconds

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
