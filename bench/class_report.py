"""How long `attn-practice report` takes on a big class, and how big the page is.

    python bench/class_report.py [N]      # N submissions (default 5000)

The class is the fixture class (`tests/data/class/*.json`, eight real
reports, seven of them failing: a pessimistic mix) repeated under new
labels. Target (issue 15): a 5,000-submission class renders in a few
seconds and the page stays under ~5 MB.
"""

from __future__ import annotations

import copy
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "class"


def main(n: int = 5000) -> None:
    reports: list[dict] = []
    for f in sorted(DATA.glob("*.json")):
        reports += json.loads(f.read_text(encoding="utf-8"))
    big = []
    for i in range(n):
        r = copy.deepcopy(reports[i % len(reports)])
        r["submission"] = f"student-{i:05d}-{r['submission']}"
        big.append(r)
    exe = Path(sys.executable).with_name("attn-practice")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = Path(tmp) / "results.json", Path(tmp) / "class.html"
        src.write_text(json.dumps(big), encoding="utf-8")
        times = []
        for fmt in ("html", "html", "html", "json"):
            t = time.perf_counter()
            subprocess.run([str(exe), "report", str(src), "--format", fmt, "--out",
                            str(out.with_suffix("." + fmt))], check=True)
            times.append(time.perf_counter() - t)
        print(json.dumps({
            "submissions": n,
            "input_mb": round(src.stat().st_size / 1e6, 1),
            "html_mb": round(out.stat().st_size / 1e6, 2),
            "html_seconds_median": round(statistics.median(times[:3]), 2),
            "json_seconds": round(times[3], 2),
        }, indent=2))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5000)
