"""Explanations that depend on what the learner's code did (CONTRACT §3 texts stay the default).

`fixed-rank` is a symptom shared by many spellings, so its catalogue text can
only list candidates. Here it is made to say what was seen: which number of
dimensions works, and whether the others raise or give wrong answers, so the
text holds for the code it is reported on. `softmax-unstable` keeps its
catalogue text (an overflow) unless the learner subtracts one number for the
whole array: then the NaN comes from slices far from it, and the text says so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from attn_practice.grader.engine.diagnose.evidence import Obs
from attn_practice.reference.mistakes import MISTAKES

FIXED_RANK = "fixed-rank"
UNSTABLE = "softmax-unstable"


def _ranks(ranks: Sequence[int]) -> str:
    names = [f"{r}-D" for r in sorted(set(ranks))]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _split(obs: Sequence[Obs]) -> tuple[int, list[Obs]] | None:
    """(the number of dimensions that works, the probes of every other), or None."""
    probes = [o for o in obs if o.probe and "large" not in o.tags]
    by_rank: dict[int, list[Obs]] = {}
    for o in probes:
        by_rank.setdefault(o.rank, []).append(o)
    if not by_rank:
        return None
    right = Counter({r: sum(o.right for o in os) for r, os in by_rank.items()})
    ran = Counter({r: sum(o.out is not None for o in os) for r, os in by_rank.items()})
    good = max(by_rank, key=lambda r: (right[r], ran[r], r == 2))
    bad = [o for o in probes if o.rank != good]
    return (good, bad) if bad else None


def fixed_rank_nudge(obs: Sequence[Obs]) -> str:
    """The fixed-rank nudge, naming an input the learner's code gets wrong."""
    split = _split(obs)
    if split is None:
        return MISTAKES[FIXED_RANK].nudge
    good, bad = split
    return ("Refer to axes from the end (-1, -2) and use operations that broadcast over "
            f"leading axes, then try your function on a {_ranks([o.rank for o in bad])} input.")


def fixed_rank_text(obs: Sequence[Obs], others: Sequence[str]) -> str:
    """The fixed-rank explanation for these answers (`others`: the other ids named with it)."""
    split = _split(obs)
    if split is None:
        return MISTAKES[FIXED_RANK].explanation
    good, bad = split
    raised = sum(o.out is None for o in bad)
    what = ("raises an error" if raised == len(bad) else "gives wrong answers" if raised == 0
            else "raises an error or gives wrong answers")
    works = "gives right answers" if not others else "works (apart from the other mistakes named)"
    return (f"Your code {works} for {good}-D input only: given "
            f"{_ranks([o.rank for o in bad])} input it {what}. Something in it assumes a fixed "
            "number of axes: a shape unpacked into names, axes counted from the front "
            "(axis=1, shape[1]), reshape(n, 1), a loop over rows, a hard-coded einsum, or "
            "np.dot, which does not treat leading axes as a batch.")


#: Large probes whose scores differ by little: an exp taken without subtracting anything
#: overflows here, any shift (even a global one) keeps it finite.
_SPREAD = ("slice", "spread")


def unstable_text(obs: Sequence[Obs]) -> str:
    """The softmax-unstable explanation: overflow (the catalogue's), or a shift that is not per slice.

    A softmax that subtracts one number for the whole array (its global max, a
    mean) stays finite where every score is large and close together, and still
    gives NaN where slices lie far apart: there the catalogue's "exp of a large
    number overflows" is not what happened.
    """
    large = [o for o in obs if o.probe and o.large and o.out is not None and o.out.shape == o.ref.shape]
    close_together = [o for o in large if not any(w in o.name for w in _SPREAD)]
    spread = [o for o in large if any(w in o.name for w in _SPREAD)]
    if not close_together or not spread or not all(np.isfinite(o.out).all() for o in close_together):
        return MISTAKES[UNSTABLE].explanation
    return ("On large inputs your softmax gives NaN: you subtract a number before exp, but "
            "not each slice's own maximum, so where a slice lies far from that number every "
            "exp in it underflows to 0 (0 / 0 is NaN) or overflows to inf. Softmax does not "
            "change when you subtract the same number from every entry of a slice, and "
            "subtracting each slice's own maximum keeps every exponent <= 0.")


__all__ = ["fixed_rank_nudge", "fixed_rank_text", "unstable_text"]
