"""A course cannot silently cost a class: its private tests must pass on the reference.

A private test that expects the wrong values fails every correct submission,
and one that crashes makes every report say "the grader itself failed"; either
would cost a whole class its step without a word. So before `grade` grades
anything, each private test runs once on the reference solution, through
the same engine, sandbox, secret and limits as the class will get. A test
that fails there, crashes there, or does not run there is a course error
(exit 2) naming the test, its file and line, and what it got.

The check is remembered per (course fingerprint, grader, examples' secret)
in the private cache folder, so a re-run of an unchanged course skips it.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attn_practice.grader.course import Course
from attn_practice.grader.results import Status, TestResult
from attn_practice.grader.staff.private_suites import PrivateTest, collect


class ReferenceCheckFailed(RuntimeError):
    """The grader itself failed while running the reference (no sandbox, ...): no verdict on the course."""


@dataclass(frozen=True)
class ReferenceProblem:
    test: PrivateTest
    what: str  # "fails", "crashes" or "did not run"
    got: str  # the test's own message on the reference

    def __str__(self) -> str:
        got = f": {self.got}" if self.got else ""
        return (f"{self.test.file}:{self.test.line}: private test {self.test.name!r} ({self.test.step}) "
                f"{self.what} on the reference solution{got}")


def _short(message: str, limit: int = 600) -> str:
    text = " ".join(message.split())
    return text if len(text) <= limit else text[:limit] + " ..."


def judge(tests: Sequence[PrivateTest], outcomes: dict[str, list[TestResult]]) -> list[ReferenceProblem]:
    """What is wrong with each private test, given the reference's results per step."""
    problems = []
    for t in tests:
        found = [r for r in outcomes.get(t.step, []) if r.name == t.name]
        if not found:
            problems.append(ReferenceProblem(t, "did not run", ""))
            continue
        for r in found:
            if r.status is Status.PASSED:
                continue
            kind = r.failure.kind if r.failure is not None else None
            crashed = r.status is Status.ERROR or (kind is not None and kind.grader_fault)
            problems.append(ReferenceProblem(t, "crashes" if crashed else "fails", _short(r.message)))
            break
    return problems


def reference_outcomes(course: Course, steps: Sequence[str]) -> dict[str, list[TestResult]]:
    """Grade the reference solution on `steps` with the course's settings; tests per step."""
    from attn_practice.grader.catalog import resolve_step
    from attn_practice.grader.engine.engine import Engine
    from attn_practice.grader.staff.batch import options_for
    from attn_practice.reference import attention

    source = inspect.getsource(attention).encode()
    exercises = [resolve_step(s) for s in steps]
    with Engine(options_for(course)) as engine:
        report = engine.grade(Path("."), exercises, label="reference",
                              files={ex.file: source for ex in exercises})
    return {s.id: list(s.tests) for s in report.steps}


def _marker(course: Course, folder: Path) -> Path:
    from attn_practice.grader.engine.secret import grading_secret, secret_tag
    from attn_practice.grader.staff.cache import grader_fingerprint

    tag = secret_tag(grading_secret(course.secret_env))
    key = hashlib.sha256(f"{course.fingerprint}|{grader_fingerprint()}|{tag}".encode()).hexdigest()
    return folder / "course-checks" / f"{key[:32]}.ok"


def check_on_reference(course: Course, *, cache_dir: Path | None = None,
                       use_cache: bool = True) -> list[ReferenceProblem]:
    """Every private test that fails, crashes or does not run on the reference (empty: fine)."""
    if not course.extra_suites:
        return []
    from attn_practice.grader.staff.cache import default_directory
    from attn_practice.grader.staff.private_dir import private_dir

    marker = _marker(course, Path(cache_dir) if cache_dir is not None else default_directory())
    if use_cache and marker.is_file() and not marker.is_symlink():
        return []
    tests, _ = collect(list(course.extra_suites))
    steps = sorted({t.step for t in tests})
    outcomes = reference_outcomes(course, steps) if steps else {}
    private = {t.name for t in tests}
    for results in outcomes.values():  # our own tests failing as the grader's fault: not the course's
        broken = [r for r in results if r.name not in private and r.failure is not None
                  and r.failure.kind.grader_fault]
        if broken:
            raise ReferenceCheckFailed(f"could not run the private tests on the reference solution: "
                                       f"{_short(broken[0].message, 300)}")
    problems = judge(tests, outcomes)
    if not problems and use_cache:
        private_dir(marker.parent)
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        os.close(fd)
    return problems


__all__ = ["ReferenceCheckFailed", "ReferenceProblem", "check_on_reference", "judge", "reference_outcomes"]
