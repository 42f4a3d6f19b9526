"""Named mistakes: every known wrong version is named, no correct one ever is.

Run with `python -m pytest tests/test_diagnose.py -q`. The learner is played
by plain functions called in-process through the same `call(*args)` shape the
engine uses (exceptions become a generic Exception, output a float64 array).
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attn_practice.grader.engine.diagnose import MAX_CALLS, PROBES, diagnose, mistake_for_id
from attn_practice.grader.results import Diagnosis
from attn_practice.reference.attention import FUNCTIONS
from attn_practice.reference.mistakes import (
    MISTAKES,
    PAIRS,
    STEP_FUNCTIONS,
    Pair,
    mistakes_for,
    source_for,
)
from attn_practice.reference.variants import variant_source, variants_for

STEPS = tuple(STEP_FUNCTIONS)
CORPUS = Path(__file__).parent / "implementations"

#: CONTRACT §3: id -> the steps where the table says it is first met.
CONTRACT_IDS = {
    "transpose-all-axes": ("step1",),
    "scores-transposed": ("step1",),
    "elementwise-product": ("step1",),
    "no-scale": ("step2", "step5", "step6", "step7"),
    "scale-by-dk": ("step2", "step5", "step6", "step7"),
    "multiplied-by-sqrt": ("step2",),
    "scale-by-dv": ("step5", "step7"),
    "softmax-wrong-axis": ("step3", "step5"),
    "softmax-not-normalised": ("step3",),
    "softmax-global": ("step3",),
    "softmax-unstable": ("step3", "step5"),
    "ignores-axis": ("step3",),
    "weights-transposed": ("step4",),
    "mask-inverted": ("step6",),
    "mask-not-renormalised": ("step6",),
    "projections-swapped": ("step7",),
    "scale-by-dmodel": ("step8",),
    "no-output-projection": ("step8",),
    "heads-not-split": ("step8",),
    "fixed-rank": STEPS,
    "wrong-scale": ("step2", "step5", "step6", "step7", "step8"),
    # rows added from real code (issue 13)
    "dot-not-batched": ("step1", "step4", "step5", "step7"),
    "mask-multiplied": ("step6",),
    "causal-mask-hardcoded": ("step5", "step6", "step7", "step8"),  # any step where it shows (issue 39)
    "mask-ignored": ("step6",),
    "heads-concat-wrong-axis": ("step8",),
    "heads-no-transpose": ("step8",),
}


# ----------------------------------------------------------------- helpers
def as_call(fn: Callable[..., Any]) -> Callable[..., np.ndarray]:
    """`fn` the way the engine's `call` presents a learner: copies in, float64 out."""

    def call(*args: Any) -> np.ndarray:
        args = tuple(a.copy() if isinstance(a, np.ndarray) else a for a in args)
        try:
            with np.errstate(all="ignore"):
                out = fn(*args)
            if out is None:
                raise TypeError("returned None")
            return np.asarray(out, dtype=np.float64)
        except Exception as exc:  # noqa: BLE001 - the engine raises LearnerCallError
            raise Exception(f"learner raised {type(exc).__name__}") from None

    return call


def ids(step: str, fn: Callable[..., Any], failing: list[tuple[Any, ...]] | None = None,
        source: str | None = None) -> list[str]:
    """The ids named; `source`: the learner's file as the engine would read it (default: none)."""
    return [d.id for d in diagnose(step, as_call(fn), failing or [], source=source or "")]


def _array(rng: np.random.Generator, shape: tuple[int, ...], bound: float = 10.0) -> np.ndarray:
    style = rng.integers(4)
    if style == 0:
        a = rng.integers(-3, 4, size=shape).astype(float)
    elif style == 1:
        a = rng.normal(0.0, 2.0, size=shape)
    elif style == 2:
        a = rng.uniform(-bound, bound, size=shape)
    else:
        a = rng.choice(np.array([-bound, -bound / 2, 0.0, bound / 2, bound]), size=shape)
    return a.astype(np.float32) if rng.random() < 0.2 else a


