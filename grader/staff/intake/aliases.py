"""The right work under another name: which function in a step's file the learner meant.

When a step's file has no function of the contract's name, a teacher still
grades the function that is plainly the step's: a WELL-KNOWN ALIAS
(`stable_softmax` for `softmax`, `scaled_dot_product_attention` for
`attention`), else the ONE top-level function that can be called the way the
step is called (its signature is compatible) and is not a helper of another
such function. Several equally likely: none is chosen, and the warning lists
them, so no one's grade depends on a guess. A module or notebook (not a
step's own file) is searched for aliases only: it holds many functions.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from attn_practice.grader.staff.intake.extract import Parsed
from attn_practice.grader.staff.intake.names import function_key

#: Contract function -> (required positional arguments, all arguments it is called with).
SIGNATURES = {
    "dot_scores": (2, 2), "scale_scores": (2, 2), "softmax": (1, 2), "weighted_sum": (2, 2),
    "attention": (3, 3), "masked_attention": (4, 4), "self_attention": (4, 4),
    "multi_head_attention": (6, 6),
}
#: Names seen for each step's function in notes, tutorials and course material (matched like
#: near misses: case and underscores ignored, and a `my_`/`compute_`/`get_` prefix too).
ALIASES = {
    "dot_scores": ("dot_product", "dot_products", "dot_product_scores", "attention_scores", "scores",
                   "raw_scores", "qk_scores", "qk", "similarity", "similarity_scores", "score",
                   "alignment_scores", "scores_dot"),
    "scale_scores": ("scale", "scaled_scores", "scale_attention_scores", "scaling", "scale_by_sqrt_dk",
                     "scaled"),
    "softmax": ("stable_softmax", "softmax_stable", "safe_softmax", "numerically_stable_softmax",
                "softmax_numpy", "np_softmax", "softmax_np"),
    "weighted_sum": ("weighted_values", "weighted_average", "weighted_avg", "apply_weights",
                     "apply_attention", "aggregate", "aggregate_values", "combine_values",
                     "attention_output", "weighted_sum_values"),
    "attention": ("scaled_dot_product_attention", "scaled_dot_attention", "scaled_attention", "sdpa",
                  "dot_product_attention", "attention_forward", "attention_layer", "attn",
                  "single_head_attention"),
    "masked_attention": ("masked_scaled_dot_product_attention", "masked_sdpa", "attention_with_mask",
                         "masked_attn", "mask_attention"),
    "self_attention": ("self_attn", "self_attention_layer", "single_head_self_attention"),
    "multi_head_attention": ("multihead_attention", "multi_head_attn", "mha", "multi_head_self_attention",
                             "multihead_self_attention", "multiheaded_attention"),
}
_PREFIXES = ("my", "compute", "get", "calc", "calculate", "do", "run")


def _key(name: str) -> str:
    key = function_key(name)
    for prefix in _PREFIXES:
        if key.startswith(prefix) and len(key) > len(prefix) + 2:
            return key[len(prefix):]
    return key


@dataclass(frozen=True)
class Guess:
    """The function meant for `function`, or the several that could be (`chosen` empty)."""

    chosen: str = ""
    why: str = ""  # "a well-known name for softmax" / "the only function called like softmax"
    rivals: tuple[str, ...] = ()  # several could be meant: none chosen


def _functions(parsed: Parsed) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    out: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for s in parsed.statements:
        if isinstance(s.node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[s.node.name] = s.node  # the last definition wins, as when the file runs
    return out


def _compatible(fn: ast.FunctionDef | ast.AsyncFunctionDef, function: str) -> bool:
    need, _ = SIGNATURES.get(function, (0, 0))
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    required = len(positional) - len(args.defaults)
    required_kw = sum(d is None for d in args.kw_defaults)
    return required_kw == 0 and required <= need and (len(positional) >= need or args.vararg is not None)


def guess(parsed: Parsed, function: str, *, own_file: bool) -> Guess:
    """Which function the learner meant for `function` (see the module docstring)."""
    defs = _functions(parsed)
    others = set(SIGNATURES) - {function}
    known = {_key(a) for a in ALIASES.get(function, ())} | {_key(function)}
    aliased = sorted(n for n in defs if n not in others and _key(n) in known and _compatible(defs[n], function))
    if len(aliased) == 1:
        return Guess(aliased[0], f"a well-known name for {function}")
    if len(aliased) > 1:
        return Guess(rivals=tuple(aliased))
    if not own_file:
        return Guess()
    fits = {n for n, fn in defs.items() if n not in others and _compatible(fn, function)}
    called = {c.func.id for n in fits for c in ast.walk(defs[n])
              if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id != n}
    entry = sorted(fits - called) or sorted(fits)
    if len(entry) == 1:
        return Guess(entry[0], f"the only function in the file that can be called like {function}")
    return Guess(rivals=tuple(entry))


def signature_text(parsed: Parsed, name: str) -> str:
    """`stable_softmax(x, axis=-1)`: how a warning shows a learner's function."""
    fn = _functions(parsed).get(name)
    if fn is None:
        return name
    try:
        return f"{name}({ast.unparse(fn.args)})"
    except (ValueError, RecursionError):
        return name


__all__ = ["ALIASES", "Guess", "SIGNATURES", "guess", "signature_text"]
