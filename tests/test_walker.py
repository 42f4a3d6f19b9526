"""The one submission walker (issue 12 item 13): iterative, bounded, never following links,
and one submission's pathology never loses another's report."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_grade import make_submission

from attn_practice.cli import cli
from attn_practice.grader.sandbox import submission as walker
from attn_practice.grader.staff import distributed

DEEP = 1500


def _deep(root: Path, levels: int = DEEP) -> Path:
    """`levels` nested folders under root (made by mkdir -p: Python's makedirs recurses)."""
    path = os.path.join(root, *["d"] * levels)
    subprocess.run(["mkdir", "-p", path], check=True)
    with open(os.path.join(path, "bottom.py"), "w") as f:
        f.write("X = 1\n")
    return root


@pytest.fixture
def cleanup():
    """Remove trees too deep for shutil.rmtree (recursive on Python 3.11) at the end."""
    made: list[Path] = []
    yield made.append
    for path in made:
        subprocess.run(["rm", "-rf", str(path)], check=False)


def _hangs(fn, *args, seconds: float = 60.0):
    """Run fn in a thread; True if it has not returned in `seconds` (a FIFO opened for reading)."""
    box: list[object] = []
    t = threading.Thread(target=lambda: box.append(fn(*args)), daemon=True)
    t.start()
    t.join(seconds)
    return t.is_alive(), box[0] if box else None


def test_a_1500_level_tree_is_walked_without_recursion_and_bounded(tmp_path, cleanup):
    root = _deep(tmp_path / "s")
    cleanup(root)
    listing = walker.walk(root)
    assert "nested more than" in listing.incomplete
    assert max(e.depth for e in listing.entries) == walker.MAX_DEPTH
    assert walker.digest(root) is None  # not seen whole: never a cache key
    assert walker.sandbox_files(root) == {}
    payload = walker.remote_payload(root)
    assert payload["files"] == {} and payload["incomplete"]


def test_walk_is_breadth_first_sorted_and_never_follows_links(tmp_path):
    root = tmp_path / "s"
    (root / "b" / "inner").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (root / "b" / "x.py").write_text("")
    (root / "loop").symlink_to("loop")
    (root / "ping").symlink_to("pong")
    (root / "pong").symlink_to("ping")
    (root / "up").symlink_to("..", target_is_directory=True)
    os.mkfifo(root / "pipe")
    listing = walker.walk(root)
    assert listing.incomplete == ""
    assert [e.rel for e in listing.entries] == ["a.py", "b", "loop", "ping", "pipe", "pong", "up",
                                                "b/inner", "b/x.py"]
    kinds = {e.rel: e.kind for e in listing.entries}
    assert kinds["loop"] is kinds["up"] is kinds["ping"] is walker.EntryKind.SYMLINK
    assert kinds["pipe"] is walker.EntryKind.OTHER
    hung, key = _hangs(walker.digest, root)
    assert not hung and key is not None
    hung, payload = _hangs(distributed.submission_payload, root)
    assert not hung and payload["special"]["pipe"] == "other" and payload["special"]["loop"] == "symlink"


def test_the_sandbox_sees_sources_of_top_level_and_packages_only(tmp_path):
    root = tmp_path / "s"
    for rel in ("step1_scores.py", "pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/deep/__init__.py",
                "pkg/sub/deep/deeper/__init__.py", "plain/helper.py", "__pycache__/__init__.py",
                "__pycache__/step1_scores.cpython-311.pyc", ".hidden.py", "data.txt"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("X = 1\n")
    (root / "linked.py").symlink_to(root / "step1_scores.py")
    files = walker.sandbox_files(root)
    assert sorted(files) == ["pkg/__init__.py", "pkg/sub/__init__.py", "pkg/sub/deep/__init__.py",
                             "step1_scores.py"]


def test_the_step_file_is_copied_from_a_folder_too_full_to_list(tmp_path, monkeypatch):
    monkeypatch.setattr(walker, "MAX_SCAN_ENTRIES", 50)
    root = make_submission(tmp_path / "s", steps=["step1_scores"])
    for i in range(200):
        (root / f"a{i:04}.py").write_text("")
    files = walker.sandbox_files(root, first=["step1_scores.py"])
    assert "step1_scores.py" in files
    assert "step1_scores.py" in distributed.submission_payload(root)["files"]
    assert walker.digest(root) is None


def test_huge_files_are_never_read(tmp_path):
    root = make_submission(tmp_path / "s", steps=["step1_scores"])
    with open(root / "huge.bin", "wb") as f:
        f.truncate(64 << 30)  # sparse: 64 GiB that reading would take minutes
    with open(root / "huge.py", "wb") as f:
        f.truncate(64 << 30)
    hung, key = _hangs(walker.digest, root, seconds=30)
    assert not hung and key is None
    assert sorted(walker.sandbox_files(root)) == ["step1_scores.py"]
    payload = distributed.submission_payload(root)
    assert sorted(payload["skipped"]) == ["huge.bin", "huge.py"]


def _pathological_class(root: Path, cleanup) -> tuple[list[str], dict[str, float]]:
    """Correct code everywhere, next to: a deep tree, 10k files, a huge file, FIFOs, link loops."""
    subs = {name: make_submission(root / name) for name in
            ("ann", "deep", "many", "huge", "fifo", "loops", "zed")}
    _deep(subs["deep"])
    cleanup(subs["deep"])
    (subs["many"] / "data").mkdir()
    for i in range(10_000):
        (subs["many"] / "data" / f"f{i}.txt").write_bytes(b"")
    with open(subs["huge"] / "weights.bin", "wb") as f:
        f.truncate(16 << 30)
    (subs["fifo"] / "step2_scale.py").unlink()
    os.mkfifo(subs["fifo"] / "step2_scale.py")
    os.mkfifo(subs["fifo"] / "notes.txt")
    (subs["loops"] / "loop").symlink_to("loop")
    (subs["loops"] / "again").symlink_to(".", target_is_directory=True)
    (subs["loops"] / "pkg").mkdir()
    (subs["loops"] / "pkg" / "__init__.py").write_text("")
    (subs["loops"] / "pkg" / "self").symlink_to("..", target_is_directory=True)
    scores = {name: 5.0 for name in subs}
    scores["fifo"] = 4.0  # its step2 file is not a regular file
    return [str(p) for p in subs.values()], scores


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_one_pathological_submission_never_loses_the_others(tmp_path, cleanup, monkeypatch, jobs):
    monkeypatch.setenv("ATTN_PRACTICE_SECRET", "walker-tests")
    subs, scores = _pathological_class(tmp_path, cleanup)
    cache = tmp_path / "cache"
    for run in range(2):  # the second run is served from the cache where it may be
        result = CliRunner().invoke(cli, ["grade", *subs, "--format", "csv", "--jobs", jobs,
                                          "--cache-dir", str(cache)])
        assert "Traceback" not in result.output and "RecursionError" not in result.output
        rows = list(csv.DictReader(io.StringIO(result.output)))
        assert [r["submission"] for r in rows] == subs, run
        assert {Path(r["submission"]).name: float(r["score"]) for r in rows} == scores, run
    # Each submission is copied before it is keyed, so what is cached is what was graded: at
    # most one entry per distinct content (ann and zed share one), and at least ann, fifo, loops.
    assert 3 <= len(list(cache.rglob("*.json"))) <= len(subs) - 1
    result = CliRunner().invoke(cli, ["grade", subs[1], "--format", "json", "--no-cache"])
    assert json.loads(result.output)["score"] == 5.0
