"""A large class graded for real: the parent's memory, the Dask scheduler's, and the same report.

    python bench/big_class.py                   # 5,000 submissions, local pool then --dask local
    python bench/big_class.py --n 1000 --no-dask

Issue 22 asks that a 5,000-submission batch stay under 1 GiB resident in the
parent, and that `--dask local` stream submissions (the scheduler, which a
LocalCluster runs inside the grading process, never holds the whole class)
and give the same report as the local pool. This grades one class both ways
with `--jobs 2 --no-cache` through the console script, samples the grading
process's resident memory while it runs (VmRSS every second, and VmHWM, the
kernel's own peak), and compares the two JSON reports without their timings.
"Bounded" shows as the resident memory at a quarter, half and all of the run:
a scheduler that held every payload would grow with the class.
Results also go to bench/big_class.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from side_by_side import _without_timings, cli, make_class  # noqa: E402


def _status_kib(pid: int, key: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def watched_run(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run `cmd`; its seconds, exit code, peak resident MiB and resident MiB over time."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[tuple[float, int]] = []
    peak = [0]

    def watch() -> None:
        while proc.poll() is None:
            rss = _status_kib(proc.pid, "VmRSS")
            hwm = _status_kib(proc.pid, "VmHWM")
            if rss is not None:
                samples.append((time.perf_counter() - t0, rss))
            if hwm is not None:
                peak[0] = max(peak[0], hwm)
            time.sleep(1.0)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, err = proc.communicate()
    watcher.join()
    seconds = time.perf_counter() - t0

    def at(frac: float) -> float | None:
        before = [kib for t, kib in samples if t <= frac * seconds]
        return round(before[-1] / 1024, 1) if before else None

    return {"seconds": round(seconds, 1), "exit": proc.returncode, "peak_rss_mib": round(peak[0] / 1024, 1),
            "rss_mib_at": {"25%": at(0.25), "50%": at(0.5), "75%": at(0.75), "end": at(1.0)},
            "stderr_tail": err[-300:] if proc.returncode not in (0, 1) else ""}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--no-dask", action="store_true")
    ap.add_argument("--keep", metavar="DIR", help="grade the class already in DIR (made there if missing)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="attnp-big-"))
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "xdg"), ATTN_PRACTICE_CACHE=str(tmp / "xdg" / "results"))
    res: dict[str, Any] = {"n": args.n, "cpus": os.cpu_count(), "load_before": os.getloadavg()}
    try:
        root = Path(args.keep) if args.keep else tmp / "class"
        subs = sorted(str(p) for p in root.iterdir()) if root.is_dir() and any(root.iterdir()) \
            else make_class(root, args.n, seed=5)
        subs = subs[: args.n]
        base = [*cli(), "grade", *subs, "--format", "json", "--no-cache", "--jobs", "2"]
        res["local"] = watched_run([*base, "--out", str(tmp / "local.json")], env)
        res["local"]["per_s"] = round(len(subs) / res["local"]["seconds"], 2)
        if not args.no_dask:
            res["dask_local"] = watched_run([*base, "--dask", "local", "--out", str(tmp / "dask.json")], env)
            res["dask_local"]["per_s"] = round(len(subs) / res["dask_local"]["seconds"], 2)
            res["dask_local"]["ratio_to_pool"] = round(res["local"]["seconds"] / res["dask_local"]["seconds"], 3)
            local = _without_timings(json.loads((tmp / "local.json").read_text()))
            dask = _without_timings(json.loads((tmp / "dask.json").read_text()))
            res["dask_local"]["same_report_as_pool"] = local == dask
            if local != dask:
                res["dask_local"]["differing_submissions"] = [
                    a.get("submission") for a, b in zip(local, dask, strict=False) if a != b][:10]
        res["load_after"] = os.getloadavg()
        res["goal"] = {"parent_peak_rss_mib_below": 1024, "dask_ratio_to_pool_at_least": 0.9}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    (HERE / "big_class.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
