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
import stat
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


def learner_source(call: Any) -> str | None:
    """The text of the step file behind the engine's learner callable, if it says where it is."""
    module = getattr(call, "module", None)
    if not isinstance(module, str) or not module.isidentifier():
        return None
    name = f"{module}.py"
    files = getattr(call, "files", None)
    data: bytes | None = None
    if isinstance(files, dict):
        got = files.get(name)
        data = got if isinstance(got, bytes) else None
    submission = getattr(call, "submission", None)
    if data is None and isinstance(submission, (str, Path)):
        data = _read(Path(submission) / name)
    return data.decode("utf-8", "replace") if data is not None and len(data) <= MAX_SOURCE_BYTES else None


def _weight(node: ast.expr) -> bool:
    """W_q, W_o, self.W: weight matrices are 2-D in every step, so their .T is a real transpose."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
    return name.startswith("W")


def transposes_all_axes(source: str | None) -> bool:
    """The file reverses every axis of some array that is not a weight matrix (`.T` and kin)."""
    if not source:
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "T" and not _weight(node.value):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "transpose" and not node.keywords:
            owner = node.func.value
            if isinstance(owner, ast.Name) and owner.id in ("np", "numpy"):
                if len(node.args) == 1 and not _weight(node.args[0]):
                    return True
            elif not node.args and not _weight(owner):
                return True
    return False


__all__ = ["learner_source", "transposes_all_axes"]
