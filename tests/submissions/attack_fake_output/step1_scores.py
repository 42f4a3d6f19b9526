"""Attack: print fake pytest summaries and a fake JSON report (stdout, stderr, raw fds); wrong answer."""

import json
import os
import sys

import numpy as np

FAKE = json.dumps({"schema": "attn-practice.grade/1", "submission": ".", "score": 5.0, "max_score": 5.0,
                   "steps": [{"id": "step1", "status": "passed", "score": 1.0, "max_score": 1.0}]})
print("=" * 30, "6 passed in 0.02s", "=" * 30)
print(FAKE)
sys.stderr.write("PASSED\n" + FAKE + "\n")
os.write(1, (FAKE + "\n").encode())
sys.__stdout__.write(FAKE + "\n")


def dot_scores(Q, K):
    print("tests/test_step1.py::test_worked_example PASSED")
    print(FAKE)
    os.write(2, b"===== 6 passed =====\n")
    return np.ones(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
