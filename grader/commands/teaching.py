"""Teaching commands: `explore` (the lesson's widgets) and `watch` (re-check on save).

`cli.py` registers the Click commands `explore` and `watch` found here
(lazily, through its `LAZY_COMMANDS` table). Each command only parses and renders; the work is in `explore`,
`watch` and the engine. Heavy imports happen inside the commands so
`attn-practice --help` stays instant.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn

import click

from attn_practice.grader.commands.common import EXIT_USAGE, Problem, console


def _usage_error(message: str) -> NoReturn:
    raise Problem(message, code=EXIT_USAGE)


_console = console


# ------------------------------------------------------------------ explore
@click.group()
def explore() -> None:
    """See attention at work: the lesson's interactive widgets, in your terminal.

    \b
    Examples:
      attn-practice explore sentence            # who looks at whom, as a heatmap
      attn-practice explore sentence --row it   # where "it" looks, as bars
      attn-practice explore example --q 0,1,0,1 # the worked example, any query
      attn-practice explore scale               # why divide by sqrt(d_k)
    """


@explore.command()
@click.option("--row", "token", metavar="TOKEN",
              help="Show one query's weights as bars (a word such as `it`, or its index).")
@click.option("--causal", is_flag=True,
              help="Mask the future: each token may look only at itself and earlier ones.")
def sentence(token: str | None, causal: bool) -> int:
    """Attention weights over "The animal didn't cross the street because it was too tired."

    Once steps 1-5 pass in your workspace, the weights are computed with your
    own code (step 6 for --causal); before that, with the reference.

    \b
    Examples:
      attn-practice explore sentence
      attn-practice explore sentence --row it
      attn-practice explore sentence --causal --row it
    """
    from attn_practice.grader.teaching.explore import (
        InputError,
        find_token,
        load_sentence,
        sentence_heatmap,
    )
    from attn_practice.grader.teaching.explore_render import render_heatmap, render_row

    if token is not None:
        try:
            find_token(load_sentence().tokens, token)  # a typo fails before any work is done
        except InputError as exc:
            _usage_error(str(exc))
    hm = sentence_heatmap(causal=causal)
    con = _console()
    if token is None:
        render_heatmap(con, hm)
    else:
        render_row(con, hm, token)
    return 0


@explore.command()
@click.option("--q", "q", metavar="NUMBERS", help="The query, e.g. 1,0,1,0 (default: the lesson's).")
@click.option("--keys", metavar="ROWS", help='The keys, rows split by ";", e.g. "1,0,1,0;0,1,0,1;1,0,0,0".')
@click.option("--values", metavar="ROWS", help='The values, one row per key, e.g. "10,0;0,5;2,2".')
@click.option("--file", "file", type=click.Path(path_type=Path, dir_okay=False),
              help="A YAML file with q, keys and values (options given as well win).")
def example(q: str | None, keys: str | None, values: str | None, file: Path | None) -> int:
    """The worked example step by step: scores, scaled scores, weights, output.

    With no options it is the lesson's example; change any part and every
    step is recomputed.

    \b
    Examples:
      attn-practice explore example
      attn-practice explore example --q 0,1,0,1
      attn-practice explore example --q 1,1 --keys "1,0;0,1" --values "1,2;3,4"
      attn-practice explore example --file example.yaml
    """
    from attn_practice.grader.teaching.explore import InputError, build_example, example_steps
    from attn_practice.grader.teaching.explore_render import render_example

    try:
        ex = build_example(q, keys, values, file)
    except InputError as exc:
        _usage_error(str(exc))
    render_example(_console(), example_steps(ex))
    return 0


@explore.command()
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for the random vectors.")
def scale(seed: int) -> int:
    """Why scores are divided by sqrt(d_k): spread and softmax saturation, measured.

    \b
    Example:
      attn-practice explore scale --seed 1
    """
    from attn_practice.grader.teaching.explore import scale_experiment
    from attn_practice.grader.teaching.explore_render import render_scale

    render_scale(_console(), scale_experiment(seed=seed), seed=seed)
    return 0


# ------------------------------------------------------------------ watch
@click.command()
@click.argument("step", required=False)
@click.option("--interval", type=click.FloatRange(0.05, 10.0), default=0.5, show_default=True,
              help="Seconds between looks at your files.")
def watch(step: str | None, interval: float) -> int:
    """Re-check your current step every time you save a step file.

    When the step passes, watch moves on to the next one. Keys: h hint,
    n next step, l list progress, c check now, q quit (Ctrl-C works too).

    \b
    Examples:
      attn-practice watch
      attn-practice watch step3
    """
    from attn_practice.grader.commands.common import step as _step
    from attn_practice.grader.commands.common import workspace as _workspace
    from attn_practice.grader.teaching.watch import WatchLoop, open_key_source

    ws = _workspace()
    start = _step(step) if step else None
    con = _console()
    with open_key_source() as keys:
        loop = WatchLoop(ws, console=con, keys=keys, interval=interval, start=start)
        return loop.run()


__all__ = ["explore", "watch"]
