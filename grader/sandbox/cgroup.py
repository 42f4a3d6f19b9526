"""Memory and process caps per sandbox, not per process: one child cgroup each, where we may make one.

Resource limits (`setrlimit`) bound each process on its own: a sandbox that
forks children, or holds memory in a memfd, can hold several times the
advertised limit. When the grader can create cgroups (root with a writable
cgroup file system, or a delegated subtree) every sandbox gets its own
cgroup with a memory cap (charged for everything its processes touch:
heap, memfd and tmpfs pages, page tables) and a process cap, and the fork
server removes it after reaping the sandbox. Both cgroup v2 (the unified
tree) and v1 (separate `memory` and `pids` hierarchies) are used; without
either, the rlimits alone hold (see the README's security section).

Standard library only. The sandbox child joins its cgroup itself, before it
gives up root and locks the file system (`join`); the fork server makes
nothing per sandbox, so a spawn costs it no time.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

_MOUNTS = "/proc/self/mountinfo"


@dataclass
class Cgroups:
    """Where this fork server's sandboxes get their cgroups, and which files cap them."""

    version: int  # 1 or 2
    memory_dir: str  # parent directory for the memory cgroups (v2: for both)
    pids_dir: str  # v1: parent directory for the pids cgroups ("" when v1 has none)
    prefix: str  # name prefix for this fork server's cgroups
    made: set[str] = field(default_factory=set)

    @classmethod
    def detect(cls, prefix: str) -> Cgroups | None:
        """The cgroups we may create here, checked by making (and removing) one; else None."""
        for found in (_v2(prefix), _v1(prefix)):
            if found is not None and found._probe():
                found.remove_stale()
                return found
        return None

    def remove_stale(self) -> None:
        """Empty cgroups left by fork servers that were killed (their pid is gone)."""
        for parent in self.parents():
            try:
                names = os.listdir(parent)
            except OSError:
                continue
            for name in names:
                parts = name.split("-")
                if (len(parts) == 3 and parts[0] == "attnp" and parts[1].isdigit()
                        and not os.path.exists(f"/proc/{parts[1]}")):
                    try:
                        os.rmdir(os.path.join(parent, name))
                    except OSError:
                        pass

    def _probe(self) -> bool:
        name = f"{self.prefix}probe"
        dirs = self._make(name, 64 * 1024 * 1024, 8)
        if not dirs:
            return False
        self.remove_dirs(dirs)
        return True

    def parents(self) -> list[str]:
        """The directories this fork server's cgroups are made in."""
        return [d for d in (self.memory_dir, self.pids_dir) if d]

    def dirs(self, name: str) -> list[str]:
        out = [os.path.join(self.memory_dir, name)]
        if self.version == 1 and self.pids_dir:
            out.append(os.path.join(self.pids_dir, name))
        return out

    def _make(self, name: str, memory: int, pids: int) -> list[str]:
        dirs = self.dirs(name)
        made: list[str] = []
        try:
            for d in dirs:
                os.mkdir(d, 0o755)
                made.append(d)
            mem = dirs[0]
            if self.version == 2:
                _write(os.path.join(mem, "memory.max"), str(memory))
                _write_if_exists(os.path.join(mem, "memory.swap.max"), "0")
                _write(os.path.join(mem, "pids.max"), str(pids))
            else:
                _write(os.path.join(mem, "memory.limit_in_bytes"), str(memory))
                _write_if_exists(os.path.join(mem, "memory.memsw.limit_in_bytes"), str(memory))
                if len(dirs) > 1:
                    _write(os.path.join(dirs[1], "pids.max"), str(pids))
            return made
        except OSError:
            self.remove_dirs(made)
            return []

    def join(self, name: str, memory: int, pids: int) -> bool:
        """In the sandbox child: make its cgroup(s) and move itself in. False when that failed."""
        dirs = self._make(name, memory, pids)
        if not dirs:
            return False
        try:
            for d in dirs:
                _write(os.path.join(d, "cgroup.procs"), "0")
        except OSError:
            return False
        return True

    def oom_killed(self, name: str) -> bool:
        """Whether the kernel OOM-killed a process of this sandbox for going over its cap."""
        mem = self.dirs(name)[0]
        path = os.path.join(mem, "memory.events" if self.version == 2 else "memory.oom_control")
        try:
            with open(path) as f:
                for line in f:
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value) > 0
        except (OSError, ValueError):
            pass
        return False

    def remove(self, name: str) -> None:
        """In the fork server, once the sandbox's processes are gone."""
        self.remove_dirs(self.dirs(name))

    def remove_dirs(self, dirs: list[str]) -> None:
        for d in dirs:
            for attempt in range(20):
                try:
                    os.rmdir(d)
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    # Still busy for a moment after the last process is reaped.
                    time.sleep(0.001 * (attempt + 1))

    def remove_all(self) -> None:
        """Everything of ours still there (the fork server is exiting)."""
        for parent in self.parents():
            try:
                names = [n for n in os.listdir(parent) if n.startswith(self.prefix)]
            except OSError:
                continue
            self.remove_dirs([os.path.join(parent, n) for n in names])


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _write_if_exists(path: str, text: str) -> None:
    if os.path.exists(path):
        _write(path, text)


def _own_cgroups() -> dict[str, str]:
    """/proc/self/cgroup as {controller or "" (v2): path}."""
    out: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3:
                    for ctl in parts[1].split(","):
                        out[ctl] = parts[2]
    except OSError:
        pass
    return out


def _mounts(fstype: str) -> list[tuple[str, str, set[str]]]:
    """(mount point, root inside the hierarchy, super options) of every mount of `fstype`."""
    out = []
    try:
        with open(_MOUNTS) as f:
            for line in f:
                left, _, right = line.partition(" - ")
                fields, rest = left.split(), right.split()
                if len(fields) >= 5 and rest and rest[0] == fstype:
                    opts = set(rest[2].split(",")) if len(rest) > 2 else set()
                    out.append((fields[4].replace("\\040", " "), fields[3], opts))
    except OSError:
        pass
    return out


def _inside(mount: str, mount_root: str, path: str) -> str:
    rel = path[len(mount_root):] if path.startswith(mount_root) else path
    return os.path.join(mount, rel.lstrip("/"))


def _v2(prefix: str) -> Cgroups | None:
    own = _own_cgroups().get("")
    mounts = _mounts("cgroup2")
    if own is None or not mounts:
        return None
    mount, root, _ = mounts[0]
    parent = _inside(mount, root, own)
    try:
        with open(os.path.join(parent, "cgroup.controllers")) as f:
            available = set(f.read().split())
    except OSError:
        return None
    if not {"memory", "pids"} <= available:
        return None
    try:
        with open(os.path.join(parent, "cgroup.subtree_control")) as f:
            enabled = set(f.read().split())
        if not {"memory", "pids"} <= enabled:
            _write(os.path.join(parent, "cgroup.subtree_control"), "+memory +pids")
    except OSError:
        return None  # a cgroup with processes of its own cannot hand controllers down
    return Cgroups(2, parent, "", prefix)


def _v1(prefix: str) -> Cgroups | None:
    own = _own_cgroups()
    dirs: dict[str, str] = {}
    for mount, root, opts in _mounts("cgroup"):
        for ctl in ("memory", "pids"):
            if ctl in opts and ctl in own:
                dirs[ctl] = _inside(mount, root, own[ctl])
    if "memory" not in dirs or not os.path.isdir(dirs["memory"]):
        return None
    pids = dirs.get("pids", "")
    return Cgroups(1, dirs["memory"], pids if pids and os.path.isdir(pids) else "", prefix)
