"""One assertion helper, one message format.

Compare vectorised first; only after a failure find the worst element and
build the precise message: named shapes, index, got, expected, the tolerance
used, and one line of Python that reproduces the call. Every failure is a
`StepFailure` carrying a structured `Failure`, which the collector turns into
a report without ever parsing text.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from attn_practice.grader.catalog import Exercise, Tolerance
from attn_practice.grader.results import CarriesFailure, Failure
from attn_practice.grader.sandbox.failures import describe_inputs, format_array, repro_line
from attn_practice.grader.sandbox.learner import Learner, LearnerError
from attn_practice.grader.suites.expected_memo import remembered
from attn_practice.grader.suites.scales import (
    has_float32,
    has_scale,
    rounding_scale,
    score_allowance,
)

#: The latest failing inputs kept per step for the diagnosis (the shrunk example comes last).
MAX_FAILING_INPUTS = 6


class StepFailure(CarriesFailure, AssertionError):
    """A hidden test failed; `.failure` says why in the learner's terms.

    Raised in quiet mode (`StepContext.quiet`), the failure is built by `complete()`.
    """

    def __init__(self, failure: Failure | None = None, *, build: Callable[[], Failure] | None = None):
        failure = failure or Failure(kind="pending", summary="")
        super().__init__(failure.summary)
        self.failure = failure
        self.build = build


def named_shape(shape: Sequence[int], dims: Sequence[str]) -> str:
    """'(batch, n_q, n_k) = (2, 3, 4)': shapes explained with dimension names."""
    extra = len(shape) - len(dims)
    if extra < 0:
        names = list(dims[-len(shape):]) if shape else []
    else:
        batch = ["batch"] if extra == 1 else [f"batch{i + 1}" for i in range(extra)]
        names = batch + list(dims)
    if not names:
        return "() (a single number)"
    return f"({', '.join(names)}) = {tuple(int(n) for n in shape)}"


@dataclass
class StepContext:
    """What a hidden test needs: the exercise, the learner's function, the reference."""

    exercise: Exercise
    learner: Learner
    reference: Callable[..., Any]
    failing_inputs: list[tuple[Any, ...]] = field(default_factory=list)
    #: When a list, calls are recorded here and answered by the reference (see replay.py).
    collecting: list[tuple[tuple[Any, ...], dict[str, Any], int | None]] | None = None
    #: A dry run that only learns which calls a test makes (replay's prefetch): every answer
    #: is the reference's own, so `compare` has nothing to judge and returns at once.
    dry_run: bool = False
    #: Raise failures with their messages unbuilt (see `StepFailure.complete`).
    quiet: bool = False
    #: Some call returned another dtype than the reference does for its input.
    _dtype_note_earned: bool = False
    #: How many failing inputs were ever noted (a test failed on an input when this grew).
    noted: int = 0

    @contextlib.contextmanager
    def quietly(self) -> Iterator[None]:
        """Failures raised meanwhile, here and by the learner, leave their messages unbuilt."""
        learner_quiet = hasattr(self.learner, "quiet")
        self.quiet = True
        if learner_quiet:
            self.learner.quiet = True
        try:
            yield
        finally:
            self.quiet = False
            if learner_quiet:
                self.learner.quiet = False

    def _remember(self, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> None:
        """Keep the latest failing inputs (the shrunk example comes last) for diagnosis.

        Stored positionally in the contract's parameter order, keywords included
        (softmax's `axis` matters to the diagnosis).
        """
        full = list(args)
        for name in self.exercise.params[len(full):]:
            if not kwargs or name not in kwargs:
                break
            full.append(kwargs[name])
        self.note_failing(tuple(full))

    def note_failing(self, inputs: tuple[Any, ...]) -> None:
        """Keep `inputs` as the latest failing ones (for the diagnosis, and to order failures)."""
        self.failing_inputs.append(inputs)
        del self.failing_inputs[:-MAX_FAILING_INPUTS]
        self.noted += 1

    # -- calling -------------------------------------------------------------
    def expected(self, *args: Any, **kwargs: Any) -> np.ndarray:
        """The reference answer, computed in float64 on the grader's own copies (remembered by
        content: the real run of a replayed test asks what its dry run computed)."""
        return remembered(self.reference, args, kwargs, lambda: self._compute_expected(args, kwargs))

    def _compute_expected(self, args: Sequence[Any], kwargs: dict[str, Any]) -> np.ndarray:
        copies = [np.array(a, dtype=np.float64) if isinstance(a, np.ndarray) and a.dtype.kind == "f"
                  else (a.copy() if isinstance(a, np.ndarray) else a) for a in args]
        with np.errstate(all="ignore"):
            return np.asarray(self.reference(*copies, **kwargs), dtype=np.float64)

    def call(self, *args: Any, expected_size: int | None = None, **kwargs: Any) -> np.ndarray:
        """The learner's answer as a float64 array (raises StepFailure on any misbehaviour)."""
        if self.collecting is not None:
            # Dry run of a replayed test: note the call, answer like a correct solution.
            self.collecting.append((tuple(args), dict(kwargs), expected_size))
            return self.expected(*args, **kwargs)
        try:
            result = self.learner.call(*args, expected_size=expected_size, **kwargs)
        except LearnerError as exc:
            self._remember(args, kwargs)
            if exc.build is not None:
                raise StepFailure(build=functools.partial(_completed, exc)) from None
            raise StepFailure(exc.failure) from None
        self._judge_dtype_note(args, kwargs, getattr(result, "dtype", ""))
        return result.value

    def _judge_dtype_note(self, args: Sequence[Any], kwargs: dict[str, Any], dtype: str) -> None:
        """Keep the sandbox's "returned float64 for float32 input" note only when it is news.

        The note compares the output dtype with the input dtypes; the reference
        itself returns float64 for some float32 input (scores / np.sqrt(d_k)), and
        a learner who matches the reference is told nothing. Once one call earns
        the note it stays.
        """
        notes = getattr(self.learner, "notes", None)
        if not isinstance(notes, dict) or "dtype" not in notes or self._dtype_note_earned:
            return
        if np.dtype(dtype) == _reference_dtype(self.reference, args, kwargs):
            notes.pop("dtype", None)
        else:
            self._dtype_note_earned = True

    def call_shaped(self, *args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        """The learner's output and the reference's, after checking the shape (values not yet)."""
        __tracebackhide__ = True
        expected = self.expected(*args, **kwargs)
        got = self.call(*args, expected_size=expected.size, **kwargs)
        if got.shape != expected.shape:
            self.compare(got, expected, args, kwargs)  # raises the shape failure
        return got, expected

    def rounding_scale(self, *args: Any) -> np.ndarray | None:
        """The per-entry size of the terms behind each output entry (see `scales.py`); in a
        dry run (nothing judged) zeros of the output's shape, which cost next to nothing."""
        if self.dry_run and has_scale(self.exercise.id):
            return np.zeros(self.expected(*args).shape)
        return rounding_scale(self.exercise.id, args)

    def check_scaled(self, *args: Any) -> np.ndarray:
        """`check` with the step's rounding scale: float32 error is judged against the terms' size."""
        __tracebackhide__ = True
        return self.check(*args, scale=self.rounding_scale(*args))

    def check(self, *args: Any, scale: np.ndarray | None = None, **kwargs: Any) -> np.ndarray:
        """Call the learner and the reference on the same inputs; compare shape, then values."""
        __tracebackhide__ = True
        expected = self.expected(*args, **kwargs)
        if self.collecting is not None:  # as `call` answers it (the reference), looked up once
            self.collecting.append((tuple(args), dict(kwargs), expected.size))
            got = expected.copy()
        else:
            got = self.call(*args, expected_size=expected.size, **kwargs)
        self.compare(got, expected, args, kwargs, scale=scale)
        return got

    # -- judging -------------------------------------------------------------
    def tolerance(self, args: Sequence[Any]) -> Tolerance:
        return self.exercise.tolerance("float32" if has_float32(args) else "float64")

    def float32_slack(self, args: Sequence[Any], kwargs: dict[str, Any], expected: np.ndarray) -> float:
        """What a float32 computation of the reference itself misses by, on these very inputs (x4).

        The step's float32 tolerance is measured on typical inputs; a long reduction
        (d_k = 4096, scores in the hundreds) rounds more. Judging a float32 answer
        against the reference computed in float32 too keeps every correct float32
        implementation passing, whatever its summation order, while an answer off by
        a fixed amount still fails wherever float32 is accurate (most inputs).
        """
        if not has_float32(args):
            return 0.0
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        try:
            with np.errstate(all="ignore"):
                low = np.asarray(self.reference(*copies, **kwargs), dtype=np.float64)
        except Exception:  # noqa: BLE001 - no float32 reading: the measured tolerance alone
            return 0.0
        if low.shape != expected.shape:
            return 0.0
        with np.errstate(all="ignore"):
            miss = np.abs(low - expected)
        finite = miss[np.isfinite(miss)]
        return 4.0 * float(finite.max()) if finite.size else 0.0

    def _within(self, got: np.ndarray, expected: np.ndarray, args: Sequence[Any], kwargs: dict[str, Any],
                scale: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, np.ndarray | None]:
        """(ok per entry, |error|, bound, float32 slack, scores' allowance): where values are judged.

        The step's tolerance first; only where that fails (so passing answers never pay)
        what rounding the scores can do through softmax (`scales.score_allowance`), then
        float32's own miss on this input (a second reference call).
        """
        tol = self.tolerance(args)
        bound = tol.atol + tol.rtol * (np.abs(expected) if scale is None else np.maximum(np.abs(expected), scale))
        with np.errstate(all="ignore"):
            err = np.abs(got - expected)
            exact = got == expected
        ok = (err <= bound) | exact
        slack, allowance = 0.0, None
        if not ok.all():
            extra = score_allowance(self.exercise.id, tuple(args), kwargs)
            if extra is not None and extra.shape == expected.shape:
                bound, allowance = bound + extra, extra
                ok = (err <= bound) | exact
        if not ok.all():
            slack = self.float32_slack(args, kwargs, expected)
            if slack:
                bound = bound + slack
                ok = (err <= bound) | exact
        return ok, err, bound, slack, allowance

    def repro(self, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
        return repro_line(self.exercise.function, self.exercise.params, tuple(args), kwargs)

    def compare(self, got: np.ndarray, expected: np.ndarray, args: Sequence[Any],
                kwargs: dict[str, Any] | None = None, *, scale: np.ndarray | None = None) -> None:
        __tracebackhide__ = True
        if self.dry_run:
            return
        try:
            self._compare(got, expected, args, kwargs or {}, scale)
        except StepFailure as exc:
            self._remember(args, kwargs)
            self._note_layouts(exc, args, kwargs or {}, expected, scale)
            raise

    def _note_layouts(self, exc: StepFailure, args: Sequence[Any], kwargs: dict[str, Any],
                      expected: np.ndarray, scale: np.ndarray | None) -> None:
        """When the failing call got an unusual memory layout and is right on plain arrays, say so.

        The same call runs again on plain C-ordered copies (only for a failure
        whose message is built, so grading pays for one at most per test); the
        note appears only when that answer passes: the layout is the bug.
        """
        tags = list(getattr(self.learner, "last_layouts", None) or [])
        if not layout_note(self.exercise.params, tags) or not hasattr(self.learner, "call_plain"):
            return

        def note() -> str:
            try:
                plain = self.learner.call_plain(tuple(args), kwargs, int(expected.size)).value
            except Exception:  # noqa: BLE001 - failing on plain arrays too: the layout is not the point
                return ""
            if plain.shape != expected.shape:
                return ""
            right = bool(np.all(self._within(plain, expected, args, kwargs, scale)[0]))
            return layout_note(self.exercise.params, tags) if right else ""

        if exc.build is not None:
            build = exc.build
            exc.build = lambda: _with_note(build(), note())
        else:
            exc.failure = _with_note(exc.failure, note())

    def _compare(self, got: np.ndarray, expected: np.ndarray, args: Sequence[Any],
                 kwargs: dict[str, Any], scale: np.ndarray | None) -> None:
        ex = self.exercise
        dims = ex.dims.get("out", ())
        if got.shape != expected.shape:
            if self.quiet:
                raise self._pending(self._compare, got, expected, args, kwargs, scale)
            raise StepFailure(Failure(
                kind="shape",
                summary=f"wrong shape: expected {named_shape(expected.shape, dims)}, "
                        f"got {got.shape}",
                details=describe_inputs(ex.params, tuple(args)) + _shape_hint(got.shape, expected.shape),
                repro=self.repro(args, kwargs),
                hint="Work out the shape on paper from the input shapes first; "
                     "print(result.shape) while you work.",
            ))
        ok, err, bound, slack, allowance = self._within(got, expected, args, kwargs, scale)
        if ok.all():
            return
        tol = self.tolerance(args)
        exact_zero = expected == 0
        if self.quiet:
            raise self._pending(self._compare, got, expected, args, kwargs, scale)
        bad_nonfinite = ~np.isfinite(got) & np.isfinite(expected)
        if bool(np.any(bad_nonfinite)):
            idx = tuple(int(i) for i in np.argwhere(bad_nonfinite)[0])
            raise StepFailure(Failure(
                kind="nonfinite",
                summary=f"your output has {got[idx]} at index {idx} where the expected value "
                        f"is {expected[idx]:.6g}",
                details=self._inputs_and_arrays(args, got, expected),
                repro=self.repro(args, kwargs),
                hint="NaN or inf usually means an overflow (exp of a large number) or 0/0.",
            ))
        with np.errstate(all="ignore"):
            excess = np.where(ok, -np.inf, np.nan_to_num(err - bound, nan=np.inf))
        idx = tuple(int(i) for i in np.unravel_index(int(np.argmax(excess)), excess.shape))
        g, e = float(got[idx]), float(expected[idx])
        abs_err = abs(g - e)
        rel = abs_err / abs(e) if e != 0 else float("inf")
        bad = int(np.sum(~ok))
        zero_note = " (this entry must be exactly 0)" if bool(exact_zero[idx]) and ex.id in ("step3", "step6") else ""
        raise StepFailure(Failure(
            kind="value",
            summary=f"wrong values: {bad} of {got.size} entries differ; the worst, at index "
                    f"{idx}, is {g:.6g} but should be {e:.6g}{zero_note}",
            details=(
                f"worst element {idx}: got {g!r}, expected {e!r}\n"
                f"absolute error {abs_err:.3g}, relative error {rel:.3g}; allowed "
                f"|got - expected| <= atol + rtol*|expected| with atol={tol.atol:g}, rtol={tol.rtol:g}"
                + (f", plus {float(allowance[idx]):.3g} (what rounding the scores can do through "
                   "softmax on this input)" if allowance is not None and allowance[idx] > 0 else "")
                + (f", plus {slack:.3g} (four times what float32 rounding of the reference misses "
                   "by on this input)" if slack else "") + "\n"
                + self._inputs_and_arrays(args, got, expected)
            ),
            repro=self.repro(args, kwargs),
            hint="Compare your numbers with the expected ones on this small input by hand.",
        ))

    def _pending(self, fail: Callable[..., Any], *args: Any) -> StepFailure:
        """A quiet failure whose message `fail(*args)` builds later, loudly."""
        def build() -> Failure:
            quiet, self.quiet = self.quiet, False
            try:
                fail(*args)
            except StepFailure as exc:
                return exc.failure
            finally:
                self.quiet = quiet
            return Failure(kind="internal", summary="the grader could not rebuild this failure's message")

        return StepFailure(build=build)

    def _inputs_and_arrays(self, args: Sequence[Any], got: np.ndarray, expected: np.ndarray) -> str:
        text = describe_inputs(self.exercise.params, tuple(args))
        if got.size <= 24:
            text += f"\nexpected: {np.array2string(expected, precision=4)}"
            text += f"\ngot:      {np.array2string(got, precision=4)}"
        return text

    def require_in_value_range(self, got: np.ndarray, V: np.ndarray, args: Sequence[Any], *,
                               hint: str = "") -> None:
        """Each output entry lies within its column of V: true of any weighted average."""
        __tracebackhide__ = True
        if self.dry_run:  # the reference's answer: nothing to find
            return
        V64 = V.astype(np.float64)
        tol = self.tolerance(args)
        slack = tol.atol + tol.rtol * np.max(np.abs(V64), axis=-2, keepdims=True)
        low = np.min(V64, axis=-2, keepdims=True) - slack
        high = np.max(V64, axis=-2, keepdims=True) + slack
        outside = ~((got >= low) & (got <= high))
        if bool(np.any(outside)):
            idx = tuple(int(i) for i in np.argwhere(outside)[0])
            col = idx[:-2] + (slice(None), idx[-1])
            self.require(
                False,
                f"output entry {idx} = {got[idx]:.6g} lies outside the range of V's column "
                f"[{float(np.min(V64[col])):.6g}, {float(np.max(V64[col])):.6g}]",
                args,
                hint=hint,
            )

    def require(self, condition: bool, summary: str | Callable[[], str], args: Sequence[Any],
                kwargs: dict[str, Any] | None = None, *, details: str | Callable[[], str] = "",
                hint: str = "") -> None:
        """A property beyond equality (rows sum to 1, masked weights are 0, ...).

        `summary` and `details` may be functions: a message that prints arrays
        is then built only for a failure, not on every passing call.
        """
        __tracebackhide__ = True
        if not condition:
            self._remember(args, kwargs)
            if self.quiet:
                raise StepFailure(build=lambda: self._require_failure(summary, args, kwargs, details, hint))
            raise StepFailure(self._require_failure(summary, args, kwargs, details, hint))

    def _require_failure(self, summary: str | Callable[[], str], args: Sequence[Any],
                         kwargs: dict[str, Any] | None, details: str | Callable[[], str],
                         hint: str) -> Failure:
        summary = summary() if callable(summary) else summary
        details = details() if callable(details) else details
        return Failure(
            kind="property",
            summary=summary,
            details=(details + "\n" if details else "") + describe_inputs(self.exercise.params, tuple(args)),
            repro=self.repro(args, kwargs or {}),
            hint=hint,
        )


_LAYOUT_WORDS = {
    "fortran": "a Fortran-ordered (column-major) array",
    "transposed": "a transposed view (its last two axes stored the other way round)",
    "strided": "a non-contiguous view (every other element of a larger array)",
    "offset": "a view into a larger array (it does not own its data)",
    "reversed": "a view with negative strides",
    "readonly": "a read-only array",
}


def layout_note(params: Sequence[str], tags: Sequence[str]) -> str:
    """'Your function got Q as a Fortran-ordered array, ...' for the unusual layouts of a call."""
    parts = [f"{params[i] if i < len(params) else f'argument {i}'} as {_LAYOUT_WORDS[t]}"
             for i, t in enumerate(tags) if t in _LAYOUT_WORDS]
    if not parts:
        return ""
    return ("\nOn this call your function got " + ", ".join(parts) + "; on plain C-ordered copies of the "
            "same inputs its answer is right. Any NumPy array layout is allowed: index by shape, never by "
            "memory order (np.asarray/np.ascontiguousarray, .flags, .strides, .base are not a way to tell "
            "inputs apart).")


def _with_note(failure: Failure, note: str) -> Failure:
    return replace(failure, details=(failure.details or "") + note) if note else failure


def input_size(inputs: Sequence[Any]) -> tuple[int, int]:
    """(elements, largest rank) of a failing call's inputs: how a learner measures "small"."""
    arrays = [np.asarray(a) for a in inputs if isinstance(a, (np.ndarray, list, tuple))]
    return sum(int(a.size) for a in arrays), max((a.ndim for a in arrays), default=0)


def _reference_dtype(reference: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any]) -> np.dtype | None:
    """The dtype of the reference's answer on inputs of these dtypes (None: it raised).

    It hangs on the inputs' dtypes alone (NumPy's promotion rules), so it is worked out
    once per kind of input: a float32 test asked it on every call, a reference
    computation each time.
    """
    key = (reference, tuple(a.dtype if isinstance(a, np.ndarray) else type(a) for a in args),
           tuple((k, v.dtype if isinstance(v, np.ndarray) else type(v)) for k, v in sorted(kwargs.items())))
    if key not in _REFERENCE_DTYPES:
        try:
            with np.errstate(all="ignore"):
                out = np.asarray(reference(*[a.copy() if isinstance(a, np.ndarray) else a for a in args], **kwargs))
            _REFERENCE_DTYPES[key] = out.dtype
        except Exception:  # noqa: BLE001 - a note is a bonus: unsure means keep it
            _REFERENCE_DTYPES[key] = None
    return _REFERENCE_DTYPES[key]


_REFERENCE_DTYPES: dict[tuple[Any, ...], np.dtype | None] = {}


def _completed(exc: LearnerError) -> Failure:
    exc.complete()
    return exc.failure


def _shape_hint(got: tuple[int, ...], expected: tuple[int, ...]) -> str:
    if len(got) == len(expected) >= 2 and got[:-2] == expected[:-2] and got[-2:] == expected[-2:][::-1]:
        return "\nThe last two axes look swapped: rows and columns are the other way round."
    if len(got) != len(expected):
        return (f"\nYour result has {len(got)} dimension(s) but should have {len(expected)}: "
                "leading batch dimensions must be kept.")
    return ""


__all__ = ["StepContext", "StepFailure", "format_array", "input_size", "named_shape"]
