"""attn-practice: autograded practice for the attention mechanism.

Kept tiny on purpose: the sandbox process imports this package before any
learner code, and `attn-practice --help` must stay instant.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from attn_practice.grader.results import StepResult

__all__ = ["__version__", "check"]


def check(step: str, function: Any, **options: Any) -> StepResult:
    """Grade a function object from a notebook or script with the full engine.

    The function's *source* is sent to the sandbox process; the object itself
    never runs in the grading process.
    """
    from attn_practice.grader.teaching.notebook import check as _check

    return _check(step, function, **options)
