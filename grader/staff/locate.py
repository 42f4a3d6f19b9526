"""Submissions as students hand them in: find the folder that holds the step files.

A repository often keeps the work one folder down (`repo/attention-practice/`,
`src/`); grading the top would give `missing` for every step and no hint. So
an argument that holds no step file but has exactly one shallow subfolder
that does is graded there, and every report says so (`graded_path`). Several
such subfolders (often `grade .` on a folder of submissions) are a usage error
naming them. Plain files among the arguments (`subs/README.txt` from
`subs/*`) are skipped with a warning, never a refusal of the whole batch.

The walk is iterative and bounded (depth, folders), so no folder tree, however
deep or wide, can stall or crash it.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attn_practice.grader.catalog import load_catalog

MAX_DEPTH = 3
MAX_FOLDERS = 2000
MAX_LISTED = 10
_SKIP = {"__pycache__", "node_modules", "site-packages", "venv", "env"}


class LocateError(ValueError):
    """The arguments cannot be graded as given; the message says what to run instead."""


@dataclass(frozen=True)
class Located:
    label: str  # the argument as given: what reports call the submission
    path: Path  # the folder graded
    graded_path: str = ""  # set when `path` is a subfolder of the argument


def step_files() -> set[str]:
    return {e.file for e in load_catalog()}


def holds_steps(folder: Path, names: set[str] | None = None) -> bool:
    names = names or step_files()
    return any(os.path.lexists(folder / n) for n in names)


def candidates(root: Path, names: set[str] | None = None) -> list[Path]:
    """The shallowest subfolders of `root` (depth <= MAX_DEPTH) that hold a step file."""
    names = names or step_files()
    found: list[Path] = []
    found_depth = None
    queue: deque[tuple[Path, int]] = deque([(root, 0)])
    seen = 0
    while queue and seen < MAX_FOLDERS:
        folder, depth = queue.popleft()
        if found_depth is not None and depth > found_depth:
            break
        seen += 1
        if depth and holds_steps(folder, names):
            found.append(folder)
            found_depth = depth
            continue
        if depth >= MAX_DEPTH:
            continue
        try:
            with os.scandir(folder) as it:
                subs = sorted(e.name for e in it if e.is_dir(follow_symlinks=False)
                              and not e.name.startswith(".") and e.name not in _SKIP)
        except OSError:
            continue
        queue.extend((folder / name, depth + 1) for name in subs)
    return found


def locate(args: Sequence[Path]) -> tuple[list[Located], list[str]]:
    """The submissions to grade, and the arguments skipped (plain files), in order given."""
    names = step_files()
    located: list[Located] = []
    skipped: list[str] = []
    for arg in args:
        label = str(arg)
        if not arg.is_dir():
            skipped.append(label)
            continue
        if holds_steps(arg, names):
            located.append(Located(label, arg))
            continue
        found = candidates(arg, names)
        if len(found) == 1:
            located.append(Located(label, found[0], graded_path=str(found[0])))
        elif len(found) > 1:
            listed = ", ".join(str(p) for p in found[:MAX_LISTED])
            more = f" and {len(found) - MAX_LISTED} more" if len(found) > MAX_LISTED else ""
            raise LocateError(
                f"{label} holds no step file itself, but {len(found)} of its subfolders do "
                f"({listed}{more}). Grade each as its own submission, e.g. "
                f"`attn-practice grade {os.path.join(label, '*')}`, or name the one you mean.")
        else:
            located.append(Located(label, arg))
    if not located:
        raise LocateError(f"no submission folder among the arguments ({', '.join(skipped)} "
                          f"{'is a file' if len(skipped) == 1 else 'are files'}); "
                          "give the folders that hold the step files")
    return located, skipped
