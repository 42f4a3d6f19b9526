"""Terminal drawings of the `explore` widgets: heatmap, bars, the worked example, the d_k table.

Only drawing: every number comes from `explore`'s computations (the web
lesson draws the same dataclasses its own way).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from rich.console import Console
from rich.text import Text

from attn_practice.exercises.lesson_data import load_sentence
from attn_practice.grader.teaching.explore import (
    ExampleSteps,
    Heatmap,
    ScaleRow,
    find_token,
    row_ranking,
)

EIGHTHS = " ▏▎▍▌▋▊▉"
BAR_WIDTH = 40


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
    t = Text("0 ")
    for k in range(10):
        r, g, b = weight_colour(k / 9)
        t.append("  ", style=f"on #{r:02x}{g:02x}{b:02x}")
    t.append(f" {top:.2f} (the largest weight here)")
    return t


def _row_summary(hm: Heatmap, i: int) -> Text:
    ranked = row_ranking(hm, i)
    (top, w0), rest = ranked[0], ranked[1:]
    text = Text.assemble((f"“{hm.tokens[i]}”", "bold"), " puts most weight on ",
                         (f"“{top}”", "bold"), f" ({w0:.2f})")
    if rest and rest[0][1] > 0:
        text.append(", then ")
        text.append(f"“{rest[0][0]}”", "bold")
        text.append(f" ({rest[0][1]:.2f})")
        if rest[1:]:
            text.append(f"; every other token gets at most {max(w for _, w in rest[1:]):.2f}")
    text.append(".")
    return text


def render_row(console: Console, hm: Heatmap, token: str) -> None:
    """One query's weights as horizontal bars (the lesson's 'click a word' widget)."""
    from rich.table import Table
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
def render_example(console: Console, st: ExampleSteps) -> None:
    from rich.table import Table
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
def render_scale(console: Console, rows: Sequence[ScaleRow], *, seed: int, n_keys: int = 8,
                 samples: int = 2000) -> None:
    from rich.table import Table
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



__all__ = ["bar", "num", "render_example", "render_heatmap", "render_row", "render_scale",
           "short_weight", "vec", "weight_colour"]
