"""Issue 39: behavioural probes measure what the code does, not only which known mistake it is.

In-process (the engine's `call` shape, see `test_diagnose.as_call`): each probe
alone (a property on code no reading models), each in pairs with other
mistakes, the plain words shown where no id fits, and a probe that a limit
stops (retried alone, else reported as not measured, never silently dropped).
The corpus files of these classes (GPT blocks, einsum, additive masks,
(batch, heads, seq, d) layouts, 3-D-only and 4-D-only code, temperatures)
live in `tests/implementations/` and are checked by `test_diagnose.py`.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from test_diagnose import as_call, failing_inputs, ids

from attn_practice.grader.engine.diagnose import MEASURED_NOTE, PROBES, diagnose
from attn_practice.grader.engine.diagnose.behaviour import (
    causal,
    head_independence,
    mask_sensitivity,
    rank_support,
    rank_text,
)
from attn_practice.grader.engine.diagnose.evidence import MAX_CALLS, MAX_RETRIES, observe
from attn_practice.grader.results import Failure, FailureKind
from attn_practice.grader.sandbox.learner import LearnerError
from attn_practice.reference.attention import FUNCTIONS
from attn_practice.reference.mistakes import MISTAKES, STEP_FUNCTIONS, mistakes_for


def sw(a: np.ndarray) -> np.ndarray:
    return np.swapaxes(a, -1, -2)


def sm(s: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def tril(s: np.ndarray) -> np.ndarray:
    return np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)


def heads(Z, Wq, Wk, Wv, Wo, h, key_of=lambda i, h: i, scale=None):  # noqa: ANN001, ANN201
    """A head loop; `key_of(i, h)`: whose key columns head i scores against."""
    d = Z.shape[-1] // h
    Q, K, V = Z @ Wq, Z @ Wk, Z @ Wv
    outs = []
    for i in range(h):
        g = key_of(i, h)
        s = Q[..., i * d:(i + 1) * d] @ sw(K[..., g * d:(g + 1) * d]) / (scale or math.sqrt(d))
        outs.append(sm(s) @ V[..., i * d:(i + 1) * d])
    return np.concatenate(outs, -1) @ Wo


def _obs(step: str, fn: Callable[..., Any]) -> list[Any]:
    return observe(step, as_call(fn), [])


# ------------------------------------------------------- each probe alone
def test_causality_probe_finds_a_mask_no_reading_models() -> None:
    """A sliding window (each query sees itself and the key before): no reading, still causal."""
    def window(Q, K, V):
        s = Q @ sw(K) / np.sqrt(Q.shape[-1])
        i, j = np.arange(s.shape[-2])[:, None], np.arange(s.shape[-1])[None, :]
        return sm(np.where((j <= i) & (j >= i - 1), s, -np.inf)) @ V

    found = causal("step5", _obs("step5", window))
    assert found is not None and found.id == "causal-mask-hardcoded"
    assert "queries 0 to 2 stays the same" in found.text and "no mask was given" in found.text
    assert ids("step5", window) == ["causal-mask-hardcoded"]


@pytest.mark.parametrize(("step", "fn"), [
    ("step5", lambda Q, K, V: sm(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V),
    ("step5", lambda Q, K, V: sm(Q @ sw(K)) @ V),  # wrong, but every query sees every key
    ("step5", lambda Q, K, V: V[..., :Q.shape[-2], :] if Q.shape[-2] <= K.shape[-2] else None),
    ("step7", lambda Z, Wq, Wk, Wv: Z @ Wv),  # no position sees another: not causal attention
    ("step8", lambda Z, Wq, Wk, Wv, Wo, h: (Z @ Wv) @ Wo),
])
def test_causality_probe_is_silent_where_queries_see_later_keys_or_nothing(step: str, fn: Callable[..., Any]) -> None:
    assert causal(step, _obs(step, fn)) is None


def test_mask_probe_tells_ignored_from_inverted_from_used() -> None:
    def ignored(Q, K, V, mask):
        return sm(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V + 1.0  # and something no id names

    def inverted(Q, K, V, mask):
        return sm(np.where(mask, -np.inf, Q @ sw(K) / np.sqrt(Q.shape[-1]))) @ V

    got = mask_sensitivity(_obs("step6", ignored))
    assert got is not None and got.id == "mask-ignored" and "changes nothing" in got.text
    got = mask_sensitivity(_obs("step6", inverted))
    assert got is not None and got.id == "mask-inverted"
    assert mask_sensitivity(_obs("step6", FUNCTIONS["masked_attention"])) is None
    assert ids("step6", ignored) == ["mask-ignored"]


def test_head_probe_names_the_head_mistake_it_measures_or_says_what_it_saw() -> None:
    def no_transpose(Z, Wq, Wk, Wv, Wo, h):
        *lead, T, C = Z.shape
        q, k, v = ((Z @ W).reshape(*lead, h, T, C // h) for W in (Wq, Wk, Wv))
        return (sm(q @ sw(k) / math.sqrt(C // h)) @ v).reshape(*lead, T, C) @ Wo

    def rolled(Z, Wq, Wk, Wv, Wo, h):
        return heads(Z, Wq, Wk, Wv, Wo, h, key_of=lambda i, h: (i + 1) % h)

    got = head_independence(_obs("step8", no_transpose))
    assert got is not None and got.id == "heads-no-transpose"
    got = head_independence(_obs("step8", rolled))
    assert got is not None and got.id is None and "head 0's output" in got.text
    assert head_independence(_obs("step8", FUNCTIONS["multi_head_attention"])) is None


def test_rank_support_says_which_ranks_work_and_where_the_first_breaks() -> None:
    def batch_plus_one(Q, K, V):
        out = sm(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V
        return out if out.ndim == 2 else out + 1.0

    support = rank_support(_obs("step5", batch_plus_one))
    assert support == {2: "right", 3: "wrong", 4: "wrong"}
    assert rank_text(support) == ("Measured: 2-D input gives right answers; 3-D input gives wrong answers; "
                                  "4-D input gives wrong answers (it first breaks at 3-D).")


@pytest.mark.parametrize(("step", "want", "fn"), [
    ("step5", ["wrong-scale"], lambda Q, K, V, temperature=8.0: sm(Q @ sw(K) / temperature) @ V),
    ("step5", ["wrong-scale"], lambda Q, K, V: sm(Q @ sw(K) / math.isqrt(Q.shape[-1])) @ V),
    ("step5", ["wrong-scale"], lambda Q, K, V: sm(Q @ sw(K) * 0.3) @ V),
    ("step7", ["wrong-scale"], lambda Z, Wq, Wk, Wv: sm((Z @ Wq) @ sw(Z @ Wk) / np.sqrt(Z.shape[-1])) @ (Z @ Wv)),
    ("step8", ["wrong-scale"], lambda Z, Wq, Wk, Wv, Wo, h: heads(Z, Wq, Wk, Wv, Wo, h, scale=2.5)),
    ("step6", ["wrong-scale"], lambda Q, K, V, m: sm(np.where(m, Q @ sw(K) / 10.0, -1e9)) @ V),
])
def test_scale_probe_fits_temperatures_and_other_constants(step: str, want: list[str], fn: Callable[..., Any]) -> None:
    assert ids(step, fn) == want
    d = diagnose(step, as_call(fn), [], source="")[0]
    assert d.explanation.startswith("Measured: your scores are")


# ------------------------------------------------------------ in pairs
def gpt_kt_temperature(Q, K, V, temperature=10.0):
    return sm(Q @ K.T / temperature) @ V


def gpt_causal_temperature(Q, K, V):
    return sm(tril(Q @ sw(K) / 4.0)) @ V


def gpt_causal_kt(Z, Wq, Wk, Wv):
    Q, K, V = Z @ Wq, Z @ Wk, Z @ Wv
    return sm(tril(Q @ K.T / np.sqrt(K.shape[-1]))) @ V


def causal_no_transpose(Z, Wq, Wk, Wv, Wo, h):
    *lead, T, C = Z.shape
    q, k, v = ((Z @ W).reshape(*lead, h, T, C // h) for W in (Wq, Wk, Wv))
    return (sm(tril(q @ sw(k) / math.sqrt(C // h))) @ v).reshape(*lead, T, C) @ Wo


def ignored_kt_dk(Q, K, V, mask):
    return sm(Q @ K.T / Q.shape[-1]) @ V


def ignored_temperature(Q, K, V, mask, temperature=2.0):
    return sm(Q @ sw(K) / temperature) @ V


def causal_3d_only(Z, Wq, Wk, Wv):
    B, T, C = Z.shape
    Q, K, V = Z @ Wq, Z @ Wk, Z @ Wv
    return sm(Q @ K.transpose(0, 2, 1) / np.sqrt(K.shape[2]) + np.triu(np.full((T, T), -np.inf), 1)) @ V


def temperature_3d_only(Q, K, V, mask):
    s = np.einsum("bqd,bkd->bqk", Q, K) / 3.0
    return np.einsum("bqk,bkd->bqd", sm(np.where(mask, s, -1e9)), V)


def causal_and_mask(Q, K, V, mask):
    return sm(tril(np.where(mask, Q @ sw(K) / np.sqrt(Q.shape[-1]), -np.inf))) @ V


def heads_no_transpose_3d(Z, Wq, Wk, Wv, Wo, h):
    B, T, C = Z.shape
    q, k, v = ((Z @ W).reshape(B, h, T, C // h) for W in (Wq, Wk, Wv))
    return (sm(q @ k.transpose(0, 1, 3, 2) / math.sqrt(C // h)) @ v).reshape(B, T, C) @ Wo


def kt_no_projection_unstable(Z, Wq, Wk, Wv, Wo, h):
    d = Z.shape[-1] // h
    outs = []
    for i in range(h):
        q, k, v = ((Z @ W)[..., i * d:(i + 1) * d] for W in (Wq, Wk, Wv))
        e = np.exp(q @ k.T / math.sqrt(d))
        outs.append(e / e.sum(-1, keepdims=True) @ v)
    return np.concatenate(outs, -1)


PAIRS: list[tuple[str, list[str], Callable[..., Any]]] = [
    ("step5", ["transpose-all-axes", "wrong-scale"], gpt_kt_temperature),
    ("step5", ["wrong-scale", "causal-mask-hardcoded"], gpt_causal_temperature),
    ("step7", ["transpose-all-axes", "causal-mask-hardcoded"], gpt_causal_kt),
    ("step8", ["causal-mask-hardcoded", "heads-no-transpose"], causal_no_transpose),
    ("step6", ["transpose-all-axes", "scale-by-dk", "mask-ignored"], ignored_kt_dk),
    ("step6", ["wrong-scale", "mask-ignored"], ignored_temperature),
    ("step7", ["causal-mask-hardcoded", "fixed-rank"], causal_3d_only),
    ("step6", ["wrong-scale", "fixed-rank"], temperature_3d_only),
    ("step6", ["causal-mask-hardcoded"], causal_and_mask),
    ("step8", ["heads-no-transpose", "fixed-rank"], heads_no_transpose_3d),
    ("step8", ["transpose-all-axes", "no-output-projection", "softmax-unstable"], kt_no_projection_unstable),
]


@pytest.mark.parametrize(("step", "want", "fn"), PAIRS, ids=[fn.__name__ for _, _, fn in PAIRS])
def test_probes_in_pairs_name_every_mistake(step: str, want: list[str], fn: Callable[..., Any]) -> None:
    """Exactly these ids (the cause first, fixed-rank last), with and without failing inputs."""
    source = inspect.getsource(fn)
    assert ids(step, fn, source=source) == want
    assert ids(step, fn, failing_inputs(step, fn), source=source) == want


@pytest.mark.parametrize("fill", ["-inf", "-1e9", "finfo", "in-place", "arange"])
def test_a_hand_made_causal_mask_in_step_6_is_never_softmax_unstable(fill: str) -> None:
    """Issue 39: named `softmax-unstable` before; a stable softmax with its own causal mask is
    `causal-mask-hardcoded` and nothing else."""
    def hand_made(Q, K, V, mask):
        s = Q @ sw(K) / np.sqrt(Q.shape[-1])
        n, m = s.shape[-2:]
        if fill == "-inf":
            s = s + np.triu(np.full((n, m), -np.inf), 1)
        elif fill == "-1e9":
            s = s + np.triu(np.ones((n, m)), 1) * -1e9
        elif fill == "finfo":
            s = np.where(np.tril(np.ones((n, m))) == 1, s, np.finfo(s.dtype).min)
        elif fill == "in-place":
            s[..., np.tril(np.ones((n, m))) == 0] = float("-inf")
        else:
            s = np.where(np.arange(n)[:, None] >= np.arange(m)[None, :], s, -np.inf)
        return sm(s) @ V

    assert ids("step6", hand_made) == ["causal-mask-hardcoded"]
    assert ids("step6", hand_made, failing_inputs("step6", hand_made)) == ["causal-mask-hardcoded"]


# ----------------------------------------------------------- plain words
def test_where_no_id_fits_the_notes_say_what_was_measured() -> None:
    def rolled(Z, Wq, Wk, Wv, Wo, h):
        return heads(Z, Wq, Wk, Wv, Wo, h, key_of=lambda i, h: (i + 1) % h)

    notes: dict[str, str] = {}
    assert diagnose("step8", as_call(rolled), [], source="", notes=notes) == []
    assert "head 0's output (the first d_h columns) changes" in notes[MEASURED_NOTE]

    def batch_plus_one(Q, K, V):
        out = sm(Q @ sw(K) / np.sqrt(Q.shape[-1])) @ V
        return out if out.ndim == 2 else out + 1.0

    notes = {}
    assert diagnose("step5", as_call(batch_plus_one), [], source="", notes=notes) == []
    assert "2-D input gives right answers; 3-D input gives wrong answers" in notes[MEASURED_NOTE]


def test_a_named_id_says_what_was_measured_and_the_notes_do_not_repeat_it() -> None:
    notes: dict[str, str] = {}
    got = diagnose("step5", as_call(gpt_causal_temperature), [], source="", notes=notes)
    by_id = {d.id: d for d in got}
    assert by_id["causal-mask-hardcoded"].explanation.startswith("Measured: your output for queries 0 to 2")
    assert MISTAKES["causal-mask-hardcoded"].explanation in by_id["causal-mask-hardcoded"].explanation
    assert MEASURED_NOTE not in notes


def test_the_engines_learner_notes_carry_the_words() -> None:
    """Called as the engine calls it (no `notes` argument): the learner object's notes get them."""
    def rolled(Z, Wq, Wk, Wv, Wo, h):
        return heads(Z, Wq, Wk, Wv, Wo, h, key_of=lambda i, h: (i + 1) % h)

    class Learner:
        def __init__(self) -> None:
            self.notes: dict[str, str] = {}
            self.inner = as_call(rolled)

        def __call__(self, *args: Any) -> np.ndarray:
            return self.inner(*args)

    learner = Learner()
    assert diagnose("step8", learner, []) == []
    assert learner.notes[MEASURED_NOTE].startswith("Measured: with W_o = I")


