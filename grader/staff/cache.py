"""A results cache for re-grading a class: one that cannot be raced, confused, read or forged.

Grading is deterministic (CONTRACT §4: the same submission graded twice gives
the same result), so a report can be reused whenever the bytes graded, the
grader, the course and the examples' secret are unchanged.

- **Raced**: the key hashes the *copy* that is graded (`staff.snapshot`: copy
  first, hash the copy, grade the copy), so bytes swapped in the submission
  during a batch can never be served under another content's key.
- **Confused**: the path is deliberately not in the key, so two identical
  submissions share an entry. A report is therefore graded and stored under
  `PLACEHOLDER` instead of any student's path (the sandbox shows that name in
  tracebacks and printed output) and `attach`ed to the submission it is
  served to on the way out: no other student's folder ever shows in it.
- **Read**: the folder is `private_dir` (0700, ours, writable by no one
  else; refused otherwise) and entries are 0600.
- **Forged**: each entry carries an HMAC over its key and body, with a key
  only the grading user can read (`.key`, 0600, in the cache folder); an
  entry that does not verify, does not parse, or is not a private regular
  file is deleted and re-graded, never trusted.

Entries are written to a temp file and renamed into place, so an interrupted
run leaves no partial entry.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

from attn_practice import __version__
from attn_practice.grader.atomic import write_atomic
from attn_practice.grader.paths import PACKAGE_ROOT
from attn_practice.grader.results import GradeReport, Status
from attn_practice.grader.sandbox.submission import digest
from attn_practice.grader.staff.private_dir import (
    PrivateDirError,
    PrivateDirUnavailable,
    private_dir,
    read_private,
)

CACHE_FORMAT = 3  # 3: authenticated entries, reports stored under PLACEHOLDER
MAGIC = f"attn-practice-cache/{CACHE_FORMAT}".encode()
KEY_FILE = ".key"
#: The name a report is graded and stored under, replaced by the real path on the way out.
PLACEHOLDER = "@attn-practice-submission@"


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


def holds_entries(directory: Path | None = None) -> bool:
    """Whether the results cache holds anything at all (entries live in two-hex-digit folders).

    Cheap, and only a guess at whether a batch will be served from it: `grade`
    starts its workers early for a class it will likely grade afresh.
    """
    root = Path(directory) if directory is not None else default_directory()
    try:
        return any(entry.is_dir() for entry in os.scandir(root))
    except OSError:
        return False


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


#: A timed-out step is re-graded alone with this many times its time limits before its
#: report may be cached: a step that still does not finish is slow by a wide margin,
#: not because the machine was busy (see `staff.timeouts`).
TIMEOUT_MARGIN = 3.0


def has_timeout(report: GradeReport) -> bool:
    return any(s.status is Status.TIMEOUT or any(t.status is Status.TIMEOUT for t in s.tests)
               for s in report.steps)


def cacheable(report: GradeReport) -> bool:
    """Whether a report may be reused: not if it may owe something to luck.

    A whole-submission error or a step the grader itself failed on (CONTRACT
    4.4) may come from the grader's own environment; a timeout from a loaded
    machine, unless it was confirmed (`extra["timeout_confirmed"]`: it also
    ran out of TIMEOUT_MARGIN times the limit, graded alone).
    """
    if report.error or report.grader_failed:
        return False
    return not has_timeout(report) or bool(report.extra.get("timeout_confirmed"))


def _map_strings(data: Any, fn: Any) -> Any:
    """`data` with `fn` applied to every string in it (a report is a few levels deep)."""
    if isinstance(data, str):
        return fn(data)
    if isinstance(data, dict):
        return {k: _map_strings(v, fn) for k, v in data.items()}
    if isinstance(data, list):
        return [_map_strings(v, fn) for v in data]
    return data


def normalise(report: GradeReport, *paths: str) -> GradeReport:
    """`report` with each of `paths` (where it was graded: a temp copy) shown as PLACEHOLDER."""
    olds = sorted({p for path in paths if path for p in (path, os.path.realpath(path))},
                  key=len, reverse=True)
    if not olds:
        return report

    def fix(text: str) -> str:
        for old in olds:
            text = text.replace(old, PLACEHOLDER)
        return text

    return GradeReport.from_dict(_map_strings(report.to_dict(), fix))


def attach(report: GradeReport, label: str) -> GradeReport:
    """A report graded (or stored) under PLACEHOLDER, as the report of the submission `label`."""
    data = _map_strings(report.to_dict(), lambda text: text.replace(PLACEHOLDER, label))
    return replace(GradeReport.from_dict(data), submission=label)


class ResultsCache:
    """GradeReports on disk, keyed by what determines them, authenticated, private."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, *,
                 regrade_timeouts: bool = False) -> None:
        self.directory = Path(directory) if directory is not None else default_directory()
        self.regrade_timeouts = regrade_timeouts
        self._secret: bytes | None = None

    def open(self) -> ResultsCache:
        """Create or check the folder (0700, ours) and its HMAC key; PrivateDirError if unsafe."""
        private_dir(self.directory)
        self._secret = self._load_secret()
        return self

    def _load_secret(self) -> bytes:
        path = self.directory / KEY_FILE
        for _ in range(3):
            data = read_private(path, limit=128)
            if data is not None and len(data.strip()) == 64:
                try:
                    return bytes.fromhex(data.strip().decode("ascii"))
                except (UnicodeDecodeError, ValueError):
                    pass
            if data is not None or path.is_symlink() or path.exists():
                path.unlink(missing_ok=True)  # damaged, or not private: a new key (old entries re-grade)
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue  # another process made it first: read theirs
            except OSError as exc:
                raise PrivateDirError(f"cannot create the cache key in {self.directory}: "
                                      f"{exc.strerror or exc}") from None
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
        raise PrivateDirError(f"cannot read or create the cache key {path}")

    def _mac(self, key: str, body: bytes) -> str:
        if self._secret is None:
            self.open()
        assert self._secret is not None
        return hmac.new(self._secret, key.encode() + b"\n" + body, hashlib.sha256).hexdigest()

    def key(self, submission_dir: str | os.PathLike[str], *, grader_version: str,
            course_fingerprint: str, examples: str = "public") -> str | None:
        """The entry for this submission, grader, course and examples' secret (`secret_tag`).

        Hash the very copy that will be graded (`staff.snapshot`), never the
        original. None when the submission cannot be keyed (too large or too
        deep for the walker to see whole): it is graded afresh, never cached.
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
        """The cached report, `attach`ed to `submission` when given (else under PLACEHOLDER), or None.

        Anything but an intact, authentic, private entry is deleted and missed.
        With `regrade_timeouts`, an entry with a timeout is missed too.
        """
        path = self.path(key)
        if not path.exists() and not path.is_symlink():
            return None
        data = read_private(path)
        try:
            if data is None:
                raise ValueError("not a private regular file")
            magic, mac, body = data.split(b"\n", 2)
            if magic != MAGIC or not hmac.compare_digest(mac.decode("ascii"), self._mac(key, body)):
                raise ValueError("forged, damaged or stale entry")
            payload = json.loads(body)
            if payload.get("key") != key:
                raise ValueError("misplaced entry")
            report = GradeReport.from_dict(payload["report"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            path.unlink(missing_ok=True)
            return None
        if self.regrade_timeouts and has_timeout(report):
            return None
        return attach(report, submission) if submission is not None else report

    def put(self, key: str, report: GradeReport) -> bool:
        """Store a `normalise`d report atomically, 0600; False (nothing stored) if not `cacheable`."""
        if not cacheable(report):
            return False
        path = self.path(key)
        private_dir(path.parent)
        body = json.dumps({"key": key, "report": report.to_dict()}, ensure_ascii=True).encode()
        write_atomic(path, MAGIC + b"\n" + self._mac(key, body).encode() + b"\n" + body, mode=0o600)
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


def examples_directory() -> Path:
    """The example store's folder (beside the default results cache), created and checked private."""
    return private_dir(default_directory().parent / "examples", what="example store")


