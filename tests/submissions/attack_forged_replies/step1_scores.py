"""Attack: at import, write forged protocol replies (wrong field types, bogus arrays) to the grader's socket."""

import json
import os
import stat
import struct

import numpy as np


def _send(header, blob=b""):
    raw = json.dumps(dict(header, blobs=[len(blob)] if blob else [])).encode()
    msg = struct.pack("!II", len(raw), len(blob)) + raw + blob
    for fd in range(3, 64):
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                os.write(fd, msg)
        except OSError:
            pass


_send({"ok": True, "line": "not a number", "signature": ["x"], "imported_steps": "abc",
       "output": {"a": 1}})
_send({"ok": True, "seconds": "slow", "mutated": "0", "returned": 5,
       "result": {"t": "a", "i": 0, "d": "|O", "s": [1]}}, b"\x00" * 8)


def dot_scores(Q, K):
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
