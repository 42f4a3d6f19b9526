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
from collections.abc import Callable
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
from attn_practice.grader.staff.intake.classes import Member
from attn_practice.grader.staff.intake.origin import Origin, origin_for, retrace
from attn_practice.grader.staff.intake.recognise import Recognised, SourceKind, needs_ipython

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
    #: step id -> where its function really is, when not the step's own file at the top
    sources: dict[str, Origin] = field(default_factory=dict)
    base: str = ""  # the learner's folder as staff see it (tracebacks of the copy point there)
    extra: dict[str, str] = field(default_factory=dict)  # e.g. the student an LMS name gives

    def finish(self, report: GradeReport) -> GradeReport:
        """The graded report with this submission's warnings and 'what was found' messages, its
        tracebacks and reproduce lines pointing at the learner's own files."""
        by_file = {s.file: self.sources[s.id] for s in report.steps if s.id in self.sources and s.file}
        steps = tuple(self._step(s, report.submission, by_file) for s in report.steps)
        extra = {**report.extra, **self.extra} if self.extra else report.extra
        return replace(report, steps=steps, warnings=[*report.warnings, *self.warnings], extra=extra)

    def _step(self, s: StepResult, label: str, by_file: dict[str, Origin]) -> StepResult:
        if s.status is Status.MISSING and self.missing:
            if self.nothing:
                return replace(s, error=self.missing)
            what = f" (nor a module or notebook defining {s.function})" if s.function else ""
            return replace(s, error=f"no {s.file or s.id}{what}; found: {self.missing}")
        base = self.base or label
        if not by_file and base == label:
            return s

        def fix(text: str) -> str:
            return retrace(text, label, base, by_file)

        origin = self.sources.get(s.id)
        tests = tuple(replace(t, message=fix(t.message), failure=None if t.failure is None else replace(
            t.failure, traceback=fix(t.failure.traceback), details=fix(t.failure.details),
            summary=fix(t.failure.summary),
            repro=origin.repro(s.function, t.failure.repro) if origin and t.failure.repro
            and not t.failure.repro.startswith("#") else t.failure.repro)) for t in s.tests)
        s = replace(s, tests=tests, error=fix(s.error), output=fix(s.output))
        if origin is not None:  # point annotations at the learner's own file (a notebook: no file line)
            line = 0 if origin.notebook else origin.line or s.line
            return replace(s, file=origin.rel, line=line)
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

    def prepare(self, arg: Path, label: str = "") -> Prepared:
        """The submission behind one argument: every argument is one, whatever it holds."""
        label = label or str(arg)
        if arg.is_dir():
            return self._folder(label, arg, real=True, base=str(arg))
        suffix = arg.suffix.lower()
        if suffix not in (".ipynb", ".py") and _looks_like_zip(arg):
            return self._archive(label, arg, depth=1, base=str(arg))
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
        return self._folder(label, holder, real=False, base=os.path.dirname(str(arg)))

    def prepare_member(self, member: Member) -> Prepared:
        """One student of a class folder: their folder, zip or file, or their LMS-named files together."""
        if len(member.paths) == 1 and (member.paths[0].is_dir() or not member.student):
            prepared = self.prepare(member.paths[0], member.label)
        else:
            holder = self.slot()  # the student's files side by side, under the names the LMS gave
            holder.mkdir(mode=0o700)
            for path in member.paths:
                data = read_regular_file(str(path), 64 << 20)
                if data is None:
                    continue
                (holder / path.name).write_bytes(data)
                stamp = os.lstat(path).st_mtime
                os.utime(holder / path.name, (stamp, stamp))
            prepared = self._folder(member.label, holder, real=False, base=str(member.paths[0].parent))
        if member.student:
            prepared.extra["student"] = member.student
        return prepared

    def _archive(self, label: str, archive: Path, *, depth: int, base: str, prefix: str = "") -> Prepared:
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
        prepared = self._folder(label, unpacked.root, real=False, depth=depth, inside=name, base=base)
        prepared.warnings[:0] = [f"inside {name}: {note}" for note in unpacked.notes]
        return prepared

    def _folder(self, label: str, folder: Path, *, real: bool, base: str, depth: int = 0,
                inside: str = "") -> Prepared:
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
                inner = self._archive(label, Path(z.path), depth=depth + 1, prefix=shown[: -len(z.name)],
                                      base=os.path.join(base, rel, z.rel) if rel else os.path.join(base, z.rel))
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
        shown = os.path.join(base, rel) if rel else base
        sources = {sid: origin_for(os.path.join(shown, src.entry.rel), src.entry.rel, src.taken or _function(sid),
                                   src.text, notebook=src.kind is SourceKind.NOTEBOOK,
                                   ipython=src.kind is not SourceKind.NOTEBOOK and needs_ipython(src.entry))
                   for sid, src in rec.chosen.items()
                   if src.kind is not SourceKind.EXACT or src.text is not None or rec.spread or rel or inside}
        if rec.in_place:
            return Prepared(label, where.folder, graded_path, warnings, missing, sources=sources, base=shown)
        return Prepared(label, self._build(rec), graded_path, warnings, missing, sources=sources, base=shown)

    def _build(self, rec: Recognised) -> Path:
        """A copy of the learner's importable files plus the generated step files."""
        from attn_practice.grader.catalog import resolve_step

        work = self.slot()
        copy_submission(rec.folder, work)
        for rel in rec.blank:  # an empty step file is no step file (its step is missing, not an error)
            (work / rel).unlink(missing_ok=True)
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


def _function(step_id: str) -> str:
    from attn_practice.grader.catalog import resolve_step

    return resolve_step(step_id).function


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


def prepare_all(intake: Intake, args: list[Path], *, classes: bool = True) -> tuple[list[Prepared], list[str]]:
    """Every argument's submission, in the order given (a class folder: each of its students,
    when `classes`), and one line per folder graded as a class."""
    from attn_practice.grader.staff.intake.classes import class_line, split_class

    prepared: list[Prepared] = []
    said: list[str] = []
    for arg in args:
        members = None
        if classes and arg.is_dir() and not arg.is_symlink():
            try:
                members = split_class(arg, alone=len(args) == 1)
            except Exception:  # noqa: BLE001 - then it is graded as one submission
                members = None
        if not members:
            prepared.append(_guarded(intake, str(arg), lambda a=arg: intake.prepare(a)))
            continue
        said.append(class_line(str(arg), members))
        for m in members:
            prepared.append(_guarded(intake, m.label, lambda m=m: intake.prepare_member(m)))
    return prepared, said


def _guarded(intake: Intake, label: str, make: Callable[[], Prepared]) -> Prepared:
    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - one submission's shape never stops the others
        empty = intake.slot()
        empty.mkdir(mode=0o700)
        why = f"{type(exc).__name__}: {exc}"[:300]
        return Prepared(label, empty, warnings=[f"could not be read ({why}); nothing in it was graded"],
                        missing=f"no step file; the submission could not be read ({why})", nothing=True)


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
