"""The worker side of a hosted widget: a learner's files in, serve's widget data out.

Runs in a check worker process (never the server): the learner's latest
saved files are handed, as bytes, to sandboxes started by this worker's
widget launcher (the same way `work.check_files` hands them to a check), and
`teaching.web.widgets` computes the widget stage by stage with the learner's
own functions, the reference beside any stage that departs, exactly as under
`serve`. The server adds the label (`widgets.label`, pure data).

Each worker keeps the sandboxes of the last few learners' file sets (keyed by
the files' hash; the five steps of a file set load into one sandbox,
`sandbox.shared`, not five: issue 40) and a small cache of answers keyed by (files' hash, widget,
parameters): a slider dragged back and forth costs nothing the second time.
Kept sandboxes are frozen between calls (`Launcher.pause`): a learner's code
that leaves a thread or a child running after its answer gets no CPU until
its next widget call (issue 35).
The kept sandboxes live on a fork server of their own (`launcher()`), not
the check engine's: the engine's is checked between checks and rebuilt when
it holds any process, so widget sandboxes on it were killed by the next check
(and a new fork server started, NumPy imported again) every time (issue 40).
Calls into learner code are bounded by `WIDGET_LIMITS` (a short per-call
time limit): an infinite loop costs one call's timeout, then that step's
sandbox answers at once with the same failure.
"""

from __future__ import annotations

import enum
import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.host.checks import work
from attn_practice.grader.sandbox.launcher import Limits

#: a widget call is interactive: one second per call into the learner's code, not a check's
#: budget, counted on the sandbox's CPU clock (a call kept waiting by a full lab is not labelled
#: "your function timed out"; the wait is still bounded, at CPU_CLOCK_WALL seconds per second)
WIDGET_LIMITS = Limits(call_timeout=1.0, load_timeout=5.0, step_timeout=10.0, cpu=30, cpu_clock=True)
KEEP_LEARNERS = 3
KEEP_ANSWERS = 64
CORE = ("step1", "step2", "step3", "step4", "step5")


class Widget(str, enum.Enum):
    HEATMAP = "heatmap"
    EXAMPLE = "example"
    SCALE = "scale"


_functions: OrderedDict[str, Any] = OrderedDict()
_launcher: Any = None


def launcher() -> Any:
    """This worker's fork server for widget sandboxes, started on first use; rebuilt, with the
    kept sandboxes dropped, when a sandbox left it changed (as `grade_with` does for checks)."""
    global _launcher
    from attn_practice.grader.sandbox.launcher import Launcher

    if _launcher is None:
        _launcher = Launcher()
        _launcher.warm()
    kept = [pid for fns in _functions.values() for pid in sandbox_pids(fns)]
    if _launcher.check(kept=kept):
        _drop_functions()
        _launcher.refresh()
    return _launcher


def _drop_functions() -> None:
    while _functions:
        _, old = _functions.popitem(last=False)
        old.close()  # its sandboxes; the launcher is only borrowed


def close() -> None:
    """Stop the kept sandboxes and the widgets' fork server (a worker that ends)."""
    global _launcher
    _drop_functions()
    _answers.clear()
    if _launcher is not None:
        _launcher.close()
        _launcher = None
_answers: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()


