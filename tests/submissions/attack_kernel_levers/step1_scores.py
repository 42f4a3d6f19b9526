"""Attack: the kernel's bigger levers, by raw syscall number (no tool, no Python wrapper needed).

ptrace, process_vm_readv and pidfd_open/pidfd_getfd on the fork server;
new namespaces (unshare, clone with CLONE_NEWUSER, setns); mount, chroot;
userfaultfd, perf_event_open, bpf, io_uring; a new socket. As an ordinary
user several of these succeed without seccomp (a user namespace gives
"root" inside it). Any success counts as an escape.
"""

import ctypes
import os
import platform

import numpy as np

X86 = platform.machine() in ("x86_64", "amd64")
NR = dict(ptrace=(101, 117), process_vm_readv=(310, 270), pidfd_open=(434, 434), unshare=(272, 97),
          setns=(308, 268), mount=(165, 40), chroot=(161, 51), userfaultfd=(323, 282),
          perf_event_open=(298, 241), bpf=(321, 280), io_uring_setup=(425, 425), socket=(41, 198),
          clone=(56, 220))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ESCAPES = []
CLONE_NEWUSER, CLONE_NEWNS, SIGCHLD = 0x10000000, 0x00020000, 17


def sys_(name, *args):
    nr = NR[name][0 if X86 else 1]
    return libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])


def probe():
    zygote = os.getppid()
    attr = ctypes.create_string_buffer(128)
    params = ctypes.create_string_buffer(120)
    tries = {
        "ptrace(ATTACH zygote)": lambda: sys_("ptrace", 16, zygote, 0, 0),
        "process_vm_readv(zygote)": lambda: sys_("process_vm_readv", zygote, 0, 0, 0, 0, 0),
        "pidfd_open(zygote)": lambda: sys_("pidfd_open", zygote, 0),
        "unshare(NEWUSER)": lambda: sys_("unshare", CLONE_NEWUSER),
        "unshare(NEWNS)": lambda: sys_("unshare", CLONE_NEWNS),
        "setns": lambda: sys_("setns", 0, 0),
        "mount(tmpfs)": lambda: sys_("mount", b"none", b"/tmp", b"tmpfs", 0, 0),
        "chroot": lambda: sys_("chroot", b"/"),
        "userfaultfd": lambda: sys_("userfaultfd", 1),  # UFFD_USER_MODE_ONLY
        "perf_event_open(self)": lambda: sys_("perf_event_open", attr, 0, -1, -1, 0),
        "bpf": lambda: sys_("bpf", 0, attr, 72),
        "io_uring_setup": lambda: sys_("io_uring_setup", 1, params),
        "socket(AF_UNIX)": lambda: sys_("socket", 1, 1, 0),
    }
    for name, fn in tries.items():
        r = fn()
        if r >= 0:
            ESCAPES.append(name)
            if name in ("pidfd_open(zygote)", "userfaultfd", "perf_event_open(self)", "bpf",
                        "io_uring_setup", "socket(AF_UNIX)"):
                os.close(r)
    # clone(CLONE_NEWUSER) in a child that exits at once: any pid back is an escape.
    pid = sys_("clone", CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0)
    if pid == 0:
        os._exit(0)
    if pid > 0:
        ESCAPES.append("clone(NEWUSER)")
        os.waitpid(pid, 0)


def dot_scores(Q, K):
    if not ESCAPES:
        probe()
    if ESCAPES:
        print("ESCAPED", ESCAPES)
        return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
