"""The trusted side of the sandbox: start the zygote, spawn and talk to sandboxes.

`Launcher` owns one zygote process for the life of an engine; `Sandbox` is
one forked learner process with one step module loaded; `Learner` is what
the hidden suites call (`learner(Q, K)`), turning every way the learner's
code can misbehave into a `LearnerError` carrying a `Failure` a learner can
read. Only plain data crosses the socket (see `protocol`), and every reply
is validated field by field (`_clean_reply`): the sandbox runs learner code,
which can write anything to its own socket.

Time is bounded three ways: one deadline per call (a sandbox trickling its
answer cannot stretch it), a budget per step, and an optional `Budget`
shared by all steps of a submission.
"""

from __future__ import annotations

import itertools
import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from attn_practice.grader.results import CarriesFailure, Failure
from attn_practice.grader.sandbox import prestart, protocol

GiB = 1024**3
#: The uid range used for sandboxes when the grader runs as root.
SANDBOX_UID_BASE = 1_500_000_000
MAX_COPY_BYTES = 16 * 1024 * 1024
MAX_COPY_FILES = 500
MAX_SCAN_ENTRIES = 5000  # per directory: a folder of a million files is not read to the end
_SIGNAL_WORDS = {
    signal.SIGSEGV: "crashed with a segmentation fault (a bad memory access, e.g. via ctypes)",
    signal.SIGBUS: "crashed with a bus error",
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGFPE: "crashed with a floating-point exception signal",
    signal.SIGILL: "crashed with an illegal instruction",
    signal.SIGXCPU: "used more CPU time than allowed",
}


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandbox (one step of one submission)."""

    call_timeout: float = 2.0  # wall seconds per call
    load_timeout: float = 10.0  # wall seconds to import the learner's module
    step_timeout: float = 60.0  # wall seconds a whole step may spend in learner code
    memory: int = 1 * GiB  # address space beyond the interpreter's own
    cpu: int = 60  # CPU seconds per sandbox
    file_size: int = 8 * 1024 * 1024
    open_files: int = 64
    processes: int = 32
    max_timeouts: int = 2  # after this many timeouts, later calls fail at once
    max_deaths: int = 3  # after this many crashes, later calls fail at once
    submission_timeout: float = 300.0  # wall seconds all steps of one submission may spend (see Budget)


#: Longest a batch of prefetched (replayed) calls may take before falling back to single calls.
PREFETCH_TIMEOUT = 10.0


def _same_values(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
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


class Budget:
    """Wall-clock seconds shared by every step of one submission.

    Pass the same `Budget` to each `Learner` of a submission; once it is
    spent, every later load or call fails at once with a timeout.
    """

    def __init__(self, seconds: float):
        self.seconds = float(seconds)
        self.used = 0.0

    @property
    def exhausted(self) -> bool:
        return self.used > self.seconds

    def charge(self, seconds: float) -> None:
        self.used += max(0.0, seconds)


class LearnerError(CarriesFailure, Exception):
    """The learner's code did not produce a usable answer; `.failure` says why.

    Raised in quiet mode (see `Learner.quiet`), the failure is built by `complete()`.
    """

    def __init__(self, failure: Failure | None = None, *, kind: str = "exception",
                 build: Callable[[], Failure] | None = None):
        failure = failure or Failure(kind=kind, summary="")
        super().__init__(failure.summary)
        self.failure = failure
        self.kind = kind
        self.build = build


class LoadError(LearnerError):
    """The learner's module could not be loaded (syntax, import, missing function)."""


