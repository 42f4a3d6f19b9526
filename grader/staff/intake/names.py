"""Which step a file name is meant for: the exact name, or a near miss a person would accept.

Near misses seen in real classes: another case (`Step2_Scale.py`), the bare
step (`step1.py`, `step_1.py`, `Step 1.py`), a browser's second download
(`step3_softmax (1).py`), an editor's copy (`step4_weighted_sum - Copy.py`,
`step4_weighted_sum copy 2.py`), dashes or spaces for underscores. A stem
that only contains the right function (`scale.py` defining `scale_scores`)
is recognised by its content, not here (see `recognise`).
"""

from __future__ import annotations

import re

from attn_practice.grader.catalog import Exercise

_COPY_SUFFIX = re.compile(r"(\s*\(\d+\)|\s*\[\d+\]|[\s_-]+copy(?:[\s_-]*\(?\d+\)?)?|[\s_-]+\d+)$", re.IGNORECASE)
_BARE_STEP = re.compile(r"^step_?0*(\d+)(?:_.*)?$")


#: Python source as some systems save it (an editor on Windows adding `.txt`).
PY_SUFFIXES = (".py", ".py.txt")
NOTEBOOK_SUFFIXES = (".ipynb", ".ipynb.json", ".ipynb.txt")


def python_stem(filename: str) -> str | None:
    """The name without its Python suffix (`.py`, `.PY`, `.py.txt`), or None."""
    low = filename.lower()
    for suffix in PY_SUFFIXES[::-1]:
        if low.endswith(suffix):
            return filename[: -len(suffix)]
    return None


def is_notebook(filename: str) -> bool:
    return filename.lower().endswith(NOTEBOOK_SUFFIXES)


def normalise(filename: str) -> str | None:
    """`Step3_Softmax (1).py` -> `step3_softmax`; None for a name that is not a `.py` file."""
    stem = python_stem(filename)
    if stem is None or filename.startswith("."):
        return None
    stem = stem.strip()
    while True:
        shorter = _COPY_SUFFIX.sub("", stem)
        if shorter == stem or not shorter or shorter.strip(" _-").lower() == "step":
            break
        stem = shorter
    return re.sub(r"[\s\-.]+", "_", stem.lower())


def step_for_name(filename: str, catalog: tuple[Exercise, ...]) -> Exercise | None:
    """The step a file name is (nearly) the name of, or None."""
    for ex in catalog:
        if filename == ex.file:
            return ex
    norm = normalise(filename)
    if norm is None:
        return None
    for ex in catalog:
        if norm == ex.module:
            return ex
    m = _BARE_STEP.match(norm)
    if m:
        number = int(m.group(1))
        for ex in catalog:
            if ex.number == number:
                return ex
    return None


def function_key(name: str) -> str:
    """`Softmax`, `soft_max`, `SoftMax` -> `softmax`: how a near-miss function name is matched."""
    return name.lower().replace("_", "")


__all__ = ["function_key", "is_notebook", "normalise", "python_stem", "step_for_name"]
