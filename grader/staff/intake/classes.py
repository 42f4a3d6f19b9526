"""A folder of a class is a class: one submission per student, as `otter grade -p DIR` does.

`grade DIR` where DIR holds no step file itself but many students' work
(an LMS bulk download, unpacked) grades each as its own submission:

- files named by an LMS (`lms`) are grouped by student: a flat Canvas or
  Blackboard download (every student's files side by side) becomes one
  submission per student; a Moodle per-student folder is one submission,
  named by the folder Moodle named for the student;
- any other subfolder, zip, notebook or module holding work is one submission;
  once the folder is a class, so is a subfolder holding files but no work (a
  PDF alone): nobody vanishes from the report.

A folder stays ONE submission when its top level holds a step file, when
only one thing in it holds work (two notebooks or modules, or two folders
beside other arguments: one student's two versions), or when its parts hold different steps
(`Step 1/`, `Step 2/`; `part1.ipynb`, `part2.ipynb`), or a notebook and its
`.py` export (the same name). Nothing here runs or parses learner code
beyond looking for `def` lines.
"""

from __future__ import annotations

import enum
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.sandbox.submission import read_regular_file
from attn_practice.grader.staff.intake.lms import LmsName, parse_name
from attn_practice.grader.staff.intake.names import is_notebook, python_stem, step_for_name

_SKIP = {"__pycache__", "node_modules", "site-packages", "venv", ".venv", "env", "__MACOSX"}
MAX_MEMBERS = 20_000
_CODE_BYTES = 32 << 20


class MemberKind(str, enum.Enum):
    FOLDER = "folder"
    ZIP = "zip"
    NOTEBOOK = "notebook"
    MODULE = "module"
    LMS_FOLDER = "student folder"  # a folder the LMS named for the student (Moodle)
    LMS_FILES = "named student"  # files the LMS named for the student, side by side


@dataclass
class Member:
    """One student's submission inside a class folder."""

    label: str  # what the report calls it
    paths: list[Path] = field(default_factory=list)  # one folder/zip/file, or one student's LMS files
    kind: MemberKind = MemberKind.FOLDER  # how the one line counts it
    student: str = ""  # the student's name, when an LMS name gives it
    lms: str = ""  # the LMS whose names say so

    @property
    def counted_as(self) -> str:
        return f"{self.lms}{' ' if self.kind is MemberKind.LMS_FOLDER else '-'}{self.kind.value}" if self.lms \
            else self.kind.value


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return sorted((e for e in it if not e.name.startswith((".", "._")) and e.name not in _SKIP),
                          key=lambda e: e.name)
    except OSError:
        return []


def _steps_in_code(path: str) -> frozenset[str]:
    """Steps whose function a module or notebook defines (by its `def` lines; nothing is run)."""
    data = read_regular_file(path, _CODE_BYTES)
    if data is None:
        return frozenset()
    found = set()
    for ex in load_catalog():
        if re.search(rb"def\s+" + ex.function.encode() + rb"\s*\(", data):
            found.add(ex.id)
    return frozenset(found)


def _kind_of_file(name: str) -> MemberKind | None:
    low = name.lower()
    if is_notebook(name):
        return MemberKind.NOTEBOOK
    if low.endswith(".zip"):
        return MemberKind.ZIP
    if python_stem(name) is not None or low.endswith(".txt"):
        return MemberKind.MODULE
    return None


def _stem(name: str) -> str:
    low = name.lower()
    for suffix in (".ipynb.json", ".ipynb.txt", ".ipynb", ".py.txt", ".py", ".txt"):
        if low.endswith(suffix):
            return low[: -len(suffix)]
    return low


def split_class(folder: Path, *, alone: bool = True) -> list[Member] | None:
    """The submissions in a class folder; None when `folder` is one submission.

    Two folders or zips make a class when `folder` is the only argument (`grade subs/`); beside
    other arguments (`grade subs/*`: the class is already split) it takes three, and so do
    notebooks and modules alone (two are more often one student's two versions)."""
    entries = _entries(folder)
    lms = {e.name: parse_name(e.name) for e in entries}
    students = {n.student for n in lms.values() if n is not None}
    if len(students) >= 2:
        return _by_lms(folder, entries, lms)
    if students:  # one student's LMS download (attempts side by side): one submission
        return None
    catalog = load_catalog()
    if any(e.is_file(follow_symlinks=False) and step_for_name(e.name, catalog) for e in entries):
        return None
    items: list[tuple[Member, frozenset[str]]] = []
    stems: dict[str, int] = {}
    for e in entries:
        member, steps = _item(folder, e)
        if member is None:
            continue
        if member.kind in (MemberKind.NOTEBOOK, MemberKind.MODULE):
            stem = _stem(e.name)
            if stem in stems:  # a notebook and its .py export: one piece of work
                first = items[stems[stem]]
                items[stems[stem]] = (first[0], first[1] | steps)
                continue
            stems[stem] = len(items)
        items.append((member, steps))
    code_only = all(m.kind in (MemberKind.NOTEBOOK, MemberKind.MODULE) for m, _ in items)
    if len(items) < (2 if alone and not code_only else 3) or _disjoint([steps for _, steps in items]):
        return None
    return _with_no_work(folder, entries, [m for m, _ in items])


