"""The one builder of reference shims: module sources that stand in for earlier steps.

With `--reference-steps` (and in notebooks that ask for it) a step that
imports an earlier step file (`from step3_softmax import softmax`) gets the
reference implementation under that module name instead of the learner's,
so one step can be checked alone. The engine and the notebook both call
`reference_shims`; the source is the whole reference module, which imports
everything it uses itself.
"""

from __future__ import annotations

import inspect

from attn_practice.grader.catalog import Exercise, load_catalog
from attn_practice.reference import attention as reference


def reference_shims(ex: Exercise) -> dict[str, str]:
    """Module name -> source, for every step that `ex` depends on."""
    source = inspect.getsource(reference)
    return {dep.module: source for dep in load_catalog() if dep.id in ex.depends_on}


__all__ = ["reference_shims"]
