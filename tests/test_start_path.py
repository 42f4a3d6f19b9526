"""What one `check` or one `grade` loads and starts, seen from outside (issue 22's start-up).

Each command runs through the installed console script under `python -X
importtime`, which lists every module the process imported, in the order
their imports finished. No timing is asserted: these fail when a lazy
import becomes eager again, or when the sandbox server no longer starts
before the engine is imported.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import correct_solutions, make_workspace, write_step

ROOT = Path(__file__).resolve().parent.parent
CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
DIAGNOSIS = "attn_practice.grader.engine.diagnose"


def _submission(folder: Path, wrong_step3: str | None = None) -> Path:
    folder.mkdir(parents=True)
    source = (ROOT / "reference" / "attention.py").read_text()
    for stem in CORE:
        (folder / f"{stem}.py").write_text(source)
    if wrong_step3:
        shutil.copy(ROOT / "tests" / "implementations" / "step3" / f"{wrong_step3}.py",
                    folder / "step3_softmax.py")
    return folder


def _imported(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """Run `attn-practice ARGS` with -X importtime; the result and the modules, in import order."""
    beside = Path(sys.executable).parent / "attn-practice"
    exe = str(beside) if beside.is_file() else shutil.which("attn-practice")
    assert exe, "the attn-practice console script is not installed (pip install -e .)"
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1"}
    env.pop("ATTN_PRACTICE_DEBUG", None)
    proc = subprocess.run([sys.executable, "-X", "importtime", exe, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)
    modules = [line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
               if line.startswith("import time:") and "|" in line]
    return proc, modules


def _has(modules: list[str], name: str) -> bool:
    return any(m == name or m.startswith(name + ".") for m in modules)


def test_grade_json_of_a_passing_submission_imports_neither_rich_nor_the_diagnosis(tmp_path):
    sub = _submission(tmp_path / "alice")
    proc, modules = _imported(["grade", str(sub), "--format", "json", "--no-cache"], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert json.loads(proc.stdout)["score"] == 5.0
    assert "pytest" in modules  # the run really graded
    assert not _has(modules, "rich"), "rich is for terminals and --format rich only"
    assert not _has(modules, DIAGNOSIS), "the diagnosis is for failing steps only"


def test_grade_of_a_failing_submission_still_names_the_mistake(tmp_path):
    sub = _submission(tmp_path / "bob", wrong_step3="wrong_ignores_axis")
    proc, modules = _imported(["grade", str(sub), "--format", "json", "--no-cache"], tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:]
    step3 = next(s for s in json.loads(proc.stdout)["steps"] if s["id"] == "step3")
    assert step3["status"] == "failed"
    assert "ignores-axis" in step3["diagnoses"]
    assert _has(modules, DIAGNOSIS)


@pytest.mark.parametrize("count,extra", [(1, []), (2, ["--jobs", "1"])])
def test_grade_in_this_process_starts_the_sandbox_server_before_importing_the_engine(tmp_path, count, extra):
    """The zygote imports NumPy while this process imports pytest and Hypothesis, not after."""
    subs = [str(_submission(tmp_path / f"carol{i}")) for i in range(count)]
    proc, modules = _imported(["grade", *subs, "--format", "json", "--no-cache", *extra], tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    started = modules.index("attn_practice.grader.sandbox.prestart")
    for heavy in ("numpy", "pytest", "hypothesis", "attn_practice.grader.engine.engine"):
        assert started < modules.index(heavy), f"{heavy} was imported before the zygote started"


def test_check_of_a_passing_step_skips_the_diagnosis_and_unused_rich_parts(tmp_path):
    ws = make_workspace(tmp_path)
    correct_solutions(ws, ("step3",))
    proc, modules = _imported(["check", "step3"], ws)
    assert proc.returncode == 0, proc.stdout
    assert "Passed step3" in proc.stdout
    started = modules.index("attn_practice.grader.sandbox.prestart")
    assert started < modules.index("pytest")
    assert not _has(modules, DIAGNOSIS)
    for unused in ("rich.table", "rich.panel", "rich.markdown", "rich.syntax"):
        assert unused not in modules, f"{unused} is not needed to show a passing step"


def test_check_of_a_failing_step_still_diagnoses_it(tmp_path):
    ws = make_workspace(tmp_path)
    write_step(ws, "step3", (ROOT / "tests" / "implementations" / "step3" / "wrong_ignores_axis.py").read_text())
    proc, modules = _imported(["check", "step3"], ws)
    assert proc.returncode == 1, proc.stdout
    assert _has(modules, DIAGNOSIS)


UNTAKEN = textwrap.dedent("""
    import json, sys
    from attn_practice.cli import exit_now
    from attn_practice.grader.sandbox import prestart

    prestart.prestart()
    proc, _ctl, root = prestart._READY
    print(json.dumps({"pid": proc.pid, "root": str(root)}), flush=True)
    exit_now(0)  # as every command ends: exit handlers, then os._exit
