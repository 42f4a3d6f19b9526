"""What a correct float32 computation achieves, per step: the basis of the float32 tolerances.

Draws float32 examples from the hidden suites' own strategies (every shape
profile), runs every correct variant in `reference/variants.py` and the
corpus's `correct_*` files on them in float32, and prints, per step, the
worst |got - expected| / max(|expected|, rounding scale) against the float64
reference, next to what a float16-rounded answer and an answer 1.5e-4 off
score. The tolerance (rtol) must sit between the first and the other two.

Run: `.venv/bin/python bench/float32_precision.py [N_EXAMPLES]`.
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
from attn_practice.grader.suites.scales import rounding_scale
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
        scale = rounding_scale(sid, args)
        denom = np.abs(expected) if scale is None else np.maximum(np.abs(expected), scale)
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


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    for sid in DRAWS:
        w = ratios(sid, n)
        correct = max(v for k, v in w.items() if k not in ("float16-rounded", "1.5e-4 off"))
        print(f"{sid}: worst correct {correct:.2e}  float16 {w['float16-rounded']:.2e}  "
              f"1.5e-4 off {w['1.5e-4 off']:.2e}  tolerance rtol {resolve_step(sid).tolerance('float32').rtol:g}")


if __name__ == "__main__":
    main()
