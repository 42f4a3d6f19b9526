"""Replay of derandomised Hypothesis examples, kept in memory and on disk.

With `derandomize=True`, a Hypothesis test whose every example passes draws
the same sequence of examples for every correct solution. So that sequence
is recorded once (from the reference itself, in this trusted process, or
from the first passing submission), stored next to the results cache keyed
by the grader's code and the Hypothesis and NumPy versions, and replayed for
every later submission: no Hypothesis engine, a fraction of the cost. When
a replayed example fails, with shrinking on (`check`) the real Hypothesis run
happens, finding that same failure and shrinking it, so a report never
differs from what a fresh run would give; with shrinking off (`grade`) the
smallest failing recorded example is reported instead, just as deterministic.

Tests without Hypothesis go through here too: each test's calls are learned
by one dry run per engine and sent to the sandbox in a single round trip.

Run `python -m attn_practice.grader.engine.warm` to fill the store ahead of time
(batch grading does so itself before starting its workers).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import inspect
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from attn_practice.grader.atomic import write_atomic
from attn_practice.grader.engine.call_template import Call, CallTemplate, dry_calls
from attn_practice.grader.engine.call_template import learn as learn_template
from attn_practice.grader.engine.hypothesis_setup import seed_test
from attn_practice.grader.engine.secret import secret_tag
from attn_practice.grader.paths import SUITES_DIR
from attn_practice.grader.sandbox.learner import LearnerError
from attn_practice.grader.sandbox.prefetch import PackedCalls, pack_calls
from attn_practice.grader.suites.assertions import StepContext, StepFailure
from attn_practice.grader.suites.strategies import Drawn, rebuild, recipe_of, salted

FORMAT = 2  # 2: drawn examples stored as recipes (see strategies)


def store_path(secret: str | None = None) -> Path | None:
    """Where recordings for *this* grader, Hypothesis, NumPy and secret live.

    Keyed by the secret's hash (`secret_tag`), never the secret: examples
    drawn from one secret are never replayed under another.
    """
    import hypothesis

    from attn_practice.grader.staff.cache import examples_directory, grader_fingerprint
    from attn_practice.grader.staff.private_dir import PrivateDirError

    key = hashlib.sha256(
        f"{FORMAT}|{grader_fingerprint()}|{hypothesis.__version__}|{np.__version__}|{secret_tag(secret)}".encode()
    ).hexdigest()[:20]
    try:
        folder = examples_directory()  # 0700, ours (CONTRACT 4.3: the inputs are secret)
    except PrivateDirError:
        return None  # a folder others control: keep the examples in memory only
    return folder / f"{key}.bin"


class ExampleReplay:
    """Recordings by (test node id, max_examples); see the module docstring."""

    def __init__(self, store: Path | None = None, *, secret: str | None = None) -> None:
        self.store = store
        self.secret = secret  # examples are drawn from it (None: the public ones); see hypothesis_setup
        #: Values of recorded examples are rebuilt under this salt (see `strategies.salted`):
        #: grade sets it per submission from the secret and the submission's bytes.
        self.salt: int | None = None
        self.recordings: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self._raw: dict[tuple[str, int], Any] = {}
        self._blob = memoryview(b"")
        self.complete: set[int] = set()  # max_examples values for which every suite was recorded
        self.dirty = False
        # The calls each recording makes, learned by one dry run and encoded once:
        # the same for every submission (see `_prefetch`).
        self._calls: dict[tuple[str, int, str], PackedCalls] = {}
        #: What each test's calls are as a function of its examples (see `call_template`), by
        #: (node id, max_examples, step); None: not such a function, a dry run each time.
        self._templates: dict[tuple[str, int, str], CallTemplate | None] = {}
        #: Calls known without a dry run (templates, plain tests' calls) are used (tests compare).
        self.known_calls = True
        #: A plain test's calls, the same under every salt: learned once, packed per submission.
        self._plain_calls: dict[tuple[str, int, str], list[Call]] = {}
        if store is not None:
            self._load()

    # -- running ---------------------------------------------------------------
    def run(self, item: pytest.Function, hyp: Any, funcargs: dict[str, Any], *,
            shrink: bool = True) -> None:
        """Replay `item`'s recording, or run Hypothesis for real (and record a pass).

        With `shrink`, a failing example brings the real Hypothesis run back to
        shrink it. Without, every recorded example runs and the failure of the
        smallest failing one is raised (the first of equals): no Hypothesis
        engine at all, and the same report on every run.
        """
        from hypothesis import settings as hsettings

        original = getattr(hyp, "_attn_original", None) or hyp.inner_test
        hyp._attn_original = original
        key = (item.nodeid, hsettings.default.max_examples)
        recorded = self.get(key)
        if recorded is None and isinstance(funcargs.get("step"), StepContext):
            # Cold store: learn the examples from the reference first, so a cold
            # and a warm store grade every submission the same way (one path).
            recorded = self._record_from_reference(item, hyp, original, funcargs, key)
        if recorded is not None:
            examples = [_materialize(ex, self.salt) for ex in recorded]
            self._prefetch(key, examples, original, funcargs, recording=recorded if is_ours(item) else None)
            try:
                smallest = _replay_all(examples, original, funcargs, stop_at_first=shrink,
                                       fresh=self.salt is not None)
                if smallest is None:
                    return
                if not shrink:
                    _focus_output(funcargs)
                    raise smallest
                # else: the real run below finds this failure and shrinks it
            except (StepFailure, LearnerError):
                raise
            except Exception:  # noqa: BLE001 - a stale recording: forget it, run for real
                self._forget(key)
        record: list[dict[str, Any]] = []

        def recording(*args: Any, **kwargs: Any) -> Any:
            record.append(_copy_example({k: v for k, v in kwargs.items() if k not in funcargs}))
            return original(*args, **kwargs)

        hyp.inner_test = recording
        seed_test(item.obj, self.secret, item.nodeid)
        try:
            with salted(self.salt):
                item.obj(**funcargs)
        except BaseException:
            _focus_output(funcargs)  # the shrunk example ran last
            raise
        finally:
            hyp.inner_test = original
        self._forget(key)
        self.recordings[key] = record
        # Only our own suites are covered by the store's key; an instructor's
        # extra suite may change under the same name, so it stays in memory.
        if is_ours(item):
            self.dirty = True

    def _record_from_reference(self, item: pytest.Function, hyp: Any, original: Any,
                               funcargs: dict[str, Any], key: tuple[str, int]) -> list[dict[str, Any]] | None:
        """Draw `item`'s examples with every call answered by the reference (a correct solution).

        Derandomised, a passing run draws the same examples whoever answers, so
        this is the recording any correct submission would have made; the
        learner's code is not called at all.
        """
        ctx = funcargs["step"]
        record: list[dict[str, Any]] = []

        def recording(*args: Any, **kwargs: Any) -> Any:
            record.append(_copy_example({k: v for k, v in kwargs.items() if k not in funcargs}))
            return original(*args, **kwargs)

        saved, ctx.collecting = ctx.collecting, []
        hyp.inner_test = recording
        seed_test(item.obj, self.secret, item.nodeid)
        try:
            with salted(None):
                item.obj(**funcargs)
        except Exception:  # noqa: BLE001 - a suite that fails on the reference: run for real
            return None
        finally:
            hyp.inner_test = original
            ctx.collecting = saved
        self.recordings[key] = record
        if is_ours(item):
            self.dirty = True
        return record

    def run_plain(self, item: pytest.Function, funcargs: dict[str, Any]) -> None:
        """A test without Hypothesis: its calls batched like one replayed example's."""
        if inspect.iscoroutinefunction(item.obj):
            raise TypeError(f"{item.nodeid}: async tests are not supported")
        if is_ours(item):  # an instructor's own test is never run twice
            self._prefetch((item.nodeid, 0), [{}], item.obj, funcargs)
        try:
            item.obj(**funcargs)
        except BaseException:
            _focus_output(funcargs)
            raise

    def _forget(self, key: tuple[str, int]) -> None:
        self.recordings.pop(key, None)
        for cache in (self._calls, self._templates, self._plain_calls):
            for k in [k for k in cache if k[:2] == key]:
                del cache[k]

    def _prefetch(self, key: tuple[str, int], recorded: list[dict[str, Any]], test: Any,
                  funcargs: dict[str, Any], *, recording: list[dict[str, Any]] | None = None) -> None:
        """Send the learner every call the replay will make, in one round trip.

        Which calls those are is learned by a dry run of the test on the
        examples `recorded`, every call answered by the reference (as a correct
        solution would answer); or, for a test of ours with a `recording` whose
        calls are a fixed function of its examples, built from them by its
        template (see `call_template`). A plain test's calls are the same for
        every submission: learned once. The real run then takes the learner's
        answers from the batch while its calls match, and goes back to single
        calls if not.
        """
        ctx = funcargs.get("step")
        if not isinstance(ctx, StepContext) or not hasattr(ctx.learner, "prefetch"):
            return
        calls_key = (*key, ctx.exercise.id, self.salt)
        packed = self._calls.get(calls_key)
        if packed is None:
            calls = self._calls_of(key, ctx, recorded, test, funcargs, recording)
            if self.salt is not None and len(self._calls) > 2000:
                self._calls.clear()  # one submission's calls are worth nothing to the next
            packed = self._calls[calls_key] = pack_calls(calls, getattr(ctx.learner, "layout_salt", 0))
        ctx.learner.prefetch(packed)

    def _calls_of(self, key: tuple[str, int], ctx: StepContext, examples: list[dict[str, Any]], test: Any,
                  funcargs: dict[str, Any], recording: list[dict[str, Any]] | None) -> list[Call]:
        """The calls `test` makes on `examples`: salted, a plain test's learned once and a
        template's built from them; else (and always in `check`) a dry run."""
        known = (*key, ctx.exercise.id)
        if not self.known_calls or self.salt is None:
            return _dry_run(test, funcargs, examples)
        if key[1] == 0:
            if known not in self._plain_calls:
                self._plain_calls[known] = _dry_run(test, funcargs, examples)
            return self._plain_calls[known]
        if recording is not None and known not in self._templates:
            self._templates[known] = learn_template(test, funcargs, recording, _materialize)
        template = self._templates.get(known) if recording is not None else None
        return template.apply(examples) if template is not None else _dry_run(test, funcargs, examples)

    # -- storage ---------------------------------------------------------------
    def _load(self) -> None:
        assert self.store is not None
        try:
            raw = self.store.read_bytes()
            head_len = int.from_bytes(raw[:8], "little")
            manifest = json.loads(raw[8 : 8 + head_len].decode())
            if manifest.get("format") != FORMAT:
                raise ValueError("other format")
            self._blob = memoryview(raw)[8 + head_len :]
            for entry in manifest["tests"]:
                key = (str(entry["node"]), int(entry["max_examples"]))
                self._raw[key] = entry["examples"]  # decoded on first use: a check needs one step
            self.complete = {int(n) for n in manifest.get("complete", [])}
        except (OSError, ValueError, KeyError, TypeError, IndexError):
            self._raw.clear()  # missing or unreadable: start afresh
            self.complete = set()

    def get(self, key: tuple[str, int]) -> list[dict[str, Any]] | None:
        """The recording for `key`, decoding it from the store on first use."""
        if key not in self.recordings and key in self._raw:
            try:
                self.recordings[key] = [{k: _decode(v, self._blob) for k, v in ex.items()}
                                        for ex in self._raw.pop(key)]
            except (ValueError, KeyError, TypeError, IndexError):
                return None
        return self.recordings.get(key)

    def all_recordings(self) -> dict[tuple[str, int], list[dict[str, Any]]]:
        for key in list(self._raw):
            self.get(key)
        return self.recordings

    def save(self) -> None:
        """Merge with what is on disk and write atomically."""
        if self.store is None:
            return
        merged = ExampleReplay(self.store, secret=self.secret)
        merged.all_recordings()
        for key, value in self.recordings.items():
            if key[0].startswith("test_step"):
                merged.recordings[key] = value
        merged.complete |= self.complete
        chunks: list[bytes] = []
        tests = [
            {"node": node, "max_examples": n,
             "examples": [{k: _encode(v, chunks) for k, v in ex.items()} for ex in examples]}
            for (node, n), examples in sorted(merged.recordings.items())
        ]
        head = json.dumps({"format": FORMAT, "tests": tests, "complete": sorted(merged.complete)}).encode()
        data = len(head).to_bytes(8, "little") + head + b"".join(chunks)
        try:
            write_atomic(self.store, data, mode=0o600)
        except OSError:
            return  # a read-only home: replay stays in memory for this run
        self.dirty = False


