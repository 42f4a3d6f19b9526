"""The trusted side of the sandbox: start the zygote, spawn and talk to sandboxes.

`Launcher` owns one zygote process for the life of an engine; `Sandbox` is
one forked learner process with one step module loaded; `Learner` is what
the hidden suites call (`learner(Q, K)`), turning every way the learner's
code can misbehave into a `LearnerError` carrying a `Failure` a learner can
read. Only plain data crosses the socket (see `protocol`).
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import protocol
from .results import Failure

GiB = 1024**3
#: The uid range used for sandboxes when the grader runs as root.
SANDBOX_UID_BASE = 1_500_000_000
MAX_COPY_BYTES = 16 * 1024 * 1024
MAX_COPY_FILES = 500
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


class LearnerError(Exception):
    """The learner's code did not produce a usable answer; `.failure` says why."""

    def __init__(self, failure: Failure, *, kind: str = "exception"):
        super().__init__(failure.summary)
        self.failure = failure
        self.kind = kind


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

    def _start(self) -> None:
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "PYTHONHASHSEED": "0",
            "PYTHONDONTWRITEBYTECODE": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "HOME": tempfile.gettempdir(),
        }
        # Some processors need these for OpenBLAS to work at all: pass them on.
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
            if name in os.environ:
                env[name] = os.environ[name]
        self._proc = subprocess.Popen(
            [sys.executable, "-I", "-m", "attn_practice.grader.sandbox", "zygote", str(child.fileno())],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd="/",
            start_new_session=True,
        )
        child.close()
        self._ctl = parent
        self._ctl.settimeout(30)

    def warm(self) -> None:
        """Start the zygote now (it imports NumPy while the grader imports pytest)."""
        if self._proc is None:
            self._start()

    def _request(self, req: dict[str, Any], fds: Sequence[int] = ()) -> dict[str, Any]:
        import json

        self.warm()
        assert self._ctl is not None
        try:
            socket.send_fds(self._ctl, [json.dumps(req).encode()], list(fds))
            data = self._ctl.recv(65536)
        except OSError as exc:
            self.close()
            raise RuntimeError(f"the sandbox fork server stopped responding: {exc}") from None
        if not data:
            self.close()
            raise RuntimeError("the sandbox fork server exited unexpectedly")
        return json.loads(data)

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
        tmp = Path(tempfile.mkdtemp(prefix="attnp-"))
        work = tmp / "work"
        try:
            if files is not None:
                _write_files(work, files)
            else:
                copy_submission(submission, work)
            uid = None
            if os.geteuid() == 0:
                uid = SANDBOX_UID_BASE + random.SystemRandom().randrange(100_000_000)
                os.chmod(tmp, 0o711)
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
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
            reply = self._request(req, [theirs.fileno()])
            theirs.close()
            if "pid" not in reply:
                raise RuntimeError(f"sandbox spawn failed: {reply}")
            return Sandbox(self, int(reply["pid"]), ours, tmp, limits, function)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def memory_base(self) -> int:
        """The zygote's own address space, which every forked child inherits."""
        if not self._memory_base and self._proc is not None:
            try:
                with open(f"/proc/{self._proc.pid}/statm") as f:
                    self._memory_base = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError):
                self._memory_base = 512 * 1024 * 1024
        return self._memory_base

    def reap(self, pid: int) -> dict[str, Any]:
        return self._request({"op": "reap", "pid": pid})

    def close(self) -> None:
        if self._ctl is not None:
            try:
                self._ctl.close()
            except OSError:
                pass
            self._ctl = None
        if self._proc is not None:
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()
            self._proc = None

    def __enter__(self) -> Launcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def copy_submission(src: Path, dst: Path) -> None:
    """Copy the submission's Python files (top level and packages), never via symlinks."""
    dst.mkdir(parents=True)
    budget = [MAX_COPY_BYTES, MAX_COPY_FILES]

    def copy_dir(s: Path, d: Path, depth: int) -> None:
        try:
            entries = sorted(os.scandir(s), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.is_symlink() or entry.name.startswith("."):
                continue
            if entry.is_file(follow_symlinks=False) and entry.name.endswith(".py"):
                size = entry.stat(follow_symlinks=False).st_size
                if size > budget[0] or budget[1] <= 0:
                    continue
                budget[0] -= size
                budget[1] -= 1
                shutil.copyfile(entry.path, d / entry.name, follow_symlinks=False)
            elif (
                entry.is_dir(follow_symlinks=False)
                and depth < 3
                and entry.name.isidentifier()
                and (Path(entry.path) / "__init__.py").is_file()
            ):
                (d / entry.name).mkdir()
                copy_dir(Path(entry.path), d / entry.name, depth + 1)

    copy_dir(src, dst, 0)


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
        if self.closed:
            raise SandboxDied("the sandbox is closed")
        try:
            self.sock.settimeout(timeout)
            protocol.send(self.sock, header, blobs)
            return protocol.recv(self.sock, max_bytes=max_bytes)
        except (socket.timeout, TimeoutError):
            self.close()
            raise CallTimeout() from None
        except protocol.PeerClosed:
            self.close()
            raise SandboxDied(self.death_message()) from None
        except (OSError, protocol.ProtocolError) as exc:
            self.close()
            if isinstance(exc, protocol.ProtocolError) and "exceeds" in str(exc):
                raise SandboxDied("your function returned far more data than expected") from None
            raise SandboxDied(self.death_message()) from None

    def death_message(self) -> str:
        info = self.exit_info or {}
        sig = info.get("signal")
        code = info.get("exitcode")
        if sig == signal.SIGKILL:
            return "was killed (it used more memory, CPU or processes than allowed)"
        if sig is not None:
            try:
                words = _SIGNAL_WORDS.get(signal.Signals(sig))
            except ValueError:
                words = None
            return words or f"was killed by signal {sig}"
        if code is not None:
            return f"ended the whole process with exit code {code} (os._exit or similar)"
        return "stopped responding"

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass
        try:
            self.exit_info = self.launcher.reap(self.pid)
        except RuntimeError:
            self.exit_info = {}
        shutil.rmtree(self.tmp, ignore_errors=True)


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
                 files: dict[str, bytes] | None = None, shims: dict[str, str] | None = None):
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

    # -- lifecycle -------------------------------------------------------
    def load(self) -> LoadInfo:
        """Spawn (if needed) and import the learner's module; cached."""
        if self.load_info is not None and self.sandbox is not None and not self.sandbox.closed:
            return self.load_info
        self.sandbox = self.launcher.spawn(
            self.submission, module=self.module, function=self.function, params=self.params,
            limits=self.limits, display_dir=self.display_dir, files=self.files,
        )
        try:
            reply, _ = self.sandbox.request({"op": "load", "shims": self.shims}, [],
                                            timeout=self.limits.load_timeout)
        except CallTimeout:
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
        self._collect_output(reply)
        if reply.get("ok"):
            info = LoadInfo(True, line=int(reply.get("line", 0)), signature=str(reply.get("signature", "")),
                            imported_steps=[str(s) for s in reply.get("imported_steps", [])])
        else:
            info = LoadInfo(False, failure=_load_failure(reply, self.module, self.function, self.params))
        self.load_info = info
        return info

    def close(self) -> None:
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
        blobs: list[bytes] = []
        header = {
            "op": "call",
            "args": protocol.pack_values(list(args), blobs),
            "kwargs": {k: protocol.pack_values([v], blobs)[0] for k, v in kwargs.items()},
            "max_elements": max(64 * (expected_size or 0), 1 << 16),
        }
        t0 = time.perf_counter()
        try:
            reply, out_blobs = self.sandbox.request(header, blobs, timeout=self.limits.call_timeout)
        except CallTimeout:
            self.learner_seconds += self.limits.call_timeout
            self.timeouts += 1
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
            self.learner_seconds += time.perf_counter() - t0
        self._collect_output(reply)
        if not reply.get("ok"):
            failure = _call_failure(reply, self.function, self.params, args, kwargs, expected_size)
            if reply.get("kind") == "not-implemented":
                self._stick("not-implemented", failure)
            raise LearnerError(failure, kind=str(reply.get("kind", "exception")))
        if len(out_blobs) != 1:
            raise LearnerError(Failure(kind="crash", summary="your code sent back a malformed answer"),
                               kind="crash")
        try:
            (raw,) = protocol.unpack_values([reply.get("result")], out_blobs)
            if not isinstance(raw, np.ndarray):
                raise protocol.ProtocolError("not an array")
        except (ValueError, TypeError, protocol.ProtocolError):
            raise LearnerError(Failure(kind="crash", summary="your code sent back a malformed answer"),
                               kind="crash") from None
        self.calls += 1
        seconds = float(reply.get("seconds", 0.0))
        self.call_seconds.append((sum(np.size(a) for a in args if isinstance(a, np.ndarray)), seconds))
        returned = str(reply.get("returned", "ndarray"))
        self._note_return(returned, str(raw.dtype), args, [int(i) for i in reply.get("mutated", [])])
        value = raw.astype(np.float64) if raw.dtype != np.float64 else raw
        return CallResult(value, str(raw.dtype), returned, list(reply.get("mutated", [])), seconds,
                          str(reply.get("output", "")))

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
        in_dtypes = {str(a.dtype) for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"}
        if in_dtypes and dtype not in in_dtypes and "list" not in self.notes:
            self.notes.setdefault("dtype", f"your function returned {dtype} for "
                                  f"{'/'.join(sorted(in_dtypes))} input (not judged, but worth knowing)")
        for i in mutated:
            name = self.params[i] if i < len(self.params) else f"argument {i}"
            self.notes.setdefault(f"mutated-{name}", f"your function changed its input {name} in "
                                  "place; callers may not expect that (not judged)")


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
                  kwargs: dict[str, Any], expected_size: int | None) -> Failure:
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
        what = "ran out of memory (it may use at most 1 GiB)"
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
        shapes = ", ".join(f"{p}{getattr(a, 'shape', '')}" for p, a in zip(params, args))
        return f"# inputs too large to print: {function}({shapes})"
    parts = [format_array(a) for a in args] + [f"{k}={format_array(v)}" for k, v in kwargs.items()]
    return f"{function}({', '.join(parts)})"


def describe_inputs(params: Sequence[str], args: tuple[Any, ...]) -> str:
    lines = []
    for name, a in zip(params, args):
        if isinstance(a, np.ndarray):
            lines.append(f"{name}: shape {a.shape}, dtype {a.dtype}")
            if a.size <= 24:
                lines.append("  " + np.array2string(a, precision=4, suppress_small=False).replace("\n", "\n  "))
        else:
            lines.append(f"{name} = {a!r}")
    return "\n".join(lines)


Call = Callable[..., np.ndarray]


def is_regular_file(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False