def _suite_like(step: str, rng: np.random.Generator) -> tuple[Any, ...]:
    """An input like the hidden suites draw: small sides, 0-2 batch axes, any values."""
    side = lambda: int(rng.integers(1, 5))  # noqa: E731
    batch = tuple(int(rng.integers(1, 3)) for _ in range(int(rng.integers(0, 3))))
    if step == "step1":
        n_q, n_k, d = side(), side(), side()
        return _array(rng, batch + (n_q, d)), _array(rng, batch + (n_k, d))
    if step == "step2":
        return _array(rng, batch + (side(), side()), 1e3), side()
    if step == "step3":
        shape = tuple(side() for _ in range(int(rng.integers(1, 4))))
        x = _array(rng, shape, 1e300 if rng.random() < 0.2 else 30.0)
        return x, int(rng.integers(-len(shape), len(shape)))
    if step == "step4":
        raw = rng.uniform(0.01, 1.0, batch + (side(), side()))
        return raw / raw.sum(axis=-1, keepdims=True), _array(rng, batch + (raw.shape[-1], side()))
    if step in ("step5", "step6"):
        n_q, n_k, d_k, d_v = side(), side(), side(), side()
        qkv = (_array(rng, batch + (n_q, d_k)), _array(rng, batch + (n_k, d_k)),
               _array(rng, batch + (n_k, d_v)))
        if step == "step5":
            return qkv
        mask = np.tril(np.ones((n_q, n_k), dtype=bool), k=max(0, n_k - n_q))
        if rng.random() < 0.5:
            mask = rng.random(batch + (n_q, n_k)) < 0.5
            mask[..., 0] = True
        return (*qkv, mask)
    if step == "step7":
        n, d_model, d_k, d_v = side(), side(), side(), side()
        return (_array(rng, batch + (n, d_model), 3.0), _array(rng, (d_model, d_k), 1.0),
                _array(rng, (d_model, d_k), 1.0), _array(rng, (d_model, d_v), 1.0))
    n_heads, d_h, n = int(rng.integers(1, 4)), int(rng.integers(1, 4)), side()
    d_model = n_heads * d_h
    return (_array(rng, batch + (n, d_model), 3.0),
            *[_array(rng, (d_model, d_model), 1.0) for _ in range(4)], n_heads)


_SUITE_INPUTS = {step: [_suite_like(step, np.random.default_rng(7000 + 100 * i + j)) for j in range(20)]
                 for i, step in enumerate(STEPS)}


def _expected_outputs(step: str) -> list[tuple[np.ndarray, bool]]:
    """The reference on each suite-like input (in float64), and whether it was float32."""
    if step not in _EXPECTED:
        reference = FUNCTIONS[STEP_FUNCTIONS[step]]
        out = []
        for args in _SUITE_INPUTS[step]:
            with np.errstate(all="ignore"):
                want = reference(*[np.array(a, dtype=np.float64)
                                   if isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                                   for a in args])
            low = any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args)
            out.append((np.asarray(want, dtype=np.float64), low))
        _EXPECTED[step] = out
    return _EXPECTED[step]


_EXPECTED: dict[str, list[tuple[np.ndarray, bool]]] = {}


def failing_inputs(step: str, fn: Callable[..., Any], keep: int = 6) -> list[tuple[Any, ...]]:
    """The suite-like inputs `fn` gets wrong (as the grader would judge), the last `keep`."""
    call = as_call(fn)
    failing = []
    for args, (want, low) in zip(_SUITE_INPUTS[step], _expected_outputs(step), strict=True):
        try:
            got = call(*args)
            ok = got.shape == want.shape and np.allclose(
                got, want, rtol=1e-3 if low else 1e-6, atol=1e-5 if low else 1e-9, equal_nan=True)
        except Exception:  # noqa: BLE001
            ok = False
        if not ok:
            failing.append(args)
    return failing[-keep:]


# -------------------------------------------------------------- catalogue
def test_catalogue_has_every_contract_id_at_its_steps() -> None:
    for mid, steps in CONTRACT_IDS.items():
        assert mid in MISTAKES, mid
        for step in steps:
            assert MISTAKES[mid].impls.get(step), f"{mid} has no implementation at {step}"


def test_mistake_for_id_builds_the_learner_facing_diagnosis() -> None:
    for mid, m in MISTAKES.items():
        d = mistake_for_id(mid)
        assert isinstance(d, Diagnosis)
        assert (d.id, d.title, d.explanation, d.nudge) == (mid, m.title, m.explanation, m.nudge)
        assert d.title and d.explanation and d.nudge


