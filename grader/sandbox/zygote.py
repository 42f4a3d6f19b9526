"""The fork server ("zygote"): forks one sandbox per request, and kills and reaps them.

Runs as `python -s -P -m attn_practice.grader.sandbox.zygote zygote FD ROOT` with
an environment the launcher builds from scratch (`prestart`). It imports
NumPy once, prepares the jail once (`jail.Jail`), then for each `spawn`
request forks a child that locks itself down (`jail.enter`) and serves ONE
learner module from a fresh copy of the submission on a socket of its own
(`server`).

The zygote itself never runs learner code, so a sandbox that dies takes
nothing with it; when a sandbox is reaped the zygote kills its whole process
tree (every descendant is re-parented to the zygote, a child subreaper) and,
as root, everything its uid still runs, then removes its cgroup. Requests
and replies are small JSON objects; nothing here trusts the learner.
"""

from __future__ import annotations

import os
import resource
import select
import signal
import socket
import sys
import time
from typing import Any

from attn_practice.grader.sandbox import protocol, server
from attn_practice.grader.sandbox.jail import Jail, cgroup_name, enter, load_libc
from attn_practice.grader.sandbox.landlock import MAX_LANDLOCK_RULES

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36
#: How long the zygote waits for a killed process tree to disappear.
REAP_SECONDS = 5.0


class Zygote:
    """Serves spawn/reap requests from the grader until it hangs up."""

    def __init__(self, ctl: socket.socket, root: str):
        self.ctl = ctl
        self.root = root
        self.libc = load_libc()
        self.me = os.getpid()
        self.grader = _grader_pid()  # the launcher's process: we are its child until it is gone
        self.active: dict[int, dict[str, Any]] = {}  # live sandboxes: pid -> request
        self.exited: dict[int, int] = {}  # sandboxes reaped early: pid -> wait status
        self.children_file = os.path.exists(f"/proc/self/task/{self.me}/children")
        self.jail = Jail(self.libc, root)

    def serve(self) -> None:
        told = False  # the grader said "exit": it lives (a bare EOF: it was killed)
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
            elif op == "pause":
                pids, on = req.get("pids"), req.get("on")
                if isinstance(pids, list) and all(type(p) is int for p in pids) and type(on) is bool:
                    reply = {"paused": [self.pause(p, on) for p in pids]}
                else:
                    reply = {"error": "bad pause"}
            elif op == "info":
                reply = self.jail.describe()
            elif op == "exit":
                told = True
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
        if self.jail.cgroups is not None:
            self.jail.cgroups.remove_all()
        if not told:
            self._await_reparenting()
        if self.root and os.getppid() != self.grader:
            # The grader was killed (we were handed to another parent): nobody else will
            # remove our folder, which holds the learners' files. A living grader removes it
            # itself, or keeps it for the next fork server (`Launcher.refresh(keep_root=True)`).
            import shutil

            shutil.rmtree(self.root, ignore_errors=True)
        os._exit(0)

    def _await_reparenting(self, within: float = 5.0) -> None:
        """A killed grader's sockets close before its children are handed on: wait (briefly)
        for the hand-over, so the folder of a grader that is gone is removed, not left."""
        import time

        deadline = time.monotonic() + within
        while os.getppid() == self.grader and time.monotonic() < deadline:
            time.sleep(0.01)

    def spawn(self, fd: int, req: dict[str, Any]) -> dict[str, Any]:
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(fd)
            return {"error": f"fork failed: {exc}"}
        if pid == 0:
            try:
                self.ctl.close()
                out_fd = enter(req, self.jail, self.me, {fd})
                server.start(fd, out_fd, req)
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
        oom = False
        if self.jail.cgroups is not None:
            oom = self.jail.cgroups.oom_killed(cgroup_name(self.me, pid))
            self.jail.cgroups.remove(cgroup_name(self.me, pid))
        if status is None:
            return {"exitcode": None, "signal": None, "killed": killed}
        if os.WIFSIGNALED(status):
            # oom: the sandbox's cgroup went over its memory cap (the kernel's SIGKILL).
            return {"exitcode": None, "signal": os.WTERMSIG(status), "killed": killed, "oom": oom}
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

    def pause(self, pid: int, on: bool) -> bool:
        """Freeze (on) or thaw a live sandbox with everything it started: nothing of it runs
        between a warm sandbox's answers (threads it left spinning, children). SIGSTOP /
        SIGCONT down its process tree, and its cgroup's freezer where there is one (v2: it
        reaches children that left the tree too). False: not one of our live sandboxes."""
        if pid not in self.active:
            return False
        if on:
            self._signal_tree(pid, signal.SIGSTOP)
        groups = self.jail.cgroups
        if groups is not None and groups.version == 2:
            path = os.path.join(groups.memory_dir, cgroup_name(self.me, pid), "cgroup.freeze")
            try:
                with open(path, "w") as f:
                    f.write("1" if on else "0")
            except OSError:
                pass
        if not on:
            self._signal_tree(pid, signal.SIGCONT)
        return True

    def _kill_tree(self, pid: int) -> int:
        """SIGKILL `pid` and every descendant, parents before children (see `_signal_tree`)."""
        return self._signal_tree(pid, signal.SIGKILL)

    def _signal_tree(self, pid: int, sig: int) -> int:
        """Send `sig` to `pid` and every descendant, parents before children; how many.

        A process that has been sent SIGKILL (or SIGSTOP) can no longer fork,
        so reading its children *after* signalling it gives the final list:
        one pass reaches every descendant, even of a fork storm.
        """
        stack, seen = [pid], set()
        while stack:
            p = stack.pop()
            if p in seen or p == self.me:
                continue
            seen.add(p)
            try:
                os.kill(p, sig)
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
        """`pid`'s wait status once it has exited, or None at `deadline`.

        Woken by the exit itself where the kernel has pidfds (the grader waits
        on every reap: a poll that sleeps past the exit is its time lost);
        else polled with growing sleeps.
        """
        delay = 0.0001
        pidfd = _pidfd(pid)
        poller = select.poll()
        if pidfd is not None:
            poller.register(pidfd, select.POLLIN)
        try:
            while True:
                try:
                    done, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    return self.exited.pop(pid, None)
                except InterruptedError:
                    continue
                if done:
                    return status
                left = deadline - time.monotonic()
                if left < 0:
                    return None
                if pidfd is not None:
                    poller.poll(left * 1000)
                else:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.01)
        finally:
            if pidfd is not None:
                os.close(pidfd)

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
    libc = load_libc()
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
    zyg = Zygote(ctl, root)
    # Everything imported so far lives for good: keep the collector away from
    # it so forked children do not copy those pages just to scan them.
    import gc

    gc.collect()
    gc.freeze()
    zyg.serve()


def _grader_pid() -> int:
    """The pid of the process that started us (`prestart.GRADER_PID_ENV`, never a sandbox's)."""
    text = os.environ.pop("ATTN_PRACTICE_GRADER_PID", "")  # not imported: this process starts lean
    return int(text) if text.isdigit() else os.getppid()


def _json_loads(data: bytes) -> dict[str, Any]:
    import json

    obj = json.loads(data)
    if not isinstance(obj, dict):
        raise ValueError("not an object")
    return obj


def _json_dumps(obj: Any) -> bytes:
    import json

    return json.dumps(obj).encode()


def _pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when `pid` exits (Linux 5.3+), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


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


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) in (2, 3) and argv[0] == "zygote":
        zygote(int(argv[1]), argv[2] if len(argv) == 3 else "")
    else:
        sys.stderr.write("usage: python -s -m attn_practice.grader.sandbox.zygote zygote FD [ROOT]\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