# ---------------------------------------------- limits: retried, or said
def _timing_out(fn: Callable[..., Any], stops: Callable[[int, tuple[Any, ...]], bool]) -> Callable[..., np.ndarray]:
    """`fn` as the sandbox runs it, stopped by the time limit where `stops(attempt, args)` says."""
    inner = as_call(fn)
    attempts: dict[bytes, int] = {}

    def call(*args: Any) -> np.ndarray:
        key = b"".join(np.ascontiguousarray(a).tobytes() if isinstance(a, np.ndarray) else repr(a).encode()
                       for a in args)
        attempts[key] = attempts.get(key, 0) + 1
        if stops(attempts[key], args):
            raise LearnerError(Failure(kind=FailureKind.TIMEOUT, summary="timed out"), kind=FailureKind.TIMEOUT)
        return inner(*args)

    return call


#: One catalogued mistake per step beside the new ones: what a busy machine must not change.
_BUSY_CASES = [(step, m.id, fn) for step in STEP_FUNCTIONS for m, fn in mistakes_for(step)
               if m.id in ("causal-mask-hardcoded", "mask-ignored", "fixed-rank", "transpose-all-axes")]


@pytest.mark.parametrize(("step", "mid", "fn"), _BUSY_CASES,
                         ids=[f"{s}-{fn.__name__.split('__', 1)[1]}" for s, _, fn in _BUSY_CASES])
