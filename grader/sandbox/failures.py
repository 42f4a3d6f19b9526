"""Turning a sandbox's replies into `Failure`s a learner can act on.

The sandbox runs learner code, so a reply is first cleaned (`clean_reply`:
every field of the right type, bounded, control characters gone); its
`kind` then becomes a `FailureKind` that travels with the failure (memory,
exit, recursion... are never folded into "exception" and guessed back from
the text). Also the display helpers every failure message uses: repro
lines that run on every supported NumPy, and compact input descriptions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from attn_practice.grader.results import Failure, FailureKind
from attn_practice.grader.sandbox import protocol
from attn_practice.grader.sandbox.call_results import Budget
from attn_practice.grader.sandbox.launcher import Limits

GiB = 1024**3

#: Reply fields the trusted side reads, with the only type each may have.
_REPLY_FIELDS: dict[str, tuple[type, Any]] = {
    "kind": (str, ""), "message": (str, ""), "exc_type": (str, ""), "traceback": (str, ""),
    "phase": (str, ""), "returned": (str, ""), "dtype": (str, ""), "output": (str, ""),
    "signature": (str, ""), "file": (str, ""), "text": (str, ""),
    "line": (int, 0), "offset": (int, 0), "seconds": (float, 0.0),
    "mutated": (list, []), "shape": (list, []), "defined": (list, []), "imported_steps": (list, []),
}


def clean_reply(reply: dict[str, Any]) -> dict[str, Any]:
    """A sandbox reply with every field the grader reads of the right type and bounded size.

    The sandbox runs learner code, which can write to its socket: nothing in
    a reply is trusted to be well-formed. Text loses control characters, so
    learner output cannot drive the terminal a report is shown on.
    """
    out = dict(_REPLY_DEFAULTS, mutated=[], shape=[], defined=[], imported_steps=[])
    out["ok"] = reply.get("ok") is True
    out["result"] = reply.get("result")
    for key in _REPLY_FIELDS.keys() & reply.keys():
        kind = _REPLY_FIELDS[key][0]
        v = reply[key]
        if kind is str:
            if isinstance(v, str):
                out[key] = v[:16384].translate(_CONTROL_CHARS)
        elif kind is float:
            if type(v) in (int, float) and v == v and abs(v) < 1e9:
                out[key] = float(v)
        elif kind is int:
            if type(v) is int and abs(v) < 1 << 31:
                out[key] = v
        elif isinstance(v, list):
            if key in ("mutated", "shape"):
                out[key] = [x for x in v[:64] if type(x) is int and 0 <= x < 1 << 40]
            else:
                out[key] = [x[:200].translate(_CONTROL_CHARS) for x in v[:64] if isinstance(x, str)]
    return out


_REPLY_DEFAULTS = {key: default for key, (_kind, default) in _REPLY_FIELDS.items()}
#: C0/C1 control characters (but tab and newline) and DEL, shown as U+FFFD.
_CONTROL_CHARS = {c: "\ufffd" for c in [*range(0, 9), *range(11, 32), *range(127, 160)]}



#: Reply kinds of a failed load or call, as failure kinds.
_REPLY_KINDS = {k.value: k for k in FailureKind} | {"bad-return": FailureKind.TYPE}


def reply_kind(reply: dict[str, Any]) -> FailureKind:
    """The failure kind a (cleaned) reply names; an unknown one is an exception."""
    return _REPLY_KINDS.get(str(reply.get("kind") or ""), FailureKind.EXCEPTION)


def stub_line(function: str, params: Sequence[str], signature: str = "") -> str:
    """`def softmax(x, axis=-1):`: the stub's line, defaults included when known."""
    return f"def {signature}:" if signature.startswith(f"{function}(") else f"def {function}({', '.join(params)}):"


