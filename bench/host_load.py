"""Load on a hosted class: N simulated learners on loopback, each saving and checking (issue 23).

    python bench/host_load.py [--learners 200] [--seconds 300] [--save-every 15] [--check-every 30]

Starts `attn-practice host` (the console script, a fresh data folder, SQLite,
one check worker per core), measures one lone check first, then runs the
learners: each joins through the join link, opens the page, then saves every
~save-every s and checks every ~check-every s (jittered) until the time is
up; the run stops by itself. Bounded: learners, time and per-request
timeouts are all capped. Prints (and writes with --out) the figures:

- saves: count, failed, lost (acknowledged versions missing afterwards), p50/p95 ms;
- page loads (the lesson page + summary + step data): p95 ms;
- checks: count, p95 latency, p95 queue wait (as the server reported it), the lone
  check's time, and the ratio p95 / (wait p95 + 1.5 x lone) the issue asks to be <= 1;
- the server's resident memory (its own process, and with its check workers), sampled.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
CORRECT = (ROOT / "tests" / "implementations" / "step1" / "correct_einsum.py").read_text()
WRONG = (ROOT / "tests" / "implementations" / "step1" / "wrong_elementwise_product.py").read_text()
MAX_LEARNERS, MAX_SECONDS = 1000, 1800


def p(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def rss_kb(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def tree(pid: int) -> list[int]:
    out = [pid]
    for child in os.popen(f"pgrep -P {pid}").read().split():
        out += tree(int(child))
    return out


class Run:
    def __init__(self) -> None:
        self.saves: list[float] = []
        self.save_failed = 0
        self.failures: dict[str, int] = {}  # what the failed requests got (status or error)
        self.acked: list[tuple[str, str, str]] = []  # (resume link, version id, text)
        self.pages: list[float] = []
        self.checks: list[float] = []
        self.waits: list[float] = []
        self.check_refused = 0
        self.check_failed = 0
        self.rss: list[tuple[int, int]] = []


async def join(client: httpx.AsyncClient, code: str, name: str) -> tuple[str, str]:
    page = await client.get(f"/join/{code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = await client.post(f"/join/{code}", data={"csrf": csrf, "display_name": name})
    r.raise_for_status()
    link = re.search(r'id="resume-link" href="([^"]+)"', r.text).group(1)
    return link, ""


async def load_page(client: httpx.AsyncClient, run: Run) -> str:
    t0 = time.perf_counter()
    page = await client.get("/")
    await client.get("/api/summary")
    await client.get("/api/step/step1")
    run.pages.append(time.perf_counter() - t0)
    return re.search(r'name="attnp-token" content="([^"]+)"', page.text).group(1)


async def learner(i: int, base: str, code: str, end: float, args: argparse.Namespace, run: Run) -> None:
    rnd = random.Random(i)
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await asyncio.sleep(rnd.uniform(0, min(args.save_every, 10)))  # not all at the same instant
        link, _ = await join(client, code, f"learner {i}")
        token = await load_page(client, run)
        headers = {"X-Attn-Token": token}
        next_save = time.monotonic() + rnd.uniform(0, args.save_every)
        next_check = time.monotonic() + rnd.uniform(0, args.check_every)
        n = 0
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_save:
                text = (CORRECT if n % 3 else WRONG) + f"\n# save {n}\n"
                t0 = time.perf_counter()
                try:
                    r = await client.post("/api/step/step1/save", json={"content": text},
                                          headers=headers)
                    if r.status_code == 200:
                        run.saves.append(time.perf_counter() - t0)
                        run.acked.append((link, r.json()["version"], text))
                    else:
                        run.save_failed += 1
                        run.failures[f"save {r.status_code}"] = run.failures.get(f"save {r.status_code}", 0) + 1
                except httpx.HTTPError as exc:
                    run.save_failed += 1
                    kind = f"save {type(exc).__name__}"
                    run.failures[kind] = run.failures.get(kind, 0) + 1
                n += 1
                next_save = now + args.save_every * rnd.uniform(0.8, 1.2)
                if n % 10 == 0:
                    await load_page(client, run)
            elif now >= next_check:
                t0 = time.perf_counter()
                try:
                    r = await client.post("/api/step/step1/check", json={}, headers=headers)
                    if r.status_code == 200:
                        run.checks.append(time.perf_counter() - t0)
                        run.waits.append(float(r.json().get("waited", 0.0)))
                    elif r.status_code == 429:
                        run.check_refused += 1
                    else:
                        run.check_failed += 1
                except httpx.HTTPError:
                    run.check_failed += 1
                next_check = time.monotonic() + args.check_every * rnd.uniform(0.8, 1.2)
            else:
                await asyncio.sleep(min(next_save, next_check) - now)


async def sample_rss(pid: int, end: float, run: Run) -> None:
    while time.monotonic() < end:
        run.rss.append((rss_kb(pid), sum(rss_kb(x) for x in tree(pid))))
        await asyncio.sleep(2.0)


async def lone_check(base: str, code: str, text: str) -> float:
    """One check of `text` with the server otherwise idle (the best of two after a warm-up)."""
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        await join(client, code, "lone")
        token = await load_page(client, Run())
        await client.post("/api/step/step1/save", json={"content": text}, headers={"X-Attn-Token": token})
        times = []
        for _ in range(3):  # within the per-learner burst of three
            t0 = time.perf_counter()
            r = await client.post("/api/step/step1/check", json={}, headers={"X-Attn-Token": token})
            assert r.status_code == 200, r.text
            times.append(time.perf_counter() - t0)
        return min(times[1:])


async def verify(base: str, run: Run) -> int:
    """Acknowledged versions missing afterwards (read back through each learner's own link)."""
    lost = 0
    by_link: dict[str, list[tuple[str, str]]] = {}
    for link, vid, text in run.acked:
        by_link.setdefault(link, []).append((vid, text))
    for link, versions in by_link.items():
        async with httpx.AsyncClient(base_url=base, timeout=60) as client:
            await client.get(link.replace(base, ""))
            for vid, text in versions:
                r = await client.get(f"/api/version/{vid}")
                lost += r.status_code != 200 or r.json()["content"] != text
    return lost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learners", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--save-every", type=float, default=15)
    ap.add_argument("--check-every", type=float, default=30)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    args.learners = min(args.learners, MAX_LEARNERS)
    args.seconds = min(args.seconds, MAX_SECONDS)
    exe = Path(sys.executable).with_name("attn-practice")
    data = Path(tempfile.mkdtemp(prefix="attnp-load-"))
    cmd = [str(exe if exe.exists() else shutil.which("attn-practice")), "host", str(data / "class"),
           "--port", "0"] + (["--jobs", str(args.jobs)] if args.jobs else [])
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        lines = [server.stdout.readline().strip() for _ in range(3)]
        base = lines[0].split(" at ")[1].rstrip("/")
        code = lines[2].rsplit("/", 1)[1]
        # the learners check a mix (2 right, 1 wrong: the wrong one is diagnosed, slower);
        # the lone check compared with is the slower of the two, which is what a mix's p95 is
        lone_right = asyncio.run(lone_check(base, code, CORRECT))
        lone_wrong = asyncio.run(lone_check(base, code, WRONG))
        lone = max(lone_right, lone_wrong)
        run = Run()

        async def everyone() -> None:
            end = time.monotonic() + args.seconds
            await asyncio.gather(sample_rss(server.pid, end, run),
                                 *(learner(i, base, code, end, args, run) for i in range(args.learners)))

        t0 = time.monotonic()
        asyncio.run(everyone())
        wall = time.monotonic() - t0
        lost = asyncio.run(verify(base, run))
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)
    target = p(run.waits, 0.95) + 1.5 * lone
    figures = {
        "learners": args.learners, "seconds": round(wall, 1), "cpus": os.cpu_count(),
        "saves": len(run.saves), "saves_failed": run.save_failed, "saves_lost": lost,
        "failures": run.failures, "loadavg_after": Path("/proc/loadavg").read_text().split()[:3],
        "save_p50_ms": round(1000 * p(run.saves, 0.5), 1), "save_p95_ms": round(1000 * p(run.saves, 0.95), 1),
        "page_loads": len(run.pages), "page_p95_ms": round(1000 * p(run.pages, 0.95), 1),
        "checks": len(run.checks), "checks_refused": run.check_refused, "checks_failed": run.check_failed,
        "check_p95_s": round(p(run.checks, 0.95), 2), "queue_wait_p95_s": round(p(run.waits, 0.95), 2),
        "lone_check_right_s": round(lone_right, 2), "lone_check_wrong_s": round(lone_wrong, 2),
        "check_run_p95_s": round(p([c - w for c, w in zip(run.checks, run.waits, strict=True)], 0.95), 2),
        "check_p95_over_wait_plus_1_5_lone": round(p(run.checks, 0.95) / target, 2) if target else None,
        "server_rss_mb_max": round(max((a for a, _ in run.rss), default=0) / 1024, 1),
        "server_and_workers_rss_mb_max": round(max((b for _, b in run.rss), default=0) / 1024, 1),
        "server_rss_mb_median": round(statistics.median([a for a, _ in run.rss] or [0]) / 1024, 1),
    }
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    ok = (lost == 0 and run.save_failed == 0 and figures["save_p95_ms"] < 200
          and figures["page_p95_ms"] < 300 and (figures["check_p95_over_wait_plus_1_5_lone"] or 0) <= 1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
