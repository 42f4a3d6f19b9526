"""The one walker over a submission's files, and the three views built on it.

A submission folder is learner input: it may hold links, FIFOs, a
1,500-level tree, a million files or one huge file. `walk` is the only code
that lists it: iterative (no recursion to overflow), breadth-first (the top
level, where the step files are, is always seen first), never following a
link, and bounded in depth, entries and bytes. Three filters say what each
consumer takes from it, so their rules cannot drift apart:

- `sandbox_files`: what the sandbox may import (top-level `.py` files and
  packages up to `PACKAGE_DEPTH` deep; never `SKIP_DIRS`, dot names or links),
  copied into each sandbox by `copy_submission`.
- `digest`: what the results cache key hashes: every byte of every file the
  walk sees (a superset of the sandbox's view, `__pycache__/` included) plus
  the name and kind of every other entry; None (do not cache) when the walk
  is cut short, so a key never stands for a partly seen submission.
- `remote_payload`: what a remote (Dask) worker needs to grade it the same way.
"""

from __future__ import annotations

import collections
import enum
import hashlib
import itertools
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Folders never copied into a sandbox nor shipped to a worker (the sandbox
#: never imports bytecode: it gets sources only, and writes none).
SKIP_DIRS = frozenset({".git", "__pycache__"})
MAX_DEPTH = 32  # folder levels below the submission that any walk goes into
MAX_ENTRIES = 20_000  # entries one walk looks at, all folders together
MAX_SCAN_ENTRIES = 5000  # per folder: a folder of a million files is not read to the end
# What a sandbox gets.
PACKAGE_DEPTH = 3
MAX_COPY_BYTES = 16 * 1024 * 1024
MAX_COPY_FILES = 500
# What the cache key may hash; beyond it the submission is graded afresh every time.
MAX_HASH_BYTES = 512 * 1024 * 1024
# What one submission may ship to a remote worker. Generous next to the engine's
# own 1 MiB cap on a step file, so an oversized step file still reaches the engine
# and gets the same "too large" verdict as a local run.
MAX_FILE_BYTES = 8 << 20
MAX_TOTAL_BYTES = 64 << 20


class EntryKind(str, enum.Enum):
    FILE = "file"  # a regular file
    DIR = "dir"
    SYMLINK = "symlink"  # never followed, whatever it points at
    OTHER = "other"  # FIFO, socket, device


@dataclass(frozen=True)
class Entry:
    rel: str  # posix path relative to the submission
    path: str  # the path to open
    kind: EntryKind
    size: int  # bytes, for regular files (0 otherwise)
    depth: int  # 0 for the submission's top level

    @property
    def name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]


@dataclass
class Walk:
    entries: list[Entry] = field(default_factory=list)
    incomplete: str = ""  # why the walk stopped short ("" when it saw everything it was asked to)


def walk(root: str | os.PathLike[str], *, descend: Callable[[Entry], bool] = lambda e: True,
         max_depth: int = MAX_DEPTH, max_entries: int = MAX_ENTRIES) -> Walk:
    """Every entry under `root`, breadth-first, each folder's entries sorted by name.

    `descend(entry)` says whether to go into a folder (links are never
    followed, whatever it says). Stops, saying why in `incomplete`, past
    `max_depth` levels, `max_entries` entries, or MAX_SCAN_ENTRIES in one folder.
    """
    out = Walk()
    queue: collections.deque[tuple[str, str, int]] = collections.deque([("", os.fspath(root), 0)])
    while queue:
        prefix, folder, depth = queue.popleft()
        try:
            with os.scandir(folder) as it:
                items = list(itertools.islice(it, MAX_SCAN_ENTRIES + 1))
        except OSError:
            continue
        if len(items) > MAX_SCAN_ENTRIES:
            items = items[:MAX_SCAN_ENTRIES]
            out.incomplete = out.incomplete or f"a folder with more than {MAX_SCAN_ENTRIES} entries"
        for item in sorted(items, key=lambda e: e.name):
            if len(out.entries) >= max_entries:
                out.incomplete = out.incomplete or f"more than {max_entries} files and folders"
                return out
            entry = _entry(item, prefix, depth)
            if entry is None:
                continue
            out.entries.append(entry)
            if entry.kind is EntryKind.DIR and descend(entry):
                if depth + 1 > max_depth:
                    out.incomplete = out.incomplete or f"folders nested more than {max_depth} deep"
                else:
                    queue.append((entry.rel + "/", entry.path, depth + 1))
    return out


