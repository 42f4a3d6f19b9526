"""Inside the sandbox: import the learner's step modules and answer calls, returning plain data.

Runs in a forked child after `jail.enter` has locked it down. `start` gives
the learner a fresh interpreter-level state (streams, argv, cwd, sys.path,
the grader's package unimportable), then `Server` answers `load`, `call`
and `call_many` requests (see `protocol`). Whatever comes back from
learner code is converted to a plain numeric array (`to_plain_array`) or a
refusal; exceptions become messages with only the learner's own frames.

A sandbox serves one step, or every step of one submission (`grade`: one
confined process per submission instead of one per step). Each `load`
names its step's module and function; a load after the first imports every
learner module afresh (`_forget_learner_modules`), so each step sees its own
files as a sandbox of its own would, and each call names the module whose
function it calls.

Standard library, NumPy and `protocol` only.
"""

from __future__ import annotations

import importlib
import inspect
import os
import signal
import socket
import sys
import time
import traceback
from typing import Any

import numpy as np

from attn_practice.grader.sandbox import protocol

OUTPUT_LIMIT_PER_CALL = 4096


class _OutOfTime(BaseException):
    """Raised into learner code when a call has run for its whole time limit."""


def _out_of_time(signum: int, frame: Any) -> None:
    raise _OutOfTime()


