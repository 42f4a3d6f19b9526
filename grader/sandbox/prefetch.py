"""Batched calls for replayed examples: encoded once, sent in one round trip.

Replay (see `engine.replay`) knows every call a test will make on a
recorded example; `pack_calls` encodes them once per engine, and
`Learner.prefetch` sends them together. `same_values` decides whether a
call the test makes is the prefetched one (else it runs on its own).
"""

from __future__ import annotations

import functools
import zlib
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


def layout_tags(arg_specs: list[dict[str, Any]], blobs: Sequence[bytes], salt: int) -> list[str]:
    """The memory layout each positional array reaches the learner in (see `protocol.LAYOUTS`).

    A function of the salt and the array's bytes only: the same call gets the
    same layouts in a batch, alone, replayed or fresh. About half are plain C order.
    """
    tags = []
    for i, spec in enumerate(arg_specs):
        if spec.get("t") != "a" or not spec.get("s"):
            tags.append("c")
            continue
        h = zlib.crc32(blobs[spec["i"]], (salt * 0x9E3779B1 + i) & 0xFFFFFFFF)
        tags.append(protocol.LAYOUTS[1 + (h >> 1) % (len(protocol.LAYOUTS) - 1)] if h & 1 else "c")
    return tags


def call_spec(args: Sequence[Any], kwargs: dict[str, Any], size: int | None, blobs: list[bytes],
              salt: int = 0) -> dict[str, Any]:
    """One call of a `call_many` request (its arrays appended to `blobs`)."""
    spec = {
        "args": protocol.pack_values(list(args), blobs),
        "kwargs": {k: protocol.pack_values([v], blobs)[0] for k, v in kwargs.items()},
        "max_elements": max(64 * (size or 0), 1 << 16),
    }
    spec["layouts"] = layout_tags(spec["args"], blobs, salt)
    return spec


def pack_calls(calls: Sequence[tuple[tuple[Any, ...], dict[str, Any], int | None]], salt: int = 0) -> PackedCalls:
    """Encode (args, kwargs, expected_size) triples for one `call_many` round trip."""
    blobs: list[bytes] = []
    specs = [call_spec(args, kwargs, size, blobs, salt) for args, kwargs, size in calls]
    limit = sum(16 * s["max_elements"] for s in specs) + (1 << 20)
    return PackedCalls(tuple(calls), tuple(specs), tuple(blobs), limit)


def single_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """The one reply inside a one-call `call_many` answer (a single call is a batch of one)."""
    replies = reply.get("replies") if reply.get("ok") is True else None
    if isinstance(replies, list) and len(replies) == 1 and isinstance(replies[0], dict):
        return dict(replies[0], output=str(replies[0].get("output") or "") + str(reply.get("output") or ""))
    if reply.get("ok") is True:
        return {"ok": False, "kind": "internal", "message": "malformed batch reply"}
    return reply


def batch_order(salt: int, n: int) -> list[int]:
    """The order a batch of `n` calls runs in: drawn from the salt, never the suite's own."""
    return list(_order(int(salt), n))


@functools.lru_cache(maxsize=256)
def _order(salt: int, n: int) -> tuple[int, ...]:
    # a submission's batches come in a few sizes: each order is drawn (and its seed hashed) once
    return tuple(int(i) for i in np.random.default_rng([salt, n]).permutation(n))


def in_call_order(order: Sequence[int], replies: Sequence[Any]) -> list[tuple[int, dict[str, Any]]] | None:
    """Replies to a batch sent in `order` as (call index, reply), in the calls' order.

    A batch the sandbox cut short at a call that ran out of time has fewer replies than
    calls: the ones it has are kept (the rest run one at a time). None if one is malformed.
    """
    got = list(zip(order, replies, strict=False))
    if any(not isinstance(sub, dict) for _, sub in got):
        return None
    return sorted(got, key=lambda pair: pair[0])


def stopped_batch(reply: Any) -> bool:
    """A batch's last reply, when the sandbox stopped the batch at a call that ran out of time."""
    return isinstance(reply, dict) and reply.get("kind") == "timeout"