def _dry_run(test: Any, funcargs: dict[str, Any], examples: list[dict[str, Any]]) -> list[Call]:
    """The calls `test` makes on copies of `examples`, each answered by the reference."""
    return dry_calls(test, funcargs, [_copy_example(ex) for ex in examples])[0]


def _replay_all(recorded: list[dict[str, Any]], test: Any, funcargs: dict[str, Any], *,
                stop_at_first: bool, fresh: bool = False) -> BaseException | None:
    """Run `test` on each recorded example; the failure of the smallest failing one, or None.

    `fresh`: the examples were built for this run alone (rebuilt under a salt), so
    the test gets them as they are instead of copies (the recording is not theirs).

    Size is the number of array elements drawn; ties go to the earlier example.
    The chosen example's inputs end up last in the step's `failing_inputs`,
    where the diagnosis looks first, as a shrunk example's would.
    """
    ctx = funcargs.get("step")
    best: tuple[int, StepFailure | LearnerError, Any] | None = None
    # Running on after a failure, only the chosen one's message is ever shown: build just that.
    quiet = ctx.quietly() if isinstance(ctx, StepContext) and not stop_at_first else contextlib.nullcontext()
    with quiet:
        for example in recorded:
            try:
                test(**funcargs, **(example if fresh else _copy_example(example)))
            except (StepFailure, LearnerError) as exc:
                inputs = ctx.failing_inputs[-1] if isinstance(ctx, StepContext) and ctx.failing_inputs else None
                size = _size(example)
                if best is None or size < best[0]:
                    best = (size, exc, inputs)
                if stop_at_first:
                    break
    if best is None:
        return None
    best[1].complete()
    if isinstance(ctx, StepContext) and best[2] is not None:
        ctx.note_failing(best[2])
    return best[1]


