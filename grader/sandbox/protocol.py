"""The wire format between the trusted grader and a learner sandbox.

Only plain data crosses: a JSON header and raw array bytes whose dtype must
be a simple number type (never object, never pickled), so nothing a sandbox
sends can execute code in the grader. Every read is bounded; a peer that sends more is treated as dead.
Imported by both sides, so it depends on nothing but NumPy and the stdlib.
"""

from __future__ import annotations

import json
import re
import socket
import struct
import time
from typing import Any

import numpy as np

#: Largest message either side accepts (header + blobs).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 1024 * 1024
_PREFIX = struct.Struct("!II")  # header length, total blob length


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed message."""


class PeerClosed(ProtocolError):
    """The peer closed the connection (it exited or crashed)."""


_ALLOWED_KINDS = "biuf"
#: The only dtype spellings accepted on the wire (what `dtype.str` gives for numbers).
_DTYPE_RE = re.compile(r"[<>|=][biuf](1|2|4|8|10|12|16)")


def encode_array(arr: np.ndarray) -> tuple[dict[str, Any], bytes]:
    """An array as (JSON-able description, raw C-order bytes)."""
    if arr.dtype.kind not in _ALLOWED_KINDS or arr.dtype.fields is not None:
        raise TypeError(f"cannot send arrays of dtype {arr.dtype}")
    # tobytes() is C order whatever the layout; np.ascontiguousarray would
    # also turn a 0-d array into a 1-d one.
    return {"d": arr.dtype.str, "s": [int(n) for n in arr.shape]}, arr.tobytes()


_DTYPES: dict[str, np.dtype[Any]] = {}  # wire spellings already checked
_DTYPE_NAMES: dict[np.dtype[Any], str] = {}


def dtype_name(dtype: np.dtype[Any]) -> str:
    """str(dtype), memoised: NumPy builds the name anew on every call."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype)
    return name


def _wire_dtype(d: Any) -> np.dtype[Any]:
    dtype = _DTYPES.get(d) if isinstance(d, str) else None
    if dtype is not None:
        return dtype
    if not isinstance(d, str) or not _DTYPE_RE.fullmatch(d):
        raise ProtocolError(f"refused dtype {str(d)[:40]!r}")
    try:
        dtype = np.dtype(d)
    except (TypeError, ValueError) as exc:
        raise ProtocolError(f"bad array description: {exc}") from None
    if dtype.kind not in _ALLOWED_KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ProtocolError(f"refused dtype {dtype}")
    _DTYPES[d] = dtype
    return dtype


def decode_array(desc: dict[str, Any], data: bytes) -> np.ndarray:
    """Rebuild a plain numeric array; refuses any dtype that is not a simple number."""
    d, s = desc.get("d"), desc.get("s")
    dtype = _wire_dtype(d)
    if not isinstance(s, list) or len(s) > 64 or not all(type(n) is int and 0 <= n < 1 << 40 for n in s):
        raise ProtocolError("bad shape")
    shape = tuple(s)
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data):
        raise ProtocolError("array size does not match its shape")
    try:
        return np.frombuffer(data, dtype=dtype).reshape(shape).copy()
    except (ValueError, MemoryError) as exc:
        raise ProtocolError(f"bad array: {exc}") from None


def pack_values(values: list[Any], blobs: list[bytes]) -> list[dict[str, Any]]:
    """Describe call arguments/results as JSON, moving arrays into `blobs`."""
    out = []
    for v in values:
        if isinstance(v, np.ndarray):
            desc, data = encode_array(v)
            out.append({"t": "a", "i": len(blobs), **desc})
            blobs.append(data)
        elif isinstance(v, (bool, np.bool_)):
            out.append({"t": "b", "v": bool(v)})
        elif isinstance(v, (int, np.integer)):
            out.append({"t": "i", "v": int(v)})
        elif isinstance(v, (float, np.floating)):
            out.append({"t": "f", "v": float(v)})
        elif v is None:
            out.append({"t": "n"})
        else:
            raise TypeError(f"cannot send {type(v).__name__}")
    return out


def unpack_values(specs: Any, blobs: list[bytes]) -> list[Any]:
    if not isinstance(specs, list):
        raise ProtocolError("values must be a list")
    out: list[Any] = []
    for spec in specs:
        if not isinstance(spec, dict):
            raise ProtocolError("bad value spec")
        t = spec.get("t")
        if t == "a":
            i = spec.get("i")
            if not isinstance(i, int) or not 0 <= i < len(blobs):
                raise ProtocolError("bad blob index")
            out.append(decode_array(spec, blobs[i]))
        elif t == "b":
            out.append(bool(spec.get("v")))
        elif t == "i":
            v = spec.get("v")
            if type(v) is not int:
                raise ProtocolError("bad int value")
            out.append(v)
        elif t == "f":
            v = spec.get("v")
            if type(v) not in (int, float):
                raise ProtocolError("bad float value")
            out.append(float(v))
        elif t == "n":
            out.append(None)
        else:
            raise ProtocolError(f"unknown value type {t!r}")
    return out


def send(sock: socket.socket, header: dict[str, Any], blobs: list[bytes] = (),
         deadline: float | None = None) -> None:
    """Send one message; with `deadline` (a `time.monotonic()` value) never block past it."""
    header = dict(header, blobs=[len(b) for b in blobs])
    raw = json.dumps(header, separators=(",", ":")).encode()
    total = sum(len(b) for b in blobs)
    if len(raw) > MAX_HEADER_BYTES or total > MAX_MESSAGE_BYTES:
        raise ProtocolError("message too large")
    if deadline is not None:
        _set_remaining(sock, deadline)
    data = _PREFIX.pack(len(raw), total) + raw
    if total < JOIN_BYTES:
        # One sendall for the whole message: one system call (and one wake-up of the peer)
        # where one per array cost more than the copy. Its timeout bounds the whole call.
        sock.sendall(b"".join([data, *blobs]))
        return
    sock.sendall(data)  # a large message is not copied once more just to be sent
    for b in blobs:
        if deadline is not None:
            _set_remaining(sock, deadline)
        sock.sendall(b)


