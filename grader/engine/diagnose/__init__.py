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
  is fitted; in a pair, common wrong divisors are tried, and the factor the
  scale probe measured (c * d_k**p, a temperature where p = 0), also on top of
  a reading a behavioural probe found (a causal mask of the learner's own).
* Behavioural probes (`behaviour.py`) measure properties directly, on code
  nobody modelled: causality, mask sensitivity, head independence, the
  scale. Each adds its id where no id named covers it (causality:
  `causal-mask-hardcoded` at steps 5-8; `mask` changing nothing:
  `mask-ignored`); what fits no id is said in plain words in the step's notes
  (`MEASURED_NOTE`), with which numbers of dimensions work when nothing is named.

A call stopped by one of the grader's limits (memory, an answer far larger
than asked for) is left out: it says nothing about the mistake, while the
learner's own exception is evidence (`fixed-rank`). A call stopped by a limit
a busy machine can hit by chance (its time) is asked again, alone; stopped
again, it is reported as not measured (in the notes), never dropped unsaid.
A correct implementation can never be matched: see `evidence.py` for the
tolerances. One diagnosis costs at most `MAX_CALLS` learner calls (and at
most `MAX_RETRIES` retries) and is deterministic. Nothing here raises.

This package imports NumPy, the reference and the catalogue only: no
sandbox, no pytest. The learner's file is read as text (`source.py`), only to
name a `K.T` that running the code cannot show; it is never run here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from attn_practice.grader.catalog import parse_step_name
from attn_practice.grader.engine.diagnose.behaviour import (
    Finding,
    Property,
    divisors_text,
    measure,
    not_measured,
    rank_support,
    rank_text,
    scale_text,
)
from attn_practice.grader.engine.diagnose.evidence import MAX_CALLS, Asker, Obs, observe_all
from attn_practice.grader.engine.diagnose.probes import PROBES, Probe
from attn_practice.grader.engine.diagnose.readings import MEASURED_ONLY
from attn_practice.grader.engine.diagnose.scale import measured_divisors, measured_scale
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


#: Ids about the mask, and about the heads: a measured property adds its id only beside none of them.
_MASK_IDS = frozenset({"mask-inverted", "mask-not-renormalised", "mask-multiplied", "causal-mask-hardcoded",
                       "mask-ignored"})
_HEAD_IDS = frozenset({"heads-no-transpose", "heads-not-split", "heads-concat-wrong-axis"})
_SCALE_IDS = frozenset({"no-scale", "scale-by-dk", "multiplied-by-sqrt", "scale-by-dv", "scale-by-dmodel",
                        "wrong-scale"})


def _with_findings(step: str, found: list[str], findings: Sequence[Finding]) -> list[str]:
    """The verdict's ids, plus the id of each measured property that no id named covers."""
    out = list(found)
    for f in findings:
        if f.id is None or f.id in out:
            continue
        if f.id == "causal-mask-hardcoded":
            out = [i for i in out if i != "mask-ignored"]  # the causal mask is why it is ignored
        elif f.id in _MASK_IDS and _MASK_IDS.intersection(out):
            continue
        elif f.id in _HEAD_IDS and _HEAD_IDS.intersection(out):
            continue
        elif f.id == "wrong-scale" and _SCALE_IDS.intersection(out):
            continue
        if f.id in MISTAKES:
            out.append(f.id)
    return list(ordered_ids(out)) if out != found else out


def _findings(step: str, obs: Sequence[Obs], asker: Asker) -> list[Finding]:
    """The behavioural probes' findings, the measured scale among them."""
    findings = measure(step, obs)
    small = [o for o in obs if not o.large]
    cfg = measured_scale(step, small) if step in ("step2", "step5", "step6", "step7", "step8") else None
    if cfg is not None:
        findings.append(Finding(Property.SCALE, scale_text(cfg), "wrong-scale"))
    elif step in ("step5", "step6", "step7", "step8") and (divisors := measured_divisors(step, small)):
        findings.append(Finding(Property.SCALE, divisors_text(divisors), "wrong-scale"))
    missing = not_measured(asker.unmeasured)
    if missing is not None:
        findings.append(missing)
    return findings


def _measured_words(found: Sequence[str], findings: Sequence[Finding], obs: Sequence[Obs]) -> str:
    """Plain words for what was measured and no id named (or what could not be measured)."""
    words = [f.text for f in findings if f.id is None or f.id not in found]
    if not found:
        ranks = rank_text(rank_support(obs))
        if ranks:
            words.append(ranks)
    return " ".join(dict.fromkeys(words))


def _worded(d: Diagnosis, found: Sequence[str], obs: Sequence[Obs],
            reading: Mapping[str, Any] | None, findings: Sequence[Finding] = ()) -> Diagnosis:
    """The catalogue's words, made to say what this learner's answers showed where they vary."""
    measured = next((f.text for f in findings if f.id == d.id), "")
    if measured and d.id != FIXED_RANK:
        d = replace(d, explanation=f"{measured} {d.explanation}")
    if d.id == FIXED_RANK:
        return replace(d, explanation=fixed_rank_text(obs, [i for i in found if i != d.id], reading),
                       nudge=fixed_rank_nudge(obs))
    if d.id == "softmax-unstable":
        return replace(d, explanation=unstable_text(obs))
    return d


#: The key of the step note that carries what was measured and no id names.
MEASURED_NOTE = "measured"


def diagnose(step_id: str, call: Callable[..., Any],
             failing_inputs: Sequence[tuple[Any, ...]] | None = None,
             source: str | None = None, notes: dict[str, str] | None = None) -> list[Diagnosis]:
    """The known mistakes that explain the learner's outputs, the main one first.

    `call(*args)` runs the learner's function (in its sandbox) and returns a
    float64 array; any exception from it counts as "no output". `source` is
    the learner's step file as text (default: read from where the engine's
    learner says it is; never run here). What the behavioural probes measured
    and no id names goes, in plain words, into `notes[MEASURED_NOTE]` (default:
    the engine learner's own notes, which the step's report shows). Never raises.
    """
    if notes is None:
        notes = getattr(call, "notes", None)
    try:
        step = _step_id(step_id)
        if step is None:
            return []
        asker = Asker(call)
        obs = observe_all(step, asker, list(failing_inputs or ()))
        if not obs:
            return []
        findings = _findings(step, obs, asker)
        measured = {f.id: MEASURED_ONLY[step][f.id] for f in findings
                    if f.id is not None and f.id in MEASURED_ONLY.get(step, {})}
        result = verdict(step, obs, [f.reading for f in findings if f.reading], measured)
        found = _with_findings(step, result.ids, findings)
        if FIXED_RANK in found:
            found = _with_source(step, found, source if source is not None else learner_source(call))
            # the symptom after every cause (and after softmax-unstable, named whatever else is wrong)
            found = [*(i for i in found if i != FIXED_RANK), FIXED_RANK]
        words = _measured_words(found, findings, obs)
        if words and isinstance(notes, dict):
            module = getattr(call, "module", None)  # the engine's learner says which file it ran
            where = f"{module}.py: " if isinstance(module, str) and module.isidentifier() else ""
            notes.setdefault(MEASURED_NOTE, where + words)
        return [_worded(mistake_for_id(i), found, obs, result.reading, findings) for i in found]
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a crash
        return []


__all__ = ["MAX_CALLS", "MEASURED_NOTE", "PROBES", "Probe", "diagnose", "mistake_for_id"]
