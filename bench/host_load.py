"""Load on a hosted class: N simulated learners on loopback, each saving and checking (issues 23, 40).

    python bench/host_load.py [--learners 200] [--seconds 300] [--save-every 15] [--check-every 30]
                              [--no-widgets] [--restart-at S] [--out bench/host_load.json]

Starts `attn-practice host` (the console script, a fresh data folder, SQLite,
its default check workers), measures a lone check of a mistake first (the
median of five checks of wrong steps 1-5 on the idle server), then runs the
learners: each joins through the join link, opens the page, saves all five
steps, then saves one of steps 1-5 every ~save-every s (every other save a
known mistake, so half the code is wrong) and checks the step it saved last
every ~check-every s (jittered), until the time is up; after each check it
asks for the three widgets, as the page does (they share the check workers).
With `--restart-at S` (issue 37) the server is killed with SIGKILL S seconds
into the run and started again on the same port and data folder, as an
operator's crash and restart would: learners keep going as their pages do
(a save the server did not take is sent again until it is stored, the page
reloaded after the reconnect), and every check cut by the kill must have a
result afterwards (it is run again on start). The run stops by itself. Bounded: learners, time and per-request timeouts
are all capped. Prints (and writes with --out) the figures:

- saves: count, failed, lost (acknowledged versions missing afterwards), p50/p95 ms;
- the same p95s once every learner has joined and saved their first files (`settled_*`):
  the start is a burst (every learner joins and saves five files within ~10 s);
- page loads (the lesson page + summary + step data): p95 ms;
- checks: count, p95 latency including the queue, p95 queue wait (as the server
  reported it), the lone check of a mistake, and `check_p95_over_lone` (issue 40: <= 3);
- widgets: count, p95, how many fell back to the reference;
- the restart: how long the server was away, saves resent, checks cut by the kill and
  how many of them have a result afterwards;
- the server's resident memory (its own process, and with its check workers) and open
  file descriptors, sampled; the load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
IMPL = ROOT / "tests" / "implementations"
STEPS = ("step1", "step2", "step3", "step4", "step5")
#: a right and a wrong (a catalogued mistake) version of each core step
CORRECT = {s: sorted((IMPL / s).glob("correct_*.py"))[0].read_text() for s in STEPS}
WRONG = {s: sorted((IMPL / s).glob("wrong_*.py"))[1].read_text() for s in STEPS}
WIDGETS = ("/api/widget/heatmap", "/api/widget/example", "/api/widget/scale?d_k=64")
MAX_LEARNERS, MAX_SECONDS = 1000, 1800


RETRIED = {"count": 0}


class Client(httpx.AsyncClient):
    """A browser's client: a request on a kept-alive connection the server closed before
    answering is sent again once on a new one (as browsers do); counted in the figures."""

    async def send(self, request: httpx.Request, **kw):  # type: ignore[override]
        try:
            return await super().send(request, **kw)
        except (httpx.RemoteProtocolError, httpx.ReadError) as cut:
            RETRIED["count"] += 1
            try:
                return await super().send(request, **kw)
            except httpx.ConnectError:
                raise cut from None  # the server is gone (a restart): the first error is the news


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


def _by_kind(kinds: list[tuple[str, str, float]]) -> dict[tuple[str, str], list[float]]:
    out: dict[tuple[str, str], list[float]] = {}
    for step, status, seconds in kinds:
        out.setdefault((step, status), []).append(seconds)
    return out


def machine_busy_s() -> float:
    """CPU seconds every core of this machine has spent busy since boot (/proc/stat)."""
    fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """A process's own CPU seconds (user + system; not its children's)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """This bench's CPU seconds (the load generator's share of the machine)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tree(pid: int) -> list[int]:
    out = [pid]
    for child in os.popen(f"pgrep -P {pid}").read().split():
        out += tree(int(child))
    return out


class Run:
    def __init__(self) -> None:
        self.saves: list[float] = []
        #: when each save, page load and check ended (monotonic): the figures once every
        #: learner has joined and saved their first files are given apart (`settled`)
        self.save_ends: list[float] = []
        self.page_ends: list[float] = []
        self.check_ends: list[float] = []
        self.ready = 0  # learners past their join and first five saves
        self.settled = 0.0  # monotonic: when the last of them got there
        self.started = 0.0
        self.save_failed = 0
        self.failures: dict[str, int] = {}  # what the failed requests got (status or error)
        self.acked: list[tuple[str, str, str]] = []  # (resume link, version id, text)
        self.pages: list[float] = []
        self.checks: list[float] = []
        self.waits: list[float] = []
        self.check_refused = 0
        self.check_failed = 0
        self.check_statuses: dict[str, int] = {}
        #: (step, status, seconds run, the queue's wait taken off) of every check answered
        self.check_kinds: list[tuple[str, str, float]] = []
        self.join_failed = 0
        self.widgets: list[float] = []
        self.widget_fallbacks = 0
        self.widget_failed = 0
        self.rss: list[tuple[int, int]] = []
        self.fds: list[int] = []
        self.save_resent = 0
        self.checks_unsent = 0  # checks pressed while the server was down (never reached it)
        self.cut_checks: list[tuple[str, str]] = []  # (resume link, step) of checks cut by the kill
        self.cut_how: dict[tuple[str, str], str] = {}  # how each was cut, and when (for the note)
        self.killed_at = 0.0  # perf_counter of the SIGKILL
        self.away_until = 0.0  # monotonic: the server is being restarted until then (0: not)
        self.away_s = 0.0


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
    run.page_ends.append(time.monotonic())
    return re.search(r'name="attnp-token" content="([^"]+)"', page.text).group(1)


async def save(client: httpx.AsyncClient, headers: dict, link: str, step: str, text: str,
               run: Run) -> bool:
    t0 = time.perf_counter()
    try:
        r = await client.post(f"/api/step/{step}/save", json={"content": text}, headers=headers)
        while r.status_code >= 500 and restarting(run):
            await asyncio.sleep(0.5)  # the page keeps the text and sends it again
            run.save_resent += 1
            r = await client.post(f"/api/step/{step}/save", json={"content": text}, headers=headers)
    except httpx.HTTPError as exc:
        if restarting(run):  # the server is away: the page keeps the text and sends it again
            run.save_resent += 1
            await asyncio.sleep(0.5)
            return await save(client, headers, link, step, text, run)
        kind = f"save {type(exc).__name__}"
        run.save_failed += 1
        run.failures[kind] = run.failures.get(kind, 0) + 1
        return False
    if r.status_code != 200:
        run.save_failed += 1
        run.failures[f"save {r.status_code}"] = run.failures.get(f"save {r.status_code}", 0) + 1
        return False
    run.saves.append(time.perf_counter() - t0)
    run.save_ends.append(time.monotonic())
    run.acked.append((link, r.json()["version"], text))
    return True


async def widgets(client: httpx.AsyncClient, run: Run) -> None:
    """The three widgets, as the page asks for them after a check (one at a time per learner)."""
    for url in WIDGETS:
        t0 = time.perf_counter()
        try:
            r = await client.get(url)
        except httpx.HTTPError:
            run.widget_failed += 1
            continue
        if r.status_code != 200:
            run.widget_failed += 1
            continue
        run.widgets.append(time.perf_counter() - t0)
        label = json.dumps(r.json().get("label", ""))
        run.widget_fallbacks += "took longer" in label or "could not compute" in label


def cut_when(run: Run, sent: float) -> str:
    """When a cut check was sent and failed, in seconds from the kill."""
    return f"(sent {sent - run.killed_at:+.2f} s, failed {time.perf_counter() - run.killed_at:+.2f} s from the kill)"


def restarting(run: Run) -> bool:
    """Whether the server is being restarted now (or was a moment ago): a failed request is then
    the restart's, and a page sends it again."""
    return run.away_until > 0 and time.monotonic() < run.away_until + 30


