"""Diagnosis cost: every labelled wrong file in tests/implementations, diagnosed in-process,
and a failing five-step submission graded against a passing one, end to end.

    python bench/diagnose_bench.py            # prints JSON: median and worst, cold and warm,
                                              # and the failing/passing grading ratio
    python bench/diagnose_bench.py --reps 3   # fewer gradings (default 5 of each)
    python bench/diagnose_bench.py --bonus    # and eight-step submissions (`grade_ratio_bonus`)

Target (issues 21, 39): a failing five-step submission is graded in at most 1.2x the
time of a passing one (`grade_ratio`; with --bonus also eight steps, where the
behavioural probes run: `grade_ratio_bonus`), both through the installed console script
with fresh cache dirs, the median of `--reps` runs each, interleaved so that the
load of a shared machine falls on both alike.

The learner is called in-process here (no sandbox), so this is the grader's own
share of a failing step's diagnosis: probes, readings and the search over single
ids and pairs. "cold" is the first diagnosis of a step in a fresh process (probe
outputs of every reading not cached yet), "warm" a repeat.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from attn_practice.grader.engine.diagnose import diagnose
from attn_practice.reference.mistakes import STEP_FUNCTIONS

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "implementations"
STEPS = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]
#: One real-style mistake per step for the failing submission (tests/implementations files).
FAILING = {
    "step1_scores": "step1/wrong_transpose_all_axes.py",
    "step2_scale": "step2/wrong_no_scale.py",
    "step3_softmax": "step3/wrong_ignores_axis__fixed_rank_cs224n.py",
    "step4_weighted_sum": "step4/wrong_weights_transposed.py",
    "step5_attention": "step5/wrong_transpose_all_axes__softmax_wrong_axis__dot_not_batched.py",
}
#: With --bonus, steps 6-8 too, each with a mistake only the behavioural probes (issue 39) name.
BONUS = {
    "step6_masked": "step6/wrong_transpose_all_axes__mask_ignored_kt.py",
    "step7_self_attention": "step7/wrong_transpose_all_axes__no_scale__causal_mask_hardcoded_gpt_block.py",
    "step8_multi_head": "step8/wrong_causal_mask_hardcoded__heads_no_transpose_gpt.py",
}


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_bench_{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    fn = getattr(module, STEP_FUNCTIONS[path.parent.name])

    def call(*args):
        with np.errstate(all="ignore"):
            return np.asarray(fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]),
                              dtype=np.float64)

    return call


def _cli() -> list[str]:
    beside = Path(sys.executable).parent / "attn-practice"
    if beside.is_file():
        return [str(beside)]
    exe = shutil.which("attn-practice")
    return [exe] if exe else [sys.executable, "-m", "attn_practice"]


def _submission(folder: Path, failing: bool, files: dict[str, str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    reference = (ROOT / "reference" / "attention.py").read_text(encoding="utf-8")
    for stem in files:
        text = (CORPUS / files[stem]).read_text(encoding="utf-8") if failing else reference
        (folder / f"{stem}.py").write_text(text, encoding="utf-8")
    return folder


def _grade_seconds(folder: Path, tmp: Path, n: int, n_steps: int = 5) -> float:
    """One grading of `folder` as a user runs it, with its own fresh cache dirs."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp / f"cache{n}"), "XDG_DATA_HOME": str(tmp / f"data{n}")}
    t0 = time.perf_counter()
    done = subprocess.run([*_cli(), "grade", str(folder), "--format", "json"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, check=False)
    seconds = time.perf_counter() - t0
    report = json.loads(done.stdout)
    steps = [s for s in report.get("steps", []) if s.get("id") in {f"step{i}" for i in range(1, n_steps + 1)}]
    if len(steps) != n_steps:
        raise RuntimeError(f"expected {n_steps} graded steps, got {[s.get('id') for s in steps]}")
    return seconds


def grading(reps: int, bonus: bool = False) -> dict:
    """Median seconds to grade a passing and a failing submission (five steps, or with `bonus`
    all eight), and their ratio."""
    files = {**FAILING, **(BONUS if bonus else {})}
    key = "_bonus" if bonus else ""
    with tempfile.TemporaryDirectory(prefix="diagbench") as raw:
        tmp = Path(raw)
        passing, failing = _submission(tmp / "pass", False, files), _submission(tmp / "fail", True, files)
        ok, bad = [], []
        for n in range(reps):
            ok.append(_grade_seconds(passing, tmp, 2 * n, len(files)))
            bad.append(_grade_seconds(failing, tmp, 2 * n + 1, len(files)))
    p, f = statistics.median(ok), statistics.median(bad)
    return {f"reps{key}": reps, f"passing_s{key}": round(p, 3), f"failing_s{key}": round(f, 3),
            f"grade_ratio{key}": round(f / p, 3), "target_ratio": 1.2}


def main() -> dict:
    cold, warm, worst = [], [], ("", 0.0)
    for path in sorted(CORPUS.glob("step*/wrong_*.py")):
        with contextlib.redirect_stdout(io.StringIO()):  # some files print
            try:
                call = _load(path)
            except ImportError:
                continue
            step = path.parent.name
            t0 = time.perf_counter()
            diagnose(step, call, [])
            t1 = time.perf_counter()
            diagnose(step, call, [])
            t2 = time.perf_counter()
        cold.append(t1 - t0)
        warm.append(t2 - t1)
        if t1 - t0 > worst[1]:
            worst = (f"{step}/{path.name}", t1 - t0)
    return {"files": len(cold), "cold_median_ms": 1000 * statistics.median(cold),
            "cold_max_ms": 1000 * max(cold), "warm_median_ms": 1000 * statistics.median(warm),
            "warm_max_ms": 1000 * max(warm), "slowest": worst[0]}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="gradings of each submission")
    parser.add_argument("--no-grading", action="store_true", help="only the in-process diagnosis")
    parser.add_argument("--bonus", action="store_true",
                        help="also grade eight-step submissions (steps 6-8: the behavioural probes)")
    args = parser.parse_args()
    result = main()
    if not args.no_grading:
        result.update(grading(args.reps))
        if args.bonus:
            result.update(grading(args.reps, bonus=True))
    print(json.dumps(result, indent=2))