#: Messages with less array data than this are joined and sent in one system call.
JOIN_BYTES = 8 * 1024 * 1024
#: A socket end's send buffer: a batch of calls (~1.5 MB at most) goes in one write, not in
#: turns of writer and reader (the kernel caps it at net.core.wmem_max)
SEND_BUFFER = 4 << 20


def socket_pair() -> tuple[socket.socket, socket.socket]:
    """The two ends of a grader-sandbox connection, each able to send a whole batch at once."""
    ends = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    for end in ends:
        end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    return ends


def _set_remaining(sock: socket.socket, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("deadline passed")
    sock.settimeout(remaining)


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    if n <= 0:
        return b""
    buf = bytearray(n)
    view = memoryview(buf)
    pos = 0
    while pos < n:
        if deadline is not None:
            # A peer that trickles bytes must not stretch the wait: the
            # whole message shares one deadline, not one timeout per chunk.
            _set_remaining(sock, deadline)
        got = sock.recv_into(view[pos:], min(n - pos, 1 << 20))
        if not got:
            raise PeerClosed("connection closed")
        pos += got
    return bytes(buf)


def recv(sock: socket.socket, max_bytes: int = MAX_MESSAGE_BYTES,
         deadline: float | None = None) -> tuple[dict[str, Any], list[bytes]]:
    """Read one message; blocking until `deadline` (or the socket's own timeout)."""
    hlen, total = _PREFIX.unpack(_recv_exact(sock, _PREFIX.size, deadline))
    if hlen > MAX_HEADER_BYTES or total > max_bytes:
        raise ProtocolError(f"message of {hlen + total} bytes exceeds the limit")
    try:
        header = json.loads(_recv_exact(sock, hlen, deadline))
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"bad header: {type(exc).__name__}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not an object")
    sizes = header.get("blobs", [])
    if not isinstance(sizes, list) or any(type(s) is not int or s < 0 for s in sizes) or sum(sizes) != total:
        raise ProtocolError("blob sizes do not add up")
    data = _recv_exact(sock, total, deadline) if total else b""
    blobs, pos = [], 0
    for s in sizes:
        blobs.append(data[pos : pos + s])
        pos += s
    return header, blobs


# ---------------------------------------------------------------- input layouts
#: How an input array reaches the learner (chosen by the grader, applied inside the sandbox):
#: the wire carries plain C-ordered bytes, and a layout bug shows only on other layouts.
LAYOUTS = ("c", "fortran", "transposed", "strided", "offset", "reversed", "readonly")


def lay_out(arr: Any, tag: Any) -> Any:
    """`arr` with the same values in the memory layout `tag` names (unknown tags: unchanged)."""
    if not isinstance(arr, np.ndarray) or arr.ndim == 0 or not isinstance(tag, str):
        return arr
    if tag == "fortran":
        return np.asfortranarray(arr)
    if tag == "transposed" and arr.ndim >= 2:  # stored transposed, made logical again: a view
        return np.ascontiguousarray(np.swapaxes(arr, -1, -2)).swapaxes(-1, -2)
    if tag == "strided":  # every other element of a larger buffer: a non-contiguous view
        buf = np.zeros(arr.shape[:-1] + (2 * arr.shape[-1],), dtype=arr.dtype)
        view = buf[..., ::2]
        view[...] = arr
        return view
    if tag == "offset":  # a window into a larger buffer: contiguous, but owns nothing
        buf = np.zeros(arr.size + 3, dtype=arr.dtype)
        view = buf[3:].reshape(arr.shape)
        view[...] = arr
        return view
    if tag == "reversed":  # negative strides along the first axis
        return np.ascontiguousarray(arr[::-1])[::-1]
    if tag == "readonly":
        out = arr.copy()
        out.flags.writeable = False
        return out
    return arr


def invoke(fn: Any, args: list[Any], kwargs: dict[str, Any], layouts: Any,
           before_retry: Any = None) -> tuple[Any, list[Any]]:
    """Call the learner's `fn` on `args` laid out as `layouts` says: the one frame every call passes.

    Every graded call, single or batched, replayed or fresh, a probe or a
    test, reaches learner code through this frame, so nothing on the stack
    tells them apart. A read-only input is a layout to test, not a trap: if
    the call raises on one, it runs again with writable copies (changing an
    input in place earns a note, never a failure; `before_retry` drops what the
    first try printed, so the report shows one call's output). Returns the
    result and the arrays the learner actually got.
    """
    tags = layouts if isinstance(layouts, list) else []
    retry = "readonly" in tags
    pristine = [a.copy() if isinstance(a, np.ndarray) else a for a in args] if retry else args
    laid = [lay_out(a, tags[i]) if i < len(tags) else a for i, a in enumerate(args)]
    try:
        return fn(*laid, **kwargs), laid
    except Exception:
        if not retry:
            raise
    # Again from unchanged inputs (the first try may have written to the writable ones).
    if before_retry is not None:
        before_retry()
    tags = [("c" if t == "readonly" else t) for t in tags]
    laid = [lay_out(a, tags[i]) if i < len(tags) else a for i, a in enumerate(pristine)]
    return fn(*laid, **kwargs), laid
