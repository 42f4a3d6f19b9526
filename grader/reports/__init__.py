"""Report writers: one small module per output format.

Every writer is a pure function of `list[GradeReport]` returning text, so the
CLI decides where the text goes. `FORMATS` maps a `--format` name to its
renderer; the modules are imported only when a format is used, keeping
`attn-practice --help` instant.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_practice.grader.results import GradeReport

Renderer = Callable[["Sequence[GradeReport]"], str]

#: format name -> module (inside this package) whose `render` writes it.
_MODULES = {
    "json": "json_report",
    "junit": "junit",
    "gradescope": "gradescope",
    "github": "github",
    "csv": "csv_report",
}


def _lazy(module: str) -> Renderer:
    def render(reports: Sequence[GradeReport], **options: object) -> str:
        mod = importlib.import_module(f"{__name__}.{module}")
        return mod.render(reports, **options)

    render.__name__ = f"render_{module}"
    render.__doc__ = f"Render reports with `{__name__}.{module}.render` (imported on first use)."
    return render


FORMATS: dict[str, Renderer] = {name: _lazy(module) for name, module in _MODULES.items()}
