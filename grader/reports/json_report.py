"""`--format json`: the report model itself, as CONTRACT §4 promises it.

One submission prints one object, several print an array in the order
given, so a script can `json.load` the output without knowing how many
submissions were graded.
"""

from __future__ import annotations

from collections.abc import Sequence

from attn_practice.grader.reports._text import json_text
from attn_practice.grader.results import GradeReport


def render(reports: Sequence[GradeReport]) -> str:
    """The JSON text (object for one report, array for several), newline-terminated.

    Learner text may hold lone surrogates (undecodable bytes), bidi overrides
    or zero-width characters; they are written as `\\uXXXX` escapes, so the
    output is always valid UTF-8 and valid JSON, and parses back to exactly
    the report.
    """
    dicts = [r.to_dict() for r in reports]
    return json_text(dicts[0] if len(dicts) == 1 else dicts) + "\n"
