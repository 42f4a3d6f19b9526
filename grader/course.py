"""Course files (`grade --course course.yaml`): which steps, worth what, how strict.

Example:

    steps: [step1, step2, step3, step4, step5, step6]
    points: {step5: 2}
    timeouts: {step5: 4.0}       # seconds per call
    memory_mb: 1024              # memory per sandbox
    max_examples: 60
    shrink: true                 # report Hypothesis-shrunk failing inputs (slower; default false)
    extra_suites: [private_tests/]   # relative to this file; never shipped to students
    secret_env: MY_COURSE_SECRET     # grade's examples come from this env variable's secret
    student_id: true                 # `host` asks each learner for a student id on joining
    max_learners: 300                # `host` takes at most this many learners (default 2000)

What a course counts (CONTRACT §4.1) is decided here, once, by `Course.apply`:
every report of one course gets the same counted steps and the same
`max_score`, whatever files the submission held. Without `steps`, a course
counts the core steps plus any bonus step it gives points to; other bonus
steps whose files are present are graded and reported, but not counted.

A course file is refused (CourseError naming file, line and key) for anything
it cannot mean: unknown keys, a step listed twice, points or timeouts for a
step it does not grade, limits outside sane ranges, a scalar where a list
belongs, private suites that would be skipped or would not import.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from attn_practice.grader.catalog import Exercise, UnknownStep, load_catalog, resolve_step
from attn_practice.grader.results import GradeReport, Status, StepResult

KEYS = {"steps", "points", "timeouts", "max_examples", "shrink", "extra_suites", "name", "secret_env",
        "memory_mb", "student_id", "max_learners"}
#: Sane ranges: a call timeout beyond a minute would let one submission hold a
#: Gradescope run past its 10-minute limit; points beyond 1000 are a typo.
TIMEOUT_RANGE = (0.05, 60.0)
MAX_LEARNERS = 100_000
MAX_EXAMPLES_RANGE = (1, 2000)
#: Memory per sandbox in MiB: below 128 NumPy itself does not load; Gradescope has ~768 MB.
MEMORY_MB_RANGE = (128, 4096)
POINTS_MAX = 1000.0
DEFAULT_SECRET_ENV = "ATTN_PRACTICE_SECRET"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


#: Names something other than attn-practice reads: setting the secret there would change
#: how the loader, a shell, Python, pip or the CI runner behaves (or be overwritten by it).
_RESERVED_NAMES = {
    "PATH": "every shell", "HOME": "every shell", "IFS": "the shell", "ENV": "the shell",
    "SHELL": "the shell", "SHELLOPTS": "the shell", "BASHOPTS": "the shell", "CDPATH": "the shell",
    "GLOBIGNORE": "the shell", "PROMPT_COMMAND": "the shell", "PS1": "the shell", "PS2": "the shell",
    "PS3": "the shell", "PS4": "the shell", "TMPDIR": "every program", "TMP": "every program",
    "TEMP": "every program", "USER": "every program", "LOGNAME": "every program",
    "PWD": "the shell", "OLDPWD": "the shell", "TERM": "every program", "LANG": "every program",
    "LANGUAGE": "every program", "TZ": "every program", "NLSPATH": "the C library",
    "HOSTALIASES": "the C library", "RESOLV_HOST_CONF": "the C library", "LOCALDOMAIN": "the C library",
    "MALLOC_CHECK_": "the C library", "NODE_OPTIONS": "Node.js", "PERL5OPT": "Perl",
    "PERL5LIB": "Perl", "RUBYOPT": "Ruby", "JAVA_TOOL_OPTIONS": "Java", "GIT_DIR": "git",
    "ATTN_PRACTICE_CACHE": "attn-practice itself", "ATTN_PRACTICE_DEBUG": "attn-practice itself",
    "ATTN_PRACTICE_VENV": "attn-practice itself", "ATTN_PRACTICE_TIME_LIMIT": "attn-practice itself",
    "NO_COLOR": "attn-practice itself", "COLUMNS": "attn-practice itself", "CI": "CI runners",
}
_RESERVED_PREFIXES = (
    ("LD_", "the dynamic loader"), ("DYLD_", "the dynamic loader"), ("GCONV_", "the C library"),
    ("MALLOC_", "the C library"), ("GLIBC_", "the C library"), ("LC_", "every program"),
    ("BASH_", "bash"), ("BASH", "bash"), ("ZDOTDIR", "zsh"), ("PYTHON", "Python"),
    ("PIP_", "pip"), ("VIRTUAL_ENV", "Python"), ("CONDA", "conda"), ("PYTEST", "pytest"),
    ("HYPOTHESIS", "Hypothesis"), ("XDG_", "attn-practice and most programs"),
    ("GIT_", "git"), ("SSH_", "ssh"), ("GITHUB_", "GitHub Actions"), ("RUNNER_", "GitHub Actions"),
    ("ACTIONS_", "GitHub Actions"), ("CI_", "GitLab CI"), ("GITLAB_", "GitLab CI"),
    ("FF_", "GitLab CI"), ("DOCKER_", "Docker"), ("SUDO_", "sudo"),
)


def reserved_env(name: str) -> str:
    """Who else reads environment variable `name` ("" when nobody we know of does)."""
    upper = name.upper()
    if upper in _RESERVED_NAMES:
        return _RESERVED_NAMES[upper]
    return next((who for prefix, who in _RESERVED_PREFIXES if upper.startswith(prefix)), "")


class CourseError(ValueError):
    """The course file cannot be used; the message names the file, line and key."""


@dataclass(frozen=True)
class Course:
    path: Path | None
    steps: tuple[Exercise, ...] | None  # None: core steps (+ bonus given points) + present bonus
    points: dict[str, float] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)
    max_examples: int | None = None
    shrink: bool = False  # grade reports the smallest failing recorded input unless asked to shrink
    extra_suites: tuple[Path, ...] = ()
    fingerprint: str = ""
    name: str = ""
    secret_env: str = DEFAULT_SECRET_ENV  # the variable `grade` reads its secret from (§4.3)
    memory_mb: int | None = None  # memory per sandbox (None: the engine's default)
    student_id: bool = False  # `host` asks each learner for a student id on joining
    max_learners: int | None = None  # `host` takes at most this many learners (None: its default)

    # -- what the course counts (CONTRACT §4.1) ----------------------------------
    def counted_steps(self) -> tuple[Exercise, ...]:
        """The steps every submission is scored on, in course order."""
        if self.steps is not None:
            return self.steps
        return tuple(e for e in load_catalog() if not e.bonus or e.id in self.points)

    def points_for(self, ex: Exercise) -> float:
        return float(self.points.get(ex.id, ex.points))

    @property
    def max_score(self) -> float:
        return float(sum(self.points_for(e) for e in self.counted_steps()))

    def apply(self, report: GradeReport) -> GradeReport:
        """The report scored by this course's rule: same counted steps, same max_score.

        A counted step the submission does not hold is added as `missing`; a
        counted step's points come from the course whatever the engine used;
        any other graded step (a bonus file present under the default course)
        is kept with `counted: false`, adding to neither total.
        """
        counted = self.counted_steps()
        graded = {s.id: s for s in report.steps}
        steps: list[StepResult] = []
        for ex in counted:
            points = self.points_for(ex)
            s = graded.pop(ex.id, None)
            if s is None:
                status = Status.ERROR if report.error else Status.MISSING
                why = (f"not graded: {report.error}" if report.error
                       else f"not handed in: {ex.file} was not found in the submission")
                s = StepResult(id=ex.id, title=ex.title, status=status, score=0.0, max_score=points,
                               error=why, file=ex.file, function=ex.function, bonus=ex.bonus)
            steps.append(replace(s, max_score=points, score=points if s.passed else 0.0,
                                 counted=True))
        steps += [replace(s, counted=False) for s in graded.values()]
        return replace(report, steps=tuple(steps))


def default_course() -> Course:
    return Course(path=None, steps=None)


# -- loading and validation ---------------------------------------------------------
class _Lines:
    """Line numbers of a YAML document's keys and list items, by path (`("points", "step5")`)."""

    def __init__(self, node: Any):
        self.lines: dict[tuple[Any, ...], int] = {}
        self.duplicates: list[tuple[tuple[Any, ...], int]] = []
        self._walk(node, ())

    def _walk(self, node: Any, path: tuple[Any, ...]) -> None:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = (path + (str(k.value),)) if isinstance(k, yaml.ScalarNode) else path
                if key in self.lines and key != path:
                    self.duplicates.append((key, k.start_mark.line + 1))
                self.lines.setdefault(key, k.start_mark.line + 1)
                self._walk(v, key)
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self.lines[path + (i,)] = item.start_mark.line + 1
                self._walk(item, path + (i,))

    def of(self, *path: Any) -> int:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path, 1)


