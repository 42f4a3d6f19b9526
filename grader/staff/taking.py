"""A class's snapshots taken ahead of its grading, on a thread of their own.

Copying a submission (`staff.snapshot`) and hashing the copy for the cache
costs a few milliseconds of file creation each: for a class of 5,000, half a
minute in which no worker had anything to grade. Here the copies are taken
in order on one thread while the pool grades the first ones; whoever needs a
submission's copy (`path(i)`) or its cache key (`key(i)`) waits for that one
only. A submission that cannot be copied is graded where it lies and never
cached, exactly as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: `keyer(snapshot)`: the submission's cache key, or None (not cached).
Keyer = Callable[[Path], str | None]


class Taken(Sequence[Path]):
    """The snapshot of each submission (a Sequence of paths) and its cache key, as they arrive."""

    def __init__(self, snapshots: Any, sources: Sequence[Path], keyer: Keyer | None = None):
        self._snapshots = snapshots
        self._sources = list(sources)
        self._keyer = keyer
        n = len(self._sources)
        self._paths: list[Path | None] = [None] * n
        self._keys: list[str | None] = [None] * n
        self._count = 0  # how many are ready (always a prefix: taken in order)
        self._stop = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._take_all, name="attn-practice-snapshots", daemon=True)
        self._thread.start()

    def _take_all(self) -> None:
        for i, source in enumerate(self._sources):
            path, key = Path(source), None  # not copied: graded where it lies, never cached
            try:
                if not self._stop:
                    path = self._snapshots.take(source)
                    key = self._keyer(path) if self._keyer is not None else None
            except Exception:  # noqa: BLE001 - a copy or key that cannot be made (a thread must not die)
                pass
            with self._ready:
                self._paths[i], self._keys[i] = path, key
                self._count = i + 1
                self._ready.notify_all()

    def _wait(self, i: int) -> None:
        if not 0 <= i < len(self._sources):
            raise IndexError(i)
        if self._count > i:
            return
        with self._ready:
            while self._count <= i:
                self._ready.wait()

    def __len__(self) -> int:
        return len(self._sources)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        self._wait(i)
        path = self._paths[i]
        assert path is not None
        return path

    def key(self, i: int) -> str | None:
        """Submission `i`'s cache key (None: never cached), once its copy is taken."""
        self._wait(i)
        return self._keys[i]

    def close(self) -> None:
        """Take no more copies (those left are graded where they lie) and wait for the thread."""
        self._stop = True
        self._thread.join()

    def __enter__(self) -> Taken:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Keyer", "Taken"]
