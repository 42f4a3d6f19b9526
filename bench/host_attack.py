"""A learner's page and /healthz while one learner and one outsider attack at once (issue 35).

    python bench/host_attack.py [--seconds 15] [--out bench/host_attack.json]

Starts `attn-practice host` (the console script, a fresh data folder, SQLite,
one check worker) on loopback and measures, from an honest learner's browser,
the latency of their page (the lesson page, then their summary, as a reload
does) and of /healthz, first on the quiet class, then for the same time while

- one signed-in learner whose code sleeps keeps sixty widget requests open,
  floods hints and saves, and opens event streams;
- one outsider (no account) holds 400 slowloris connections, trickles
  request bodies, and guesses the instructor's password and join codes.

Prints and writes (beside this file by default) the medians and p95s of both
phases and their ratios (attacked over quiet); the attackers run in a process of
their own (their threads never hold the measuring one's GIL); what each attack got back is
counted too. Bounded: attack sizes and the time are capped, loopback only,
and the server is stopped by its process id at the end.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
MAX_SECONDS = 120
SLOWLORIS = 400
WIDGET_FLOOD = 60
PASSWORD = "the instructor's password"
SLEEPY = ("import time\n\nimport numpy as np\n\n\ndef dot_scores(Q, K):\n    time.sleep(6)\n"
          "    return np.einsum('...qd,...kd->...qk', Q, K)\n")


def console_script() -> str:
    beside = Path(sys.executable).with_name("attn-practice")
    return str(beside) if beside.exists() else (shutil.which("attn-practice") or "attn-practice")


class Target:
    """Where the class answers: enough to make clients and join (picklable, for the attackers)."""

    def __init__(self, base: str, join_code: str):
        self.base, self.join_code = base, join_code
        self.port = int(base.rsplit(":", 1)[1])

    def client(self, cookies: httpx.Cookies | None = None) -> httpx.Client:
        c = httpx.Client(base_url=self.base, timeout=60, follow_redirects=False)
        if cookies is not None:
            c.cookies = cookies
        return c

    def join(self, name: str) -> tuple[httpx.Client, str]:
        c = self.client()
        page = c.get(f"/join/{self.join_code}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)  # type: ignore[union-attr]
        c.post(f"/join/{self.join_code}", data={"csrf": csrf, "display_name": name})
        token = re.search(r'name="attnp-token" content="([^"]+)"', c.get("/").text).group(1)  # type: ignore[union-attr]
        return c, token


class Host(Target):
    def __init__(self, data: Path):
        subprocess.run([console_script(), "host", "set-password", str(data)], input=f"{PASSWORD}\n" * 2,
                       text=True, capture_output=True, check=True, timeout=120)
        self.err = open(data.parent / "host.err", "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen([console_script(), "host", str(data), "--port", "0", "--jobs", "1"],
                                     stdout=subprocess.PIPE, stderr=self.err, text=True,
                                     start_new_session=True)
        lines = [self.proc.stdout.readline() for _ in range(3)]  # type: ignore[union-attr]
        super().__init__(lines[0].split(" at ", 1)[1].strip().rstrip("/"),
                         lines[2].strip().rsplit("/", 1)[1])

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.err.close()


RETRIED = Counter()


def get(client: httpx.Client, path: str) -> int:
    """A GET as a browser sends it: once more on a new connection when a kept-alive one was
    closed under it (counted: RETRIED)."""
    try:
        return client.get(path).status_code
    except httpx.TransportError:
        RETRIED[path] += 1
        return client.get(path).status_code


def measure(host: Host, learner: httpx.Client, seconds: float) -> dict[str, list[float]]:
    """The honest learner reloads their page and an outsider probes /healthz, in turn."""
    probe = host.client()
    out: dict[str, list[float]] = {"page": [], "healthz": []}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t = time.perf_counter()
        ok = get(learner, "/") == 200 and get(learner, "/api/summary") == 200
        out["page"].append((time.perf_counter() - t) * 1000 if ok else float("inf"))
        t = time.perf_counter()
        ok = get(probe, "/healthz") == 200
        out["healthz"].append((time.perf_counter() - t) * 1000 if ok else float("inf"))
        time.sleep(0.05)
    probe.close()
    return out


def summary(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"n": len(s), "median_ms": round(statistics.median(s), 2),
            "p95_ms": round(s[max(0, int(len(s) * 0.95) - 1)], 2), "failed": sum(x == float("inf") for x in s)}


class Attack:
    """Both attackers at once, until `stop` is set; what they got back is counted."""

    def __init__(self, host: Target):
        self.host, self.stop, self.got = host, threading.Event(), Counter()
        self.lock = threading.Lock()
        self.threads: list[threading.Thread] = []

    def count(self, key: str) -> None:
        with self.lock:
            self.got[key] += 1

    def start(self) -> None:
        learner, token = self.host.join("Attacker")
        learner.post("/api/step/step1/save", json={"content": SLEEPY}, headers={"X-Attn-Token": token})
        flood = httpx.Client(base_url=self.host.base, timeout=60, cookies=learner.cookies,
                             limits=httpx.Limits(max_connections=WIDGET_FLOOD + 4))  # thread-safe
        jobs = [lambda: self.widgets(flood), lambda: self.writes(learner.cookies, token),
                lambda: self.streams(learner.cookies), self.slowloris, self.guesses]
        self.threads = [threading.Thread(target=j, daemon=True) for j in jobs]
        for t in self.threads:
            t.start()

    def widgets(self, client: httpx.Client) -> None:

        def one(i: int) -> None:
            while not self.stop.is_set():
                try:
                    r = client.get("/api/widget/scale", params={"d_k": str(8 + i)})
                    self.count(f"widget {r.status_code}")
                except httpx.HTTPError:
                    self.count("widget error")

        with ThreadPoolExecutor(WIDGET_FLOOD) as pool:
            list(pool.map(one, range(WIDGET_FLOOD)))

    def writes(self, cookies: httpx.Cookies, token: str) -> None:
        c = self.host.client(cookies)
        while not self.stop.is_set():
            for action in ("hint", "save"):
                try:
                    r = c.post(f"/api/step/step2/{action}", json={"content": "x = 1\n"},
                               headers={"X-Attn-Token": token})
                    self.count(f"{action} {r.status_code}")
                except httpx.HTTPError:
                    self.count(f"{action} error")

    def streams(self, cookies: httpx.Cookies) -> None:
        held = []
        for _ in range(50):
            c = self.host.client(cookies)
            cm = c.stream("GET", "/api/events")
            try:
                r = cm.__enter__()
            except httpx.HTTPError:
                self.count("stream error")
                c.close()
                continue
            self.count(f"stream {r.status_code}")
            held.append((c, cm))
        self.stop.wait()
        for c, cm in held:
            try:
                cm.__exit__(None, None, None)
            except httpx.HTTPError:
                pass
            c.close()

    def slowloris(self) -> None:
        socks: list[socket.socket] = []
        body = (b"POST /teach/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded"
                b"\r\nContent-Length: 9999\r\n\r\n")
        while not self.stop.is_set():
            while len(socks) < SLOWLORIS:
                try:
                    s = socket.create_connection(("127.0.0.1", self.host.port), timeout=5)
                    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n" if len(socks) % 10 else body)
                    socks.append(s)
                except OSError:
                    self.count("slowloris connect refused")
                    break
            alive = []
            for s in socks:
                try:
                    s.sendall(b"X-A: b\r\n")
                    alive.append(s)
                except OSError:
                    self.count("slowloris closed by server")
                    s.close()
            socks = alive
            self.stop.wait(1.0)
        for s in socks:
            s.close()

    def guesses(self) -> None:
        c = self.host.client()
        page = c.get("/teach")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        i = 0
        while not self.stop.is_set():
            i += 1
            try:
                r = c.post("/teach/login", data={"csrf": csrf.group(1) if csrf else "",
                                                 "password": f"guess{i}"})
                self.count(f"password {r.status_code}")
                r = c.get(f"/join/guess{i}")
                self.count(f"join code {r.status_code}")
            except httpx.HTTPError:
                self.count("guess error")

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(timeout=90)


def attack_process(base: str, join_code: str, stop: Any, got: Any) -> None:
    """Both attackers, in a process of their own, until `stop`; then what they got."""
    attack = Attack(Target(base, join_code))
    attack.start()
    got.put("started")
    stop.wait()
    attack.finish()
    got.put(dict(attack.got))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--out", type=Path, default=HERE / "host_attack.json")
    args = ap.parse_args()
    seconds = min(args.seconds, MAX_SECONDS)
    with tempfile.TemporaryDirectory(prefix="attn-attack-") as tmp:
        host = Host(Path(tmp) / "class")
        try:
            learner, _ = host.join("Honest")
            measure(host, learner, 2.0)  # warm up
            quiet = measure(host, learner, seconds)
            retried_quiet = sum(RETRIED.values())
            mp = multiprocessing.get_context("spawn")
            stop, got = mp.Event(), mp.Queue()
            attacker = mp.Process(target=attack_process, args=(host.base, host.join_code, stop, got))
            attacker.start()  # a process of its own: the attackers' threads never hold our GIL
            assert got.get(timeout=120) == "started"
            time.sleep(3.0)  # let every attack be under way
            attacked = measure(host, learner, seconds)
            stop.set()
            attack_got = got.get(timeout=120)
            attacker.join(timeout=60)
        finally:
            host.stop()
    q = {k: summary(v) for k, v in quiet.items()}
    a = {k: summary(v) for k, v in attacked.items()}
    result = {
        "seconds_per_phase": seconds,
        "quiet": q, "attacked": a,
        "ratios": {f"{k}_{m}": round(a[k][m] / q[k][m], 2) if q[k][m] else None
                   for k in q for m in ("median_ms", "p95_ms")},
        "honest_requests_resent": {"quiet": retried_quiet,
                                   "attacked": sum(RETRIED.values()) - retried_quiet},
        "attacks_got": dict(sorted(attack_got.items())),
        "attack": {"widget_requests_open": WIDGET_FLOOD, "slowloris_connections": SLOWLORIS,
                   "event_streams_tried": 50, "writes": "hints and saves in a loop",
                   "guesses": "passwords and join codes in a loop"},
    }
    text = json.dumps(result, indent=2)
    print(text)
    args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
