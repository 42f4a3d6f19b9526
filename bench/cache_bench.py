"""What the safe results cache costs: copy, hash, verify and re-attach per submission.

    python bench/cache_bench.py [N]      # N submissions (default 200)

Each submission is copied before it is hashed and graded (issue 18.4), and
each cached report is authenticated and re-labelled on the way out. Reported
as ratios measured in the same run, never as absolute targets:

- snapshot / digest: taking a private copy and hashing it, against hashing the
  folder in place (what the cache did before);
- cached run / fresh run: a whole `grade` of a class served from the cache,
  against grading it (one course step, so the fresh run is as cheap as it gets).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = "import numpy as np\n\n\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2){}\n"


def _class(root: Path, n: int) -> list[Path]:
    subs = []
    for i in range(n):
        sub = root / f"s{i:04d}"
        sub.mkdir(parents=True)
        (sub / "step1_scores.py").write_text(SOURCE.format(" + 0" * (i % 7)))
        (sub / "notes.md").write_text("my notes\n" * 50)
        subs.append(sub)
    return subs


def _copy_vs_digest(subs: list[Path]) -> tuple[float, float]:
    from attn_practice.grader.sandbox.submission import digest
    from attn_practice.grader.staff.snapshot import Snapshots

    t0 = time.perf_counter()
    for sub in subs:
        digest(sub)
    plain = time.perf_counter() - t0
    with Snapshots() as snaps:
        t0 = time.perf_counter()
        for sub in subs:
            digest(snaps.take(sub))
        copied = time.perf_counter() - t0
    return copied / plain, copied / len(subs)


def _grade(subs: list[Path], tmp: Path, cache: Path) -> float:
    course = tmp / "course.yaml"
    course.write_text("steps: [step1]\nmax_examples: 5\n")
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp / "xdg"), XDG_DATA_HOME=str(tmp / "xdg-data"),
               ATTN_PRACTICE_SECRET="bench")
    t0 = time.perf_counter()
    subprocess.run([str(Path(sys.executable).with_name("attn-practice")), "grade", *map(str, subs),
                    "--course", str(course), "--format", "csv", "--cache-dir", str(cache)],
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - t0


def main(n: int = 200) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        subs = _class(root / "class", n)
        ratio, each = _copy_vs_digest(subs)
        fresh = _grade(subs, root, root / "cache")
        cached = _grade(subs, root, root / "cache")
    print(f"{n} submissions")
    print(f"snapshot+hash / hash in place: {ratio:.2f}x ({each * 1000:.2f} ms a submission)")
    print(f"cached run / fresh run:        {cached / fresh:.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
