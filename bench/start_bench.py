"""Issue 22's two start-up figures only, beside their anchors, in one run (faster to iterate than side_by_side).

    python bench/start_bench.py [--reps 5]

Prints `grade ONE --format json --no-cache` as a ratio to plain pytest on the
anchor assignment, and `check step3` in a workspace as a ratio to the import
floor (`python -c "import numpy, pytest, hypothesis"`). Goals: <= 0.5 and <= 1.25.
Runs are interleaved (floor, pytest, grade, check, repeat) so load changes hit all alike.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from side_by_side import HERE, STEPS, cli, make_class, timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="attnp-start-"))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "xdg"), ATTN_PRACTICE_CACHE=str(tmp / "xdg" / "results"))
    try:
        one = make_class(tmp / "class", 1)[0]
        timed([sys.executable, "-m", "attn_practice.grader.engine.warm"], env=env)
        ws = tmp / "ws"
        subprocess.run([*cli(), "start", str(ws)], env=env, stdout=subprocess.DEVNULL, check=True)
        for stem in STEPS:
            shutil.copy(Path(one) / f"{stem}.py", ws / f"{stem}.py")
        runs: dict[str, list[float]] = {"floor": [], "pytest_one": [], "grade_one": [], "check_step3": []}
        timed([*cli(), "check", "step3"], cwd=ws, env=env)  # first check writes the state file
        for _ in range(args.reps):
            runs["floor"].append(timed([sys.executable, "-c", "import numpy, pytest, hypothesis"]))
            runs["pytest_one"].append(timed([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                             str(HERE / "anchor_test.py")], env=dict(os.environ, SUBMISSION=one),
                                            cwd=tmp))
            runs["grade_one"].append(timed([*cli(), "grade", one, "--format", "json", "--no-cache"], env=env))
            runs["check_step3"].append(timed([*cli(), "check", "step3"], cwd=ws, env=env))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in runs.items()}
    res = {"medians_s": med,
           "grade_one_ratio_to_plain_pytest": med["grade_one"] / med["pytest_one"],
           "check_step3_ratio_to_floor": med["check_step3"] / med["floor"],
           "goals": {"grade_one_ratio_to_plain_pytest": 0.5, "check_step3_ratio_to_floor": 1.25},
           "load": os.getloadavg()[0]}
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
