"""Explanations that depend on what the learner's code did (CONTRACT §3 texts stay the default).

`fixed-rank` is a symptom shared by many spellings, so its catalogue text can
only list candidates. Here it is made to say what was seen: which number of
dimensions works, and whether the others raise or give wrong answers, so the
text holds for the code it is reported on.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from attn_practice.grader.engine.diagnose.evidence import Obs
from attn_practice.reference.mistakes import MISTAKES

FIXED_RANK = "fixed-rank"


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


__all__ = ["fixed_rank_nudge", "fixed_rank_text"]
