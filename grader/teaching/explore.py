"""`attn-practice explore`: the computations behind the lesson's three widgets.

Pure computations returning plain dataclasses, shared by the terminal
(`explore_render` draws them) and the web lesson:

- sentence: attention weights over "The animal didn't cross the street
  because it was too tired." as a heatmap (or one row as bars), computed with
  the learner's own code once steps 1-5 pass, with the reference before;
- example: the worked example (or any query, keys and values) step by step;
- scale: why scores are divided by sqrt(d_k), measured on random vectors.

Learner code runs in the sandbox only, never in this process.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from attn_practice.exercises.lesson_data import Sentence, load_sentence, worked_example
from attn_practice.reference import attention as reference

if TYPE_CHECKING:
    from attn_practice.grader.sandbox.launcher import Launcher
    from attn_practice.grader.teaching.workspace import Workspace

MAX_EXAMPLE_KEYS = 32
MAX_EXAMPLE_WIDTH = 64
MAX_EXAMPLE_MAGNITUDE = 1e6


class InputError(ValueError):
    """Input a learner typed (or a file they gave) cannot be used; the message says why."""


# ================================================================ sentence
def causal_mask(n: int) -> np.ndarray:
    """Query i may look at keys 0..i (lower triangle, diagonal included)."""
    return np.tril(np.ones((n, n), dtype=bool))


@dataclass(frozen=True)
class Heatmap:
    tokens: tuple[str, ...]
    weights: np.ndarray  # (n, n): row = query, column = key
    mask: np.ndarray | None  # True = may attend; None: no mask
    source: str  # "yours" | "reference"
    label: str  # what to print about where the numbers came from


CORE_STEPS = ("step1", "step2", "step3", "step4", "step5")
YOURS = "computed with your code"
REFERENCE = "computed with the reference (finish steps 1-5 to use yours)"
REFERENCE_CAUSAL = "computed with the reference (pass bonus step 6 to use yours)"


def sentence_heatmap(*, causal: bool = False, workspace: Workspace | None | bool = None,
                     launcher: Launcher | None = None) -> Heatmap:
    """The sentence's attention weights, with the learner's code when their steps pass.

    `workspace=None` looks for one from the current directory; `False` forces the
    reference. The weights come out of the learner's `attention(Q, K, I)` (or
    `masked_attention(Q, K, I, mask)`): with the identity as the values, the
    output *is* the weight matrix, so one sandboxed call gives the whole picture.
    """
    s = load_sentence()
    n = len(s.tokens)
    mask = causal_mask(n) if causal else None
    eye = np.eye(n)
    fallback = REFERENCE_CAUSAL if causal else REFERENCE
    ws, changed = _passed_workspace(workspace, ("step6",) if causal else CORE_STEPS)
    if changed:  # passed, but not with the files there now: their code is not vouched for
        fallback = (f"computed with the reference (your {', '.join(changed)} changed since "
                    f"{'its' if len(changed) == 1 else 'their'} last check: check again to use yours)")
    elif ws is not None:
        args: tuple[Any, ...] = (s.queries, s.keys, eye) + ((mask,) if causal else ())
        weights, problem = _learner_weights(ws, "step6" if causal else "step5", args, launcher)
        if weights is not None:
            return Heatmap(s.tokens, weights, mask, "yours", YOURS)
        fallback = f"computed with the reference (your code could not be used: {problem})"
    if causal:
        weights = reference.masked_attention(s.queries, s.keys, eye, mask)
    else:
        weights = reference.attention(s.queries, s.keys, eye)
    return Heatmap(s.tokens, np.asarray(weights), mask, "reference", fallback)


def _passed_workspace(workspace: Workspace | None | bool,
                      steps: Sequence[str]) -> tuple[Workspace | None, list[str]]:
    """(the workspace when `steps` all passed, the steps among them whose files changed since)."""
    from attn_practice.grader.catalog import resolve_step
    from attn_practice.grader.teaching.workspace import (
        NotInWorkspace,
        Workspace,
        changed_since_check,
        find_workspace,
    )

    if workspace is False:
        return None, []
    if not isinstance(workspace, Workspace):
        try:
            workspace = find_workspace()
        except NotInWorkspace:
            return None, []
    try:
        state = workspace.load_state()
    except OSError:
        return None, []
    if not all(state.step(s).passed for s in steps):
        return None, []
    changed = [s for s in steps if state.step(s).checked
               and changed_since_check(workspace, state, resolve_step(s))]
    return (None, changed) if changed else (workspace, [])


def _learner_weights(ws: Workspace, step: str, args: tuple[Any, ...],
                     launcher: Launcher | None) -> tuple[np.ndarray | None, str]:
    from attn_practice.grader.catalog import resolve_step
    from attn_practice.grader.sandbox.launcher import Launcher
    from attn_practice.grader.sandbox.learner import Learner, LearnerError, Limits

    ex = resolve_step(step)
    own = launcher is None
    launcher = launcher or Launcher()
    learner = Learner(launcher, ws.root, step_id=ex.id, module=ex.module, function=ex.function,
                      params=ex.params, limits=Limits())
    try:
        got = np.asarray(learner(*args), dtype=np.float64)
    except LearnerError as exc:
        return None, exc.failure.summary
    except (RuntimeError, OSError) as exc:  # the sandbox could not start: say so, use the reference
        return None, f"the sandbox failed ({exc})"
    finally:
        learner.close()
        if own:
            launcher.close()
    n = args[0].shape[0]
    if got.shape != (n, n) or not np.all(np.isfinite(got)):
        return None, f"{ex.function} returned shape {got.shape} or non-finite numbers"
    return got, ""


def find_token(tokens: Sequence[str], name: str) -> int:
    """A token by exact text, then case-insensitively (if unique), then by 0-based index."""
    if name in tokens:
        return tokens.index(name)
    folded = [i for i, t in enumerate(tokens) if t.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    if name.lstrip("-").isdigit():
        i = int(name)
        if -len(tokens) <= i < len(tokens):
            return i % len(tokens)
    listing = ", ".join(f"{i}:{t}" for i, t in enumerate(tokens))
    raise InputError(f"no token {name!r} in the sentence. Tokens (index:text): {listing}")


# ================================================================= example
@dataclass(frozen=True)
class Example:
    q: np.ndarray  # (d_k,)
    keys: np.ndarray  # (n, d_k)
    values: np.ndarray  # (n, d_v)


_LESSON = worked_example()
DEFAULT_EXAMPLE = Example(q=_LESSON.q, keys=_LESSON.keys, values=_LESSON.values)


def parse_number(text: str, what: str) -> float:
    try:
        x = float(text)
    except ValueError:
        raise InputError(f"{what}: {text.strip()!r} is not a number") from None
    if not math.isfinite(x):
        raise InputError(f"{what}: {text.strip()!r} is not a finite number")
    return x


def parse_vector(text: str, what: str) -> np.ndarray:
    """'1,0,1,0' (commas and/or spaces) -> array([1., 0., 1., 0.])."""
    parts = [p for p in text.replace(",", " ").split()]
    if not parts:
        raise InputError(f"{what} is empty: give numbers separated by commas, e.g. 1,0,1,0")
    return np.array([parse_number(p, what) for p in parts])


def parse_matrix(text: str, what: str) -> np.ndarray:
    """'1,0;0,1' (rows separated by ';') -> a 2-D array; every row the same length."""
    rows = [r for r in text.split(";")]
    if rows and not rows[-1].strip():
        rows = rows[:-1]  # allow a trailing ';'
    if not rows:
        raise InputError(f"{what} is empty: give rows separated by ';', e.g. \"1,0;0,1\"")
    label = (lambda i: what) if len(rows) == 1 else (lambda i: f"{what} row {i + 1}")
    return _rectangular([parse_vector(r, label(i)) for i, r in enumerate(rows)], what)


def _rectangular(rows: Sequence[np.ndarray], what: str) -> np.ndarray:
    widths = [len(r) for r in rows]
    if len(set(widths)) > 1:
        bad = next(i for i, w in enumerate(widths) if w != widths[0])
        raise InputError(f"{what}: row {bad + 1} has {widths[bad]} numbers but row 1 has {widths[0]}; "
                         "every row needs the same length")
    return np.array(rows, dtype=np.float64)


def _from_yaml_value(value: Any, what: str, *, matrix: bool) -> np.ndarray:
    if isinstance(value, str):
        return parse_matrix(value, what) if matrix else parse_vector(value, what)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not matrix:
        value = [value]
    if not isinstance(value, list) or not value:
        raise InputError(f"{what} must be a non-empty list of numbers" + (" lists" if matrix else ""))
    if matrix:
        rows = []
        for i, r in enumerate(value):
            if not isinstance(r, list):
                raise InputError(f"{what} row {i + 1} must be a list of numbers, got {r!r}")
            rows.append(np.array([_yaml_number(x, f"{what} row {i + 1}") for x in r]))
        if any(len(r) == 0 for r in rows):
            raise InputError(f"{what}: a row is empty")
        return _rectangular(rows, what)
    if value and isinstance(value[0], list):
        if len(value) != 1:
            raise InputError(f"{what}: give one query (a list of numbers), not {len(value)}")
        value = value[0]
    return np.array([_yaml_number(x, what) for x in value])


def _yaml_number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise InputError(f"{what}: {x!r} is not a number")
    return parse_number(str(x), what)


def load_example_file(path: Path) -> dict[str, np.ndarray]:
    """A YAML file with `q`, `keys` and `values` (any may be left out to use the defaults)."""
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"{path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a mapping with q, keys and values")
    aliases = {"q": "q", "query": "q", "keys": "keys", "k": "keys", "values": "values", "v": "values"}
    out: dict[str, np.ndarray] = {}
    for key, value in data.items():
        name = aliases.get(str(key).lower())
        if name is None:
            raise InputError(f"{path}: unknown key {key!r} (expected q, keys, values)")
        out[name] = _from_yaml_value(value, f"{path}: {key}", matrix=name != "q")
    return out


def build_example(q: str | None = None, keys: str | None = None, values: str | None = None,
                  file: Path | None = None) -> Example:
    """Options over the file over the lesson's example; validated for a clear error."""
    parts: dict[str, np.ndarray] = load_example_file(file) if file is not None else {}
    if q is not None:
        qv = parse_matrix(q, "--q")
        if qv.shape[0] != 1:
            raise InputError(f"--q: give one query (e.g. 1,0,1,0), not {qv.shape[0]} rows")
        parts["q"] = qv[0]
    if keys is not None:
        parts["keys"] = parse_matrix(keys, "--keys")
    if values is not None:
        parts["values"] = parse_matrix(values, "--values")
    ex = Example(parts.get("q", DEFAULT_EXAMPLE.q), parts.get("keys", DEFAULT_EXAMPLE.keys),
                 parts.get("values", DEFAULT_EXAMPLE.values))
    d_k, n, n_v = ex.q.shape[0], ex.keys.shape[0], ex.values.shape[0]
    if ex.keys.shape[1] != d_k:
        raise InputError(f"the query has {d_k} numbers but each key has {ex.keys.shape[1]}: "
                         "queries and keys must have the same width d_k")
    if n_v != n:
        raise InputError(f"there are {n} keys but {n_v} values: every key needs exactly one value")
    biggest = max(float(np.max(np.abs(a))) for a in (ex.q, ex.keys, ex.values))
    if biggest > MAX_EXAMPLE_MAGNITUDE:
        raise InputError(f"keep the numbers between -{MAX_EXAMPLE_MAGNITUDE:g} and "
                         f"{MAX_EXAMPLE_MAGNITUDE:g} so every step stays readable")
    if n > MAX_EXAMPLE_KEYS or d_k > MAX_EXAMPLE_WIDTH or ex.values.shape[1] > MAX_EXAMPLE_WIDTH:
        raise InputError(f"keep it small enough to read: at most {MAX_EXAMPLE_KEYS} keys and "
                         f"{MAX_EXAMPLE_WIDTH} numbers per vector")
    return ex


