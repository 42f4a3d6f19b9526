"""The lesson's data, defined once in `exercises/data/`: the worked example and the sentence.

Every reader (the lessons' panels, `explore`, the worked-example panel after
a failed check, the hidden suites, the web lesson) loads it from here, so
changing a number changes it everywhere. Only NumPy and PyYAML are imported;
each call returns fresh, writable arrays (a caller may hand them to learner
code that changes its input).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import yaml

DATA_DIR = Path(str(resources.files("attn_practice.exercises"))) / "data"


@functools.cache
def _raw(name: str) -> dict[str, Any]:
    # The C loader when PyYAML has it: it is read on every `check`.
    data = yaml.load((DATA_DIR / name).read_text(encoding="utf-8"),
                     Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    if not isinstance(data, dict):
        raise ValueError(f"{DATA_DIR / name}: expected a mapping")
    return data


@dataclass(frozen=True)
class WorkedExample:
    """q = [1, 0, 1, 0] against three keys and values (CONTRACT §2)."""

    q: np.ndarray  # (d_k,) the query
    keys: np.ndarray  # (n, d_k)
    values: np.ndarray  # (n, d_v)
    #: the lesson's printed (rounded) numbers for each stage; the reference gives exact ones
    lesson: dict[str, tuple[float, ...]]

    @property
    def Q(self) -> np.ndarray:  # noqa: N802 - the lesson's name: the query as a one-row matrix
        return self.q[None, :]

    @property
    def d_k(self) -> int:
        return int(self.q.shape[-1])


def worked_example() -> WorkedExample:
    """The lesson's worked example, read from exercises/data/worked_example.yaml."""
    data = _raw("worked_example.yaml")
    lesson = {k: tuple(float(x) for x in data[k]) for k in ("scores", "scaled", "weights", "output")}
    return WorkedExample(q=np.array(data["q"], dtype=np.float64),
                         keys=np.array(data["keys"], dtype=np.float64),
                         values=np.array(data["values"], dtype=np.float64), lesson=lesson)


@dataclass(frozen=True)
class Sentence:
    """The hand-made sentence whose "it" looks back at "animal" (exercises/data/sentence.yaml)."""

    text: str
    tokens: tuple[str, ...]
    d_k: int
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray


def load_sentence() -> Sentence:
    """The lesson's sentence with its hand-made queries, keys and values."""
    data = _raw("sentence.yaml")
    return Sentence(
        text=str(data["sentence"]),
        tokens=tuple(str(t) for t in data["tokens"]),
        d_k=int(data["d_k"]),
        queries=np.array(data["queries"], dtype=np.float64),
        keys=np.array(data["keys"], dtype=np.float64),
        values=np.array(data["values"], dtype=np.float64),
    )


__all__ = ["DATA_DIR", "Sentence", "WorkedExample", "load_sentence", "worked_example"]
