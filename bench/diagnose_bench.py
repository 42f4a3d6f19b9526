"""Diagnosis cost: every labelled wrong file in tests/implementations, diagnosed in-process.

    python bench/diagnose_bench.py      # prints JSON: median and worst, cold and warm

The learner is called in-process here (no sandbox), so this is the grader's own
share of a failing step's diagnosis: probes, readings and the search over single
ids and pairs. "cold" is the first diagnosis of a step in a fresh process (probe
outputs of every reading not cached yet), "warm" a repeat.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import statistics
import time
from pathlib import Path

import numpy as np

from attn_practice.grader.engine.diagnose import diagnose
from attn_practice.reference.mistakes import STEP_FUNCTIONS

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "implementations"


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
    print(json.dumps(main(), indent=2))
