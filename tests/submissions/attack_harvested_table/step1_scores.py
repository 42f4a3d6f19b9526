"""Attack: answer from a table of the inputs harvested from the public examples.

The grader's public (check) examples are the same on every machine, so a
learner can print them during `check`, store the reference's answers next
to them, and answer from the table without computing. `harvested.py` is
written by tests/test_secret_examples.py (the harvest); without it, or for
any input not in it, this returns a wrong answer. Under `grade`, whose
examples come from a secret, it must fail.
"""

import hashlib

import numpy as np

try:
    from harvested import TABLE
except ImportError:
    TABLE = {}


def _key(*arrays):
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def dot_scores(Q, K):
    hit = TABLE.get(_key(Q, K))
    if hit is not None:
        dtype, shape, data = hit
        return np.frombuffer(bytes.fromhex(data), dtype=dtype).reshape(shape)
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1]) + 1.0  # wrong on anything unseen
