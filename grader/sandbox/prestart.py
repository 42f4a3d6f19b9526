"""Start the sandbox fork server before the grader's heavy imports.

The zygote needs a few hundred milliseconds to import NumPy. `check` calls
`prestart()` first thing, so that start overlaps with importing pytest,
Hypothesis and the engine instead of delaying the first sandbox; the
`Launcher` then `take()`s it. Imports nothing heavy on purpose.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

#: The BLAS libraries' thread counts: one thread in every sandbox, and by default in the grader.
BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread_by_default() -> None:
    """One BLAS thread for this process and what it starts, unless the user set a count.

    The grader's arrays are small; a thread per core in every process spins beside the
    sandboxes and the other workers, and the same count everywhere gives the same bits.
    """
    for name in BLAS_THREADS:
        os.environ.setdefault(name, "1")

_READY: tuple[subprocess.Popen[bytes], socket.socket, Path] | None = None


def make_root() -> Path:
    """A private temporary directory for one launcher's sandboxes (in memory where safe: `_base`)."""
    root = Path(tempfile.mkdtemp(prefix="attnp-", dir=_base()))
    if os.geteuid() == 0:
        os.chmod(root, 0o711)  # sandbox uids may pass through, not list
    return root


GRADER_TMP_ENV = "ATTN_PRACTICE_GRADER_TMP"
#: The process that started the zygote (read and dropped by it): once its parent is another,
#: the grader is gone, even if it died before the zygote could ask who its parent was.
GRADER_PID_ENV = "ATTN_PRACTICE_GRADER_PID"
#: Where sandbox folders may live in memory: a tmpfs every system mounts there.
SHM = "/dev/shm"
_BASE: list[str | None] = []


def _base() -> str | None:
    """/dev/shm when sandboxes' memory is capped by cgroups, else None (the system temp dir).

    Every sandbox gets a copy of its submission, a capture file, and is then
    removed: on a disk file system that is ~6 ms of the machine's time per
    step (journal, inodes), on tmpfs a twentieth of it. tmpfs pages are
    memory, so only where each sandbox's cgroup counts them against its
    memory cap (files it writes included) can no sandbox fill the machine's
    memory through its folder; elsewhere the disk it is.
    """
    if not _BASE:
        _BASE.append(SHM if _shm_usable() and _sandboxes_have_cgroups() else None)
    return _BASE[0]


def memory_temp_dir(size: int) -> str | None:
    """Where the grader itself may unpack `size` bytes for a moment: /dev/shm when usable and
    `size` is small (a Dask payload: ~6 ms of a disk's journal and inodes per submission saved),
    else None (the system temp dir). Hidden from sandboxes like every temp folder."""
    return SHM if size <= SMALL_IN_MEMORY and _shm_usable() else None


#: Most bytes `memory_temp_dir` puts in memory (step files are a few kB).
SMALL_IN_MEMORY = 1 << 20


@functools.cache  # /proc/self/mounts read once per process, not per payload
def _shm_usable() -> bool:
    try:
        st = os.lstat(SHM)
        with open("/proc/self/mounts") as f:
            tmpfs = any(line.split()[1:3] == [SHM, "tmpfs"] for line in f if len(line.split()) > 2)
    except OSError:
        return False
    import stat

    return (tmpfs and stat.S_ISDIR(st.st_mode) and bool(st.st_mode & stat.S_ISVTX)
            and st.st_uid == 0 and os.access(SHM, os.W_OK | os.X_OK))


def _sandboxes_have_cgroups() -> bool:
    from attn_practice.grader.sandbox.cgroup import Cgroups

    try:
        return Cgroups.detect(f"attnp-{os.getpid()}-") is not None
    except OSError:
        return False


#: The zygote's module imported, not run with -m: a `__main__` is compiled from source every time.
ZYGOTE_MAIN = "from attn_practice.grader.sandbox.zygote import main; main()"


def _bytecode_ready() -> None:
    """Compile the zygote's own modules once, where they lack bytecode.

    The zygote runs with PYTHONDONTWRITEBYTECODE (nothing a sandbox imports
    may leave files), so in a source checkout it would compile them, ~20 ms,
    on every start. Written here, by the trusted grader, as any of its
    imports would be (atomically; skipped if the folder is read-only or
    bytecode writing is off).
    """
    if sys.dont_write_bytecode:
        return
    import importlib.util

    here = Path(__file__).resolve().parent
    sources = [*here.glob("*.py"), here.parent / "paths.py", here.parent / "__init__.py",
               here.parent.parent / "__init__.py"]
    for source in sources:
        try:
            compiled = importlib.util.cache_from_source(str(source))
            if os.stat(compiled).st_mtime_ns >= os.stat(source).st_mtime_ns:
                continue
        except (OSError, NotImplementedError, ValueError):
            pass
        try:
            import py_compile

            py_compile.compile(str(source), doraise=True)
        except (OSError, py_compile.PyCompileError):
            continue


def spawn_zygote(root: Path) -> tuple[subprocess.Popen[bytes], socket.socket]:
    """Start the zygote (`python -c ZYGOTE_MAIN zygote FD ROOT`) with an environment built from nothing."""
    parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    # Built from nothing: no variable of the caller's (or a submission's)
    # shapes how the sandbox interpreter starts.
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        **dict.fromkeys(BLAS_THREADS, "1"),
        "HOME": str(root),
        "TMPDIR": str(root),
        # The grader's own temp dir, for the jail to hide (read and dropped by the zygote).
        GRADER_TMP_ENV: os.path.realpath(tempfile.gettempdir()),
        GRADER_PID_ENV: str(os.getpid()),
    }
    # Some processors need these for OpenBLAS to work at all: pass them on.
    for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        if name in os.environ:
            env[name] = os.environ[name]
    # -s: no user site-packages; -P: no script/cwd directory on sys.path.
    # (Not -I: it would also ignore the PYTHONHASHSEED we set above.)
    flags = ["-s", "-P"] if sys.version_info >= (3, 11) else ["-s"]
    _bytecode_ready()
    proc = subprocess.Popen(
        [sys.executable, *flags, "-c", ZYGOTE_MAIN, "zygote", str(child.fileno()), str(root)],
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
    """Start one zygote now, for the first Launcher of this process to take.

    One nobody takes (e.g. `grade` served its report from the cache) is
    stopped and its folder removed when the process exits (`discard`).
    """
    global _READY
    if _READY is None:
        try:
            root = make_root()
        except OSError:
            return
        try:
            proc, ctl = spawn_zygote(root)
        except OSError:
            shutil.rmtree(root, ignore_errors=True)
            return
        _READY = (proc, ctl, root)
        atexit.register(discard)


def discard() -> None:
    """Stop a pre-started zygote no Launcher took, and remove its folder.

    It has served no sandbox, so killing its process group loses nothing;
    it is reaped here, so no process outlives the command.
    """
    ready = take()
    if ready is None:
        return
    proc, ctl, root = ready
    ctl.close()
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    shutil.rmtree(root, ignore_errors=True)


def take() -> tuple[subprocess.Popen[bytes], socket.socket, Path] | None:
    """The pre-started zygote (once), or None."""
    global _READY
    ready, _READY = _READY, None
    if ready is not None and ready[0].poll() is not None:
        ready[1].close()
        shutil.rmtree(ready[2], ignore_errors=True)
        return None
    return ready