def files_hash(files: dict[str, str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(name.encode() + b"\0" + files[name].encode("utf-8") + b"\0")
    return h.hexdigest()


def _learner_functions(key: str, files: dict[str, str]) -> Any:
    from attn_practice.grader.teaching.web.widgets import LearnerFunctions

    fns = _functions.get(key)
    if fns is not None:
        _functions.move_to_end(key)
        return fns
    while len(_functions) >= KEEP_LEARNERS:
        _, old = _functions.popitem(last=False)
        old.close()  # its sandboxes; the launcher is only borrowed
    data = {name: text.encode("utf-8") for name, text in files.items()}
    fns = LearnerFunctions(work.SUBMISSION, launcher=launcher(), files=data,
                           limits=WIDGET_LIMITS, shared=True)  # one sandbox for the five
    fns.prepare([(resolve_step(s), key) for s in CORE])  # the five load in turn, in one sandbox
    _functions[key] = fns
    return fns


def sandbox_pids(fns: Any) -> list[int]:
    """The live sandboxes a learner's warm functions hold."""
    boxes = [getattr(learner, "sandbox", None) for _, learner in list(getattr(fns, "_learners", {}).values())]
    shared = getattr(fns, "_shared", None)
    boxes.append(getattr(shared, "_sandbox", None))  # held even while no step holds it
    out: list[int] = []
    for box in boxes:
        if box is not None and not box.closed and box.pid not in out:  # the shared one, once
            out.append(box.pid)
    return out


def _pause(fns: Any, on: bool) -> None:
    """Freeze a learner's warm sandboxes after an answer, thaw them before the next: a thread
    their code left running (or a child it started) gets no CPU between widget calls."""
    try:
        if _launcher is not None:  # no health check here: `fns` is in use
            _launcher.pause(sandbox_pids(fns), on)
    except Exception:  # noqa: BLE001 - a fork server gone: the call itself reports it
        pass


def widget_files(name: str, params: tuple[Any, ...], files: dict[str, str]) -> dict[str, Any]:
    """Widget `name` with `params` on the learner's `files`: serve's data (stages, no label yet)."""
    from attn_practice.grader.teaching import explore
    from attn_practice.grader.teaching.web import widgets

    kind = Widget(name)
    key = files_hash(files)
    cache_key = (key, kind.value, params)
    if cache_key in _answers:
        _answers.move_to_end(cache_key)
        return _answers[cache_key]
    fns = _learner_functions(key, files)

    def compute(step_id: str, *args: Any) -> Any:
        return fns(resolve_step(step_id), key, *args)

    _pause(fns, False)
    try:
        if kind is Widget.HEATMAP:
            s = explore.load_sentence()
            data = {**widgets.heatmap(compute, s.tokens, s.queries, s.keys), "sentence": s.text}
        elif kind is Widget.EXAMPLE:
            ex = explore.build_example(*params)  # validated by the server already
            data = widgets.example(compute, ex.q, ex.keys, ex.values)
        else:
            data = widgets.scale(compute, int(params[0]))
    finally:
        _pause(fns, True)  # nothing of the learner's runs until their next widget call
    _answers[cache_key] = data
    while len(_answers) > KEEP_ANSWERS:
        _answers.popitem(last=False)
    return data


def warm_up() -> dict[str, Any]:
    """`work.warm_up`, and the widgets' fork server started (it imports NumPy): a worker's
    first check brings the page's widgets, and no learner should wait for that."""
    stats = work.warm_up()
    launcher()
    return stats


#: the page's widgets as its first screen asks for them, after a save or a check
PAGE_WIDGETS: tuple[tuple[str, tuple[Any, ...]], ...] = (
    ("heatmap", ()), ("example", (None, None, None)), ("scale", (64,)))


def check_files(step: str, files: dict[str, str], known_failing: frozenset[str] = frozenset(),
                known_unchecked: frozenset[str] = frozenset(),
                unchanged: frozenset[str] | None = None, widgets: bool = False) -> dict[str, Any]:
    """A hosted check (`work.check_files`) whose worked example, and with `widgets` the page's
    widgets (under "widgets": [[name, params, data], ...]), come from one sandbox holding
    the learner's five steps: the page asks for its widgets as soon as the report shows, and
    after a failed check they then need no job of their own, nor a sandbox of their own
    (issue 40; a passing check has no worked example and brings none: `after_check`)."""
    def teaching(report: Any, text: dict[str, str]) -> tuple[Sequence[Any], dict[str, Any]]:
        return after_check(report, text, widgets)

    return work.check_files(step, files, known_failing, known_unchecked, None, unchanged,
                            teaching=teaching)


def after_check(report: Any, files: dict[str, str], widgets: bool) -> tuple[Sequence[Any], dict[str, Any]]:
    """The worked example's rows (a failed check's) and the page's widgets, on one sandbox.

    The widgets ride along only when the worked example starts that sandbox anyway (then
    they cost ~10 ms more). A check with no worked example (it passed) answers without them:
    starting the sandbox and computing them was half such a check's time (~50 of ~100 ms),
    and the learner waits for the report, not the widgets; the page's request for them then
    computes them in one widget job (`widgets_hosted`), as if no check had been asked.
    """
    from attn_practice.grader.teaching.worked_example import rows_after_check, worked_example_steps

    worked = bool(worked_example_steps(report))
    if not worked:
        return (), {}
    fns = _learner_functions(files_hash(files), files)
    rows: Sequence[Any] = ()
    if worked:
        data = {name: text.encode("utf-8") for name, text in files.items()}
        _pause(fns, False)
        try:
            rows = rows_after_check(report, work.SUBMISSION, _launcher, files=data,
                                    box=getattr(fns, "_shared", None))
        finally:
            _pause(fns, True)
    if not widgets:
        return rows, {}
    answers = widgets_files(list(PAGE_WIDGETS), files)
    return rows, {"widgets": [[name, list(params), data] for (name, params), data
                              in zip(PAGE_WIDGETS, answers, strict=True)]}


def widgets_files(asks: list[tuple[str, tuple[Any, ...]]], files: dict[str, str]) -> list[dict[str, Any]]:
    """Several widgets on one file set in one job: the page asks for its three after every save
    and check, and the second and third then cost a call each into sandboxes already warm,
    not a trip through the queue (and maybe to another worker, which would start five more)."""
    return [widget_files(name, tuple(params), files) for name, params in asks]


work.AT_EXIT.append(close)
