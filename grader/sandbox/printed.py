"""What a step's report shows of the learner's printed output.

A `print` in the learner's function runs on every example, so the report
keeps the import-time output and the output of one call: the reported
failing call's (a crash's at once; a wrong answer's once the suites have
judged it, see `focus`), else the first call's, each bounded, with a note
of how many calls printed.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

MAX_SHOWN_OUTPUT = 4000
MAX_SHOWN_LINES = 40
RECENT_CALLS = 64  # calls whose output is kept to be picked by `focus`


def bounded(text: str) -> str:
    """At most MAX_SHOWN_LINES lines / MAX_SHOWN_OUTPUT characters of printed output."""
    lines = text.splitlines(keepends=True)
    shown = "".join(lines[:MAX_SHOWN_LINES])[:MAX_SHOWN_OUTPUT]
    if len(shown) < len(text):
        rest = text[len(shown):]
        shown += f"\n... [{rest.count(chr(10)) + 1} more lines not shown]\n"
    return shown


def inputs_key(params: Sequence[str], args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    """A digest of a call's inputs, keywords placed in parameter order (as the suites keep them)."""
    full = list(args)
    for name in params[len(full):]:
        if name not in kwargs:
            break
        full.append(kwargs[name])
    h = hashlib.sha256()
    for v in full:
        if isinstance(v, np.ndarray):
            h.update(f"{v.dtype.str}{v.shape}".encode())
            h.update(np.ascontiguousarray(v).tobytes())
        else:
            h.update(repr(v).encode())
        h.update(b"|")
    return h.hexdigest()


class PrintedOutput:
    """One step's printed output as its report shows it."""

    def __init__(self, at_import: str = "") -> None:
        self.at_import = at_import
        self.call = ""  # the one call's output shown
        self.call_failed = False  # `call` is a failing call's
        self.focused = False  # `call` is the reported failure's (see `focus`)
        self.printing_calls = 0
        self._recent: collections.OrderedDict[str, str] = collections.OrderedDict()

    def add_import(self, text: str) -> None:
        self.at_import += bounded(text) if text else ""

    def add_call(self, text: str, *, failed: bool, key: str) -> None:
        if not text:
            return
        self.printing_calls += 1
        self._recent[key] = shown = bounded(text)
        while len(self._recent) > RECENT_CALLS:
            self._recent.popitem(last=False)
        if failed and not self.call_failed:
            self.call, self.call_failed = shown, True
        elif not self.call:
            self.call = shown

    def focus(self, key: str) -> None:
        """Show the call with inputs `key` (the step's first reported failure), if it printed.

        Wins over a failing call seen on the way: grading runs every recorded
        example, and reports the smallest failing one, not the first.
        """
        if self.focused:
            return
        shown = self._recent.get(key)
        if shown is not None:
            self.call, self.call_failed, self.focused = shown, True, True

    def parts(self) -> list[str]:
        parts = [self.at_import, self.call]
        if self.call and self.printing_calls > 1:
            which = "the first failing call" if self.call_failed else "the first call"
            parts.append(f"\n[your function printed during {self.printing_calls} calls; only {which}'s "
                         "output is shown]\n")
        return [p for p in parts if p]
