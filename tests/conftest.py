"""Shared fixtures for the learner-facing CLI tests.

Every test works in a real workspace made by `attn-practice start` in
tmp_path; learner files are written into it as a learner would write them.
Commands run in-process through Click's CliRunner (fast: the engine is paid
for per `check`, not per interpreter) from inside the workspace folder, and a
few run through the installed console script in a subprocess.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import re
import shutil
import subprocess
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli
from attn_practice.grader.catalog import load_catalog, resolve_step
from attn_practice.reference import attention as reference

TRACEBACK = "Traceback (most recent call last)"
#: deterministic rendering for in-process runs: 80 columns, no colour, no debug re-raise
PLAIN_ENV: dict[str, str | None] = {"COLUMNS": "80", "NO_COLOR": "1", "FORCE_COLOR": None,
                                    "ATTN_PRACTICE_DEBUG": None}
CORE = ("step1", "step2", "step3", "step4", "step5")
ALL_STEPS = CORE + ("step6", "step7", "step8")

#: step id -> (the reference functions its file defines, earlier step modules it imports from)
_SOLUTION_PARTS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "step1": (("dot_scores",), ()),
    "step2": (("scale_scores",), ()),
    "step3": (("softmax",), ()),
    "step4": (("weighted_sum",), ()),
    "step5": (("attention",), (("step1_scores", "dot_scores"), ("step2_scale", "scale_scores"),
                               ("step3_softmax", "softmax"), ("step4_weighted_sum", "weighted_sum"))),
    "step6": (("masked_attention",), (("step1_scores", "dot_scores"), ("step2_scale", "scale_scores"),
                                      ("step3_softmax", "softmax"),
                                      ("step4_weighted_sum", "weighted_sum"))),
    "step7": (("self_attention",), (("step5_attention", "attention"),)),
    "step8": (("multi_head_attention",), (("step5_attention", "attention"),)),
}
#: what a self-contained file needs besides its own function
_STANDALONE_HELPERS = {
    "step5": ("dot_scores", "scale_scores", "softmax", "weighted_sum"),
    "step6": ("dot_scores", "scale_scores", "softmax", "weighted_sum"),
    "step7": ("dot_scores", "scale_scores", "softmax", "weighted_sum", "attention"),
    "step8": ("dot_scores", "scale_scores", "softmax", "weighted_sum", "attention"),
}


#: A right step 1 whose first call waits 3 s without computing (past the 2 s call limit on the wall
#: clock, as a loaded machine makes a call wait), and one that never returns: call limits on the
#: sandbox's CPU clock must tell them apart (test_widget_clock, test_host_checks_engine, test_selftest).
WAITS_ONCE_STEP1 = ("import time\nimport numpy as np\n_waited = []\n\n"
                    "def dot_scores(Q, K):\n"
                    "    if not _waited:\n"
                    "        _waited.append(time.sleep(3.0))  # waiting, not computing\n"
                    "    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)\n")
LOOPS_STEP1 = "def dot_scores(Q, K):\n    while True:\n        pass\n"


def solution_source(step: str, *, imports: bool = True) -> str:
    """The reference implementation of `step` as a learner's file.

    imports=True: later steps import earlier ones by module name
    (`from step3_softmax import softmax`), as the README suggests; False: the
    file is self-contained, with its helper functions copied in.
    """
    ex = resolve_step(step)
    own, deps = _SOLUTION_PARTS[ex.id]
    lines = ["import numpy as np", ""]
    helpers: tuple[str, ...] = ()
    if imports:
        lines += [f"from {module} import {name}" for module, name in deps]
    else:
        helpers = _STANDALONE_HELPERS.get(ex.id, ())
    parts = [inspect.getsource(reference.FUNCTIONS[n]) for n in (*helpers, *own)]
    return "\n".join(lines) + "\n\n" + "\n\n".join(parts)


def correct_solutions(ws: Path, steps: Sequence[str] = CORE, *, imports: bool = True) -> None:
    """Write the reference solutions of `steps` into workspace `ws` as learner files."""
    for step in steps:
        ex = resolve_step(step)
        (ws / ex.file).write_text(solution_source(ex.id, imports=imports), encoding="utf-8")


def write_step(ws: Path, step: str, source: str) -> Path:
    """Write a learner file for `step` (dedented) into `ws`."""
    path = ws / resolve_step(step).file
    path.write_text(textwrap.dedent(source).lstrip("\n"), encoding="utf-8")
    return path


@contextlib.contextmanager
def chdir(path: Path) -> Iterator[None]:
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


@dataclass
class Result:
    """What one command did: exit code, stdout, stderr, and both together."""

    exit_code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"<exit {self.exit_code}>\n--- stdout\n{self.stdout}\n--- stderr\n{self.stderr}"


def run(args: Sequence[str], cwd: Path, input: str | None = None) -> Result:
    """Run `attn-practice ARGS` in-process (CliRunner) from `cwd`."""
    runner = CliRunner()
    with chdir(cwd):
        res = runner.invoke(cli, list(args), input=input, catch_exceptions=False, env=PLAIN_ENV)
    try:
        stderr = res.stderr
    except ValueError:  # older Click mixes stderr into output
        stderr = ""
    return Result(res.exit_code, res.stdout, stderr)


def run_script(args: Sequence[str], cwd: Path, input: str | None = None,
               env: dict[str, str] | None = None) -> Result:
    """Run the installed `attn-practice` console script in a subprocess."""
    exe = shutil.which("attn-practice")
    assert exe, "the attn-practice console script is not installed (pip install -e .)"
    full_env = {**os.environ, "COLUMNS": "80", **(env or {})}
    full_env.pop("ATTN_PRACTICE_DEBUG", None)
    if env is None or "FORCE_COLOR" not in env:
        full_env.pop("FORCE_COLOR", None)
    proc = subprocess.run([exe, *args], cwd=cwd, input=input, capture_output=True, text=True,
                          env=full_env, timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def assert_clean(res: Result) -> None:
    """No Python traceback and no internal error reached the learner."""
    assert TRACEBACK not in res.output, res
    assert "internal error" not in res.output, res
    assert res.exit_code in (0, 1, 2), res


def joined(text: str) -> str:
    """Output with line wrapping undone, for phrase checks: panel side borders dropped and
    whitespace runs collapsed."""
    text = re.sub(r"^\s*│ ?|\s?│\s*$", "", text, flags=re.M)
    return re.sub(r"\s+", " ", text)


def make_workspace(parent: Path, name: str = "ws") -> Path:
    res = run(["start", name], parent)
    assert res.exit_code == 0, res
    return parent / name


@pytest.fixture(scope="session", autouse=True)
def _caches_in_a_temp_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The results cache, example store and learner data of every test (in-process or in a
    subprocess that inherits the environment) live in a temp dir, never the user's home: a
    test run leaves nothing behind, and no run sees what an earlier run left there."""
    base = tmp_path_factory.mktemp("xdg")
    with pytest.MonkeyPatch.context() as mp:
        for name in ("XDG_CACHE_HOME", "XDG_DATA_HOME"):
            mp.setenv(name, str(base / name.lower()))
        yield


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A fresh workspace made by `attn-practice start` in tmp_path."""
    return make_workspace(tmp_path)


@pytest.fixture(scope="module")
def module_workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One workspace shared by a module's read-only tests."""
    return make_workspace(tmp_path_factory.mktemp("shared"))


__all__ = ["ALL_STEPS", "CORE", "TRACEBACK", "assert_clean", "correct_solutions", "joined",
           "load_catalog", "make_workspace", "run", "run_script", "solution_source", "write_step"]
