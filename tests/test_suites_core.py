"""The hidden suites of the core steps (1-5) against the labelled corpus.

Every `tests/implementations/stepN/correct_*.py` must pass its step and every
`wrong_*.py` must fail it (status "failed": a known mistake is a wrong
answer, not a crash of the grader). The reference source must pass and the
untouched stub must fail cleanly. The suites themselves are checked for the
shape the product promises: a one-line docstring per test (the learner reads
it as the test's name), the right step marker, and few Hypothesis tests.

Run with `python -m pytest tests/test_suites_core.py -q`; the corpus part is
marked slow (one grade per file, about 100 files).
"""

from __future__ import annotations

import ast
import inspect
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from attn_practice.grader.catalog import Exercise, resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.paths import SUITES_DIR
from attn_practice.grader.results import Status, StepResult
from attn_practice.reference import attention as reference

CORE = ("step1", "step2", "step3", "step4", "step5")
CORPUS = Path(__file__).parent / "implementations"
EXERCISES = Path(reference.__file__).resolve().parents[1] / "exercises"
MAX_EXAMPLES = 25


def _corpus_cases() -> list[object]:
    cases = []
    for sid in CORE:
        for path in sorted((CORPUS / sid).glob("*.py")):
            if path.name.startswith(("correct_", "wrong_")):
                cases.append(pytest.param(sid, path, id=f"{sid}/{path.stem}"))
    return cases


CASES = _corpus_cases()


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    # graded as `grade` and a hosted check grade, without shrinking a failing example (a
    # quarter of the time; the verdict and diagnosis are the same; test_replay, test_grade
    # and test_fast_stops cover `check`'s shrinking)
    with Engine(RunOptions(max_examples=MAX_EXAMPLES, shrink=False)) as e:
        yield e


def grade_source(engine: Engine, sid: str, source: str, folder: Path) -> StepResult:
    """Grade `source` as the learner's file for step `sid` in a fresh folder."""
    ex: Exercise = resolve_step(sid)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / ex.file).write_text(source, encoding="utf-8")
    report = engine.grade(folder, [ex])
    assert len(report.steps) == 1
    return report.steps[0]


def describe(result: StepResult) -> str:
    lines = [f"{result.id}: {result.status.value} {result.error}".rstrip()]
    for t in result.tests:
        lines.append(f"  [{t.status.value}] {t.name}: {t.message}")
    return "\n".join(lines)


@pytest.fixture(scope="module")
def sandbox_imports_scipy(engine: Engine, tmp_path_factory: pytest.TempPathFactory) -> bool:
    """Whether learner code can import SciPy here (not when the sandbox's uid cannot read it)."""
    pytest.importorskip("scipy")
    probe = ("import numpy as np\nimport scipy.special\n\n\n"
             "def scale_scores(scores, d_k):\n    return np.asarray(scores) / np.sqrt(d_k)\n")
    result = grade_source(engine, "step2", probe, tmp_path_factory.mktemp("scipy-probe"))
    return result.status is Status.PASSED


def _uses_scipy(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        if any(n == "scipy" or n.startswith("scipy.") for n in names):
            return True
    return False


# ------------------------------------------------------------------ corpus
def test_corpus_is_labelled() -> None:
    """Every core step has correct and wrong versions to grade, and nothing unlabelled."""
    for sid in CORE:
        names = [p.name for p in (CORPUS / sid).glob("*.py")]
        assert any(n.startswith("correct_") for n in names), sid
        assert any(n.startswith("wrong_") for n in names), sid
        assert all(n.startswith(("correct_", "wrong_")) for n in names), (sid, names)


@pytest.mark.slow
@pytest.mark.parametrize(("sid", "path"), CASES)
def test_corpus_file(engine: Engine, sandbox_imports_scipy: bool, sid: str, path: Path,
                     tmp_path: Path) -> None:
    """correct_* passes its step; wrong_* fails it with ordinary test failures."""
    if _uses_scipy(path) and not sandbox_imports_scipy:
        pytest.skip("SciPy cannot be imported inside the sandbox in this environment")
    result = grade_source(engine, sid, path.read_text(encoding="utf-8"), tmp_path / "sub")
    internal = [t for t in result.tests if t.failure is not None and t.failure.kind == "internal"]
    assert not internal, describe(result)
    if path.name.startswith("correct_"):
        assert result.status is Status.PASSED, describe(result)
        assert len(result.tests) >= 6, describe(result)
    else:
        assert result.status is Status.FAILED, describe(result)
        assert any(t.status is Status.FAILED for t in result.tests), describe(result)
        expected = _expected_ids(path)
        found = [d.id for d in result.diagnoses]
        assert set(expected) <= set(found), f"expected {expected}, got {found}\n{describe(result)}"


def _expected_ids(path: Path) -> list[str]:
    """The ids on the file's `Expected diagnosis:` line (none for `none`)."""
    for line in (ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or "").splitlines():
        if line.strip().lower().startswith("expected diagnosis:"):
            value = line.split(":", 1)[1].strip()
            return [] if value.lower() == "none" else [v.strip() for v in value.split(",")]
    return []


@pytest.mark.parametrize("sid", CORE)
def test_reference_passes(engine: Engine, sid: str, tmp_path: Path) -> None:
    """The reference implementation, as a learner's file, passes every core step."""
    source = inspect.getsource(reference)
    result = grade_source(engine, sid, source, tmp_path / "sub")
    assert result.status is Status.PASSED, describe(result)


@pytest.mark.parametrize("sid", CORE)
def test_stub_fails_cleanly(engine: Engine, sid: str, tmp_path: Path) -> None:
    """The untouched stub fails every test with "not written yet", never an internal error."""
    ex = resolve_step(sid)
    stub = EXERCISES / Path(ex.file).stem / "stub.py"
    folder = tmp_path / "sub"
    folder.mkdir()
    shutil.copy(stub, folder / ex.file)
    result = engine.grade(folder, [ex]).steps[0]
    assert result.status is Status.FAILED, describe(result)
    assert result.tests, describe(result)
    for t in result.tests:
        assert t.status is Status.FAILED, describe(result)
        assert "not written yet" in t.message, describe(result)


# ------------------------------------------------------------------ suite shape
def _suite_tests(sid: str) -> list[ast.FunctionDef]:
    (path,) = sorted(SUITES_DIR.glob(f"test_{sid}_*.py"))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]


def _is_given(fn: ast.FunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
        if name == "given":
            return True
    return False


@pytest.mark.parametrize("sid", CORE)
def test_suite_shape(sid: str) -> None:
    """Each core suite has 6-9 tests, at most 4 of them Hypothesis tests, each named by a one-line docstring."""
    tests = _suite_tests(sid)
    assert 6 <= len(tests) <= 9, [t.name for t in tests]
    assert sum(_is_given(t) for t in tests) <= 4
    names = []
    for t in tests:
        doc = ast.get_docstring(t)
        assert doc, f"{t.name} has no docstring"
        assert "\n" not in doc.strip(), f"{t.name}: the docstring must be one line"
        assert len(doc) <= 120, f"{t.name}: docstring too long for a test name"
        names.append(doc)
    assert len(set(names)) == len(names), "two tests share a name"


@pytest.mark.parametrize("sid", CORE)
def test_suite_marker(sid: str) -> None:
    """Each core suite marks its tests with its own step id."""
    (path,) = sorted(SUITES_DIR.glob(f"test_{sid}_*.py"))
    assert f'pytestmark = pytest.mark.step("{sid}")' in path.read_text(encoding="utf-8")