class _Blocker:
    """Refuses imports of the grader's own package from learner code."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "attn_practice" or name.startswith("attn_practice."):
            raise ImportError("attn_practice cannot be imported while your code is being graded")
        return None



def start(sock_fd: int, out_fd: int, req: dict[str, Any]) -> None:
    """Reset the interpreter for the learner and serve requests until the grader hangs up."""
    workdir = str(req["workdir"])
    limits = req.get("limits") or {}
    sock = socket.socket(fileno=sock_fd)
    # Fresh interpreter-level state for the learner.
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = sys.__stdout__ = _stream(1)
    sys.stderr = sys.__stderr__ = _stream(2)
    sys.argv = [str(req.get("file", ""))]
    os.environ["HOME"] = workdir
    os.environ["TMPDIR"] = workdir
    os.chdir(workdir)
    sys.path.insert(0, workdir)
    for name in [m for m in sys.modules if m == "attn_practice" or m.startswith("attn_practice.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Blocker())
    sys.setrecursionlimit(int(limits.get("recursion", 3000)))
    Server(sock, out_fd, req, workdir).serve()


def _stream(fd: int) -> Any:
    return open(fd, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115



class Server:
    """Loads one learner module and answers `call` requests."""

    def __init__(self, sock: socket.socket, out_fd: int, req: dict[str, Any], workdir: str):
        self.sock = sock
        self.out_fd = out_fd
        self.out_pos = 0
        self.module_name = str(req["module"])
        self.function_name = str(req["function"])
        self.params = [str(p) for p in req.get("params", [])]
        self.workdir = workdir
        self.display_dir = str(req.get("display_dir", ""))
        # Each call's own wall clock (see `call`); the grader keeps its own deadline too.
        self.call_timeout = _seconds((req.get("limits") or {}).get("call_timeout"))
        # or its CPU time (confirming a timeout): ITIMER_PROF counts the process's CPU seconds
        self.timer = (signal.ITIMER_PROF if (req.get("limits") or {}).get("cpu_clock") is True
                      else signal.ITIMER_REAL)
        #: the loaded steps: module name -> (its function, its call timeout)
        self.loaded: dict[str, tuple[Any, float]] = {}
        #: sys.modules before any learner module was imported (see `_forget_learner_modules`)
        self.base_modules = frozenset(sys.modules)
        self.loads = 0
        signal.signal(signal.SIGALRM, _out_of_time)
        signal.signal(signal.SIGPROF, _out_of_time)

    def serve(self) -> None:
        while True:
            try:
                header, blobs = protocol.recv(self.sock)
            except BaseException:  # noqa: BLE001 - the grader hung up, or learner code broke the socket
                os._exit(0)
            try:
                op = header.get("op")
                if op == "load":
                    reply, out_blobs = self.load(header), []
                elif op == "call":
                    reply, out_blobs = self.call(header, blobs)
                elif op == "call_many":
                    reply, out_blobs = self.call_many(header, blobs)
                else:
                    reply, out_blobs = {"ok": False, "kind": "internal", "message": f"bad op {op!r}"}, []
            except BaseException as exc:  # noqa: BLE001 - learner code broke something of ours
                reply, out_blobs = {"ok": False, "kind": "exception", "phase": "call",
                                    "message": _safe_message(exc), "exc_type": "", "traceback": ""}, []
            try:
                reply["output"] = self._scrub(self.take_output())
                if isinstance(reply.get("message"), str):
                    reply["message"] = self._scrub(reply["message"])
            except BaseException:  # noqa: BLE001
                reply["output"] = ""
            try:
                protocol.send(self.sock, reply, out_blobs)
            except BaseException:  # noqa: BLE001
                os._exit(0)

    # -- output capture ------------------------------------------------
    def take_output(self) -> str:
        for stream in {id(s): s for s in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__)}.values():
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - learner may have replaced the stream
                # Output past the size limit stays stuck in the stream's buffer and
                # would fail every later print: give the learner fresh streams.
                for name, fd in (("stdout", 1), ("stderr", 2)):
                    if getattr(sys, name) is stream or getattr(sys, f"__{name}__") is stream:
                        fresh = _stream(fd)
                        if getattr(sys, name) is stream:
                            setattr(sys, name, fresh)
                        if getattr(sys, f"__{name}__") is stream:
                            setattr(sys, f"__{name}__", fresh)
        try:
            size = os.fstat(self.out_fd).st_size
        except OSError:
            return ""
        if size <= self.out_pos:
            self.out_pos = min(self.out_pos, size)
            return ""
        n = size - self.out_pos
        data = os.pread(self.out_fd, min(n, OUTPUT_LIMIT_PER_CALL), self.out_pos)
        # Start the capture file afresh (fds 1 and 2 share its offset), so the
        # size limit bounds the output of one call, not of the whole step.
        try:
            os.ftruncate(self.out_fd, 0)
            os.lseek(self.out_fd, 0, os.SEEK_SET)
            self.out_pos = 0
        except OSError:
            self.out_pos = size
        text = data.decode("utf-8", "replace")
        if n > OUTPUT_LIMIT_PER_CALL:
            text += f"\n... [{n - OUTPUT_LIMIT_PER_CALL} more bytes of output not shown]"
        return text

    def _scrub(self, text: str) -> str:
        """The learner's paths as they know them: the random work directory never shows."""
        if self.workdir in text:
            text = text.replace(self.workdir + os.sep, self.display_dir + os.sep if self.display_dir else "")
            text = text.replace(self.workdir, self.display_dir or ".")
        return text

    # -- load ------------------------------------------------------------
    def load(self, header: dict[str, Any]) -> dict[str, Any]:
        """Import one step's module (the header's, else the spawn request's) and find its function."""
        if isinstance(header.get("module"), str) and isinstance(header.get("function"), str):
            self.module_name, self.function_name = header["module"], header["function"]
            params = header.get("params")
            self.params = [str(p) for p in params] if isinstance(params, list) else []
            if "call_timeout" in header:
                self.call_timeout = _seconds(header.get("call_timeout"))
        t0 = time.perf_counter()
        if self.loads:
            self._forget_learner_modules()
        self.loads += 1
        shims = header.get("shims") or {}
        if isinstance(shims, dict):
            for name, source in shims.items():
                self._install_shim(str(name), str(source))
        try:
            module = importlib.import_module(self.module_name)
        except SyntaxError as exc:
            return {
                "ok": False,
                "kind": "syntax",
                "message": f"{type(exc).__name__}: {exc.msg}",
                "file": self._display(str(exc.filename or "")),
                "line": int(exc.lineno or 0),
                "offset": int(exc.offset or 0),
                "text": str(exc.text or "").rstrip("\n"),
            }
        except BaseException as exc:  # noqa: BLE001 - learner code may raise anything
            return self._exception_reply(exc, phase="import")
        fn = getattr(module, self.function_name, None)
        if fn is None:
            defined = sorted(
                n for n, v in vars(module).items() if callable(v) and not n.startswith("_")
                and getattr(v, "__module__", None) == self.module_name
            )
            return {"ok": False, "kind": "missing-function", "message": "", "defined": defined}
        if not callable(fn):
            return {"ok": False, "kind": "not-callable", "message": _type_name(fn)}
        line = 0
        try:
            # Not inspect.getsourcelines: it scans every loaded module's file.
            code = getattr(fn, "__code__", None)
            first = getattr(code, "co_firstlineno", 0) if type(code) is type(_sig.__code__) else 0
            line = first if type(first) is int else 0
        except BaseException:  # noqa: BLE001
            pass
        try:
            sig = inspect.signature(fn)
            sig.bind(*self.params)
            signature = f"{self.function_name}{sig}"
        except TypeError:
            return {"ok": False, "kind": "signature", "message": f"{self.function_name}{_sig(fn)}"}
        except ValueError:
            signature = ""
        self.loaded[self.module_name] = (fn, self.call_timeout)
        imported = sorted(
            m for m in list(sys.modules) if m.startswith("step") and m != self.module_name
            and str(getattr(sys.modules[m], "__file__", "") or "").startswith(self.workdir)
        )
        return {
            "ok": True,
            "line": line,
            "signature": signature,
            "imported_steps": imported,
            "import_seconds": time.perf_counter() - t0,
        }

    def _forget_learner_modules(self) -> None:
        """Drop the learner's modules from sys.modules, so the next step imports its own afresh.

        What an earlier step's import left (its module objects, their globals)
        is then out of the next step's reach, as in a sandbox of its own. Only
        modules loaded from the submission's folder go: NumPy's and the standard
        library's stay imported. Whatever an earlier step did to shared state
        (NumPy itself, builtins) is not undone here: the grader grades a step
        that fails in a shared sandbox again in one of its own.
        """
        for name in [m for m in sys.modules if m not in self.base_modules]:
            try:
                origin = getattr(getattr(sys.modules[name], "__spec__", None), "origin", None)
            except BaseException:  # noqa: BLE001 - a learner's module object may misbehave
                origin = None
            if not isinstance(origin, str) or origin.startswith(self.workdir):
                sys.modules.pop(name, None)

    def _install_shim(self, name: str, source: str) -> None:
        """Give `name` reference code instead of the learner's (check --reference-steps)."""
        import types

        mod = types.ModuleType(name)
        mod.__file__ = f"<reference {name}>"
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)  # noqa: S102 - our own source
        sys.modules[name] = mod

    # -- call --------------------------------------------------------------
    def call_many(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """Several calls in one round trip (replayed examples); each reply as for `call`."""
        calls = header.get("calls")
        if not isinstance(calls, list):
            return {"ok": False, "kind": "internal", "message": "bad call_many"}, []
        replies: list[dict[str, Any]] = []
        out: list[bytes] = []
        for sub in calls:
            if not isinstance(sub, dict):
                return {"ok": False, "kind": "internal", "message": "bad call_many"}, []
            try:
                reply, sub_blobs = self.call(sub, blobs, header.get("module"))
            except BaseException as exc:  # noqa: BLE001 - as in serve()
                reply, sub_blobs = {"ok": False, "kind": "exception", "phase": "call",
                                    "message": _safe_message(exc), "exc_type": "", "traceback": ""}, []
            output = self._scrub(self.take_output())
            if output:
                reply["output"] = output
            if isinstance(reply.get("message"), str):
                reply["message"] = self._scrub(reply["message"])
            if isinstance(reply.get("result"), dict) and sub_blobs:
                reply["result"]["i"] = len(out)
            stop = reply.get("kind") == "timeout"  # the calls after it are never run
            # The usual answer in few bytes: the grader reads absent fields as these defaults.
            reply.pop("dtype", None)
            if reply.get("mutated") == []:
                del reply["mutated"]
            if reply.get("returned") == "ndarray":
                del reply["returned"]
            out.extend(sub_blobs)
            replies.append(reply)
            if stop:
                break
        return {"ok": True, "replies": replies}, out

    def call(self, header: dict[str, Any], blobs: list[bytes],
             module: Any = None) -> tuple[dict[str, Any], list[bytes]]:
        """Call the function of step `module` (the step loaded last when None) on the header's arguments."""
        fn, call_timeout = self.loaded.get(module if isinstance(module, str) else self.module_name, (None, 0.0))
        if fn is None:
            return {"ok": False, "kind": "internal", "message": "function not loaded"}, []
        try:
            arg_specs = header.get("args", [])
            args = protocol.unpack_values(arg_specs, blobs)
            kwargs_spec = header.get("kwargs") or {}
            kw_names = [str(k) for k in kwargs_spec]
            kw_values = protocol.unpack_values([kwargs_spec[k] for k in kw_names], blobs) if kw_names else []
        except (protocol.ProtocolError, TypeError, ValueError) as exc:
            return {"ok": False, "kind": "internal", "message": str(exc)}, []
        kwargs = dict(zip(kw_names, kw_values, strict=False))
        max_elements = header.get("max_elements")
        max_elements = max_elements if type(max_elements) is int else 1 << 22
        # Each input as it came (the wire's bytes are C-ordered): no copy of every input per call.
        originals = [(a.dtype, a.shape, blobs[spec["i"]]) if isinstance(a, np.ndarray) else None
                     for a, spec in zip(args, arg_specs, strict=False)]
        t0 = time.perf_counter()
        try:
            try:
                if call_timeout:
                    signal.setitimer(self.timer, call_timeout)
                result, args = protocol.invoke(fn, args, kwargs, header.get("layouts"),  # the one trampoline
                                               before_retry=self.take_output)
            finally:
                if call_timeout:
                    signal.setitimer(self.timer, 0)
        except _OutOfTime:
            # Stopped by its own wall clock: the grader hears at once which call it was,
            # instead of waiting out the deadline of a whole batch of calls.
            return {"ok": False, "kind": "timeout", "phase": "call",
                    "seconds": time.perf_counter() - t0}, []
        except BaseException as exc:  # noqa: BLE001
            return self._exception_reply(exc, phase="call"), []
        elapsed = time.perf_counter() - t0
        mutated = [
            i for i, (a, o) in enumerate(zip(args, originals, strict=False))
            if o is not None and not _same(a, o)
        ]
        info: dict[str, Any] = {"ok": True, "seconds": elapsed, "mutated": mutated}
        try:
            arr, kind = _to_plain_array(result, max_elements)
        except _TooLarge as exc:
            return {"ok": False, "kind": "too-large", "message": "", "shape": exc.shape,
                    "returned": exc.kind}, []
        except BaseException as exc:  # noqa: BLE001 - __array__ may raise anything
            return {"ok": False, "kind": "bad-return", "message": _safe_message(exc),
                    "returned": _type_name(result)}, []
        info["returned"] = kind
        if arr is None:
            return {"ok": False, "kind": "bad-return", "message": "", "returned": kind}, []
        if arr.size > max_elements:
            return {"ok": False, "kind": "too-large", "message": "",
                    "shape": [int(n) for n in arr.shape], "returned": kind}, []
        info["dtype"] = protocol.dtype_name(arr.dtype)
        out_blobs: list[bytes] = []
        info["result"] = protocol.pack_values([arr], out_blobs)[0]
        return info, out_blobs

    def _exception_reply(self, exc: BaseException, phase: str) -> dict[str, Any]:
        kind = "exception"
        if isinstance(exc, SystemExit):
            kind = "exit"
        elif isinstance(exc, KeyboardInterrupt):
            kind = "interrupt"
        elif isinstance(exc, MemoryError):
            kind = "memory"
        elif isinstance(exc, RecursionError):
            kind = "recursion"
        elif isinstance(exc, NotImplementedError):
            kind = "not-implemented"
        return {
            "ok": False,
            "kind": kind,
            "phase": phase,
            "exc_type": _type_name(exc),
            "message": _safe_message(exc),
            "traceback": self._learner_traceback(exc),
        }

    def _learner_traceback(self, exc: BaseException) -> str:
        """Only the learner's own frames, with paths as they know them."""
        try:
            frames = [
                f for f in traceback.extract_tb(exc.__traceback__)
                if f.filename.startswith(self.workdir)
            ]
            lines = []
            for f in frames[-8:]:
                lines.append(f'  File "{self._display(f.filename)}", line {f.lineno}, in {f.name}')
                if f.line:
                    lines.append(f"    {f.line.strip()[:300]}")
            return "\n".join(lines)
        except BaseException:  # noqa: BLE001
            return ""

    def _display(self, filename: str) -> str:
        if filename.startswith(self.workdir):
            rel = os.path.relpath(filename, self.workdir)
            return os.path.join(self.display_dir, rel) if self.display_dir else rel
        return filename


def _seconds(value: Any) -> float:
    """A positive number of seconds from a request, else 0 (no clock of the sandbox's own)."""
    return float(value) if type(value) in (int, float) and value > 0 else 0.0


def _safe_message(exc: BaseException) -> str:
    """`Type: message`, even when the exception's own __str__ misbehaves."""
    name = _type_name(exc)
    try:
        text = str(exc)
        if not isinstance(text, str):
            text = ""
    except BaseException:  # noqa: BLE001 - __str__ is learner code too
        text = ""
    message = f"{name}: {text}" if text else name
    return message[:2000]


def _same(a: Any, before: tuple[np.dtype, tuple[int, ...], bytes]) -> bool:
    """Unchanged by the learner: the dtype, shape and bytes (NaNs included) it came with."""
    try:
        return type(a) is np.ndarray and (a.dtype, a.shape) == before[:2] and a.tobytes() == before[2]
    except BaseException:  # noqa: BLE001
        return False


def _type_name(obj: Any) -> str:
    try:
        t = type(obj)
        name = type.__getattribute__(t, "__name__")
        module = type.__getattribute__(t, "__module__")
        name = name if isinstance(name, str) else "object"
        return name if module == "builtins" or not isinstance(module, str) else f"{module}.{name}"
    except BaseException:  # noqa: BLE001
        return "object"


class _TooLarge(Exception):
    def __init__(self, shape: list[int], kind: str):
        super().__init__("too large")
        self.shape = shape
        self.kind = kind


def _to_plain_array(result: Any, max_elements: int = 1 << 22) -> tuple[np.ndarray | None, str]:
    """Turn whatever came back into a plain numeric ndarray (or None)."""
    if result is None:
        return None, "None"
    if type(result) is np.ndarray:
        kind = "ndarray"
    elif isinstance(result, np.ndarray):
        kind = f"ndarray subclass {_type_name(result)}"
    elif isinstance(result, (list, tuple)):
        kind = type(result).__name__ if type(result) in (list, tuple) else _type_name(result)
    elif isinstance(result, (int, float, np.generic)):
        kind = "scalar"
    else:
        kind = _type_name(result)
    if isinstance(result, (list, tuple)) and len(result) > max_elements:
        raise _TooLarge([len(result)], kind)
    if isinstance(result, np.ndarray):
        # Read the size through the base class: a subclass may lie, and a
        # copy of something huge should not be attempted at all.
        if np.ndarray.size.__get__(result) > max_elements:
            raise _TooLarge([int(n) for n in np.ndarray.shape.__get__(result)], kind)
    arr = np.array(result, copy=True, subok=False)
    if type(arr) is np.ndarray and arr.dtype.kind == "O":
        # An object array of numbers (np.array(rows, dtype=object)) is read like
        # the lists it holds; anything else in it still makes an object array.
        arr = np.array(arr.tolist(), subok=False)
    if type(arr) is not np.ndarray or arr.dtype.kind not in "biuf":
        return None, f"{kind} (dtype {arr.dtype})" if isinstance(arr, np.ndarray) else kind
    return arr, kind


def _sig(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except BaseException:  # noqa: BLE001
        return "(...)"

