"""Batched calls for replayed examples: encoded once, sent in one round trip.

Replay (see `engine.replay`) knows every call a test will make on a
recorded example; `pack_calls` encodes them once per engine, and
`Learner.prefetch` sends them together. `same_values` decides whether a
call the test makes is the prefetched one (else it runs on its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from attn_practice.grader.sandbox import protocol

#: Longest a batch of prefetched (replayed) calls may take before falling back to single calls.
PREFETCH_TIMEOUT = 10.0


def same_values(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Equal argument tuples, arrays compared by dtype, shape and exact bytes.

    Bytes, not values: cheaper, and stricter (a NaN payload or -0.0 that
    differs makes a mismatch), which only ever costs a fallback to single calls.
    """
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                    and x.shape == y.shape and (x is y or x.tobytes() == y.tobytes())):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True


@dataclass(frozen=True)
class PackedCalls:
    """A batch of calls encoded once for `Learner.prefetch` (replay reuses it per submission)."""

    calls: tuple[tuple[tuple[Any, ...], dict[str, Any], int | None], ...]
    specs: tuple[dict[str, Any], ...]
    blobs: tuple[bytes, ...]
    reply_limit: int


def pack_calls(calls: Sequence[tuple[tuple[Any, ...], dict[str, Any], int | None]]) -> PackedCalls:
    """Encode (args, kwargs, expected_size) triples for one `call_many` round trip."""
    blobs: list[bytes] = []
    specs = []
    for args, kwargs, size in calls:
        specs.append({
            "args": protocol.pack_values(list(args), blobs),
            "kwargs": {k: protocol.pack_values([v], blobs)[0] for k, v in kwargs.items()},
            "max_elements": max(64 * (size or 0), 1 << 16),
        })
    limit = sum(16 * s["max_elements"] for s in specs) + (1 << 20)
    return PackedCalls(tuple(calls), tuple(specs), tuple(blobs), limit)
