"""Submissions as students hand them in: find the folder that holds the work.

A repository often keeps the work one folder down (`repo/attention-practice/`,
`src/`), and a zip of a folder unpacks to one; grading the top would give
`missing` for every step. So when an argument's top level holds nothing
recognised (no step file, near-miss name, module or notebook defining a
step's function: see `intake.recognise`), the shallowest subfolders (up to
MAX_DEPTH down) that do are looked at. One is graded, and every report says
so. Several at that depth (two versions of the work, or `grade .` on a
folder of submissions) never stop the batch: one is graded by the documented
rule, NEWEST MODIFICATION TIME, then SHORTEST PATH, with a warning that
names the others. When those folders hold different steps each (`Step 1/`,
`Step 2/`), they are one piece of work: every step is graded from its own
folder (never mixing two folders that hold the same step).

The walk is iterative and bounded (depth, folders), so no folder tree, however
deep or wide, can stall or crash it.
"""

from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.staff.intake.recognise import RULE, Recognised, recognise

MAX_DEPTH = 3
MAX_FOLDERS = 2000
MAX_LISTED = 10
MAX_PARSED = 1000  # modules and notebooks parsed in all while looking below the top
_SKIP = {"__pycache__", "node_modules", "site-packages", "venv", "env", "__MACOSX"}


@dataclass
class Where:
    folder: Path  # the folder whose files are graded
    recognised: Recognised
    warnings: list[str] = field(default_factory=list)


def candidates(root: Path, *, zips: bool = False) -> list[tuple[Path, Recognised]]:
    """The shallowest subfolders of `root` (depth 1..MAX_DEPTH) that hold recognised work
    (with `zips`: that hold a `.zip`, looked for when no folder holds work)."""
    catalog = load_catalog()
    found: list[tuple[Path, Recognised]] = []
    found_depth = None
    queue: deque[tuple[Path, int]] = deque([(root, 0)])
    seen = 0
    parse_left = MAX_PARSED
    while queue and seen < MAX_FOLDERS:
        folder, depth = queue.popleft()
        if found_depth is not None and depth > found_depth:
            break
        seen += 1
        if depth:
            rec = recognise(folder, catalog, max_code=min(parse_left, 100))
            parse_left -= rec.parsed
            if rec.zips if zips else rec.anything:
                found.append((folder, rec))
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


def find_work(root: Path) -> Where:
    """The folder to grade inside `root` (itself when its top level holds work or a zip)."""
    top = recognise(root)
    if top.anything:
        return Where(root, top)
    found = candidates(root)
    if not found and top.zips:
        return Where(root, top)
    if not found:  # a zip further down (`repo/handin/attention.zip`)
        zipped = candidates(root, zips=True)
        return Where(zipped[0][0], zipped[0][1]) if zipped else Where(root, top)
    found.sort(key=lambda fr: (-fr[1].newest(), len(str(fr[0])), str(fr[0])))
    folder, rec = found[0]
    if len(found) == 1:
        return Where(folder, rec)
    if _disjoint(found):
        return _spread(root, top, found)
    others = [str(p) for p, _ in found[1:]]
    listed = ", ".join(others[:MAX_LISTED]) + (f" and {len(others) - MAX_LISTED} more"
                                               if len(others) > MAX_LISTED else "")
    return Where(folder, rec, [
        f"{root} holds no step file itself, but {len(found)} of its subfolders do; graded {folder} "
        f"(rule: {RULE}), not {listed}. If they are separate submissions, grade each: "
        f"`attn-practice grade {os.path.join(str(root), '*')}`"])


def _disjoint(found: list[tuple[Path, Recognised]]) -> bool:
    """Each folder holds different steps (`step1/`, `step2/`, ...): one piece of work, spread out."""
    seen: set[str] = set()
    for _, rec in found:
        if seen & rec.chosen.keys():
            return False
        seen |= rec.chosen.keys()
    return True


def _spread(root: Path, top: Recognised, found: list[tuple[Path, Recognised]]) -> Where:
    """One submission whose steps sit in several folders: every step graded from where it is."""
    merged = Recognised(root, found=top.found, spread=True)
    parts = []
    for folder, rec in sorted(found, key=lambda fr: min(fr[1].chosen)):
        rel = os.path.relpath(folder, root)
        merged.helper_folders.append(folder)
        for sid, src in rec.chosen.items():
            merged.chosen[sid] = replace(src, entry=replace(src.entry, rel=f"{rel}/{src.entry.rel}"))
        merged.warnings += rec.warnings
        merged.extra_files.update({k: v for k, v in rec.extra_files.items() if k not in merged.extra_files})
        parts.append(f"{', '.join(sorted(rec.chosen))} from {rel}/")
    return Where(root, merged, [f"the steps are in several folders: graded {'; '.join(parts)}"])


__all__ = ["MAX_DEPTH", "Where", "candidates", "find_work"]