def load_failure(reply: dict[str, Any], module: str, function: str, params: Sequence[str],
                 signature: str = "", limits: Limits | None = None) -> Failure:
    """Why `module` did not load: syntax, a missing or odd function, exit, a limit, import errors.

    Code at the top level that loops until something stops it is told which
    limit did (memory, output, processes; time is the learner's timeout).
    """
    limits = limits or Limits()
    kind = reply_kind(reply)
    file = f"{module}.py"
    stub = stub_line(function, params, signature)
    if kind is FailureKind.SYNTAX:
        text = str(reply.get("text", ""))
        offset = int(reply.get("offset", 0) or 0)
        caret = " " * max(offset - 1, 0) + "^" if text else ""
        return Failure(
            kind=FailureKind.SYNTAX,
            summary=f"{file} has a syntax error on line {reply.get('line', '?')}: "
                    f"{reply.get('message', '')}",
            details=f'  File "{reply.get("file") or file}", line {reply.get("line", "?")}\n    {text}\n    {caret}'
                    if text else "",
            hint="Python could not read the file. Look at the marked line and the one above it "
                 "(a missing bracket or colon often shows up one line late).",
        )
    if kind is FailureKind.MISSING_FUNCTION:
        defined = reply.get("defined") or []
        found = f" It defines: {', '.join(map(str, defined))}." if defined else ""
        return Failure(kind=kind, summary=f"{file} has no function named `{function}`.{found}",
                       hint=f"Keep the name and signature from the stub: {stub}")
    if kind is FailureKind.NOT_CALLABLE:
        return Failure(kind=kind, summary=f"`{function}` in {file} is a {reply.get('message')}, not a function",
                       hint=f"Define it with {stub}")
    if kind is FailureKind.SIGNATURE:
        return Failure(
            kind=kind,
            summary=f"`{reply.get('message')}` cannot be called as {function}({', '.join(params)})",
            hint=f"Keep the stub's parameters: {stub}",
        )
    if kind is FailureKind.EXIT:
        return Failure(kind=kind, summary=f"your code called exit() while {file} was being imported",
                       traceback=str(reply.get("traceback", "")),
                       hint="Remove the exit()/sys.exit() call from the top level of your file.")
    if kind is FailureKind.MEMORY:
        return Failure(kind=kind, summary=f"{file} ran out of memory (MemoryError) while being imported "
                                         f"(the memory limit is {size_words(limits.memory)})",
                       traceback=str(reply.get("traceback", "")),
                       hint="Code at the top level of your file runs on import: a loop there that keeps "
                            "allocating (or one huge array) hits the memory limit. Keep only imports and "
                            "definitions at the top level.")
    if kind is FailureKind.RECURSION:
        return Failure(kind=kind, summary=f"{file} recursed too deeply (RecursionError) while being imported",
                       traceback=str(reply.get("traceback", "")),
                       hint="Code at the top level of your file runs on import; fix the line shown.")
    summary = f"{file} raised {reply.get('message', 'an error')} while being imported"
    if reply.get("exc_type") in ("ImportError", "ModuleNotFoundError"):
        summary = f"{file} could not import something: {reply.get('message')}"
    elif "File too large" in str(reply.get("message", "")):
        summary = (f"{file} was stopped while being imported by the output limit: it printed (or "
                   f"wrote) more than {size_words(limits.file_size)}")
    elif reply.get("exc_type") == "BlockingIOError" and "Resource temporarily unavailable" in str(
            reply.get("message", "")):
        summary = (f"{file} was stopped while being imported by the process limit: it started more "
                   f"than {limits.processes} processes")
    return Failure(kind=FailureKind.IMPORT, summary=summary, traceback=str(reply.get("traceback", "")),
                   hint="Code at the top level of your file runs on import; fix the line shown.")


