"""The page's three widgets for a hosted learner, on the learner's own code, as under `serve`.

The server never runs learner code: it validates the sliders' and fields'
input as `serve` does, takes the learner's latest saved files from the store
and asks the check runner to compute the widget in a check worker
(`checks.widget_work`: every stage by the learner's own functions in
sandboxes, the reference beside any stage that departs). The label
(`widgets.label`) is built here from the stages, with the steps changed since
their last check, so the page says exactly whose functions made the numbers.

Each learner has one widget call in flight at a time (`limits.Limits.widgets`:
the view answers a second one 429 at once, and runs this module on the
widget threads, never the server's shared pool); a call that does not finish within
`WIDGET_TIMEOUT`, or a runner that computes no widgets (the Dask runner),
gets the reference's numbers with a label that says so and why.

Answers are kept (`Answers`: keyed by the files' hash, the widget and its
parameters as numbers): the page asks for its widgets again after every save
and every check, and a learner's unchanged code gives the same numbers, so
only new code reaches a worker. When it does, the page's other widgets at
their first-screen settings are computed in the same job (`PAGE_WIDGETS`):
the page asks for them next, and they then cost no worker at all (issue 40).
"""

from __future__ import annotations

import concurrent.futures
import json
import threading
import time
from collections import OrderedDict
from typing import Any

from attn_practice.grader.host.checks.base import WorkersBusy
from attn_practice.grader.host.checks.widget_work import PAGE_WIDGETS, files_hash
from attn_practice.grader.host.lesson import Lesson, NotFound
from attn_practice.grader.host.store.base import Learner
from attn_practice.grader.teaching import explore
from attn_practice.grader.teaching.web import widgets

MIN_DK, MAX_DK = 1, 1024
MAX_FIELD = 4000
#: seconds a hosted widget call may take (a slot in the workers, then the answer)
WIDGET_TIMEOUT = 8.0
CORE = ("step1", "step2", "step3", "step4", "step5")
#: answers kept in the server (a few KB each): a lab of 200 times several file sets
KEEP_ANSWERS = 4000


class Answers:
    """Widget answers by (files' hash, widget, parameters as numbers), least recently used out.

    Each is kept as its JSON text, one object: thousands of answers as nested lists of
    floats were millions of objects for the server's garbage collector to walk, and each
    full collection stalled every request of the class for up to a second (issue 40).
    """

    def __init__(self, keep: int = KEEP_ANSWERS):
        self.keep = keep
        self._data: OrderedDict[tuple[Any, ...], str] = OrderedDict()
        self._coming: dict[str, list[Any]] = {}  # files' hash -> [Event, checks on their way]
        self._lock = threading.Lock()
        self.hits = 0

    def get(self, key: tuple[Any, ...]) -> dict[str, Any] | None:
        with self._lock:
            text = self._data.get(key)
            if text is None:
                return None
            self._data.move_to_end(key)
            self.hits += 1
        return json.loads(text)  # a fresh copy: callers may add to it

    def put(self, key: tuple[Any, ...], data: dict[str, Any]) -> None:
        text = json.dumps(data)
        with self._lock:
            self._data[key] = text
            self._data.move_to_end(key)
            while len(self._data) > self.keep:
                self._data.popitem(last=False)

    def expect(self, files_key: str) -> None:
        """A check computing the page's widgets on these files is on its way (`coming`)."""
        with self._lock:
            self._coming.setdefault(files_key, [threading.Event(), 0])[1] += 1

    def settle(self, files_key: str) -> None:
        """That check ended (with the answers put, or not): whoever waits goes on."""
        with self._lock:
            entry = self._coming.get(files_key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] <= 0:
                del self._coming[files_key]
                entry[0].set()

    def coming(self, files_key: str) -> threading.Event | None:
        """Set when the checks computing widgets on these files have ended; None: none is."""
        with self._lock:
            entry = self._coming.get(files_key)
            return entry[0] if entry is not None else None


ANSWERS = Answers()


class WidgetInputError(ValueError):
    """A widget's input we refuse; the message says why."""


def _compute(lesson: Lesson) -> widgets.Compute:
    def compute(step_id: str, *args: Any) -> Any:
        return widgets.by_reference(lesson.step(step_id), *args)

    return compute


def params_of(name: str, query: dict[str, str]) -> tuple[Any, ...]:
    """The widget's parameters from the query, refused as `serve` refuses them."""
    if name == "heatmap":
        return ()
    if name == "example":
        fields = tuple(query.get(k) for k in ("q", "keys", "values"))
        for k, text in zip(("q", "keys", "values"), fields, strict=True):
            if text is not None and len(text) > MAX_FIELD:
                raise WidgetInputError(f"{k} is too long")
        try:
            explore.build_example(*fields)
        except explore.InputError as exc:
            raise WidgetInputError(str(exc)) from None
        return fields
    if name == "scale":
        text = query.get("d_k") or "64"
        try:
            d_k = int(text)
        except ValueError:
            raise WidgetInputError(f"d_k must be a whole number, got {text[:20]!r}") from None
        if not MIN_DK <= d_k <= MAX_DK:
            raise WidgetInputError(f"d_k must lie between {MIN_DK} and {MAX_DK}, got {d_k}")
        return (d_k,)
    raise NotFound(f"no widget {name[:40]!r}")


