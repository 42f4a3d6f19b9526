"""The names learning-management systems give files in a bulk download, read back.

Each pattern (documented for staff in docs/handins.md):

- Canvas, "Download Submissions": `name_userid_attachmentid_file`, or
  `name_LATE_userid_attachmentid_file` for a late one (`smithjane_4411_98012_step1_scores.py`).
  The attachment id grows with every upload, so the larger one is the later
  attempt; a re-upload of the same file name gets `-1`, `-2` before its suffix.
- Moodle, "Download all submissions": `Full Name_participantid_assignsubmission_file_` as a
  folder per student, or the same prefix on every file when not in folders
  (`Ada Lovelace_12345_assignsubmission_file_step1_scores.py`).
- Blackboard, "Assignment File Download" (all attempts):
  `Assignment_username_attempt_YYYY-MM-DD-HH-MM-SS_file`, beside a receipt
  `Assignment_username_attempt_YYYY-MM-DD-HH-MM-SS.txt`; the date is the attempt's.

`parse_name` gives the student, the attempt (comparable within one LMS) and
the file name the student gave, so the rest of the intake judges that name.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Lms(str, enum.Enum):
    CANVAS = "Canvas"
    MOODLE = "Moodle"
    BLACKBOARD = "Blackboard"


@dataclass(frozen=True)
class LmsName:
    lms: Lms
    student: str  # the key that groups one student's files: "smithjane_4411", "jlopez"
    person: str  # how to name the student: "smithjane", "Ada Lovelace", "jlopez"
    original: str  # the file name the student gave ("" for a Moodle folder, a Blackboard receipt)
    attempt: tuple[int, ...] = ()  # larger is later; () when the LMS keeps one attempt only
    attempt_text: str = ""  # the attempt as the name shows it
    receipt: bool = False  # Blackboard's per-attempt .txt receipt (not the student's work)


_BLACKBOARD = re.compile(r"^(?P<assignment>.+)_(?P<user>[^_\s]+)_attempt_"
                         r"(?P<date>\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2})(?:_(?P<file>.+)|(?P<receipt>\.txt))$")
_MOODLE = re.compile(r"^(?P<name>[^_]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>file|onlinetext)_(?P<file>.*)$")
_CANVAS = re.compile(r"^(?P<name>[^_\s]+)_(?:(?P<late>LATE)_)?(?P<uid>\d+)_(?P<aid>\d+)_(?P<file>.+)$")
_REUPLOAD = re.compile(r"-(\d+)(?=\.[^.]+$|$)")


def parse_name(name: str) -> LmsName | None:
    """What an LMS wrote into a file or folder name, or None for a name no LMS pattern fits."""
    m = _BLACKBOARD.match(name)
    if m:
        date = m.group("date")
        return LmsName(Lms.BLACKBOARD, m.group("user"), m.group("user"), m.group("file") or "",
                       tuple(int(x) for x in date.split("-")), f"attempt {date}",
                       receipt=bool(m.group("receipt")))
    m = _MOODLE.match(name)
    if m:
        return LmsName(Lms.MOODLE, f"{m.group('name')}_{m.group('id')}", m.group("name"), m.group("file"))
    m = _CANVAS.match(name)
    if m:
        original = m.group("file")
        again = _REUPLOAD.search(original)
        upload = int(again.group(1)) if again else 0
        return LmsName(Lms.CANVAS, f"{m.group('name')}_{m.group('uid')}", m.group("name"), original,
                       (int(m.group("aid")), upload),
                       f"upload {m.group('aid')}" + (f" (re-upload -{upload})" if upload else ""))
    return None


def original_name(name: str) -> str:
    """The name the student gave the file (the LMS prefix taken off), else `name` itself."""
    parsed = parse_name(name)
    return parsed.original if parsed is not None and parsed.original else name


__all__ = ["Lms", "LmsName", "original_name", "parse_name"]
