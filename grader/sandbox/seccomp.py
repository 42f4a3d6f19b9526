"""The seccomp filter every sandbox installs on itself: which system calls learner code may make.

Landlock confines *files*; the uid drop (as root) confines everything else.
As an ordinary user there is no uid drop, and several calls reach other
processes or shared kernel objects of the same user without touching a
file. This filter closes them, for root and ordinary users alike:

* other processes: signals (kill, tgkill, sigqueue) only to itself; no
  ptrace, process_vm_*, pidfd_*, kcmp; `prlimit64`, `sched_set*`,
  `migrate_pages`/`move_pages` only on itself, `setpriority` only on
  itself (PRIO_PROCESS), no `ioprio_set`; `fcntl` F_SETOWN/F_SETOWN_EX/
  F_SETSIG and `ioctl` FIOSETOWN/SIOCSPGRP (which aim SIGIO at any pid),
  TIOCSTI/TIOCLINUX (typing into a terminal);
* shared kernel objects: SysV IPC (shm*, msg*, sem*), POSIX message
  queues, kernel keyrings (`add_key`, `request_key`, `keyctl`);
* file metadata Landlock does not cover: the chmod, chown, utime and
  xattr-write families, refused outright (learner code never needs them,
  and a rule "only inside its own copy" cannot be checked on paths here);
* the kernel's bigger levers: sockets (its own socket is made before the
  filter), io_uring, userfaultfd, perf_event_open, bpf, mount and the new
  mount API, pivot_root, chroot, unshare, setns, and `clone` with any
  namespace flag (`clone3` answers ENOSYS, so the C library falls back to
  `clone`, whose flags can be checked).

Foreign-ABI calls (i386, x32) are refused so the numbers cannot be dodged.
Refused calls fail with EPERM; nothing is killed, so learner code gets an
ordinary OSError it can read. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from dataclasses import dataclass
from typing import Any

_RET_ALLOW = 0x7FFF0000
_RET_EPERM = 0x00050000 | 1  # SECCOMP_RET_ERRNO | EPERM
_RET_ENOSYS = 0x00050000 | 38  # SECCOMP_RET_ERRNO | ENOSYS
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

#: Namespace flags `clone` may not carry (NEWNS..NEWNET, NEWCGROUP, NEWTIME).
CLONE_NEW_ANY = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x80
#: fcntl commands that aim signals at another process.
FCNTL_SIGNAL_OWNER = (8, 15, 10)  # F_SETOWN, F_SETOWN_EX, F_SETSIG
#: ioctl commands: TIOCSTI, TIOCLINUX (terminal injection), FIOSETOWN, SIOCSPGRP (= F_SETOWN).
IOCTL_REFUSED = (0x5412, 0x541C, 0x8901, 0x8902)


@dataclass(frozen=True)
class _Arch:
    audit: int
    deny: dict[str, int]  # refused outright
    self_only: dict[str, int]  # first argument must be 0, the sandbox's pid (or -pid: kill's group)
    special: dict[str, int]  # fcntl, ioctl, clone, clone3, setpriority


#: Syscall numbers per architecture (from the kernel's syscall tables).
_ARCHES: dict[str, _Arch] = {
    "x86_64": _Arch(
        0xC000003E,
        deny={
            "tkill": 200, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
            "pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
            "process_mrelease": 448, "kcmp": 312, "socket": 41, "socketpair": 53,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
            "add_key": 248, "request_key": 249, "keyctl": 250,
            "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
            "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
            "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
            "mq_getsetattr": 245,
            "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452,
            "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260,
            "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280,
            "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190, "removexattr": 197, "lremovexattr": 198,
            "fremovexattr": 199, "setxattrat": 463, "removexattrat": 466,
            "ioprio_set": 251, "userfaultfd": 323, "perf_event_open": 298, "bpf": 321,
            "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272, "setns": 308,
            "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
            "fspick": 433, "mount_setattr": 442, "name_to_handle_at": 303, "open_by_handle_at": 304,
        },
        self_only={
            "kill": 62, "tgkill": 234, "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
            "prlimit64": 302, "sched_setaffinity": 203, "sched_setscheduler": 144, "sched_setparam": 142,
            "sched_setattr": 314, "migrate_pages": 256, "move_pages": 279,
        },
        special={"fcntl": 72, "ioctl": 16, "clone": 56, "clone3": 435, "setpriority": 141},
    ),
    "aarch64": _Arch(
        0xC00000B7,
        deny={
            "tkill": 130, "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271,
            "pidfd_send_signal": 424, "pidfd_open": 434, "pidfd_getfd": 438, "process_madvise": 440,
            "process_mrelease": 448, "kcmp": 272, "socket": 198, "socketpair": 199,
            "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
            "add_key": 217, "request_key": 218, "keyctl": 219,
            "msgget": 186, "msgctl": 187, "msgrcv": 188, "msgsnd": 189, "semget": 190, "semctl": 191,
            "semtimedop": 192, "semop": 193, "shmget": 194, "shmctl": 195, "shmat": 196, "shmdt": 197,
            "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
            "mq_getsetattr": 185,
            "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchownat": 54, "fchown": 55, "utimensat": 88,
            "setxattr": 5, "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15,
            "fremovexattr": 16, "setxattrat": 463, "removexattrat": 466,
            "ioprio_set": 30, "userfaultfd": 282, "perf_event_open": 241, "bpf": 280,
            "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51, "unshare": 97, "setns": 268,
            "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
            "fspick": 433, "mount_setattr": 442, "name_to_handle_at": 264, "open_by_handle_at": 265,
        },
        self_only={
            "kill": 129, "tgkill": 131, "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
            "prlimit64": 261, "sched_setaffinity": 122, "sched_setscheduler": 119, "sched_setparam": 118,
            "sched_setattr": 274, "migrate_pages": 238, "move_pages": 239,
        },
        special={"fcntl": 25, "ioctl": 29, "clone": 220, "clone3": 435, "setpriority": 140},
    ),
}


def arch() -> str | None:
    """This machine's architecture, if the filter knows its syscall numbers."""
    machine = platform.machine().lower()
    machine = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return machine if machine in _ARCHES else None


