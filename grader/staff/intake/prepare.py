"""Turning each submission argument into a folder of real step files to grade.

An argument may be a folder, a `.zip`, a `.ipynb` notebook or a single `.py`
module (CONTRACT 4.5). Archives are unpacked (bytes only, `archive`), the
folder holding the work is found (`staff.locate`), and each step's source is
chosen (`recognise`). When every step is the learner's own file under its
own name, the folder is graded as it is. Otherwise a copy is made in a
temp folder: the learner's importable files plus generated step files
(`step3_softmax.py` holding `softmax` and what it uses), and that copy is
what the sandbox gets, so learner code still runs only there. Every choice
that was not the plain one becomes a warning on the report, and a step with
nothing recognised gets a message saying what was found.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType

from attn_practice.grader.results import GradeReport, Status, StepResult
from attn_practice.grader.sandbox.submission import (
    copy_submission,
    read_regular_file,
    sandbox_files,
)
from attn_practice.grader.staff.intake.archive import ArchiveRefused, unpack
from attn_practice.grader.staff.intake.recognise import Recognised, SourceKind

MAX_NESTED_ARCHIVES = 2  # a zip in a zip (in a folder) is opened; deeper is not
SUBMISSION_SUFFIXES = (".zip", ".ipynb", ".py")


@dataclass
class Prepared:
    label: str  # the argument as given: what reports call the submission
    path: Path  # the folder graded
    graded_path: str = ""  # a real subfolder of the argument, when the work sat one level down
    warnings: list[str] = field(default_factory=list)
    missing: str = ""  # nothing recognised: the steps' message; else what was found (listed per step)
    nothing: bool = False  # nothing recognised at all
    refused: str = ""  # set when the argument was an archive that could not be unpacked: why
    #: step id -> (the learner's file it was graded from, whether its line numbers still hold)
    sources: dict[str, tuple[str, bool]] = field(default_factory=dict)

    def finish(self, report: GradeReport) -> GradeReport:
        """The graded report with this submission's warnings and 'what was found' messages."""
        steps = tuple(self._step(s) for s in report.steps)
        return replace(report, steps=steps, warnings=[*report.warnings, *self.warnings])


    def _step(self, s: StepResult) -> StepResult:
        if s.status is Status.MISSING and self.missing:
            if self.nothing:
                return replace(s, error=self.missing)
            what = f" (nor a module or notebook defining {s.function})" if s.function else ""
            return replace(s, error=f"no {s.file or s.id}{what}; found: {self.missing}")
        if s.id in self.sources:  # point annotations at the learner's own file
            rel, lines_hold = self.sources[s.id]
            return replace(s, file=rel, line=s.line if lines_hold else 0)
        return s


