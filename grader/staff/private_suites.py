"""Private suites (CONTRACT §4.2): checked before any submission is graded.

A private test that pytest would skip (no `step` marker), one that reaches a
learner's module by importing it (outside the sandbox, in the trusted
process), and a file that does not import are course errors, reported with
file and line. Checking once, up front, means grading never meets them: no
test is dropped silently and no collection error can stop a batch midway.

The checks run in three passes, each only when the previous one is clean:
a static read (syntax, learner imports), an import of each file (the error's
own line), then a pytest collection with the grader's own ini (markers,
fixtures, steps named).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import os
import sys
import traceback
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from attn_practice.grader.catalog import UnknownStep, load_catalog, resolve_step
from attn_practice.grader.paths import SUITE_INI, SUITES_DIR


@dataclass(frozen=True)
class Problem:
    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class PrivateTest:
    """One collected private test: the step it grades and the name reports show."""

    step: str
    name: str
    file: Path
    line: int


def python_files(suites: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for s in suites:
        files += [s] if s.is_file() else sorted(p for p in s.rglob("*.py")
                                                if p.is_file() and "__pycache__" not in p.parts)
    return files


def collected_files(suites: Iterable[Path]) -> list[Path]:
    """What pytest collects from the suites (the grader's ini: `test_*.py`)."""
    return [p for p in python_files(suites) if p.name.startswith("test_") or p in set(suites)]


def learner_modules() -> set[str]:
    return {e.module for e in load_catalog()}


_SANDBOX_ONLY = ("a private test reaches the learner's code only through the `step` fixture "
                 "(step.check, step.call), which runs it in the sandbox; remove this import")


def static_problems(file: Path) -> list[Problem]:
    """Syntax errors and imports of a learner's module, found without running the file."""
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [Problem(file, 1, f"cannot read: {exc}")]
    try:
        tree = ast.parse(source, filename=str(file))
    except SyntaxError as exc:
        return [Problem(file, exc.lineno or 1, f"syntax error: {exc.msg}")]
    modules = learner_modules()
    out = _never_collected(file, tree)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [node.module]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and _call_name(node.func) in (
                  "import_module", "__import__")):
            names = [node.args[0].value]
        for name in names:
            if name.split(".")[0] in modules:
                out.append(Problem(file, node.lineno, f"imports the learner's module "
                                                      f"{name.split('.')[0]}: {_SANDBOX_ONLY}"))
    return out