def load_course(path: Path, *, check_suites: bool = True) -> Course:
    """Read and validate a course file; `check_suites` also imports its private suites."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text)
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        raise CourseError(f"{path}: not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CourseError(f"{path}: line 1: expected a mapping of settings (key: value lines)")
    lines = _Lines(node)

    def fail(key: str, problem: str, *where: Any) -> CourseError:
        return CourseError(f"{path}: line {lines.of(key, *where)}: key '{key}': {problem}")

    if lines.duplicates:
        (dup, line) = lines.duplicates[0]
        raise CourseError(f"{path}: line {line}: key '{'.'.join(map(str, dup))}': "
                          "given twice (YAML keeps only the last one); remove one")
    unknown = sorted(set(map(str, data)) - KEYS)
    if unknown:
        raise fail(unknown[0], f"unknown setting (known: {', '.join(sorted(KEYS))})")
    steps = _steps(data, fail)
    points = _step_numbers(data, "points", fail, low=0.0, high=POINTS_MAX, low_open=True)
    timeouts = _step_numbers(data, "timeouts", fail, low=TIMEOUT_RANGE[0], high=TIMEOUT_RANGE[1])
    if steps is not None:
        graded = {e.id for e in steps}
        for key, table in (("points", points), ("timeouts", timeouts)):
            for sid in table:
                if sid not in graded:
                    raise fail(key, f"{sid} is not graded by this course (steps: "
                                    f"{', '.join(e.id for e in steps)}); add it to steps or "
                                    "remove it here", _raw_key(data, key, sid))
    max_examples = data.get("max_examples")
    lo, hi = MAX_EXAMPLES_RANGE
    if max_examples is not None and (not isinstance(max_examples, int) or isinstance(max_examples, bool)
                                     or not lo <= max_examples <= hi):
        raise fail("max_examples", f"expected a whole number from {lo} to {hi}, got {max_examples!r}")
    memory_mb = data.get("memory_mb")
    lo, hi = MEMORY_MB_RANGE
    if memory_mb is not None and (not isinstance(memory_mb, int) or isinstance(memory_mb, bool)
                                  or not lo <= memory_mb <= hi):
        raise fail("memory_mb", f"expected a whole number of MiB from {lo} to {hi}, got {memory_mb!r}")
    shrink = data.get("shrink", False)
    if not isinstance(shrink, bool):
        raise fail("shrink", f"expected true or false, got {shrink!r}")
    student_id = data.get("student_id", False)
    if not isinstance(student_id, bool):
        raise fail("student_id", f"expected true or false, got {student_id!r}")
    max_learners = data.get("max_learners")
    if max_learners is not None and (not isinstance(max_learners, int) or isinstance(max_learners, bool)
                                     or not 1 <= max_learners <= MAX_LEARNERS):
        raise fail("max_learners", f"expected a whole number from 1 to {MAX_LEARNERS}, got {max_learners!r}")
    name = data.get("name", "")
    if not isinstance(name, str):
        raise fail("name", f"expected a text, got {name!r}")
    secret_env = data.get("secret_env", DEFAULT_SECRET_ENV)
    if not isinstance(secret_env, str) or not _ENV_NAME.match(secret_env):
        raise fail("secret_env", f"expected an environment variable name, got {secret_env!r}")
    if reserved_env(secret_env):
        raise fail("secret_env", f"{secret_env} is read by {reserved_env(secret_env)}: the grading "
                                 "secret must live in a variable of its own, such as MY_COURSE_SECRET")
    suites = _suites(data, path, fail)
    course = Course(path=path, steps=steps, points=points, timeouts=timeouts,
                    max_examples=max_examples, shrink=shrink, extra_suites=tuple(suites),
                    fingerprint=_fingerprint(text, suites), name=name, secret_env=secret_env,
                    memory_mb=memory_mb, student_id=student_id, max_learners=max_learners)
    if check_suites and suites:
        from attn_practice.grader.staff.private_suites import check_suites as _check

        problems = _check(suites, graded_ids={e.id for e in course.counted_steps()} | {
            e.id for e in load_catalog() if steps is None})
        if problems:
            listed = "\n".join(f"  {p}" for p in problems)
            raise CourseError(f"{path}: line {lines.of('extra_suites')}: key 'extra_suites': the private suites cannot be used as "
                              f"they are ({len(problems)} problem{'s' if len(problems) > 1 else ''}):\n"
                              f"{listed}")
    return course


Fail = Callable[..., CourseError]


def _raw_key(data: dict[str, Any], key: str, sid: str) -> Any:
    """The key as written in the file (`5` or `step5_attention`) for its line number."""
    for raw in data.get(key) or {}:
        try:
            if resolve_step(str(raw)).id == sid:
                return str(raw)
        except UnknownStep:
            continue
    return sid


def _steps(data: dict[str, Any], fail: Fail) -> tuple[Exercise, ...] | None:
    if "steps" not in data:
        return None
    raw = data["steps"]
    if not isinstance(raw, list) or not raw:
        raise fail("steps", f"expected a list of step names, like [step1, step2], got {raw!r}")
    seen: dict[str, int] = {}
    out = []
    for i, name in enumerate(raw):
        try:
            ex = resolve_step(str(name))
        except UnknownStep as exc:
            raise fail("steps", str(exc), i) from None
        if ex.id in seen:
            raise fail("steps", f"{ex.id} is listed twice (entries {seen[ex.id] + 1} and {i + 1})", i)
        seen[ex.id] = i
        out.append(ex)
    return tuple(out)


def _step_numbers(data: dict[str, Any], key: str, fail: Fail, *, low: float, high: float,
                  low_open: bool = False) -> dict[str, float]:
    raw = data.get(key)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail(key, f"expected a mapping of step -> number, like {{step5: 2}}, got {raw!r}")
    out: dict[str, float] = {}
    for name, value in raw.items():
        try:
            ex = resolve_step(str(name))
        except UnknownStep as exc:
            raise fail(key, str(exc), str(name)) from None
        if ex.id in out:
            raise fail(key, f"{ex.id} is given twice", str(name))
        number = isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
        if not number or (value <= low if low_open else value < low) or value > high:
            bound = f"more than {low:g}" if low_open else f"at least {low:g}"
            raise fail(key, f"{name}: expected a number {bound} and at most {high:g}, got {value!r}",
                       str(name))
        out[ex.id] = float(value)
    return out


def _suites(data: dict[str, Any], path: Path, fail: Fail) -> list[Path]:
    raw = data.get("extra_suites")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise fail("extra_suites", f"expected a list of folders, like [{raw}], got the single "
                                   f"value {raw!r}")
    suites: list[Path] = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, str) or not entry.strip():
            raise fail("extra_suites", f"entry {i + 1}: expected a folder or file name, got {entry!r}", i)
        p = (path.parent / entry).resolve()
        if not p.exists():
            raise fail("extra_suites", f"{entry} does not exist (looked in {p})", i)
        if p.is_file() and p.suffix != ".py":
            raise fail("extra_suites", f"{entry} is not a Python file or a folder", i)
        if p.is_dir() and not any(p.rglob("test_*.py")):
            raise fail("extra_suites", f"{entry} holds no test_*.py files: nothing would run", i)
        if p in suites:
            raise fail("extra_suites", f"{entry} is listed twice", i)
        suites.append(p)
    return suites


def suite_files(suites: tuple[Path, ...] | list[Path]) -> list[Path]:
    """Every Python file of the private suites (what the fingerprint and the bundle cover)."""
    files: list[Path] = []
    for s in suites:
        files += [s] if s.is_file() else sorted(p for p in s.rglob("*.py") if p.is_file()
                                                and "__pycache__" not in p.parts)
    return files


def _fingerprint(text: str, suites: list[Path]) -> str:
    h = hashlib.sha256(text.encode())
    for f in suite_files(suites):
        h.update(str(f.name).encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


__all__ = ["Course", "CourseError", "default_course", "load_course", "load_catalog", "suite_files"]
