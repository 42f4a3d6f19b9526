"""The learner side: a fork server ("zygote") and the sandboxes it forks.

Runs as `python -I -m attn_practice.grader.sandbox zygote FD`. The zygote
imports NumPy once, then for each request forks a child that locks itself
down (new session, resource limits, an unprivileged uid when started as
root, no network where possible, closed stdin, captured stdout/stderr,
the grader's package made unimportable), imports ONE learner module from a
fresh copy of the submission, and answers calls on a socket of its own.

Nothing here trusts the learner: what goes back is plain data (see
`protocol`). The zygote itself never runs learner code, so a sandbox that
dies takes nothing with it.
"""

from __future__ import annotations

import ctypes
import importlib
import inspect
import os
import resource
import signal
import socket
import sys
import time
import traceback
from typing import Any

import numpy as np

from . import protocol

_CLONE_NEWNET = 0x40000000
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_PDEATHSIG = 1
OUTPUT_LIMIT_PER_CALL = 4096
OUTPUT_FILE_LIMIT = 8 * 1024 * 1024


# ---------------------------------------------------------------- zygote
def zygote(control_fd: int) -> None:
    """Serve spawn/reap requests from the grader until it hangs up."""
    ctl = socket.socket(fileno=control_fd)
    libc = _libc()
    if libc is not None:
        # Orphans of a sandbox (a child that called setsid) come back to us,
        # so we can kill and reap them instead of leaking them to init.
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    active: dict[int, dict[str, Any]] = {}
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(ctl, protocol.MAX_HEADER_BYTES, 4)
        except OSError:
            break
        if not msg:
            break
        try:
            req = _json_loads(msg)
        except ValueError:
            for fd in fds:
                os.close(fd)
            continue
        op = req.get("op")
        if op == "spawn" and len(fds) == 1:
            pid = os.fork()
            if pid == 0:
                try:
                    ctl.close()
                    _child(fds[0], req)
                finally:
                    os._exit(70)
            os.close(fds[0])
            active[pid] = req
            ctl.sendall(_json_dumps({"pid": pid}))
        elif op == "reap":
            pid = int(req.get("pid", 0))
            status = _reap(pid, active.pop(pid, {}))
            _sweep_orphans(set(active))
            ctl.sendall(_json_dumps({"pid": pid, **status}))
        elif op == "exit":
            break
        else:
            for fd in fds:
                os.close(fd)
            ctl.sendall(_json_dumps({"error": f"bad request {op!r}"}))
    for pid, req in list(active.items()):
        _reap(pid, req)
    _sweep_orphans(set())
    os._exit(0)


def _json_loads(data: bytes) -> dict[str, Any]:
    import json

    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError("not an object")
    return obj


def _json_dumps(obj: Any) -> bytes:
    import json

    return json.dumps(obj).encode()


def _reap(pid: int, req: dict[str, Any]) -> dict[str, Any]:
    """Kill a sandbox's whole process group (and uid), then collect its status."""
    if pid <= 0:
        return {"exitcode": None, "signal": None}
    status: int | None = None
    try:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
    except ChildProcessError:
        return {"exitcode": None, "signal": None}
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    uid = req.get("uid")
    if uid:
        _kill_uid(int(uid))
    if status is None:
        try:
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return {"exitcode": None, "signal": None}
    if os.WIFSIGNALED(status):
        return {"exitcode": None, "signal": os.WTERMSIG(status)}
    return {"exitcode": os.WEXITSTATUS(status), "signal": None}


def _kill_uid(uid: int) -> None:
    """As root: fork, become `uid`, and SIGKILL everything that uid runs."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(50):
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
                time.sleep(0.002)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _sweep_orphans(keep: set[int]) -> None:
    """Kill and reap every child of ours that is not a live sandbox."""
    me = os.getpid()
    for _ in range(50):
        found = False
        for pid in _children_of(me):
            if pid in keep:
                continue
            found = True
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while True:
            try:
                pid, _st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not found:
            return
        time.sleep(0.005)


def _children_of(ppid: int) -> list[int]:
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parens: split after the last ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == ppid:
            out.append(int(name))
    return out


def _libc() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


# ---------------------------------------------------------------- child
class _Blocker:
    """Refuses imports of the grader's own package from learner code."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "attn_practice" or name.startswith("attn_practice."):
            raise ImportError("attn_practice cannot be imported while your code is being graded")
        return None


