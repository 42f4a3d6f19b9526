"""One pytest session per engine: configure and collect the hidden suites once, then run many.

`run_suites` (plugin.py) starts pytest from scratch for every submission:
parse options, register plugins, import and collect every suite module,
build fixtures. For a batch worker that is a fifth of its time per
submission, and it is the same work every time. A `SuiteSession` does it
once; `run` then feeds the collected items one submission's step contexts
and runs each item's usual protocol (setup, call, teardown, every hook).
Fixtures of every scope are torn down after the last item of each run (the
protocol's `nextitem=None`), so nothing of one submission is left for the
next: a run sees what a fresh session would, minus the collecting.

Anything unusual (an interrupt, an error inside pytest itself) closes the
session and reaches the caller as it would from `run_suites`; the next
submission gets a fresh session. A session that cannot be collected is not
tried again: `run_suites` grades instead, so it costs time, never a result.

Per-submission inputs must be drawn when a test runs (fixtures, the replay),
never at collection: collection happens once per worker.
"""

from __future__ import annotations

import contextlib
import os
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from attn_practice.grader.engine.plugin import (
    _step_of,
    _SuitePlugin,
    _test_name,
    clean_pytest_env,
    run_suites,
    suite_args,
)
from attn_practice.grader.engine.replay import is_ours
from attn_practice.grader.results import TestResult
from attn_practice.grader.suites.assertions import StepContext


class SuiteSession:
    """The hidden suites of `step_ids` (and `extra` files), configured and collected once."""

    #: sessions collected in this process (a warm worker collects one: tests and benches count)
    collected = 0

    def __init__(self, step_ids: Sequence[str], extra: Sequence[Path] = (), replay: Any = None,
                 *, shrink: bool = True) -> None:
        self.step_ids = frozenset(step_ids)
        # Every step is "present" while collecting, so that no item is deselected for good.
        self.plugin = _SuitePlugin(dict.fromkeys(self.step_ids), replay, shrink)  # type: ignore[arg-type]
        self.config: pytest.Config | None = None
        self.session: pytest.Session | None = None
        self.items: list[pytest.Item] = []
        with _quiet(), clean_pytest_env():
            config = _prepare(suite_args(sorted(self.step_ids), extra), self.plugin)
            try:
                config._do_configure()
                session = pytest.Session.from_config(config)
                config.hook.pytest_sessionstart(session=session)
                session.perform_collect()
            except BaseException:
                with contextlib.suppress(Exception):
                    config._ensure_unconfigure()
                raise
            if session.testsfailed or not session.items:  # a suite that does not import
                with contextlib.suppress(Exception):
                    config._ensure_unconfigure()
                raise RuntimeError("the hidden suites could not be collected")
        self.config, self.session, self.items = config, session, list(session.items)
        SuiteSession.collected += 1
        #: ids of the items run by their call phase alone (see `_call`)
        self.call_only = frozenset(id(item) for item in self.items if _needs_only_its_call(item))

    @property
    def open(self) -> bool:
        return self.session is not None

    def covers(self, step_ids: Sequence[str]) -> bool:
        return self.open and set(step_ids) <= self.step_ids

    def run(self, contexts: dict[str, StepContext],
            only: frozenset[str] = frozenset()) -> dict[str, list[TestResult]]:
        """The outcomes of the collected tests of `contexts`' steps, as `run_suites` returns them.

        `only`: run just the tests of these names (as reports name them; confirming a timeout).
        """
        assert self.config is not None and self.session is not None
        plugin = self.plugin
        plugin.begin(contexts)  # one submission's outcomes and failures only
        items = [item for item in self.items if _step_of(item) in contexts
                 and (not only or _test_name(item) in only)]
        # Fixtures are set up and torn down for the items that run the whole protocol only:
        # each of those is followed, as far as pytest knows, by the next such item.
        protocol = [item for item in items if id(item) not in self.call_only]
        after = {id(item): nxt for item, nxt in zip(protocol, [*protocol[1:], None], strict=False)}
        hook = self.config.hook
        try:
            with _quiet(), clean_pytest_env():
                for item in items:
                    if id(item) in self.call_only:
                        self._call(item, contexts[_step_of(item)])
                    else:
                        hook.pytest_runtest_protocol(item=item, nextitem=after[id(item)])
                    if self.session.shouldstop or self.session.shouldfail:
                        raise RuntimeError(f"the hidden suites stopped: {self.session.shouldstop}"
                                           f"{self.session.shouldfail}")
            return plugin.smallest_first()  # the same order and echo as a fresh pytest gives
        except BaseException:
            self.close()  # half-run: fixtures may be set up; never reuse it
            raise
        finally:
            plugin.contexts = {}

    def _call(self, item: pytest.Item, ctx: StepContext) -> None:
        """Run `item`'s call phase with its one fixture given, and record the outcome.

        For a hidden-suite test that uses nothing but the `step` fixture, the
        rest of pytest's protocol (set-up and teardown phases, three reports
        and their hooks) was a sixth of a worker's time per submission and
        changes nothing: the call runs through the same hooks (Hypothesis's,
        ours) and its outcome is recorded as `pytest_runtest_makereport` would.
        """
        item.funcargs = {"step": ctx}  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        try:
            item.ihook.pytest_runtest_call(item=item)
            exc: BaseException | None = None
        except (pytest.exit.Exception, KeyboardInterrupt):
            raise
        except BaseException as caught:  # noqa: BLE001 - a test's failure, as pytest's CallInfo takes it
            exc = caught
        finally:
            item.funcargs = None  # type: ignore[attr-defined]
            os.environ.pop("PYTEST_CURRENT_TEST", None)
        self.plugin.record_call(item, exc, time.perf_counter() - t0)

    def close(self) -> None:
        config, session = self.config, self.session
        self.config, self.session, self.items = None, None, []
        if config is not None:
            with contextlib.suppress(Exception), _quiet():
                if session is not None:
                    config.hook.pytest_sessionfinish(session=session, exitstatus=0)
                config._ensure_unconfigure()


