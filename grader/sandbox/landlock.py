"""Landlock: kernel-enforced file, network and signal confinement (Linux 5.13+), via raw syscalls.

The zygote opens, once, a handle on every path learner code may read (the
Python installation, system libraries, a few devices) and each sandbox child
turns them into a ruleset for itself plus its own work directory. What is
hidden (the grader's package in every layout, the temporary root, the
grader's home) is left out even when it lies inside something needed, and
what is needed inside something hidden comes back. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct
import sys
from typing import Any

#: At most this many read rules (open directories) in the Landlock jail.
MAX_LANDLOCK_RULES = 2000


def needed_paths() -> list[str]:
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


def under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def outermost(paths: list[str]) -> list[str]:
    out: list[str] = []
    for p in sorted(set(paths), key=len):
        if not any(under(p, q) for q in out):
            out.append(p)
    return out


class Landlock:
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
    def prepare(cls, libc: Any, hidden: list[str], needed: list[str]) -> Landlock | None:
        if libc is None:
            return None
        try:
            abi = int(libc.syscall(ctypes.c_long(cls.CREATE), None, ctypes.c_size_t(0), ctypes.c_uint32(1)))
        except (AttributeError, OSError):
            return None
        if abi < 1:
            return None
        fds: list[tuple[int, bool]] = []
        for path in readable_everything_but(hidden, needed):
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


def readable_everything_but(hidden: list[str], needed: list[str]) -> list[str]:
    """Paths whose subtrees, allowed together, cover `needed` minus `hidden`.

    Going down from "/" (itself not readable), a hidden path switches reading off and a needed one
    switches it back on, however they nest: a virtualenv (needed) inside the
    grader's home (hidden) is readable, and the grader's package (hidden)
    installed inside that virtualenv is not. Only the directories on the way
    to a hidden or needed path are listed.
    """
    hidden_set = {os.path.realpath(h) for h in hidden if h}
    needed_set = {os.path.realpath(n) for n in needed if n}
    needed_set -= hidden_set  # hidden wins at the same path (the package dir on sys.path)
    marks = hidden_set | needed_set
    out: list[str] = []
    links_seen: set[str] = set()

    def is_hidden(real: str) -> bool:
        return any(under(real, h) and not any(under(real, n) and under(n, h) for n in needed_set)
                   for h in hidden_set)

    def allow_link(path: str) -> None:
        # A rule follows symlinks: lib64 -> lib in a venv would open all of lib, package
        # included. Allow the target instead, walked like any other path.
        real = os.path.realpath(path)
        if not is_hidden(real) and real not in links_seen:
            links_seen.add(real)  # a link to its own parent would loop
            visit(real, True)

    def visit(path: str, allowed: bool) -> None:
        inside = [m for m in marks if m != path and under(m, path)]
        if allowed and os.path.islink(path):
            allow_link(path)
            return
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
            for n in outermost([n for n in needed_set if under(n, path) and n != path]):
                visit(n, True)
            return
        if not allowed and len(names) + len(out) > MAX_LANDLOCK_RULES:
            # Too crowded to enumerate: keep what must be readable readable. (An
            # allowed directory holding something hidden is always enumerated:
            # allowing it whole would show what it hides.)
            for n in outermost([n for n in needed_set if under(n, path) and n != path]):
                visit(n, True)
            return
        for name in names:
            child = os.path.join(path, name)
            visit(child, child in needed_set or (allowed and child not in hidden_set))

    if "/" in hidden_set:
        return outermost(list(needed_set))
    # Nothing is readable unless needed: another checkout of this project (or a
    # classmate's submission) elsewhere on the disk must stay out of reach too.
    visit("/", False)
    return list(dict.fromkeys(out))

