"""The jail: what every sandbox child does to itself before it imports learner code.

Prepared once in the fork server (`Jail`: namespaces, the Landlock allowlist,
the cgroup parent, whether seccomp works), applied in each forked child
(`enter`), in this order:

* new session, closed stdin, stdout/stderr captured in an unlinked file of
  bounded size, every inherited descriptor closed;
* its own cgroup (memory and process caps for the whole sandbox) where the
  grader may make one (`cgroup`);
* resource limits: address space, CPU seconds, file size, open files,
  processes, no core dumps; first in line for the OOM killer;
* no new privileges (setuid programs do not elevate), not dumpable;
* Landlock where the kernel has it (`landlock`): nothing writable but
  /dev/null, nothing readable but the Python installation, system
  libraries and its own work directory; the grader's package, temporary
  root and home hidden in every layout; no TCP, no signals or abstract
  sockets beyond its own processes;
* as root, a random unprivileged uid, and (once, in the fork server) a
  private mount, network and IPC namespace in which the grader's package is
  hidden and a Python installed under a private home (/root/.pyenv) stays
  readable;
* a fresh, empty session keyring (the grader's keys are not its keys);
* last, the seccomp filter (`seccomp`): no reach into other processes, SysV
  IPC, keyrings, file metadata, or kernel namespaces.

Standard library only, plus `grader/paths.py` for the package root.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import stat
from typing import Any

from attn_practice.grader.paths import PACKAGE_ROOT
from attn_practice.grader.sandbox import seccomp
from attn_practice.grader.sandbox.cgroup import Cgroups
from attn_practice.grader.sandbox.landlock import Landlock, needed_paths, outermost, under

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
_PR_SET_NO_NEW_PRIVS = 38
_KEYCTL_GET_KEYRING_ID, _KEYCTL_JOIN_SESSION_KEYRING, _KEY_SPEC_SESSION_KEYRING = 0, 1, -3
_KEYCTL_NR = {"x86_64": 250, "aarch64": 219}
#: Most a sandbox's stdout and stderr may write (per call: the capture file is emptied after each).
OUTPUT_FILE_LIMIT = 8 * 1024 * 1024
#: Temp folders of every system, hidden from sandboxes wherever their own root lies.
_SYSTEM_TEMP = ("/tmp", "/var/tmp")
#: The only device files learner code may open (read; /dev/null also write).
_SAFE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
#: System directories learner code may read (shared libraries, ld.so's cache, locale
#: and time-zone data); everything else outside the Python installation is unreadable.
_SYSTEM_DIRS = ("/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin", "/etc")


def load_libc() -> Any:
    """The C library, for prctl, mount, unshare and raw syscalls (None when it cannot be loaded)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    libc.syscall.restype = ctypes.c_long
    return libc


def _keyctl(libc: Any, op: int, arg: int) -> int:
    nr = _KEYCTL_NR.get(seccomp.arch() or "")
    if libc is None or nr is None:
        return -1
    return int(libc.syscall(ctypes.c_long(nr), ctypes.c_long(op), ctypes.c_long(arg), ctypes.c_long(0)))


def keyrings_available(libc: Any) -> bool:
    """The kernel has keyrings (so each sandbox gets a fresh session keyring of its own)."""
    return _keyctl(libc, _KEYCTL_GET_KEYRING_ID, _KEY_SPEC_SESSION_KEYRING) >= 0


