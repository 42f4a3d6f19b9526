"""The machine's live processes, read from /proc, for tests that check nothing is left running."""

from __future__ import annotations

import os


def processes() -> dict[int, tuple[int, int, str]]:
    """pid -> (parent pid, process group, command line) of every live (non-zombie) process.

    Zombies are their reaper's business (on this VM, a lazy PID 1), not something left running.
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
        if fields[0] != "Z":
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
