"""The pytest side of grading: the plugin that runs the hidden suites in this process.

`run_suites` runs pytest once over the suites of the steps at hand with
`_SuitePlugin`, which provides the `step` fixture and marker, deselects
other steps' tests, sends every test through the example replay, and turns
each outcome into a `TestResult` from the structured failure it carries
(never from pytest's text). The engine builds the `StepContext`s; this
module only runs and collects.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from attn_practice.grader.paths import SUITE_INI, SUITES_DIR
from attn_practice.grader.results import Failure, Status, TestResult
from attn_practice.grader.sandbox.learner import LearnerError
from attn_practice.grader.suites.assertions import StepContext, StepFailure, input_size


class _SuitePlugin:
    """Provides the `step` fixture and marker, and collects every outcome.

    `replay` is the engine's `ExampleReplay` (or None): tests run through it.
    """

    def __init__(self, contexts: dict[str, StepContext], replay: Any = None,
                 shrink: bool = True):
        self.replay = replay
        self.shrink = shrink
        self.begin(contexts)

    def begin(self, contexts: dict[str, StepContext]) -> None:
        """Start one submission's run: its contexts, no outcomes or failures of another's."""
        self.contexts = contexts
        self.outcomes: dict[str, list[TestResult]] = {k: [] for k in contexts}
        #: (elements, rank) of the input each failed test failed on, by id(TestResult).
        self.sizes: dict[int, tuple[int, int]] = {}
        self.inputs: dict[int, tuple[Any, ...]] = {}
        self._noted: dict[str, int] = {}

    def pytest_configure(self, config: pytest.Config) -> None:
        config.addinivalue_line("markers", "step(id): the step this hidden test belongs to")
        # We never read pytest's failure text (failures are structured), and building
        # it is about half the cost of a failing step.
        config.option.tbstyle = "no"

    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        keep, drop = [], []
        for item in items:
            (keep if _step_of(item) in self.contexts else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    @pytest.fixture
    def step(self, request: pytest.FixtureRequest) -> StepContext:
        return self.contexts[_step_of(request.node)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run tests through the example replay, their calls batched (see `ExampleReplay`)."""
        ctx = pyfuncitem.funcargs.get("step")
        if isinstance(ctx, StepContext) and self._regraded_alone(ctx, _step_of(pyfuncitem)):
            return True  # this step's outcomes here are never reported (see engine.Engine.grade)
        if self.replay is None:
            return None
        funcargs = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}
        if isinstance(ctx, StepContext):
            self._noted[pyfuncitem.nodeid] = ctx.noted
        hyp = getattr(pyfuncitem.obj, "hypothesis", None)
        if hyp is None:
            self.replay.run_plain(pyfuncitem, funcargs)
        else:
            self.replay.run(pyfuncitem, hyp, funcargs, shrink=self.shrink)
        return True

    def _regraded_alone(self, ctx: StepContext, step_id: str | None) -> bool:
        """A step that ran in a submission's shared sandbox and has failed a test there.

        The engine grades it again in a sandbox of its own and reports only
        that run, so its remaining tests here would be work thrown away.
        """
        return bool(getattr(ctx.learner, "used_shared", False)) and any(
            t.status is not Status.PASSED for t in self.outcomes.get(step_id or "", ()))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
        outcome = yield
        rep = outcome.get_result()
        step_id = _step_of(item)
        if step_id not in self.outcomes:
            return
        if rep.when == "setup" and rep.passed:
            return
        if rep.when == "teardown" and rep.passed:
            return
        exc = call.excinfo.value if call.excinfo is not None else None
        self._record(item, step_id, Status.PASSED if rep.passed else Status.SKIPPED if rep.skipped else None,
                     exc, rep.duration)

    def record_call(self, item: pytest.Item, exc: BaseException | None, duration: float) -> None:
        """The outcome of a test run by its call phase alone (see `session.SuiteSession`),
        recorded as `pytest_runtest_makereport` records a whole protocol's."""
        step_id = _step_of(item)
        if step_id not in self.outcomes:
            return
        skipped = isinstance(exc, (pytest.skip.Exception, pytest.xfail.Exception))
        self._record(item, step_id, Status.PASSED if exc is None else Status.SKIPPED if skipped else None,
                     exc, duration)

    def _record(self, item: pytest.Item, step_id: str, status: Status | None, exc: BaseException | None,
                duration: float) -> None:
        """One outcome: passed or skipped (`status`), else the failure `exc` carries."""
        name = _test_name(item)
        if status is not None:
            self.outcomes[step_id].append(TestResult(name=name, status=status, duration=duration))
            return
        result = _failed_test(name, exc, duration)
        ctx = self.contexts[step_id]
        if ctx.noted > self._noted.get(item.nodeid, ctx.noted) and ctx.failing_inputs:
            self.sizes[id(result)] = input_size(ctx.failing_inputs[-1])
            self.inputs[id(result)] = ctx.failing_inputs[-1]
        self.outcomes[step_id].append(result)

    def smallest_first(self) -> dict[str, list[TestResult]]:
        """Each step's tests with its failures reordered, smallest failing input first.

        The failed tests take the places failed tests had, ordered by the size
        (elements, then rank) of the input each failed on; a failure with no
        input (an import error, an internal one) goes after those. Every report
        shows failures in list order, so the first one a learner reads is the
        smallest, with the shortest repro line.
        """
        out = {}
        for step_id, tests in self.outcomes.items():
            failed = [i for i, t in enumerate(tests) if t.status not in (Status.PASSED, Status.SKIPPED)]
            ordered = sorted((tests[i] for i in failed),
                             key=lambda t: self.sizes.get(id(t), (1 << 62, 1 << 62)))
            reordered = list(tests)
            for slot, t in zip(failed, ordered, strict=True):
                reordered[slot] = t
            out[step_id] = reordered
            learner = self.contexts[step_id].learner
            if ordered and id(ordered[0]) in self.inputs and hasattr(learner, "focus_output"):
                # The printed output shown is the call the first reported failure made.
                printed = getattr(learner, "printed", None)
                if printed is not None:
                    printed.focused = False
                learner.focus_output(self.inputs[id(ordered[0])])
        return out


