"""Which catalogued mistakes, alone or together, explain every answer?

The search, for one failing step (each stage runs only if the one before
found nothing):

1. `softmax-unstable` is decided first and on its own: NaN or inf on a
   large-magnitude probe where its small twin (the same input scaled down)
   and the reference are finite. It is named whatever else is wrong; the
   large probes and the inputs it spoiled are left out of the stages below.
2. A full explanation: one id, then a pair, then (steps 5-8, a bounded
   search) three ids, whose reading (`readings.py`; for one id also every
   catalogued spelling, and for `wrong-scale` a fitted factor) reproduces
   the learner's output on every input. Each id of a pair or triple must
   be needed: somewhere its part changes the output and the learner
   follows it. Before the triples, a 2-D explanation is extended with
   spellings that are right on every matrix and show only on a batch
   (`K.T`, `np.dot`, `axis=1`, `K.shape[1]`, a softmax written with
   `reshape(-1, 1)` or a loop over rows): real code has several at once.
   The best fit (fewest ids, then most inputs explained) is reported with
   all its ids, the cause first (`ordered_ids`), plus the second id of a
   two-mistake spelling the answers show (`readings.IMPLIED`: axis=1
   hard-coded ignores `axis` and normalises the wrong axis of a batch); a
   mistake spelled so that it only runs on 2-D input (`weights.T @ V`)
   adds `fixed-rank`.
3. `fixed-rank` and what else fits: right (or fully explained) at one
   number of dimensions, never right at the others, and somewhere else the
   learner's code fails to run where the explanation runs. Only when no id
   explains the failing ranks, so a `K.T` is never reported as fixed-rank.
4. A partial explanation (a mistake plus something uncatalogued): each id
   whose reading the learner follows wherever the reading differs from the
   reference, and that no input contradicts.

Stages 1, 3 and 4 and the order of the stages live in `verdict.py`. Nothing
here raises: any failure of this module's own logic means "no diagnosis" for
the candidate concerned.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from attn_practice.grader.engine.diagnose.evidence import (
    MATCH,
    Obs,
    close,
    close_rows,
    differs,
    differs_finitely,
)
from attn_practice.grader.engine.diagnose.probes import PROBES
from attn_practice.grader.engine.diagnose.readings import (
    IMPLIED,
    READINGS,
    Config,
    compute,
    key,
    merge,
)
from attn_practice.grader.engine.diagnose.scale import fit_scale
from attn_practice.reference.mistakes import MISTAKES, mistakes_for

UNSTABLE = "softmax-unstable"
FIXED_RANK = "fixed-rank"
#: Ids found by their own rules rather than by a reading.
PROBE_IDS = frozenset({UNSTABLE, FIXED_RANK})
ORDER = {mid: i for i, mid in enumerate(MISTAKES)}


@dataclass(frozen=True)
class Alt:
    """One way an id (or a pair) can look at a step: a function and its cache key."""

    key: Any
    fn: Callable[..., Any]
    cfg: Config | None = None  # composable readings only


def reading(step: str, cfg: Config) -> Alt:
    return Alt(("cfg", key(cfg)), functools.partial(_compute, step, dict(cfg)), cfg)


def _compute(step: str, cfg: Config, *args: Any) -> np.ndarray:
    return compute(step, cfg, args)


#: Readings measured for the diagnosis at hand (a fitted scale factor, see `scale.py`):
#: step -> id -> alternatives. Per context, so that diagnoses in threads stay apart.
MEASURED: ContextVar[Mapping[str, Mapping[str, tuple[Alt, ...]]]] = ContextVar(
    "measured_readings", default=MappingProxyType({}))


def alternatives(step: str) -> dict[str, tuple[Alt, ...]]:
    """id -> its readings (composable) and catalogued spellings at `step`, measured ones last."""
    extra = MEASURED.get().get(step)
    if not extra:
        return _static_alternatives(step)
    out = dict(_static_alternatives(step))
    for mid, alts in extra.items():
        out[mid] = (*out.get(mid, ()), *alts)
    return out


@functools.cache
def _static_alternatives(step: str) -> dict[str, tuple[Alt, ...]]:
    """id -> its readings (composable) and catalogued spellings at `step`."""
    out: dict[str, list[Alt]] = {}
    for mid, cfgs in READINGS.get(step, {}).items():
        out.setdefault(mid, []).extend(reading(step, c) for c in cfgs)
    for mistake, fn in mistakes_for(step):
        if mistake.id not in PROBE_IDS:
            out.setdefault(mistake.id, []).append(Alt(("fn", id(fn)), fn))
    return {mid: tuple(alts) for mid, alts in sorted(out.items(), key=lambda kv: ORDER.get(kv[0], 99))}


# ------------------------------------------------------------------ matching
def consistent(o: Obs, alt: Alt) -> bool:
    out = o.output(alt.key, alt.fn)
    if out is None or o.out is None:
        return out is None and o.out is None
    if o.right and not differs(out, o.ref):
        return True
    return close(o.out, out, MATCH)


def _fits(alt: Alt, obs: Sequence[Obs]) -> bool:
    return all(consistent(o, alt) for o in obs)


def _could_fit(alts: Sequence[Alt], obs: Sequence[Obs]) -> list[bool]:
    """For each of `alts`, False when the first wrong answer in `obs` already rules it out.

    What `_fits` would find on that answer, for thousands of readings at once
    (`close_rows`) instead of one `close` each: most candidates of a pair or
    triple search fail there.
    """
    o = next((o for o in obs if not o.right), None)
    if o is None:
        return [True] * len(alts)
    outs = [o.output(a.key, a.fn) for a in alts]
    if o.out is None:
        return [out is None for out in outs]
    keep = [False] * len(alts)
    rows = [i for i, out in enumerate(outs) if out is not None and out.shape == o.out.shape]
    if rows:
        for i, ok in zip(rows, close_rows(o.out, np.stack([outs[i] for i in rows]), MATCH), strict=True):
            keep[i] = bool(ok)
    return keep


def _support(alt: Alt, base: Alt | None, obs: Sequence[Obs], errors: bool = False) -> int:
    """Inputs where `alt` differs (not by NaN or an error alone) from `base` (None: the reference).

    With `errors`, an error where `base` runs counts too: for a softmax written for
    matrices (`fixed-rank`), failing on a batch is the whole of the mistake.
    """
    n = 0
    for o in obs:
        out = o.output(alt.key, alt.fn)
        other = o.ref if base is None else o.output(base.key, base.fn)
        if out is None:
            n += errors and other is not None and o.out is None
            continue
        if other is None or differs_finitely(out, other):
            n += 1
    return n


@dataclass(frozen=True)
class Fit:
    ids: tuple[str, ...]
    support: int
    alt: Alt | None
    #: ids catalogued at this step: on a tie they win (at step 7 swapping W_q and W_k
    #: is the same computation as K Q^T, and the learner wrote the former)
    native: int = 0

    def rank(self) -> tuple[int, int, int, tuple[int, ...]]:
        return (len(self.ids), -self.support, -self.native, tuple(ORDER.get(i, 99) for i in self.ids))


def _native(step: str, ids: Sequence[str]) -> int:
    return sum(step in MISTAKES[i].impls for i in ids if i in MISTAKES)


def _singles(step: str, obs: Sequence[Obs]) -> list[Fit]:
    fits = []
    for mid, alts in alternatives(step).items():
        best, best_alt = 0, None
        for alt in alts:
            if _fits(alt, obs):  # alone, failing on a batch is for fixed_rank() to judge
                s = _support(alt, None, [o for o in obs if o.probe])
                s = s and _support(alt, None, obs)
                if s > best:
                    best, best_alt = s, alt
        if best:
            fits.append(Fit((mid,), best, best_alt, _native(step, (mid,))))
    if not fits and "wrong-scale" in alternatives(step):
        n = fit_scale(step, obs)
        if n:
            fits.append(Fit(("wrong-scale",), n, None))
    return fits


def _rare(cfg: Config) -> bool:
    """Readings that are two slips already (two projections wrong): not paired with a third."""
    p = cfg.get("proj")
    return p is not None and sum(a != b for a, b in zip(p, (0, 1, 2), strict=True)) > 1 \
        and len(set(p)) < 3


#: At most this many three-mistake readings are tried per diagnosis (a bounded search).
MAX_TRIPLES = 2500


def _pairs(step: str, obs: Sequence[Obs]) -> list[Fit]:
    return _combos(step, obs, 2)


#: Transposes that undo each other: two of them with a third id can imitate one
#: uncatalogued mistake exactly (a transposed mask is K Q^T, a softmax over the
#: queries and weights^T at once), so a triple holds at most one.
_CANCELLING = frozenset({"scores-transposed", "weights-transposed", "softmax-wrong-axis"})


def _triples(step: str, obs: Sequence[Obs]) -> list[Fit]:
    """Three ids at once (real code often has K.T, a softmax axis and no scaling together)."""
    if step not in ("step5", "step6", "step7", "step8"):
        return []
    return _combos(step, obs, 3, budget=MAX_TRIPLES)


def _combos(step: str, obs: Sequence[Obs], k: int, budget: int | None = None) -> list[Fit]:
    """Fits of k ids at once: every part must be needed (support against the other parts alone)."""
    fits: dict[tuple[str, ...], tuple[int, Alt]] = {}
    candidates = (*_candidates(step, k, budget), *_measured_candidates(step, k))
    for (mids, whole, rests), could in zip(candidates, _could_fit([c[1] for c in candidates], obs), strict=True):
        if not could or not _fits(whole, obs):
            continue
        supports = [_support(whole, rest, obs, mid == FIXED_RANK) for mid, rest in rests]
        if all(supports) and sum(supports) > fits.get(mids, (0, whole))[0]:
            fits[mids] = (sum(supports), whole)
    return [Fit(ids, sc, alt, _native(step, ids)) for ids, (sc, alt) in fits.items()]


@functools.cache
def _candidates(step: str, k: int, budget: int | None) -> tuple[tuple[tuple[str, ...], Alt,
                                                                    tuple[tuple[str, Alt], ...]], ...]:
    """The k-id readings `_combos` tries at `step`, in order, at most `budget`: (ids, whole, each id's rest).

    They depend on the step alone, not on the inputs, so they are merged once
    per process instead of once per diagnosis. A candidate whose parts clash, or
    where a part changes nothing, is left out (and does not count to the budget).
    """
    alts = {mid: [a for a in group if a.cfg is not None and not _rare(a.cfg)]
            for mid, group in _static_alternatives(step).items()}
    out = []
    for mids in itertools.combinations(alts, k):
        if k > 2 and len(_CANCELLING.intersection(mids)) > 1:
            continue
        for picks in itertools.product(*(alts[m] for m in mids)):
            parts = [p.cfg for p in picks]
            cfg = _merge_all(parts)
            if cfg is None:
                continue
            rests = [_merge_all(parts[:i] + parts[i + 1:]) for i in range(k)]
            if any(r is None or r == cfg for r in rests):
                continue  # a part that changes nothing, or parts that clash
            if budget is not None and len(out) >= budget:
                return tuple(out)
            out.append((mids, reading(step, cfg),
                        tuple((mid, reading(step, r)) for mid, r in zip(mids, rests, strict=True) if r is not None)))
    return tuple(out)


def _measured_candidates(step: str, k: int) -> list[tuple[tuple[str, ...], Alt, tuple[tuple[str, Alt], ...]]]:
    """Pairs of a measured reading (MEASURED) with each composable reading of another id."""
    extra = MEASURED.get().get(step)
    if not extra or k != 2:
        return []
    out = []
    for mid, alts in extra.items():
        for alt in alts:
            for other, group in alternatives(step).items():  # measured ones pair with each other too
                if other == mid:
                    continue
                for a in group:
                    if a.cfg is None or _rare(a.cfg):
                        continue
                    cfg = _merge_all([alt.cfg, a.cfg])
                    if cfg is None or cfg in (alt.cfg, a.cfg):
                        continue
                    mids = tuple(sorted((mid, other), key=lambda i: ORDER.get(i, 99)))
                    out.append((mids, reading(step, cfg), ((mid, a), (other, alt))))
    return out


def _merge_all(parts: Sequence[Config | None]) -> dict[str, Any] | None:
    out: dict[str, Any] | None = {}
    for p in parts:
        if out is None or p is None:
            return None
        out = merge(out, p)
    return out


def explain(step: str, obs: Sequence[Obs]) -> tuple[str, ...] | None:
    """The ids of the best full explanation of `obs` (one id, else two, else three), or None."""
    found = explain_fit(step, obs)
    return found[0] if found else None


def explain_fit(step: str, obs: Sequence[Obs]) -> tuple[tuple[str, ...], Fit] | None:
    """`explain`, with the fit itself (whose reading can be run on other inputs)."""
    fit = best_fit(step, obs, extend=True)
    if fit is None:
        return None
    ids = (*fit.ids, *_implied(step, fit, obs))
    if not RANK_IDS & set(ids) and _rank_bound(step, fit, obs):
        ids = (*ids, FIXED_RANK)
    return ordered_ids(ids), fit


def ordered_ids(ids: Sequence[str]) -> tuple[str, ...]:
    """Catalogue order, the cause first: `fixed-rank` (the symptom) after every other id."""
    return tuple(sorted(dict.fromkeys(ids), key=lambda i: (i == FIXED_RANK, ORDER.get(i, 99))))


def _implied(step: str, fit: Fit, obs: Sequence[Obs]) -> list[str]:
    """Second ids of two-mistake spellings (readings.IMPLIED) the learner's answers show."""
    if fit.alt is None or fit.alt.cfg is None:
        return []
    extra = []
    for (slot, variant), (changes, mid) in IMPLIED.get(step, {}).items():
        if fit.alt.cfg.get(slot) == variant and mid not in fit.ids:
            other = reading(step, {**fit.alt.cfg, **changes})
            if _support(fit.alt, other, obs, errors=mid == FIXED_RANK):
                extra.append(mid)
    return extra


def best_fit(step: str, obs: Sequence[Obs], extend: bool = False, triples: bool = True) -> Fit | None:
    """The best full explanation: one id, two, (`extend`) 2-D ids plus batch-only ones, three."""
    if not any(o.probe and not o.right for o in obs):
        return None
    ordered = sorted(obs, key=lambda o: (o.right, not o.probe))  # wrong answers cut candidates fast
    searches = (_singles, _pairs, *((_extended,) if extend else ()), *((_triples,) if triples else ()))
    for search in searches:
        fits = search(step, ordered)
        if fits:
            return min(fits, key=Fit.rank)
    return None


# --------------------------------------------------- batch-only spellings
@functools.cache
def batch_only(step: str) -> tuple[tuple[str, tuple[tuple[str, Any], ...]], ...]:
    """(id, configuration) of every reading that is right on every 2-D probe.

    `K.T`, `np.dot`, a softmax over axis 1, `K.shape[1]` for d_k, a softmax written
    for matrices: code like this passes every 2-D test and shows only on a batch.
    """
    flat = [p for p in PROBES.get(step, ()) if p.rank == 2 and "large" not in p.tags]
    found = []
    for mid, cfgs in READINGS.get(step, {}).items():
        for cfg in cfgs:
            try:
                with np.errstate(all="ignore"):
                    same = all(close(compute(step, cfg, p.args), compute(step, {}, p.args), MATCH)
                               for p in flat)
            except Exception:  # noqa: BLE001 - a reading that raises on a matrix is not one
                same = False
            if same and flat:
                found.append((mid, key(cfg)))
    return tuple(found)


def _extended(step: str, obs: Sequence[Obs]) -> list[Fit]:
    """A 2-D explanation (or none needed) plus spellings that only show on a batch.

    Real code has K.T, np.dot, axis=1 and no scaling all at once: four ids, more
    than the search above combines. On 2-D input only the last shows, so it is
    found there first; then batch-only spellings, at most one per slot, are added until
    every batched answer is explained, each one needed somewhere.
    """
    if step not in ("step5", "step6", "step7", "step8"):
        return []
    flat = [o for o in obs if o.rank == 2]
    if not flat or any(o.probe and o.rank > 2 and o.right for o in obs):
        return []
    base_ids: tuple[str, ...] = ()
    base: dict[str, Any] = {}
    if not all(o.right for o in flat):
        fit = best_fit(step, flat, triples=False)  # the bounded triple search runs once, later
        if fit is None or fit.alt is None or fit.alt.cfg is None:
            return []
        base_ids, base = fit.ids, dict(fit.alt.cfg)
    by_slots: dict[tuple[str, ...], list[tuple[str, dict[str, Any]]]] = {}
    for mid, cfg in batch_only(step):
        by_slots.setdefault(tuple(sorted(s for s, _ in cfg)), []).append((mid, dict(cfg)))
    best: Fit | None = None
    for picks in itertools.product(*([None, *vs] for vs in by_slots.values())):
        chosen = [p for p in picks if p is not None]
        if not chosen:
            continue
        cfg = _merge_all([base, *(c for _, c in chosen)])
        if cfg is None or any(cfg.get(s) != v for _, c in chosen for s, v in c.items()):
            continue  # two picks want one slot two ways
        whole = reading(step, cfg)
        if not _fits(whole, obs):
            continue
        supports = []
        for mid, part in chosen:
            rest = {k: v for k, v in cfg.items() if k not in part}
            rest.update({k: base[k] for k in part if k in base})
            supports.append(_support(whole, reading(step, rest), obs, mid == FIXED_RANK))
        if not all(supports):
            continue
        ids = tuple(dict.fromkeys((*base_ids, *(m for m, _ in chosen))))
        fit = Fit(ids, sum(supports), whole, _native(step, ids))
        if best is None or (len(chosen), fit.rank()) < (len(best.ids) - len(base_ids), best.rank()):
            best = fit
    return [best] if best is not None else []


#: Ids that are themselves about the number of axes.
RANK_IDS = frozenset({FIXED_RANK, "transpose-all-axes", "dot-not-batched"})


def _rank_bound(step: str, fit: Fit, obs: Sequence[Obs]) -> bool:
    """The learner wrote the mistake in a way that only runs at one number of dimensions.

    `weights.T @ V` is weights-transposed on 2-D input and an error on any batch,
    where `swapaxes(weights) @ V` runs: another spelling of the same id that agrees
    on every 2-D probe and runs at a rank where the learner's spelling never does
    shows that both mistakes are there, so both are named.
    """
    if fit.alt is None or len(fit.ids) != 1:
        return False
    probes = [o for o in obs if o.probe]
    dead = {o.rank for o in probes} - {o.rank for o in probes
                                        if o.output(fit.alt.key, fit.alt.fn) is not None}
    if not dead or min(dead) < 3:
        return False
    for other in alternatives(step)[fit.ids[0]]:
        if other is fit.alt:
            continue
        agree = True
        for o in probes:
            mine, theirs = o.output(fit.alt.key, fit.alt.fn), o.output(other.key, other.fn)
            if o.rank == 2 and mine is not None and (theirs is None or not close(theirs, mine, MATCH)):
                agree = False
                break
        if agree and any(o.rank in dead and o.output(other.key, other.fn) is not None for o in probes):
            return True
    return False


__all__ = ["FIXED_RANK", "ORDER", "PROBE_IDS", "RANK_IDS", "UNSTABLE", "Alt", "Fit", "reading", "alternatives", "best_fit", "consistent",
           "explain", "explain_fit", "ordered_ids"]
