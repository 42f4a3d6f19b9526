"""How a sandbox ended, in a learner's words: a signal, an exit code, the memory cap."""

from __future__ import annotations

import signal
from typing import Any

_SIGNAL_WORDS = {
    signal.SIGSEGV: "crashed with a segmentation fault (a bad memory access, e.g. via ctypes)",
    signal.SIGBUS: "crashed with a bus error",
    signal.SIGABRT: "aborted (SIGABRT)",
    signal.SIGFPE: "crashed with a floating-point exception signal",
    signal.SIGILL: "crashed with an illegal instruction",
    signal.SIGXCPU: "used more CPU time than allowed",
    signal.SIGXFSZ: "wrote more output or file data than allowed",
}


def death_message(info: dict[str, Any]) -> str:
    """How a sandbox ended, in words for the learner (from the fork server's exit info)."""
    if info.get("oom"):
        return "ran out of memory (the sandbox as a whole, children included)"
    sig = info.get("signal")
    code = info.get("exitcode")
    if info.get("killed") is True:
        return "stopped talking to the grader (it closed or broke its connection) and was stopped"
    if sig == signal.SIGKILL:
        return "was killed (it used more memory, CPU time or processes than allowed)"
    if sig is not None:
        try:
            words = _SIGNAL_WORDS.get(signal.Signals(sig))
        except ValueError:
            words = None
        return words or f"was killed by signal {sig}"
    if code is not None:
        return f"ended the whole process with exit code {code} (os._exit or similar)"
    return "stopped responding"
