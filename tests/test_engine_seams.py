"""Engine seams: one reference-shim builder, the float32 note, shared suite helpers.

Graded the way users meet them: real step files in tmp folders through the
engine and its sandboxes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.engine import Engine, RunOptions
from attn_practice.grader.engine.shims import reference_shims
from attn_practice.grader.paths import SUITES_DIR
from attn_practice.grader.results import Status
from attn_practice.reference import attention as reference

BROKEN_SOFTMAX = "import numpy as np\n\n\ndef softmax(x, axis=-1):\n    return np.zeros_like(x)\n"
ATTENTION_USING_STEP3 = '''import numpy as np
from step3_softmax import softmax


def attention(Q, K, V):
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    return softmax(s, axis=-1) @ V
'''


@pytest.fixture(scope="module")
def engine():
    with Engine(RunOptions(max_examples=10)) as e:
        yield e


def _grade(engine: Engine, folder: Path, files: dict[str, str], step: str):
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return engine.grade(folder, [resolve_step(step)]).steps[0]


def test_reference_shims_are_complete_modules() -> None:
    """Each shim compiles on its own and defines the step function it stands in for."""
    shims = reference_shims(resolve_step("step5"))
    assert set(shims) >= {"step3_softmax", "step1_scores"}
    for module, source in shims.items():
        namespace: dict[str, object] = {}
        exec(compile(source, module, "exec"), namespace)  # noqa: S102 - our own reference
        ex = next(e for e in (resolve_step(f"step{i}") for i in range(1, 9)) if e.module == module)
        assert callable(namespace[ex.function])


def test_reference_steps_stand_in_for_a_broken_earlier_step(engine: Engine, tmp_path: Path) -> None:
    files = {"step3_softmax.py": BROKEN_SOFTMAX, "step5_attention.py": ATTENTION_USING_STEP3}
    own = _grade(engine, tmp_path / "own", files, "step5")
    assert own.status is Status.FAILED
    with Engine(RunOptions(max_examples=10, reference_steps=True)) as shimmed:
        result = _grade(shimmed, tmp_path / "shimmed", files, "step5")
    assert result.status is Status.PASSED, [t.message for t in result.tests]


def test_float32_note_only_when_the_dtype_differs_from_the_reference(engine: Engine,
                                                                    tmp_path: Path) -> None:
    """The reference returns float64 for float32 scores / np.sqrt(d_k): doing the same earns no note."""
    same = _grade(engine, tmp_path / "same", {"step2_scale.py": "import numpy as np\n\n\n"
                  "def scale_scores(scores, d_k):\n    return np.asarray(scores) / np.sqrt(d_k)\n"},
                  "step2")
    assert same.status is Status.PASSED
    assert not [n for n in same.notes if "float" in n], same.notes
    # the reference keeps float32 for a matrix product: float64 output is worth a note
    upcast = _grade(engine, tmp_path / "upcast", {"step1_scores.py": "import numpy as np\n\n\n"
                    "def dot_scores(Q, K):\n"
                    "    return np.asarray(Q, dtype=np.float64) @ np.swapaxes(np.asarray(K, dtype=np.float64), -1, -2)\n"},
                    "step1")
    assert upcast.status is Status.PASSED
    assert [n for n in upcast.notes if "float64" in n and "float32" in n], upcast.notes
    ref = np.asarray(reference.dot_scores(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32)))
    assert ref.dtype == np.float32


def test_naive_logsumexp_softmax_fails_on_huge_input(engine: Engine, tmp_path: Path) -> None:
    """Finite weights in [0, 1] are not enough: [1e300, 1e300] must give [0.5, 0.5]."""
    source = (Path(__file__).parent / "implementations" / "step3" / "wrong_other_naive_logsumexp.py")
    result = _grade(engine, tmp_path / "lse", {"step3_softmax.py": source.read_text()}, "step3")
    assert result.status is Status.FAILED
    huge = [t for t in result.tests if "1e300" in t.name]
    assert huge and huge[0].status is Status.FAILED, [(t.name, t.status) for t in result.tests]


def test_suite_helpers_live_in_one_place() -> None:
    """No suite file redefines the shared helpers (StepContext.call_shaped / check_scaled)."""
    for path in sorted(SUITES_DIR.glob("test_step*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert not defined & {"_call_shaped", "_scale", "_check", "_weights"}, path.name


@pytest.mark.slow
def test_selftest_reports_pairs() -> None:
    """`selftest` grades the catalogued two-mistake files and shows whether both ids were named."""
    from click.testing import CliRunner

    from attn_practice.cli import cli

    result = CliRunner().invoke(cli, ["selftest", "--step", "step6", "--jobs", "2", "--verbose"])
    assert result.exit_code == 0, result.output
    assert "pairs: both" in result.output
    assert "pair masked_attention__pair__mask_inverted__no_scale: failed" in result.output
    assert "selftest passed" in result.output
