"""Grade a class on a Dask cluster (optional extra: `pip install '.[dask]' in the attn-practice checkout`).

Workers need not share a filesystem with the client, so a submission travels
as a payload of file names and bytes (regular files only, size-bounded, no
symlinks) and is unpacked into a fresh temp directory on the worker. Each
worker grades with the same engine as a local run, so a report is the same
wherever it was made; it comes back as `to_dict()` JSON, relabelled with the
submission's original path.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from attn_practice import __version__
from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.results import GradeReport
from attn_practice.grader.sandbox import submission
from attn_practice.grader.staff.affinity import DASK_CORES_ENV, dask_cores, pin_dask_worker

#: Bounds on what one submission may ship to a worker (see `submission.remote_payload`).
MAX_FILE_BYTES = submission.MAX_FILE_BYTES
MAX_TOTAL_BYTES = submission.MAX_TOTAL_BYTES
NO_DASK = "Dask is not installed: pip install '.[dask]' in the attn-practice checkout"


def submission_payload(path: str | os.PathLike[str]) -> dict[str, Any]:
    """`{"name", "files": {relpath: bytes}, "skipped": [relpath...], "special": {...}}` for one submission.

    What the one submission walker says a remote worker needs: files over
    MAX_FILE_BYTES, or past MAX_TOTAL_BYTES in all, are listed in `skipped`
    instead of shipped (step files are small, and a stray dataset must not
    flood the scheduler); links, FIFOs and folders named like step files
    travel as their kind only.
    """
    if not Path(path).is_dir():
        raise NotADirectoryError(f"{path}: not a directory")
    steps = [e.file for e in load_catalog()]
    payload = submission.remote_payload(path, max_file_bytes=MAX_FILE_BYTES, max_total_bytes=MAX_TOTAL_BYTES,
                                        first=steps)
    return {"name": str(path), **payload}


def _safe_relpath(rel: str) -> PurePosixPath:
    """A payload path that stays inside the temp directory (payloads cross machines)."""
    p = PurePosixPath(rel)
    if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts):
        raise ValueError(f"unsafe path in submission payload: {rel!r}")
    return p


def _relabel(data: dict[str, Any], tmp: str, name: str) -> dict[str, Any]:
    """Replace the worker's temp path by the original one, everywhere it shows."""
    text = json.dumps(data, ensure_ascii=True)
    for old in sorted({tmp, os.path.realpath(tmp)}, key=len, reverse=True):
        text = text.replace(json.dumps(old)[1:-1], json.dumps(name)[1:-1])
    out = json.loads(text)
    out["submission"] = name
    return out


