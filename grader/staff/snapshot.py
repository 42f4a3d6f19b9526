"""Copy a submission first, then hash and grade that copy (never the original twice).

Between hashing a folder and grading it, its bytes can change (a student's
sync client, or someone racing the batch): the cache would then file the
grade of one content under the key of another. A snapshot reads every file
once, through the one submission walker's remote view (`remote_payload`:
what a remote worker needs to grade it the same way), into a private temp
folder; the cache key is the digest of that folder and the engine grades
that folder. Links, FIFOs and folders named like step files are recreated
as their kind (a dangling link, an empty FIFO, an empty folder), never
followed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.sandbox import submission as walker


def _safe(rel: str) -> PurePosixPath:
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        raise ValueError(f"unsafe path in a submission: {rel!r}")
    return p


def _parents(target: Path, made: set[Path]) -> None:
    """Create `target`'s folders once each (a mkdir is the dearest part of a copy)."""
    if target.parent not in made:
        target.parent.mkdir(parents=True, exist_ok=True)
        made.update(target.parents)


class Snapshots:
    """A private temp folder (0700) holding one copy per submission; removed on exit."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="attn-practice-graded-"))
        self._count = 0
        self._step_files = [e.file for e in load_catalog()]  # looked up by name, past any bound

    def take(self, source: str | os.PathLike[str]) -> Path:
        """A fresh copy of `source` (a folder) to hash and grade."""
        payload = walker.remote_payload(source, first=self._step_files)
        self._count += 1
        # Named after the original (reports show PLACEHOLDER, but logs and workers see this).
        dst = self.root / f"{self._count}-{(Path(source).name or 'submission')[:100]}"
        dst.mkdir(mode=0o700)
        made = {dst}
        for rel, data in payload["files"].items():
            target = dst / _safe(rel)
            _parents(target, made)
            with open(target, "xb") as f:  # never through a link: every path here is new
                f.write(data)
        for rel, kind in payload["special"].items():
            target = dst / _safe(rel)
            _parents(target, made)
            if kind == walker.EntryKind.SYMLINK.value:
                target.symlink_to("/nonexistent/attn-practice-link")
            elif kind == walker.EntryKind.DIR.value:
                target.mkdir(exist_ok=True)
            else:
                os.mkfifo(target, 0o600)
        for rel in payload["skipped"]:  # too big to copy: a `.py` keeps its size, so "too large"
            if rel.endswith(".py"):
                target = dst / _safe(rel)
                _parents(target, made)
                with open(target, "xb") as f:
                    f.truncate(walker.MAX_FILE_BYTES + 1)
        return dst

    def close(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> Snapshots:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Snapshots"]
