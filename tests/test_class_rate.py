"""What makes a class faster (issue 22) never changes a verdict or leaks between submissions.

Speed itself is measured in bench/ (side_by_side.py, breakdown.py) as ratios, never here.
"""

from __future__ import annotations

import gc
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_grade import make_submission

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.engine import replay
from attn_practice.grader.results import without_timings
from attn_practice.grader.sandbox import protocol
from attn_practice.grader.suites import strategies
from attn_practice.grader.suites.assertions import StepContext, StepFailure
from attn_practice.reference import attention


def _console_script() -> list[str]:
    beside = Path(sys.executable).parent / "attn-practice"
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "attn_practice"]


# -- the prefetch dry run ---------------------------------------------------------------------
class _Batcher:
    """Stands in for `Learner` where only the batching is looked at: it keeps the batch sent."""

    layout_salt = 7

    def __init__(self) -> None:
        self.batches: list[Any] = []

    def prefetch(self, packed: Any) -> None:
        self.batches.append(packed)


def test_the_dry_run_judges_nothing_and_leaves_the_real_run_judging() -> None:
    """The dry run answers with the reference and skips `compare`; afterwards a wrong answer fails again.

    A dry run left switched on would pass every wrong answer: whatever the test
    does (here it breaks half-way), the context comes out of it judging.
    """
    ctx = StepContext(resolve_step("step1"), _Batcher(), attention.dot_scores)  # type: ignore[arg-type]
    Q, K = np.ones((2, 3)), np.arange(6.0).reshape(2, 3)
    seen: list[bool] = []

    def test(step: StepContext, Q: np.ndarray, K: np.ndarray) -> None:
        got = step.check(Q, K)
        step.compare(got + 1.0, got, (Q, K))  # wrong on purpose: judged only for real
        seen.append(step.dry_run)
        raise RuntimeError("a test that breaks in the middle of its dry run")

    replay.ExampleReplay()._prefetch(("node", 1), [{"Q": Q, "K": K}], test, {"step": ctx})
    assert seen == [True]
    assert not ctx.dry_run and ctx.collecting is None
    assert len(ctx.learner.batches) == 1 and len(ctx.learner.batches[0].calls) == 1
    right = attention.dot_scores(Q, K)
    with pytest.raises(StepFailure):
        ctx.compare(right + 1.0, right, (Q, K))
    ctx.compare(right, right, (Q, K))  # and a right one passes


def test_the_dry_run_skips_the_scale_and_value_range_work_and_the_real_run_does_it() -> None:
    """In a dry run `rounding_scale` is zeros of the output's shape (any array of that shape
    serves a test that indexes or broadcasts it) and the value-range property is not computed;
    for real, the scale is the step's and an answer outside V's range fails."""
    ctx = StepContext(resolve_step("step5"), _Batcher(), attention.attention)  # type: ignore[arg-type]
    rng = np.random.default_rng(5)
    Q, K, V = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 5, 4)), rng.normal(size=(2, 5, 6))
    seen: list[tuple[bool, Any]] = []

    def test(step: StepContext, Q: np.ndarray, K: np.ndarray, V: np.ndarray) -> None:
        got = step.check(Q, K, V, scale=step.rounding_scale(Q, K, V))
        step.require_in_value_range(got + 1e6, V, (Q, K, V))  # outside: judged only for real
        seen.append((step.dry_run, step.rounding_scale(Q, K, V)))

    replay.ExampleReplay()._prefetch(("node", 1), [{"Q": Q, "K": K, "V": V}], test, {"step": ctx})
    assert len(seen) == 1 and seen[0][0] is True
    assert seen[0][1].shape == (2, 3, 6) and not seen[0][1].any()
    real = ctx.rounding_scale(Q, K, V)
    assert real.shape == (2, 3, 6) and real.min() > 0
    with pytest.raises(StepFailure):
        ctx.require_in_value_range(attention.attention(Q, K, V) + 1e6, V, (Q, K, V))
    assert len(ctx.learner.batches) == 1 and len(ctx.learner.batches[0].calls) == 1