def _never_collected(file: Path, tree: ast.Module) -> list[Problem]:
    """Tests pytest would pass over without a word under the grader's ini.

    The ini collects `test_*` functions from `test_*.py` files only: test
    classes are not collected, and neither is a test in a file named otherwise.
    """
    out = []
    named = file.name.startswith("test_")
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(
                isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test")
                for f in node.body):
            out.append(Problem(file, node.lineno, f"class {node.name} holds tests, but test classes "
                               "are not collected: make them module-level test_ functions"))
        elif (not named and file.name != "conftest.py"
              and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
              and node.name.startswith("test_")):
            out.append(Problem(file, node.lineno, f"{node.name} would never run: only files named "
                               f"test_*.py are collected; rename {file.name} to test_{file.name}"))
            break
    return out


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def import_problem(file: Path, private: set[Path]) -> Problem | None:
    """Import `file` as pytest would (no sys.path change); the failing line if it fails."""
    name = f"_attn_practice_private_check_{abs(hash(str(file)))}"
    spec = importlib.util.spec_from_file_location(name, file)
    if spec is None or spec.loader is None:
        return Problem(file, 1, "cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        with _quiet(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the step marker is registered only under pytest
            spec.loader.exec_module(module)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and friends are course errors too
        line = 1
        for frame in traceback.extract_tb(exc.__traceback__):
            if Path(frame.filename).resolve() in private:
                line = frame.lineno or line
        if isinstance(exc, SyntaxError) and exc.lineno:
            line = exc.lineno
        return Problem(file, line, f"does not import: {type(exc).__name__}: {exc}")
    finally:
        sys.modules.pop(name, None)
    return None


def check_suites(suites: Sequence[Path], graded_ids: set[str]) -> list[Problem]:
    """Every reason these private suites cannot be used as they are (empty: fine)."""
    files = python_files(suites)
    problems = [p for f in files for p in static_problems(f)]
    if problems:
        return problems
    private = {f.resolve() for f in files}
    imported = [f for f in files if f.name == "conftest.py"] + collected_files(suites)
    problems = [p for f in imported if (p := import_problem(f, private)) is not None]
    if problems:
        return problems
    tests, problems = collect(suites)
    if not problems and not tests:
        problems.append(Problem(Path(suites[0]), 1, "no test functions (test_*) found: nothing "
                                                    "would run"))
    for t in tests:
        if t.step and t.step not in graded_ids:
            problems.append(Problem(t.file, t.line, f"marked for {t.step}, which this course never "
                                                    "grades: the test would never run"))
    return problems


def collect(suites: Sequence[Path]) -> tuple[list[PrivateTest], list[Problem]]:
    """Collect the suites with the grader's pytest set-up; the tests and what is wrong with them."""
    import pytest

    from attn_practice.grader.engine.plugin import clean_pytest_env

    plugin = _Collector()
    args = [*map(str, collected_files(suites)), "--collect-only", "-c", str(SUITE_INI),
            "--rootdir", str(SUITES_DIR), "--import-mode=importlib", "-p", "no:cacheprovider",
            "-p", "no:terminal", "-p", "no:doctest", "-p", "no:junitxml", "-p", "no:stepwise"]
    with clean_pytest_env(), _quiet(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = pytest.main(args, plugins=[plugin])
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR,
                pytest.ExitCode.INTERRUPTED) and not plugin.problems:
        first = Path(suites[0]) if suites else Path(".")
        plugin.problems.append(Problem(first, 1, f"pytest could not collect these files (exit "
                                                 f"{int(code)}): check their conftest.py and imports"))
    return plugin.tests, plugin.problems


class _Collector:
    def __init__(self) -> None:
        self.tests: list[PrivateTest] = []
        self.problems: list[Problem] = []

    def pytest_configure(self, config: Any) -> None:
        config.addinivalue_line("markers", "step(id): the step this hidden test belongs to")

    def pytest_collectreport(self, report: Any) -> None:
        if report.failed:
            text = str(report.longrepr).strip().splitlines()
            self.problems.append(Problem(Path(str(report.nodeid).split("::")[0] or "?"), 1,
                                         f"pytest cannot collect it: {text[-1] if text else '?'}"))

    def pytest_collection_finish(self, session: Any) -> None:
        for item in session.items:
            path, line0, _ = item.reportinfo()
            file, line = Path(str(path)), (line0 or 0) + 1
            marker = item.get_closest_marker("step")
            if marker is None or not marker.args:
                self.problems.append(Problem(file, line, f"{item.name} has no step marker: add "
                                     "@pytest.mark.step(\"stepN\") (or pytestmark = pytest.mark."
                                     "step(\"stepN\") for the whole file), else it never runs"))
                continue
            try:
                step = resolve_step(str(marker.args[0])).id
            except UnknownStep as exc:
                self.problems.append(Problem(file, line, f"{item.name}: {exc}"))
                continue
            if "step" not in getattr(item, "fixturenames", ()):
                self.problems.append(Problem(file, line, f"{item.name} does not take the `step` "
                                     "fixture: without it the test cannot see the learner's code"))
                continue
            self.tests.append(PrivateTest(step, display_name(item), file, line))


def display_name(item: Any) -> str:
    """The name reports show for a test: its docstring's first line, else its function name."""
    fn = getattr(item, "function", None)
    doc = (getattr(fn, "__doc__", None) or "").strip().splitlines()
    if doc:
        return doc[0].rstrip(".")
    return str(item.name).removeprefix("test_").replace("_", " ")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull), \
            contextlib.redirect_stderr(devnull):
        yield


