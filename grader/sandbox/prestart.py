"""Start the sandbox fork server before the grader's heavy imports.

The zygote needs a few hundred milliseconds to import NumPy. `check` calls
`prestart()` first thing, so that start overlaps with importing pytest,
Hypothesis and the engine instead of delaying the first sandbox; the
`Launcher` then `take()`s it. Imports nothing heavy on purpose.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

_READY: tuple[subprocess.Popen[bytes], socket.socket, Path] | None = None


def make_root() -> Path:
    """A private temporary directory for one launcher's sandboxes."""
    root = Path(tempfile.mkdtemp(prefix="attnp-"))
    if os.geteuid() == 0:
        os.chmod(root, 0o711)  # sandbox uids may pass through, not list
    return root


def spawn_zygote(root: Path) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start `python -m attn_practice.grader.sandbox.zygote zygote` with an environment built from nothing."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # Built from nothing: no variable of the caller's (or a submission's)
    # shapes how the sandbox interpreter starts.
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "HOME": str(root),
        "TMPDIR": str(root),
    }
    # Some processors need these for OpenBLAS to work at all: pass them on.
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if name in os.environ:
            env[name] = os.environ[name]
    # -s: no user site-packages; -P: no script/cwd directory on sys.path.
    # (Not -I: it would also ignore the PYTHONHASHSEED we set above.)
    flags = ["-s", "-P"] if sys.version_info >= (3, 11) else ["-s"]
    proc = subprocess.Popen(
        [sys.executable, *flags, "-m", "attn_practice.grader.sandbox.zygote", "zygote",
         str(child.fileno()), str(root)],
        pass_fds=(child.fileno(),),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd="/",
        start_new_session=True,
    )
    child.close()
    parent.settimeout(30)
    return proc, parent


def prestart() -> None:
    """Start one zygote now, for the first Launcher of this process to take."""
    global _READY
    if _READY is None:
        try:
            root = make_root()
            proc, ctl = spawn_zygote(root)
        except OSError:
            return
        _READY = (proc, ctl, root)


def take() -> tuple[subprocess.Popen[bytes], socket.socket, Path] | None:
    """The pre-started zygote (once), or None."""
    global _READY
    ready, _READY = _READY, None
    if ready is not None and ready[0].poll() is not None:
        ready[1].close()
        return None
    return ready