def address(i: int, addresses: int) -> str:
    """Learner i's source address: 127.0.0.1 for all (a lab behind one NAT), or one of
    127.0.0.2.. (a lab whose computers each have their own)."""
    return "127.0.0.1" if addresses <= 1 else f"127.0.{2 + i % addresses // 250}.{2 + i % addresses % 250}"


async def learner(i: int, base: str, code: str, end: float, args: argparse.Namespace, run: Run) -> None:
    rnd = random.Random(i)
    # plain HTTP on loopback: no TLS context (loading the CA store for each of 200 clients
    # cost the bench seconds of CPU in the first seconds, beside the server it measures)
    transport = httpx.AsyncHTTPTransport(local_address=address(i, args.addresses), verify=False)
    async with Client(base_url=base, timeout=120, transport=transport, verify=False) as client:
        await asyncio.sleep(rnd.uniform(0, min(args.save_every, 10)))  # not all at the same instant
        try:
            link, _ = await join(client, code, f"learner {i}")
            token = await load_page(client, run)
        except (httpx.HTTPError, AttributeError) as exc:  # AttributeError: no link in the answer
            kind = f"join {type(exc).__name__}"
            run.failures[kind] = run.failures.get(kind, 0) + 1
            run.join_failed += 1
            return
        headers = {"X-Attn-Token": token}
        for s in STEPS:  # a learner who has written every step (right) so far
            await save(client, headers, link, s, CORRECT[s], run)
        run.ready += 1
        if run.ready == args.learners:
            run.settled = time.monotonic()
        next_save = time.monotonic() + rnd.uniform(0, args.save_every)
        next_check = time.monotonic() + rnd.uniform(0, args.check_every)
        n = 0
        step = rnd.choice(STEPS)
        while time.monotonic() < end:
            now = time.monotonic()
            if now >= next_save:
                step = rnd.choice(STEPS)
                text = (WRONG[step] if n % 2 else CORRECT[step]) + f"\n# save {n}\n"
                await save(client, headers, link, step, text, run)
                n += 1
                next_save = now + args.save_every * rnd.uniform(0.8, 1.2)
                if n % 10 == 0:  # a reload now and then
                    try:
                        await load_page(client, run)
                    except (httpx.HTTPError, AttributeError):
                        if not restarting(run):
                            raise
                        await reload_after_restart(client, run)
            elif now >= next_check:
                t0 = time.perf_counter()
                try:
                    r = await client.post(f"/api/step/{step}/check", json={}, headers=headers)
                    if r.status_code == 200:
                        run.checks.append(time.perf_counter() - t0)
                        run.check_ends.append(time.monotonic())
                        body = r.json()
                        run.waits.append(float(body.get("waited", 0.0)))
                        status = str(body.get("status"))
                        run.check_statuses[status] = run.check_statuses.get(status, 0) + 1
                        run.check_kinds.append((step, status, run.checks[-1] - run.waits[-1]))
                        if status == "error":
                            run.check_failed += 1
                    elif r.status_code == 429:
                        run.check_refused += 1
                    elif r.status_code >= 500 and restarting(run):
                        run.cut_checks.append((link, step))
                        run.cut_how[(link, step)] = f"HTTP {r.status_code} {cut_when(run, t0)}"
                    else:
                        run.check_failed += 1
                except httpx.HTTPError as exc:
                    if restarting(run):
                        # Never reached a live server: refused, or sent after the kill on a kept-alive
                        # connection (its reset reads as a ReadError). The page says so and keeps the
                        # last report; only a check the server had taken runs again on start.
                        if isinstance(exc, httpx.ConnectError) or t0 > run.killed_at > 0:
                            run.checks_unsent += 1
                        else:  # cut by the kill: run again on start, checked afterwards
                            run.cut_checks.append((link, step))
                            run.cut_how[(link, step)] = f"{type(exc).__name__} {cut_when(run, t0)}"
                        await reload_after_restart(client, run)
                    else:
                        run.check_failed += 1
                if args.widgets:
                    await widgets(client, run)
                next_check = time.monotonic() + args.check_every * rnd.uniform(0.8, 1.2)
            else:
                await asyncio.sleep(min(next_save, next_check) - now)


