"""Unpacking a student's `.zip` in the trusted process: bytes only, inside a temp folder.

A zip is learner input. Its names may climb out of the folder (`../x`,
`/etc/x`, `C:\\x`), its members may be links, its declared sizes may lie or
be huge (a 2 GiB member, a 1000:1 bomb), it may hold a million members. So
the whole archive is refused, with a sentence a person can act on, when any
member would land outside the folder, is a link, or the archive is a bomb
(declared total over MAX_TOTAL_BYTES, a member compressed more than
MAX_RATIO to 1, more than MAX_MEMBERS members); a single member over
MAX_MEMBER_BYTES is left out with a note. Sizes are also counted while
reading, never trusted from the header. Nothing is imported or executed:
members are written as bytes, with O_EXCL|O_NOFOLLOW, into a folder this
module has just created.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from attn_practice.grader.sandbox.submission import read_regular_file

MAX_ARCHIVE_BYTES = 64 << 20  # the .zip file itself
MAX_MEMBERS = 10_000
MAX_MEMBER_BYTES = 8 << 20  # one member, uncompressed
MAX_TOTAL_BYTES = 128 << 20  # all members together, uncompressed
MAX_RATIO = 200  # uncompressed : compressed, for members over RATIO_FLOOR bytes
RATIO_FLOOR = 1 << 20
MAX_NAME_PARTS = 32
SKIP_PARTS = frozenset({"__MACOSX", ".git", "__pycache__"})


class ArchiveRefused(ValueError):
    """The archive as a whole is not unpacked; the message says why, for staff and student."""

    word = "refused"  # how a listing of what was found shows it: "attention.zip (refused: ...)"


class ArchiveUnreadable(ArchiveRefused):
    """Not a zip at all, or a damaged one (no attack: it just cannot be read)."""

    word = "unreadable"


@dataclass
class Unpacked:
    root: Path
    notes: list[str] = field(default_factory=list)  # members left out, and why


def _member_parts(info: zipfile.ZipInfo) -> tuple[str, ...]:
    """The member's path as safe parts, or ArchiveRefused naming it."""
    raw = info.filename
    shown = raw[:120]
    if "\x00" in raw:
        raise ArchiveRefused(f"member {shown!r} has a NUL byte in its name")
    name = raw.replace("\\", "/")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ArchiveRefused(f"member {shown!r} has an absolute name")
    parts = tuple(p for p in PurePosixPath(name).parts if p not in ("", "."))
    if ".." in parts:
        raise ArchiveRefused(f"member {shown!r} would be written outside the folder (zip-slip)")
    if len(parts) > MAX_NAME_PARTS:
        raise ArchiveRefused(f"member {shown!r} is nested more than {MAX_NAME_PARTS} folders deep")
    return parts


def _is_link(info: zipfile.ZipInfo) -> bool:
    mode = info.external_attr >> 16
    return info.create_system == 3 and stat.S_ISLNK(mode)


def check(zf: zipfile.ZipFile, archive_bytes: int) -> None:
    """Refuse the whole archive before writing anything (see the module docstring)."""
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ArchiveRefused(f"it has {len(infos)} members (at most {MAX_MEMBERS} are unpacked)")
    total = 0
    for info in infos:
        _member_parts(info)
        if _is_link(info):
            raise ArchiveRefused(f"member {info.filename[:120]!r} is a symbolic link")
        if info.file_size > MAX_TOTAL_BYTES:
            raise ArchiveRefused(f"member {info.filename[:120]!r} declares {_size(info.file_size)} "
                                 f"(at most {_size(MAX_TOTAL_BYTES)} in all are unpacked)")
        if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ArchiveRefused(f"member {info.filename[:120]!r} expands {info.file_size // max(info.compress_size, 1)}"
                                 f" to 1 (a zip bomb; at most {MAX_RATIO} to 1 is unpacked)")
        total += info.file_size
    if total > MAX_TOTAL_BYTES:
        raise ArchiveRefused(f"its members declare {_size(total)} in all (at most {_size(MAX_TOTAL_BYTES)})")


def _size(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}"
    return f"{n} bytes"


def unpack(archive: Path, dest: Path) -> Unpacked:
    """Unpack `archive` into the new folder `dest` (which must not exist), or ArchiveRefused."""
    data = read_regular_file(str(archive), MAX_ARCHIVE_BYTES)
    if data is None:
        raise ArchiveUnreadable(f"it is not a readable regular file under {_size(MAX_ARCHIVE_BYTES)}")
    import io

    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ArchiveUnreadable(f"it is not a readable zip archive ({exc})") from None
    with zf:
        check(zf, len(data))
        dest.mkdir(mode=0o700)
        out = Unpacked(dest)
        written = 0
        for info in zf.infolist():
            parts = _member_parts(info)
            if not parts or any(p in SKIP_PARTS or p.startswith("._") for p in parts):
                continue
            if info.is_dir():
                _make_dirs(dest, parts)
                continue
            if info.file_size > MAX_MEMBER_BYTES:
                out.notes.append(f"{'/'.join(parts)} left out: {_size(info.file_size)} "
                                 f"(members over {_size(MAX_MEMBER_BYTES)} are not unpacked)")
                continue
            try:
                body = _read_member(zf, info, min(MAX_MEMBER_BYTES, MAX_TOTAL_BYTES - written))
            except ArchiveRefused:
                raise
            except (zipfile.BadZipFile, RuntimeError, OSError, ValueError, EOFError,
                    NotImplementedError) as exc:  # encrypted, bad CRC, unknown compression
                out.notes.append(f"{'/'.join(parts)} left out: unreadable ({exc})")
                continue
            written += len(body)
            folder = _make_dirs(dest, parts[:-1])
            try:
                fd = os.open(folder / parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600)
            except OSError as exc:  # a duplicate name, a name the filesystem refuses
                out.notes.append(f"{'/'.join(parts)} left out: {exc.strerror or exc}")
                continue
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            _set_mtime(folder / parts[-1], info)
        return out


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytes:
    """At most `limit` bytes, counted as read (a header may understate the size)."""
    with zf.open(info) as fh:
        body = fh.read(limit + 1)
    if len(body) > limit:
        raise ArchiveRefused(f"member {info.filename[:120]!r} holds more than its header declares "
                             "or than the limits allow (a zip bomb)")
    return body


def _make_dirs(dest: Path, parts: tuple[str, ...]) -> Path:
    folder = dest
    for part in parts:
        folder = folder / part
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            if folder.is_symlink() or not folder.is_dir():
                raise ArchiveRefused(f"{'/'.join(parts)} is both a file and a folder") from None
    return folder


def _set_mtime(path: Path, info: zipfile.ZipInfo) -> None:
    """Keep the member's own time: the two-versions rule compares modification times."""
    import time

    try:
        stamp = time.mktime((*info.date_time, 0, 0, -1))
        os.utime(path, (stamp, stamp), follow_symlinks=False)
    except (OverflowError, ValueError, OSError):
        pass


__all__ = ["ArchiveRefused", "ArchiveUnreadable", "MAX_MEMBERS", "MAX_MEMBER_BYTES", "MAX_TOTAL_BYTES", "Unpacked", "unpack"]