# -- inputs rebuilt from recipes ---------------------------------------------------------------
def _built_the_long_way(shape: tuple[int, ...], dtype: np.dtype, style: str, seed: int, bound: float,
                        salt: int | None) -> Any:
    """The builder's draws, then a clip of every style and a cast (a copy) of every dtype, as
    before issue 22 (the draws are today's: whole numbers as floor(uniform), picks by index)."""
    rng = strategies._rng(seed, salt)
    small = min(bound, 3.0)
    if style == "small-ints":
        a = np.floor(rng.uniform(-int(small), int(small) + 1, size=shape))
    elif style == "normal":
        a = rng.normal(0.0, min(bound / 3, 2.0), size=shape)
    elif style == "uniform":
        a = rng.uniform(-bound, bound, size=shape)
    elif style == "wide-ints":
        a = np.floor(rng.uniform(-int(min(bound, 1e6)), int(min(bound, 1e6)) + 1, size=shape))
    elif style == "mixed-scale":
        top = int(np.floor(np.log10(max(bound, 1.0))))
        a = rng.uniform(0.1, 1.0, size=shape) * np.power(10.0, np.floor(rng.uniform(-3, top + 1, size=shape)))
        a = np.where(rng.random(shape) < 0.5, -a, a)
    elif style == "positive":
        a = rng.uniform(bound / 10, bound, size=shape)
    else:
        a = np.array([-bound, -bound / 2, 0.0, bound / 2, bound])[rng.integers(0, 5, size=shape)]
    a = np.clip(a, -bound, bound)
    with np.errstate(over="ignore"):
        return a.astype(dtype)


def test_inputs_are_the_same_values_as_clipping_and_casting_every_array() -> None:
    """Skipping a clip that cannot bite and a float64 copy changes no input, salted or public;
    and the whole-number styles give whole numbers within the bound."""
    rng = random.Random(22)
    for style in strategies.STYLES:
        for bound in (0.5, 1.0, 2.5, 10.0, 300.0, 1e3, 1e100, 1e300):
            for dtype in (np.dtype(np.float64), np.dtype(np.float32)):
                for shape in ((), (1,), (3, 4), (2, 3, 5)):
                    seed, salt = rng.randrange(2**32), rng.choice([None, rng.randrange(2**62)])
                    want = _built_the_long_way(shape, dtype, style, seed, bound, salt)
                    got = strategies._materialize(shape, dtype, style, seed, bound, salt)
                    assert type(got) is type(want) and got.dtype == want.dtype and np.shape(got) == np.shape(want)
                    assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (style, bound, dtype, shape)
                    if dtype == np.float64:  # (a float32 cast of a bound past its range overflows, as ever)
                        assert np.all(np.abs(got) <= bound)
                    if style.endswith("-ints"):
                        assert np.all(np.floor(got) == got)


def test_two_arrays_of_one_recipe_never_share_memory() -> None:
    """Without the cast's copy each array is still its own: a test scribbling on one spoils no other."""
    recipe = ("arrays", {"arrays": [[[3, 4], "<f8", "uniform", 5, 10.0], [[3, 4], "<f8", "uniform", 5, 10.0]]})
    a, b = strategies.rebuild(recipe, 11)
    c, _ = strategies.rebuild(recipe, 11)
    assert not np.shares_memory(a, b) and not np.shares_memory(a, c)
    a[...] = 0
    assert np.all(b == c) and not np.all(c == 0)


def test_arrays_kept_for_a_salt_are_the_values_built_afresh_and_never_another_salts() -> None:
    """A recipe is built once per salt and copied after (`strategies._make`): whatever order
    salts come in (submissions, the public examples), each array is what building it gives."""
    spec = [[2, 3], "<f8", "normal", 77, 10.0]
    recipe = ("arrays", {"arrays": [spec]})
    fresh = {salt: strategies._materialize((2, 3), np.dtype("<f8"), "normal", 77, 10.0, salt)
             for salt in (None, 5, 6)}
    assert not np.array_equal(fresh[5], fresh[6]) and not np.array_equal(fresh[5], fresh[None])
    for salt in (5, 6, 5, None, 5, 5, 6, None):
        (got,) = strategies.rebuild(recipe, salt)
        assert got.tobytes() == fresh[salt].tobytes(), salt
        got[...] = 0  # a test scribbling on its copy changes nothing for the next