def _entry(item: os.DirEntry[str], prefix: str, depth: int) -> Entry | None:
    try:
        if item.is_symlink():
            kind, size = EntryKind.SYMLINK, 0
        elif item.is_dir(follow_symlinks=False):
            kind, size = EntryKind.DIR, 0
        elif item.is_file(follow_symlinks=False):
            kind, size = EntryKind.FILE, item.stat(follow_symlinks=False).st_size
        else:
            kind, size = EntryKind.OTHER, 0
    except OSError:
        return None
    return Entry(prefix + item.name, item.path, kind, size, depth)


def read_regular_file(path: str, limit: int) -> bytes | None:
    """The bytes of `path` if it is a regular file (not a link) of at most `limit` bytes.

    Opened without following links and without blocking, so a FIFO or a link
    swapped in after the walk can neither hang the grader nor reach outside.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return read_fd(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int) -> bytes | None:
    """At most `limit` bytes from `fd`, or None when it holds more (sizes are counted, not trusted)."""
    chunks, left = [], limit + 1
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    data = b"".join(chunks)
    return data if len(data) <= limit else None


# ------------------------------------------------------------ the sandbox's view
def _is_package(entry: Entry) -> bool:
    """A folder the sandbox may import from: an identifier name holding a regular __init__.py."""
    if (entry.depth >= PACKAGE_DEPTH or entry.name in SKIP_DIRS
            or entry.name.startswith(".") or not entry.name.isidentifier()):
        return False
    try:
        return stat.S_ISREG(os.lstat(os.path.join(entry.path, "__init__.py")).st_mode)
    except OSError:
        return False


def top_level_entry(root: str | os.PathLike[str], name: str) -> Entry | None:
    """The entry for one top-level name (no walk), or None if absent or not a plain name."""
    if not name or "/" in name or name in (".", ".."):
        return None
    path = os.path.join(os.fspath(root), name)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        kind = EntryKind.SYMLINK
    elif stat.S_ISDIR(st.st_mode):
        kind = EntryKind.DIR
    elif stat.S_ISREG(st.st_mode):
        kind = EntryKind.FILE
    else:
        kind = EntryKind.OTHER
    return Entry(name, path, kind, st.st_size if kind is EntryKind.FILE else 0, 0)


def importable(entry: Entry) -> bool:
    """Whether the sandbox gets this entry: a `.py` regular file at the top or inside a package."""
    return entry.kind is EntryKind.FILE and entry.name.endswith(".py") and not entry.name.startswith(".")


def sandbox_files(root: str | os.PathLike[str], first: Sequence[str] = ()) -> dict[str, bytes]:
    """{relative path: bytes} of what the sandbox may import, within MAX_COPY_BYTES/FILES.

    `first`: top-level file names taken before the budget can run out (the
    step being graded must never be crowded out by a pile of helpers).
    """
    listing = walk(root, descend=_is_package, max_depth=PACKAGE_DEPTH)
    # The named files come first, looked up by name: a folder too full to list
    # whole must not hide the step being graded.
    named = [e for e in map(lambda n: top_level_entry(root, n), first) if e is not None and importable(e)]
    wanted = named + [e for e in listing.entries if importable(e) and e.rel not in first]
    out: dict[str, bytes] = {}
    budget = MAX_COPY_BYTES
    for entry in wanted:
        if len(out) >= MAX_COPY_FILES:
            break
        data = read_regular_file(entry.path, budget)
        if data is None:
            continue
        budget -= len(data)
        out[entry.rel] = data
    return out


def copy_submission(src: Path, dst: Path, first: Sequence[str] = ()) -> None:
    """Copy what the sandbox may import (see `sandbox_files`) into a new folder `dst`."""
    dst.mkdir(parents=True)
    for rel, data in sandbox_files(src, first).items():
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def write_files(dst: Path, files: dict[str, bytes]) -> None:
    """In-memory step files (a notebook's cells) into a new folder: top-level `.py` names only."""
    dst.mkdir(parents=True)
    for name, data in files.items():
        if "/" in name or name.startswith(".") or not name.endswith(".py"):
            continue
        (dst / name).write_bytes(data)


# ------------------------------------------------------------ the cache's view
def _frame(h: Any, *parts: str) -> None:
    """Length-prefixed fields, so no two different listings hash the same bytes."""
    for part in parts:
        data = part.encode("utf-8", "surrogateescape")
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)