def same_numbers(name: str, params: tuple[Any, ...]) -> tuple[Any, ...]:
    """The parameters as the widget will use them: the example's fields as the numbers they
    parse to (the page sends the defaults written out, the first screen none), so equal
    questions share one answer."""
    if name == "example":
        ex = explore.build_example(*params)
        return tuple(tuple(a.ravel().tolist()) + (a.shape,) for a in (ex.q, ex.keys, ex.values))
    return tuple(params)




def by_reference(lesson: Lesson, name: str, params: tuple[Any, ...]) -> dict[str, Any]:
    """The widget's data computed by the reference (no label yet); no learner code asked."""
    c = _compute(lesson)
    if name == "heatmap":
        s = explore.load_sentence()
        return {**widgets.heatmap(c, s.tokens, s.queries, s.keys), "sentence": s.text}
    if name == "example":
        ex = explore.build_example(*params)
        return widgets.example(c, ex.q, ex.keys, ex.values)
    return widgets.scale(c, int(params[0]))


def stale_steps(lesson: Lesson, learner: Learner) -> list[str]:
    """Steps saved since their last check (their numbers are of code not checked yet)."""
    checked = lesson.store.latest_standings(learner.id)
    latest = lesson.store.latest_files(learner.id)
    return [s for s, (_, _, version) in checked.items() if s in latest and latest[s].id != version]


def answer(lesson: Lesson, runner: Any, learner: Learner, name: str,
           query: dict[str, str]) -> dict[str, Any]:
    """A widget's data as serve's page expects it (with the server's time, which it shows)."""
    t0 = time.perf_counter()
    params = params_of(name, query)
    out = _answer(lesson, runner, learner, name, params)
    out["server_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    return out


def _labelled(data: dict[str, Any], said: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in data.items() if k not in ("stages", "problems")}
    out.update(said)
    return out


def _answer(lesson: Lesson, runner: Any, learner: Learner, name: str,
            params: tuple[Any, ...]) -> dict[str, Any]:
    compute = getattr(runner, "widget", None)
    if compute is None:
        return _labelled(by_reference(lesson, name, params), widgets.label(True, [
            "this class's checks run on a Dask cluster, where the widgets are not computed"]))
    files = lesson.files(learner)
    try:
        data = _computed(runner, compute, name, params, files)
    except WorkersBusy:
        why = (f"the checking workers were busy with the class's checks for {WIDGET_TIMEOUT:g} s;"
               " yours are computed again after your next save or check")
        return _labelled(by_reference(lesson, name, params), widgets.label(True, [why]))
    except (TimeoutError, concurrent.futures.TimeoutError):
        why = f"the widget took longer than {WIDGET_TIMEOUT:g} s on your code"
        return _labelled(by_reference(lesson, name, params), widgets.label(True, [why]))
    except Exception as exc:  # noqa: BLE001 - the worker failing is said beside the numbers
        why = f"the checking workers could not compute it ({str(exc)[:120]})"
        return _labelled(by_reference(lesson, name, params), widgets.label(True, [why]))
    return _labelled(data, widgets.label(data["stages"], stale_steps(lesson, learner)))


def with_check(runner: Any, files: dict[str, str]) -> bool:
    """Whether a check of `files` should bring the page's widgets back with its report (the
    page asks for them as soon as the report shows): yes unless they are kept already, or
    the runner computes no widgets. A yes is `expect`ed until `from_check` settles it; a
    check that passes brings none after all (`widget_work.after_check`), and the requests
    waiting for them then go to a worker in one job."""
    if getattr(runner, "widgets", None) is None:
        return False
    key = files_hash(files)
    if all(ANSWERS.get((key, n, same_numbers(n, p))) is not None for n, p in PAGE_WIDGETS):
        return False
    ANSWERS.expect(key)
    return True


def from_check(files: dict[str, str], result: dict[str, Any] | None) -> None:
    """Keep the widgets a check brought back (`with_check`), and let waiting requests go on."""
    key = files_hash(files)
    try:
        for name, params, data in (result or {}).get("widgets") or []:
            ANSWERS.put((key, name, same_numbers(name, tuple(params))), data)
    finally:
        ANSWERS.settle(key)


def _computed(runner: Any, compute: Any, name: str, params: tuple[Any, ...],
              files: dict[str, str]) -> dict[str, Any]:
    """The widget's data on `files`: kept, else computed in a worker with the page's other
    widgets that are not kept yet (one job, the sandboxes started once). A check on its way
    with these widgets (`with_check`) is waited for rather than done twice."""
    key = files_hash(files)
    wanted = (key, name, same_numbers(name, params))
    kept = ANSWERS.get(wanted)
    if kept is not None:
        return kept
    coming = ANSWERS.coming(key)
    if coming is not None and any(n == name and same_numbers(n, p) == wanted[2] for n, p in PAGE_WIDGETS):
        coming.wait(WIDGET_TIMEOUT)
        kept = ANSWERS.get(wanted)
        if kept is not None:
            return kept
    many = getattr(runner, "widgets", None)
    if many is None:
        data = compute(name, params, files, WIDGET_TIMEOUT)
        ANSWERS.put(wanted, data)
        return data
    asks = [(name, params)] + [(n, p) for n, p in PAGE_WIDGETS
                               if (key, n, same_numbers(n, p)) != wanted
                               and ANSWERS.get((key, n, same_numbers(n, p))) is None]
    answers = many(asks, files, WIDGET_TIMEOUT)
    for (n, p), data in zip(asks, answers, strict=True):
        ANSWERS.put((key, n, same_numbers(n, p)), data)
    return answers[0]

