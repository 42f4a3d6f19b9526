"""correct_moveaxis_loops: moves `axis` last, then loops over every slice with math.exp in pure Python."""

import math

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x)
    moved = np.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    rows = moved.reshape(-1, n).tolist()
    out_rows = []
    for row in rows:
        m = max(row)
        exps = [math.exp(v - m) for v in row]
        total = sum(exps)
        out_rows.append([e / total for e in exps])
    out = np.array(out_rows, dtype=np.float64).reshape(moved.shape)
    return np.moveaxis(out, -1, axis)
