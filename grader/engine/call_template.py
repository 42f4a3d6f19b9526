"""Which calls a replayed test makes, as a function of its examples: learned once per engine.

`grade` rebuilds every example under the submission's own salt, so each
submission's tests call the learner on new arrays, and replay learned those
calls by a dry run of every test on every submission (see
`ExampleReplay._prefetch`), about a tenth of a worker's time. For most tests
the calls are a fixed function of the example: each array argument is one
of the example's own arrays, passed as it is, and every other argument (an
axis, a flag) is the same whatever the values. `learn` finds that function
once per engine, by dry runs under two fixed salts that must agree call for
call; `apply` then builds a submission's calls from its own examples without
running the test. A test that derives an array from its example (a cast, a
sum), or whose calls differ between the two salts, has no template and
keeps its dry run.

The calls then pass the very arrays the real run will pass, so
`prefetch.same_values` matches them by identity: sound as long as a hidden
test never changes an example's array in place between calls, which
`tests/test_call_template.py` checks for every suite of ours (templates are
never used for a course's own tests).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

#: The two salts a template is learned under (any two distinct salts would do; fixed, so
#: every engine learns the same template).
LEARNING_SALTS = (0x5EED_0001, 0x5EED_0002)
#: Arguments other than arrays a template may fix: plain values, the same under every salt.
_PLAIN = (bool, int, float, str, type(None))

#: Where an argument comes from: ("x", example index, name, path in that value) for one of
#: an example's arrays, ("v", value) for a plain value.
ArgSpec = tuple[Any, ...]
Call = tuple[tuple[Any, ...], dict[str, Any], "int | None"]


@dataclass(frozen=True)
class CallTemplate:
    """Each call a test makes on a list of examples: its arguments' sources, its expected size."""

    calls: tuple[tuple[tuple[ArgSpec, ...], tuple[tuple[str, ArgSpec], ...], int | None], ...]

    def apply(self, examples: Sequence[dict[str, Any]]) -> list[Call]:
        """The calls the test makes on `examples` (built from the same recording as the template's)."""
        return [(tuple(_resolve(a, examples) for a in args), {k: _resolve(a, examples) for k, a in kwargs}, size)
                for args, kwargs, size in self.calls]


def dry_calls(test: Callable[..., Any], funcargs: dict[str, Any], examples: Sequence[dict[str, Any]],
              ) -> tuple[list[Call], list[int], bool]:
    """The calls a dry run of `test` makes on `examples`, which example made each, and whether
    the run got through them all (a dry run that breaks just batches less).

    Every call is answered by the reference, as a correct solution would answer it.
    """
    ctx = funcargs["step"]
    calls: list[Call] = []
    owners: list[int] = []
    ctx.collecting, ctx.dry_run = calls, True
    try:
        for i, example in enumerate(examples):
            test(**funcargs, **example)
            owners.extend([i] * (len(calls) - len(owners)))
    except Exception:  # noqa: BLE001 - see above
        return calls, owners, False
    finally:
        ctx.collecting, ctx.dry_run = None, False
    return calls, owners, True


def learn(test: Callable[..., Any], funcargs: dict[str, Any], recorded: Sequence[dict[str, Any]],
          materialize: Callable[[dict[str, Any], int], dict[str, Any]]) -> CallTemplate | None:
    """The template of `test` on `recorded`, or None when its calls are not a fixed function of them."""
    learned = []
    for salt in LEARNING_SALTS:
        examples = [materialize(ex, salt) for ex in recorded]
        calls, owners, complete = dry_calls(test, funcargs, examples)
        template = _template(calls, owners, examples) if complete else None
        if template is None:
            return None
        learned.append(template)
    return learned[0] if learned[0] == learned[1] else None


def _template(calls: list[Call], owners: list[int], examples: Sequence[dict[str, Any]]) -> CallTemplate | None:
    sources = [_arrays_of(ex) for ex in examples]
    out = []
    for (args, kwargs, size), owner in zip(calls, owners, strict=True):
        specs = [_spec(a, owner, sources[owner]) for a in args]
        kw_specs = [(str(k), _spec(v, owner, sources[owner])) for k, v in kwargs.items()]
        if any(s is None for s in specs) or any(s is None for _, s in kw_specs):
            return None
        out.append((tuple(specs), tuple(kw_specs), size))
    return CallTemplate(tuple(out))  # type: ignore[arg-type]


def _arrays_of(example: dict[str, Any]) -> dict[int, tuple[str, tuple[int, ...]]]:
    """Each array in `example` by identity: its name and its path inside that value."""
    found: dict[int, tuple[str, tuple[int, ...]]] = {}

    def walk(v: Any, name: str, path: tuple[int, ...]) -> None:
        if isinstance(v, np.ndarray):
            found.setdefault(id(v), (name, path))
        elif isinstance(v, (tuple, list)):
            for i, x in enumerate(v):
                walk(x, name, (*path, i))

    for name, value in example.items():
        walk(value, name, ())
    return found


def _spec(value: Any, owner: int, arrays: dict[int, tuple[str, tuple[int, ...]]]) -> ArgSpec | None:
    if isinstance(value, np.ndarray):
        where = arrays.get(id(value))
        return None if where is None else ("x", owner, where[0], where[1])
    if type(value) in _PLAIN:
        return ("v", type(value).__name__, value)
    return None


def _resolve(spec: ArgSpec, examples: Sequence[dict[str, Any]]) -> Any:
    if spec[0] == "v":
        return spec[2]
    _, owner, name, path = spec
    value = examples[owner][name]
    for i in path:
        value = value[i]
    return value