""")


def test_a_prestarted_sandbox_server_nobody_takes_is_stopped_and_removed_at_exit(tmp_path):
    """E.g. `grade` of one submission answered from the cache: no process or folder is left."""
    proc = subprocess.run([sys.executable, "-c", UNTAKEN], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert not Path(info["root"]).exists()
    assert not Path(f"/proc/{info['pid']}").exists()  # reaped, not even a zombie


def test_grade_answered_from_the_cache_still_reports_the_same(tmp_path):
    """The zygote started for it goes unused (see the test above), and the report is unchanged."""
    sub = _submission(tmp_path / "dora")
    args = ["grade", str(sub), "--format", "csv", "--cache-dir", str(tmp_path / "cache")]
    first, _ = _imported(args, tmp_path)
    assert first.returncode == 0, first.stderr[-2000:]
    again, modules = _imported(args, tmp_path)
    assert again.returncode == 0, again.stderr[-2000:]
    assert again.stdout == first.stdout
    assert "attn_practice.grader.sandbox.prestart" in modules


COLLECTOR = textwrap.dedent("""
    import atexit, gc, json, sys

    def tell():  # exit handlers run as every command ends
        import os
        print("GC " + json.dumps({"enabled": gc.isenabled(), "frozen": gc.get_freeze_count(),
                                  "blas": os.environ.get("OPENBLAS_NUM_THREADS"),
                                  "modules": sorted(sys.modules)}), file=sys.stderr)

    atexit.register(tell)
    from attn_practice.cli import main
    main(sys.argv[1:])
""")


def _collector_after(args: list[str], cwd: Path) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", COLLECTOR, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env={**os.environ, "COLUMNS": "80"})
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    line = next(x for x in proc.stderr.splitlines() if x.startswith("GC "))
    return json.loads(line[3:])


def test_check_and_grade_resume_the_collector_after_their_imports(tmp_path):
    """The start-up pause ends: the collector runs again, and skips what the imports loaded."""
    ws = make_workspace(tmp_path)
    correct_solutions(ws, ("step3",))
    state = _collector_after(["check", "step3"], ws)
    assert state["enabled"] is True and state["frozen"] > 50_000
    sub = _submission(tmp_path / "erin")
    state = _collector_after(["grade", str(sub), "--format", "json", "--no-cache"], tmp_path)
    assert state["enabled"] is True and state["frozen"] > 50_000


def test_other_commands_run_with_the_collector_on_from_the_start(tmp_path):
    """`serve`, `host`, `watch` run for hours: the pause ends as soon as the command is chosen."""
    ws = make_workspace(tmp_path)
    for args in (["status"], ["show", "step1"], ["hint", "step1"]):
        state = _collector_after(args, ws)
        assert state["enabled"] is True, args
        assert state["frozen"] < 50_000, args  # no engine was loaded, so none of it is frozen


def test_grade_loads_no_hypothesis_plugin_and_uses_one_blas_thread(tmp_path):
    """Whatever else is installed (trio registers a Hypothesis plugin) takes no part in a run."""
    from importlib.metadata import entry_points

    sub = _submission(tmp_path / "fred")
    state = _collector_after(["grade", str(sub), "--format", "json", "--no-cache"], tmp_path)
    assert "hypothesis" in state["modules"]
    plugins = {e.value.split(":")[0] for e in entry_points(group="hypothesis")}
    assert not plugins & set(state["modules"]), plugins
    assert state["blas"] == "1"


def test_the_sandbox_servers_modules_are_compiled_once_not_at_every_start(tmp_path):
    """The zygote runs with PYTHONDONTWRITEBYTECODE; the grader writes its bytecode for it."""
    import importlib.util

    import attn_practice.grader.sandbox as sandbox

    source = Path(sandbox.__file__).parent / "landlock.py"
    compiled = Path(importlib.util.cache_from_source(str(source)))
    if not os.access(compiled.parent, os.W_OK):
        return  # an installed, read-only package: its installer compiled it
    compiled.unlink(missing_ok=True)
    ws = make_workspace(tmp_path)
    correct_solutions(ws, ("step3",))
    proc, _ = _imported(["check", "step3"], ws)
    assert proc.returncode == 0, proc.stdout
    assert compiled.is_file()
    assert compiled.stat().st_mtime_ns >= source.stat().st_mtime_ns