def test_a_probe_that_times_out_once_is_retried_alone_and_changes_nothing(
        step: str, mid: str, fn: Callable[..., Any]) -> None:
    """Every input's first call times out, as on a loaded machine: the same ids as quiet."""
    quiet = ids(step, fn)
    busy = [d.id for d in diagnose(step, _timing_out(fn, lambda n, _: n == 1 and _odd(_)), [], source="")]
    assert busy == quiet and mid in quiet


def _odd(args: tuple[Any, ...]) -> bool:
    """Half the inputs, fixed by their values (at most MAX_RETRIES of them per diagnosis)."""
    return int(np.sum(np.abs(args[0])) * 1000) % 2 == 1


def test_retries_are_bounded_and_do_not_count_to_the_call_budget() -> None:
    fn = MISTAKES["mask-ignored"].impls["step6"][0]
    count = 0
    inner = _timing_out(fn, lambda n, _: n == 1)

    def counting(*args: Any) -> np.ndarray:
        nonlocal count
        count += 1
        return inner(*args)

    diagnose("step6", counting, failing_inputs("step6", fn), source="")
    assert count <= MAX_CALLS + MAX_RETRIES


def test_a_probe_that_always_times_out_is_reported_as_not_measured() -> None:
    """The causality probe's moved input never answers: the id it would give is not claimed,
    the other ids stand, and the notes say what could not be measured."""
    moved = next(p for p in PROBES["step5"] if p.name == "causal-moved").args[1]

    def is_moved(n: int, args: tuple[Any, ...]) -> bool:
        return np.array_equal(args[1], moved)

    def window_dk(Q, K, V):
        s = Q @ sw(K) / Q.shape[-1]
        i, j = np.arange(s.shape[-2])[:, None], np.arange(s.shape[-1])[None, :]
        return sm(np.where((j <= i) & (j >= i - 1), s, -np.inf)) @ V

    notes: dict[str, str] = {}
    got = [d.id for d in diagnose("step5", _timing_out(window_dk, is_moved), [], source="", notes=notes)]
    assert "causal-mask-hardcoded" not in got
    assert "Not measured" in notes[MEASURED_NOTE] and "'causal'" in notes[MEASURED_NOTE]
    assert ids("step5", window_dk) == ["causal-mask-hardcoded"] or "causal-mask-hardcoded" in ids("step5", window_dk)


