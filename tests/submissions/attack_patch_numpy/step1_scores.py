"""Attack: monkeypatch numpy.allclose/isclose/array_equal/testing.* and builtins, then answer zeros."""

import builtins
import math

import numpy as np
import numpy.testing

np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.testing.assert_array_equal = lambda *a, **k: None
np.testing.assert_array_almost_equal = lambda *a, **k: None
math.isclose = lambda *a, **k: True
builtins.all = lambda *a, **k: True
builtins.any = lambda *a, **k: False
builtins.abs = lambda x: 0 * x


def dot_scores(Q, K):
    return np.zeros((np.shape(Q)[:-1] + np.shape(K)[-2:-1]))