def _defined_function(source: str, name: str) -> Callable[..., Any]:
    tree = ast.parse(source)
    assert [n.name for n in tree.body if isinstance(n, ast.FunctionDef)] == [name]
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<{name}>", "exec"), namespace)  # noqa: S102 - our own catalogue
    return namespace[name]


def _same(a: Any, b: Any) -> bool:
    try:
        x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    except Exception:  # noqa: BLE001
        return False
    return x.shape == y.shape and np.allclose(x, y, equal_nan=True)


def _outcome(fn: Callable[..., Any], args: tuple[Any, ...]) -> Any:
    try:
        with np.errstate(all="ignore"):
            return fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except Exception:  # noqa: BLE001
        return "raised"


@pytest.mark.parametrize("step", STEPS)
def test_sources_are_self_contained_learner_files(step: str) -> None:
    """`source_for` / `variant_source` text runs alone and behaves like the function."""
    name = STEP_FUNCTIONS[step]
    pairs = [(source_for(m.id, step), m.impls[step][0]) for m in MISTAKES.values()
             if step in m.impls]
    pairs += [(variant_source(vname, step), fn) for vname, fn in variants_for(step)]
    for source, fn in pairs:
        assert source.startswith("import numpy as np\nimport math\n")
        learner = _defined_function(source, name)
        for probe in PROBES[step][:2]:
            a, b = _outcome(learner, probe.args), _outcome(fn, probe.args)
            assert (a == "raised") == (b == "raised") if isinstance(a, str) or isinstance(b, str) \
                else _same(a, b), f"{fn.__name__} on {probe.name}"


def test_variants_are_correct_and_at_least_four_per_step() -> None:
    for step in STEPS:
        variants = variants_for(step)
        assert len(variants) >= 4, step
        reference = FUNCTIONS[STEP_FUNCTIONS[step]]
        for _, fn in variants:
            for probe in PROBES[step]:
                assert _same(_outcome(fn, probe.args), reference(*probe.args)), (fn.__name__, probe.name)


# ------------------------------------------------------------- detection
_CATALOGUED = [(step, m.id, fn) for step in STEPS for m, fn in mistakes_for(step)]


@pytest.mark.parametrize(("step", "mistake_id", "fn"), _CATALOGUED,
                         ids=[f"{s}-{fn.__name__.split('__', 1)[1]}" for s, _, fn in _CATALOGUED])
def test_every_catalogued_mistake_is_named_first(step: str, mistake_id: str,
                                                 fn: Callable[..., Any]) -> None:
    assert ids(step, fn)[:1] == [mistake_id]
    assert ids(step, fn, failing_inputs(step, fn))[:1] == [mistake_id]


_CORRECT = [(step, name, fn) for step in STEPS
            for name, fn in [*variants_for(step), ("reference", FUNCTIONS[STEP_FUNCTIONS[step]])]]


@pytest.mark.parametrize(("step", "name", "fn"), _CORRECT,
                         ids=[f"{s}-{n}" for s, n, _ in _CORRECT])
def test_correct_implementations_are_never_diagnosed(step: str, name: str,
                                                     fn: Callable[..., Any]) -> None:
    assert ids(step, fn) == []
    # any inputs at all, as if some test had failed for another reason
    assert ids(step, fn, _SUITE_INPUTS[step][:6]) == []


# correct, but computing in float32 (or the sandbox's float64 of it): never diagnosed
def _f32(*arrays: Any) -> list[Any]:
    return [np.asarray(a, dtype=np.float32) if isinstance(a, np.ndarray) else a for a in arrays]


def _f32_softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _f32_attention(Q: Any, K: Any, V: Any, mask: Any = None) -> np.ndarray:
    Q, K, V = _f32(Q, K, V)
    s = Q @ np.swapaxes(K, -1, -2) / np.float32(math.sqrt(Q.shape[-1]))
    if mask is not None:
        s = np.where(mask, s, np.float32(-1e9))
    return _f32_softmax(s) @ V