# ------------------------------------------------------------- catalogue
def test_new_ids_are_catalogued_with_words_and_models_at_every_step_they_show() -> None:
    m = MISTAKES["mask-ignored"]
    assert m.title and m.explanation and m.nudge and "mask" in m.nudge
    assert set(m.impls) == {"step6"}
    assert set(MISTAKES["causal-mask-hardcoded"].impls) == {"step5", "step6", "step7", "step8"}


def test_selftest_has_a_case_for_every_catalogued_id() -> None:
    """`attn-practice selftest` grades a model of every id (the new ones too) through the sandbox."""
    from attn_practice.grader.catalog import load_catalog
    from attn_practice.grader.staff.selftest import cases_for

    covered = {i for ex in load_catalog() for c in cases_for(ex) for i in (c.expected_id, *c.expected_ids) if i}
    assert set(MISTAKES) <= covered
    assert {"mask-ignored", "causal-mask-hardcoded"} <= covered


@pytest.mark.slow
def test_the_graded_report_carries_the_measured_words(tmp_path: Any) -> None:
    """End to end (the installed console script): the step no id fits says what was measured."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).parent / "attn-practice"
    if not exe.is_file():
        pytest.skip("console script not installed")
    sub = tmp_path / "gpt_style"
    shutil.copytree(Path(__file__).parent / "implementations" / "submissions" / "gpt_style", sub)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c"), "XDG_DATA_HOME": str(tmp_path / "d"),
           "ATTN_PRACTICE_SECRET": "issue-39"}
    proc = subprocess.run([str(exe), "grade", str(sub), "--format", "json", "--no-cache"],
                          capture_output=True, text=True, timeout=600, env=env)
    steps = {s["id"]: s for s in json.loads(proc.stdout)["steps"]}
    assert steps["step8"]["status"] == "failed" and steps["step8"]["diagnoses"] == []
    assert any(n.startswith("step8_multi_head.py: Measured: with W_o = I, head 0's output")
               for n in steps["step8"]["notes"])
    assert steps["step5"]["diagnoses"] == ["causal-mask-hardcoded"]
    detail = steps["step5"]["diagnosis_details"][0]["explanation"]
    assert detail.startswith("Measured: your output for queries 0 to 2 stays the same")


@pytest.mark.parametrize("fn", [lambda Q, K, V, m: np.zeros((*Q.shape[:-1], V.shape[-1])),
                                lambda Q, K, V, m: np.full((*Q.shape[:-1], V.shape[-1]), 0.5)],
                         ids=["zeros", "halves"])
def test_an_answer_that_ignores_every_input_is_not_called_mask_ignored(fn: Callable[..., Any]) -> None:
    """The same answer under two masks says nothing about the mask when it is the same whatever
    the keys and values are too."""
    assert mask_sensitivity(_obs("step6", fn)) is None
    assert "mask-ignored" not in ids("step6", fn)