class SandboxDied(Exception):
    """The sandbox process ended (exit, signal) while we waited."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class CallTimeout(Exception):
    pass


@dataclass
class CallResult:
    value: np.ndarray
    dtype: str
    returned: str
    mutated: list[int]
    seconds: float
    output: str


# --------------------------------------------------------------- launcher
class Launcher:
    """One zygote per engine; forks a fresh sandbox per (submission, step)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctl: socket.socket | None = None
        self._memory_base = 0
        self._root: Path | None = None
        self._lock = threading.RLock()
        self._uids: dict[int, int] = {}  # live sandbox pid -> its uid (as root)

    @property
    def root(self) -> Path:
        """This launcher's private temporary directory; each sandbox gets a folder in it."""
        if self._root is None or not self._root.is_dir():
            self._root = prestart.make_root()
            # Removed by close(), or when a launcher nobody closed is collected or the interpreter exits.
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._root), True)
        return self._root

    def _start(self) -> None:
        ready = prestart.take() if self._root is None else None
        if ready is not None:
            self._proc, self._ctl, self._root = ready
            self._cleanup = weakref.finalize(self, shutil.rmtree, str(self._root), True)
        else:
            self._proc, self._ctl = prestart.spawn_zygote(self.root)
        self._memory_base = 0

    def warm(self) -> None:
        """Start the zygote now (it imports NumPy while the grader imports pytest)."""
        with self._lock:
            if self._proc is None:
                self._start()

    def _request(self, req: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        import json

        with self._lock:
            self.warm()
            assert self._ctl is not None
            try:
                socket.send_fds(self._ctl, [json.dumps(req).encode()], list(fds))
                data = self._ctl.recv(65536)
            except OSError as exc:
                self._stop()
                self._kill_orphans()
                raise RuntimeError(f"the sandbox fork server stopped responding: {exc}") from None
            if not data:
                self._stop()
                self._kill_orphans()
                raise RuntimeError("the sandbox fork server exited unexpectedly")
            reply = json.loads(data)
            return reply if isinstance(reply, dict) else {}

    def spawn(
        self,
        submission: Path,
        *,
        module: str,
        function: str,
        params: Sequence[str],
        limits: Limits,
        display_dir: str = "",
        files: dict[str, bytes] | None = None,
    ) -> Sandbox:
        """Fork a sandbox holding a fresh copy of `submission` (or of `files`)."""
        tmp = Path(tempfile.mkdtemp(prefix="s-", dir=self.root))
        work = tmp / "work"
        try:
            if files is not None:
                _write_files(work, files)
            else:
                copy_submission(submission, work, first=[f"{module}.py"])
            uid = None
            if os.geteuid() == 0:
                uid = SANDBOX_UID_BASE + random.SystemRandom().randrange(100_000_000)
                os.chmod(tmp, 0o711)
            self.warm()
            req = {
                "op": "spawn",
                "workdir": str(work),
                "module": module,
                "function": function,
                "params": list(params),
                "file": f"{module}.py",
                "display_dir": display_dir,
                "uid": uid,
                "limits": {
                    "memory": limits.memory + self.memory_base(),
                    "cpu": limits.cpu,
                    "file_size": limits.file_size,
                    "open_files": limits.open_files,
                    "processes": limits.processes,
                },
            }
            for attempt in range(2):
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
                try:
                    reply = self._request(req, [theirs.fileno()])
                except RuntimeError:
                    ours.close()
                    if attempt:
                        raise
                    continue  # the zygote died (OOM killer?): start a new one, once
                finally:
                    theirs.close()
                if "pid" not in reply or type(reply["pid"]) is not int:
                    ours.close()
                    raise RuntimeError(f"sandbox spawn failed: {reply}")
                if uid is not None:
                    self._uids[reply["pid"]] = uid
                return Sandbox(self, int(reply["pid"]), ours, tmp, limits, function)
            raise RuntimeError("sandbox spawn failed")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @property
    def pid(self) -> int | None:
        """The zygote's process id (every sandbox and its leftovers descend from it)."""
        return self._proc.pid if self._proc is not None else None

    def info(self) -> dict[str, Any]:
        """The confinement sandboxes get on this machine: uid drop, namespaces, Landlock ABI."""
        return self._request({"op": "info"})

    def memory_base(self) -> int:
        """The zygote's own address space, which every forked child inherits."""
        if not self._memory_base and self._proc is not None:
            try:
                with open(f"/proc/{self._proc.pid}/statm") as f:
                    self._memory_base = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError):
                self._memory_base = 512 * 1024 * 1024
        return self._memory_base

    def reap(self, pid: int, grace: float = 0.0) -> dict[str, Any]:
        """Kill sandbox `pid` with everything it started; its exit status.

        `grace`: let a sandbox that is already exiting finish first (up to
        that many seconds), so the status reported is its own.
        """
        with self._lock:
            if self._proc is None:
                self._uids.pop(pid, None)
                return {}  # the zygote is gone, and its sandboxes with it
            reply = self._request({"op": "reap", "pid": pid, "grace": grace})
            self._uids.pop(pid, None)
            return reply

    def reap_many(self, pids: Sequence[int]) -> list[dict[str, Any]]:
        """`reap` for several sandboxes in one round trip; they are killed together."""
        if not pids:
            return []
        with self._lock:
            if self._proc is None:
                for pid in pids:
                    self._uids.pop(pid, None)
                return [{} for _ in pids]
            reply = self._request({"op": "reap_many", "pids": list(pids)})
            for pid in pids:
                self._uids.pop(pid, None)
        results = reply.get("results")
        if not isinstance(results, list) or len(results) != len(pids):
            return [{} for _ in pids]
        return [r if isinstance(r, dict) else {} for r in results]

    def _kill_orphans(self) -> None:
        """The zygote died: as root, kill whatever its sandboxes' uids still run.

        (Its sandboxes die with it, but their own children would otherwise
        be left to init.)
        """
        uids, self._uids = list(self._uids.values()), {}
        if os.geteuid() != 0:
            return
        kill = shutil.which("kill") or "/bin/kill"
        for uid in uids:
            try:
                subprocess.run([kill, "-KILL", "-1"], user=uid, group=uid, extra_groups=[],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=10, cwd="/", env={})
            except (OSError, subprocess.SubprocessError):
                pass

    def _stop(self) -> None:
        if self._ctl is not None:
            try:
                self._ctl.close()
            except OSError:
                pass
            self._ctl = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                self._proc.wait()
            self._proc = None

    def close(self) -> None:
        with self._lock:
            self._stop()
            if self._root is not None:
                self._cleanup()
                self._root = None

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def copy_submission(src: Path, dst: Path, first: Sequence[str] = ()) -> None:
    """Copy the submission's Python files (top level and packages), never via symlinks.

    Files are opened without following links and without blocking, and only
    regular files are copied, so a FIFO or a link swapped in while grading
    runs can neither hang the grader nor reach outside the submission.
    `first`: top-level file names to copy before the budget can run out.
    """
    dst.mkdir(parents=True)
    budget = [MAX_COPY_BYTES, MAX_COPY_FILES]

    def copy_file(path: str, target: Path) -> None:
        if budget[1] <= 0 or target.exists():
            return
        data = read_regular_file(path, budget[0])
        if data is None:
            return
        budget[0] -= len(data)
        budget[1] -= 1
        target.write_bytes(data)

    def copy_dir(s: Path, d: Path, depth: int) -> None:
        try:
            with os.scandir(s) as it:
                entries = sorted(itertools.islice(it, MAX_SCAN_ENTRIES), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if budget[1] <= 0:
                return
            if entry.is_symlink() or entry.name.startswith("."):
                continue
            if entry.is_file(follow_symlinks=False) and entry.name.endswith(".py"):
                copy_file(entry.path, d / entry.name)
            elif (
                entry.is_dir(follow_symlinks=False)
                and depth < 3
                and entry.name.isidentifier()
                and read_regular_file(os.path.join(entry.path, "__init__.py"), MAX_COPY_BYTES) is not None
            ):
                (d / entry.name).mkdir()
                copy_dir(Path(entry.path), d / entry.name, depth + 1)

    for name in first:
        if "/" not in name and name.endswith(".py") and not name.startswith("."):
            copy_file(os.path.join(src, name), dst / name)
    copy_dir(src, dst, 0)


def read_regular_file(path: str, limit: int) -> bytes | None:
    """The bytes of `path` if it is a regular file (not a link) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _write_files(dst: Path, files: dict[str, bytes]) -> None:
    dst.mkdir(parents=True)
    for name, data in files.items():
        if "/" in name or name.startswith(".") or not name.endswith(".py"):
            continue
        (dst / name).write_bytes(data)


# ---------------------------------------------------------------- sandbox
class Sandbox:
    """One live learner process; `call` raises CallTimeout / SandboxDied."""

    def __init__(self, launcher: Launcher, pid: int, sock: socket.socket, tmp: Path,
                 limits: Limits, function: str):
        self.launcher = launcher
        self.pid = pid
        self.sock = sock
        self.tmp = tmp
        self.limits = limits
        self.function = function
        self.closed = False
        self.exit_info: dict[str, Any] | None = None

    def request(self, header: dict[str, Any], blobs: list[bytes], timeout: float,
                max_bytes: int = protocol.MAX_MESSAGE_BYTES) -> tuple[dict[str, Any], list[bytes]]:
        return self.receive(self.send(header, blobs, timeout), max_bytes)

    def send(self, header: dict[str, Any], blobs: list[bytes], timeout: float) -> float:
        """Send a request; returns the deadline its reply must meet (see `receive`).

        One deadline for the whole exchange: a sandbox that trickles its
        answer a byte at a time cannot stretch the wait.
        """
        deadline = time.monotonic() + timeout
        self._guarded(protocol.send, self.sock, header, blobs, deadline=deadline)
        return deadline

    def receive(self, deadline: float,
                max_bytes: int = protocol.MAX_MESSAGE_BYTES) -> tuple[dict[str, Any], list[bytes]]:
        """The reply to the request `send` made, by its deadline."""
        return self._guarded(protocol.recv, self.sock, max_bytes=max_bytes, deadline=deadline)

    def _guarded(self, io: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`io(*args, **kwargs)` with socket trouble as CallTimeout or SandboxDied (sandbox reaped)."""
        if self.closed:
            raise SandboxDied("the sandbox is closed")
        try:
            return io(*args, **kwargs)
        except TimeoutError:
            self.close()
            raise CallTimeout() from None
        except (protocol.PeerClosed, ConnectionError):
            self.close(grace=0.05)
            raise SandboxDied(self.death_message()) from None
        except protocol.ProtocolError as exc:
            self.close()
            if "exceeds" in str(exc):
                raise SandboxDied("returned far more data than expected") from None
            raise SandboxDied("sent the grader a malformed answer (did it write to the grader's "
                              "socket?)") from None
        except OSError:
            self.close()
            raise SandboxDied(self.death_message()) from None

    def death_message(self) -> str:
        info = self.exit_info or {}
        sig = info.get("signal")
        code = info.get("exitcode")
        if info.get("killed") is True:
            return "stopped talking to the grader (it closed or broke its connection) and was stopped"
        if sig == signal.SIGKILL:
            return "was killed (it used more memory, CPU time or processes than allowed)"
        if sig is not None:
            try:
                words = _SIGNAL_WORDS.get(signal.Signals(sig))
            except ValueError:
                words = None
            return words or f"was killed by signal {sig}"
        if code is not None:
            return f"ended the whole process with exit code {code} (os._exit or similar)"
        return "stopped responding"

    def close(self, grace: float = 0.0) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.exit_info = self.launcher.reap(self.pid, grace)
        except (RuntimeError, ValueError):
            self.exit_info = {}
        shutil.rmtree(self.tmp, ignore_errors=True)


def close_sandboxes(sandboxes: Sequence[Sandbox]) -> None:
    """Close several sandboxes of one launcher with a single reap request."""
    live = [sb for sb in sandboxes if not sb.closed]
    if len(live) < 2:
        for sb in live:
            sb.close()
        return
    for sb in live:
        sb.closed = True
        try:
            sb.sock.close()
        except OSError:
            pass
    try:
        infos = live[0].launcher.reap_many([sb.pid for sb in live])
    except (RuntimeError, ValueError):
        infos = [{} for _ in live]
    for sb, info in zip(live, infos, strict=True):
        sb.exit_info = info
        shutil.rmtree(sb.tmp, ignore_errors=True)


# ---------------------------------------------------------------- learner
@dataclass
class LoadInfo:
    ok: bool
    line: int = 0
    signature: str = ""
    imported_steps: list[str] = field(default_factory=list)
    failure: Failure | None = None


class Learner:
    """The learner's function as the suites see it: `learner(*args) -> float64 array`.

    Spawns its sandbox lazily and respawns it after a crash or timeout, so
    one bad input does not fail the rest of the step; after repeated
    timeouts or crashes, later calls fail at once so a step stays bounded.
    """

    def __init__(self, launcher: Launcher, submission: Path, *, step_id: str, module: str,
                 function: str, params: Sequence[str], limits: Limits, display_dir: str = "",
                 files: dict[str, bytes] | None = None, shims: dict[str, str] | None = None,
                 budget: Budget | None = None):
        self.launcher = launcher
        self.submission = submission
        self.step_id = step_id
        self.module = module
        self.function = function
        self.params = tuple(params)
        self.limits = limits
        self.display_dir = display_dir
        self.files = files
        self.shims = shims or {}
        self.budget = budget
        self.sandbox: Sandbox | None = None
        self.load_info: LoadInfo | None = None
        self.output: list[str] = []
        self.output_size = 0
        self.notes: dict[str, str] = {}
        self.timeouts = 0
        self.deaths = 0
        self.sticky: LearnerError | None = None
        self.learner_seconds = 0.0
        self.calls = 0
        self.call_seconds: list[tuple[int, float]] = []  # (input elements, seconds)
        self._prefetched: list[tuple[Any, dict[str, Any], list[bytes]]] = []
        self._pending_load: tuple[float | BaseException, float] | None = None
        #: Raise failures with their messages unbuilt (`LearnerError.complete` builds one):
        #: grading runs every recorded example but reports only one failure.
        self.quiet = False

    # -- lifecycle -------------------------------------------------------
    def begin_load(self) -> LoadInfo | None:
        """Spawn the sandbox and ask it to import the module, without waiting.

        `load()` collects the answer; the engine begins every step's load
        first, so the sandboxes import in parallel. Returns the LoadInfo at
        once only when nothing could be started.
        """
        if self._pending_load is not None:
            return None
        if self.budget is not None and self.budget.exhausted:
            self.load_info = LoadInfo(False, failure=self._budget_failure())
            return self.load_info
        try:
            self.sandbox = self.launcher.spawn(
                self.submission, module=self.module, function=self.function, params=self.params,
                limits=self.limits, display_dir=self.display_dir, files=self.files,
            )
        except (RuntimeError, OSError) as exc:
            self.load_info = LoadInfo(False, failure=Failure(
                kind="internal",
                summary=f"the grader could not start a sandbox for {self.module}.py ({exc})",
                hint="This is not your fault: please report it to the course staff.",
            ))
            return self.load_info
        load_timeout = self._timeout(self.limits.load_timeout)
        try:
            deadline: float | BaseException = self.sandbox.send(
                {"op": "load", "shims": self.shims}, [], timeout=load_timeout)
        except (CallTimeout, SandboxDied) as exc:
            deadline = exc  # reported by load(), as if it came with the reply
        self._pending_load = (deadline, load_timeout)
        return None

    def load(self) -> LoadInfo:
        """Spawn (if needed) and import the learner's module; cached."""
        if (self._pending_load is None and self.load_info is not None and self.sandbox is not None
                and not self.sandbox.closed):
            return self.load_info
        if self._pending_load is None:
            early = self.begin_load()
            if early is not None:
                return early
        assert self._pending_load is not None and self.sandbox is not None
        (deadline, load_timeout), self._pending_load = self._pending_load, None
        t0 = time.perf_counter()
        try:
            if isinstance(deadline, BaseException):
                raise deadline
            reply, _ = self.sandbox.receive(deadline)
        except CallTimeout:
            if load_timeout < self.limits.load_timeout:
                self.load_info = LoadInfo(False, failure=self._budget_failure())
                return self.load_info
            info = LoadInfo(False, failure=Failure(
                kind="timeout",
                summary=f"timeout: importing {self.module}.py took more than "
                        f"{self.limits.load_timeout:g} s",
                hint="Code at the top level of your file runs on import: keep only imports "
                     "and definitions there, no loops or input().",
            ))
            self.load_info = info
            return info
        except SandboxDied as exc:
            info = LoadInfo(False, failure=Failure(
                kind="crash",
                summary=f"your code {exc.message} while {self.module}.py was being imported",
                hint="Remove top-level code that exits or crashes: the file should only "
                     "define your function.",
            ))
            self.load_info = info
            return info
        finally:
            if self.budget is not None:
                # The time spent waiting here: loads begun together overlap.
                self.budget.charge(time.perf_counter() - t0)
        reply = _clean_reply(reply)
        self._collect_output(reply)
        if reply.get("ok") is True:
            info = LoadInfo(True, line=reply["line"], signature=reply["signature"],
                            imported_steps=reply["imported_steps"])
        else:
            info = LoadInfo(False, failure=_load_failure(reply, self.module, self.function, self.params))
        self.load_info = info
        return info

    def close(self) -> None:
        self._pending_load = None
        if self.sandbox is not None:
            self.sandbox.close()
            self.sandbox = None


    # -- calls -------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        return self.call(*args, **kwargs).value

    def call(self, *args: Any, expected_size: int | None = None, **kwargs: Any) -> CallResult:
        """Run the learner's function on copies of `args`; never returns learner objects."""
        if self.sticky is not None:
            raise LearnerError(self.sticky.failure, kind=self.sticky.kind)
        if self.budget is not None and self.budget.exhausted:
            self._stick("timeout", self._budget_failure())
        if self.learner_seconds > self.limits.step_timeout:
            self._stick("timeout", Failure(
                kind="timeout",
                summary=f"timeout: this step spent more than {self.limits.step_timeout:g} s "
                        "in your code, so its remaining tests were stopped",
                hint="Look for loops that do much more work than needed.",
            ))
        info = self.load()
        if not info.ok:
            assert info.failure is not None
            raise LoadError(info.failure, kind="load")
        assert self.sandbox is not None
        max_elements = max(64 * (expected_size or 0), 1 << 16)
        for i, ((p_args, p_kwargs, p_size), reply, p_blobs) in enumerate(self._prefetched):
            if (p_size == expected_size and p_kwargs.keys() == kwargs.keys() and _same_values(p_args, args)
                    and _same_values(tuple(p_kwargs.values()), tuple(kwargs[k] for k in p_kwargs))):
                # Calls skipped over belonged to an example that failed early.
                del self._prefetched[: i + 1]
                return self._finish(reply, p_blobs, args, kwargs, expected_size, max_elements)
        self._prefetched.clear()  # the test took another path: back to one call at a time
        blobs: list[bytes] = []
        header = {
            "op": "call",
            "args": protocol.pack_values(list(args), blobs),
            "kwargs": {k: protocol.pack_values([v], blobs)[0] for k, v in kwargs.items()},
            "max_elements": max_elements,
        }
        t0 = time.perf_counter()
        call_timeout = self._timeout(self.limits.call_timeout)
        try:
            reply, out_blobs = self.sandbox.request(
                header, blobs, timeout=call_timeout, max_bytes=16 * max_elements + (1 << 20))
        except CallTimeout:
            self.timeouts += 1
            if call_timeout < self.limits.call_timeout:
                self._stick("timeout", self._budget_failure())
            failure = Failure(
                kind="timeout",
                summary=f"timeout: your function did not return within {self.limits.call_timeout:g} s",
                details=describe_inputs(self.params, args),
                repro=repro_line(self.function, self.params, args, kwargs),
                hint="Check for a loop that never ends, or input()/sleep() in your code.",
            )
            if self.timeouts >= self.limits.max_timeouts:
                self._stick("timeout", failure)
            raise LearnerError(failure, kind="timeout") from None
        except SandboxDied as exc:
            self.deaths += 1
            failure = Failure(
                kind="crash",
                summary=f"your code {exc.message} while running {self.function}(...)",
                details=describe_inputs(self.params, args),
                repro=repro_line(self.function, self.params, args, kwargs),
                hint="Return a value instead of exiting, and avoid ctypes or os-level calls.",
            )
            if self.deaths >= self.limits.max_deaths:
                self._stick("crash", failure)
            raise LearnerError(failure, kind="crash") from None
        finally:
            spent = time.perf_counter() - t0
            self.learner_seconds += spent
            if self.budget is not None:
                self.budget.charge(spent)
        return self._finish(reply, out_blobs, args, kwargs, expected_size, max_elements)

    def _finish(self, reply: dict[str, Any], out_blobs: list[bytes], args: tuple[Any, ...],
                kwargs: dict[str, Any], expected_size: int | None, max_elements: int) -> CallResult:
        """Turn one sandbox reply into a CallResult, or the LearnerError it deserves."""
        reply = _clean_reply(reply)
        self._collect_output(reply)
        if reply.get("ok") is not True:
            kind = str(reply.get("kind") or "exception")
            if self.quiet and kind != "not-implemented":
                raise LearnerError(kind=kind, build=lambda: _call_failure(
                    reply, self.function, self.params, args, kwargs, expected_size, self.limits))
            failure = _call_failure(reply, self.function, self.params, args, kwargs, expected_size,
                                    self.limits)
            if kind == "not-implemented":
                self._stick("not-implemented", failure)
            raise LearnerError(failure, kind=kind)
        if not out_blobs:
            raise LearnerError(Failure(kind="crash", summary="your code sent back a malformed answer"),
                               kind="crash")
        try:
            (raw,) = protocol.unpack_values([reply.get("result")], out_blobs)
            if not isinstance(raw, np.ndarray):
                raise protocol.ProtocolError("not an array")
        except (ValueError, TypeError, protocol.ProtocolError):
            raise LearnerError(Failure(kind="crash", summary="your code sent back a malformed answer"),
                               kind="crash") from None
        if raw.size > max_elements:
            failure = Failure(kind="shape", summary=f"{self.function} returned an array of shape "
                              f"{raw.shape}, far larger than expected",
                              details=describe_inputs(self.params, args),
                              repro=repro_line(self.function, self.params, args, kwargs))
            raise LearnerError(failure, kind="too-large")
        self.calls += 1
        seconds = reply["seconds"]
        self.call_seconds.append((sum(np.size(a) for a in args if isinstance(a, np.ndarray)), seconds))
        returned = reply["returned"] or "ndarray"
        mutated = [i for i in reply["mutated"] if 0 <= i < len(args)]
        dtype = protocol.dtype_name(raw.dtype)
        self._note_return(returned, dtype, args, mutated)
        value = raw.astype(np.float64) if raw.dtype != np.float64 else raw
        return CallResult(value, dtype, returned, mutated, seconds, reply["output"])

    def prefetch(self, packed: PackedCalls) -> None:
        """Run `packed` calls (see `pack_calls`) in one round trip; `call` serves them in order.

        Only an optimisation for replayed examples: on any trouble (a timeout, a
        crash, a sticky failure) nothing is kept and each call runs on its own,
        so every outcome and message is exactly what single calls give.
        """
        self._prefetched = []
        if not packed.calls or self.sticky is not None or (self.budget is not None and self.budget.exhausted):
            return
        info = self.load()
        if not info.ok or self.sandbox is None:
            return
        n = len(packed.calls)
        timeout = self._timeout(min(self.limits.call_timeout * n, PREFETCH_TIMEOUT))
        t0 = time.perf_counter()
        try:
            reply, out_blobs = self.sandbox.request({"op": "call_many", "calls": list(packed.specs)},
                                                    list(packed.blobs), timeout=timeout,
                                                    max_bytes=packed.reply_limit)
        except (CallTimeout, SandboxDied, protocol.ProtocolError):
            return  # the sandbox was closed; the single calls will respawn it and tell
        finally:
            spent = time.perf_counter() - t0
            self.learner_seconds += spent
            if self.budget is not None:
                self.budget.charge(spent)
        replies = reply.get("replies")
        if reply.get("ok") is not True or not isinstance(replies, list) or len(replies) != n:
            return
        for call, sub in zip(packed.calls, replies, strict=True):
            if not isinstance(sub, dict):
                return
            self._prefetched.append((call, sub, out_blobs))

    def _timeout(self, seconds: float) -> float:
        """`seconds`, or less when the submission's budget is nearly spent."""
        if self.budget is None:
            return seconds
        return max(0.05, min(seconds, self.budget.seconds - self.budget.used))

    def _budget_failure(self) -> Failure:
        assert self.budget is not None
        return Failure(
            kind="timeout",
            summary=f"timeout: this submission spent more than {self.budget.seconds:g} s in your "
                    "code, so its remaining tests were stopped",
            hint="Look for loops that do much more work than needed, or sleep()/input() calls.",
        )

    def _stick(self, kind: str, failure: Failure) -> None:
        self.sticky = LearnerError(failure, kind=kind)
        raise self.sticky

    def _collect_output(self, reply: dict[str, Any]) -> None:
        text = reply.get("output")
        if isinstance(text, str) and text and self.output_size < 16384:
            self.output.append(text[: 16384 - self.output_size])
            self.output_size += len(text)

    def _note_return(self, returned: str, dtype: str, args: tuple[Any, ...], mutated: list[int]) -> None:
        if returned in ("list", "tuple"):
            self.notes.setdefault("list", f"your function returned a {returned}; NumPy arrays are "
                                  "the usual answer (np.array(...) would convert it)")
        elif returned.startswith("ndarray subclass"):
            self.notes.setdefault("subclass", f"your function returned an {returned}; it was "
                                  "judged as a plain array")
        in_dtypes = {protocol.dtype_name(a.dtype) for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"}
        if in_dtypes and dtype not in in_dtypes and "list" not in self.notes:
            self.notes.setdefault("dtype", f"your function returned {dtype} for "
                                  f"{'/'.join(sorted(in_dtypes))} input (not judged, but worth knowing)")
        for i in mutated:
            name = self.params[i] if i < len(self.params) else f"argument {i}"
            self.notes.setdefault(f"mutated-{name}", f"your function changed its input {name} in "
                                  "place; callers may not expect that (not judged)")


def close_learners(learners: Sequence[Learner]) -> None:
    """Close every learner's sandbox at once (see `close_sandboxes`)."""
    by_launcher: dict[int, list[Sandbox]] = {}
    for learner in learners:
        learner._pending_load = None
        if learner.sandbox is not None:
            by_launcher.setdefault(id(learner.sandbox.launcher), []).append(learner.sandbox)
            learner.sandbox = None
    for sandboxes in by_launcher.values():
        close_sandboxes(sandboxes)


#: Reply fields the trusted side reads, with the only type each may have.
_REPLY_FIELDS: dict[str, tuple[type, Any]] = {
    "kind": (str, ""), "message": (str, ""), "exc_type": (str, ""), "traceback": (str, ""),
    "phase": (str, ""), "returned": (str, ""), "dtype": (str, ""), "output": (str, ""),
    "signature": (str, ""), "file": (str, ""), "text": (str, ""),
    "line": (int, 0), "offset": (int, 0), "seconds": (float, 0.0),
    "mutated": (list, []), "shape": (list, []), "defined": (list, []), "imported_steps": (list, []),
}


def _clean_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A sandbox reply with every field the grader reads of the right type and bounded size.

    The sandbox runs learner code, which can write to its socket: nothing in
    a reply is trusted to be well-formed. Text loses control characters, so
    learner output cannot drive the terminal a report is shown on.
    """
    out = dict(_REPLY_DEFAULTS, mutated=[], shape=[], defined=[], imported_steps=[])
    out["ok"] = reply.get("ok") is True
    out["result"] = reply.get("result")
    for key in _REPLY_FIELDS.keys() & reply.keys():
        kind = _REPLY_FIELDS[key][0]
        v = reply[key]
        if kind is str:
            if isinstance(v, str):
                out[key] = v[:16384].translate(_CONTROL_CHARS)
        elif kind is float:
            if type(v) in (int, float) and v == v and abs(v) < 1e9:
                out[key] = float(v)
        elif kind is int:
            if type(v) is int and abs(v) < 1 << 31:
                out[key] = v
        elif isinstance(v, list):
            if key in ("mutated", "shape"):
                out[key] = [x for x in v[:64] if type(x) is int and 0 <= x < 1 << 40]
            else:
                out[key] = [x[:200].translate(_CONTROL_CHARS) for x in v[:64] if isinstance(x, str)]
    return out


_REPLY_DEFAULTS = {key: default for key, (_kind, default) in _REPLY_FIELDS.items()}
#: C0/C1 control characters (but tab and newline) and DEL, shown as U+FFFD.
_CONTROL_CHARS = {c: "\ufffd" for c in [*range(0, 9), *range(11, 32), *range(127, 160)]}


def _load_failure(reply: dict[str, Any], module: str, function: str, params: Sequence[str]) -> Failure:
    kind = reply.get("kind")
    file = f"{module}.py"
    if kind == "syntax":
        text = str(reply.get("text", ""))
        offset = int(reply.get("offset", 0) or 0)
        caret = " " * max(offset - 1, 0) + "^" if text else ""
        return Failure(
            kind="syntax",
            summary=f"{file} has a syntax error on line {reply.get('line', '?')}: "
                    f"{reply.get('message', '')}",
            details=f'  File "{reply.get("file") or file}", line {reply.get("line", "?")}\n    {text}\n    {caret}'
                    if text else "",
            hint="Python could not read the file. Look at the marked line and the one above it "
                 "(a missing bracket or colon often shows up one line late).",
        )
    if kind == "missing-function":
        defined = reply.get("defined") or []
        found = f" It defines: {', '.join(map(str, defined))}." if defined else ""
        return Failure(
            kind="missing-function",
            summary=f"{file} has no function named `{function}`.{found}",
            hint=f"Keep the name and signature from the stub: def {function}({', '.join(params)}):",
        )
    if kind == "not-callable":
        return Failure(
            kind="not-callable",
            summary=f"`{function}` in {file} is a {reply.get('message')}, not a function",
            hint=f"Define it with def {function}({', '.join(params)}):",
        )
    if kind == "signature":
        return Failure(
            kind="signature",
            summary=f"`{reply.get('message')}` cannot be called as {function}({', '.join(params)})",
            hint=f"Keep the stub's parameters: def {function}({', '.join(params)}):",
        )
    if kind == "exit":
        return Failure(kind="exit", summary=f"your code called exit() while {file} was being imported",
                       traceback=str(reply.get("traceback", "")),
                       hint="Remove the exit()/sys.exit() call from the top level of your file.")
    phase = "being imported"
    summary = f"{file} raised {reply.get('message', 'an error')} while {phase}"
    if kind == "exception" and reply.get("exc_type") in ("ImportError", "ModuleNotFoundError"):
        summary = f"{file} could not import something: {reply.get('message')}"
    return Failure(kind="import", summary=summary, traceback=str(reply.get("traceback", "")),
                   hint="Code at the top level of your file runs on import; fix the line shown.")


def _call_failure(reply: dict[str, Any], function: str, params: Sequence[str], args: tuple[Any, ...],
                  kwargs: dict[str, Any], expected_size: int | None,
                  limits: Limits | None = None) -> Failure:
    kind = reply.get("kind")
    repro = repro_line(function, params, args, kwargs)
    inputs = describe_inputs(params, args)
    if kind == "not-implemented":
        return Failure(kind="not-implemented",
                       summary=f"{function} is not written yet: it still raises NotImplementedError",
                       traceback=str(reply.get("traceback", "")),
                       hint="Open the file, replace the `raise NotImplementedError(...)` line with "
                            "your code, and check again. `attn-practice hint` helps you start.")
    if kind == "bad-return":
        returned = reply.get("returned", "something")
        extra = f" ({reply.get('message')})" if reply.get("message") else ""
        if returned == "None":
            summary = f"{function} returned None: did you forget a `return` statement?"
        else:
            summary = f"{function} returned {returned}{extra}, not an array of numbers"
        return Failure(kind="type", summary=summary, details=inputs, repro=repro,
                       hint="Return a NumPy array of floats.")
    if kind == "too-large":
        return Failure(kind="shape", summary=f"{function} returned an array of shape "
                       f"{tuple(reply.get('shape', []))}, far larger than expected",
                       details=inputs, repro=repro)
    if kind == "memory":
        what = f"ran out of memory (it may use at most {_size_words((limits or Limits()).memory)})"
    elif kind == "recursion":
        what = "recursed too deeply (RecursionError)"
    elif kind == "exit":
        what = "called exit() (SystemExit) instead of returning"
    elif kind == "interrupt":
        what = "raised KeyboardInterrupt"
    else:
        what = f"raised {reply.get('message', 'an exception')}"
    return Failure(kind="exception", summary=f"{function} {what}", details=inputs,
                   traceback=str(reply.get("traceback", "")), repro=repro,
                   hint="Run the repro line in Python to see it happen, then read the "
                        "traceback from the bottom up.")


def _size_words(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


# --------------------------------------------------------------- display
def format_array(a: Any, max_elements: int = 64) -> str:
    """A compact, copy-pasteable rendering of a small array."""
    if not isinstance(a, np.ndarray):
        return repr(a)
    if a.size > max_elements:
        return f"<array of shape {a.shape}, dtype {a.dtype}>"
    body = np.array2string(a, separator=", ", precision=17 if a.dtype == np.float64 else 8,
                           floatmode="maxprec", max_line_width=10_000, threshold=max_elements + 1)
    body = body.replace("\n", "")
    dtype = "" if a.dtype == np.float64 else f", dtype=np.{a.dtype}"
    return f"np.array({body}{dtype})".replace("inf", "np.inf").replace("nan", "np.nan")


def repro_line(function: str, params: Sequence[str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    if any(isinstance(a, np.ndarray) and a.size > 64 for a in args):
        shapes = ", ".join(f"{p}{getattr(a, 'shape', '')}" for p, a in zip(params, args, strict=False))
        return f"# inputs too large to print: {function}({shapes})"
    parts = [format_array(a) for a in args] + [f"{k}={format_array(v)}" for k, v in kwargs.items()]
    return f"{function}({', '.join(parts)})"


def describe_inputs(params: Sequence[str], args: tuple[Any, ...]) -> str:
    lines = []
    for name, a in zip(params, args, strict=False):
        if isinstance(a, np.ndarray):
            lines.append(f"{name}: shape {a.shape}, dtype {a.dtype}")
            if a.size <= 24:
                lines.append("  " + np.array2string(a, precision=4, suppress_small=False).replace("\n", "\n  "))
        else:
            lines.append(f"{name} = {a!r}")
    return "\n".join(lines)
