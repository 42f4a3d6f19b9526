"""What a correct float32 computation achieves, per step: the basis of the float32 tolerances.

Draws float32 examples from the hidden suites' own strategies (every shape
profile), runs every correct variant in `reference/variants.py` and the
corpus's `correct_*` files on them in float32, and prints, per step, the
worst |got - expected| / max(|expected|, rounding scale) against the float64
reference, next to what a float16-rounded answer and an answer 1.5e-4 off
score. The tolerance (rtol) must sit between the first and the other two.

With `--scores` it prints instead how far float32 dot products of length n
drift in each summation order NumPy and learners use (einsum, BLAS matmul,
pairwise np.sum, a sequential loop), in unit roundoffs of sum |terms|: the
measurement behind `scales.growth`, which must stay above every column.

Run: `.venv/bin/python bench/float32_precision.py [N_EXAMPLES]` or `... --scores`.
"""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings

from attn_practice.grader.catalog import resolve_step
from attn_practice.grader.suites import strategies as S
from attn_practice.grader.suites.scales import growth, rounding_scale, score_allowance
from attn_practice.reference import attention as R
from attn_practice.reference.variants import variants_for

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "implementations"
DRAWS = {
    "step1": lambda: S.qk_arrays(dtype=np.float32),
    "step2": lambda: S.scale_inputs(dtype=np.float32),
    "step3": lambda: S.softmax_inputs(dtype=np.float32),
    "step4": lambda: S.weights_and_values(dtype=np.float32),
    "step5": lambda: S.qkv_arrays(dtype=np.float32),
    "step6": lambda: S.masked_inputs(dtype=np.float32),
    "step7": lambda: S.projection_inputs(dtype=np.float32),
    "step8": lambda: S.multi_head_inputs(dtype=np.float32),
}


def _corpus(sid: str) -> list[tuple[str, object]]:
    ex = resolve_step(sid)
    out = []
    for path in sorted((CORPUS / sid).glob("correct_*.py")):
        spec = importlib.util.spec_from_file_location(f"corpus_{sid}_{path.stem}", path)
        mod = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(mod)
        except ImportError:
            continue
        out.append((path.stem, getattr(mod, ex.function)))
    return out


def ratios(sid: str, n: int) -> dict[str, float]:
    ex = resolve_step(sid)
    ref = R.FUNCTIONS[ex.function]
    fns = variants_for(sid) + _corpus(sid)
    worst = {name: 0.0 for name, _ in fns} | {"float16-rounded": 0.0, "1.5e-4 off": 0.0}

    @settings(max_examples=n, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(args=DRAWS[sid]())
    def run(args):
        args = tuple(args)
        if sid == "step6":  # as the suite's float32 test does
            args = (args[0] / np.float32(4), args[1] / np.float32(4), *args[2:])
        with np.errstate(all="ignore"):
            expected = np.asarray(ref(*[np.array(a, dtype=np.float64) if isinstance(a, np.ndarray)
                                        and a.dtype.kind == "f" else a for a in args]), dtype=np.float64)
        # the judge's bound in rtol units: the terms' scale, plus the scores' allowance / rtol
        scale = rounding_scale(sid, args)
        denom = np.abs(expected) if scale is None else np.maximum(np.abs(expected), scale)
        extra = score_allowance(sid, args)
        if extra is not None:
            denom = denom + extra / resolve_step(sid).tolerance("float32").rtol
        denom = np.maximum(denom, 1e-30)
        outs = {}
        for name, fn in fns:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                outs[name] = np.asarray(fn(*[a.copy() if isinstance(a, np.ndarray) else a for a in args]),
                                        dtype=np.float64)
        good = np.asarray(ref(*args))
        outs["float16-rounded"] = good.astype(np.float16).astype(np.float64)
        outs["1.5e-4 off"] = good.astype(np.float64) * (1 + 1.5e-4)
        for name, got in outs.items():
            keep = np.isfinite(expected) & (np.abs(expected) > 1e-6)
            if keep.any():
                r = float(np.max(np.abs(got - expected)[keep] / denom[keep]))
                worst[name] = max(worst[name], r)

    run()
    return worst


def _sequential(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    acc = np.zeros(Q.shape[:-1] + (K.shape[-2],), np.float32)
    for d in range(Q.shape[-1]):
        acc += Q[..., :, None, d] * K[..., None, :, d]
    return acc


def score_drift() -> None:
    """Worst |float32 dot - exact| / (u * sum |terms|) per summation order, by length n."""
    u = float(np.finfo(np.float32).eps) / 2
    orders = {
        "einsum": lambda Q, K: np.einsum("qd,kd->qk", Q, K),
        "BLAS": lambda Q, K: Q @ K.T,
        "pairwise": lambda Q, K: np.sum(Q[:, None, :] * K[None], axis=-1),
        "sequential": _sequential,
    }
    rng = np.random.default_rng(0)
    for fill in ("positive", "normal"):
        for n in (16, 256, 4096):
            worst = dict.fromkeys(orders, 0.0)
            for _ in range(30):
                if fill == "positive":
                    Q, K = (rng.uniform(0, 10, (s, n)).astype(np.float32) for s in (3, 5))
                else:
                    Q, K = ((rng.normal(size=(s, n)) * 5).astype(np.float32) for s in (3, 5))
                exact = Q.astype(np.float64) @ K.astype(np.float64).T
                terms = np.abs(Q.astype(np.float64)) @ np.abs(K.astype(np.float64)).T
                for name, dot in orders.items():
                    drift = np.abs(dot(Q, K).astype(np.float64) - exact) / (u * terms)
                    worst[name] = max(worst[name], float(drift.max()))
            cols = "  ".join(f"{k} {v:5.1f}" for k, v in worst.items())
            print(f"{fill:8} n={n:5}: {cols}   growth(n) = {growth(n):.1f}")


def main() -> None:
    if "--scores" in sys.argv:
        score_drift()
        return
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for sid in DRAWS:
        w = ratios(sid, n)
        correct = max(v for k, v in w.items() if k not in ("float16-rounded", "1.5e-4 off"))
        print(f"{sid}: worst correct {correct:.2e}  float16 {w['float16-rounded']:.2e}  "
              f"1.5e-4 off {w['1.5e-4 off']:.2e}  tolerance rtol {resolve_step(sid).tolerance('float32').rtol:g}")


if __name__ == "__main__":
    main()
