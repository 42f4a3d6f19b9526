"""The report model: what a grading run found, as plain data.

Every front end (the terminal, JSON, JUnit, Gradescope, GitHub, CSV, the
cache, Dask) renders or stores these objects; none of them looks at pytest.
`to_dict`/`from_dict` round-trip exactly, so a report can cross a process or
a machine boundary as JSON.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = "attn-practice.grade/1"


class Status(str, enum.Enum):
    """Outcome of one test or one step (CONTRACT §4 spells these strings)."""

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    MISSING = "missing"
    SKIPPED = "skipped"

    def __str__(self) -> str:  # so f-strings and rich show "passed", not "Status.PASSED"
        return self.value


class FailureKind(str, enum.Enum):
    """Why one test (or one step's load) failed: the one list of kinds.

    Carried as data from the sandbox's reply to the report, never recovered
    from message text. A str enum: JSON and every report keep the same
    strings as before, and `Failure(kind="value")` still works.
    """

    # the answer was computed but judged wrong
    SHAPE = "shape"
    VALUE = "value"
    PROPERTY = "property"  # a property test (rows sum to 1, ...) failed
    NONFINITE = "nonfinite"
    TYPE = "type"  # not an array of numbers (None, a string, ...)
    TOO_LARGE = "too-large"  # a far larger array than asked for
    # the learner's code failed while running
    EXCEPTION = "exception"
    MEMORY = "memory"
    RECURSION = "recursion"
    EXIT = "exit"  # SystemExit / exit() instead of returning
    INTERRUPT = "interrupt"
    NOT_IMPLEMENTED = "not-implemented"  # still the stub
    TIMEOUT = "timeout"
    CRASH = "crash"  # the sandbox process died (signal, os._exit, broken socket)
    # the step file could not be used
    FILE = "file"  # missing, a link, a directory, not UTF-8, too large
    SYNTAX = "syntax"
    IMPORT = "import"
    MISSING_FUNCTION = "missing-function"
    NOT_CALLABLE = "not-callable"
    SIGNATURE = "signature"
    LOAD = "load"  # a call on a module that did not load (the load's own failure says why)
    # not the learner's doing (CONTRACT 4.4): never cached
    INTERNAL = "internal"
    PENDING = "pending"  # a failure whose message is built later (quiet mode)
    #: read from a report written by a newer grader, whose kind this one does not know
    OTHER = "other"

    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:  # equal to its string, so it hashes like one (sets, dict keys)
        return str.__hash__(self.value)

    @property
    def status(self) -> Status:
        """The test status this kind of failure gives (CONTRACT 4's status strings)."""
        if self is FailureKind.TIMEOUT:
            return Status.TIMEOUT
        if self in _ERROR_KINDS:
            return Status.ERROR
        return Status.FAILED

    @property
    def grader_fault(self) -> bool:
        """The grader failed, not the learner: retried once, never cached (CONTRACT 4.4)."""
        return self is FailureKind.INTERNAL


#: Kinds that stop a test before it can judge an answer: reported as `error`.
_ERROR_KINDS = frozenset({FailureKind.CRASH, FailureKind.EXIT, FailureKind.MEMORY, FailureKind.INTERNAL})


@dataclass(frozen=True)
class Diagnosis:
    """A known mistake that explains the learner's output (CONTRACT §3 ids)."""

    id: str
    title: str
    explanation: str = ""
    nudge: str = ""


@dataclass(frozen=True)
class Failure:
    """Why one test failed, structured so each renderer can lay it out.

    All fields are strings: they were built in the trusted process from plain
    arrays, and may contain learner text (printed output, exception messages).
    """

    kind: FailureKind  # a plain string of one of its values is accepted (and converted)
    summary: str  # one sentence a learner can act on
    details: str = ""  # inputs, expected vs got, worst element, tolerances
    repro: str = ""  # one line of Python that reproduces the call
    traceback: str = ""  # the learner's own frames only
    hint: str = ""  # what to do next

    def __post_init__(self) -> None:
        if not isinstance(self.kind, FailureKind):
            object.__setattr__(self, "kind", FailureKind(self.kind))  # ValueError for an unknown kind


class CarriesFailure:
    """Mixed into the exceptions that carry a `Failure` (StepFailure, LearnerError).

    In quiet mode the failure is raised with its message unbuilt and `build`
    set; `complete()` builds it. Most of a failure's cost is its message, and
    grading builds only the one it reports.
    """

    failure: Failure
    build: Callable[[], Failure] | None = None

    def complete(self) -> None:
        if self.build is not None:
            build, self.build = self.build, None
            self.failure = build()


@dataclass(frozen=True)
class TestResult:
    """One hidden test's outcome."""

    name: str
    status: Status
    message: str = ""
    failure: Failure | None = None
    duration: float = 0.0


@dataclass(frozen=True)
class StepResult:
    """One step of one submission."""

    id: str
    title: str
    status: Status
    score: float
    max_score: float
    diagnoses: tuple[Diagnosis, ...] = ()
    tests: tuple[TestResult, ...] = ()
    output: str = ""  # what the learner's code printed (bounded)
    notes: tuple[str, ...] = ()  # passing remarks: dtype, in-place writes, slowness
    error: str = ""  # why the whole step could not run (missing file, syntax error, crash)
    file: str = ""
    function: str = ""
    line: int = 0  # where the learner's function starts, for annotations
    duration: float = 0.0
    bonus: bool = False
    #: Whether the step adds to the report's score and max_score (CONTRACT §4.1):
    #: a bonus step graded under the default course is reported but not counted.
    counted: bool = True

    @property
    def passed(self) -> bool:
        return self.status is Status.PASSED

    @property
    def diagnosis_ids(self) -> list[str]:
        return [d.id for d in self.diagnoses]

    @property
    def grader_failed(self) -> bool:
        """Some test's outcome here is the grader's own failure, not a verdict (CONTRACT 4.4)."""
        return any(t.failure is not None and t.failure.kind.grader_fault for t in self.tests)


@dataclass(frozen=True)
class GradeReport:
    """Everything one grading run found about one submission."""

    submission: str
    steps: tuple[StepResult, ...] = ()
    duration: float = 0.0
    grader_version: str = ""
    error: str = ""  # the submission as a whole could not be graded
    extra: dict[str, Any] = field(default_factory=dict)
    #: The folder actually graded when it differs from `submission` (step files
    #: found one folder down, e.g. `repo/attention-practice`); "" otherwise.
    graded_path: str = ""
    #: What staff must know about how the submission was read (CONTRACT 4.5): a
    #: near-miss file name, a function taken from a notebook, two versions, nothing
    #: recognised. Always in the JSON, possibly empty.
    warnings: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        """Points earned on the counted steps only (CONTRACT §4.1)."""
        return float(sum(s.score for s in self.steps if s.counted))

    @property
    def max_score(self) -> float:
        """The course's total over its counted steps: the same for every submission."""
        return float(sum(s.max_score for s in self.steps if s.counted))

    @property
    def passed(self) -> bool:
        """Every counted step passed (an uncounted bonus step never costs a pass)."""
        return not self.error and all(s.passed for s in self.steps if s.counted)

    @property
    def nothing_recognised(self) -> bool:
        """No step had anything to grade: every step `missing` (an empty folder, an unreadable zip)."""
        return bool(self.steps) and all(s.status is Status.MISSING for s in self.steps)

    @property
    def grader_failed(self) -> bool:
        """Some step's outcome is the grader's own failure, not a verdict (CONTRACT 4.4)."""
        return any(s.grader_failed for s in self.steps)

    def step(self, step_id: str) -> StepResult:
        for s in self.steps:
            if s.id == step_id:
                return s
        raise KeyError(step_id)

    # -- serialisation -------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The `grade --format json` object (CONTRACT §4), a superset of the schema."""
        return {
            "schema": SCHEMA,
            "submission": self.submission,
            "score": self.score,
            "max_score": self.max_score,
            "passed": self.passed,
            "duration": round(self.duration, 3),
            "grader_version": self.grader_version,
            "error": self.error,
            "steps": [_step_to_dict(s) for s in self.steps],
            "warnings": list(self.warnings),
            **({"graded_path": self.graded_path} if self.graded_path else {}),
            **({"extra": self.extra} if self.extra else {}),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GradeReport:
        return cls(
            submission=data["submission"],
            steps=tuple(_step_from_dict(s) for s in data.get("steps", ())),
            duration=float(data.get("duration", 0.0)),
            grader_version=data.get("grader_version", ""),
            error=data.get("error", ""),
            extra=dict(data.get("extra", {})),
            graded_path=str(data.get("graded_path", "")),
            warnings=[str(w) for w in data.get("warnings") or () if isinstance(w, str)],
        )


def _step_to_dict(s: StepResult) -> dict[str, Any]:
    return {
        "id": s.id,
        "title": s.title,
        "status": s.status.value,
        "score": float(s.score),
        "max_score": float(s.max_score),
        "diagnoses": s.diagnosis_ids,
        "diagnosis_details": [asdict(d) for d in s.diagnoses],
        "tests": [_test_to_dict(t) for t in s.tests],
        "output": s.output,
        "notes": list(s.notes),
        "error": s.error,
        "file": s.file,
        "function": s.function,
        "line": s.line,
        "duration": round(s.duration, 3),
        "bonus": s.bonus,
        "counted": s.counted,
    }


def _test_to_dict(t: TestResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": t.name,
        "status": t.status.value,
        "message": t.message,
        "duration": round(t.duration, 3),
    }
    if t.failure is not None:
        out["failure"] = {**asdict(t.failure), "kind": t.failure.kind.value}
    return out


def _step_from_dict(d: dict[str, Any]) -> StepResult:
    return StepResult(
        id=d["id"],
        title=d.get("title", ""),
        status=Status(d["status"]),
        score=float(d["score"]),
        max_score=float(d["max_score"]),
        diagnoses=tuple(
            Diagnosis(**x) for x in d.get("diagnosis_details", ())
        )
        or tuple(Diagnosis(id=i, title=i) for i in d.get("diagnoses", ())),
        tests=tuple(
            TestResult(
                name=t["name"],
                status=Status(t["status"]),
                message=t.get("message", ""),
                failure=Failure(**t["failure"]) if t.get("failure") else None,
                duration=float(t.get("duration", 0.0)),
            )
            for t in d.get("tests", ())
        ),
        output=d.get("output", ""),
        notes=tuple(d.get("notes", ())),
        error=d.get("error", ""),
        file=d.get("file", ""),
        function=d.get("function", ""),
        line=int(d.get("line", 0)),
        duration=float(d.get("duration", 0.0)),
        bonus=bool(d.get("bonus", False)),
        counted=bool(d.get("counted", True)),
    )


#: Keys whose values legitimately differ between two runs of the same submission.
TIMING_KEYS = frozenset({"duration", "execution_time"})


def without_timings(obj: Any) -> Any:
    """The report with timing fields removed, for determinism comparisons."""
    if isinstance(obj, dict):
        return {k: without_timings(v) for k, v in obj.items() if k not in TIMING_KEYS}
    if isinstance(obj, list):
        return [without_timings(v) for v in obj]
    return obj
