"""`attn-practice explore`: the lesson's interactive widgets, as terminal pictures.

Three widgets, each a computation plus a rich rendering:

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
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import yaml

from attn_practice.reference import attention as reference

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from attn_practice.grader.sandbox.launcher import Launcher
    from attn_practice.grader.teaching.workspace import Workspace

EIGHTHS = " ▏▎▍▌▋▊▉"
BAR_WIDTH = 40
MAX_EXAMPLE_KEYS = 32
MAX_EXAMPLE_WIDTH = 64
MAX_EXAMPLE_MAGNITUDE = 1e6


class InputError(ValueError):
    """Input a learner typed (or a file they gave) cannot be used; the message says why."""


# ===================================================================== bars
def bar(fraction: float, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of `fraction` (0..1) of `width` cells, in eighths of a cell."""
    fraction = min(max(float(fraction), 0.0), 1.0) if math.isfinite(fraction) else 0.0
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    return "█" * full + (EIGHTHS[part] if part else "")


def num(x: float, places: int = 4) -> str:
    """2 -> '2', 0.5 -> '0.5', 0.50648 -> '0.5065' (no '-0')."""
    text = f"{float(x):.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def short_weight(w: float) -> str:
    """A weight in at most 3 characters: 0.566 -> '.57', 1.0 -> '1.0'."""
    if w >= 0.995:
        return "1.0"
    return f"{max(w, 0.0):.2f}"[1:]


def vec(a: np.ndarray, places: int = 4) -> str:
    return "[" + ", ".join(num(x, places) for x in np.ravel(a)) + "]"


# ================================================================ sentence
@dataclass(frozen=True)
class Sentence:
    text: str
    tokens: tuple[str, ...]
    d_k: int
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray


def load_sentence() -> Sentence:
    """The lesson's hand-made sentence (exercises/data/sentence.yaml)."""
    path = Path(str(resources.files("attn_practice.exercises"))) / "data" / "sentence.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return Sentence(
        text=str(data["sentence"]),
        tokens=tuple(str(t) for t in data["tokens"]),
        d_k=int(data["d_k"]),
        queries=np.array(data["queries"], dtype=np.float64),
        keys=np.array(data["keys"], dtype=np.float64),
        values=np.array(data["values"], dtype=np.float64),
    )


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
    ws = _passed_workspace(workspace, ("step6",) if causal else ("step1", "step2", "step3", "step4", "step5"))
    if ws is not None:
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


def _passed_workspace(workspace: Workspace | None | bool, steps: Sequence[str]) -> Workspace | None:
    from attn_practice.grader.teaching.workspace import NotInWorkspace, Workspace, find_workspace

    if workspace is False:
        return None
    if not isinstance(workspace, Workspace):
        try:
            workspace = find_workspace()
        except NotInWorkspace:
            return None
    try:
        state = workspace.load_state()
    except OSError:
        return None
    if all(state.step(s).status == "passed" for s in steps):
        return workspace
    return None


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


# ---------------------------------------------------------------- colours
_STOPS = ((0.0, (24, 24, 48)), (0.35, (60, 70, 160)), (0.7, (220, 90, 60)), (1.0, (255, 220, 80)))


def weight_colour(fraction: float) -> tuple[int, int, int]:
    """A dark-blue -> red -> yellow ramp; `fraction` is 0..1."""
    f = min(max(fraction, 0.0), 1.0)
    for (x0, c0), (x1, c1) in zip(_STOPS, _STOPS[1:], strict=False):
        if f <= x1:
            t = (f - x0) / (x1 - x0)
            return tuple(round(a + (b - a) * t) for a, b in zip(c0, c1, strict=True))  # type: ignore[return-value]
    return _STOPS[-1][1]


def _cell_style(fraction: float) -> str:
    r, g, b = weight_colour(fraction)
    fg = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 140 else "white"
    return f"{fg} on #{r:02x}{g:02x}{b:02x}"


# ---------------------------------------------------------------- rendering
def render_heatmap(console: Console, hm: Heatmap) -> None:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    s = load_sentence()
    top = float(np.max(hm.weights)) or 1.0
    table = Table(box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False)
    table.add_column("", justify="right", style="bold", no_wrap=True)
    for tok in hm.tokens:
        table.add_column(tok, justify="right", no_wrap=True, min_width=3)
    for i, q in enumerate(hm.tokens):
        cells: list[Text | str] = [Text(q)]
        for j in range(len(hm.tokens)):
            if hm.mask is not None and not hm.mask[i, j]:
                cells.append(Text("·", style="dim"))
                continue
            w = float(hm.weights[i, j])
            cells.append(Text(short_weight(w), style=_cell_style(w / top)))
        table.add_row(*cells)
    title = "Causal attention weights" if hm.mask is not None else "Attention weights"
    console.print(Text.assemble((title, "bold"), f" for “{s.text}”"))
    console.print("Rows: queries (the token that looks). Columns: keys (the token looked at). "
                  "Each row sums to 1; .57 means 0.57.", style="dim")
    if hm.mask is not None:
        console.print("Causal: a token may look only at itself and earlier tokens (· = masked, weight 0).",
                      style="dim")
    console.print(table)
    if console.color_system is not None:
        console.print(Text.assemble("colour: ", _legend(top)))
    console.print(Text(hm.label, style="green" if hm.source == "yours" else "yellow"))
    it = hm.tokens.index("it") if "it" in hm.tokens else None
    if it is not None:
        console.print(_row_summary(hm, it))
        console.print("See one row as bars: attn-practice explore sentence --row it", style="dim")