def _child(sock_fd: int, req: dict[str, Any]) -> None:
    sock = socket.socket(fileno=sock_fd)
    workdir = str(req["workdir"])
    limits = req.get("limits", {})
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    # A learner flooding stdout gets an OSError, not a silent kill.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    uid = req.get("uid")
    libc = _libc()
    if libc is not None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.geteuid() == 0:
        if libc is not None and req.get("no_network", True):
            libc.unshare(_CLONE_NEWNET)  # best effort: fails quietly without the capability
        if uid:
            for root, dirs, files in os.walk(workdir):
                for name in dirs + files:
                    os.lchown(os.path.join(root, name), uid, uid)
            os.lchown(workdir, uid, uid)
    # Capture the learner's stdout/stderr in an unlinked file of bounded size.
    out_fd = _unlinked_file(os.path.dirname(workdir) or "/tmp")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(devnull)
    _set_limits(limits, uid)
    if os.geteuid() == 0 and uid:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    # Fresh interpreter-level state for the learner.
    sys.stdin = open(os.devnull)  # noqa: SIM115
    sys.stdout = open(1, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115
    sys.argv = [req.get("file", "")]
    os.chdir(workdir)
    sys.path.insert(0, workdir)
    for name in [m for m in sys.modules if m == "attn_practice" or m.startswith("attn_practice.")]:
        del sys.modules[name]
    sys.meta_path.insert(0, _Blocker())
    sys.setrecursionlimit(int(limits.get("recursion", 3000)))
    server = _Server(sock, out_fd, req, workdir)
    server.serve()


def _unlinked_file(directory: str) -> int:
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (OSError, AttributeError):
        import tempfile

        fd, path = tempfile.mkstemp(dir=directory)
        os.unlink(path)
        return fd


def _set_limits(limits: dict[str, Any], uid: int | None) -> None:
    def lim(kind: int, value: int) -> None:
        try:
            soft, hard = resource.getrlimit(kind)
            if hard != resource.RLIM_INFINITY:
                value = min(value, hard)
            resource.setrlimit(kind, (value, value))
        except (ValueError, OSError):
            pass

    lim(resource.RLIMIT_CORE, 0)
    if "memory" in limits:
        lim(resource.RLIMIT_AS, int(limits["memory"]))
    if "cpu" in limits:
        # The soft limit sends SIGXCPU; the hard one a second later kills.
        soft = int(limits["cpu"])
        try:
            resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))
        except (ValueError, OSError):
            pass
    lim(resource.RLIMIT_FSIZE, int(limits.get("file_size", OUTPUT_FILE_LIMIT)))
    lim(resource.RLIMIT_NOFILE, int(limits.get("open_files", 64)))
    nproc = int(limits.get("processes", 32))
    if not uid:
        # Without a uid of its own the limit counts all of this user's processes.
        nproc += _count_user_processes(os.getuid())
    lim(resource.RLIMIT_NPROC, nproc)


def _count_user_processes(uid: int) -> int:
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    n += 1
            except OSError:
                pass
    return n


