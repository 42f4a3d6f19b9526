"""The verdict: the order of the search's stages and the ids found by their own rules.

`softmax-unstable` (NaN on a large probe whose small twin is fine) is decided
before anything else and named whatever else is wrong, unless the mistake
found computes that NaN itself after subtracting a maximum. Then a full
explanation (`search.explain_fit`), else `fixed-rank` and what explains the
one rank that works, else a partial explanation (see `search.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from attn_practice.grader.engine.diagnose.evidence import (
    MATCH,
    Obs,
    close,
    differs,
    differs_finitely,
)
from attn_practice.grader.engine.diagnose.probes import TWIN
from attn_practice.grader.engine.diagnose.readings import IMPLIED, Config
from attn_practice.grader.engine.diagnose.scale import fit_scale, measured_scale
from attn_practice.grader.engine.diagnose.search import (
    FIXED_RANK,
    MEASURED,
    ORDER,
    UNSTABLE,
    Alt,
    Fit,
    alternatives,
    best_fit,
    consistent,
    explain_fit,
    reading,
)


# ------------------------------------------------------------ special rules
def unstable(obs: Sequence[Obs]) -> bool:
    """NaN/inf on a large-magnitude probe where its small twin (and the reference) is finite."""
    twins = {o.name: o for o in obs if o.probe and "twin" in o.tags}
    for o in obs:
        t = twins.get(o.name + TWIN)
        if not (o.probe and o.large and t is not None and o.out is not None and t.out is not None):
            continue
        if o.out.shape == t.out.shape and o.out.shape == o.ref.shape and bool(np.any(
                ~np.isfinite(o.out) & np.isfinite(t.out) & np.isfinite(o.ref))):
            return True
    return False


def _spoiled(o: Obs) -> bool:
    """An input an unstable softmax overflowed on: a large probe, or a failing input, with NaN/inf."""
    return (o.large or not o.probe) and o.out is not None and not bool(np.all(np.isfinite(o.out)))


def fixed_rank(step: str, obs: Sequence[Obs]) -> tuple[str, ...] | None:
    """('fixed-rank', ...) when one number of dimensions is right or explained and every other is wrong."""
    ranks = sorted({o.rank for o in obs if o.probe})
    for r in ranks:
        others = [o for o in obs if o.rank != r]
        if not any(o.probe for o in others) or any(o.right for o in others):
            continue
        here = [o for o in obs if o.rank == r]
        if all(o.right for o in here):
            # right at one rank only: a rank failure raises or gets a shape wrong somewhere;
            # answers of the right shape everywhere may be an uncatalogued mistake that
            # happens to vanish at this rank (a per-slice shift on a vector)
            if any(o.out is None or o.out.shape != o.ref.shape for o in others):
                return (FIXED_RANK,)
            continue
        fit = best_fit(step, here, triples=False)  # one rank: few mistakes show (and it is quick)
        # the rank must be what breaks: somewhere else the learner's code fails to run
        # where the explanation of this rank runs (a shape unpacked into two names)
        if fit is not None and (fit.alt is None or any(
                o.out is None and not consistent(o, fit.alt) for o in others)):
            return (*fit.ids, FIXED_RANK)
    return None


def partial(step: str, obs: Sequence[Obs]) -> list[str]:
    """Ids that no input contradicts and some probe supports (see stage 4 above)."""
    verdicts: list[tuple[int, int, int, str]] = []
    for mid, alts in alternatives(step).items():
        support = unexplained = 0
        on_probe = False
        for o in obs:
            verdict = _outcome(o, alts)
            if verdict == "contradicts":
                break
            if verdict == "support":
                support += 1
                on_probe = on_probe or o.probe
            elif verdict == "silent" and not o.right:
                unexplained += 1
        else:
            if on_probe:
                verdicts.append((unexplained, -support, ORDER.get(mid, 99), mid))
    if not any(v[0] == 0 for v in verdicts) and "wrong-scale" in alternatives(step):
        n = fit_scale(step, obs)
        if n:
            verdicts.append((0, -n, ORDER["wrong-scale"], "wrong-scale"))
    found = [v[3] for v in sorted(verdicts)]
    return [*found, *(m for m in _implied_partly(step, found, obs) if m not in found)]


def _implied_partly(step: str, found: Sequence[str], obs: Sequence[Obs]) -> list[str]:
    """The second id of a two-mistake spelling (readings.IMPLIED) of an id found partly:
    some input where the learner follows that spelling and not its counterpart."""
    extra = []
    for mid in found:
        for alt in alternatives(step).get(mid, ()):
            for (slot, variant), (changes, other_id) in IMPLIED.get(step, {}).items():
                if alt.cfg is None or alt.cfg.get(slot) != variant or other_id in (*found, *extra):
                    continue
                other = reading(step, {**alt.cfg, **changes})
                for o in obs:
                    mine, theirs = o.output(alt.key, alt.fn), o.output(other.key, other.fn)
                    if mine is not None and theirs is not None and o.out is not None and \
                            close(o.out, mine, MATCH) and differs_finitely(mine, theirs):
                        extra.append(other_id)
                        break
    return extra


def _outcome(o: Obs, alts: Sequence[Alt]) -> str:
    """'support', 'consistent', 'silent' or 'contradicts' for one input."""
    any_differs = consistent = some_raised = False
    for alt in alts:
        out = o.output(alt.key, alt.fn)
        if out is None:
            some_raised = True
            consistent = consistent or o.out is None
            continue
        d = differs(out, o.ref)
        any_differs = any_differs or d
        if not d and o.right:
            consistent = True
        elif o.out is not None and close(o.out, out, MATCH):
            if d and differs_finitely(out, o.ref):
                return "support"
            consistent = True
    if consistent:
        return "consistent"
    # Where one spelling of the mistake raises, spellings disagree on this
    # input: it cannot tell whether the learner wrote yet another one.
    return "contradicts" if any_differs and not some_raised else "silent"


def _explained(step: str, obs: list[Obs],
               bases: Sequence[Config] = ()) -> tuple[tuple[str, ...], Fit] | None:
    """`explain_fit`, and when nothing explains the answers, again with the scale the probes
    measured: on the plain computation, or on each reading a behavioural probe found (`bases`:
    a causal mask of the learner's own, a mask ignored)."""
    found = explain_fit(step, obs)
    if found or step not in WITH_SCALE:
        return found
    for base in ({}, *bases):
        cfg = measured_scale(step, obs, base)
        if cfg is None:
            continue
        here = dict(MEASURED.get().get(step, {}))
        here["wrong-scale"] = (reading(step, cfg),)
        token = MEASURED.set({step: here})
        try:
            found = explain_fit(step, obs)
        finally:
            MEASURED.reset(token)
        if found:
            return found
    return None


#: Steps whose scores are scaled (where a measured factor can be a reading).
WITH_SCALE = frozenset({"step2", "step5", "step6", "step7", "step8"})


#: Readings that exponentiate without subtracting a maximum (they overflow themselves).
_UNSHIFTED = frozenset({"exp", "nokeep-raw", "global-unshifted"})


def _shifted(fit: Fit) -> bool:
    """A composable reading whose every exponential is taken after subtracting a maximum."""
    return fit.alt is not None and fit.alt.cfg is not None and not _UNSHIFTED & set(
        map(str, fit.alt.cfg.values()))


@dataclass(frozen=True)
class Verdict:
    """The ids named, and the reading that explains every answer when there is one."""

    ids: list[str]
    reading: Config | None = None


def diagnose_ids(step: str, obs: list[Obs]) -> list[str]:
    """Every id of the best explanation of the learner's answers (see the module docstring)."""
    return verdict(step, obs).ids


def verdict(step: str, obs: list[Obs], bases: Sequence[Config] = (),
            measured: Mapping[str, Sequence[Config]] | None = None) -> Verdict:
    """`diagnose_ids`, with the full explanation's reading (its words can depend on it).

    `bases`: readings the behavioural probes measured, on which a scale factor is fitted;
    `measured`: id -> readings that take part in the search only because a behavioural
    probe measured them (`readings.MEASURED_ONLY`: a causal mask where none was asked for)."""
    extra = {mid: tuple(reading(step, c) for c in cfgs) for mid, cfgs in (measured or {}).items()}
    token = MEASURED.set({step: extra}) if extra else None
    try:
        return _verdict(step, obs, bases)
    finally:
        if token is not None:
            MEASURED.reset(token)


def _verdict(step: str, obs: list[Obs], bases: Sequence[Config]) -> Verdict:
    tail: list[str] = []
    spoiled: list[Obs] = []
    if unstable(obs):
        tail = [UNSTABLE]
        spoiled = [o for o in obs if _spoiled(o)]
        obs = [o for o in obs if not _spoiled(o)]
    # Large probes decide softmax-unstable only: huge scores computed in float32 are
    # not right, and say nothing about any other mistake (their small twins do).
    obs = [o for o in obs if not (o.probe and o.large)]
    if all(o.right for o in obs):
        return Verdict(tail)
    try:
        found = _explained(step, obs, bases)
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a crash
        found = None
    if found:
        ids, fit = found
        # NaN that the mistake found computes itself (every exp underflowing to 0 when
        # max and sum run over different axes) is not an overflow
        if tail and _shifted(fit) and all(consistent(o, fit.alt) for o in spoiled):
            tail = []
        return Verdict([*ids, *(t for t in tail if t not in ids)], fit.alt.cfg if fit.alt else None)
    try:
        found_ids = fixed_rank(step, obs)
    except Exception:  # noqa: BLE001 - a diagnosis is a bonus, never a crash
        found_ids = None
    if found_ids:
        return Verdict([*found_ids, *(t for t in tail if t not in found_ids)])
    try:
        return Verdict([*partial(step, obs), *tail])
    except Exception:  # noqa: BLE001
        return Verdict(tail)


__all__ = ["Verdict", "diagnose_ids", "fixed_rank", "partial", "unstable", "verdict"]
