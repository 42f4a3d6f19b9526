"""A report does not depend on what the process graded before (`serve`, `host`, notebooks).

One process may run engines with different Hypothesis settings: a `grade`
(no shrinking) and a `check` (shrinking), in either order. The suites'
modules are imported once per process, and `@given` keeps the settings that
were the default at import; each run must still use its own engine's. Each
case runs in a fresh interpreter of its own (this test process has a history
of its own), and is compared, without timings, with the same run alone.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attn_practice.grader.results import without_timings

HERE = Path(__file__).parent
NO_SCALE = "import numpy as np\n\ndef scale_scores(scores, d_k):\n    return scores\n"

#: Runs ACTIONS (argv[1], a JSON list) in one interpreter; prints the last action's report.
_RUNNER = r"""
import json, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from test_grade import make_submission
from conftest import solution_source
from attn_practice.grader.host.checks import work
from attn_practice.grader.staff import batch

def check(step, source):
    files = {"step1_scores.py": solution_source("step1"), f"{step}_scale.py": source}
    return work.check_files(step, files, options=work.host_options())["report"]

def grade(n, wrong):
    tmp = Path(tempfile.mkdtemp())
    subs = [make_submission(tmp / f"s{i}", {2: wrong} if wrong else None) for i in range(n)]
    options = batch.options_for(batch.default_course())
    got = dict(batch._grade_here(options, subs, [f"s{i}" for i in range(n)], list(range(n)),
                                 {i: ["step1", "step2", "step3"] for i in range(n)}))
    return got[n - 1].to_dict()

out = None
for action in json.loads(sys.argv[1]):
    out = check("step2", action[1]) if action[0] == "check" else grade(action[1], action[2])
sys.stdout.write(json.dumps(out))
"""


def _run(actions: list[list]) -> dict:
    proc = subprocess.run([sys.executable, "-c", _RUNNER, json.dumps(actions), str(HERE)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return without_timings(json.loads(proc.stdout))


@pytest.mark.slow
def test_a_check_after_grades_reports_what_a_check_alone_does():
    alone = _run([["check", NO_SCALE]])
    after = _run([["grade", 2, None], ["check", NO_SCALE]])
    assert after == alone
    failed = [t["name"] for t in alone["steps"][0]["tests"] if t["status"] != "passed"]
    assert len(failed) > 2  # several failures, so their order is part of what is compared


@pytest.mark.slow
def test_a_grade_after_checks_reports_what_a_grade_alone_does():
    alone = _run([["grade", 2, "wrong_no_scale"]])
    after = _run([["check", NO_SCALE], ["grade", 2, "wrong_no_scale"]])
    assert after == alone
    assert alone["steps"][1]["status"] != "passed"
