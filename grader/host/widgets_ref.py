"""The page's three widgets for a hosted learner, computed by the reference functions.

The widgets' own module (`teaching.web.widgets`) does the arithmetic; this
adapter feeds it the lesson's data and validates the sliders' and fields'
input as `serve` does. Hosted, the numbers come from the reference (the page
says so beside them): running each learner's functions for every slider
move would put a sandbox per learner on the server (see README).
Reference answers are cached (they never change).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from attn_practice.grader.host.lesson import Lesson, NotFound
from attn_practice.grader.teaching import explore
from attn_practice.grader.teaching.web import widgets

MIN_DK, MAX_DK = 1, 1024
MAX_FIELD = 4000
_cache: dict[Any, dict[str, Any]] = {}
_lock = threading.Lock()


class WidgetInputError(ValueError):
    """A widget's input we refuse; the message says why."""


def _compute(lesson: Lesson) -> widgets.Compute:
    def compute(step_id: str, *args: Any) -> Any:
        return widgets.by_reference(lesson.step(step_id), *args)

    return compute


def _labelled(out: dict[str, Any]) -> dict[str, Any]:
    out = dict(out)
    out.update(widgets.label(False, out.pop("problems")))
    return out


def answer(lesson: Lesson, name: str, query: dict[str, str]) -> dict[str, Any]:
    """A widget's data as serve's page expects it (with the server's time, which it shows)."""
    t0 = time.perf_counter()
    out = _answer(lesson, name, query)
    out["server_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    return out


def _answer(lesson: Lesson, name: str, query: dict[str, str]) -> dict[str, Any]:
    if name == "heatmap":
        with _lock:
            if "heatmap" not in _cache:
                s = explore.load_sentence()
                _cache["heatmap"] = {**_labelled(widgets.heatmap(_compute(lesson), s.tokens,
                                                                 s.queries, s.keys)),
                                     "sentence": s.text}
            return dict(_cache["heatmap"])
    if name == "example":
        fields = {k: query.get(k) for k in ("q", "keys", "values")}
        for k, text in fields.items():
            if text is not None and len(text) > MAX_FIELD:
                raise WidgetInputError(f"{k} is too long")
        try:
            ex = explore.build_example(fields["q"], fields["keys"], fields["values"])
        except explore.InputError as exc:
            raise WidgetInputError(str(exc)) from None
        return _labelled(widgets.example(_compute(lesson), ex.q, ex.keys, ex.values))
    if name == "scale":
        text = query.get("d_k") or "64"
        try:
            d_k = int(text)
        except ValueError:
            raise WidgetInputError(f"d_k must be a whole number, got {text[:20]!r}") from None
        if not MIN_DK <= d_k <= MAX_DK:
            raise WidgetInputError(f"d_k must lie between {MIN_DK} and {MAX_DK}, got {d_k}")
        with _lock:
            if ("scale", d_k) not in _cache:
                _cache[("scale", d_k)] = _labelled(widgets.scale(_compute(lesson), d_k))
            return dict(_cache[("scale", d_k)])
    raise NotFound(f"no widget {name[:40]!r}")