# -- warm workers -------------------------------------------------------------------------------
def test_a_settled_worker_still_collects_and_grades_as_before(tmp_path: Path) -> None:
    """After the second submission the worker freezes what it keeps; later garbage is still collected."""
    from attn_practice.grader.course import default_course
    from attn_practice.grader.staff import worker
    from attn_practice.grader.staff.batch import options_for

    subs = [make_submission(tmp_path / f"s{i}", {1: "wrong_dot_not_batched"} if i % 2 else None,
                            steps=["step1_scores"]) for i in range(4)]
    options = options_for(default_course(), secret="class-rate-test")
    gc.unfreeze()
    try:
        with worker.batch_engine(options) as engine:
            reports = []
            for i, sub in enumerate(subs):
                reports.append(worker.grade_with(engine, sub, ["step1"], label=f"s{i}"))
                if i == 0:
                    assert gc.get_freeze_count() == 0
            assert gc.get_freeze_count() > 0 and engine in worker._SETTLED

            class Cycle:
                pass

            loop = Cycle()
            loop.me = loop  # type: ignore[attr-defined]
            del loop
            assert gc.collect() >= 1  # garbage made after settling is found as before
        with worker.batch_engine(options) as fresh:
            again = [worker.grade_with(fresh, sub, ["step1"], label=f"s{i}") for i, sub in enumerate(subs)]
    finally:
        gc.unfreeze()
    assert [r.score for r in reports] == [1.0, 0.0, 1.0, 0.0]
    assert [without_timings(r.to_dict()) for r in reports] == [without_timings(r.to_dict()) for r in again]


def test_only_an_engine_sure_of_more_collects_the_whole_session_for_its_first(tmp_path: Path) -> None:
    """A lone `grade` keeps pytest on its own steps; a worker of a class collects every suite once, at once."""
    from attn_practice.grader.course import default_course
    from attn_practice.grader.staff import worker
    from attn_practice.grader.staff.batch import options_for

    sub = make_submission(tmp_path / "s", steps=["step1_scores"])
    options = options_for(default_course(), secret="class-rate-test")
    reports = []
    for many in (False, True):
        with worker.batch_engine(options, many=many) as engine:
            reports.append(worker.grade_with(engine, sub, ["step1"], label="s"))
            assert (engine.suites.session is not None) is many
    assert without_timings(reports[0].to_dict()) == without_timings(reports[1].to_dict())


def test_pool_workers_run_blas_on_one_thread_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    from attn_practice.grader.staff import pool

    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")  # the user's own choice stands
    pool.one_blas_thread_by_default()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and os.environ["MKL_NUM_THREADS"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "3"


# -- the wire: one write per message, a deadline over all of it ---------------------------------
@pytest.mark.parametrize("columns", [4, 4096, 400_000])  # joined (small, wide) and piecewise (past JOIN_BYTES)
def test_messages_of_every_size_arrive_whole(columns: int) -> None:
    a, b = socket.socketpair()
    arrays = [np.arange(3 * columns, dtype=np.float64).reshape(3, columns), np.ones(5, dtype=np.float32)]
    blobs: list[bytes] = []
    specs = protocol.pack_values(arrays, blobs)
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.append(protocol.recv(b, deadline=time.monotonic() + 60)))
    reader.start()
    protocol.send(a, {"op": "x", "v": specs}, blobs, deadline=time.monotonic() + 60)
    reader.join(60)
    a.close()
    b.close()
    header, back = got[0]
    for want, have in zip(arrays, protocol.unpack_values(header["v"], back), strict=True):
        assert have.dtype == want.dtype and np.array_equal(have, want)


