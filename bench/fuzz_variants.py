"""Do the hidden suites ever fail correct code? Many fresh examples, in process, for every variant.

`selftest` grades each catalogued correct variant once, through the sandbox,
on the examples one secret draws; a false fail that one example in thousands
triggers (a float32 summation order, say) slips through it and then fails a
student at random. This runs each step's hidden suite in this process against
every correct variant in `reference/variants.py` (and, for steps 5-8, a
float32 loop over the long axis: the summation order furthest from BLAS), with
Hypothesis drawing N fresh examples per test, and prints every failure with
its recipe (`strategies.rebuild` makes the input again).

    python bench/fuzz_variants.py                  # 2,000 examples per test, every step
    python bench/fuzz_variants.py -n 20000 step5   # more, one step

No sandbox: the variants are our own code. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITES = ROOT / "grader" / "suites"

CONFTEST = '''
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.sandbox.call_results import CallResult
from attn_practice.grader.suites import strategies as S
from attn_practice.grader.suites.assertions import StepContext
from attn_practice.reference import attention as reference
from attn_practice.reference.variants import variants_for

sys.path.insert(0, os.environ["FUZZ_TESTS"])
from test_float32_judge import SEQUENTIAL  # noqa: E402  (the float32 loops)

settings.register_profile("fuzz", max_examples=int(os.environ["FUZZ_N"]), deadline=None, database=None,
                          suppress_health_check=list(HealthCheck), phases=[Phase.generate])
settings.load_profile("fuzz")
LAST = []
_build = S.build


def _remember(name, params, salt=...):
    LAST[:] = [(name, params)]
    return _build(name, params, salt)


S.build = _remember


class InProcess:
    """A learner that is one of our own functions, called here (copies in, float64 out)."""

    def __init__(self, fn):
        self.fn = fn
        self.notes = {}

    def call(self, *args, expected_size=None, **kwargs):
        with np.errstate(all="ignore"):
            out = np.asarray(self.fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args], **kwargs))
        return CallResult(np.asarray(out, dtype=np.float64), str(out.dtype), "", [], 0.0, "")


def pytest_configure(config):
    config.addinivalue_line("markers", "step(id): the step")


@pytest.fixture
def step(request):
    sid = request.node.get_closest_marker("step").args[0]
    ex = resolve_step(sid)
    fns = dict(variants_for(sid)) | ({"float32-loop": SEQUENTIAL[sid]} if sid in SEQUENTIAL else {})
    return StepContext(ex, InProcess(fns[os.environ["FUZZ_VARIANT"]]), reference.FUNCTIONS[ex.function])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    rep = (yield).get_result()
    if rep.failed and call.when == "call":
        print(f"\\nFAILED {item.name} with {os.environ['FUZZ_VARIANT']} on the recipe {LAST}")
'''


def cases(steps: list[str]) -> list[tuple[str, Path, str]]:
    from attn_practice.reference.variants import variants_for

    out = []
    for suite in sorted(SUITES.glob("test_step*.py")):
        sid = suite.name.split("_")[1]
        if steps and sid not in steps:
            continue
        names = [n for n, _ in variants_for(sid)]
        if sid in ("step5", "step6", "step7", "step8"):
            names.append("float32-loop")
        out += [(sid, suite, name) for name in names]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=2000, help="examples per Hypothesis test")
    ap.add_argument("steps", nargs="*", help="only these steps (step1 ...)")
    args = ap.parse_args()
    failed = 0
    with tempfile.TemporaryDirectory(prefix="attnp-fuzz-") as tmp:
        work = Path(tmp)
        (work / "conftest.py").write_text(CONFTEST)
        for sid, suite, name in cases(args.steps):
            (work / suite.name).write_bytes(suite.read_bytes())
            env = os.environ | {"FUZZ_N": str(args.n), "FUZZ_VARIANT": name, "FUZZ_TESTS": str(ROOT / "tests")}
            proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
                                   "-o", "addopts=", str(work / suite.name)],
                                  cwd=work, env=env, capture_output=True, text=True)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILED ") and " with " in ln]
            print(f"{sid} {name:16} {'ok' if proc.returncode == 0 else 'FAILED'}", flush=True)
            for ln in lines:
                print("   ", ln)
            if proc.returncode not in (0, 5):
                failed += 1
                if not lines:
                    print(proc.stdout[-2000:], proc.stderr[-2000:])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
