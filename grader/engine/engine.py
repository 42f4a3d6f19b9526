"""The one engine behind `check`, `grade`, notebooks and batch runs.

For one submission: validate each step file, load the steps into one
sandbox (see `launcher`, `shared`), run the hidden pytest + Hypothesis
suites in *this* process against it, grade every step that did not pass
there again in a sandbox of its own, collect every outcome into the report
model, and name known mistakes for failed steps. An `Engine` is reusable: batch
grading keeps one per worker so pytest, Hypothesis and the zygote are paid
for once.
"""

from __future__ import annotations

import io
import os
import time
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from attn_practice import __version__
from attn_practice.grader.catalog import Exercise, core_steps, load_catalog
from attn_practice.grader.engine.hypothesis_setup import configure_hypothesis
from attn_practice.grader.engine.plugin import run_suites, suite_files
from attn_practice.grader.engine.replay import ExampleReplay, store_path
from attn_practice.grader.engine.secret import submission_salt
from attn_practice.grader.engine.session import SuiteRunner
from attn_practice.grader.engine.shims import reference_shims
from attn_practice.grader.results import (
    Diagnosis,
    Failure,
    GradeReport,
    Status,
    StepResult,
    TestResult,
)
from attn_practice.grader.sandbox.launcher import Launcher
from attn_practice.grader.sandbox.learner import (
    Budget,
    Learner,
    Limits,
    LoadInfo,
    close_learners,
)
from attn_practice.grader.sandbox.shared import SharedSandbox
from attn_practice.grader.sandbox.submission import read_regular_file, sandbox_files
from attn_practice.grader.suites.assertions import StepContext
from attn_practice.reference import attention as reference

MAX_STEP_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class RunOptions:
    """How thoroughly and how safely to grade; the engine's defaults are the product's."""

    max_examples: int = 25  # fewer, broader examples: each draws a shape profile (see strategies)
    # Shrink a failing example with Hypothesis (check: the smallest input teaches best).
    # Off, a failing test reports the smallest failing recorded example instead:
    # just as deterministic, and no per-submission Hypothesis run (grade's default).
    shrink: bool = True
    limits: Limits = field(default_factory=Limits)
    reference_steps: bool = False  # earlier steps' modules replaced by reference code
    extra_suites: tuple[Path, ...] = ()
    diagnose: bool = True
    points: dict[str, float] = field(default_factory=dict)  # step id -> points override
    step_limits: dict[str, Limits] = field(default_factory=dict)  # step id -> limits override
    known_failing: frozenset[str] = frozenset()  # steps not graded now but known to fail (check)
    known_unchecked: frozenset[str] = frozenset()  # steps the learner has not checked yet
    speed_notes: bool = False  # time a passing solution against the reference (learners' check)
    #: all of a submission's steps in one sandbox, a step that does not pass there graded
    #: again alone (see `sandbox.shared`); False: a sandbox per step from the start
    shared_sandbox: bool = True
    persist_examples: bool = True  # keep recorded Hypothesis examples on disk (see replay.py)
    #: grade: every generated example is drawn from this secret (CONTRACT 4.3, see secret.py);
    #: None: the public derandomised examples (check, notebooks)
    secret: str | None = None


def default_steps(submission: Path, catalog: Sequence[Exercise] | None = None) -> list[Exercise]:
    """Core steps always; a bonus step when its file is present (CONTRACT §4)."""
    catalog = catalog or load_catalog()
    return [e for e in catalog if not e.bonus or os.path.lexists(submission / e.file)]


