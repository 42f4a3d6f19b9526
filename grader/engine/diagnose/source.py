"""What the learner's file says, where running it cannot tell (read as text, never run).

`K.T` followed by code that only works on a matrix (a shape unpacked into two
names, a softmax reshaped with `reshape(n, 1)`) fails on every batch before
the transpose can show in an answer: no probe can tell it from the rest of
the rank-bound code. The file itself can: a `.T` (or `np.transpose(x)`,
`x.transpose()`) on an array that is not a weight matrix reverses every axis
of a batch. `diagnose` adds `transpose-all-axes` on that evidence only when
the answers already show a rank-bound mistake that nothing else explains.
"""

from __future__ import annotations

import ast
import os
import re
import stat
import textwrap
from pathlib import Path
from typing import Any

#: Learner files larger than this are not read (the engine refuses them anyway).
MAX_SOURCE_BYTES = 1 << 20


def _read(path: Path) -> bytes | None:
    """A regular file's bytes, without following a link or blocking on a FIFO."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(MAX_SOURCE_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _module_text(call: Any, module: str) -> str | None:
    name = f"{module}.py"
    files = getattr(call, "files", None)
    data: bytes | None = None
    submission = getattr(call, "submission", None)
    if isinstance(files, dict):  # graded from memory (a notebook): the files are all there is
        got = files.get(name)
        data = got if isinstance(got, bytes) else None
    elif isinstance(submission, (str, Path)):
        data = _read(Path(submission) / name)
    return data.decode("utf-8", "replace") if data is not None and len(data) <= MAX_SOURCE_BYTES else None


_STEP_MODULE = re.compile(r"step[1-9][0-9]*_[a-z0-9_]+")


def _imported_steps(text: str) -> list[str]:
    """The other step modules a step file imports (`from step3_softmax import softmax`)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, or hostile nesting
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return [n for n in dict.fromkeys(names) if _STEP_MODULE.fullmatch(n)]


def learner_source(call: Any) -> str | None:
    """The text of the step file behind the engine's learner callable, if it says where it is,
    followed by the other step files it imports (a helper written in step 3 runs in step 5)."""
    module = getattr(call, "module", None)
    if not isinstance(module, str) or not module.isidentifier():
        return None
    text = _module_text(call, module)
    if text is None:
        return None
    extra = [t for m in _imported_steps(text) if m != module and (t := _module_text(call, m)) is not None]
    return "\n\n".join([text, *extra])


def _name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


_KEY_WEIGHT = re.compile(r"[Ww]_?[Kk]\w*")


def _keys(node: ast.expr) -> bool:
    """The keys (K, k, keys, self.K) or something computed from W_k: what a `.T` in attention
    transposes. A `.T` on anything else (x.T in a softmax that works along the last axis at
    any rank, W_o.T, weights.T) says nothing about a K.T."""
    if _name(node)[:1] in ("k", "K"):
        return True
    return any(_KEY_WEIGHT.fullmatch(_name(n)) for n in ast.walk(node) if _name(n))


def transposes_all_axes(source: str | None) -> bool:
    """The file reverses every axis of the keys (`K.T`, `np.transpose(K)`, `K.transpose()`)."""
    if not source:
        return False
    try:
        tree = ast.parse(textwrap.dedent(source))  # a function's source may come indented
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python, or hostile nesting
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "T" and _keys(node.value):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "transpose" and not node.keywords:
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in ("np", "numpy"):
                if len(node.args) == 1 and _keys(node.args[0]):
                    return True
            elif not node.args and _keys(owner):
                return True
    return False


__all__ = ["learner_source", "transposes_all_axes"]
