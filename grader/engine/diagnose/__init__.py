"""Name the known mistakes behind a failing step (CONTRACT §3).

`diagnose(step_id, call, failing_inputs)` runs the learner's function (through
`call`, one sandbox round trip each) on the failing test inputs and on a few
fixed probes (`probes.py`), then searches for the catalogued mistakes, alone
or together, whose computation gives what the learner gave (`search.py`).
Every mistake is modelled as a change to one part of the computation
(`readings.py`), computed here in the trusted process, so mistakes compose
without a hand-written file per pair.

How an id is matched
--------------------
* A reading matches an input when its output coincides with the
  reference and the learner is right there, or the learner's output agrees
  with it (same shape, same NaN/inf positions, finite entries within rtol
  1e-5 and atol 1e-8 + 1e-6 * the output's largest magnitude).
* Reported: all ids of the best explanation (one id, else two, else
  three) that matches every input; an id of a pair or triple only if its
  part changes the result somewhere the learner follows. Never an id the evidence contradicts, never one on right answers.
* `softmax-unstable`: NaN or inf on a large-magnitude probe that the
  reference handles, where the same input scaled down gives none; named
  whatever else is wrong. `fixed-rank`: one number of dimensions right (or explained by
  other ids), every other wrong, and nothing more specific fits; its explanation
  says which number of dimensions works and what the others do (`wording.py`).
* `wrong-scale` covers every divisor but the right one: alone, the factor
  is fitted; in a pair, common wrong divisors are tried.

A call stopped by one of the grader's limits (time, memory, an answer far
larger than asked for) is left out: it says nothing about the mistake, while
the learner's own exception is evidence (`fixed-rank`). A correct
implementation can never be matched: see `evidence.py` for the tolerances.
One diagnosis costs at most `MAX_CALLS` learner calls and is deterministic.
Nothing here raises.

This package imports NumPy, the reference and the catalogue only: no
sandbox, no pytest. The learner's file is read as text (`source.py`), only to
name a `K.T` that running the code cannot show; it is never run here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from attn_practice.grader.catalog import parse_step_name
from attn_practice.grader.engine.diagnose.evidence import MAX_CALLS, Obs, observe
from attn_practice.grader.engine.diagnose.probes import PROBES, Probe
from attn_practice.grader.engine.diagnose.search import ordered_ids
from attn_practice.grader.engine.diagnose.source import learner_source, transposes_all_axes
from attn_practice.grader.engine.diagnose.verdict import verdict
from attn_practice.grader.engine.diagnose.wording import (
    fixed_rank_nudge,
    fixed_rank_text,
    unstable_text,
)
from attn_practice.grader.results import Diagnosis
from attn_practice.reference.mistakes import MISTAKES

FIXED_RANK = "fixed-rank"


def _step_id(step_id: str) -> str | None:
    parsed = parse_step_name(step_id)
    return parsed.id if parsed is not None and parsed.id in PROBES else None


def mistake_for_id(mistake_id: str) -> Diagnosis:
    """The learner-facing `Diagnosis` for a catalogued id."""
    m = MISTAKES[mistake_id]
    return Diagnosis(id=m.id, title=m.title, explanation=m.explanation, nudge=m.nudge)


#: Ids that already account for a transpose the learner's file shows.
_TRANSPOSES = frozenset({"transpose-all-axes", "weights-transposed", "scores-transposed"})


def _with_source(step: str, found: list[str], source: str | None) -> list[str]:
    """`transpose-all-axes` before `fixed-rank` when the file has `.T` and no id explains it.

    Running the code cannot show a K.T that code written for matrices stops
    before (see `source.py`); the file shows it.
    """
    if FIXED_RANK not in found or _TRANSPOSES.intersection(found):
        return found
    if "transpose-all-axes" not in MISTAKES or step not in MISTAKES["transpose-all-axes"].impls:
        return found
    if not transposes_all_axes(source):
        return found
    return list(ordered_ids([*found, "transpose-all-axes"]))


def _worded(d: Diagnosis, found: Sequence[str], obs: Sequence[Obs],
            reading: Mapping[str, Any] | None) -> Diagnosis:
    """The catalogue's words, made to say what this learner's answers showed where they vary."""
    if d.id == FIXED_RANK:
        return replace(d, explanation=fixed_rank_text(obs, [i for i in found if i != d.id], reading),
                       nudge=fixed_rank_nudge(obs))
    if d.id == "softmax-unstable":
        return replace(d, explanation=unstable_text(obs))
    return d


def diagnose(step_id: str, call: Callable[..., Any],
             failing_inputs: Sequence[tuple[Any, ...]] | None = None,
             source: str | None = None) -> list[Diagnosis]:
    """The known mistakes that explain the learner's outputs, the main one first.

    `call(*args)` runs the learner's function (in its sandbox) and returns a
    float64 array; any exception from it counts as "no output". `source` is
    the learner's step file as text (default: read from where the engine's
    learner says it is; never run here). Never raises.
    """
    try:
        step = _step_id(step_id)
        if step is None:
            return []
        obs = observe(step, call, list(failing_inputs or ()))
        if not obs:
            return []
        result = verdict(step, obs)
        found = result.ids
        if FIXED_RANK in found:
            found = _with_source(step, found, source if source is not None else learner_source(call))
            # the symptom after every cause (and after softmax-unstable, named whatever else is wrong)
            found = [*(i for i in found if i != FIXED_RANK), FIXED_RANK]
        return [_worded(mistake_for_id(i), found, obs, result.reading) for i in found]
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a crash
        return []


__all__ = ["MAX_CALLS", "PROBES", "Probe", "diagnose", "mistake_for_id"]
