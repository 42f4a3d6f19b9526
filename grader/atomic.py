"""Atomic file writes: readers see the old file or the new one, never half.

The one implementation used for learner files, the state file, the results
cache, the example store, generated CI set-ups and report files.

An atomic write *replaces* its target by a rename, so pointed at a device
node, a FIFO or a folder (`--out /dev/null`, run as root) it would put a
regular file where `/dev/null` was, for every process on the machine. It
refuses any existing target that is not a regular file (a symbolic link is
replaced itself, never what it points at). A path a *user* names
(`--out`) goes through `write_output`, which writes through a link or into
a device in place and never replaces either.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


class NotRegularFile(IsADirectoryError):
    """An atomic write was pointed at a device, FIFO, socket or folder: it would be replaced."""


def check_replaceable(path: str | os.PathLike[str]) -> None:
    """Raise NotRegularFile unless `path` is absent, a regular file or a symbolic link."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise NotRegularFile(f"{os.fspath(path)} is not a regular file; refusing to replace it")


def write_atomic(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> None:
    """Write via a temp file in the same folder (rename is atomic only within one filesystem).

    `mode` defaults to the permissions of the file being replaced, else the
    umask's default: mkstemp's 0600 would make a learner's files look odd.
    """
    path = Path(path)
    check_replaceable(path)
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
        check_replaceable(path)  # again: a device may have been put there meanwhile
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_output(path: str | os.PathLike[str], data: str | bytes, *, mode: int | None = None) -> None:
    """A file the user named (`--out`): atomically when it is a plain regular file (or new);
    otherwise written in place *through* what is there, never replacing it.

    `/dev/null` and FIFOs are written without truncation; a symbolic link
    (`/dev/stdout` -> `/proc/self/fd/1`, a link into another folder) is
    followed and its target truncated and written, so the link survives; a
    folder is refused. Replacing such a path instead would, as root, put a
    regular file where `/dev/stdout` or `/dev/null` was for the whole machine.
    """
    target = os.fspath(path)
    try:
        lst = os.lstat(target)
    except FileNotFoundError:
        lst = None
    if lst is None or stat.S_ISREG(lst.st_mode):
        write_atomic(path, data, mode=mode)
        return
    st = os.stat(target)
    if stat.S_ISDIR(st.st_mode):
        raise NotRegularFile(f"{target} is a folder")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC | (os.O_TRUNC if stat.S_ISREG(st.st_mode) else 0)
    fd = os.open(target, flags)  # never O_CREAT: what is there stays what it is
    try:
        view = memoryview(raw)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def output_problem(path: Path) -> str | None:
    """Why `write_output(path, ...)` could not succeed, or None: checked before work is done for it."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        return f"{path}: {exc.strerror or exc}"
    if st is not None and stat.S_ISDIR(st.st_mode):
        return f"{path} is a folder; give a file name"
    if st is not None and (stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
        return None  # /dev/stdout, a pipe: written in place
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return f"{path}: the folder {parent} does not exist"
    if not os.access(parent, os.W_OK | os.X_OK) or (st is not None and not os.access(path, os.W_OK)):
        return f"{path}: not writable (check the permissions of {parent})"
    return None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