class Engine:
    """Grades submissions; holds the zygote and Hypothesis set-up between them."""

    def __init__(self, options: RunOptions | None = None) -> None:
        self.options = options or RunOptions()
        self.launcher = Launcher()
        self.launcher.warm()
        self.replay = ExampleReplay(store_path(self.options.secret) if self.options.persist_examples else None,
                                    secret=self.options.secret)
        configure_hypothesis(self.options.max_examples, self.options.shrink)
        #: batch workers set `suites.reuse`: one collected pytest session for all their submissions
        self.suites = SuiteRunner(self.options.extra_suites, self.replay, shrink=self.options.shrink)

    def close(self) -> None:
        self.suites.close()
        self.launcher.close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -----------------------------------------------------------------
    def grade(
        self,
        submission: Path,
        steps: Sequence[Exercise] | None = None,
        *,
        label: str | None = None,
        files: dict[str, bytes] | None = None,
    ) -> GradeReport:
        """Grade one submission directory (or in-memory `files`) on `steps`."""
        t0 = time.perf_counter()
        submission = Path(submission)
        label = label if label is not None else str(submission)
        if files is None and not submission.is_dir():
            return GradeReport(submission=label, error=f"{submission} is not a directory",
                               grader_version=__version__)
        steps = list(steps) if steps is not None else default_steps(submission)
        configure_hypothesis(self.options.max_examples, self.options.shrink)
        salt = self._salt(submission, files)
        self.replay.salt = salt
        budget = Budget(self.options.limits.submission_timeout)  # shared by all its steps
        contexts: dict[str, StepContext] = {}
        early: dict[str, StepResult] = {}
        learners: list[Learner] = []
        display_dir = "" if files is not None else label
        shared = self._shared_sandbox(submission, steps, display_dir, files)
        try:
            self._load(steps, submission, files, display_dir, salt, budget, shared, contexts, early, learners)
            outcomes = self.suites.run(contexts) if contexts else {}
            if shared is not None:
                shared.close()
                # Credited only when it passed beside the others: any other outcome is judged
                # again in a sandbox of the step's own, and that report is the one given.
                again = [ex for ex in steps if _ran_shared(ex.id, learners) and not (
                    ex.id in contexts and _all_passed(outcomes.get(ex.id, [])))]
                if again:
                    for ex in again:
                        contexts.pop(ex.id, None)
                        early.pop(ex.id, None)
                    close_learners([lr for lr in learners if lr.step_id in {ex.id for ex in again}])
                    # A budget of their own: time spent beside the others is not theirs to pay.
                    budget = Budget(self.options.limits.submission_timeout)
                    fresh: dict[str, StepContext] = {}
                    self._load(again, submission, files, display_dir, salt, budget, None, fresh, early, learners)
                    contexts.update(fresh)
                    outcomes.update(self.suites.run(fresh) if fresh else {})
            results = []
            for ex in steps:
                if ex.id in early:
                    results.append(early[ex.id])
                    continue
                ctx = contexts[ex.id]
                results.append(self._step_result(ex, ctx, outcomes.get(ex.id, [])))
        finally:
            close_learners(learners)
            if shared is not None:
                shared.close()
        if self.replay.dirty:
            self.replay.save()
        results = add_dependency_notes(
            results, {ex.id: _imports(contexts.get(ex.id)) for ex in steps},
            {r.id for r in results if not r.passed} | set(self.options.known_failing),
            self.options.known_unchecked)
        return GradeReport(submission=label, steps=tuple(results), duration=time.perf_counter() - t0,
                           grader_version=__version__)

    def _load(self, steps: Sequence[Exercise], submission: Path, files: dict[str, bytes] | None,
              display_dir: str, salt: int | None, budget: Budget, shared: SharedSandbox | None,
              contexts: dict[str, StepContext], early: dict[str, StepResult], learners: list[Learner]) -> None:
        """Load `steps`' modules: a context to test for each that loads, a result for each that cannot."""
        by_id = {ex.id: ex for ex in steps}
        started: list[Learner] = []
        for ex in steps:
            problem = None if files is not None else _file_problem(submission, ex)
            if problem is not None:
                early[ex.id] = problem if isinstance(problem, StepResult) else _step_error(
                    ex, self._points(ex), Status.ERROR, problem)
                continue
            learner = Learner(
                self.launcher, submission, step_id=ex.id, module=ex.module, function=ex.function,
                params=ex.params, limits=self._limits(ex), display_dir=display_dir, files=files,
                shims=reference_shims(ex) if self.options.reference_steps else None,
                budget=budget, shared=shared,
            )
            learner.layout_salt = salt or 0
            learners.append(learner)
            started.append(learner)
            learner.begin_load()  # every step's import starts at once (in its sandbox, or in turn in the shared one)
        infos = {learner.step_id: learner.load() for learner in started}
        for learner in started:
            info = infos[learner.step_id]
            if len(started) > 1 and not learner.used_shared and _unfair_load(info, budget):
                # Imported beside the others, a step spinning at import could have
                # starved this one of CPU (or memory): judge it again, alone.
                learner.close()
                learner.load_info = None
                learner.output, learner.output_size = [], 0
                info = learner.load()
            ex = by_id[learner.step_id]
            if not info.ok:
                assert info.failure is not None
                early[ex.id] = _step_error(ex, self._points(ex), Status.ERROR, info.failure,
                                           output="".join(learner.output))
                learner.close()
                continue
            contexts[ex.id] = StepContext(ex, learner, reference.FUNCTIONS[ex.function])

    def _shared_sandbox(self, submission: Path, steps: Sequence[Exercise], display_dir: str,
                        files: dict[str, bytes] | None) -> SharedSandbox | None:
        """One sandbox for all of `steps` when they may share one: same limits, no reference shims.

        Not for a learner's check (`speed_notes`): a speed note times a passing
        step in a sandbox of its own, and a check is one learner's, not a class's.
        """
        if (not self.options.shared_sandbox or self.options.reference_steps or self.options.speed_notes
                or len(steps) < 2):
            return None
        limits = {replace(self._limits(ex), call_timeout=None) for ex in steps}
        if len(limits) != 1:
            return None
        return SharedSandbox(self.launcher, submission, limits=self._limits(steps[0]),
                             display_dir=display_dir, files=files)

    def _salt(self, submission: Path, files: dict[str, bytes] | None) -> int | None:
        """grade: inputs rebuilt per submission from the secret and its bytes; check: None (public)."""
        if self.options.secret is None:
            return None
        return submission_salt(self.options.secret, files if files is not None else sandbox_files(submission))

    def _points(self, ex: Exercise) -> float:
        return float(self.options.points.get(ex.id, ex.points))

    def _limits(self, ex: Exercise) -> Limits:
        """A course's limits for this step, else the engine's, the call timeout the exercise's own."""
        limits = self.options.step_limits.get(ex.id, self.options.limits)
        return replace(limits, call_timeout=ex.timeout) if limits.call_timeout is None else limits

    def _step_result(self, ex: Exercise, ctx: StepContext, tests: list[TestResult]) -> StepResult:
        learner = ctx.learner
        points = self._points(ex)
        if not tests:
            status = Status.ERROR
        elif all(t.status is Status.PASSED for t in tests):
            status = Status.PASSED
        elif any(t.status is Status.ERROR for t in tests):
            status = Status.ERROR
        elif any(t.status is Status.TIMEOUT for t in tests):
            status = Status.TIMEOUT
        else:
            status = Status.FAILED
        duration = learner.learner_seconds
        diagnoses: tuple[Diagnosis, ...] = ()
        if status is not Status.PASSED and self.options.diagnose:
            diagnoses = tuple(_diagnose(ex, ctx))
        notes = list(learner.notes.values())
        if status is Status.PASSED and self.options.speed_notes:
            from attn_practice.grader.engine.speed import speed_note

            try:
                note = speed_note(learner, ex)
            except Exception:  # noqa: BLE001 - a note is a bonus, never a reason to fail
                note = None
            if note:
                notes.append(note)
        output = "".join(learner.output)
        if self.options.secret is not None:  # grade: no report is a window on the secret inputs
            tests, output = short_echo(tests), _cap(output, GRADE_OUTPUT_CHARS, "characters of printed output")
        return StepResult(
            id=ex.id,
            title=ex.title,
            status=status,
            score=points if status is Status.PASSED else 0.0,
            max_score=points,
            diagnoses=diagnoses,
            tests=tuple(tests),
            output=output,
            notes=tuple(notes),
            error="" if tests else "no hidden tests ran for this step",
            file=ex.file,
            function=ex.function,
            line=learner.load_info.line if learner.load_info else 0,
            duration=duration,
            bonus=ex.bonus,
        )