def _focus_output(funcargs: dict[str, Any]) -> None:
    """A test failed: its step shows what the learner printed on the reported failing call."""
    ctx = funcargs.get("step")
    if isinstance(ctx, StepContext) and ctx.failing_inputs and hasattr(ctx.learner, "focus_output"):
        ctx.learner.focus_output(ctx.failing_inputs[-1])


def _size(v: Any) -> int:
    if isinstance(v, np.ndarray):
        return int(v.size)
    if isinstance(v, dict):
        return sum(_size(x) for x in v.values())
    if isinstance(v, (tuple, list)):
        return sum(_size(x) for x in v)
    return 1


def is_ours(item: pytest.Item) -> bool:
    """A test of our hidden suites (not of a course's private ones)."""
    return _in_suites_dir(str(item.path))


@functools.lru_cache(maxsize=256)
def _in_suites_dir(path: str) -> bool:
    try:
        return Path(path).resolve().parent == SUITES_DIR.resolve()
    except OSError:
        return False


def _encode(v: Any, chunks: list[bytes]) -> Any:
    """JSON for the structure; raw bytes (offset, dtype, shape) for arrays."""
    recipe = recipe_of(v)
    if recipe is not None:
        return {"r": [recipe[0], recipe[1]]}
    if isinstance(v, np.ndarray):
        offset = sum(len(c) for c in chunks)
        arr = np.ascontiguousarray(v)
        chunks.append(arr.tobytes())
        return {"a": [offset, arr.dtype.str, list(v.shape)]}
    if isinstance(v, (tuple, list)):
        return {"t" if isinstance(v, tuple) else "l": [_encode(x, chunks) for x in v]}
    if isinstance(v, (bool, np.bool_)):
        return {"b": bool(v)}
    if isinstance(v, (int, np.integer)):
        return {"i": int(v)}
    if isinstance(v, (float, np.floating)):
        return {"f": float(v)}
    if v is None:
        return {"n": None}
    raise TypeError(f"cannot store {type(v).__name__}")


