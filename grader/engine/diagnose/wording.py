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
from collections.abc import Mapping, Sequence
from typing import Any

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


#: (slot, variant) of a reading written for matrices -> what the learner's code does.
_CAUSES = {
    # the reading only says "raises unless it is given a matrix": where, the answers cannot tell
    ("softmax", "rows2d"): "something in it only runs on a matrix (a shape unpacked into two "
                           "names, axes or sizes counted from the front, a reshape to (rows, 1))",
    ("softmax", "rows2d-vec"): "something in it only runs on a matrix or a vector (a shape "
                               "unpacked into two names, axes or sizes counted from the front, "
                               "a reshape to (rows, 1))",
    ("softmax", "reshape"): "your softmax reshapes its max and sum to a column (reshape(-1, 1) "
                            "or reshape(n, 1)), which only lines up with a matrix",
    ("softmax", "loop"): "your softmax loops over x[i] and normalises each one as a whole: a "
                         "row of a matrix, but a whole slice of a batch",
    ("scale", "k1"): "d_k is read as K.shape[1]: on a batch that is a length or a batch size, "
                     "not the key width",
    ("scale", "q1"): "d_k is read as Q.shape[1]: on a batch that is a length or a batch size, "
                     "not the key width",
}
_CAUSES[("softmax", "reshape0")] = _CAUSES[("softmax", "reshape")]
_CAUSES.update({("form", v): text for (slot, v), text in list(_CAUSES.items()) if slot == "softmax"})


def fixed_rank_text(obs: Sequence[Obs], others: Sequence[str], reading: Mapping[str, Any] | None = None) -> str:
    """The fixed-rank explanation for these answers (`others`: the other ids named with it;
    `reading`: the explanation found, whose matrix-only part is then named exactly)."""
    split = _split(obs)
    if split is None:
        return MISTAKES[FIXED_RANK].explanation
    good, bad = split
    # a reshape(-1, 1) that raises on every batch looks like any other matrix-only code
    shows_reshape = any(o.out is not None for o in bad)
    causes = [_CAUSES[(k, str(v)) if shows_reshape or str(v) not in ("reshape", "reshape0")
                      else ("softmax", "rows2d")]
              for k, v in (reading or {}).items() if (k, str(v)) in _CAUSES]
    raised = sum(o.out is None for o in bad)
    what = ("raises an error" if raised == len(bad) else "gives wrong answers" if raised == 0
            else "raises an error or gives wrong answers")
    works = "gives right answers" if not others else "works (apart from the other mistakes named)"
    head = f"Your code {works} for {good}-D input only: given {_ranks([o.rank for o in bad])} input it {what}. "
    if causes:
        return head + "Here " + "; and ".join(causes) + "."
    return head + ("Something in it assumes a fixed number of axes: a shape unpacked into names, "
                   "axes counted from the front (axis=1, shape[1]), reshape(n, 1), a loop over rows, "
                   "a hard-coded einsum, or np.dot, which does not treat leading axes as a batch.")


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