def _handed_in(path: str) -> bool:
    """A folder holds something a student handed in (any file that is not OS litter)."""
    for _root, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in _SKIP]
        if any(not f.startswith((".", "._")) for f in files):
            return True
    return False


def _with_no_work(folder: Path, entries: list[os.DirEntry[str]], members: list[Member]) -> list[Member]:
    """Nobody vanishes: once `folder` is a class, a student folder holding files but no work (a PDF
    alone, a .docx) is still a student, graded as its own row (every step missing, saying what was
    found) rather than dropped from the report and the count."""
    taken = {os.path.normpath(p) for m in members for p in m.paths}
    for e in entries:
        if os.path.normpath(e.path) not in taken and e.is_dir(follow_symlinks=False) and _handed_in(e.path):
            members.append(Member(os.path.join(str(folder), e.name), [Path(e.path)]))
    members.sort(key=lambda m: m.label)
    return members[:MAX_MEMBERS]


def _item(folder: Path, e: os.DirEntry[str]) -> tuple[Member | None, frozenset[str]]:
    label = os.path.join(str(folder), e.name)
    if e.is_dir(follow_symlinks=False):
        from attn_practice.grader.staff.locate import find_work

        rec = find_work(Path(e.path)).recognised
        if not (rec.anything or rec.zips):
            return None, frozenset()
        return Member(label, [Path(e.path)]), frozenset(rec.chosen) or frozenset({"zip:" + e.name})
    if not e.is_file(follow_symlinks=False):
        return None, frozenset()
    kind = _kind_of_file(e.name)
    if kind is MemberKind.ZIP:
        return Member(label, [Path(e.path)], kind), frozenset({"zip:" + e.name})
    if kind is not None:
        steps = _steps_in_code(e.path)
        if steps:
            return Member(label, [Path(e.path)], kind), steps
    return None, frozenset()


def _disjoint(sets: list[frozenset[str]]) -> bool:
    """Each part holds different steps: one piece of work, spread out."""
    seen: set[str] = set()
    for s in sets:
        if seen & s:
            return False
        seen |= s
    return True


def _by_lms(folder: Path, entries: list[os.DirEntry[str]], lms: dict[str, LmsName | None]) -> list[Member]:
    groups: dict[str, Member] = {}
    out: list[Member] = []
    online: list[tuple[str, Member]] = []  # Moodle online-text folders, kept for a student with nothing else
    with_folder: set[str] = set()
    for e in entries:
        name = lms[e.name]
        if name is None:  # not named by the LMS: its own submission, if it holds work
            member, _ = _item(folder, e)
            if member is not None:
                out.append(member)
            elif e.is_dir(follow_symlinks=False) and _handed_in(e.path):
                out.append(Member(os.path.join(str(folder), e.name), [Path(e.path)]))
            continue
        if e.is_dir(follow_symlinks=False):
            member = Member(os.path.join(str(folder), e.name), [Path(e.path)], MemberKind.LMS_FOLDER,
                            name.person, name.lms.value)
            if name.original == "" and "onlinetext" in e.name:
                online.append((name.student, member))  # Moodle's online text: no files, most often
                continue
            with_folder.add(name.student)
            out.append(member)
            continue
        key = name.student
        if key not in groups:
            groups[key] = Member(os.path.join(str(folder), key), [], MemberKind.LMS_FILES, name.person,
                                 name.lms.value)
            out.append(groups[key])
        groups[key].paths.append(Path(e.path))
    # A student who handed in only online text is still a student: a row saying what was found.
    out += [m for student, m in online
            if student not in groups and student not in with_folder and _handed_in(str(m.paths[0]))]
    return [m for m in out if m.paths][:MAX_MEMBERS]


def class_line(folder: str, members: list[Member]) -> str:
    """The one line that says a folder was graded as a class."""
    kinds = Counter(m.counted_as for m in members)
    parts = ", ".join(f"{n} {k}{'s' if n > 1 and not k.endswith('s') else ''}" for k, n in kinds.most_common())
    return (f"{folder} holds a class, not one submission: graded {len(members)} submissions, each on its "
            f"own row ({parts}); give one of them to grade it alone")


__all__ = ["Member", "MemberKind", "class_line", "split_class"]
