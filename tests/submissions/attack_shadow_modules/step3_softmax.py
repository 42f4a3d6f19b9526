"""Correct, and uses json/inspect (shadowed in this folder) at call time."""

import inspect
import json

import numpy as np


def softmax(x, axis=-1):
    json.dumps([1]), inspect.isfunction(softmax)
    x = np.asarray(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    return e / np.sum(e, axis=axis, keepdims=True)