@pytest.mark.parametrize("size", [64 * 1024, protocol.JOIN_BYTES + 1])
def test_a_peer_that_never_reads_cannot_hold_a_send_past_its_deadline(size: int) -> None:
    a, b = socket.socketpair()
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    t0 = time.monotonic()
    with pytest.raises((TimeoutError, OSError)):
        protocol.send(a, {"op": "x"}, [b"\0" * size, b"\1" * 10], deadline=t0 + 0.5)
    assert time.monotonic() - t0 < 15.0  # the deadline, not the peer, ended it
    a.close()
    b.close()


# -- the whole path, where users meet it ------------------------------------------------------------
def _run_watched(cmd: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run `cmd`; what it left behind (processes it started, its fork servers' sandbox folders),
    watched from its own process tree: other tests may be running sandboxes beside it."""
    from live_processes import Descendants

    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = Descendants(proc.pid)
    try:
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        watch.stop()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), watch.left()


def test_workers_started_for_a_class_that_turns_out_to_be_one_submission_are_ended(tmp_path: Path) -> None:
    """`grade` starts its workers before the intake (`pool.start_early`); when only one
    submission is left to grade (here: the other argument is no submission), it is graded in
    this process and the early workers are ended, with nothing of theirs left behind."""
    sub = make_submission(tmp_path / "a")
    (tmp_path / "notes.txt").write_text("not a submission\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), XDG_DATA_HOME=str(tmp_path / "data"))
    res, left = _run_watched([*_console_script(), "grade", str(sub), str(tmp_path / "notes.txt"),
                              "--format", "json", "--jobs", "2"], env)
    assert res.returncode == 1, res.stderr  # notes.txt is a row too (issue 36): all missing
    reports = json.loads(res.stdout)
    assert reports[0]["passed"] is True and "found: notes.txt (text, not Python)" in json.dumps(reports[1])
    assert left == set()


@pytest.mark.slow
@pytest.mark.parametrize("where", [[], ["--dask", "local"]], ids=["pool", "dask-local"])
def test_workers_started_for_arguments_that_hold_no_submission_are_ended(tmp_path: Path, where: list[str]) -> None:
    """The early workers are ended when the arguments turn out to hold no work at all (each
    still a row, all missing: issue 36), and no process of theirs (or of a Dask cluster) is left running."""
    if where:
        pytest.importorskip("distributed")
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("not a submission\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), XDG_DATA_HOME=str(tmp_path / "data"))
    res, left = _run_watched([*_console_script(), "grade", str(tmp_path / "a.txt"),
                              str(tmp_path / "b.txt"), "--format", "json", "--jobs", "2", *where], env)
    assert res.returncode == 1 and "a.txt" in res.stderr, res.stderr
    assert "Traceback" not in res.stderr
    assert left == set()


@pytest.mark.slow
def test_a_class_on_two_workers_gets_the_same_verdicts_twice(tmp_path: Path) -> None:
    """`grade --jobs 2` on a class past the point where workers settle: same report twice, right verdicts."""
    subs = []
    for i in range(6):
        wrong = {3: "wrong_softmax_global"} if i % 3 == 1 else {5: "wrong_scale_by_dv"} if i % 3 == 2 else None
        subs.append(str(make_submission(tmp_path / f"s{i}", wrong)))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "xdg"), ATTN_PRACTICE_CACHE=str(tmp_path / "xdg" / "r"))
    outs = []
    for run in ("a", "b"):
        out = tmp_path / f"{run}.json"
        _, left = _run_watched([*_console_script(), "grade", *subs, "--format", "json", "--no-cache",
                                "--jobs", "2", "--out", str(out)], env)
        outs.append(json.loads(out.read_text()))
        # The pool's workers skip the interpreter's teardown (`pool._leave_quickly`), never their
        # own: no fork server and no sandbox folder of theirs outlives the command.
        assert left == set()
    assert without_timings(outs[0]) == without_timings(outs[1])
    by_sub = {Path(r["submission"]).name: {s["id"]: s["status"] for s in r["steps"]} for r in outs[0]}
    for i in range(6):
        statuses = by_sub[f"s{i}"]
        failing = {k for k, v in statuses.items() if v != "passed"}
        assert failing == ({"step3"} if i % 3 == 1 else {"step5"} if i % 3 == 2 else set()), (i, statuses)