def digest(root: str | os.PathLike[str]) -> str | None:
    """sha256 over every entry's path and kind and every file's every byte; None if too big.

    Covers all the sandbox can import and more (`__pycache__/`, data files,
    links by name), so two submissions with one key are graded alike. Only
    `.git/` is left out: nothing under a dot name ever reaches a sandbox.
    """
    listing = walk(root, descend=lambda e: e.name != ".git")
    if listing.incomplete:
        return None
    h = hashlib.sha256()
    total = 0
    for entry in sorted(listing.entries, key=lambda e: e.rel):
        if entry.name == ".git":
            continue
        if entry.kind is not EntryKind.FILE:
            _frame(h, entry.rel, entry.kind.value)
            continue
        total += entry.size
        if total > MAX_HASH_BYTES:
            return None
        _frame(h, entry.rel, "file", _file_digest(entry.path))
    return h.hexdigest()


def _file_digest(path: str) -> str:
    """sha256 of the whole file (streamed), or "unreadable" (then no sandbox gets it either)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "unreadable"
    h = hashlib.sha256()
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "not a regular file"
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_HASH_BYTES:
                return f"larger than {MAX_HASH_BYTES}"
            h.update(chunk)
    except OSError:
        return "unreadable"
    finally:
        os.close(fd)
    return h.hexdigest()


# ------------------------------------------------------------ a remote worker's view
def remote_payload(root: str | os.PathLike[str], *, max_file_bytes: int = MAX_FILE_BYTES,
                   max_total_bytes: int = MAX_TOTAL_BYTES, first: Sequence[str] = ()) -> dict[str, Any]:
    """`{"files": {rel: bytes}, "skipped": [rel...], "special": {rel: kind}, "incomplete": str}`.

    `first`: top-level names (the step files) shipped whatever the walk saw.

    Regular files outside SKIP_DIRS, each at most `max_file_bytes` and
    `max_total_bytes` in all (the rest listed in `skipped`). Entries that are
    not regular files still change a grade ("step1_scores.py is a symbolic
    link / a directory"), so their kind travels too, never a link's target.
    """
    listing = walk(root, descend=lambda e: e.name not in SKIP_DIRS)
    named = [e for e in map(lambda n: top_level_entry(root, n), first) if e is not None]
    files: dict[str, bytes] = {}
    skipped: list[str] = []
    special: dict[str, str] = {}
    total = 0
    seen: set[str] = set()
    for entry in named + listing.entries:  # `first` (the step files) even past the walk's bounds
        if entry.rel in seen:
            continue
        seen.add(entry.rel)
        if entry.kind is EntryKind.DIR:
            if entry.name.endswith(".py"):
                special[entry.rel] = "dir"
            continue
        if entry.kind is not EntryKind.FILE:
            special[entry.rel] = entry.kind.value
            continue
        if entry.size > max_file_bytes or total + entry.size > max_total_bytes:
            skipped.append(entry.rel)
            continue
        data = read_regular_file(entry.path, max_file_bytes)
        if data is None:
            special[entry.rel] = EntryKind.OTHER.value
            continue
        files[entry.rel] = data
        total += len(data)
    return {"files": files, "skipped": sorted(skipped), "special": special,
            "incomplete": listing.incomplete}


__all__ = ["SKIP_DIRS", "Entry", "EntryKind", "Walk", "copy_submission", "digest", "read_fd", "read_regular_file",
           "remote_payload", "sandbox_files", "top_level_entry", "walk", "write_files"]