def grade_payload(payload: dict[str, Any], **grade_kwargs: Any) -> dict[str, Any]:
    """Runs on a worker: unpack the payload into a temp dir, grade it, return `to_dict()`.

    `payload["step_ids"]`, when present, are resolved here into the `steps=`
    the engine takes (ids travel better than Exercise objects); other keyword
    arguments (e.g. `options=`) go to `grade_submission` unchanged.
    """
    import importlib

    engine_module = importlib.import_module("attn_practice.grader.engine.engine")  # lazily: on the worker

    grade_submission = engine_module.grade_submission
    run_options = getattr(engine_module, "RunOptions", None)

    name = str(payload["name"])
    if payload.get("step_ids") is not None:
        from attn_practice.grader.catalog import resolve_step

        grade_kwargs["steps"] = [resolve_step(s) for s in payload["step_ids"]]
    from attn_practice.grader.sandbox.prestart import memory_temp_dir

    size = sum(len(data) for data in payload["files"].values())
    with tempfile.TemporaryDirectory(prefix="attn-practice-", dir=memory_temp_dir(size)) as tmp:
        sub = Path(tmp) / (Path(name).name or "submission")
        sub.mkdir()
        for rel, data in payload["files"].items():
            target = sub / _safe_relpath(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        for rel, kind in payload.get("special", {}).items():
            target = sub / _safe_relpath(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            if kind == "symlink":
                target.symlink_to("/nonexistent/attn-practice-link")
            elif kind == "dir":
                target.mkdir(exist_ok=True)
            elif kind == "other":
                os.mkfifo(target)
        options = grade_kwargs.get("options")
        if (run_options is not None and isinstance(options, run_options)
                and set(grade_kwargs) <= {"options", "steps"}):
            # A worker grades many submissions: one warm engine (fork server, pytest
            # session) per worker thread, checked and rebuilt as a local worker's is.
            from attn_practice.grader.staff.worker import grade_with

            steps = grade_kwargs.get("steps")
            ids = [e.id for e in (steps if steps is not None else engine_module.default_steps(sub))]
            report = grade_with(_worker_engine(options), sub, ids, label=str(sub))
        else:
            report = grade_submission(sub, **grade_kwargs)
            if report.grader_failed:  # CONTRACT 4.4: once more, on a fresh engine and fork server
                report = grade_submission(sub, **grade_kwargs)
        return _relabel(report.to_dict(), str(sub), name)


_WORKER = threading.local()


def _worker_engine(options: Any) -> Any:
    """This worker thread's engine for `options` (a new one when the options change)."""
    from attn_practice.grader.staff.worker import WarmEngine

    if getattr(_WORKER, "warm", None) is None:
        with contextlib.suppress(ValueError):  # not in a Dask worker: nothing to pin
            pin_dask_worker(_import_distributed().get_worker().name)  # before its fork server starts
        _WORKER.warm = WarmEngine()
    return _WORKER.warm.get(options)


def _import_distributed() -> Any:
    try:
        import distributed
    except ImportError as exc:
        raise RuntimeError(NO_DASK) from exc
    return distributed


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _failed_report(name: str, what: str) -> GradeReport:
    return GradeReport(submission=name, grader_version=__version__,
                       error=f"grading on the Dask cluster failed: {what}")


#: The key of a submission's place in `grade_payloads`' answer when its grading raised.
FAILED = "__grading_failed__"


def grade_payloads(payloads: Sequence[dict[str, Any]], **grade_kwargs: Any) -> list[dict[str, Any]]:
    """Runs on a worker: `grade_payload` for each of a few submissions sent as one task.

    One task per submission costs the scheduler, the client and the workers'
    event loops more CPU than the lighter submissions cost to grade; a few per
    task share it. A submission whose grading raises gets `{FAILED: text}` in
    its place, so it never loses its neighbours' reports.
    """
    out: list[dict[str, Any]] = []
    for payload in payloads:
        try:
            out.append(grade_payload(payload, **grade_kwargs))
        except Exception as exc:  # noqa: BLE001 - one submission's trouble is its own report
            out.append({FAILED: _text(exc)})
    return out


#: Submissions in flight per worker thread: enough to keep workers busy, few enough that
#: the scheduler never holds a whole class (payloads are streamed, not sent up front).
IN_FLIGHT_PER_THREAD = 6
#: Most submissions one task carries (fewer near the end of a class, so workers finish together).
MAX_PER_TASK = 3


def per_task(remaining: int, window: int, threads: int) -> int:
    """How many submissions the next task carries: two tasks per thread in the window, at most
    MAX_PER_TASK, and one at a time once the class's tail would leave a worker idle."""
    return max(1, min(MAX_PER_TASK, window // (2 * threads), remaining // (2 * threads)))


#: Entries Dask's low-level logs keep (message and stimulus logs, transitions): a few
#: windows' worth, for a traceback's context.
LOW_LEVEL_LOG_LENGTH = 10

#: Dask settings for `--dask local` (its nannies pass them on to the workers). Measured on
#: 2 cores, 200 submissions (`strace -c -f -p WORKER` for 5 s mid-class):
#: - Off, or slow, the periodic work nobody reads here (no dashboard, no spilling: a worker
#:   holds a few payloads), which wakes a worker's event loop and takes the GIL from its
#:   grading thread: the statistical profiler (every 10 ms), the GIL monitor (every 1 ms),
#:   the event-loop health tick (20 ms by default: at 1 s the loop woke a quarter as often,
#:   epoll_wait 883 -> 241 calls, and the GIL changed hands half as often, futex 2,043 ->
#:   919), the memory and system monitors, work stealing (the scheduler queues tasks until
#:   a thread is free: nothing to steal) and the active memory manager (no shared data).
#: - No `MALLOC_TRIM_THRESHOLD_=65536`, which a nanny sets for its worker (and in its own
#:   process, ours) by default: it freezes glibc's mmap threshold, so every mid-sized array
#:   was mapped, faulted in and unmapped again (brk 3,088 -> 250 calls, mmap 2,725 -> 10).
#: - Short low-level logs: the scheduler keeps each worker stream's last 1,000 messages
#:   under 1 MB, and each worker its last 1,000 stimuli, payloads included, so the grading
#:   process held every payload it had sent (160 alive after 150 reports).
LOCAL_WORKER_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.system-monitor.gil.enabled": False,
    "distributed.nanny.pre-spawn-environ": {},
    "distributed.admin.tick.interval": "1s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.admin.system-monitor.disk": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.scheduler.active-memory-manager.start": False,
    "distributed.admin.low-level-log-length": LOW_LEVEL_LOG_LENGTH,
}


@contextlib.contextmanager
def _connect(address: str, security: Any, workers: int | None = None) -> Iterator[Any]:
    """A client of `address`; "local": a LocalCluster on TLS with throwaway credentials."""
    distributed = _import_distributed()
    if address != "local":
        client = distributed.Client(address, security=security) if security is not None \
            else distributed.Client(address)
        try:
            yield client
        finally:
            client.close()
        return
    import dask

    from attn_practice.grader.sandbox.prestart import one_blas_thread_by_default
    from attn_practice.grader.staff.dask_security import temporary_security

    one_blas_thread_by_default()  # as the local pool's workers: they inherit it
    # A Dask worker grades on a thread of its own, and glibc gives each thread an arena of
    # its own: heaps it trims and faults in again per submission. One arena, as the pool's
    # workers (which grade on their main thread) have: about 5% of a class's time in our runs.
    os.environ.setdefault("MALLOC_ARENA_MAX", "1")
    n_workers = workers or os.cpu_count() or 1
    # each worker on a core of its own, as the local pool's (see `affinity`); read by the
    # workers as they start, and taken back after, so nothing started later inherits it
    before = os.environ.get(DASK_CORES_ENV)
    os.environ[DASK_CORES_ENV] = dask_cores(n_workers)
    with temporary_security() as sec, dask.config.set(LOCAL_WORKER_CONFIG):
        try:
            cluster = distributed.LocalCluster(
                n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None,
                protocol="tls://", host="127.0.0.1", security=sec,
            )
        finally:
            if before is None:
                os.environ.pop(DASK_CORES_ENV, None)
            else:
                os.environ[DASK_CORES_ENV] = before
        try:
            client = distributed.Client(cluster, security=sec)
            try:
                yield client
            finally:
                client.close()
        finally:
            cluster.close()


def grade_on_dask(
    paths: Iterable[str | os.PathLike[str]],
    address: str,
    *,
    labels: Sequence[str] | None = None,
    step_ids: Sequence[Sequence[str] | None] | None = None,
    security: Any = None,
    workers: int | None = None,
    **grade_kwargs: Any,
) -> Iterator[tuple[int, GradeReport]]:
    """Grade submissions on a cluster; yield `(index in paths, report)` as each finishes.

    `address` is a scheduler address, or "local" for a LocalCluster of
    single-threaded worker processes on this machine, on TLS with mutual
    authentication (see `dask_security`), `workers` of them (default: the CPU
    count, as the local pool). `security`: a `distributed.Security`
    for `address` (default: Dask's configuration). `labels[i]` names path i in
    its report (default: the path as given); `step_ids[i]` picks its steps.
    Submissions are read and sent a few per worker at a time, as earlier ones
    finish, so neither this process nor the scheduler holds the whole class.
    A submission that cannot be read, or whose grading raises on the worker,
    yields a report with `error` set, so one bad worker does not lose the class.
    """
    distributed = _import_distributed()
    paths = list(paths)
    names = [str(p) for p in paths] if labels is None else [str(label) for label in labels]
    with _connect(address, security, workers) as client:
        threads = sum((client.nthreads() or {}).values()) or 1
        window = max(2, IN_FLIGHT_PER_THREAD * threads)
        taken = 0  # submissions read and sent so far, in order
        running: Any = distributed.as_completed()
        futures: dict[Any, list[int]] = {}

        def send(indices: Sequence[int]) -> Iterator[tuple[int, GradeReport]]:
            """Send `indices` as one task; a report at once for each that cannot be read."""
            chunk: list[int] = []
            payloads: list[dict[str, Any]] = []
            for index in indices:
                try:
                    payload = submission_payload(paths[index])
                except Exception as exc:  # noqa: BLE001 - one unreadable submission never loses the class
                    yield index, _failed_report(names[index], _text(exc))
                    continue
                payload["name"] = names[index]
                if step_ids is not None and step_ids[index] is not None:
                    payload["step_ids"] = list(step_ids[index])
                chunk.append(index)
                payloads.append(payload)
            if chunk:
                future = client.submit(grade_payloads, payloads, pure=False, **grade_kwargs)
                futures[future] = chunk
                running.add(future)

        def fill() -> Iterator[tuple[int, GradeReport]]:
            nonlocal taken
            while taken < len(paths) and sum(map(len, futures.values())) < window:
                size = per_task(len(paths) - taken, window, threads)
                first, taken = taken, min(taken + size, len(paths))
                yield from send(range(first, taken))

        yield from fill()
        while futures:
            future = next(running)
            chunk = futures.pop(future)
            try:
                results = future.result()
            except Exception as exc:  # the worker's failure: each submission graded again, alone
                future.release()
                if len(chunk) > 1:
                    for index in chunk:
                        yield from send([index])
                    continue
                results = [{FAILED: _text(exc)}]
            future.release()
            for index, data in zip(chunk, results, strict=True):
                try:
                    report = _failed_report(names[index], data[FAILED]) if FAILED in data \
                        else GradeReport.from_dict(data)
                except Exception as exc:  # noqa: BLE001 - a malformed answer is this submission's report
                    report = _failed_report(names[index], _text(exc))
                yield index, report
            yield from fill()
