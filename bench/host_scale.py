"""The hosted class past one machine (issue 24): figures from one run, on loopback only.

    python bench/host_scale.py checks          # Dask LocalCluster vs the local pool
    python bench/host_scale.py store           # saves on PostgreSQL (2 stores) vs SQLite
    python bench/host_scale.py class           # 200 learners, PostgreSQL, two `host` processes
    python bench/host_scale.py all --quick     # everything, smaller

checks: the same N checks (a mix of correct and mistaken files over steps 1-3,
one learner each) through the fair queue, once on the local pool (2 workers)
and once on a Dask LocalCluster of two single-threaded workers; both warmed
first. Target: Dask's throughput >= 0.9 x the local pool's.

store: K threads in each of two PostgresStore objects (as two server
processes would hold) save versions for their own learners for a fixed
time; the same on one SQLiteStore. Save latency p50/p95 and saves per second:
what one database serves, whatever the number of server processes.

class: delegated to the class load generator of issue 23 (bench/host_load.py)
when it is present, pointed at two `host` processes on one throwaway
PostgreSQL cluster; learners alternate between the two processes as a
round-robin load balancer would send them.

Everything is bounded in count and time and stops by itself. Results go to
bench/results-host-scale.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from pg_cluster import PgCluster, find_bindir, why_impossible  # noqa: E402

RESULTS = HERE / "results-host-scale.json"
NO_SCALE = "import numpy as np\n\ndef scale_scores(scores, d_k):\n    return scores\n"
WRONG_AXIS = ("import numpy as np\n\ndef softmax(x, axis=-1):\n    e = np.exp(x - x.max(axis=0, keepdims=True))\n"
              "    return e / e.sum(axis=0, keepdims=True)\n")


def pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


# ------------------------------------------------------------------ checks: Dask vs local pool
def _requests(n: int) -> list:
    from conftest import solution_source

    from attn_practice.grader.host.checks.base import CheckRequest

    step1 = solution_source("step1")
    kinds = [("step1", {"step1_scores.py": step1}),
             ("step2", {"step1_scores.py": step1, "step2_scale.py": NO_SCALE}),
             ("step2", {"step1_scores.py": step1, "step2_scale.py": solution_source("step2")}),
             ("step3", {"step1_scores.py": step1, "step3_softmax.py": WRONG_AXIS})]
    return [CheckRequest(learner_id=f"bench-{i}", step=kinds[i % len(kinds)][0],
                         files=dict(kinds[i % len(kinds)][1])) for i in range(n)]


def _through_queue(runner, requests) -> dict:
    from attn_practice.grader.host.checks.queue import FairQueue

    queue = FairQueue(runner)
    try:
        t0 = time.perf_counter()
        futures = [queue.submit(r) for r in requests]
        results = [f.result(timeout=600) for f in futures]
        wall = time.perf_counter() - t0
    finally:
        queue.close()
    failed = sum(1 for r in results if r.get("grader_failed"))
    statuses = sorted({s["status"] for r in results for s in r["report"].get("steps", [])})
    return {"checks": len(results), "wall_s": round(wall, 2), "per_s": round(len(results) / wall, 3),
            "grader_failed": failed, "statuses": statuses,
            "run_p95_ms": ms(pct([r.get("seconds", 0.0) for r in results], 95))}


def bench_checks(n: int) -> dict:
    from attn_practice.grader.host.checks import open_runner, work

    options = work.host_options()
    out: dict = {}
    for name, address in (("local_pool", None), ("dask_local_cluster", "local")):
        runner = open_runner(address, options, 2)
        try:
            runner.warm()
            _through_queue(runner, _requests(4))  # every worker has run each kind once
            out[name] = _through_queue(runner, _requests(n))
        finally:
            runner.close()
        print(f"  {name}: {out[name]}", flush=True)
    out["dask_over_local"] = round(out["dask_local_cluster"]["per_s"] / out["local_pool"]["per_s"], 3)
    out["target"] = ">= 0.9"
    return out


# ------------------------------------------------------------------ store: PostgreSQL vs SQLite
def _save_load(stores: list, threads_per_store: int, seconds: float) -> dict:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop = time.monotonic() + seconds
    content = (ROOT / "reference" / "attention.py").read_text()[:3000]

    def learner_loop(store, k: int) -> None:
        learner = store.create_learner(f"bench {k}", "", f"bench-hash-{k}-{time.time_ns()}")
        mine: list[float] = []
        i = 0
        while time.monotonic() < stop:
            t0 = time.perf_counter()
            try:
                store.save_version(learner.id, f"step{1 + i % 5}", f"# {i}\n{content}")
            except Exception as exc:  # noqa: BLE001 - counted, the run goes on
                with lock:
                    errors.append(type(exc).__name__)
            mine.append(time.perf_counter() - t0)
            i += 1
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=learner_loop, args=(s, k))
               for k, s in enumerate([s for s in stores for _ in range(threads_per_store)])]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"saves": len(latencies), "saves_per_s": round(len(latencies) / wall, 1),
            "p50_ms": ms(pct(latencies, 50)), "p95_ms": ms(pct(latencies, 95)),
            "max_ms": ms(max(latencies, default=0.0)), "errors": len(errors)}


def bench_store(seconds: float, threads: int) -> dict:
    from attn_practice.grader.host.store import open_store

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
        sqlite = open_store(None, Path(tmp))
        try:
            out["sqlite_one_process"] = _save_load([sqlite], 2 * threads, seconds)
        finally:
            sqlite.close()
        print(f"  sqlite: {out['sqlite_one_process']}", flush=True)
    reason = why_impossible()
    if reason:
        out["postgres_two_processes"] = {"skipped": reason}
        return out
    cluster = PgCluster(find_bindir())
    try:
        cluster.init()
        cluster.start()
        url = cluster.create_database("bench")
        with tempfile.TemporaryDirectory(prefix="attn-bench-") as tmp:
            stores = [open_store(url, Path(tmp) / f"p{i}") for i in range(2)]
            try:
                out["postgres_two_processes"] = _save_load(stores, threads, seconds)
            finally:
                for s in stores:
                    s.close()
        out["postgres_two_processes"]["fsync"] = "off (test cluster): a real server adds its disk's flush time"
        print(f"  postgres: {out['postgres_two_processes']}", flush=True)
    finally:
        cluster.close()
    return out


# ------------------------------------------------------------------ class: 200 learners, 2 processes
def bench_class(learners: int, minutes: float) -> dict:
    load = HERE / "host_load.py"
    if not load.is_file():
        return {"skipped": "bench/host_load.py (the class load generator of issue 23) is not here"}
    reason = why_impossible()
    if reason:
        return {"skipped": reason}
    cluster = PgCluster(find_bindir())
    try:
        cluster.init()
        cluster.start()
        url = cluster.create_database("bench_class")
        out_file = Path(tempfile.mkstemp(prefix="attn-bench-class-", suffix=".json")[1])
        cmd = [sys.executable, str(load), "--learners", str(learners), "--minutes", str(minutes),
               "--db", url, "--processes", "2", "--json", str(out_file)]
        print("  " + " ".join(cmd), flush=True)
        proc = subprocess.run(cmd, cwd=ROOT, timeout=int(minutes * 60) + 600, check=False)
        try:
            data = json.loads(out_file.read_text() or "{}")
        except ValueError:
            data = {}
        out_file.unlink(missing_ok=True)
        return {"exit": proc.returncode, **data}
    finally:
        cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=["checks", "store", "class", "all"])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    results: dict = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    results["machine"] = {"cores": os.cpu_count(), "load_avg_at_start": os.getloadavg()}
    if args.what in ("checks", "all"):
        print("checks:", flush=True)
        results["checks"] = bench_checks(12 if args.quick else 40)
    if args.what in ("store", "all"):
        print("store:", flush=True)
        results["store"] = bench_store(5.0 if args.quick else 20.0, 4)
    if args.what in ("class", "all"):
        print("class:", flush=True)
        results["class"] = bench_class(50 if args.quick else 200, 1.0 if args.quick else 5.0)
    results["when"] = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: v for k, v in results.items() if k != "machine"}, indent=2))
    print(f"written to {RESULTS.relative_to(ROOT)} (one run on a shared machine, load "
          f"{statistics.mean(os.getloadavg()):.1f}: read the ratios, not the absolute times)")


if __name__ == "__main__":
    main()
