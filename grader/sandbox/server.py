"""The learner side: a fork server ("zygote") and the sandboxes it forks.

Runs as `python -s -P -m attn_practice.grader.sandbox.server zygote FD ROOT` with an
environment the launcher builds from scratch. The zygote imports NumPy once,
then for each request forks a child that locks itself down and imports ONE
learner module from a fresh copy of the submission, answering calls on a
socket of its own:

* new session, closed stdin, stdout/stderr captured in an unlinked file of
  bounded size, every inherited descriptor closed;
* resource limits: address space, CPU seconds, file size, open files,
  processes, no core dumps; first in line for the OOM killer;
* no new privileges (setuid programs do not elevate), not dumpable;
* a seccomp filter: signals only to itself, no ptrace or access to other
  processes' memory or descriptors;
* Landlock where the kernel has it: nothing writable but /dev/null, nothing
  readable under the grader's package or temporary root except its own
  work directory, no TCP, no signals or abstract sockets beyond its own
  processes;
* as root, a random unprivileged uid, and (once, in the zygote) a private
  mount, network and IPC namespace in which the grader's package is hidden
  and a Python installed under a private home (/root/.pyenv) stays readable;
* the grader's package made unimportable.

Nothing here trusts the learner: what goes back is plain data (see
`protocol`). The zygote itself never runs learner code, so a sandbox that
dies takes nothing with it; when a sandbox is reaped the zygote kills its
whole process tree (every descendant is re-parented to the zygote, a child
subreaper) and, as root, everything its uid still runs.
"""

from __future__ import annotations

import ctypes
import importlib
import inspect
import os
import resource
import signal
import socket
import stat
import struct
import sys
import time
import traceback
from typing import Any

import numpy as np

from attn_practice.grader.sandbox import protocol

_CLONE_NEWNS = 0x00020000
_CLONE_NEWIPC = 0x08000000
_CLONE_NEWNET = 0x40000000
_MS_RDONLY = 1
_MS_NOSUID = 2
_MS_NODEV = 4
_MS_NOEXEC = 8
_MS_BIND = 4096
_MS_REC = 16384
_MS_PRIVATE = 1 << 18
_MNT_DETACH = 2
_PR_SET_PDEATHSIG = 1
_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
OUTPUT_LIMIT_PER_CALL = 4096
OUTPUT_FILE_LIMIT = 8 * 1024 * 1024
#: The only device files learner code may open (read; /dev/null also write).
_SAFE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
#: At most this many read rules (open directories) in the Landlock jail.
MAX_LANDLOCK_RULES = 2000
#: How long the zygote waits for a killed process tree to disappear.
REAP_SECONDS = 5.0