def _legend(top: float) -> Text:
    from rich.text import Text

    t = Text("0 ")
    for k in range(10):
        r, g, b = weight_colour(k / 9)
        t.append("  ", style=f"on #{r:02x}{g:02x}{b:02x}")
    t.append(f" {top:.2f} (the largest weight here)")
    return t


def _row_summary(hm: Heatmap, i: int) -> Text:
    from rich.text import Text

    row = hm.weights[i]
    order = [int(k) for k in np.argsort(-row, kind="stable")]
    text = Text.assemble((f"“{hm.tokens[i]}”", "bold"), " puts most weight on ",
                         (f"“{hm.tokens[order[0]]}”", "bold"), f" ({row[order[0]]:.2f})")
    if len(order) > 1 and row[order[1]] > 0:
        text.append(", then ")
        text.append(f"“{hm.tokens[order[1]]}”", "bold")
        text.append(f" ({row[order[1]]:.2f})")
        rest = [row[k] for k in order[2:]]
        if rest:
            text.append(f"; every other token gets at most {max(rest):.2f}")
    text.append(".")
    return text


def render_row(console: Console, hm: Heatmap, token: str) -> None:
    """One query's weights as horizontal bars (the lesson's 'click a word' widget)."""
    from rich.table import Table
    from rich.text import Text

    i = find_token(hm.tokens, token)
    row = hm.weights[i]
    console.print(Text.assemble(("Where “", "bold"), (hm.tokens[i], "bold cyan"),
                                ("” looks", "bold"), f" (query {i}; its weights sum to {row.sum():.2f})"))
    table = Table(box=None, padding=(0, 1), pad_edge=False, show_header=False)
    table.add_column("key", justify="right", style="bold", no_wrap=True)
    table.add_column("weight", justify="right", no_wrap=True)
    table.add_column("bar", no_wrap=True)
    best = int(np.argmax(row))
    for j, tok in enumerate(hm.tokens):
        if hm.mask is not None and not hm.mask[i, j]:
            table.add_row(tok, Text("·", style="dim"), Text("masked (a later token)", style="dim"))
            continue
        w = float(row[j])
        style = "bold yellow" if j == best else "cyan"
        table.add_row(tok, f"{w:.3f}", Text(bar(w) or "▏", style=style))
    console.print(table)
    console.print(Text(hm.label, style="green" if hm.source == "yours" else "yellow"))
    console.print(_row_summary(hm, i))


# ================================================================= example
@dataclass(frozen=True)
class Example:
    q: np.ndarray  # (d_k,)
    keys: np.ndarray  # (n, d_k)
    values: np.ndarray  # (n, d_v)


DEFAULT_EXAMPLE = Example(
    q=np.array([1.0, 0.0, 1.0, 0.0]),
    keys=np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0]]),
    values=np.array([[10.0, 0.0], [0.0, 5.0], [2.0, 2.0]]),
)


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


