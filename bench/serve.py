"""Speed of `attn-practice serve`, against the targets of issue 14.

    python bench/serve.py            # 7 repetitions
    python bench/serve.py --quick    # 3

Targets: the page ready < 1 s after the server is up (the URL line printed);
a Check round trip <= the CLI's `check` + 0.1 s; a widget interaction
< 100 ms of server time. The server runs as a learner starts it (the console
script, `--port 0 --no-open`); "page ready" is measured twice: over HTTP (the
page, its script and style, the two API calls it makes before it can be used)
and, when Chromium and chromedriver are installed, in a real browser (until the
page sets `data-ready`). Results go to bench/results-serve.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Served  # noqa: E402

STEPS = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]


def cli() -> list[str]:
    """The console script installed next to this Python (as bench/run.py measures it)."""
    beside = Path(sys.executable).parent / "attn-practice"
    return [str(beside)] if beside.is_file() else [sys.executable, "-m", "attn_practice"]


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def write_correct(folder: Path) -> None:
    """Every core step file holds the whole reference module: each defines its function."""
    source = (ROOT / "reference" / "attention.py").read_text()
    for stem in STEPS:
        (folder / f"{stem}.py").write_text(source)


def ms(seconds: float) -> float:
    return round(seconds * 1000, 1)


def page_over_http(s: Served) -> float:
    t0 = time.perf_counter()
    for path in (f"/?token={s.token}", "/static/app.js", "/static/style.css", "/api/summary",
                 "/api/step/step1"):
        status, _, _ = s.request("GET", path)
        assert status == 200, path
    return time.perf_counter() - t0


def page_in_chromium(s: Served) -> float | None:
    try:
        from browser import browser, find_browser
    except ImportError:
        return None
    if isinstance(find_browser(), str):
        return None
    with browser() as b:
        b.get(f"{s.base}/?token={s.token}")  # the first load warms the browser's own caches
        b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true")
        t0 = time.perf_counter()
        b.get(s.url)
        b.wait_for(lambda d: d.execute_script("return document.body.dataset.ready") == "true",
                   timeout=30)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    reps = 3 if ap.parse_args().quick else 7
    tmp = Path(tempfile.mkdtemp(prefix="attnp-bench-serve-"))
    out: dict = {}

    t0 = time.perf_counter()
    s = Served(["ws", "--port", "0", "--no-open"], tmp)
    out["url_line_s"] = round(time.perf_counter() - t0, 3)
    ws = tmp / "ws"
    try:
        out["page_ready_http_ms"] = ms(page_over_http(s))  # straight after the URL line: the target
        out["page_ready_http_warm_ms"] = ms(statistics.median(page_over_http(s) for _ in range(reps)))
        chromium = page_in_chromium(s)
        out["page_ready_chromium_ms"] = ms(chromium) if chromium is not None else None

        widgets: dict[str, list[float]] = {}
        trips: dict[str, list[float]] = {}

        def interact(source: str) -> None:
            for i in range(reps * 3):
                for name, path in (("example", f"/api/widget/example?q=1,{i / 10},1,0"),
                                   ("scale", f"/api/widget/scale?d_k={2 ** (2 + i % 9)}"),
                                   ("heatmap", "/api/widget/heatmap")):
                    t = time.perf_counter()
                    status, d = s.get_json(path)
                    trips.setdefault(f"{name}_{d['source']}", []).append(time.perf_counter() - t)
                    assert status == 200 and d["source"] == source, (path, d.get("label"))
                    widgets.setdefault(f"{name}_{d['source']}", []).append(d["server_ms"])

        interact("reference")  # the stubs: every stage falls back to the reference, and says so
        write_correct(ws)
        s.post_json("/api/step/step1/check")  # the engine's first run pays its imports once
        rounds = []
        for _ in range(reps):
            t = time.perf_counter()
            status, r = s.post_json("/api/step/step1/check")
            rounds.append(time.perf_counter() - t)
            assert status == 200 and r["passed"], r
        cli_runs = [timed([*cli(), "check", "step1"], cwd=ws) for _ in range(reps)]
        out["check_round_trip_ms"] = ms(statistics.median(rounds))
        out["cli_check_ms"] = ms(statistics.median(cli_runs))
        out["check_minus_cli_ms"] = round(out["check_round_trip_ms"] - out["cli_check_ms"], 1)
        for step in ("step2", "step3", "step4", "step5"):
            s.post_json(f"/api/step/{step}/check")
        interact("yours")  # the learner's own functions, stage by stage
        out["widget_server_ms_median"] = {k: round(statistics.median(v), 1) for k, v in widgets.items()}
        out["widget_server_ms_max"] = {k: round(max(v), 1) for k, v in widgets.items()}
        out["widget_round_trip_ms_median"] = {k: ms(statistics.median(v)) for k, v in trips.items()}
    finally:
        s.stop()
    out["targets"] = {
        "page_ready_under_1s": out["page_ready_http_ms"] < 1000 and (
            out["page_ready_chromium_ms"] is None or out["page_ready_chromium_ms"] < 1000),
        "check_within_cli_plus_100ms": out["check_minus_cli_ms"] <= 100,
        "widget_server_under_100ms": all(v < 100 for v in out["widget_server_ms_median"].values()),
    }
    (HERE / "results-serve.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