class _Asm:
    """A tiny BPF assembler with forward labels (jumps are relative and only go forward)."""

    def __init__(self) -> None:
        self.ins: list[list[Any]] = []  # [code, jt, jf, k]; jt/jf are ints or label names
        self.labels: dict[str, int] = {}
        self.n = 0

    def label(self, name: str) -> None:
        self.labels[name] = len(self.ins)

    def fresh(self) -> str:
        self.n += 1
        return f"L{self.n}"

    def op(self, code: int, k: int, jt: int | str = 0, jf: int | str = 0) -> None:
        self.ins.append([code, jt, jf, k & 0xFFFFFFFF])

    def ret(self, action: int) -> None:
        self.op(_RET_K, action)

    def arg(self, i: int) -> None:
        self.op(_LD_W_ABS, 16 + 8 * i)  # low half of args[i] (both arches are little-endian)

    def assemble(self) -> bytes:
        out = []
        for pc, (code, jt, jf, k) in enumerate(self.ins):
            out.append(struct.pack("=HBBI", code, self._rel(pc, jt), self._rel(pc, jf), k))
        return b"".join(out)

    def _rel(self, pc: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        off = self.labels[target] - pc - 1
        if not 0 <= off < 256:
            raise ValueError("seccomp jump out of range")
        return off


def program(pid: int, arch_name: str) -> bytes:
    """The filter for the sandbox whose pid is `pid`."""
    a = _ARCHES[arch_name]
    asm = _Asm()
    asm.op(_LD_W_ABS, 4)  # seccomp_data.arch
    asm.op(_JEQ_K, a.audit, 1, 0)
    asm.ret(_RET_EPERM)
    asm.op(_LD_W_ABS, 0)  # seccomp_data.nr
    if arch_name == "x86_64":
        asm.op(_JGE_K, 0x40000000, 0, 1)  # the x32 ABI
        asm.ret(_RET_EPERM)
    for nr in sorted(a.deny.values()):
        asm.op(_JEQ_K, nr, "deny", 0)
    for nr in sorted(a.self_only.values()):
        asm.op(_JEQ_K, nr, "self_only", 0)
    s = a.special
    asm.op(_JEQ_K, s["clone3"], "enosys", 0)
    asm.op(_JEQ_K, s["clone"], "clone", 0)
    asm.op(_JEQ_K, s["fcntl"], "fcntl", 0)
    asm.op(_JEQ_K, s["ioctl"], "ioctl", 0)
    asm.op(_JEQ_K, s["setpriority"], "setpriority", 0)
    asm.ret(_RET_ALLOW)
    asm.label("deny")
    asm.ret(_RET_EPERM)
    asm.label("enosys")
    asm.ret(_RET_ENOSYS)
    asm.label("self_only")  # args[0] is 0, our pid, or -our pid (kill's own process group)
    asm.arg(0)
    for target in (0, pid, -pid):
        asm.op(_JEQ_K, target, "ok", 0)
    asm.ret(_RET_EPERM)
    asm.label("clone")  # flags in args[0] (x86_64 and aarch64 alike)
    asm.arg(0)
    asm.op(_JSET_K, CLONE_NEW_ANY, "no", "ok")
    asm.label("fcntl")
    asm.arg(1)
    for cmd in FCNTL_SIGNAL_OWNER:
        asm.op(_JEQ_K, cmd, "no", 0)
    asm.ret(_RET_ALLOW)
    asm.label("ioctl")
    asm.arg(1)
    for cmd in IOCTL_REFUSED:
        asm.op(_JEQ_K, cmd, "no", 0)
    asm.ret(_RET_ALLOW)
    asm.label("setpriority")  # which == PRIO_PROCESS and who in (0, pid)
    asm.arg(0)
    asm.op(_JEQ_K, 0, 0, "no")
    asm.arg(1)
    asm.op(_JEQ_K, 0, "ok", 0)
    asm.op(_JEQ_K, pid, "ok", "no")
    # Shared exits for the argument checks above (BPF jumps only go forward).
    asm.label("ok")
    asm.ret(_RET_ALLOW)
    asm.label("no")
    asm.ret(_RET_EPERM)
    return asm.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(libc: Any, pid: int) -> bool:
    """Install the filter on the calling thread (no_new_privs must already be set)."""
    name = arch()
    if name is None or libc is None:
        return False
    code = program(pid, name)
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) == 0


def works(libc: Any) -> bool:
    """Try the filter once in a throwaway child: a kernel without seccomp must not break sandboxes."""
    if libc is None or arch() is None:
        return False
    try:
        pid = os.fork()
    except OSError:
        return False
    if pid == 0:
        ok = False
        try:
            libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
            if install(libc, os.getpid()):
                os.kill(os.getpid(), 0)  # allowed: itself
                try:
                    os.kill(os.getppid(), 0)  # refused: anyone else
                except PermissionError:
                    ok = True
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