FLOAT32 = {
    "step1": lambda Q, K: np.matmul(*_f32(Q, np.swapaxes(K, -1, -2))),
    "step2": lambda s, d_k: _f32(s)[0] / np.float32(math.sqrt(d_k)),
    "step3": lambda x, axis=-1: np.moveaxis(_f32_softmax(np.moveaxis(_f32(x)[0], axis, -1)), -1, axis),
    "step4": lambda w, V: np.matmul(*_f32(w, V)),
    "step5": _f32_attention,
    "step6": _f32_attention,
    "step7": lambda Z, Wq, Wk, Wv: _f32_attention(*[np.matmul(*_f32(Z, W)) for W in (Wq, Wk, Wv)]),
    "step8": lambda Z, Wq, Wk, Wv, Wo, h: np.concatenate(
        [_f32_attention(*[np.matmul(*_f32(Z, W))[..., i * (Z.shape[-1] // h):(i + 1) * (Z.shape[-1] // h)]
                          for W in (Wq, Wk, Wv)]) for i in range(h)], axis=-1) @ _f32(Wo)[0],
}


@pytest.mark.parametrize("step", STEPS)
def test_float32_computing_implementations_are_never_diagnosed(step: str) -> None:
    fn = FLOAT32[step]
    probe = PROBES[step][0]
    assert _same(fn(*probe.args), FUNCTIONS[STEP_FUNCTIONS[step]](*probe.args))
    assert ids(step, fn) == []
    assert ids(step, fn, failing_inputs(step, fn)) == []


# more ways learners spell the same mistakes (regression cases)
def _sm(s: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _scores(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    return Q @ np.swapaxes(K, -1, -2)


def _mean_shifted_softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.mean(axis=axis, keepdims=True))  # shifting by the mean still overflows
    return e / e.sum(axis=axis, keepdims=True)


def _global_shifted_exp(s: np.ndarray) -> np.ndarray:
    return np.exp(s - s.max())


SPELLINGS: list[tuple[str, str, Callable[..., Any]]] = [
    ("step1", "transpose-all-axes", lambda Q, K: np.matmul(Q, np.transpose(K))),
    ("step1", "elementwise-product", lambda Q, K: Q * K.T),
    ("step1", "fixed-rank", lambda Q, K: np.array([[q @ k for k in K] for q in Q])),
    # np.inner on a batch pairs every batch entry with every other one, as np.dot does
    ("step1", "dot-not-batched", lambda Q, K: np.inner(Q, K)),
    ("step2", "wrong-scale", lambda s, d_k: s / np.sqrt(len(s))),
    ("step2", "wrong-scale", lambda s, d_k: s / d_k ** 2),
    ("step3", "softmax-unstable", lambda x, axis=-1: _mean_shifted_softmax(x, axis)),
    ("step3", "softmax-not-normalised", lambda x, axis=-1: np.exp(x - x.max())),
    ("step3", "softmax-wrong-axis", lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True))
     / np.exp(x - x.max(axis=axis, keepdims=True)).sum(axis=axis)),
    ("step4", "weights-transposed", lambda w, V: np.dot(w.T, V)),
    ("step4", "weights-transposed", lambda w, V: np.einsum("...kq,...kd->...qd", w, V)),
    ("step5", "wrong-scale", lambda Q, K, V: _sm(_scores(Q, K) / np.sqrt(len(K))) @ V),
    ("step5", "softmax-not-normalised", lambda Q, K, V: _global_shifted_exp(
        _scores(Q, K) / np.sqrt(Q.shape[-1])) @ V),
    ("step6", "mask-inverted", lambda Q, K, V, m: _sm(np.where(~m, _scores(Q, K) / np.sqrt(Q.shape[-1]),
                                                                 -np.inf)) @ V),
    ("step6", "mask-inverted", lambda Q, K, V, m: _sm(_scores(Q, K) / np.sqrt(Q.shape[-1]) + m * -1e30) @ V),
    ("step6", "mask-not-renormalised", lambda Q, K, V, m: np.where(m, _sm(_scores(Q, K) / np.sqrt(Q.shape[-1])),
                                                                   0.0) @ V),
    ("step7", "projections-swapped", lambda Z, Wq, Wk, Wv: _sm(_scores(Z @ Wq, Z @ Wk)
                                                               / np.sqrt(Wk.shape[-1])) @ (Z @ Wq)),
    ("step8", "heads-not-split", lambda Z, Wq, Wk, Wv, Wo, h: _sm(_scores(Z @ Wq, Z @ Wk)
                                                                  / np.sqrt(Z.shape[-1] // h)) @ (Z @ Wv) @ Wo),
]


@pytest.mark.parametrize(("step", "mistake_id", "fn"), SPELLINGS,
                         ids=[f"{s}-{m}-{i}" for i, (s, m, _) in enumerate(SPELLINGS)])
def test_other_spellings_of_a_mistake_are_named(step: str, mistake_id: str, fn: Callable[..., Any]) -> None:
    assert ids(step, fn)[:1] == [mistake_id]
    assert ids(step, fn, failing_inputs(step, fn))[:1] == [mistake_id]


# ---------------------------------------------------------- robustness
def test_never_raises_and_tolerates_garbage() -> None:
    def boom(*args: Any) -> np.ndarray:
        raise Exception("sandbox died")

    reference = FUNCTIONS["attention"]
    junk: list[Any] = [("not", "arrays"), (np.zeros(3),), None, 42, (np.zeros((2, 2)),) * 9]
    assert diagnose("step5", boom, junk) == []
    assert diagnose("step5", as_call(reference), junk) == []
    assert diagnose("step99", as_call(reference), []) == []
    assert diagnose("step5", as_call(reference), None) == []  # type: ignore[arg-type]


def test_step_aliases() -> None:
    fn = MISTAKES["no-scale"].impls["step2"][0]
    for alias in ("step2", "2", "step2_scale"):
        assert ids(alias, fn) == ["no-scale"]


def test_call_budget() -> None:
    count = 0
    fn = MISTAKES["no-scale"].impls["step5"][0]
    inner = as_call(fn)

    def counting(*args: Any) -> np.ndarray:
        nonlocal count
        count += 1
        return inner(*args)

    failing = failing_inputs("step5", fn, keep=100) * 5
    assert [d.id for d in diagnose("step5", counting, failing)] == ["no-scale"]
    assert count <= MAX_CALLS


@pytest.mark.parametrize("step", STEPS)
def test_a_sandbox_that_gives_up_midway_earns_nothing(step: str) -> None:
    """After repeated timeouts the engine fails every later call: no fixed-rank, no unstable."""
    reference = FUNCTIONS[STEP_FUNCTIONS[step]]
    for after in range(1, len(PROBES[step]) + 1):
        calls = 0

        def flaky(*args: Any, _after: int = after) -> np.ndarray:
            nonlocal calls
            calls += 1
            if calls > _after:
                raise Exception("timeout")
            return np.asarray(reference(*args), dtype=np.float64)

        assert diagnose(step, flaky, []) == [], after


def test_random_output_earns_nothing() -> None:
    rng = np.random.default_rng(0)
    reference = FUNCTIONS["softmax"]

    def noisy(x: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(reference(x, axis)) * (1 + 1e-3 * rng.standard_normal(np.shape(x)))

    assert diagnose("step3", noisy, []) == []


def test_kt_and_fixed_rank_are_told_apart() -> None:
    assert ids("step1", lambda Q, K: Q @ K.T) == ["transpose-all-axes"]
    assert ids("step1", lambda Q, K: np.einsum("ij,kj->ik", Q, K)) == ["fixed-rank"]
    assert ids("step5", lambda Q, K, V: _sm(Q @ K.T / np.sqrt(Q.shape[-1])) @ V) == ["transpose-all-axes"]
    assert ids("step5", lambda Q, K, V: _sm(np.einsum("qd,kd->qk", Q, K) / np.sqrt(Q.shape[-1])) @ V) \
        == ["fixed-rank"]


# --------------------------------------------------- the labelled corpus
def _expected(path: Path) -> list[str]:
    """The docstring's `Expected diagnosis:` ids (the authority), else the file name's."""
    text = path.read_text(encoding="utf-8")
    for line in (ast.get_docstring(ast.parse(text)) or "").splitlines():
        if line.strip().lower().startswith("expected diagnosis:"):
            value = line.split(":", 1)[1].strip().strip("`").strip()
            return [] if value.lower() == "none" else [v.strip() for v in value.split(",")]
    if path.stem.startswith("wrong_") and not path.stem.startswith("wrong_other"):
        return [part.replace("_", "-") for part in path.stem[len("wrong_"):].split("__")]
    return []


_CORPUS_FILES = sorted(CORPUS.glob("step*/*.py")) if CORPUS.is_dir() else []


def _load(path: Path) -> Callable[..., Any]:
    step = path.parent.name
    spec = importlib.util.spec_from_file_location(f"_corpus_{step}_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:  # e.g. SciPy not installed
        pytest.skip(f"{path.name}: {exc}")
    return getattr(module, STEP_FUNCTIONS[step])


_CORPUS_IDS: dict[Path, list[str]] = {}


def _corpus_ids(path: Path) -> list[str]:
    """The diagnosis of a corpus file with no failing inputs (cached for the rate test)."""
    if path not in _CORPUS_IDS:
        _CORPUS_IDS[path] = ids(path.parent.name, _load(path), source=path.read_text(encoding="utf-8"))
    return _CORPUS_IDS[path]


def _corpus_params(prefix: str) -> list[Any]:
    return [pytest.param(p, id=f"{p.parent.name}-{p.stem}") for p in _CORPUS_FILES
            if p.stem.startswith(prefix) and p.parent.name in STEP_FUNCTIONS]


@pytest.mark.skipif(not _CORPUS_FILES, reason="tests/implementations not present")
@pytest.mark.parametrize("path", _corpus_params("correct_"))
def test_corpus_correct_files_get_no_diagnosis(path: Path) -> None:
    assert _corpus_ids(path) == []


@pytest.mark.skipif(not _CORPUS_FILES, reason="tests/implementations not present")
@pytest.mark.parametrize("path", _corpus_params("wrong_"))
def test_corpus_wrong_files_get_their_diagnosis(path: Path) -> None:
    """Exactly the labelled ids (both of a two-mistake file), with and without failing inputs."""
    step = path.parent.name
    fn = _load(path)
    expected = _expected(path)
    got = _corpus_ids(path)
    got_failing = ids(step, fn, failing_inputs(step, fn), source=path.read_text(encoding="utf-8"))
    if not expected or not set(expected) <= set(MISTAKES):
        # no id, or one this catalogue does not know: never a false one
        assert got == [] and got_failing == []
    else:
        assert sorted(got) == sorted(expected)
        assert sorted(got_failing) == sorted(expected)
        if len(expected) == 1:
            assert got[:1] == expected


def test_corpus_has_two_mistake_files_over_the_steps() -> None:
    pairs = [p for p in _CORPUS_FILES if len(_expected(p)) == 2]
    assert any(len(_expected(p)) > 2 for p in _CORPUS_FILES)  # and some with three or four
    assert len(pairs) >= 30
    assert {p.parent.name for p in pairs} >= {"step3", "step5", "step6", "step7", "step8"}


@pytest.mark.skipif(not _CORPUS_FILES, reason="tests/implementations not present")
def test_corpus_detection_rate(capsys: pytest.CaptureFixture[str]) -> None:
    """The product target: >= 90% of expected ids named (singles and pairs), none falsely."""
    named = total = false = 0
    for path in _CORPUS_FILES:
        step = path.parent.name
        if step not in STEP_FUNCTIONS or not path.stem.startswith(("wrong_", "correct_")):
            continue
        try:
            got = set(_corpus_ids(path))
        except pytest.skip.Exception:
            continue
        expected = set(_expected(path)) if path.stem.startswith("wrong_") else set()
        if expected and expected <= set(MISTAKES):
            total += len(expected)
            named += len(expected & got)
            false += bool(got - expected)
        else:
            false += bool(got)
    with capsys.disabled():
        print(f"\ncorpus: {named}/{total} expected ids named ({100 * named / max(total, 1):.1f}%), "
              f"{false} files with an id not expected")
    assert total and named / total >= 0.9, f"{named}/{total} named"
    assert false == 0


def test_module_sources_only_use_np_and_math() -> None:
    """Catalogue functions may not lean on module helpers: each must stand alone."""
    from attn_practice.reference import mistakes, mistakes_probed, variants

    allowed = {"np", "math"}
    for module in (mistakes, mistakes_probed, variants):
        helpers = {n for n, v in vars(module).items() if inspect.isfunction(v) or inspect.isclass(v)}
        for name, fn in vars(module).items():
            if not (inspect.isfunction(fn) and "__" in name and fn.__module__ == module.__name__):
                continue
            tree = ast.parse(inspect.getsource(fn))
            used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
            assert not (used & (helpers - {name})) - allowed, (name, used & helpers)


# ------------------------------------------------------------ two mistakes
@pytest.mark.parametrize("pair", PAIRS, ids=[p.impl.__name__.split("__pair__")[1] for p in PAIRS])
def test_every_catalogued_pair_is_named_with_both_ids(pair: Pair) -> None:
    assert sorted(ids(pair.step, pair.impl)) == sorted(pair.ids)
    assert sorted(ids(pair.step, pair.impl, failing_inputs(pair.step, pair.impl))) == sorted(pair.ids)


def test_issue_examples_of_cancelling_mistakes_name_both() -> None:
    """K.T + /d_k, unrenormalised mask + /d_k, no W_o + sqrt(d_model): both ids, not nothing."""
    def kt_dk(Q, K, V):
        return _sm(Q @ K.T / Q.shape[-1]) @ V

    def zeroed_dk(Q, K, V, m):
        return (_sm(_scores(Q, K) / Q.shape[-1]) * m) @ V

    def no_wo_dmodel(Z, Wq, Wk, Wv, Wo, h):
        d = Z.shape[-1] // h
        return np.concatenate([_sm(_scores((Z @ Wq)[..., i * d:(i + 1) * d], (Z @ Wk)[..., i * d:(i + 1) * d])
                                   / np.sqrt(Z.shape[-1])) @ (Z @ Wv)[..., i * d:(i + 1) * d]
                               for i in range(h)], axis=-1)

    assert sorted(ids("step5", kt_dk)) == ["scale-by-dk", "transpose-all-axes"]
    assert sorted(ids("step6", zeroed_dk)) == ["mask-not-renormalised", "scale-by-dk"]
    assert sorted(ids("step8", no_wo_dmodel)) == ["no-output-projection", "scale-by-dmodel"]


@pytest.mark.parametrize("other", ["softmax-wrong-axis", "ignores-axis", "projections-swapped", "no-scale"])
def test_softmax_unstable_is_named_whatever_else_is_wrong(other: str) -> None:
    def unstable(s: np.ndarray, axis: int = -1) -> np.ndarray:
        e = np.exp(s)
        return e / e.sum(axis=axis, keepdims=True)

    cases = {
        "softmax-wrong-axis": ("step3", lambda x, axis=-1: unstable(x, 0)),
        "ignores-axis": ("step3", lambda x, axis=-1: unstable(x, -1)),
        "projections-swapped": ("step7", lambda Z, Wq, Wk, Wv: unstable(
            _scores(Z @ Wk, Z @ Wk) / np.sqrt(Wq.shape[1])) @ (Z @ Wv)),
        "no-scale": ("step5", lambda Q, K, V: unstable(_scores(Q, K)) @ V),
    }
    step, fn = cases[other]
    assert sorted(ids(step, fn)) == sorted([other, "softmax-unstable"])


def test_fixed_rank_explanation_fits_np_dot_too() -> None:
    text = MISTAKES["fixed-rank"].explanation
    assert "np.dot" in text and "einsum" in text
    assert "np.dot" in MISTAKES["dot-not-batched"].explanation


def test_transpose_all_axes_is_read_at_every_attention_step() -> None:
    """CONTRACT §3: an id is reported wherever its code shows, K.T in steps 5-8 included."""
    def kt(Q, K, V, mask=None):
        s = Q @ K.T / np.sqrt(Q.shape[-1])
        return _sm(s if mask is None else np.where(mask, s, -np.inf)) @ V

    assert ids("step5", kt) == ["transpose-all-axes"]
    assert ids("step6", kt) == ["transpose-all-axes"]
    assert ids("step7", lambda Z, Wq, Wk, Wv: kt(Z @ Wq, Z @ Wk, Z @ Wv)) == ["transpose-all-axes"]