#: grade reports echo this much learner text per step (CONTRACT 4.3: inputs students cannot learn).
GRADE_OUTPUT_CHARS = 1000
GRADE_MESSAGE_CHARS = 600
GRADE_DETAILS_CHARS = 1500


def _cap(text: str, limit: int, what: str) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [{len(text) - limit} more {what} not shown in grade reports]"


def short_echo(tests: Sequence[TestResult]) -> list[TestResult]:
    """grade's echo of failures: the first (smallest) failing input in full, the others without inputs.

    Tests come smallest failure first (see `plugin.smallest_first`). Every
    other failure keeps its one-line summary, hint and the learner's own
    traceback, but not the inputs it failed on; exception text and details
    are capped. So a report shows one secret input per step, never a dump.
    """
    out, shown = [], False
    for t in tests:
        f = t.failure
        if f is None or t.status in (Status.PASSED, Status.SKIPPED):
            out.append(t)
            continue
        summary = _cap(f.summary, GRADE_MESSAGE_CHARS, "characters")
        f = replace(f, summary=summary, traceback=_cap(f.traceback, GRADE_DETAILS_CHARS, "characters"),
                    details=_cap(f.details, GRADE_DETAILS_CHARS, "characters") if not shown else "",
                    repro=f.repro if not shown else "")
        shown = shown or bool(t.failure.details or t.failure.repro)
        out.append(replace(t, failure=f, message=summary))
    return out


