"""`attn_practice.check(step, function)`: grading a function object from a notebook or script."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import joined
from rich.console import Console

from attn_practice import check
from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.results import Status, StepResult
from attn_practice.grader.teaching.notebook import NotebookResult, learner_source

IMPL = Path(__file__).resolve().parent / "implementations"
CALLS = 0  # a function that runs in this process would change it
ROOT_TWO = math.sqrt(2.0)


def recorder() -> Console:
    return Console(record=True, width=100, no_color=True)


def _root(d):
    return np.sqrt(d)


def my_scale(scores, d_k):
    """Another name, a same-module helper and a module-level constant."""
    global CALLS
    CALLS += 1
    return np.asarray(scores) / _root(d_k) * (ROOT_TWO / math.sqrt(2.0))


def scale_by_dk(scores, d_k):
    return np.asarray(scores) / d_k


def test_a_correct_function_passes_and_never_runs_here():
    console = recorder()
    result = check("step2", my_scale, console=console)
    assert isinstance(result, StepResult) and isinstance(result, NotebookResult)
    assert result.status is Status.PASSED, console.export_text()
    assert result.score == result.max_score == 1.0
    assert repr(result).startswith("<step2 scale_scores: passed; 1/1 points; ")
    assert "tests passed>" in repr(result) and "\n" not in repr(result)
    assert CALLS == 0  # only its source went to the sandbox
    text = joined(console.export_text())
    assert "Step 2" in text and "step2 passes" in text


def test_the_sent_source_is_a_complete_step_file():
    src = learner_source(my_scale, resolve_step("step2")).source
    assert "def scale_scores(scores, d_k):" in src  # renamed to the step's function
    assert "my_scale = scale_scores" in src  # the old name still works
    assert "def _root(d):" in src  # the helper it calls
    assert "ROOT_TWO = 1.414" in src and "CALLS = 0" in src  # constants it reads
    assert src.count("import numpy as np") == 1 and "import math" in src
    compile(src, "step2_scale.py", "exec")


def test_a_wrong_function_fails_with_a_diagnosis_and_the_worked_example():
    console = recorder()
    result = check("step2", scale_by_dk, console=console)
    assert result.status is Status.FAILED
    assert "scale-by-dk" in result.diagnosis_ids
    text = joined(console.export_text())
    assert "worked example" in text and "first differ at scaled" in text
    assert "[0.5, 0, 0.25]" in text  # the learner's numbers beside the lesson's [1, 0, 0.5]


def test_quiet_and_options():
    result = check("2", scale_by_dk, show=False, max_examples=5)
    assert result.status is Status.FAILED
    with pytest.raises(TypeError, match="unknown option"):
        check("step2", my_scale, colour=True)


def test_a_function_from_a_script_file():
    spec = importlib.util.spec_from_file_location("learner_einsum",
                                                  IMPL / "step1" / "correct_einsum.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = check("step1", module.dot_scores, show=False)
    assert result.status is Status.PASSED


def test_lambda_builtin_and_sourceless_functions_are_refused_clearly():
    with pytest.raises(ValueError, match=r"def scale_scores\(scores, d_k\)"):
        check("step2", lambda scores, d_k: scores / np.sqrt(d_k))
    with pytest.raises(ValueError, match="built in"):
        check("step3", np.exp)
    namespace: dict = {}
    exec("def softmax(x, axis=-1):\n    return x\n", namespace)  # no file: no source
    with pytest.raises(ValueError, match="kept no source"):
        check("step3", namespace["softmax"])
    with pytest.raises(ValueError, match="not a function") as refused:
        check("step3", 42)
    assert "it is an int (42)" in str(refused.value) and "a int" not in str(refused.value)


def test_closures_over_plain_values_work_but_not_over_objects():
    def make(k):
        def scale_scores(scores, d_k):
            return np.asarray(scores) / np.sqrt(d_k) * k
        return scale_scores

    src = learner_source(make(1.0), resolve_step("step2")).source
    assert "k = 1.0" in src
    with pytest.raises(ValueError, match="from the function around it"):
        learner_source(make(np.ones(2)), resolve_step("step2"))


def test_functions_defined_in_ipython_cells(tmp_path):
    """As in Jupyter: imports in one cell, the function in another, its source from linecache."""
    pytest.importorskip("IPython")
    script = tmp_path / "cells.py"
    script.write_text(
        "from IPython.testing.globalipapp import start_ipython\n"
        "ip = start_ipython()\n"
        "ip.run_cell('import numpy as np\\nfrom attn_practice import check')\n"
        "ip.run_cell('def scale(s, d_k):\\n    return s / np.sqrt(d_k)\\n')\n"
        "ip.run_cell('print(repr(check(\"step2\", scale, show=False)))')\n"
        "ip.run_cell('f = lambda s, d_k: s\\ntry:\\n    check(\"step2\", f)\\n"
        "except ValueError:\\n    print(\"refused\")')\n"
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert "<step2 scale_scores: passed; 1/1 points;" in proc.stdout, proc.stdout + proc.stderr
    assert "refused" in proc.stdout


# ------------------------------------------------------------ as a notebook shows it
class CountingConsole(Console):
    """A console that counts its print calls: each one is a separate output in Jupyter."""

    def __init__(self, **kw):
        super().__init__(record=True, width=100, no_color=True, **kw)
        self.prints = 0

    def print(self, *args, **kwargs):  # noqa: A003 - rich's name
        if not self._buffer_index:  # a print made outside a capture reaches the notebook
            self.prints += 1
        return super().print(*args, **kwargs)


def my_softmax(x, axis=-1):
    return np.exp(x) / np.exp(x).sum()  # global, not per slice


def test_one_display_output_per_check_and_the_repro_calls_the_notebooks_function():
    console = CountingConsole()
    result = check("step3", my_softmax, console=console)
    assert result.status is Status.FAILED
    assert console.prints == 1
    text = console.export_text()
    assert "my_softmax(np.array(" in text  # the name the learner defined it by
    assert "from step3_softmax import" not in text  # a notebook has no such file to import
    assert "run Python in the folder" not in text
    assert "worked example" in text  # still shown, inside the same output
    again = CountingConsole()
    check("step2", my_scale, console=again)
    assert again.prints == 1


def test_the_repr_says_what_matters_on_one_line():
    result = check("step2", scale_by_dk, show=False)
    text = repr(result)
    assert text.startswith("<step2 scale_scores: failed; 0/1 points; ") and text.endswith(">")
    assert "known mistake: scale-by-dk" in text and "first failure: " in text
    assert "tests passed" in text and "\n" not in text and len(text) < 300