class Jail:
    """What every sandbox child applies to itself; prepared once in the zygote."""

    def __init__(self, libc: Any, root: str):
        self.libc = libc
        self.root = os.path.realpath(root) if root else ""
        self.package = str(PACKAGE_ROOT)
        # The package is hidden even where it lies inside what is needed (a venv under
        # the home or temp folder, site-packages, an editable checkout holding its venv).
        needed = [p for p in needed_paths() if p != self.package]
        hidden = [self.package, self.root, "/dev"]
        try:
            import pwd

            home = os.path.realpath(pwd.getpwuid(os.getuid()).pw_dir)
            if home not in ("/", ""):
                hidden.append(home)  # keys, tokens, runner credentials of whoever grades
        except (KeyError, OSError, ImportError):
            pass
        # The folder holding our root (the grader's temp dir, or /dev/shm), and the system
        # temp dirs either way: nothing a learner needs, other people's files.
        grader_tmp = os.environ.pop("ATTN_PRACTICE_GRADER_TMP", "")  # see prestart: never a sandbox's
        for tmp in (os.path.dirname(self.root) if self.root else "", grader_tmp, *_SYSTEM_TEMP):
            if tmp not in ("", "/") and os.path.isdir(tmp):
                hidden.append(os.path.realpath(tmp))
        # Every hidden path stays a mark of its own (not only the outermost):
        # the package inside a needed venv inside a hidden home is hidden again.
        self.hidden = sorted({p for p in hidden if p and p != "/"})
        self.mounted = False
        self.netns = False
        if libc is not None and os.geteuid() == 0:
            try:
                self.mounted = self._private_namespaces(needed)
            except OSError:
                self.mounted = False
        devices = [d for d in _SAFE_DEVICES if os.path.exists(d)]
        system = [d for d in _SYSTEM_DIRS if os.path.isdir(d)]
        self.landlock = Landlock.prepare(libc, self.hidden, needed + system + devices)
        self.seccomp = seccomp.works(libc)
        self.keyring = keyrings_available(libc)
        self.cgroups = Cgroups.detect(f"attnp-{os.getpid()}-")

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
        if any(under(n, self.package) for n in needed) or under(self.root, self.package):
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
        for path in outermost(needed):
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
            "cgroup": self.cgroups.version if self.cgroups is not None else 0,
            "cgroup_dirs": self.cgroups.parents() if self.cgroups is not None else [],
            "cgroup_prefix": self.cgroups.prefix if self.cgroups is not None else "",
            "root": self.root,
            "keyring": self.keyring,
        }

    # -- in each child ----------------------------------------------------------
    def lock(self, workdir: str) -> None:
        if self.landlock is not None:
            self.landlock.restrict(workdir)

    def close_fds(self) -> None:
        if self.landlock is not None:
            self.landlock.close()




def cgroup_name(zygote_pid: int, pid: int) -> str:
    """The name of sandbox `pid`'s cgroup (the fork server removes it by this name)."""
    return f"attnp-{zygote_pid}-{pid}"


def enter(req: dict[str, Any], jail: Jail, zygote_pid: int, keep: set[int]) -> int:
    """Lock the calling (freshly forked) process down for good; the fd capturing its output.

    `keep`: descriptors to keep open (the sandbox's socket). Returns only in a
    process that is fully confined, except for the interpreter-level state
    the server resets itself.
    """
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
    if jail.cgroups is not None and "memory" in limits:
        jail.cgroups.join(cgroup_name(zygote_pid, os.getpid()), sandbox_memory(int(limits["memory"])),
                          int(limits.get("processes", 32)))
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
    _close_all_but({0, 1, 2, out_fd} | keep)
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
    # A fresh, empty session keyring: the grader's session (and, through it,
    # user) keyring is no longer reachable; seccomp then refuses keyctl.
    _keyctl(libc, _KEYCTL_JOIN_SESSION_KEYRING, 0)
    if libc is not None and jail.seccomp:
        seccomp.install(libc, os.getpid())
    return out_fd


_ZYGOTE_SIZE: list[int] = []


def sandbox_memory(address_space: int) -> int:
    """The advertised memory limit: the request's address space minus the fork server's own.

    (The launcher adds the fork server's size to the advertised limit for
    RLIMIT_AS, which counts the inherited interpreter; a cgroup counts only
    what the sandbox itself touches.)
    """
    if not _ZYGOTE_SIZE:
        try:
            with open(f"/proc/{os.getppid()}/statm") as f:
                _ZYGOTE_SIZE.append(int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE"))
        except (OSError, ValueError):
            _ZYGOTE_SIZE.append(0)
    return max(address_space - _ZYGOTE_SIZE[0], 64 * 1024 * 1024)


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