@dataclass(frozen=True)
class ExampleSteps:
    example: Example
    d_k: int
    scores: np.ndarray  # (n,)
    scaled: np.ndarray  # (n,)
    weights: np.ndarray  # (n,)
    output: np.ndarray  # (d_v,)


def example_steps(ex: Example) -> ExampleSteps:
    """Every stage of attention for one query, with the reference functions."""
    q = ex.q[None, :]
    d_k = ex.q.shape[0]
    scores = reference.dot_scores(q, ex.keys)
    scaled = reference.scale_scores(scores, d_k)
    weights = reference.softmax(scaled, axis=-1)
    output = reference.weighted_sum(weights, ex.values)
    return ExampleSteps(ex, d_k, scores[0], scaled[0], weights[0], output[0])


# =================================================================== scale
SCALE_DIMS = (4, 16, 64, 256, 1024)


@dataclass(frozen=True)
class ScaleRow:
    d_k: int
    variance: float  # measured var(q·k) for unit-variance entries (theory: d_k)
    max_weight_raw: float  # mean largest softmax weight, scores not scaled
    max_weight_scaled: float  # ... scores divided by sqrt(d_k)


def scale_experiment(*, seed: int = 0, dims: Sequence[int] = SCALE_DIMS, samples: int = 2000,
                     n_keys: int = 8, trials: int = 500) -> list[ScaleRow]:
    """Measure how unscaled scores spread with d_k and saturate softmax; deterministic per seed."""
    rng = np.random.default_rng(seed)
    rows = []
    for d in dims:
        q = rng.standard_normal((samples, d))
        k = rng.standard_normal((samples, d))
        variance = float(np.var(np.einsum("sd,sd->s", q, k)))
        raw_max, scaled_max = [], []
        for start in range(0, trials, 100):
            m = min(100, trials - start)
            Q = rng.standard_normal((m, 1, d))
            K = rng.standard_normal((m, n_keys, d))
            scores = reference.dot_scores(Q, K)  # (m, 1, n_keys)
            raw_max.append(reference.softmax(scores, axis=-1).max(axis=-1).ravel())
            scaled_max.append(reference.softmax(reference.scale_scores(scores, d), axis=-1)
                              .max(axis=-1).ravel())
        rows.append(ScaleRow(d, variance, float(np.mean(np.concatenate(raw_max))),
                             float(np.mean(np.concatenate(scaled_max)))))
    return rows


def row_ranking(hm: Heatmap, i: int) -> list[tuple[str, float]]:
    """Query `i`'s keys from most to least weight, as (token, weight): the row's story in order."""
    row = hm.weights[i]
    return [(hm.tokens[int(k)], float(row[int(k)])) for k in np.argsort(-row, kind="stable")]


__all__ = [
    "CORE_STEPS", "DEFAULT_EXAMPLE", "Example", "ExampleSteps", "Heatmap", "InputError", "ScaleRow",
    "Sentence", "build_example", "causal_mask", "example_steps", "find_token", "load_example_file",
    "load_sentence", "parse_matrix", "parse_vector", "row_ranking", "scale_experiment",
    "sentence_heatmap",
]
