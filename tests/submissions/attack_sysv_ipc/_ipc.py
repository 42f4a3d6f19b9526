"""Shared by both steps: SysV shared memory, message queues and semaphores as a channel between sandboxes."""

import ctypes

libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
IPC_CREAT = 0o1000
KEY = 0x0A77A77


def probe(me):
    """Leave a mark, and report what the others left: a cross-sandbox channel if anything comes back."""
    seen = []
    shm = libc.shmget(KEY, 4096, IPC_CREAT | 0o666)
    if shm >= 0:
        seen.append("shmget")
        addr = libc.shmat(shm, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            buf = (ctypes.c_char * 4096).from_address(addr)
            old = bytes(buf).rstrip(b"\0")
            if old and me.encode() not in old:
                seen.append(f"read {old!r} from another sandbox")
            buf[: len(me) + 1] = (old + me.encode() + b";")[-(len(me) + 1):]
    msq = libc.msgget(KEY, IPC_CREAT | 0o666)
    if msq >= 0:
        seen.append("msgget")
        msg = ctypes.create_string_buffer(ctypes.sizeof(ctypes.c_long) + 64)
        ctypes.c_long.from_buffer(msg).value = 1
        libc.msgsnd(msq, msg, 16, 0o4000)
    if libc.semget(KEY, 1, IPC_CREAT | 0o666) >= 0:
        seen.append("semget")
    return seen