class Intake:
    """Prepares arguments in a private temp folder, removed on exit (with everything unpacked)."""

    def __init__(self) -> None:
        self.tmp = Path(tempfile.mkdtemp(prefix="attn-intake-"))
        self._slots = itertools.count()

    def __enter__(self) -> Intake:
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def slot(self) -> Path:
        return self.tmp / f"s{next(self._slots)}"

    def prepare(self, arg: Path) -> Prepared | None:
        """The submission behind one argument; None for a plain file that is not one (skipped)."""
        label = str(arg)
        if arg.is_dir():
            return self._folder(label, arg, real=True)
        suffix = arg.suffix.lower()
        if suffix not in SUBMISSION_SUFFIXES and not _looks_like_zip(arg):
            return None
        if suffix != ".ipynb" and suffix != ".py" and _looks_like_zip(arg):
            return self._archive(label, arg, depth=1)
        holder = self.slot()  # a notebook or module on its own: a folder of one file
        holder.mkdir(mode=0o700)
        data = read_regular_file(str(arg), 64 << 20)
        if data is None:
            why = f"{arg.name} could not be read as a regular file under 64 MiB (a link is not followed)"
            return Prepared(label, holder, warnings=[f"{why}; nothing in it was graded"],
                            missing=f"no step file; found: {arg.name} (unreadable)", nothing=True)
        target = holder / arg.name
        target.write_bytes(data)
        stamp = os.stat(arg).st_mtime
        os.utime(target, (stamp, stamp))
        return self._folder(label, holder, real=False)

    def _archive(self, label: str, archive: Path, *, depth: int, prefix: str = "") -> Prepared:
        name = prefix + archive.name
        dest = self.slot()
        try:
            unpacked = unpack(archive, dest)
        except ArchiveRefused as exc:
            empty = self.slot()
            empty.mkdir(mode=0o700)
            return Prepared(label, empty, warnings=[f"{name} is {exc.word}: {exc}; nothing in it was graded"],
                            missing=f"no step file; found: {name} ({exc.word}: {exc})",
                            refused=f"{exc.word}: {exc}", nothing=True)
        prepared = self._folder(label, unpacked.root, real=False, depth=depth, inside=name)
        prepared.warnings[:0] = [f"inside {name}: {note}" for note in unpacked.notes]
        return prepared

    def _folder(self, label: str, folder: Path, *, real: bool, depth: int = 0, inside: str = "") -> Prepared:
        from attn_practice.grader.staff.locate import find_work

        where = find_work(folder)
        rec = where.recognised
        warnings = list(where.warnings)
        rel = os.path.relpath(where.folder, folder) if where.folder != folder else ""
        if rel and inside:
            warnings.insert(0, f"graded the folder {rel}/ inside {inside}")
        if not rec.anything and rec.zips and depth < MAX_NESTED_ARCHIVES:
            for z in rec.zips:
                shown = os.path.join(inside or rel, z.rel) if (inside or rel) else z.rel
                inner = self._archive(label, Path(z.path), depth=depth + 1, prefix=shown[: -len(z.name)])
                if inner.refused:
                    rec.found = [f"{f} ({inner.refused})" if f == z.name else f for f in rec.found]
                    warnings += inner.warnings
                    continue
                if not inner.nothing:
                    inner.warnings.insert(0, f"graded the work inside {shown}")
                    return inner
        if not rec.anything:
            what = rec.found_text()
            if inside:
                what = f"{inside} holding {what}"
            return Prepared(label, where.folder, warnings=[
                *warnings, f"nothing recognised: no step file, and no module or notebook defining the "
                           f"steps' functions; found: {what}"],
                missing=f"no step file; found: {what}", nothing=True)
        graded_path = str(where.folder) if real and rel else ""
        missing = rec.found_text()  # finish() says which file and function were looked for
        warnings += rec.warnings
        sources = {sid: (src.entry.rel, src.text is None) for sid, src in rec.chosen.items()
                   if src.kind is not SourceKind.EXACT or rec.spread}
        if rec.in_place:
            return Prepared(label, where.folder, graded_path, warnings, missing)
        return Prepared(label, self._build(rec), graded_path, warnings, missing, sources=sources)

    def _build(self, rec: Recognised) -> Path:
        """A copy of the learner's importable files plus the generated step files."""
        from attn_practice.grader.catalog import resolve_step

        work = self.slot()
        copy_submission(rec.folder, work)
        for folder in rec.helper_folders:  # steps spread over folders: each folder's helpers, first wins
            for rel, data in sandbox_files(folder).items():
                target = work / rel
                if not target.exists():
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
        for name, data in rec.extra_files.items():  # helpers a notebook writes (`%%writefile utils.py`)
            if not (work / name).exists():
                (work / name).write_bytes(data)
        for step_id, source in rec.chosen.items():
            ex = resolve_step(step_id)
            if source.text is not None:
                (work / ex.file).write_bytes(source.text)
            elif source.entry.rel != ex.file:
                data = read_regular_file(source.entry.path, 1 << 20)
                if data is not None:
                    (work / ex.file).write_bytes(data)
        return work


def _looks_like_zip(path: Path) -> bool:
    """A zip whatever its name (an LMS download called `submission`): its first bytes, read safely."""
    if path.suffix.lower() == ".zip":
        return True
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        import stat

        return stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 4) == b"PK\x03\x04"
    except OSError:
        return False
    finally:
        os.close(fd)


def prepare_all(intake: Intake, args: list[Path]) -> tuple[list[Prepared], list[str]]:
    """Every argument's submission, and the arguments skipped (plain files), in order given."""
    prepared: list[Prepared] = []
    skipped: list[str] = []
    for arg in args:
        try:
            one = intake.prepare(arg)
        except Exception as exc:  # noqa: BLE001 - one submission's shape never stops the others
            empty = intake.slot()
            empty.mkdir(mode=0o700)
            why = f"{type(exc).__name__}: {exc}"[:300]
            one = Prepared(str(arg), empty, warnings=[f"could not be read ({why}); nothing in it was graded"],
                           missing=f"no step file; the submission could not be read ({why})", nothing=True)
        if one is None:
            skipped.append(str(arg))
        else:
            prepared.append(one)
    return prepared, skipped




# ------------------------------------------------------------ what `grade` says on stderr
MAX_WARNING_LINES = 20  # on stderr; every warning is in the report itself


def skipped_warning(skipped: list[str]) -> str:
    return (f"skipped {len(skipped)} argument{'s' if len(skipped) > 1 else ''} that "
            f"{'is not a submission' if len(skipped) == 1 else 'are not submissions'} "
            "(a folder, .zip, .ipynb or .py): " + ", ".join(skipped))


def no_submission(skipped: list[str]) -> str:
    return (f"no submission folder among the arguments ({', '.join(skipped)} "
            f"{'is a file' if len(skipped) == 1 else 'are files'}); give the folders, "
            ".zip or .ipynb files that hold the work")


def warning_lines(reports: list[GradeReport]) -> list[str]:
    """The reports' warnings for stderr, one line each, at most MAX_WARNING_LINES and a count."""
    lines = [f"{r.submission}: {w}" for r in reports for w in r.warnings]
    more = len(lines) - MAX_WARNING_LINES
    return lines[:MAX_WARNING_LINES] + ([f"... and {more} more warnings: see the report's warnings"]
                                        if more > 0 else [])


__all__ = ["Intake", "Prepared", "no_submission", "prepare_all", "skipped_warning", "warning_lines"]