def render_example(console: Console, st: ExampleSteps) -> None:
    from rich.table import Table
    from rich.text import Text

    ex = st.example
    n = ex.keys.shape[0]
    names = [f"k{j + 1}" for j in range(n)]
    console.print(Text.assemble(("Attention for one query, step by step", "bold"),
                                "   softmax(q·Kᵀ / √d_k) V"))
    console.print(f"query q = {vec(ex.q)}   d_k = {st.d_k}")
    inputs = Table(box=None, padding=(0, 2), pad_edge=False, show_header=True, header_style="bold")
    inputs.add_column("")
    inputs.add_column("key k_j")
    inputs.add_column("value v_j")
    for j in range(n):
        inputs.add_row(names[j], vec(ex.keys[j]), vec(ex.values[j]))
    console.print(inputs)

    console.print()
    console.print(Text.assemble(("1. scores", "bold"), "  q·k_j, one per key"))
    terms = [" + ".join(f"{num(a)}·{num(b)}" for a, b in zip(ex.q, ex.keys[j], strict=True)) for j in range(n)]
    for j in range(n):
        line = f"   {names[j]}: {terms[j]} = {num(st.scores[j])}" if st.d_k <= 8 else \
            f"   {names[j]}: {num(st.scores[j])}"
        console.print(line, highlight=False)
    console.print(f"   scores = {vec(st.scores)}")

    root = math.sqrt(st.d_k)
    console.print(Text.assemble(("2. scaled", "bold"), f"  scores / √{st.d_k} = scores / {num(root)}"))
    console.print(f"   scaled = {vec(st.scaled)}")

    console.print(Text.assemble(("3. weights", "bold"),
                                "  softmax: exp(each) / sum of exp; they sum to 1"))
    top = float(np.max(st.weights))
    w_table = Table(box=None, padding=(0, 1), pad_edge=False, show_header=False)
    w_table.add_column(justify="right")
    w_table.add_column(justify="right")
    w_table.add_column(no_wrap=True)
    for j in range(n):
        w = float(st.weights[j])
        w_table.add_row(f"   {names[j]}", f"{w:.4f}",
                        Text(bar(w) or "▏", style="bold yellow" if w == top else "cyan"))
    console.print(w_table)
    console.print(f"   weights = {vec(st.weights)}")

    console.print(Text.assemble(("4. output", "bold"), "  the weighted sum of the values, Σ w_j·v_j"))
    mix = " + ".join(f"{num(st.weights[j], 3)}·{vec(ex.values[j], 2)}" for j in range(min(n, 6)))
    if n > 6:
        mix += " + …"
    console.print(f"   {mix}", highlight=False)
    console.print(Text.assemble("   output = ", (vec(st.output), "bold green")))
    console.print()
    console.print("Move the query and watch the weights follow: try --q 0,1,0,1, or --q 4,0,4,0 "
                  "(bigger scores, sharper weights).", style="dim")


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


def render_scale(console: Console, rows: Sequence[ScaleRow], *, seed: int, n_keys: int = 8,
                 samples: int = 2000) -> None:
    from rich.table import Table
    from rich.text import Text

    console.print(Text.assemble(("Why divide by √d_k?", "bold"),
                                f"  (random vectors with unit-variance entries, seed {seed})"))
    console.print(f"The spread of q·k grows with the width d_k (measured over {samples} pairs):",
                  style="dim")
    top_std = max(math.sqrt(r.variance) for r in rows) or 1.0
    spread = Table(box=None, padding=(0, 1), pad_edge=False, show_header=True, header_style="bold")
    spread.add_column("d_k", justify="right")
    spread.add_column("var(q·k)", justify="right")
    spread.add_column("std(q·k)", justify="right")
    spread.add_column("typical size of a score", no_wrap=True)
    for r in rows:
        std = math.sqrt(r.variance)
        spread.add_row(str(r.d_k), f"{r.variance:,.1f}", f"{std:.1f}",
                       Text(bar(std / top_std, 30) or "▏", style="cyan"))
    console.print(spread)
    console.print()
    console.print(f"The largest softmax weight over {n_keys} random keys (mean; 1.0 = all on one key, "
                  f"{1 / n_keys:.3f} = spread evenly):", style="dim")
    sat = Table(box=None, padding=(0, 1), pad_edge=False, show_header=True, header_style="bold")
    sat.add_column("d_k", justify="right")
    sat.add_column("not scaled", justify="right")
    sat.add_column("", no_wrap=True)
    sat.add_column("÷ √d_k", justify="right")
    sat.add_column("", no_wrap=True)
    for r in rows:
        sat.add_row(str(r.d_k), f"{r.max_weight_raw:.3f}",
                    Text(bar(r.max_weight_raw, 20).ljust(20), style="red" if r.max_weight_raw > 0.9 else "yellow"),
                    f"{r.max_weight_scaled:.3f}", Text(bar(r.max_weight_scaled, 20) or "▏", style="green"))
    console.print(sat)
    last = rows[-1]
    console.print()
    console.print(Text.assemble(
        "var(q·k) ≈ d_k, so unscaled scores spread out as √d_k grows and softmax ", ("saturates", "bold"),
        f": at d_k = {last.d_k} the largest weight is {last.max_weight_raw:.2f} on average, "
        "nearly all on one key, and its gradients vanish. Dividing by √d_k brings the variance "
        f"back to about 1, so the largest weight stays around {rows[0].max_weight_scaled:.2f}-"
        f"{last.max_weight_scaled:.2f} whatever the width."))


__all__ = [
    "DEFAULT_EXAMPLE", "Example", "ExampleSteps", "Heatmap", "InputError", "ScaleRow", "Sentence",
    "bar", "build_example", "causal_mask", "example_steps", "find_token", "load_example_file",
    "load_sentence", "parse_matrix", "parse_vector", "render_example", "render_heatmap", "render_row",
    "render_scale", "scale_experiment", "sentence_heatmap",
]
