"""The diagnosis's vectorised first cut (`close_rows`) never rules out what `close` accepts.

The pair and triple searches test thousands of readings against a learner's first wrong
answer at once; a reading it drops must be one `close` (the exact test) would drop too,
or a diagnosis would change. Checked on arrays built to sit on every edge: NaN and inf in
either side, values at the tolerance, huge and tiny magnitudes, empty arrays.
"""

from __future__ import annotations

import numpy as np
import pytest

from attn_practice.grader.engine.diagnose.evidence import (
    DIFFERS,
    MATCH,
    RIGHT,
    Tol,
    close,
    close_rows,
)

SPECIALS = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e300, -1e300, 1e-300])


def _variants(rng: np.random.Generator, got: np.ndarray, tol: Tol, n: int) -> np.ndarray:
    """`n` arrays near `got`: equal, nudged inside and outside the tolerance, specials swapped in."""
    out = []
    for _ in range(n):
        want = got.copy()
        kind = rng.integers(0, 6)
        if kind == 1:  # a relative nudge around the tolerance's edge
            want = want * (1 + tol.rtol * rng.choice([0.5, 0.99, 1.01, 2.0], size=want.shape))
        elif kind == 2:  # an absolute nudge
            want = want + tol.atol * rng.choice([-2.0, -0.5, 0.5, 2.0], size=want.shape)
        elif kind == 3 and want.size:  # a special value in one place
            want.flat[rng.integers(0, want.size)] = rng.choice(SPECIALS)
        elif kind == 4:
            want = rng.normal(size=want.shape) * 10.0 ** rng.integers(-3, 4)
        elif kind == 5 and want.size:  # the same non-finite pattern, another kind of it
            i = rng.integers(0, want.size)
            want.flat[i] = np.inf if np.isnan(got.flat[i]) else np.nan
        out.append(want)
    return np.stack(out)


@pytest.mark.parametrize("tol", [MATCH, RIGHT, DIFFERS])
@pytest.mark.parametrize("seed", range(6))
def test_close_rows_keeps_everything_close_accepts_and_drops_only_what_it_drops(tol: Tol, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for shape in [(3,), (2, 4), (2, 3, 5), (1, 1), (0, 3)]:
        for _ in range(20):
            got = rng.normal(size=shape) * 10.0 ** rng.integers(-3, 4)
            if got.size and rng.random() < 0.4:
                got.flat[rng.integers(0, got.size)] = rng.choice(SPECIALS)
            wants = _variants(rng, got, tol, 12)
            rows = close_rows(got, wants, tol)
            exact = np.array([close(got, w, tol) for w in wants])
            assert not (exact & ~rows).any(), "a reading close() accepts was ruled out"
            # where both sides' NaN and inf sit alike, the cut is the exact test
            alike = np.array([np.array_equal(np.isnan(got), np.isnan(w))
                              and np.array_equal(np.isposinf(got), np.isposinf(w)) for w in wants])
            assert (rows[alike] == exact[alike]).all()


def test_close_rows_of_nothing_is_nothing() -> None:
    assert close_rows(np.zeros(3), np.zeros((0, 3)), MATCH).shape == (0,)