_DTYPES = {np.dtype(t).str for t in (np.float64, np.float32, np.bool_, np.int64, np.int32)}


def _decode(spec: Any, blob: memoryview) -> Any:
    if "r" in spec:
        name, params = spec["r"]
        return rebuild((str(name), params), None)
    if "a" in spec:
        offset, dtype, shape = spec["a"]
        if dtype not in _DTYPES:
            raise ValueError(f"unexpected dtype {dtype}")
        dt = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(blob, dtype=dt, count=count, offset=int(offset)).reshape(shape).copy()
    if "t" in spec:
        return tuple(_decode(x, blob) for x in spec["t"])
    if "l" in spec:
        return [_decode(x, blob) for x in spec["l"]]
    if "b" in spec:
        return bool(spec["b"])
    if "i" in spec:
        return int(spec["i"])
    if "f" in spec:
        return float(spec["f"])
    return None


def _materialize(example: dict[str, Any], salt: int | None) -> dict[str, Any]:
    """A recorded example with its drawn values rebuilt under `salt` (None: as recorded).

    Salted, the result shares nothing with the recording (values without a
    recipe are copied), so a run may hand it to a test as it is.
    """
    if salt is None:
        return example
    out = {}
    for k, v in example.items():
        recipe = recipe_of(v)
        out[k] = rebuild(recipe, salt) if recipe is not None else _copy_value(v)
    return out


def _copy_example(example: dict[str, Any]) -> dict[str, Any]:
    return {k: _copy_value(v) for k, v in example.items()}


def _copy_value(v: Any) -> Any:
    recipe = recipe_of(v)
    if recipe is not None:  # a drawn example keeps its recipe (the store keeps that)
        out = Drawn(_copy_value(x) for x in v)
        out.recipe = recipe
        return out
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, tuple):
        return tuple(_copy_value(x) for x in v)
    if isinstance(v, list):
        return [_copy_value(x) for x in v]
    return v