def call_failure(reply: dict[str, Any], function: str, params: Sequence[str], args: tuple[Any, ...],
                 kwargs: dict[str, Any], memory: int = GiB) -> Failure:
    """Why one call gave no answer; its kind is the sandbox's (`memory` is the limit, for words)."""
    kind = reply_kind(reply)
    repro = repro_line(function, params, args, kwargs)
    inputs = describe_inputs(params, args)
    if kind is FailureKind.NOT_IMPLEMENTED:
        traceback = str(reply.get("traceback", ""))
        stub = _raising_frame(traceback)
        if stub is not None and stub[1] != function:  # the stub is an earlier step's, called from here
            where, name = stub
            return Failure(kind=kind,
                           summary=f"{name} in {where} is not written yet (your {function} calls it): "
                                   "it still raises NotImplementedError",
                           traceback=traceback,
                           hint=f"Write {name} in {where} first, or check this step with "
                                "--reference-steps to use the reference versions of earlier steps.")
        return Failure(kind=kind,
                       summary=f"{function} is not written yet: it still raises NotImplementedError",
                       traceback=traceback,
                       hint="Open the file, replace the `raise NotImplementedError(...)` line with "
                            "your code, and check again. `attn-practice hint` helps you start.")
    if kind is FailureKind.TYPE:
        returned = reply.get("returned", "something")
        extra = f" ({reply.get('message')})" if reply.get("message") else ""
        if returned == "None":
            summary = f"{function} returned None: did you forget a `return` statement?"
        else:
            summary = f"{function} returned {returned}{extra}, not an array of numbers"
        return Failure(kind=kind, summary=summary, details=inputs, repro=repro,
                       hint="Return a NumPy array of floats.")
    if kind is FailureKind.TOO_LARGE:
        return Failure(kind=FailureKind.SHAPE, summary=f"{function} returned an array of shape "
                       f"{tuple(reply.get('shape', []))}, far larger than expected",
                       details=inputs, repro=repro)
    words = {
        FailureKind.MEMORY: f"ran out of memory (it may use at most {size_words(memory)})",
        FailureKind.RECURSION: "recursed too deeply (RecursionError)",
        FailureKind.EXIT: "called exit() (SystemExit) instead of returning",
        FailureKind.INTERRUPT: "raised KeyboardInterrupt",
    }
    if kind not in words:
        kind = FailureKind.EXCEPTION
    what = words.get(kind, f"raised {reply.get('message', 'an exception')}")
    return Failure(kind=kind, summary=f"{function} {what}", details=inputs,
                   traceback=str(reply.get("traceback", "")), repro=repro,
                   hint="Run the repro line in Python to see it happen, then read the "
                        "traceback from the bottom up.")


def timeout_failure(function: str, params: Sequence[str], args: tuple[Any, ...], kwargs: dict[str, Any],
                    seconds: float, *, stopped: bool = True) -> Failure:
    """One call ran out of its time limit: which call, on which (short) input.

    The same words whether the grader's deadline or the sandbox's own clock
    stopped it, so a report never depends on which came first.
    """
    return Failure(
        kind=FailureKind.TIMEOUT,
        summary=f"timeout: {function}(...) did not return within {seconds:g} s on the input below"
                + (", so this step's remaining tests were stopped" if stopped else ""),
        details=describe_inputs(params, args),
        repro=repro_line(function, params, args, kwargs),
        hint="Check for a loop that never ends, or input()/sleep() in your code.",
    )


def size_words(n: int) -> str:
    for unit, size in (("GiB", GiB), ("MiB", 1024**2), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:g} {unit}"
    return f"{n} bytes"


# --------------------------------------------------------------- display
def format_array(a: Any, max_elements: int = 64) -> str:
    """A compact, copy-pasteable rendering of a small array."""
    if not isinstance(a, np.ndarray):
        return repr(a)
    if a.size > max_elements:
        return f"<array of shape {a.shape}, dtype {a.dtype}>"
    body = np.array2string(a, separator=", ", precision=17 if a.dtype == np.float64 else 8,
                           floatmode="maxprec", max_line_width=10_000, threshold=max_elements + 1)
    body = body.replace("\n", "")
    dtype = "" if a.dtype == np.float64 else f", dtype={_dtype_expr(a.dtype)}"
    return f"np.array({body}{dtype})".replace("inf", "np.inf").replace("nan", "np.nan")