# ---------------------------------------------------------------- zygote
class _Zygote:
    """Serves spawn/reap requests from the grader until it hangs up."""

    def __init__(self, ctl: socket.socket, root: str):
        self.ctl = ctl
        self.root = root
        self.libc = _libc()
        self.me = os.getpid()
        self.active: dict[int, dict[str, Any]] = {}  # live sandboxes: pid -> request
        self.exited: dict[int, int] = {}  # sandboxes reaped early: pid -> wait status
        self.children_file = os.path.exists(f"/proc/self/task/{self.me}/children")
        self.jail = _Jail(self.libc, root)

    def serve(self) -> None:
        while True:
            try:
                msg, fds, _flags, _addr = socket.recv_fds(self.ctl, protocol.MAX_HEADER_BYTES, 4)
            except OSError:
                break
            if not msg:
                break
            try:
                req = _json_loads(msg)
            except ValueError:
                req = {}
            op = req.get("op")
            if op == "spawn" and len(fds) == 1:
                reply = self.spawn(fds[0], req)
            elif op == "reap":
                pid, grace = req.get("pid"), req.get("grace", 0)
                grace = min(float(grace), 1.0) if type(grace) in (int, float) else 0.0
                reply = self.reap(pid, grace) if type(pid) is int else {"error": "bad pid"}
            elif op == "reap_many":
                pids = req.get("pids")
                if isinstance(pids, list) and all(type(p) is int for p in pids):
                    reply = {"results": self.reap_many(pids)}
                else:
                    reply = {"error": "bad pids"}
            elif op == "info":
                reply = self.jail.describe()
            elif op == "exit":
                break
            else:
                for fd in fds:
                    os.close(fd)
                reply = {"error": f"bad request {op!r}"}
            try:
                self.ctl.sendall(_json_dumps(reply))
            except OSError:
                break
        for pid in list(self.active):
            self.reap(pid)
        os._exit(0)

    def spawn(self, fd: int, req: dict[str, Any]) -> dict[str, Any]:
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(fd)
            return {"error": f"fork failed: {exc}"}
        if pid == 0:
            try:
                self.ctl.close()
                _child(fd, req, self.jail)
            finally:
                os._exit(70)
        os.close(fd)
        self.active[pid] = req
        return {"pid": pid}

    # -- killing ---------------------------------------------------------
    def reap(self, pid: int, grace: float = 0.0, tree: int | None = None) -> dict[str, Any]:
        """Kill a sandbox's whole process tree (and uid), then collect its status.

        `grace`: seconds to let a sandbox that is already on its way out
        (its socket closed) finish exiting, so its own exit status is reported.
        `tree`: the tree was already killed (by `reap_many`), and had that many processes.
        """
        req = self.active.pop(pid, None)
        if req is None:
            return {"exitcode": None, "signal": None}
        deadline = time.monotonic() + REAP_SECONDS
        status = self.exited.pop(pid, None)
        killed = False
        extra = 0
        if tree is not None:
            killed = True
            extra += tree - 1
            status = self._wait(pid, deadline)
        elif status is None:
            if grace > 0:
                status = self._wait(pid, time.monotonic() + grace)
                done = pid if status is not None else 0
            else:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done, status = pid, None
            if not done:
                killed = True  # still running: whatever status comes back is our doing
                status = None
                extra += self._kill_tree(pid) - 1
                status = self._wait(pid, deadline)
        extra += self._clean_orphans(deadline)
        uid = req.get("uid")
        if extra > 0 and type(uid) is int and uid > 0 and os.geteuid() == 0:
            # Defence in depth: everything that uid still runs, wherever it is.
            self._kill_uid(uid)
            self._clean_orphans(deadline)
        if status is None:
            return {"exitcode": None, "signal": None, "killed": killed}
        if os.WIFSIGNALED(status):
            return {"exitcode": None, "signal": os.WTERMSIG(status), "killed": killed}
        return {"exitcode": os.WEXITSTATUS(status), "signal": None, "killed": killed}

    def reap_many(self, pids: list[int]) -> list[dict[str, Any]]:
        """`reap` for several sandboxes, all killed first so that they die together."""
        killed: dict[int, int] = {}  # pid -> processes its tree had
        for pid in pids:
            if pid in self.active and pid not in self.exited:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    continue
                if done:
                    self.exited[pid] = status  # it ended on its own: report its status
                else:
                    killed[pid] = self._kill_tree(pid)
        return [self.reap(pid, tree=killed.get(pid)) for pid in pids]

    def _kill_tree(self, pid: int) -> int:
        """SIGKILL `pid` and every descendant, parents before children.

        A process that has been sent SIGKILL can no longer fork, so reading
        its children *after* killing it gives the final list: one pass
        reaches every descendant, even of a fork storm.
        """
        stack, seen = [pid], set()
        while stack:
            p = stack.pop()
            if p in seen or p == self.me:
                continue
            seen.add(p)
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
            stack.extend(self._children(p))
        return len(seen)

    def _children(self, pid: int) -> list[int]:
        if not self.children_file:
            return _children_by_scan(pid)
        out: list[int] = []
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            return out
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    out.extend(int(x) for x in f.read().split())
            except (OSError, ValueError):
                pass
        return out

    def _clean_orphans(self, deadline: float) -> int:
        """Kill and reap every child of ours that is not a live sandbox; how many there were."""
        found = 0
        delay = 0.0002
        while True:
            self._reap_zombies()
            extras = [c for c in self._children(self.me) if c not in self.active]
            if not extras:
                return found
            for c in extras:
                found += self._kill_tree(c)
            if time.monotonic() > deadline:
                return found
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def _reap_zombies(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            if pid == 0:
                return
            if pid in self.active:
                self.exited[pid] = status

    def _wait(self, pid: int, deadline: float) -> int | None:
        delay = 0.0001
        while True:
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                return self.exited.pop(pid, None)
            except InterruptedError:
                continue
            if done:
                return status
            if time.monotonic() > deadline:
                return None
            time.sleep(delay)
            delay = min(delay * 2, 0.01)

    def _kill_uid(self, uid: int) -> None:
        """As root: fork, become `uid`, and SIGKILL everything that uid runs."""
        try:
            pid = os.fork()
        except OSError:
            return
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                # kill(-1) signals every process of this uid at once, and none
                # of them can fork once signalled.
                for _ in range(3):
                    try:
                        os.kill(-1, signal.SIGKILL)
                    except ProcessLookupError:
                        break
            finally:
                os._exit(0)
        self._wait(pid, time.monotonic() + REAP_SECONDS)


def zygote(control_fd: int, root: str) -> None:
    ctl = socket.socket(fileno=control_fd)
    sys.dont_write_bytecode = True
    libc = _libc()
    if libc is not None:
        # Orphans of a sandbox (a child that called setsid) come back to us,
        # so we can kill and reap them instead of leaking them to init.
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        # Same-uid sandboxes (grader not root) cannot read or trace us.
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    # No PR_SET_PDEATHSIG here: it fires when the grader *thread* that started
    # us ends, not the grader. When the grader goes, the kernel closes its end
    # of the control socket, and the loop below reaps everything and exits.
    try:  # room for the jail's directory handles
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 4 * MAX_LANDLOCK_RULES if hard == resource.RLIM_INFINITY else min(hard, 4 * MAX_LANDLOCK_RULES)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ValueError, OSError):
        pass
    zyg = _Zygote(ctl, root)
    # Everything imported so far lives for good: keep the collector away from
    # it so forked children do not copy those pages just to scan them.
    import gc

    gc.collect()
    gc.freeze()
    zyg.serve()


