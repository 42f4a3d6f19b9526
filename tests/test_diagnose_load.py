"""Feedback is the same on a busy machine (issue 39).

The diagnosis corpus (`tests/implementations/`, the wrong files of the steps
whose probes changed most, and every file of the classes issue 39 added) is
diagnosed through the real sandbox, once on a quiet machine and once with two
CPU-bound processes beside it (as many as this machine has cores): every file
must get the same ids both times. No wall-clock threshold: the hogs only make
every call slower, which must change nothing a learner sees.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine.diagnose import diagnose
from attn_practice.grader.sandbox.launcher import Launcher, Limits
from attn_practice.grader.sandbox.learner import Learner
from attn_practice.reference.mistakes import STEP_FUNCTIONS

CORPUS = Path(__file__).parent / "implementations"
#: Files of the classes issue 39 names (suffixes of the real-style files) and every wrong file
#: of step 6 and step 8, where the new probes are.
_NEW = ("gpt", "temperature", "isqrt", "dmodel", "einsum", "only", "head_loop", "loops", "row_lists",
        "window", "plus_one", "additive", "inplace", "and", "kt", "three", "axis0", "rolled", "dk")
FILES = sorted(p for p in CORPUS.glob("step*/wrong_*.py")
               if p.parent.name in ("step6", "step8") or any(p.stem.endswith(s) or f"_{s}_" in p.stem
                                                              for s in _NEW))


def _hog(stop: multiprocessing.synchronize.Event) -> None:  # type: ignore[name-defined]
    x = 0
    while not stop.is_set():
        for i in range(100_000):
            x = (x * 31 + i) % 1_000_003


@contextmanager
def two_cpu_hogs() -> Iterator[None]:
    """Two busy processes for the duration (stopped by their pids' handles in finally).

    Where the machine has more than one CPU, the hogs and this process (so the
    sandboxes it starts meanwhile) share one CPU: the diagnosis gets a third of
    it, slower than with two hogs spread over two cores, while the rest of the
    suite keeps the other cores (two hogs loose on a 2-core CI machine slowed
    every test beside this one for a minute).
    """
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    hogs = [ctx.Process(target=_hog, args=(stop,), daemon=True) for _ in range(2)]
    kept = os.sched_getaffinity(0)
    one = {max(kept)} if len(kept) > 1 else kept
    os.sched_setaffinity(0, one)  # children started from here on inherit it
    for h in hogs:
        h.start()
    try:
        yield
    finally:
        stop.set()
        for h in hogs:
            h.join(timeout=10)
            if h.is_alive():
                h.kill()
                h.join()
        os.sched_setaffinity(0, kept)


def _diagnose_all(tmp: Path) -> dict[str, list[str]]:
    """Each file as a submission of its own step, diagnosed through a real sandbox."""
    out = {}
    with Launcher() as launcher:
        for path in FILES:
            step = path.parent.name
            ex = resolve_step(step)
            sub = tmp / f"{step}-{path.stem}"
            sub.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, sub / ex.file)
            learner = Learner(launcher, sub, step_id=step, module=ex.module, function=STEP_FUNCTIONS[step],
                              params=ex.params, limits=Limits(call_timeout=ex.timeout))
            try:
                out[f"{step}/{path.stem}"] = [d.id for d in diagnose(step, learner, [])]
            finally:
                learner.close()
    return out


@pytest.mark.slow
def test_the_corpus_gets_the_same_ids_with_two_cpu_hogs_beside_it(tmp_path: Path) -> None:
    assert len(FILES) >= 40
    quiet = _diagnose_all(tmp_path / "quiet")
    with two_cpu_hogs():
        busy = _diagnose_all(tmp_path / "busy")
    differ = {k: (quiet[k], busy[k]) for k in quiet if quiet[k] != busy[k]}
    assert not differ, differ
    labelled = [k for k in quiet if "/wrong_other" not in k]
    assert sum(bool(quiet[k]) for k in labelled) >= 0.9 * len(labelled)  # and ids were named at all
