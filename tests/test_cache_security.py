"""The results cache cannot be raced, confused, read or forged (issue 18.4).

End to end through the installed `attn-practice` script where staff meet it:
a submission whose bytes flip during a batch, two identical submissions that
print and raise with their own paths, cache folders that belong to someone
else or that others may write, and entries edited or planted by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from attn_practice.grader.results import GradeReport, Status, StepResult
from attn_practice.grader.staff.cache import PLACEHOLDER, ResultsCache, attach, normalise
from attn_practice.grader.staff.private_dir import PrivateDirError, private_dir

SCRIPT = str(Path(sys.executable).with_name("attn-practice"))
RIGHT = ("import numpy as np\n\n\ndef dot_scores(Q, K):\n"
         "    return Q @ np.swapaxes(K, -1, -2)\n")
WRONG = ("import numpy as np\n\n\ndef dot_scores(Q, K):\n"
         "    return Q @ np.swapaxes(K, -1, -2) + 1.0\n")
#: prints its own path and fails with a traceback that names it
LOUD = ("import numpy as np\nprint('loaded from', __file__)\n\n\ndef dot_scores(Q, K):\n"
        "    print('called in', __file__)\n    raise ValueError('no ' + __file__)\n")
KW = {"grader_version": "0.1.0+abc", "course_fingerprint": "default"}


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), XDG_DATA_HOME=str(tmp_path / "xdg-data"),
               ATTN_PRACTICE_SECRET="cache-security", NO_COLOR="1")
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    return env


def _course(tmp_path: Path) -> Path:
    course = tmp_path / "course-step1.yaml"
    course.write_text("steps: [step1]\n")
    return course


def _grade(tmp_path: Path, *subs: Path, cache_dir: Path, extra: tuple[str, ...] = (),
           cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([SCRIPT, "grade", *map(str, subs), "--course", str(_course(tmp_path)),
                           "--format", "json", "--cache-dir", str(cache_dir), "--jobs", "1", *extra],
                          capture_output=True, text=True, env=_env(tmp_path), timeout=600,
                          cwd=cwd or tmp_path)


def _sub(root: Path, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "step1_scores.py").write_text(text)
    return root


def _reports(result: subprocess.CompletedProcess[str]) -> list[dict]:
    assert result.returncode in (0, 1), result.stderr
    data = json.loads(result.stdout)
    return data if isinstance(data, list) else [data]


# ------------------------------------------------------------------ raced
@pytest.mark.slow
def test_bytes_swapped_during_a_batch_never_file_a_grade_under_another_content(tmp_path):
    cache_dir = tmp_path / "cache"
    flipping = [_sub(tmp_path / f"flip{i}", RIGHT) for i in range(4)]
    stop = threading.Event()

    def flip() -> None:
        texts = (RIGHT, WRONG)
        n = 0
        while not stop.is_set():
            n += 1
            for sub in flipping:
                (sub / "step1_scores.py").write_text(texts[n % 2])
            stop.wait(0.002)

    swapper = threading.Thread(target=flip, daemon=True)
    swapper.start()
    try:
        _reports(_grade(tmp_path, *flipping, cache_dir=cache_dir))
    finally:
        stop.set()
        swapper.join()
    # Whatever was graded, each entry holds the verdict of the bytes it is keyed by.
    right, wrong = _sub(tmp_path / "right", RIGHT), _sub(tmp_path / "wrong", WRONG)
    by_name = {Path(r["submission"]).name: r for r in _reports(_grade(tmp_path, right, wrong,
                                                                      cache_dir=cache_dir))}
    assert by_name["right"]["score"] == 1.0
    assert by_name["wrong"]["score"] == 0.0


# ------------------------------------------------------------------ confused
def test_identical_submissions_each_see_their_own_path_fresh_and_cached(tmp_path):
    cache_dir = tmp_path / "cache"
    alice, bob = _sub(tmp_path / "alice", LOUD), _sub(tmp_path / "bob", LOUD)
    for order in ((alice, bob), (bob, alice)):  # fresh (one shared entry), then from the cache
        for report in _reports(_grade(tmp_path, *order, cache_dir=cache_dir)):
            me = Path(report["submission"]).name
            other = "bob" if me == "alice" else "alice"
            text = json.dumps(report)
            assert f"{tmp_path / me}/step1_scores.py" in text  # its own path, re-attached
            assert str(tmp_path / other) not in text, (me, text)
            assert PLACEHOLDER not in text and "attn-practice-graded-" not in text
    assert len(list(cache_dir.rglob("*.json"))) == 1


def test_attach_and_normalise_round_trip():
    step = StepResult("step1", "Scores", Status.FAILED, 0.0, 1.0, output="at /tmp/x/s/step1_scores.py")
    report = GradeReport(submission="/tmp/x/s", steps=(step,))
    stored = normalise(report, "/tmp/x/s")
    assert "/tmp/x/s" not in json.dumps(stored.to_dict())
    back = attach(stored, "subs/carol")
    assert back.submission == "subs/carol"
    assert back.steps[0].output == "at subs/carol/step1_scores.py"


# ------------------------------------------------------------------ read
def test_cache_and_example_store_are_private(tmp_path):
    cache_dir = tmp_path / "cache"
    _reports(_grade(tmp_path, _sub(tmp_path / "s", RIGHT), cache_dir=cache_dir))  # records examples
    examples = tmp_path / "xdg-cache" / "attn-practice" / "examples"
    hypothesis = cache_dir / "hypothesis"  # Hypothesis's own files, inside a 0700 folder
    ours = [p for p in (*cache_dir.rglob("*"), *examples.rglob("*")) if hypothesis not in p.parents]
    for folder in (cache_dir, examples, hypothesis, *[p for p in ours if p.is_dir()]):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    files = [p for p in ours if p.is_file()]
    assert any(p.suffix == ".json" for p in files) and any(p.suffix == ".bin" for p in files)
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


@pytest.mark.parametrize("how", ["other-owner", "group-writable", "world-writable", "symlink"])
def test_a_cache_folder_others_control_is_refused_with_exit_2(tmp_path, how):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir(mode=0o700)
    if how == "other-owner":
        if os.geteuid() != 0:
            pytest.skip("needs root to give the folder to another user")
        os.chown(cache_dir, 65534, 65534)
    elif how == "group-writable":
        cache_dir.chmod(0o770)
    elif how == "world-writable":
        cache_dir.chmod(0o1777)
    else:
        real = tmp_path / "real"
        real.mkdir(mode=0o700)
        cache_dir.rmdir()
        cache_dir.symlink_to(real)
    result = _grade(tmp_path, _sub(tmp_path / "s", WRONG), cache_dir=cache_dir)
    assert result.returncode == 2, result.stderr
    assert "error:" in result.stderr and str(cache_dir) in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_private_dir_tightens_a_folder_of_ours_that_others_could_only_read(tmp_path):
    folder = tmp_path / "old-cache"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert stat.S_IMODE(private_dir(folder).stat().st_mode) == 0o700
    folder.chmod(0o775)
    with pytest.raises(PrivateDirError, match="writable by its group"):
        private_dir(folder)


# ------------------------------------------------------------------ forged
def test_a_forged_entry_is_ignored_and_regraded(tmp_path):
    cache_dir = tmp_path / "cache"
    sub = _sub(tmp_path / "s", WRONG)
    assert _reports(_grade(tmp_path, sub, cache_dir=cache_dir))[0]["score"] == 0.0
    [entry] = cache_dir.rglob("*.json")
    magic, mac, body = entry.read_bytes().split(b"\n", 2)
    data = json.loads(body)
    for step in data["report"]["steps"]:
        step["status"], step["score"] = "passed", step["max_score"]
        for test in step["tests"]:
            test["status"] = "passed"
    entry.write_bytes(magic + b"\n" + mac + b"\n" + json.dumps(data).encode())
    report = _reports(_grade(tmp_path, sub, cache_dir=cache_dir))[0]
    assert report["score"] == 0.0 and report["steps"][0]["status"] == "failed"
    # re-graded and stored again, authentic this time
    assert ResultsCache(cache_dir).open().get(entry.stem) is not None


def test_entries_signed_with_another_key_damaged_or_linked_are_misses(tmp_path):
    step = StepResult("step1", "Scores", Status.PASSED, 1.0, 1.0)
    report = GradeReport(submission=PLACEHOLDER, steps=(step,))
    ours, theirs = ResultsCache(tmp_path / "ours").open(), ResultsCache(tmp_path / "theirs").open()
    sub = _sub(tmp_path / "s", WRONG)
    key = ours.key(sub, **KW)
    assert theirs.put(key, report)
    ours.path(key).parent.mkdir(mode=0o700)
    shutil.copy(theirs.path(key), ours.path(key))
    assert ours.get(key) is None and not ours.path(key).exists()  # another key: deleted, missed
    assert ours.put(key, report) and ours.get(key, submission="a/b").submission == "a/b"
    raw = ours.path(key).read_bytes()
    ours.path(key).write_bytes(raw[:-5])
    assert ours.get(key) is None  # damaged
    ours.path(key).symlink_to(theirs.path(key))
    assert ours.get(key) is None  # a link is never read
    assert ours.put(key, report)
    ours.path(key).chmod(0o666)
    assert ours.get(key) is None  # writable by others: not trusted
    (tmp_path / "ours" / ".key").write_text("short")
    fresh = ResultsCache(tmp_path / "ours").open()  # a damaged key is replaced...
    assert fresh.put(key, report) and fresh.get(key) is not None
    assert stat.S_IMODE((tmp_path / "ours" / ".key").stat().st_mode) == 0o600


def test_an_example_store_others_control_is_refused_with_exit_2(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the folder to another user")
    examples = tmp_path / "xdg-cache" / "attn-practice" / "examples"
    examples.mkdir(parents=True, mode=0o700)
    os.chown(examples, 65534, 65534)
    result = _grade(tmp_path, _sub(tmp_path / "s", WRONG), cache_dir=tmp_path / "cache")
    assert result.returncode == 2, result.stderr
    assert "example store" in result.stderr and str(examples) in result.stderr


def test_an_unwritable_output_path_of_ci_is_a_usage_error(tmp_path):
    (tmp_path / "a-file").write_text("not a folder\n")
    result = subprocess.run([SCRIPT, "ci", "gradescope", "--out", str(tmp_path / "a-file" / "a.zip")],
                            capture_output=True, text=True, env=_env(tmp_path), timeout=300)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr


def test_a_cache_folder_inside_a_folder_others_control_is_refused(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the parent folder to another user")
    parent = tmp_path / "shared"
    parent.mkdir()
    os.chown(parent, 65534, 65534)
    result = _grade(tmp_path, _sub(tmp_path / "s", WRONG), cache_dir=parent / "cache")
    assert result.returncode == 2, result.stderr
    assert "swap the folder" in " ".join(result.stderr.split())
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)  # world-writable without the sticky bit /tmp has
    result = _grade(tmp_path, _sub(tmp_path / "t", WRONG), cache_dir=open_parent / "cache")
    assert result.returncode == 2, result.stderr