class SuiteRunner:
    """How an engine runs its suites: `run_suites` per submission, or one reused session.

    `reuse` (batch workers, `serve`): from the `reuse_from`-th submission on
    (the second by default), run on a `SuiteSession` of every catalogued step
    (one collection pays off only when it is used again; `check` grades once
    and keeps `run_suites`). A batch worker, sure to grade many, starts it on
    the first and so collects once instead of twice.
    """

    #: runs in this process that configured and collected pytest afresh (`run_suites`)
    fresh_runs = 0

    def __init__(self, extra: Sequence[Path] = (), replay: Any = None, *, shrink: bool = True,
                 reuse: bool = False) -> None:
        self.extra = tuple(extra)
        self.replay = replay
        self.shrink = shrink
        self.reuse = reuse
        self.reuse_from = 2
        self.runs = 0
        #: run only the tests of these names (see `SuiteSession.run`); needs the session
        self.only: frozenset[str] = frozenset()
        self.session: SuiteSession | None = None
        self.failed = False  # a session that could not start is not tried again

    def run(self, contexts: dict[str, StepContext]) -> dict[str, list[TestResult]]:
        self.runs += 1
        if self.reuse and self.runs >= self.reuse_from and not self.failed:
            if self.session is None or not self.session.open:
                self.session = self._start()
            if self.session is not None and self.session.covers(list(contexts)):
                return self.session.run(contexts, self.only)
        SuiteRunner.fresh_runs += 1
        return run_suites(contexts, self.extra, self.replay, shrink=self.shrink)

    def _start(self) -> SuiteSession | None:
        from attn_practice.grader.catalog import load_catalog

        try:
            return SuiteSession([e.id for e in load_catalog()], self.extra, self.replay, shrink=self.shrink)
        except Exception:  # noqa: BLE001 - only an optimisation: run_suites still grades
            self.failed = True
            return None

    def close(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None


def _needs_only_its_call(item: pytest.Item) -> bool:
    """A test of our hidden suites whose only fixture is `step` and whose only marker is the step's.

    (A course's private tests, and any test with other fixtures or markers
    such as skip, xfail or parametrize, run pytest's whole protocol.)
    """
    info = getattr(item, "_fixtureinfo", None)
    return (isinstance(item, pytest.Function) and info is not None and "step" in info.names_closure
            and set(info.names_closure) <= {"step", "request"}  # `request`: what our `step` fixture reads
            and is_ours(item) and all(m.name == "step" for m in item.iter_markers()))


def _prepare(args: list[str], plugin: _SuitePlugin) -> pytest.Config:
    from _pytest.config import _prepareconfig

    return _prepareconfig(args, plugins=[plugin])


@contextlib.contextmanager
def _quiet() -> Any:
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


__all__ = ["SuiteRunner", "SuiteSession"]