def _ran_shared(step_id: str, learners: Sequence[Learner]) -> bool:
    return any(learner.used_shared for learner in learners if learner.step_id == step_id)


def _all_passed(tests: Sequence[TestResult]) -> bool:
    return bool(tests) and all(t.status is Status.PASSED for t in tests)


def _unfair_load(info: LoadInfo, budget: Budget) -> bool:
    """A failed import that a neighbouring sandbox may have caused (a timeout or a kill)."""
    return (not info.ok and info.failure is not None and info.failure.kind in ("timeout", "crash")
            and not budget.exhausted)


def _imports(ctx: StepContext | None) -> list[str]:
    info = ctx.learner.load_info if ctx is not None else None
    return list(info.imported_steps) if info is not None else []


def dependency_note(step: StepResult, dep: Exercise) -> str:
    return (f"your {step.function} uses your {dep.function} from {dep.id}, which fails: fix {dep.id} "
            f"first (or check this step alone with `attn-practice check {step.id} --reference-steps`)")


def add_dependency_notes(results: list[StepResult], imported: dict[str, list[str]],
                         failing: set[str] | None = None,
                         unchecked: frozenset[str] = frozenset()) -> list[StepResult]:
    """Tell a learner when a failing step leans on an earlier step that fails too."""
    by_module = {e.module: e for e in load_catalog()}
    failing = failing if failing is not None else {r.id for r in results if not r.passed}
    out = []
    for r in results:
        deps = [by_module[m] for m in imported.get(r.id, []) if m in by_module and by_module[m].id != r.id]
        bad = [d for d in deps if d.id in failing]
        unsure = [d for d in deps if d.id in unchecked and d.id not in failing]
        if r.passed or not (bad or unsure):
            out.append(r)
            continue
        notes = tuple(dependency_note(r, d) for d in bad) + tuple(
            f"your {r.function} uses your {d.function} from {d.id}, which you have not checked yet: "
            f"run `attn-practice check {d.id}`" for d in unsure) + r.notes
        out.append(replace(r, notes=notes))
    return out