class _Server:
    """Loads one learner module and answers `call` requests."""

    def __init__(self, sock: socket.socket, out_fd: int, req: dict[str, Any], workdir: str):
        self.sock = sock
        self.out_fd = out_fd
        self.out_pos = 0
        self.module_name = str(req["module"])
        self.function_name = str(req["function"])
        self.params = list(req.get("params", []))
        self.workdir = workdir
        self.display_dir = str(req.get("display_dir", ""))
        self.fn: Any = None
        self.output_total = 0

    def serve(self) -> None:
        while True:
            try:
                header, blobs = protocol.recv(self.sock)
            except protocol.ProtocolError:
                os._exit(0)
            op = header.get("op")
            if op == "load":
                reply, out_blobs = self.load(header), []
            elif op == "call":
                reply, out_blobs = self.call(header, blobs)
            else:
                reply, out_blobs = {"ok": False, "kind": "internal", "message": f"bad op {op!r}"}, []
            reply["output"] = self.take_output()
            try:
                protocol.send(self.sock, reply, out_blobs)
            except (OSError, protocol.ProtocolError):
                os._exit(0)

    # -- output capture ------------------------------------------------
    def take_output(self) -> str:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001 - learner may have replaced the stream
                pass
        try:
            size = os.fstat(self.out_fd).st_size
        except OSError:
            return ""
        if size <= self.out_pos:
            self.out_pos = min(self.out_pos, size)
            return ""
        n = size - self.out_pos
        data = os.pread(self.out_fd, min(n, OUTPUT_LIMIT_PER_CALL), self.out_pos)
        self.out_pos = size
        text = data.decode("utf-8", "replace")
        if n > OUTPUT_LIMIT_PER_CALL:
            text += f"\n... [{n - OUTPUT_LIMIT_PER_CALL} more bytes of output not shown]"
        return text

    # -- load ------------------------------------------------------------
    def load(self, header: dict[str, Any]) -> dict[str, Any]:
        for name, source in (header.get("shims") or {}).items():
            self._install_shim(str(name), str(source))
        t0 = time.perf_counter()
        try:
            module = importlib.import_module(self.module_name)
        except SyntaxError as exc:
            return {
                "ok": False,
                "kind": "syntax",
                "message": f"{type(exc).__name__}: {exc.msg}",
                "file": self._display(exc.filename or ""),
                "line": exc.lineno or 0,
                "offset": exc.offset or 0,
                "text": (exc.text or "").rstrip("\n"),
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
            return {"ok": False, "kind": "not-callable", "message": type(fn).__name__}
        line = 0
        try:
            line = inspect.getsourcelines(fn)[1]
        except (OSError, TypeError):
            pass
        try:
            sig = inspect.signature(fn)
            sig.bind(*self.params)
            signature = f"{self.function_name}{sig}"
        except TypeError:
            return {"ok": False, "kind": "signature", "message": f"{self.function_name}{_sig(fn)}"}
        except ValueError:
            signature = ""
        self.fn = fn
        imported = sorted(
            m for m in sys.modules if m.startswith("step") and m != self.module_name
            and getattr(sys.modules[m], "__file__", "") and
            str(getattr(sys.modules[m], "__file__", "")).startswith(self.workdir)
        )
        return {
            "ok": True,
            "line": line,
            "signature": signature,
            "imported_steps": imported,
            "import_seconds": time.perf_counter() - t0,
        }

    def _install_shim(self, name: str, source: str) -> None:
        """Give `name` reference code instead of the learner's (check --reference-steps)."""
        import types

        mod = types.ModuleType(name)
        mod.__file__ = f"<reference {name}>"
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)  # noqa: S102 - our own source
        sys.modules[name] = mod

    # -- call --------------------------------------------------------------
    def call(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        if self.fn is None:
            return {"ok": False, "kind": "internal", "message": "function not loaded"}, []
        try:
            args = protocol.unpack_values(header.get("args", []), blobs)
        except protocol.ProtocolError as exc:
            return {"ok": False, "kind": "internal", "message": str(exc)}, []
        kwargs_spec = header.get("kwargs") or {}
        kw_names = list(kwargs_spec)
        kw_values = protocol.unpack_values([kwargs_spec[k] for k in kw_names], blobs) if kw_names else []
        kwargs = dict(zip(kw_names, kw_values))
        originals = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
        t0 = time.perf_counter()
        try:
            result = self.fn(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001
            return self._exception_reply(exc, phase="call"), []
        elapsed = time.perf_counter() - t0
        mutated = [
            i for i, (a, o) in enumerate(zip(args, originals))
            if o is not None and isinstance(a, np.ndarray) and not _same(a, o)
        ]
        info: dict[str, Any] = {"ok": True, "seconds": elapsed, "mutated": mutated}
        try:
            arr, kind = _to_plain_array(result)
        except BaseException as exc:  # noqa: BLE001 - __array__ may raise anything
            return {"ok": False, "kind": "bad-return", "message": f"{type(exc).__name__}: {exc}",
                    "returned": _type_name(result)}, []
        info["returned"] = kind
        if arr is None:
            return {"ok": False, "kind": "bad-return", "message": "", "returned": kind}, []
        max_elements = int(header.get("max_elements", 1 << 22))
        if arr.size > max_elements:
            return {"ok": False, "kind": "too-large", "message": "",
                    "shape": list(arr.shape), "returned": kind}, []
        info["dtype"] = str(arr.dtype)
        blobs: list[bytes] = []
        info["result"] = protocol.pack_values([arr], blobs)[0]
        return info, blobs

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
        try:
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        except BaseException:  # noqa: BLE001 - __str__ is learner code too
            message = type(exc).__name__
        return {
            "ok": False,
            "kind": kind,
            "phase": phase,
            "exc_type": type(exc).__name__,
            "message": message[:2000],
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
                    lines.append(f"    {f.line.strip()}")
            return "\n".join(lines)
        except BaseException:  # noqa: BLE001
            return ""

    def _display(self, filename: str) -> str:
        if filename.startswith(self.workdir):
            rel = os.path.relpath(filename, self.workdir)
            return os.path.join(self.display_dir, rel) if self.display_dir else rel
        return filename


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    try:
        return a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    except Exception:  # noqa: BLE001
        return False


def _type_name(obj: Any) -> str:
    try:
        t = type(obj)
        return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__name__}"
    except BaseException:  # noqa: BLE001
        return "object"


def _to_plain_array(result: Any) -> tuple[np.ndarray | None, str]:
    """Turn whatever came back into a plain numeric ndarray (or None)."""
    if result is None:
        return None, "None"
    if type(result) is np.ndarray:
        kind = "ndarray"
    elif isinstance(result, np.ndarray):
        kind = f"ndarray subclass {_type_name(result)}"
    elif isinstance(result, (list, tuple)):
        kind = type(result).__name__
    elif isinstance(result, (int, float, np.generic)):
        kind = "scalar"
    else:
        kind = _type_name(result)
    arr = np.array(result, copy=True, subok=False)
    if type(arr) is not np.ndarray or arr.dtype.kind not in "biuf":
        return None, f"{kind} (dtype {arr.dtype})" if isinstance(arr, np.ndarray) else kind
    return arr, kind


def _sig(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except (TypeError, ValueError):
        return "(...)"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "zygote":
        zygote(int(argv[1]))
    else:
        sys.stderr.write("usage: python -I -m attn_practice.grader.sandbox zygote FD\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
