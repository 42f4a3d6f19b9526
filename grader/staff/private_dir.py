"""Folders and files only the grading user may read or change.

The results cache and the example store hold every secret-drawn input and
every report: readable, they let a student harvest the hidden examples;
writable by someone else (a shared or pre-created `/tmp` path), they let a
forged entry turn a failed step into a pass. So every such folder is
created 0700 and checked on every use: it must be a real folder (not a
link), owned by the grading user, and writable by no group or other user;
its files are written 0600. A folder that fails the check is refused with a
`PrivateDirError` that says what is wrong and how to fix it (`grade` exits 2).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class PrivateDirError(Exception):
    """A folder the grader must keep private is not (another owner, group/world-writable, a link)."""


class PrivateDirUnavailable(PrivateDirError):
    """The folder could not be created at all (a read-only home): nothing unsafe about it."""


def _owner_name(uid: int) -> str:
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (KeyError, ImportError):
        return f"uid {uid}"


def check_private(path: Path, *, what: str = "cache folder") -> None:
    """Raise PrivateDirError unless `path` is a folder owned by us that no one else may write."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise PrivateDirError(f"the {what} {path} cannot be used: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise PrivateDirError(f"the {what} {path} is not a folder (a link or a file); "
                              "give a folder of your own with --cache-dir")
    if st.st_uid != os.geteuid():
        raise PrivateDirError(
            f"the {what} {path} belongs to {_owner_name(st.st_uid)}, not to the grading user "
            f"({_owner_name(os.geteuid())}): anyone who owns it could read the hidden examples or "
            "forge results. Give a folder of your own with --cache-dir")
    if st.st_mode & 0o022:
        raise PrivateDirError(
            f"the {what} {path} is writable by {'other users' if st.st_mode & 0o002 else 'its group'} "
            f"(mode {stat.S_IMODE(st.st_mode):04o}): they could forge results. "
            f"Run `chmod 700 {path}` or give another --cache-dir")
    _check_ancestors(path, what)


def _check_ancestors(path: Path, what: str) -> None:
    """Every folder above `path` must be ours or root's, and writable by others only if sticky
    (like /tmp): else its owner could move our folder away and put theirs in its place."""
    me = os.geteuid()
    for parent in Path(os.path.abspath(path)).parents:
        try:
            st = os.stat(parent)
        except OSError:
            continue
        sticky = bool(st.st_mode & stat.S_ISVTX)
        if st.st_uid not in (me, 0) or (st.st_mode & 0o022 and not sticky):
            raise PrivateDirError(
                f"the {what} {path} lies in {parent}, which {_owner_name(st.st_uid)} owns "
                f"(mode {stat.S_IMODE(st.st_mode):04o}): whoever can write there could swap the "
                "folder for theirs. Give a folder of your own with --cache-dir")


def private_dir(path: Path, *, what: str = "cache folder") -> Path:
    """`path` created 0700 if missing (parents as needed), checked, and made 0700; returned.

    A folder of ours that others could only *read* (an older cache, 0755) is
    tightened to 0700 rather than refused: nothing foreign can be in it.
    """
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise PrivateDirUnavailable(f"cannot create the {what} {path}: {exc.strerror or exc}; "
                                    "give a writable folder with --cache-dir") from None
    check_private(path, what=what)
    if stat.S_IMODE(os.lstat(path).st_mode) & 0o077:
        os.chmod(path, 0o700, follow_symlinks=False)
    return path


def open_private(path: Path) -> int | None:
    """A read-only fd on `path` if it is a regular file we own that no one else can write; else None.

    Never follows a link, never blocks on a FIFO.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        os.close(fd)
        return None
    return fd


def read_private(path: Path, limit: int = 64 << 20) -> bytes | None:
    """The bytes of `path` when `open_private` accepts it and it is at most `limit` bytes."""
    fd = open_private(path)
    if fd is None:
        return None
    from attn_practice.grader.sandbox.submission import read_fd

    try:
        return read_fd(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


__all__ = ["PrivateDirError", "PrivateDirUnavailable", "check_private", "open_private", "private_dir", "read_private"]