def _dtype_expr(dtype: np.dtype[Any]) -> str:
    """A dtype as Python that means it on NumPy 1.x and 2.x (`bool`: `np.bool` is 2.x only)."""
    if dtype.kind == "b":
        return "bool"
    return f"np.{dtype.name}" if hasattr(np, dtype.name) else repr(dtype.str)


def repro_line(function: str, params: Sequence[str], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    if any(isinstance(a, np.ndarray) and a.size > 64 for a in args):
        shapes = ", ".join(f"{p}{getattr(a, 'shape', '')}" for p, a in zip(params, args, strict=False))
        return f"# inputs too large to print: {function}({shapes})"
    parts = [format_array(a) for a in args] + [f"{k}={format_array(v)}" for k, v in kwargs.items()]
    return f"{function}({', '.join(parts)})"


def describe_inputs(params: Sequence[str], args: tuple[Any, ...]) -> str:
    lines = []
    for name, a in zip(params, args, strict=False):
        if isinstance(a, np.ndarray):
            lines.append(f"{name}: shape {a.shape}, dtype {a.dtype}")
            if a.size <= 24:
                lines.append("  " + np.array2string(a, precision=4, suppress_small=False).replace("\n", "\n  "))
        else:
            lines.append(f"{name} = {a!r}")
    return "\n".join(lines)


_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\w+)')


def _raising_frame(traceback: str) -> tuple[str, str] | None:
    """(file, function) of the learner's innermost frame: where the error was raised."""
    frames = _FRAME.findall(traceback)
    return (os.path.basename(frames[-1][0]), frames[-1][1]) if frames else None


def add_return_notes(notes: dict[str, str], params: Sequence[str], returned: str, dtype: str,
                     args: tuple[Any, ...], mutated: list[int]) -> None:
    """What a step's report notes about a call's answer (not judged): a list returned, an
    ndarray subclass, another dtype than the inputs', an input changed in place."""
    if returned in ("list", "tuple"):
        notes.setdefault("list", f"your function returned a {returned}; NumPy arrays are "
                         "the usual answer (np.array(...) would convert it)")
    elif returned.startswith("ndarray subclass"):
        notes.setdefault("subclass", f"your function returned an {returned}; it was "
                         "judged as a plain array")
    in_dtypes = {protocol.dtype_name(a.dtype) for a in args if isinstance(a, np.ndarray) and a.dtype.kind == "f"}
    if in_dtypes and dtype not in in_dtypes and "list" not in notes:
        notes.setdefault("dtype", f"your function returned {dtype} for "
                         f"{'/'.join(sorted(in_dtypes))} input (not judged, but worth knowing)")
    for i in mutated:
        name = params[i] if i < len(params) else f"argument {i}"
        notes.setdefault(f"mutated-{name}", f"your function changed its input {name} in "
                         "place; callers may not expect that (not judged)")


def budget_failure(budget: Budget) -> Failure:
    """The failure of a load or call refused because the submission's time budget is spent."""
    if budget.over_wall and budget.used <= budget.seconds:
        summary = (f"timeout: grading this submission took more than {budget.wall:g} s in all "
                   "(your code's calls and the checks of what they returned), so its remaining "
                   "tests were stopped")
    else:
        summary = (f"timeout: this submission spent more than {budget.seconds:g} s in your "
                   "code, so its remaining tests were stopped")
    return Failure(kind=FailureKind.TIMEOUT, summary=summary,
                   hint="Look for loops that do much more work than needed, or sleep()/input() calls.")


def death_failure(message: str, out_of_memory: bool, function: str, params: Sequence[str],
                  args: Sequence[Any], kwargs: dict[str, Any], memory: int) -> Failure:
    """The failure of a call whose sandbox died under it (`message`: how, from its exit status)."""
    return Failure(
        kind=FailureKind.MEMORY if out_of_memory else FailureKind.CRASH,
        summary=f"your code {message} while running {function}(...)"
                + (f" (the memory limit is {size_words(memory)})" if out_of_memory else ""),
        details=describe_inputs(params, args),
        repro=repro_line(function, params, args, kwargs),
        hint="Return a value instead of exiting, and avoid ctypes or os-level calls.",
    )
