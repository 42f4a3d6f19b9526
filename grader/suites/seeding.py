"""The random numbers behind every generated example: one generator per (seed, salt).

Hypothesis draws an example's recipe (shapes, fill style, a seed); NumPy
fills the arrays from `generator(seed, salt)` (see `strategies`). The
numbers depend on the pair only, never on the process, thread or order, so
a report is the same on every run and in every worker.
"""

from __future__ import annotations

import threading

import numpy as np

_MASK64 = (1 << 64) - 1
_UNSALTED = 0x6A09E667F3BCC908  # the salt word of the public values (no salt)
_GENERATORS = threading.local()


def _mix64(x: int) -> int:
    """splitmix64's finaliser: every bit of a 64-bit word reaches every bit of the result."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def _word(n: int) -> int:
    """Any int folded into 64 bits (seeds and salts are 64 bits or fewer; a recipe from the
    example store may hold anything, and a negative one must not loop forever)."""
    n = abs(int(n))
    word = n & _MASK64
    while n >> 64:
        n >>= 64
        word = _mix64(word ^ (n & _MASK64))
    return word


def generator(seed: int, salt: int | None) -> np.random.Generator:
    """The generator of (seed, salt): the same numbers in every process and on every run.

    One PCG64 per thread whose state is set from the pair (mixed by splitmix64),
    not a new Generator per array: hashing a SeedSequence was ~14 us of the
    ~15 an array cost, some 500 times per submission. The generator is valid
    until this thread's next call: draw everything from it first.
    """
    gen = getattr(_GENERATORS, "gen", None)
    if gen is None:
        gen = _GENERATORS.gen = np.random.Generator(np.random.PCG64(0))
    a = _mix64(_word(seed))
    b = _mix64(a ^ _mix64(_UNSALTED if salt is None else _word(salt) ^ 0xB7E151628AED2A6B))
    gen.bit_generator.state = {"bit_generator": "PCG64", "has_uint32": 0, "uinteger": 0,
                               "state": {"state": (a << 64) | b, "inc": (_mix64(a ^ b) << 64) | _mix64(b) | 1}}
    return gen


__all__ = ["generator"]
