"""The machine's live processes, read from /proc, for tests that check nothing is left running."""

from __future__ import annotations

import os


def processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, command line) of every live (non-zombie) process.

    Zombies are their reaper's business (on this VM, a lazy PID 1), not something left running;
    so is a process caught in the middle of exiting (its memory, and so its command line, gone,
    not yet a zombie: seen once in CI right after a Ctrl-C).
    """
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{entry}/cmdline") as f:
                cmd = f.read().replace("\0", " ")
        except OSError:
            continue
        if fields[0] not in ("Z", "X") and cmd:
            out[int(entry)] = (int(fields[1]), int(fields[2]), cmd)
    return out


def alive(pid: int) -> bool:
    """`pid` runs (exists and is not a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def in_group(pgid: int) -> list[str]:
    """The command lines of the live processes of process group `pgid`."""
    return [cmd for _, group, cmd in processes().values() if group == pgid]


class Descendants:
    """Every process `pid` starts while it runs (found every 50 ms, whoever their parent is
    later), and the sandbox folders its fork servers were given: what a command must not
    leave behind, told apart from what other tests running beside it have open."""

    def __init__(self, pid: int):
        import threading

        self.root = pid
        self.pids: set[int] = set()
        self.folders: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            self._look()
            self._stop.wait(0.05)
        self._look()

    def _look(self) -> None:
        todo = [self.root]
        while todo:
            pid = todo.pop()
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    with open(f"/proc/{pid}/task/{task}/children") as f:
                        kids = [int(x) for x in f.read().split()]
                    todo.extend(kids)
                    self.pids.update(kids)
                with open(f"/proc/{pid}/cmdline") as f:
                    args = f.read().split("\0")
            except (OSError, ValueError):
                continue
            self.folders.update(a for a in args if "/attnp-" in a and a.startswith("/"))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def left(self, within: float = 60.0) -> set[str]:
        """What of theirs is still there after `within` seconds at most (empty: nothing)."""
        import time

        deadline = time.monotonic() + within
        while True:
            out = {f"pid {p}" for p in self.pids if alive(p)}
            out |= {f for f in self.folders if os.path.exists(f)}
            if not out or time.monotonic() > deadline:
                return out
            time.sleep(0.1)
