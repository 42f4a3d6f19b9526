"""The trusted side of the sandbox: start the fork server, spawn and reap sandboxes.

`Launcher` owns one zygote (fork server) process for the life of an engine;
`Sandbox` is one forked learner process with one step module loaded, and the
socket to it. What the suites call, and how a sandbox's replies become a
learner's messages, live in `learner` and `failures`; which files a sandbox
gets, in `submission`. Only plain data crosses the socket (see `protocol`).

A batch worker grades many submissions on one zygote, so a hostile one
could leave it poisoned (rlimits lowered, processes or fds left on it):
`Launcher.check` compares it with the state it started in, and `refresh`
starts a fresh one (CONTRACT 4.4).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attn_practice.grader.sandbox import prestart, protocol
from attn_practice.grader.sandbox.deaths import death_message
from attn_practice.grader.sandbox.submission import copy_submission, write_files

GiB = 1024**3
#: The uid range used for sandboxes when the grader runs as root.
SANDBOX_UID_BASE = 1_500_000_000


@dataclass(frozen=True)
class Limits:
    """Resource limits for one sandbox (one step of one submission)."""

    #: Wall seconds per call; None: the exercise's own `timeout` (the engine fills it in),
    #: else DEFAULT_CALL_TIMEOUT (see `Learner`). A course's `timeouts` set it per step.
    call_timeout: float | None = None
    load_timeout: float = 10.0  # wall seconds to import the learner's module
    step_timeout: float = 60.0  # wall seconds a whole step may spend in learner code
    memory: int = 1 * GiB  # address space beyond the interpreter's own
    cpu: int = 60  # CPU seconds per sandbox
    file_size: int = 8 * 1024 * 1024
    open_files: int = 64
    processes: int = 32
    max_timeouts: int = 1  # after this many timeouts, later calls fail at once (one per step)
    max_deaths: int = 3  # after this many crashes, later calls fail at once
    submission_timeout: float = 300.0  # wall seconds all steps of one submission may spend (see Budget)
    #: each call's limit counted in the sandbox's CPU seconds, not wall (confirming a timeout:
    #: a call slowed by a busy machine is not held against the learner); the grader still
    #: waits at most CPU_CLOCK_WALL times as long
    cpu_clock: bool = False


DEFAULT_CALL_TIMEOUT = 2.0
CPU_CLOCK_WALL = 3.0
#: Seconds past a timeout the grader still waits: the sandbox's own clock stops a call and
#: says which one (of a batch) first; the grader's deadline holds whatever the sandbox does.
REPLY_GRACE = 0.3

class SandboxDied(Exception):
    """The sandbox process ended (exit, signal) while we waited."""

    def __init__(self, message: str, *, out_of_memory: bool = False):
        super().__init__(message)
        self.message = message
        #: the kernel stopped it at the sandbox's memory cap (its cgroup's oom kill)
        self.out_of_memory = out_of_memory


class CallTimeout(Exception):
    pass


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
        #: every uid this launcher gave a sandbox (as root): what it may have left keys under
        self.sandbox_uids: set[int] = set()
        self._baseline: dict[str, Any] | None = None  # the zygote as it served its first spawn

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
        self._baseline = None

    def warm(self) -> None:
        """Start the zygote now (it imports NumPy while the grader imports pytest)."""
        with self._lock:
            if self._proc is None:
                self._start()

    def _request(self, req: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
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
                write_files(work, files)
            else:
                copy_submission(submission, work, first=[f"{module}.py"])
            uid = None
            if os.geteuid() == 0:
                uid = SANDBOX_UID_BASE + random.SystemRandom().randrange(100_000_000)
                self.sandbox_uids.add(uid)
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
                    "call_timeout": float(limits.call_timeout or DEFAULT_CALL_TIMEOUT),
                    "cpu_clock": bool(limits.cpu_clock),
                },
            }
            for attempt in range(2):
                ours, theirs = protocol.socket_pair()
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
                    if attempt:
                        raise RuntimeError(f"sandbox spawn failed: {_reply_text(reply)}")
                    # "fork failed": a hostile sandbox may have left limits on the
                    # zygote. A grader failure, not a verdict: retry on a fresh one.
                    self.refresh(keep_root=True)  # `tmp` lives in the root
                    continue
                if self._baseline is None:
                    self._baseline = self._state()
                if uid is not None:
                    self._uids[reply["pid"]] = uid
                return Sandbox(self, int(reply["pid"]), ours, tmp, function)
            raise RuntimeError("sandbox spawn failed")
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _state(self) -> dict[str, Any] | None:
        """What a sandbox could change about its zygote: rlimits, priority, CPUs, open fds, root."""
        if self._proc is None:
            return None
        pid = self._proc.pid
        try:
            with open(f"/proc/{pid}/limits") as f:
                limits = f.read()
            with open(f"/proc/{pid}/stat") as f:
                nice = f.read().rsplit(")", 1)[1].split()[16]
            root = os.lstat(self.root)
            return {"limits": limits, "nice": nice, "cpus": sorted(os.sched_getaffinity(pid)),
                    "fds": len(os.listdir(f"/proc/{pid}/fd")), "root": (root.st_mode, root.st_uid)}
        except (OSError, IndexError):
            return None

    def _children(self) -> list[int]:
        if self._proc is None:
            return []
        out: list[int] = []
        try:
            for task in os.listdir(f"/proc/{self._proc.pid}/task"):
                with open(f"/proc/{self._proc.pid}/task/{task}/children") as f:
                    out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
        return out

    def check(self, kept: Collection[int] = ()) -> str:
        """Why the zygote cannot be trusted for the next submission ("" when it is as it started).

        Call between submissions (no sandbox open but the `kept` ones, still in
        use): a sandbox that lowered the zygote's rlimits, changed its priority
        or CPUs, left a process or an fd on it, or changed its temp root's mode
        would poison every later step.
        """
        with self._lock:
            if self._proc is None or self._baseline is None:
                return ""
            if self._proc.poll() is not None:
                return "the fork server exited"
            now = self._state()
            if now is None:
                return "the fork server's state could not be read"
            changed = [k for k in now if now[k] != self._baseline.get(k)]
            if changed:
                return f"the fork server's {', '.join(changed)} changed"
            if set(self._children()) - set(kept):
                return "processes were left on the fork server"
            return ""

    def refresh(self, *, keep_root: bool = False) -> None:
        """Stop this zygote (and whatever it still runs), and drop its temp root unless
        `keep_root`; the next spawn starts afresh."""
        with self._lock:
            if self._proc is not None:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except OSError:
                    pass
            self._stop()
            self._kill_orphans()
            if self._root is not None and not keep_root:
                self._cleanup()
                self._root = None

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

    def pause(self, pids: Sequence[int], on: bool = True) -> bool:
        """Freeze (`on`) or thaw live sandboxes, in one round trip (see `zygote.pause`)."""
        if not pids:
            return True
        with self._lock:
            if self._proc is None:
                return False
            reply = self._request({"op": "pause", "pids": list(pids), "on": on})
        paused = reply.get("paused")
        return isinstance(paused, list) and all(paused)

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
            try:  # said, so the fork server knows its grader lives (a bare EOF: it was killed)
                socket.send_fds(self._ctl, [json.dumps({"op": "exit"}).encode()], [])
            except OSError:
                pass
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


# ---------------------------------------------------------------- sandbox
class Sandbox:
    """One live learner process; `call` raises CallTimeout / SandboxDied."""

    def __init__(self, launcher: Launcher, pid: int, sock: socket.socket, tmp: Path, function: str):
        self.launcher = launcher
        self.pid = pid
        self.sock = sock
        self.tmp = tmp
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
        deadline = time.monotonic() + timeout + REPLY_GRACE
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
            raise SandboxDied(self.death_message(), out_of_memory=self.out_of_memory) from None
        except protocol.ProtocolError as exc:
            self.close()
            if "exceeds" in str(exc):
                raise SandboxDied("returned far more data than expected") from None
            raise SandboxDied("sent the grader a malformed answer (did it write to the grader's "
                              "socket?)") from None
        except OSError:
            self.close()
            raise SandboxDied(self.death_message(), out_of_memory=self.out_of_memory) from None

    @property
    def out_of_memory(self) -> bool:
        return bool((self.exit_info or {}).get("oom"))

    def death_message(self) -> str:
        return death_message(self.exit_info or {})

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


def _reply_text(reply: dict[str, Any]) -> str:
    error = reply.get("error")
    return error[:300] if isinstance(error, str) else str(reply)[:300]
