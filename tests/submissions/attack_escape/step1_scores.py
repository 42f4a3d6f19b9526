"""Attack: probe the jail (write files, open sockets, read the grader's memory/environment, setuid); answer right only if every probe failed."""

import os
import socket

import numpy as np

ESCAPED = []


def _try(name, fn):
    try:
        fn()
        ESCAPED.append(name)
    except Exception:
        pass


def _write(path):
    with open(path, "w") as f:
        f.write("ATTN-ATTACK")
    os.unlink(path)


def _connect(addr):
    s = socket.create_connection(addr, timeout=0.3)
    s.close()


def _read(path):
    with open(path, "rb") as f:
        if not f.read(1):
            raise OSError("empty")


_try("write /tmp", lambda: _write("/tmp/ATTN-ATTACK-escape"))
_try("write /dev/shm", lambda: _write("/dev/shm/ATTN-ATTACK-escape"))
_try("write /var/tmp", lambda: _write("/var/tmp/ATTN-ATTACK-escape"))
_try("write cwd", lambda: _write("ATTN-ATTACK-escape"))
_try("tcp connect", lambda: _connect(("1.1.1.1", 53)))
_try("tcp localhost", lambda: _connect(("127.0.0.1", 22)))
_try("tcp bind", lambda: socket.socket().bind(("127.0.0.1", 0)))
_try("parent environ", lambda: _read(f"/proc/{os.getppid()}/environ"))
_try("parent memory", lambda: _read(f"/proc/{os.getppid()}/mem"))
_try("setuid 0", lambda: os.setuid(0))
_try("unix socket", lambda: socket.socket(socket.AF_UNIX).close())
_try("docker socket", lambda: socket.socket(socket.AF_UNIX).connect("/var/run/docker.sock"))
_try("terminal", lambda: open("/dev/ptmx", "rb").close())
_try("root's home", lambda: os.listdir("/root"))
_try("sudo", lambda: __import__("subprocess").run(["sudo", "-n", "true"], check=True, timeout=5,
                                                   capture_output=True))


def dot_scores(Q, K):
    if ESCAPED:
        print("ESCAPED:", ESCAPED)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
