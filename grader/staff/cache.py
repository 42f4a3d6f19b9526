"""A results cache for re-grading a class.

Grading is deterministic (CONTRACT §4: the same submission graded twice gives
the same result), so a report can be reused whenever the submission's bytes,
the grader, the course and the examples' secret are unchanged. The key hashes
exactly those (the submission through the one walker, `sandbox.submission`:
every byte of everything a sandbox could import, and more); the
path is deliberately *not* in the key, so a report is re-labelled with the
path given this time (two identical submissions share one entry).

Entries are written to a temp file and renamed into place, so an interrupted
run leaves no partial entry; an entry that does not parse is deleted and
treated as a miss, never trusted.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from attn_practice import __version__
from attn_practice.grader.atomic import write_atomic
from attn_practice.grader.paths import PACKAGE_ROOT
from attn_practice.grader.results import GradeReport, Status
from attn_practice.grader.sandbox.submission import digest

CACHE_FORMAT = 2  # 2: whole files, __pycache__ and links by name in the key; the examples' secret


def default_directory() -> Path:
    """`$ATTN_PRACTICE_CACHE`, else `$XDG_CACHE_HOME/attn-practice/results`, else ~/.cache/..."""
    if env := os.environ.get("ATTN_PRACTICE_CACHE"):
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attn-practice" / "results"


def _frame(h: Any, *parts: str) -> None:
    """Length-prefixed fields, so no two different inputs hash the same bytes."""
    for part in parts:
        data = part.encode("utf-8", "surrogateescape")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)


def submission_digest(submission_dir: str | os.PathLike[str]) -> str | None:
    """The submission walker's digest (every byte the sandbox could import, and more); None: too big."""
    return digest(submission_dir)


@functools.cache
def grader_fingerprint() -> str:
    """The package version plus a hash of the grader's own source and course files.

    An editable install keeps one version number while its code changes; hashing
    the sources means a cache never serves a report the current grader would not
    produce. Computed once per process (the files do not change under it).
    """
    package = PACKAGE_ROOT
    h = hashlib.sha256()
    _frame(h, __version__)
    for sub in ("grader", "reference", "exercises"):
        for path in sorted((package / sub).rglob("*")):
            if path.suffix in (".py", ".yaml", ".yml", ".ini") and "__pycache__" not in path.parts:
                _frame(h, path.relative_to(package).as_posix())
                h.update(hashlib.sha256(path.read_bytes()).digest())
    return f"{__version__}+{h.hexdigest()[:16]}"


def cacheable(report: GradeReport) -> bool:
    """Whether a report may be reused: not if it may owe something to luck.

    A timeout can come from a loaded machine, and a whole-submission error or
    a step the grader itself failed on (CONTRACT 4.4) from the grader's own
    environment; all are re-graded next time.
    """
    if report.error or report.grader_failed:
        return False
    return not any(s.status is Status.TIMEOUT for s in report.steps)


class ResultsCache:
    """GradeReports on disk, keyed by what determines them."""

    def __init__(self, directory: str | os.PathLike[str] | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()

    def key(self, submission_dir: str | os.PathLike[str], *, grader_version: str,
            course_fingerprint: str, examples: str = "public") -> str | None:
        """The entry for this submission, grader, course and examples' secret (`secret_tag`).

        None when the submission cannot be keyed (too large or too deep for the
        walker to see whole): it is graded afresh each time, never cached.
        """
        sub = submission_digest(submission_dir)
        if sub is None:
            return None
        h = hashlib.sha256()
        _frame(h, f"attn-practice-cache/{CACHE_FORMAT}", grader_version, course_fingerprint, examples, sub)
        return h.hexdigest()

    def path(self, key: str) -> Path:
        if len(key) != 64 or any(c not in "0123456789abcdef" for c in key):
            raise ValueError(f"not a cache key: {key!r}")
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str, *, submission: str | None = None) -> GradeReport | None:
        """The cached report (re-labelled `submission` when given), or None.

        Pass the submission path as given on this run: the cached report holds
        whatever path it was first graded under.
        """
        path = self.path(key)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.get("format") != CACHE_FORMAT or data.get("key") != key:
                raise ValueError("stale or misplaced entry")
            report = GradeReport.from_dict(data["report"])
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            path.unlink(missing_ok=True)
            return None
        if submission is not None:
            report = dataclasses.replace(report, submission=submission)
        return report

    def put(self, key: str, report: GradeReport) -> bool:
        """Store a report atomically; False (nothing stored) when it is not `cacheable`."""
        if not cacheable(report):
            return False
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": CACHE_FORMAT, "key": key, "report": report.to_dict()},
                          ensure_ascii=True)
        write_atomic(path, text)
        return True

    def clear(self) -> int:
        """Remove every entry (and stray temp files); return how many files went."""
        removed = 0
        if not self.directory.is_dir():
            return 0
        for path in self.directory.glob("*/*"):
            if path.is_file() and (path.suffix == ".json" or path.name.endswith(".tmp")):
                path.unlink(missing_ok=True)
                removed += 1
        return removed