def isolate_hypothesis(directory: Path | None = None, *, strict: bool = True) -> None:
    """Point Hypothesis's own storage (`.hypothesis/`) into a private folder, never the cwd.

    Hypothesis otherwise creates `.hypothesis/` in the current directory (for
    a CI job, often the submissions folder). Set before any test runs; spawned
    workers inherit it through the environment. Where the cache folder cannot
    be created (a read-only home), or is not private and `strict` is off
    (`--no-cache`), a private temp folder serves instead.
    """
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        return
    try:
        where = private_dir((directory or default_directory().parent) / "hypothesis",
                            what="Hypothesis folder")
    except PrivateDirError as exc:
        if strict and not isinstance(exc, PrivateDirUnavailable):
            raise
        import atexit
        import shutil
        import tempfile

        where = Path(tempfile.mkdtemp(prefix="attn-practice-hypothesis-"))
        atexit.register(shutil.rmtree, where, True)  # after the workers, which share it, are gone
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(where)


def prepare(directory: Path | None, *, use_cache: bool = True) -> None:
    """Before grading: the cache folder (when used or named), Hypothesis's folder and the
    example store, each created 0700 and checked ours; PrivateDirError (exit 2) if not.

    With `--no-cache` and no `--cache-dir`, a default folder that is not private is
    not an error: Hypothesis gets a temp folder and the examples stay in memory
    (`replay.store_path` never uses a folder that fails the check).
    """
    strict = use_cache or directory is not None
    if strict:
        private_dir(Path(directory) if directory is not None else default_directory())
    if use_cache:
        ResultsCache(directory).open()
    isolate_hypothesis(Path(directory) if directory is not None else None, strict=strict)
    try:
        examples_directory()
    except PrivateDirUnavailable:
        pass  # nowhere to keep them: the examples stay in memory (see `replay.store_path`)
    except PrivateDirError:
        if strict:
            raise