def _failed_test(name: str, exc: BaseException | None, duration: float) -> TestResult:
    failure = _find_failure(exc)
    if failure is None:
        text = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
        failure = Failure(kind="internal", summary=f"the grader itself failed on this test ({text[:300]})",
                          hint="This is not your fault: please report it to the course staff.")
        return TestResult(name=name, status=Status.ERROR, message=failure.summary, failure=failure,
                          duration=duration)
    status = failure.kind.status  # carried from the sandbox's reply, never read back from the text
    return TestResult(name=name, status=status, message=failure.summary, failure=failure, duration=duration)


def _find_failure(exc: BaseException | None) -> Failure | None:
    """The structured failure inside `exc` (Hypothesis may wrap it in a group)."""
    if exc is None:
        return None
    if isinstance(exc, (StepFailure, LearnerError)):
        return exc.failure
    for inner in getattr(exc, "exceptions", ()) or ():
        found = _find_failure(inner)
        if found is not None:
            return found
    cause = exc.__cause__ or exc.__context__
    if cause is not None and cause is not exc:
        return _find_failure(cause)
    return None


def _step_of(item: Any) -> str:
    marker = item.get_closest_marker("step")
    return str(marker.args[0]) if marker and marker.args else ""


def _test_name(item: pytest.Item) -> str:
    fn = getattr(item, "function", None)
    doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
    if doc:
        return doc[0].rstrip(".")
    return item.name.removeprefix("test_").replace("_", " ")


@contextlib.contextmanager
def clean_pytest_env() -> Iterator[None]:
    """No plugin autoload, no PYTEST_ADDOPTS: the run is ours alone."""
    saved = {k: os.environ.get(k) for k in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
                                            "PYTEST_PLUGINS")}
    os.environ.pop("PYTEST_ADDOPTS", None)
    os.environ.pop("PYTEST_PLUGINS", None)
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def suite_files(step_ids: Sequence[str], extra: Sequence[Path] = ()) -> list[str]:
    files = []
    for sid in step_ids:
        files.extend(str(p) for p in sorted(SUITES_DIR.glob(f"test_{sid}_*.py")))
    files.extend(str(p) for p in extra)
    return files


def suite_args(step_ids: Sequence[str], extra: Sequence[Path] = ()) -> list[str]:
    """pytest's arguments for the suites of `step_ids` (also `session.SuiteSession`'s)."""
    return [
        *suite_files(list(step_ids), extra),
        "-c", str(SUITE_INI),
        "--rootdir", str(SUITES_DIR),
        "-p", "no:cacheprovider",
        "-p", "no:stepwise",
        "-p", "no:terminal",
        "-p", "no:unraisableexception",
        "-p", "no:threadexception",
        "-p", "no:faulthandler",
        "-p", "no:doctest",
        "-p", "no:junitxml",
        "-p", "no:pastebin",
        "-p", "no:nose",
        # Per-test machinery no grading needs (and warnings are silenced below).
        "-p", "no:capture",
        "-p", "no:logging",
        "-p", "no:warnings",
        "-p", "no:debugging",
        "-p", "no:unittest",
        "-p", "no:setuponly",
        "-p", "no:setupplan",
        "-p", "no:subtests",
        "--assert=plain",
        "--import-mode=importlib",
    ]


def run_suites(contexts: dict[str, StepContext], extra: Sequence[Path] = (),
               replay: Any = None, *, shrink: bool = True) -> dict[str, list[TestResult]]:
    """Run the hidden suites for `contexts`' steps in this process; outcomes by step."""
    plugin = _SuitePlugin(contexts, replay, shrink)
    args = suite_args(list(contexts), extra)
    with clean_pytest_env(), open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = pytest.main(args, plugins=[plugin])
    if code == pytest.ExitCode.INTERRUPTED:
        # Ctrl-C: some tests never ran, so no step may be reported as passed.
        raise KeyboardInterrupt
    if code == pytest.ExitCode.USAGE_ERROR or code == pytest.ExitCode.INTERNAL_ERROR:
        raise RuntimeError(f"the hidden suites could not run (pytest exit {int(code)})")
    return plugin.smallest_first()



__all__ = ["run_suites", "suite_files"]