def grade_submission(path: Path, *, steps: Sequence[Exercise] | None = None,
                     options: RunOptions | None = None) -> GradeReport:
    """One-shot grading of one submission (starts and stops its own engine)."""
    with Engine(options) as engine:
        return engine.grade(Path(path), steps)


# ------------------------------------------------------------ file checks
def _file_problem(submission: Path, ex: Exercise) -> StepResult | Failure | None:
    path = submission / ex.file
    if not os.path.lexists(path):
        return StepResult(id=ex.id, title=ex.title, status=Status.MISSING, score=0.0, max_score=ex.points,
                          error=f"{ex.file} was not found in the submission", file=ex.file,
                          function=ex.function, bonus=ex.bonus)
    if path.is_symlink():
        return Failure(kind="file", summary=f"{ex.file} is a symbolic link; submit the file itself",
                       hint="Replace the link with a copy of your file.")
    if path.is_dir():
        return Failure(kind="file", summary=f"{ex.file} is a directory, not a Python file")
    if not path.is_file():
        return Failure(kind="file", summary=f"{ex.file} is not a regular file")
    try:
        size = path.stat().st_size
        if size > MAX_STEP_FILE_BYTES:
            return Failure(kind="file", summary=f"{ex.file} is {size} bytes; step files must be under 1 MiB")
    except OSError as exc:
        return Failure(kind="file", summary=f"{ex.file} could not be read: {exc.strerror}")
    # No following links, no blocking on a FIFO swapped in after the checks above.
    data = read_regular_file(str(path), MAX_STEP_FILE_BYTES)
    if data is None:
        return Failure(kind="file", summary=f"{ex.file} could not be read as a regular file")
    if b"\x00" in data:
        return Failure(kind="file", summary=f"{ex.file} contains NUL bytes: it is not a text file",
                       hint="Save the file as plain UTF-8 text.")
    # Decoded as Python will import it: a BOM or a PEP 263 coding line (e.g. Latin-1) counts.
    try:
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]
    except SyntaxError as exc:
        encoding = "utf-8"  # undecodable first lines: reported below, with the line
        if "unknown encoding" in str(exc):
            return Failure(kind="file", summary=f"{ex.file} declares an encoding Python does not know",
                           hint="Fix the `# -*- coding: ... -*-` line, or remove it and save the file as UTF-8.")
    try:
        data.decode(encoding)
    except UnicodeDecodeError as exc:
        refused = _compile_error(data)  # CPython's tokenizer lets undecodable bytes pass in comments
        if refused is None:
            return None
        line = refused.lineno or data[: exc.start].count(b"\n") + 1
        name = "UTF-8" if encoding.startswith("utf-8") else encoding
        return Failure(kind="file", summary=f"{ex.file} is not valid {name} text (line {line})",
                       hint="Save the file as UTF-8 in your editor.")
    return None


def _compile_error(data: bytes) -> SyntaxError | None:
    """Why Python would not compile these bytes as they are (what `import` does); None if it would."""
    import ast

    try:
        compile(data, "<step>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:
        return SyntaxError(str(exc))
    return None


def _step_error(ex: Exercise, points: float, status: Status, failure: Failure, output: str = "") -> StepResult:
    return StepResult(
        id=ex.id, title=ex.title, status=status, score=0.0, max_score=points,
        tests=(TestResult(name="loads and defines the function", status=status,
                          message=failure.summary, failure=failure),),
        error=failure.summary, output=output, file=ex.file, function=ex.function, bonus=ex.bonus,
    )


def _diagnose(ex: Exercise, ctx: StepContext) -> list[Diagnosis]:
    # Imported on the first failing step: a passing check or grade never pays for it.
    from attn_practice.grader.engine.diagnose import diagnose

    try:
        return list(diagnose(ex.id, ctx.learner, list(ctx.failing_inputs)))
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a reason to crash
        return []


# ------------------------------------------------------------ pytest glue
__all__ = ["Engine", "RunOptions", "core_steps", "default_steps", "grade_submission", "reference_shims",
           "run_suites", "suite_files"]