async def reload_after_restart(client: httpx.AsyncClient, run: Run) -> None:
    """The page reconnects and reloads once the server answers again."""
    while restarting(run):
        try:
            await load_page(client, run)
            return
        except (httpx.HTTPError, AttributeError):
            await asyncio.sleep(0.5)


def open_fds(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return 0


async def sample_rss(holder: dict, end: float, run: Run) -> None:
    while time.monotonic() < end:
        pid = holder["proc"].pid
        run.rss.append((rss_kb(pid), sum(rss_kb(x) for x in tree(pid))))
        run.fds.append(open_fds(pid))
        await asyncio.sleep(2.0)


async def lone_check(base: str, code: str) -> tuple[float, list[float]]:
    """A lone check of a mistake on the idle server: the median of checks of wrong steps 1-5
    (after one warm-up check), each right again before the next."""
    async with Client(base_url=base, timeout=120, verify=False) as client:
        link, _ = await join(client, code, "lone")
        token = await load_page(client, Run())
        headers = {"X-Attn-Token": token}
        for s in STEPS:
            await save(client, headers, link, s, CORRECT[s], Run())
        times = []
        for s in ("step1", *STEPS):
            await save(client, headers, link, s, WRONG[s], Run())
            while True:
                t0 = time.perf_counter()
                r = await client.post(f"/api/step/{s}/check", json={}, headers=headers)
                if r.status_code != 429:
                    break
                await asyncio.sleep(float(r.headers.get("retry-after", "1")))
            assert r.status_code == 200 and r.json()["status"] == "failed", r.text
            times.append(time.perf_counter() - t0)
            await save(client, headers, link, s, CORRECT[s], Run())
        return statistics.median(times[1:]), times[1:]


async def signed_in(base: str, link: str) -> Client:
    """A client signed in through a learner's resume link ("Continue as ...?" is a POST)."""
    client = Client(base_url=base, timeout=60, verify=False)
    asked = await client.get(link.replace(base, ""))
    csrf = re.search(r'name="csrf" value="([^"]+)"', asked.text).group(1)
    await client.post(link.replace(base, ""), data={"csrf": csrf})
    return client


async def cut_checks_with_results(base: str, run: Run, within: float = 240.0) -> int:
    """Of the checks the kill cut, how many steps have a result afterwards (the check was run
    again on start, or a later one of the learner's). All are watched at once, for at most
    `within` seconds in all: the re-runs may still be in the queue."""
    deadline = time.monotonic() + within
    gate = asyncio.Semaphore(20)

    async def has_result(link: str, step: str) -> bool:
        async with gate:
            client = await signed_in(base, link)
            try:
                while True:
                    body = (await client.get(f"/api/step/{step}")).json()
                    if body.get("last_report"):
                        return True
                    if time.monotonic() > deadline:
                        return False
                    await asyncio.sleep(1.0)
            finally:
                await client.aclose()

    cut = sorted(set(run.cut_checks))
    found = await asyncio.gather(*(has_result(link, step) for link, step in cut))
    for (link, step), ok in zip(cut, found, strict=True):
        if not ok:
            say(f"no result for {step} of learner {link.rsplit('/', 1)[-1][:8]}...: {run.cut_how.get((link, step))}")
    return sum(found)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def restart(holder: dict, cmd: list[str], at: float, run: Run) -> None:
    """SIGKILL the server `at` seconds in and start it again on the same port and data folder."""
    await asyncio.sleep(at)
    say("SIGKILL to the server and its workers")
    run.killed_at = time.perf_counter()
    old = holder["proc"]
    run.away_until = time.monotonic() + 3600
    t0 = time.monotonic()
    for pid in reversed(tree(old.pid)):  # the server and its check workers, as a crash would
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    await asyncio.to_thread(old.wait)
    new = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    await asyncio.to_thread(new.stdout.readline)  # "Hosting ... at": listening
    holder["proc"] = new
    run.away_s = time.monotonic() - t0
    run.away_until = time.monotonic()
    say(f"server back after {run.away_s:.1f} s")


async def verify(base: str, run: Run) -> int:
    """Acknowledged versions missing afterwards (read back through each learner's own link,
    twenty learners at a time)."""
    by_link: dict[str, list[tuple[str, str]]] = {}
    for link, vid, text in run.acked:
        by_link.setdefault(link, []).append((vid, text))
    gate = asyncio.Semaphore(20)

    async def missing(link: str, versions: list[tuple[str, str]]) -> int:
        async with gate:
            client = await signed_in(base, link)
            try:
                lost = 0
                for vid, text in versions:
                    r = await client.get(f"/api/version/{vid}")
                    lost += r.status_code != 200 or r.json()["content"] != text
                return lost
            finally:
                await client.aclose()

    return sum(await asyncio.gather(*(missing(link, v) for link, v in by_link.items())))


def say(text: str) -> None:
    """A progress line on stderr (the figures go to stdout at the end)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


async def progress(end: float, run: Run, every: float = 15.0) -> None:
    """Where the run stands, every `every` seconds: a long run is never silent."""
    seen = 0
    while time.monotonic() < end:
        await asyncio.sleep(min(every, max(0.0, end - time.monotonic())))
        away = " (server away)" if run.away_until > time.monotonic() else ""
        recent, seen = run.checks[seen:], len(run.checks)
        say(f"saves {len(run.saves)} (failed {run.save_failed}), checks {len(run.checks)} "
            f"(p95 of the last {len(recent)} {p(recent, 0.95):.2f} s, refused {run.check_refused}, "
            f"failed {run.check_failed}), widgets {len(run.widgets)}, page loads "
            f"{len(run.pages)}, cut by the restart {len(run.cut_checks)}{away}")


def settled(run: Run) -> dict[str, Any]:
    """The p95s once every learner had joined and saved their first five files: the lab in
    its stride, apart from the first seconds' burst (200 joins and 1,000 saves at once)."""
    if not run.settled:
        return {"settled_after_s": None}

    def after(values: list[float], ends: list[float]) -> list[float]:
        return [v for v, t in zip(values, ends, strict=True) if t >= run.settled]

    checks = after(run.checks, run.check_ends)
    return {"settled_after_s": round(run.settled - run.started, 1),
            "settled_save_p95_ms": round(1000 * p(after(run.saves, run.save_ends), 0.95), 1),
            "settled_page_p95_ms": round(1000 * p(after(run.pages, run.page_ends), 0.95), 1),
            "settled_checks": len(checks), "settled_check_p95_s": round(p(checks, 0.95), 3)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--learners", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--save-every", type=float, default=15)
    ap.add_argument("--check-every", type=float, default=30)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--no-widgets", dest="widgets", action="store_false",
                    help="checks only (the page asks for its three widgets after each check)")
    ap.add_argument("--addresses", type=int, default=1,
                    help="source addresses the learners come from (1: all from 127.0.0.1, as behind one NAT)")
    ap.add_argument("--restart-at", type=float, default=None, metavar="S",
                    help="SIGKILL the server S seconds in and start it again (default: half-way; 0: never)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    args.learners = min(args.learners, MAX_LEARNERS)
    args.seconds = min(args.seconds, MAX_SECONDS)
    exe = Path(sys.executable).with_name("attn-practice")
    data = Path(tempfile.mkdtemp(prefix="attnp-load-"))
    restart_at = args.seconds / 2 if args.restart_at is None else args.restart_at
    cmd = [str(exe if exe.exists() else shutil.which("attn-practice")), "host", str(data / "class"),
           "--port", str(free_port())] + (["--jobs", str(args.jobs)] if args.jobs else [])
    load_before = Path("/proc/loadavg").read_text().split()[:3]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    holder = {"proc": server}
    try:
        lines = [server.stdout.readline().strip() for _ in range(3)]
        base = lines[0].split(" at ")[1].rstrip("/")
        code = lines[2].rsplit("/", 1)[1]
        say(f"server up at {base}; a lone check of each wrong step first")
        lone, lone_each = asyncio.run(lone_check(base, code))
        say(f"lone check of a mistake {lone:.3f} s; {args.learners} learners for {args.seconds:g} s")
        run = Run()

        async def everyone() -> None:
            end = time.monotonic() + args.seconds
            extra = [restart(holder, cmd, restart_at, run)] if 0 < restart_at < args.seconds else []
            await asyncio.gather(sample_rss(holder, end, run), progress(end, run), *extra,
                                 *(learner(i, base, code, end, args, run) for i in range(args.learners)))

        busy0, own0, server0 = machine_busy_s(), own_cpu_s(), process_cpu_s(server.pid)
        t0 = run.started = time.monotonic()
        asyncio.run(everyone())
        wall = time.monotonic() - t0
        busy, own = machine_busy_s() - busy0, own_cpu_s() - own0
        server_cpu = process_cpu_s(holder["proc"].pid) - (server0 if holder["proc"] is server else 0.0)
        load_after = Path("/proc/loadavg").read_text().split()[:3]
        say(f"run over in {wall:.0f} s; reading back {len(run.acked)} acknowledged saves")
        lost = asyncio.run(verify(base, run))
        say(f"{lost} lost; waiting for the results of {len(set(run.cut_checks))} checks cut by the kill")
        cut_done = asyncio.run(cut_checks_with_results(base, run))
        server = holder["proc"]
        fd_limit = next((line.split()[3:5] for line in Path(f"/proc/{server.pid}/limits").read_text()
                         .splitlines() if line.startswith("Max open files")), None)
    finally:
        server = holder["proc"]
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(data, ignore_errors=True)
    check_p95 = p(run.checks, 0.95)
    figures = {
        "learners": args.learners, "seconds": round(wall, 1), "cpus": os.cpu_count(),
        "widgets_asked": args.widgets,
        "loadavg_before": load_before, "loadavg_after": load_after,
        "source_addresses": args.addresses, "joins_failed": run.join_failed,
        "saves": len(run.saves), "saves_failed": run.save_failed, "saves_lost": lost,
        "failures": run.failures,
        "save_p50_ms": round(1000 * p(run.saves, 0.5), 1), "save_p95_ms": round(1000 * p(run.saves, 0.95), 1),
        "page_loads": len(run.pages), "page_p95_ms": round(1000 * p(run.pages, 0.95), 1),
        "checks": len(run.checks), "checks_refused": run.check_refused, "checks_failed": run.check_failed,
        "check_statuses": run.check_statuses,
        "check_p50_s": round(p(run.checks, 0.5), 3), "check_p95_s": round(check_p95, 3),
        "queue_wait_p95_s": round(p(run.waits, 0.95), 3),
        "check_run_p95_s": round(p([c - w for c, w in zip(run.checks, run.waits, strict=True)], 0.95), 3),
        "lone_check_of_a_mistake_s": round(lone, 3), "lone_checks_s": [round(x, 3) for x in lone_each],
        # where the machine's time went: everything busy but this bench (the load generator) is
        # the class's; the server process's own share apart (the rest: check workers, their
        # sandboxes, widgets); per check and per learner-minute
        "machine_busy_cpu_s": round(busy, 1), "bench_cpu_s": round(own, 1),
        "server_process_cpu_s": round(server_cpu, 1),
        "class_cpu_ms_per_check": round(1000 * (busy - own) / max(1, len(run.checks)), 1),
        "workers_cpu_ms_per_check": round(1000 * (busy - own - server_cpu) / max(1, len(run.checks)), 1),
        "server_cpu_ms_per_learner_minute": round(1000 * server_cpu / max(1, args.learners * wall / 60), 1),
        "check_p95_over_lone": round(check_p95 / lone, 2) if lone else None,
        # which checks run longest under load (queue wait taken off): step by step, right or wrong
        "check_run_p50_p95_s_by_step_and_status": {
            f"{step} {status}": [round(p(xs, 0.5), 3), round(p(xs, 0.95), 3), len(xs)]
            for (step, status), xs in sorted(_by_kind(run.check_kinds).items())},
        "widgets": len(run.widgets), "widget_p95_s": round(p(run.widgets, 0.95), 3),
        "widget_fallbacks": run.widget_fallbacks, "widgets_failed": run.widget_failed,
        "server_rss_mb_max": round(max((a for a, _ in run.rss), default=0) / 1024, 1),
        "server_and_workers_rss_mb_max": round(max((b for _, b in run.rss), default=0) / 1024, 1),
        "server_rss_mb_median": round(statistics.median([a for a, _ in run.rss] or [0]) / 1024, 1),
        "requests_resent_after_disconnect": RETRIED["count"],
        "restart_at_s": restart_at or None, "restart_away_s": round(run.away_s, 2),
        "saves_resent_during_restart": run.save_resent, "checks_cut_by_restart": len(set(run.cut_checks)),
        "checks_pressed_while_down": run.checks_unsent,
        "cut_checks_with_a_result_after": cut_done,
        "server_open_fds_max": max(run.fds, default=0), "server_fd_limit_soft_hard": fd_limit,
    }
    figures.update(settled(run))
    text = json.dumps(figures, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    ok = (lost == 0 and cut_done == len(set(run.cut_checks)) and run.save_failed == 0 and run.join_failed == 0 and run.check_failed == 0 and figures["save_p95_ms"] < 200
          and figures["page_p95_ms"] < 300 and (figures["check_p95_over_lone"] or 99) <= 3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
