"""Atomic file writes: readers see the old file or the new one, never half.

The one implementation used for learner files, the state file, the results
cache, the example store, generated CI set-ups and report files.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> None:
    """Write via a temp file in the same folder (rename is atomic only within one filesystem).

    `mode` defaults to the permissions of the file being replaced, else the
    umask's default: mkstemp's 0600 would make a learner's files look odd.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if mode is None:
        try:
            mode = os.stat(path).st_mode & 0o777
        except OSError:
            mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        try:
            os.fchmod(fd, mode)
        except (OSError, AttributeError):
            pass
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