def _json_loads(data: bytes) -> dict[str, Any]:
    import json

    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError("not an object")
    return obj


def _json_dumps(obj: Any) -> bytes:
    import json

    return json.dumps(obj).encode()


def _children_by_scan(ppid: int) -> list[int]:
    """Children of `ppid` by reading every /proc/N/stat (when /proc/.../children is missing)."""
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
                data = f.read()
        except OSError:
            continue
        # The command name may contain spaces and parens: split after the last ')'.
        fields = data[data.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[1] == str(ppid).encode():
            out.append(int(name))
    return out


def _libc() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    return libc


# ---------------------------------------------------------------- the jail
def _seccomp_works(libc: Any) -> bool:
    """Try the filter once in a throwaway child: a kernel without seccomp must not break sandboxes."""
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        ok = False
        try:
            libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if _install_seccomp(libc, os.getpid()):
                os.kill(os.getpid(), 0)  # allowed: itself
                try:
                    os.kill(os.getppid(), 0)  # refused: anyone else
                except PermissionError:
                    ok = True
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _package_root() -> str:
    """The directory of the installed `attn_practice` package."""
    from attn_practice.grader.paths import PACKAGE_ROOT

    return str(PACKAGE_ROOT)


#: System directories learner code may read (shared libraries, ld.so's cache, locale
#: and time-zone data); everything else outside the Python installation is unreadable.
_SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc")


def _needed_paths() -> list[str]:
    """What learner code must still be able to read: the Python installation and its path."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(sys.executable)}
    paths.update(p for p in sys.path if p and os.path.isabs(p))
    out = []
    for p in paths:
        try:
            real = os.path.realpath(p)
        except OSError:
            continue
        if os.path.exists(real):
            out.append(real)
    return sorted(set(out))


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _outermost(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any(_under(p, q) for q in out):
            out.append(p)
    return out


class _Jail:
    """What every sandbox child applies to itself; prepared once in the zygote."""

    def __init__(self, libc: Any, root: str):
        self.libc = libc
        self.root = os.path.realpath(root) if root else ""
        self.package = _package_root()
        needed = _needed_paths()
        hidden = [self.package, self.root, "/dev"]
        try:
            import pwd

            home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
            if home not in ("/", ""):
                hidden.append(home)  # keys, tokens, runner credentials of whoever grades
        except (KeyError, OSError, ImportError):
            pass
        tmp = os.path.dirname(self.root) if self.root else ""
        if tmp not in ("", "/"):
            hidden.append(tmp)  # the system temp dir: nothing a learner needs, other people's files
        self.hidden = _outermost([p for p in hidden if p and p != "/"])
        self.mounted = False
        self.netns = False
        if libc is not None and os.geteuid() == 0:
            try:
                self.mounted = self._private_namespaces(needed)
            except OSError:
                self.mounted = False
        devices = [d for d in _SAFE_DEVICES if os.path.exists(d)]
        system = [d for d in _SYSTEM_DIRS if os.path.isdir(d)]
        self.landlock = _Landlock.prepare(libc, self.hidden, needed + system + devices)
        self.seccomp = libc is not None and _seccomp_arch() is not None and _seccomp_works(libc)

    # -- as root, once ------------------------------------------------------
    def _private_namespaces(self, needed: list[str]) -> bool:
        libc = self.libc
        if libc.unshare(_CLONE_NEWNS | _CLONE_NEWNET | _CLONE_NEWIPC) != 0:
            self.netns = libc.unshare(_CLONE_NEWNET | _CLONE_NEWIPC) == 0 or libc.unshare(_CLONE_NEWNET) == 0
            return False
        self.netns = True
        # Nothing we mount may propagate back to the grader's namespace.
        if libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None) != 0:
            return False
        self._expose(needed + ([self.root] if self.root else []))
        # Hide the grader's package (reference, suites) behind an empty,
        # read-only tmpfs, unless the Python installation lives inside it.
        if any(_under(n, self.package) for n in needed) or _under(self.root, self.package):
            return False  # a virtualenv inside the repository: Landlock alone hides the rest
        return libc.mount(b"tmpfs", self.package.encode(), b"tmpfs",
                          _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, b"size=4k,mode=0555") == 0

    def _expose(self, needed: list[str]) -> None:
        """Make `needed` reachable for other uids when a parent directory is private.

        A Python under /root (mode 0700) is unreadable to the sandbox uid: in
        our private mount namespace, put a tmpfs over the private directory
        and bind the needed subtrees back at their own paths.
        """
        blocked: dict[str, list[str]] = {}
        for path in _outermost(needed):
            parts = path.strip("/").split("/")
            for i in range(1, len(parts)):
                anc = "/" + "/".join(parts[:i])
                try:
                    mode = os.stat(anc).st_mode
                except OSError:
                    break
                if not mode & stat.S_IXOTH:
                    blocked.setdefault(anc, []).append(path)
                    break
        for anc in sorted(blocked, key=len):
            keep = []
            for p in blocked[anc]:
                try:
                    keep.append((p, os.open(p, os.O_PATH)))
                except OSError:
                    pass
            try:
                st = os.stat(anc)
                if self.libc.mount(b"tmpfs", anc.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV,
                                   b"size=64k,mode=0711") != 0:
                    continue
                try:
                    os.chown(anc, st.st_uid, st.st_gid)
                    for p, fd in keep:
                        if stat.S_ISDIR(os.fstat(fd).st_mode):
                            os.makedirs(p, mode=0o711, exist_ok=True)
                        else:
                            os.makedirs(os.path.dirname(p), mode=0o711, exist_ok=True)
                            open(p, "ab").close()
                        if self.libc.mount(f"/proc/self/fd/{fd}".encode(), p.encode(), None,
                                           _MS_BIND | _MS_REC, None) != 0:
                            raise OSError(ctypes.get_errno(), f"cannot bind {p}")
                except OSError:
                    # Half a view is worse than none: put the original back.
                    self.libc.umount2(anc.encode(), _MNT_DETACH)
            finally:
                for _p, fd in keep:
                    os.close(fd)
        if blocked:
            os.chdir("/")

    def describe(self) -> dict[str, Any]:
        """What confinement the sandboxes get here (for diagnostics and tests)."""
        root = os.geteuid() == 0
        return {
            "uid_drop": root,
            "mount_namespace": self.mounted,
            "network_namespace": self.netns,
            "package_hidden": self.mounted or self.landlock is not None,
            "landlock_abi": self.landlock.abi if self.landlock is not None else 0,
            "landlock_rules": len(self.landlock.fds) if self.landlock is not None else 0,
            "seccomp": self.seccomp,
            "hidden": list(self.hidden),
        }

    # -- in each child ----------------------------------------------------------
    def lock(self, workdir: str) -> None:
        if self.landlock is not None:
            self.landlock.restrict(workdir)

    def close_fds(self) -> None:
        if self.landlock is not None:
            self.landlock.close()


class _Landlock:
    """Kernel-enforced file, network and signal confinement (Linux 5.13+), via raw syscalls."""

    CREATE, ADD_RULE, RESTRICT = 444, 445, 446  # the same on every architecture
    EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1, 2, 4, 8
    TRUNCATE, IOCTL_DEV = 1 << 14, 1 << 15

    def __init__(self, libc: Any, abi: int, fds: list[tuple[int, bool]], devnull: int):
        self.libc = libc
        self.abi = abi
        self.fds = fds
        self.devnull = devnull
        if abi >= 5:
            self.fs = (1 << 16) - 1
        elif abi >= 3:
            self.fs = (1 << 15) - 1
        elif abi == 2:
            self.fs = (1 << 14) - 1
        else:
            self.fs = (1 << 13) - 1
        self.net = 3 if abi >= 4 else 0  # BIND_TCP | CONNECT_TCP, no port allowed
        self.scoped = 3 if abi >= 6 else 0  # abstract unix sockets, signals
        self.attr_size = 24 if abi >= 6 else 16 if abi >= 4 else 8

    @classmethod
    def prepare(cls, libc: Any, hidden: list[str], needed: list[str]) -> _Landlock | None:
        if libc is None:
            return None
        try:
            abi = int(libc.syscall(ctypes.c_long(cls.CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
        except (AttributeError, OSError):
            return None
        if abi < 1:
            return None
        fds: list[tuple[int, bool]] = []
        for path in _readable_everything_but(hidden, needed):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            fds.append((fd, stat.S_ISDIR(os.fstat(fd).st_mode)))
        try:
            devnull = os.open(os.devnull, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            devnull = -1
        return cls(libc, abi, fds, devnull)

    def _syscall(self, nr: int, *args: Any) -> int:
        r = int(self.libc.syscall(ctypes.c_long(nr), *args))
        if r < 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return r

    def _add(self, ruleset: int, fd: int, access: int) -> None:
        attr = ctypes.create_string_buffer(struct.pack("=Qi", access, fd), 12)
        self._syscall(self.ADD_RULE, ctypes.c_long(ruleset), ctypes.c_long(1), attr, ctypes.c_uint32(0))

    def restrict(self, workdir: str) -> None:
        """Confine the calling process (and everything it starts) for good."""
        attr = struct.pack("=QQQ", self.fs, self.net, self.scoped)[: self.attr_size]
        buf = ctypes.create_string_buffer(attr, len(attr))
        ruleset = self._syscall(self.CREATE, buf, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0))
        try:
            read_dir = self.EXECUTE | self.READ_FILE | self.READ_DIR
            read_file = self.EXECUTE | self.READ_FILE
            for fd, is_dir in self.fds:
                try:
                    self._add(ruleset, fd, read_dir if is_dir else read_file)
                except OSError:
                    pass
            wd = os.open(workdir, os.O_PATH | os.O_CLOEXEC)
            try:
                self._add(ruleset, wd, read_dir)
            finally:
                os.close(wd)
            if self.devnull >= 0:
                rw = self.READ_FILE | self.WRITE_FILE
                if self.abi >= 3:
                    rw |= self.TRUNCATE
                if self.abi >= 5:
                    rw |= self.IOCTL_DEV
                self._add(ruleset, self.devnull, rw)
            self._syscall(self.RESTRICT, ctypes.c_long(ruleset), ctypes.c_uint32(0))
        finally:
            os.close(ruleset)

    def close(self) -> None:
        for fd, _ in self.fds:
            try:
                os.close(fd)
            except OSError:
                pass
        if self.devnull >= 0:
            try:
                os.close(self.devnull)
            except OSError:
                pass


def _readable_everything_but(hidden: list[str], needed: list[str]) -> list[str]:
    """Paths whose subtrees, allowed together, cover `needed` minus `hidden`.

    Going down from "/" (itself not readable), a hidden path switches reading off and a needed one
    switches it back on, however they nest: a virtualenv (needed) inside the
    grader's home (hidden) is readable, and the grader's package (hidden)
    installed inside that virtualenv is not. Only the directories on the way
    to a hidden or needed path are listed.
    """
    hidden_set = {os.path.realpath(h) for h in hidden if h}
    needed_set = {os.path.realpath(n) for n in needed if n}
    marks = hidden_set | needed_set
    out: list[str] = []

    def visit(path: str, allowed: bool) -> None:
        inside = [m for m in marks if m != path and _under(m, path)]
        if allowed and not any(h in inside for h in hidden_set):
            out.append(path)
            return
        if not allowed and not any(n in inside for n in needed_set):
            return
        if not os.path.isdir(path) or os.path.islink(path):
            if allowed:
                out.append(path)
            return
        try:
            names = sorted(os.listdir(path))
        except OSError:
            # Unlistable (e.g. a 0711 home holding the Python installation): allow
            # the needed paths inside it directly, and nothing else.
            out.extend(_outermost([n for n in needed_set if _under(n, path) and n != path]))
            return
        if len(names) + len(out) > MAX_LANDLOCK_RULES:
            # Too crowded to enumerate: keep what must be readable readable.
            out.extend([path] if allowed else _outermost([n for n in needed_set if _under(n, path)]))
            return
        for name in names:
            child = os.path.join(path, name)
            visit(child, child in needed_set or (allowed and child not in hidden_set))

    if "/" in hidden_set:
        return _outermost(list(needed_set))
    # Nothing is readable unless needed: another checkout of this project (or a
    # classmate's submission) elsewhere on the disk must stay out of reach too.
    visit("/", False)
    return out


# ---------------------------------------------------------------- seccomp
#: Per architecture: (AUDIT_ARCH, syscalls denied outright, syscalls allowed only
#: at the sandbox itself (first argument = its pid, 0, or -its pid)).
_SECCOMP_ARCHES: dict[str, tuple[int, tuple[int, ...], tuple[int, ...]]] = {
    # denied: tkill, ptrace, process_vm_readv/writev, pidfd_send_signal, pidfd_open,
    # pidfd_getfd, process_madvise, socket, socketpair, io_uring_setup/enter/register
    # self only: kill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo
    "x86_64": (0xC000003E, (200, 101, 310, 311, 424, 434, 438, 440, 41, 53, 425, 426, 427),
               (62, 234, 129, 297)),
    "aarch64": (0xC00000B7, (130, 117, 270, 271, 424, 434, 438, 440, 198, 199, 425, 426, 427),
                (129, 131, 138, 240)),
}
_BPF_LD_W_ABS, _BPF_JEQ_K, _BPF_JGE_K, _BPF_RET_K = 0x20, 0x15, 0x35, 0x06
_SECCOMP_RET_ALLOW = 0x7FFF0000
_SECCOMP_RET_EPERM = 0x00050000 | 1
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2


def _seccomp_arch() -> str | None:
    import platform

    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return machine if machine in _SECCOMP_ARCHES else None


def _seccomp_program(pid: int, arch: str) -> bytes:
    """A BPF filter: learner code may signal only itself, trace no one, open no socket.

    Without it, a sandbox running as the grader's own user (not root) on a
    kernel whose Landlock cannot scope signals (before 6.12) could kill the
    grader or the fork server, and one in the docker group could talk to
    the Docker daemon. (The sandbox's own socket was made before the filter.)
    Foreign-ABI syscalls (i386, x32) are refused so the numbers cannot be
    dodged.
    """
    audit_arch, deny, self_only = _SECCOMP_ARCHES[arch]
    ins: list[tuple[int, int, int, int]] = []

    def op(code: int, k: int, jt: int = 0, jf: int = 0) -> None:
        ins.append((code, jt, jf, k & 0xFFFFFFFF))

    op(_BPF_LD_W_ABS, 4)  # seccomp_data.arch
    op(_BPF_JEQ_K, audit_arch, 1, 0)
    op(_BPF_RET_K, _SECCOMP_RET_EPERM)
    op(_BPF_LD_W_ABS, 0)  # seccomp_data.nr
    if arch == "x86_64":
        op(_BPF_JGE_K, 0x40000000, 0, 1)  # the x32 ABI
        op(_BPF_RET_K, _SECCOMP_RET_EPERM)
    for nr in deny:
        op(_BPF_JEQ_K, nr, 0, 1)
        op(_BPF_RET_K, _SECCOMP_RET_EPERM)
    for nr in self_only:
        op(_BPF_JEQ_K, nr, 1, 0)
    # Jump targets are relative: for the k-th self-only test, `1` skips to
    # the instruction after the last test (the plain ALLOW below) only if it
    # is the last test; fix the offsets now that the count is known.
    first = len(ins) - len(self_only)
    for i in range(len(self_only)):
        code, _jt, jf, k = ins[first + i]
        ins[first + i] = (code, len(self_only) - i, jf, k)
    op(_BPF_RET_K, _SECCOMP_RET_ALLOW)
    op(_BPF_LD_W_ABS, 16)  # low half of args[0]: the target pid
    for target in (pid, 0, -pid):
        op(_BPF_JEQ_K, target, 0, 1)
        op(_BPF_RET_K, _SECCOMP_RET_ALLOW)
    op(_BPF_RET_K, _SECCOMP_RET_EPERM)
    return b"".join(struct.pack("=HBBI", *i) for i in ins)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _install_seccomp(libc: Any, pid: int) -> bool:
    arch = _seccomp_arch()
    if arch is None:
        return False
    program = _seccomp_program(pid, arch)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0


# ---------------------------------------------------------------- child
class _Blocker:
    """Refuses imports of the grader's own package from learner code."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "attn_practice" or name.startswith("attn_practice."):
            raise ImportError("attn_practice cannot be imported while your code is being graded")
        return None


def _child(sock_fd: int, req: dict[str, Any], jail: _Jail) -> None:
    workdir = str(req["workdir"])
    limits = req.get("limits") or {}
    uid = req.get("uid")
    uid = uid if type(uid) is int and uid > 0 else None
    os.setsid()
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)
    # A learner flooding stdout gets an OSError, not a silent kill.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    libc = jail.libc
    zygote_pid = os.getppid()
    try:  # the first process the OOM killer picks, never the grader
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    as_root = os.geteuid() == 0
    if as_root and uid:
        for root, dirs, files in os.walk(workdir):
            for name in dirs + files:
                os.lchown(os.path.join(root, name), uid, uid)
        os.lchown(workdir, uid, uid)
        os.chmod(workdir, 0o700)
    # Capture the learner's stdout/stderr in an unlinked file of bounded size.
    out_fd = _unlinked_file(os.path.dirname(workdir) or "/tmp")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(devnull)
    if libc is not None:
        libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    # Counted before the lock: afterwards /proc is out of reach.
    own_processes = 0 if uid else _count_user_processes(os.getuid())
    try:
        jail.lock(workdir)
    except OSError:
        pass  # best effort: the uid, limits and namespaces still hold
    jail.close_fds()
    _close_all_but({0, 1, 2, sock_fd, out_fd})
    _set_limits(limits, uid, own_processes)
    if as_root and uid:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    if libc is not None:
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
        # Die with the zygote. (Set only now: changing uid clears it.)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != zygote_pid:
        os._exit(0)
    if libc is not None and jail.seccomp:
        _install_seccomp(libc, os.getpid())
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
    server = _Server(sock, out_fd, req, workdir)
    server.serve()


def _stream(fd: int) -> Any:
    return open(fd, "w", buffering=1, closefd=False, errors="replace")  # noqa: SIM115


def _close_all_but(keep: set[int]) -> None:
    lo = 0
    for fd in sorted(keep) + [1 << 20]:
        if fd > lo:
            os.closerange(lo, fd)
        lo = fd + 1


def _unlinked_file(directory: str) -> int:
    try:
        return os.open(directory, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (OSError, AttributeError):
        import tempfile

        fd, path = tempfile.mkstemp(dir=directory)
        os.unlink(path)
        return fd


def _set_limits(limits: dict[str, Any], uid: int | None, own_processes: int = 0) -> None:
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
    if hasattr(resource, "RLIMIT_MSGQUEUE"):
        lim(resource.RLIMIT_MSGQUEUE, 0)
    nproc = int(limits.get("processes", 32))
    if not uid:
        # Without a uid of its own the limit counts all of this user's processes.
        nproc += own_processes
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
        self.params = [str(p) for p in req.get("params", [])]
        self.workdir = workdir
        self.display_dir = str(req.get("display_dir", ""))
        self.fn: Any = None

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
        shims = header.get("shims") or {}
        if isinstance(shims, dict):
            for name, source in shims.items():
                self._install_shim(str(name), str(source))
        t0 = time.perf_counter()
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
        self.fn = fn
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
                reply, sub_blobs = self.call(sub, blobs)
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
            # The usual answer in few bytes: the grader reads absent fields as these defaults.
            reply.pop("dtype", None)
            if reply.get("mutated") == []:
                del reply["mutated"]
            if reply.get("returned") == "ndarray":
                del reply["returned"]
            out.extend(sub_blobs)
            replies.append(reply)
        return {"ok": True, "replies": replies}, out

    def call(self, header: dict[str, Any], blobs: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        if self.fn is None:
            return {"ok": False, "kind": "internal", "message": "function not loaded"}, []
        try:
            args = protocol.unpack_values(header.get("args", []), blobs)
            kwargs_spec = header.get("kwargs") or {}
            kw_names = [str(k) for k in kwargs_spec]
            kw_values = protocol.unpack_values([kwargs_spec[k] for k in kw_names], blobs) if kw_names else []
        except (protocol.ProtocolError, TypeError, ValueError) as exc:
            return {"ok": False, "kind": "internal", "message": str(exc)}, []
        kwargs = dict(zip(kw_names, kw_values, strict=False))
        max_elements = header.get("max_elements")
        max_elements = max_elements if type(max_elements) is int else 1 << 22
        originals = [a.copy() if isinstance(a, np.ndarray) else None for a in args]
        t0 = time.perf_counter()
        try:
            result = self.fn(*args, **kwargs)
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


def _same(a: Any, b: np.ndarray) -> bool:
    """Unchanged by the learner: same dtype, shape and bytes (NaNs included)."""
    try:
        return (type(a) is np.ndarray and a.dtype == b.dtype and a.shape == b.shape
                and a.tobytes() == b.tobytes())
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
    if type(arr) is not np.ndarray or arr.dtype.kind not in "biuf":
        return None, f"{kind} (dtype {arr.dtype})" if isinstance(arr, np.ndarray) else kind
    return arr, kind


def _sig(fn: Any) -> str:
    try:
        return str(inspect.signature(fn))
    except BaseException:  # noqa: BLE001
        return "(...)"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) in (2, 3) and argv[0] == "zygote":
        zygote(int(argv[1]), argv[2] if len(argv) == 3 else "")
    else:
        sys.stderr.write("usage: python -s -m attn_practice.grader.sandbox.server zygote FD [ROOT]\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
