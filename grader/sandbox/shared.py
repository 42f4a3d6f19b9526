"""One sandbox for every step of a submission: confined once, not once per step.

A class is graded at the rate its sandboxes allow: a process forked,
jailed, faulted in and reaped per step was about two fifths of the machine's
time. `grade` therefore loads all of a submission's steps into one sandbox
(`SharedSandbox`); each `load` there imports the learner's modules afresh
(`server.Server._forget_learner_modules`), so a step sees its own files as
in a sandbox of its own, and every limit, namespace, uid and filter is the
same as a per-step sandbox's.

What one step's code does to the interpreter (NumPy patched, a thread left
running, a crash) could still reach the steps loaded beside it, so a step
is only ever *credited* from the shared sandbox: the engine grades every
step that does not pass there again in a sandbox of its own (`Learner` with
`shared=None`), and that report is the one given. Another step's code can
cost a step time, never points.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from attn_practice.grader.sandbox.launcher import Launcher, Limits, Sandbox


class SharedSandbox:
    """The one sandbox a submission's steps share, spawned when the first step loads.

    Never respawned: once it has ended (a crash, a timeout, a step that
    broke it), each step that still needs a sandbox starts one of its own.
    """

    def __init__(self, launcher: Launcher, submission: Path, *, limits: Limits, display_dir: str = "",
                 files: dict[str, bytes] | None = None) -> None:
        self.launcher = launcher
        self.submission = submission
        self.limits = limits
        self.display_dir = display_dir
        self.files = files
        self._sandbox: Sandbox | None = None
        self._spawned = False

    def take(self, module: str, function: str, params: Sequence[str]) -> Sandbox | None:
        """The live shared sandbox (spawned for the first step that asks), or None."""
        if not self._spawned:
            self._spawned = True
            try:
                self._sandbox = self.launcher.spawn(
                    self.submission, module=module, function=function, params=params, limits=self.limits,
                    display_dir=self.display_dir, files=self.files)
            except (RuntimeError, OSError):
                self._sandbox = None  # each step tries a sandbox of its own, and says why it cannot
        sandbox = self._sandbox
        return sandbox if sandbox is not None and not sandbox.closed else None

    def owns(self, sandbox: Sandbox | None) -> bool:
        return sandbox is not None and sandbox is self._sandbox

    def close(self) -> None:
        if self._sandbox is not None:
            self._sandbox.close()
