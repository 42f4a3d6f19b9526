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
    if len(reports) == 1:
        return json_text(reports[0].to_dict()) + "\n"
    # One report's dict at a time: a class of 5,000 never holds every report twice over as
    # dicts (the parent's peak memory). The text is exactly `json.dumps(list, indent=2)`'s:
    # JSON strings hold no raw newline, so indenting each item's lines is safe.
    items = ["  " + json_text(r.to_dict()).replace("\n", "\n  ") for r in reports]
    return "[\n" + ",\n".join(items) + "\n]\n" if items else "[]\n"
