"""Attack: write fake result files into the cwd, the original submission, /tmp and the grader's package."""

import gc
import os
import sys
import types

import numpy as np

MARK = "ATTN-ATTACK fake result"
FAKE_SUITE = 'import pytest\npytestmark = pytest.mark.step("step1")\ndef test_ok(step):\n    """ATTN-ATTACK"""\n'


def _targets():
    yield os.path.join(os.getcwd(), "results.json")
    yield os.path.join(os.getcwd(), "report.xml")
    yield "/tmp/ATTN-ATTACK-results.json"
    yield "/dev/shm/ATTN-ATTACK-results.json"
    for obj in gc.get_objects():
        if type(obj).__name__ == "_Server":
            yield os.path.join(str(obj.display_dir), "ATTN-ATTACK-results.json")
        if isinstance(obj, types.ModuleType) and obj.__name__.endswith("protocol"):
            grader = os.path.dirname(str(obj.__file__))
            yield os.path.join(grader, "suites", "test_step1_attn_attack.py")
            yield os.path.join(os.path.dirname(grader), "reference", "ATTN-ATTACK.py")


WROTE = []
for path in _targets():
    try:
        with open(path, "w") as f:
            f.write(FAKE_SUITE if path.endswith(".py") else MARK)
        WROTE.append(path)
    except OSError:
        pass
print("wrote:", WROTE)


def dot_scores(Q, K):
    return np.zeros(np.shape(Q)[:-1] + np.shape(K)[-2:-1])
