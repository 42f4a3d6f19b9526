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
"""

from __future__ import annotations

import concurrent.futures
import time
from typing import Any

from attn_practice.grader.host.lesson import Lesson, NotFound
from attn_practice.grader.host.store.base import Learner
from attn_practice.grader.teaching import explore
from attn_practice.grader.teaching.web import widgets

MIN_DK, MAX_DK = 1, 1024
MAX_FIELD = 4000
#: seconds a hosted widget call may take (a slot in the workers, then the answer)
WIDGET_TIMEOUT = 8.0
CORE = ("step1", "step2", "step3", "step4", "step5")


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
        data = compute(name, params, files, WIDGET_TIMEOUT)
    except (TimeoutError, concurrent.futures.TimeoutError):
        why = f"the widget took longer than {WIDGET_TIMEOUT:g} s on your code"
        return _labelled(by_reference(lesson, name, params), widgets.label(True, [why]))
    except Exception as exc:  # noqa: BLE001 - the worker failing is said beside the numbers
        why = f"the checking workers could not compute it ({str(exc)[:120]})"
        return _labelled(by_reference(lesson, name, params), widgets.label(True, [why]))
    return _labelled(data, widgets.label(data["stages"], stale_steps(lesson, learner)))
