"""The reference's answers, remembered by the exact content of their inputs.

A replayed test runs twice per submission: a dry run that notes its calls
(the reference answering) and the real run; the real run finds every answer
here instead of computing it again. Inputs are keyed by their bytes, never
by identity, so no caller can change what the next one gets (copies out).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

_EXPECTED: dict[tuple[Any, ...], np.ndarray] = {}
_EXPECTED_LIMIT = 20_000
#: Larger inputs are not remembered: hashing them costs about what computing does.
_MEMO_MAX_ELEMENTS = 4096


def remembered(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any],
               compute: Callable[[], np.ndarray]) -> np.ndarray:
    """`compute()` (fn's answer on args), or a copy of the one remembered for the same content."""
    key = _memo_key(fn, args, kwargs)
    if key is not None:
        hit = _EXPECTED.get(key)
        if hit is not None:
            return hit.copy()
    value = compute()
    if key is not None:
        if len(_EXPECTED) >= _EXPECTED_LIMIT:
            _EXPECTED.clear()
        _EXPECTED[key] = value.copy()
    return value


def _memo_key(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    """A hashable key for (fn, args, kwargs) by exact content, or None when not worth one."""
    parts: list[Any] = [fn]
    for name, v in (*((None, a) for a in args), *sorted(kwargs.items())):
        if type(v) is np.ndarray:
            if v.size > _MEMO_MAX_ELEMENTS:
                return None
            parts.append((name, v.dtype.str, v.shape, v.tobytes()))
        elif v is None or type(v) in (int, float, bool):
            parts.append((name, type(v), v))
        else:
            return None
    return tuple(parts)


__all__ = ["remembered"]
