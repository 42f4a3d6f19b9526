"""The learner's function as the hidden suites see it: `learner(Q, K) -> array`.

`Learner` spawns its sandbox (see `launcher`) lazily, loads the step module,
runs each call with copies of the inputs, and turns every way the learner's
code can misbehave into a `LearnerError` carrying a `Failure` a learner can
read (built by `failures`). Every reply is validated field by field
(`failures.clean_reply`): the sandbox runs learner code, which can write anything
to its own socket.

Time is bounded three ways: one deadline per call (a sandbox trickling its
answer cannot stretch it), a budget per step, and an optional `Budget`
shared by all steps of a submission.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from attn_practice.grader.catalog import stub_signature
from attn_practice.grader.results import Failure, FailureKind
from attn_practice.grader.sandbox import protocol
from attn_practice.grader.sandbox.call_results import (
    Budget,
    CallResult,
    LearnerError,
    LoadError,
    LoadInfo,
)
from attn_practice.grader.sandbox.failures import (
    add_return_notes,
    budget_failure,
    call_failure,
    clean_reply,
    death_failure,
    describe_inputs,
    load_failure,
    reply_kind,
    repro_line,
    size_words,
    timeout_failure,
)
from attn_practice.grader.sandbox.launcher import (
    CPU_CLOCK_WALL,
    DEFAULT_CALL_TIMEOUT,
    CallTimeout,
    Launcher,
    Limits,
    Sandbox,
    SandboxDied,
    close_sandboxes,
)
from attn_practice.grader.sandbox.prefetch import (
    PREFETCH_TIMEOUT,
    PackedCalls,
    batch_order,
    call_spec,
    in_call_order,
    same_values,
    single_reply,
    stopped_batch,
)
from attn_practice.grader.sandbox.printed import PrintedOutput, inputs_key
from attn_practice.grader.sandbox.shared import SharedSandbox


class Learner:
    """The learner's function as the suites see it: `learner(*args) -> float64 array`.

    Spawns its sandbox lazily and respawns it after a crash or timeout, so
    one bad input does not fail the rest of the step; after repeated
    timeouts or crashes, later calls fail at once so a step stays bounded.
    """

    def __init__(self, launcher: Launcher, submission: Path, *, step_id: str, module: str,
                 function: str, params: Sequence[str], limits: Limits, display_dir: str = "",
                 files: dict[str, bytes] | None = None, shims: dict[str, str] | None = None,
                 budget: Budget | None = None, signature: str = "", shared: SharedSandbox | None = None):
        self.launcher = launcher
        self.submission = submission
        self.step_id = step_id
        self.module = module
        self.function = function
        self.params = tuple(params)
        #: The stub's own signature, defaults included ("softmax(x, axis=-1)"), for hints.
        self.signature = signature or stub_signature(step_id, function)
        if limits.call_timeout is None:
            limits = replace(limits, call_timeout=DEFAULT_CALL_TIMEOUT)
        self.limits = limits
        self.display_dir = display_dir
        self.files = files
        self.shims = shims or {}
        self.budget = budget
        self.sandbox: Sandbox | None = None
        #: The submission's one sandbox for all its steps (see `shared`), or None: one of its own.
        self.shared = shared
        #: Loaded in the shared sandbox, and a call made there: see `used_shared`.
        self._shared_load = False
        self._shared_call = False
        self.load_info: LoadInfo | None = None
        self.output = []
        self.output_size = 0  # kept for callers that reset it with `output`
        self.notes: dict[str, str] = {}
        self.timeouts = 0
        self.deaths = 0
        self.sticky: LearnerError | None = None
        self.learner_seconds = 0.0
        #: Mixed into input layouts and the order of batched calls (grade: from the secret
        #: and the submission's bytes; see `engine.secret.submission_salt`).
        self.layout_salt = 0
        #: The layout each positional input of the latest call reached the learner in.
        self.last_layouts: list[str] = []
        self._plain = False
        self.calls = 0
        self.call_seconds: list[tuple[int, float]] = []  # (input elements, seconds)
        self._prefetched: list[tuple[Any, dict[str, Any], list[bytes], list[str]]] = []
        self._pending_load: tuple[float | BaseException, float] | None = None
        #: Raise failures with their messages unbuilt (`LearnerError.complete` builds one):
        #: grading runs every recorded example but reports only one failure.
        self.quiet = False

    # -- lifecycle -------------------------------------------------------
    def begin_load(self) -> LoadInfo | None:
        """Spawn the sandbox and ask it to import the module, without waiting.

        `load()` collects the answer; the engine begins every step's load
        first, so the sandboxes import in parallel. Returns the LoadInfo at
        once only when nothing could be started.
        """
        if self._pending_load is not None:
            return None
        if self.budget is not None and self.budget.exhausted:
            self.load_info = LoadInfo(False, failure=budget_failure(self.budget))
            return self.load_info
        try:
            self.sandbox = self.shared.take(self.module, self.function, self.params) if self.shared else None
            self._shared_load = self.sandbox is not None
            if self.sandbox is None:
                self.sandbox = self.launcher.spawn(
                    self.submission, module=self.module, function=self.function, params=self.params,
                    limits=self.limits, display_dir=self.display_dir, files=self.files,
                )
        except (RuntimeError, OSError) as exc:
            self.load_info = LoadInfo(False, failure=Failure(
                kind=FailureKind.INTERNAL,
                summary=f"the grader could not start a sandbox for {self.module}.py ({str(exc)[:300]}); "
                        "this is not your fault and says nothing about your code",
                hint="This is not your fault: grade again, and if it happens again, please report "
                     "it to the course staff.",
            ))
            return self.load_info
        load_timeout = self._timeout(self.limits.load_timeout)
        try:
            deadline: float | BaseException = self.sandbox.send(
                {"op": "load", "shims": self.shims, "module": self.module, "function": self.function,
                 "params": list(self.params), "call_timeout": float(self.limits.call_timeout or 0)},
                [], timeout=load_timeout)
        except (CallTimeout, SandboxDied) as exc:
            deadline = exc  # reported by load(), as if it came with the reply
        self._pending_load = (deadline, load_timeout)
        return None

    def load(self) -> LoadInfo:
        """Spawn (if needed) and import the learner's module; cached."""
        if (self._pending_load is None and self.load_info is not None and self.sandbox is not None
                and not self.sandbox.closed):
            return self.load_info
        if self._pending_load is None:
            early = self.begin_load()
            if early is not None:
                return early
        assert self._pending_load is not None and self.sandbox is not None
        (deadline, load_timeout), self._pending_load = self._pending_load, None
        t0 = time.perf_counter()
        try:
            if isinstance(deadline, BaseException):
                raise deadline
            reply, _ = self.sandbox.receive(deadline)
        except CallTimeout:
            if load_timeout < self.limits.load_timeout:
                self.load_info = LoadInfo(False, failure=budget_failure(self.budget))
                return self.load_info
            info = LoadInfo(False, failure=Failure(
                kind=FailureKind.TIMEOUT,
                summary=f"timeout: importing {self.module}.py took more than "
                        f"{self.limits.load_timeout:g} s (stopped by the time limit on an import)",
                hint="Code at the top level of your file runs on import: keep only imports "
                     "and definitions there, no loops or input().",
            ))
            self.load_info = info
            return info
        except SandboxDied as exc:
            info = LoadInfo(False, failure=Failure(
                kind=FailureKind.MEMORY if exc.out_of_memory else FailureKind.CRASH,
                summary=f"your code {exc.message} while {self.module}.py was being imported"
                        + (f" (the memory limit is {size_words(self.limits.memory)})"
                           if exc.out_of_memory else ""),
                hint="Remove top-level code that exits or crashes: the file should only "
                     "define your function.",
            ))
            self.load_info = info
            return info
        finally:
            if self.budget is not None:
                # The time spent waiting here: loads begun together overlap.
                self.budget.charge(time.perf_counter() - t0)
        reply = clean_reply(reply)
        self.printed.add_import(reply["output"])
        if reply.get("ok") is True:
            info = LoadInfo(True, line=reply["line"], signature=reply["signature"],
                            imported_steps=reply["imported_steps"])
        else:
            info = LoadInfo(False, failure=load_failure(reply, self.module, self.function, self.params, self.signature,
                                                           self.limits))
        self.load_info = info
        return info

    @property
    def used_shared(self) -> bool:
        """Some of this step's outcome came from the shared sandbox: the engine credits it only if
        it passed. (A step reloaded alone before any call of its ran there is wholly its own.)"""
        return self._shared_load or self._shared_call

    def _in_shared(self) -> bool:
        """This step's sandbox now is the submission's shared one."""
        return self.shared is not None and self.shared.owns(self.sandbox)

    def close(self) -> None:
        """Close this step's sandbox (a shared one is only let go: its owner closes it)."""
        self._pending_load = None
        if self.sandbox is not None:
            if not self._in_shared():
                self.sandbox.close()
            self.sandbox = None

    # -- calls -------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        return self.call(*args, **kwargs).value

    def call(self, *args: Any, expected_size: int | None = None, **kwargs: Any) -> CallResult:
        """Run the learner's function on copies of `args`; never returns learner objects."""
        if self.sticky is not None:
            raise LearnerError(self.sticky.failure, kind=self.sticky.kind)
        if self.budget is not None and self.budget.exhausted:
            self._stick(FailureKind.TIMEOUT, budget_failure(self.budget))
        if self.learner_seconds > self.limits.step_timeout:
            self._stick(FailureKind.TIMEOUT, Failure(
                kind=FailureKind.TIMEOUT,
                summary=f"timeout: this step spent more than {self.limits.step_timeout:g} s "
                        "in your code, so its remaining tests were stopped",
                hint="Look for loops that do much more work than needed.",
            ))
        info = self.load()
        if not info.ok:
            assert info.failure is not None
            raise LoadError(info.failure, kind=FailureKind.LOAD)
        assert self.sandbox is not None
        max_elements = max(64 * (expected_size or 0), 1 << 16)
        for i, ((p_args, p_kwargs, p_size), reply, p_blobs, tags) in enumerate(
                [] if self._plain else self._prefetched):
            if (p_size == expected_size and p_kwargs.keys() == kwargs.keys() and same_values(p_args, args)
                    and same_values(tuple(p_kwargs.values()), tuple(kwargs[k] for k in p_kwargs))):
                # Calls skipped over belonged to an example that failed early.
                del self._prefetched[: i + 1]
                self.last_layouts = tags
                return self._finish(reply, p_blobs, args, kwargs, expected_size, max_elements)
        if not self._plain:
            self._prefetched.clear()  # the test took another path: back to one call at a time
        blobs: list[bytes] = []
        spec = call_spec(args, kwargs, expected_size, blobs, self.layout_salt)
        if self._plain:
            spec["layouts"] = ["c"] * len(spec["layouts"])
        self.last_layouts = spec["layouts"]
        # A single call is a batch of one: the sandbox runs every call the same way.
        header = {"op": "call_many", "module": self.module, "calls": [spec]}
        t0 = time.perf_counter()
        call_timeout = self._timeout(self.limits.call_timeout)
        self._shared_call |= self._in_shared()
        try:
            reply, out_blobs = self.sandbox.request(  # the sandbox's own clock may be CPU time
                header, blobs, timeout=call_timeout * self._wall_factor, max_bytes=16 * max_elements + (1 << 20))
        except CallTimeout:
            self.timeouts += 1
            if call_timeout < self.limits.call_timeout:
                self._stick(FailureKind.TIMEOUT, budget_failure(self.budget))
            self._timed_out(args, kwargs)
        except SandboxDied as exc:
            self.deaths += 1
            failure = death_failure(exc.message, exc.out_of_memory, self.function, self.params, args, kwargs,
                                    self.limits.memory)
            kind = failure.kind
            if self.deaths >= self.limits.max_deaths:
                self._stick(kind, failure)
            raise LearnerError(failure, kind=kind) from None
        finally:
            spent = time.perf_counter() - t0
            self.learner_seconds += spent
            if self.budget is not None:
                self.budget.charge(spent)
        return self._finish(single_reply(reply), out_blobs, args, kwargs, expected_size, max_elements)

    def _finish(self, reply: dict[str, Any], out_blobs: list[bytes], args: tuple[Any, ...],
                kwargs: dict[str, Any], expected_size: int | None, max_elements: int) -> CallResult:
        """Turn one sandbox reply into a CallResult, or the LearnerError it deserves."""
        reply = clean_reply(reply)
        if reply["output"]:  # the key (a digest of the inputs) only matters for a call that printed
            self.printed.add_call(reply["output"], failed=reply.get("ok") is not True,
                                  key=inputs_key(self.params, args, kwargs))
        if reply.get("ok") is not True:
            kind = reply_kind(reply)
            if kind is FailureKind.TIMEOUT:  # stopped by the sandbox's own per-call clock
                self.timeouts += 1
                if self.sandbox is not None:
                    self.sandbox.close()  # as after the grader's deadline: a fresh one next time
                self._timed_out(args, kwargs)
            if self.quiet and kind is not FailureKind.NOT_IMPLEMENTED:
                raise LearnerError(kind=kind, build=lambda: call_failure(
                    reply, self.function, self.params, args, kwargs, self.limits.memory))
            failure = call_failure(reply, self.function, self.params, args, kwargs, self.limits.memory)
            if kind is FailureKind.NOT_IMPLEMENTED:
                self._stick(FailureKind.NOT_IMPLEMENTED, failure)
            raise LearnerError(failure, kind=kind)
        if not out_blobs:
            raise LearnerError(Failure(kind=FailureKind.CRASH, summary="your code sent back a malformed answer"),
                               kind=FailureKind.CRASH)
        try:
            (raw,) = protocol.unpack_values([reply.get("result")], out_blobs)
            if not isinstance(raw, np.ndarray):
                raise protocol.ProtocolError("not an array")
        except (ValueError, TypeError, protocol.ProtocolError):
            raise LearnerError(Failure(kind=FailureKind.CRASH, summary="your code sent back a malformed answer"),
                               kind=FailureKind.CRASH) from None
        if raw.size > max_elements:
            failure = Failure(kind=FailureKind.SHAPE, summary=f"{self.function} returned an array of shape "
                              f"{raw.shape}, far larger than expected",
                              details=describe_inputs(self.params, args),
                              repro=repro_line(self.function, self.params, args, kwargs))
            raise LearnerError(failure, kind=FailureKind.TOO_LARGE)
        self.calls += 1
        seconds = reply["seconds"]
        self.call_seconds.append((sum(np.size(a) for a in args if isinstance(a, np.ndarray)), seconds))
        returned = reply["returned"] or "ndarray"
        mutated = [i for i in reply["mutated"] if 0 <= i < len(args)]
        dtype = protocol.dtype_name(raw.dtype)
        add_return_notes(self.notes, self.params, returned, dtype, args, mutated)
        value = raw.astype(np.float64) if raw.dtype != np.float64 else raw
        return CallResult(value, dtype, returned, mutated, seconds, reply["output"])

    def call_plain(self, args: Sequence[Any], kwargs: dict[str, Any], expected_size: int | None) -> CallResult:
        """`call` on plain C-ordered inputs (was a failure about the layout?); the batch is left alone."""
        self._plain = True
        try:
            return self.call(*args, expected_size=expected_size, **kwargs)
        finally:
            self._plain = False

    def prefetch(self, packed: PackedCalls) -> None:
        """Run `packed` calls (see `pack_calls`) in one round trip; `call` serves them in order.

        Only an optimisation for replayed examples: on any trouble (a timeout, a
        crash, a sticky failure) nothing is kept and each call runs on its own,
        so every outcome and message is exactly what single calls give.
        """
        self._prefetched = []
        if not packed.calls or self.sticky is not None or (self.budget is not None and self.budget.exhausted):
            return
        info = self.load()
        if not info.ok or self.sandbox is None:
            return
        n = len(packed.calls)
        timeout = self._timeout(min(self.limits.call_timeout * n, PREFETCH_TIMEOUT)) * self._wall_factor
        order = batch_order(self.layout_salt, n)  # drawn from the salt: the suite's order tells nothing
        t0 = time.perf_counter()
        self._shared_call |= self._in_shared()
        try:
            reply, out_blobs = self.sandbox.request({"op": "call_many", "module": self.module,
                                                     "calls": [packed.specs[i] for i in order]},
                                                    list(packed.blobs), timeout=timeout,
                                                    max_bytes=packed.reply_limit)
        except (CallTimeout, SandboxDied, protocol.ProtocolError):
            return  # the sandbox was closed; the single calls will respawn it and tell
        finally:
            spent = time.perf_counter() - t0
            self.learner_seconds += spent
            if self.budget is not None:
                self.budget.charge(spent)
        replies = reply.get("replies")
        if reply.get("ok") is not True or not isinstance(replies, list) or not (
                len(replies) == n or 0 < len(replies) < n and stopped_batch(replies[-1])):
            return
        by_call = in_call_order(order, replies)
        if by_call is None:
            return
        for pos, sub in by_call:
            self._prefetched.append((packed.calls[pos], sub, out_blobs,
                                     list(packed.specs[pos].get("layouts") or [])))
        if stopped_batch(replies[-1]) and self.sandbox is not None:
            self.sandbox.close()  # interrupted mid-call: a fresh sandbox next time, as after a deadline

    def _timed_out(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> NoReturn:
        """Raise (sticky after `max_timeouts`) the timeout of this call."""
        stopped = self.timeouts >= self.limits.max_timeouts
        failure = timeout_failure(self.function, self.params, args, kwargs, float(self.limits.call_timeout or 0),
                                  stopped=stopped)
        if stopped:
            self._stick(FailureKind.TIMEOUT, failure)
        raise LearnerError(failure, kind=FailureKind.TIMEOUT) from None

    @property
    def _wall_factor(self) -> float:
        return CPU_CLOCK_WALL if self.limits.cpu_clock else 1.0

    def _timeout(self, seconds: float) -> float:
        """`seconds`, or less when the submission's budget is nearly spent."""
        if self.budget is None:
            return seconds
        return max(0.05, min(seconds, self.budget.remaining))

    def _stick(self, kind: FailureKind, failure: Failure) -> None:
        self.sticky = LearnerError(failure, kind=kind)
        raise self.sticky

    def focus_output(self, inputs: Sequence[Any]) -> None:
        """Show what the call on `inputs` printed (the step's first reported failure's call)."""
        self.printed.focus(inputs_key(self.params, inputs, {}))

    @property
    def output(self) -> list[str]:
        """What the step's report shows of the learner's printing (see `printed`)."""
        return self.printed.parts()

    @output.setter
    def output(self, value: list[str]) -> None:
        """Start afresh (a step loaded again) with `value` as its import-time output."""
        self.printed = PrintedOutput("".join(value))


def close_learners(learners: Sequence[Learner]) -> None:
    """Close every learner's sandbox at once (see `close_sandboxes`)."""
    by_launcher: dict[int, dict[int, Sandbox]] = {}  # a shared sandbox once, however many steps hold it
    for learner in learners:
        learner._pending_load = None
        if learner.sandbox is not None:
            by_launcher.setdefault(id(learner.sandbox.launcher), {})[id(learner.sandbox)] = learner.sandbox
            learner.sandbox = None
    for sandboxes in by_launcher.values():
        close_sandboxes(list(sandboxes.values()))
