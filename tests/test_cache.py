"""The results cache: keyed by content, atomic, and never trusting a bad entry."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice import __version__
from attn_practice.cli import cli
from attn_practice.grader import results
from attn_practice.grader.course import default_course, load_course
from attn_practice.grader.results import (
    Diagnosis,
    Failure,
    GradeReport,
    Status,
    StepResult,
)
from attn_practice.grader.staff import cache as cache_mod
from attn_practice.grader.staff.cache import ResultsCache, grader_fingerprint

KW = {"grader_version": "0.1.0+abc", "course_fingerprint": "default"}


def _submission(root: Path, **files: bytes) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, data in (files or {"step1_scores.py": b"def dot_scores(Q, K):\n    return Q @ K.T\n"}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return root


def _report(name: str = "subs/alice", status: Status = Status.FAILED) -> GradeReport:
    step = StepResult("step1", "Scores", status, 0.0 if status is not Status.PASSED else 1.0, 1.0,
                      diagnoses=(Diagnosis("transpose-all-axes", "used K.T"),), output="hi\x00")
    return GradeReport(submission=name, steps=(step,), duration=0.5, grader_version="0.1.0")


@pytest.fixture
def cache(tmp_path):
    return ResultsCache(tmp_path / "cache")


def test_round_trip_relabels_submission(cache, tmp_path):
    key = cache.key(_submission(tmp_path / "alice"), **KW)
    assert cache.get(key) is None
    assert cache.put(key, _report("subs/alice"))
    got = cache.get(key, submission="elsewhere/bob")
    assert got is not None and got.submission == "elsewhere/bob"
    assert got.to_dict() | {"submission": "subs/alice"} == _report("subs/alice").to_dict()
    assert cache.get(key).submission == "subs/alice"


def test_key_depends_on_content_version_and_course_not_path(cache, tmp_path):
    a = _submission(tmp_path / "a")
    b = _submission(tmp_path / "b")
    key = cache.key(a, **KW)
    assert key == cache.key(b, **KW)  # same bytes elsewhere: same key
    assert len(key) == 64
    assert key != cache.key(a, grader_version="0.2.0", course_fingerprint="default")
    assert key != cache.key(a, grader_version="0.1.0+abc", course_fingerprint="other")
    (b / "step1_scores.py").write_bytes(b"def dot_scores(Q, K):\n    return K @ Q.T\n")
    assert cache.key(b, **KW) != key
    (b / "step1_scores.py").rename(b / "step1_renamed.py")
    (b / "step1_renamed.py").write_bytes((a / "step1_scores.py").read_bytes())
    assert cache.key(b, **KW) != key  # a rename changes the key


def test_key_ignores_git_but_not_pycache_and_never_follows_links(cache, tmp_path):
    sub = _submission(tmp_path / "s")
    key = cache.key(sub, **KW)
    (sub / ".git").mkdir()
    (sub / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert cache.key(sub, **KW) == key  # nothing under a dot name reaches a sandbox
    (sub / "__pycache__").mkdir()
    (sub / "__pycache__" / "x.pyc").write_bytes(b"\x00")
    with_pycache = cache.key(sub, **KW)
    assert with_pycache != key
    (sub / "__pycache__" / "x.pyc").write_bytes(b"\x01")
    assert cache.key(sub, **KW) != with_pycache  # every byte of __pycache__/ counts
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (sub / "link.txt").symlink_to(outside)
    (sub / "linkdir").symlink_to(tmp_path, target_is_directory=True)
    with_links = cache.key(sub, **KW)
    assert with_links != cache.key(_submission(tmp_path / "t"), **KW)
    outside.write_text("changed")  # a link counts by its name, never by what it points at
    assert cache.key(sub, **KW) == with_links
    (sub / "notes.txt").write_text("new")
    assert cache.key(sub, **KW) != with_links


def test_every_byte_of_a_large_file_counts(cache, tmp_path):
    big = b"a" * ((1 << 20) + 10)
    sub = _submission(tmp_path / "s", **{"data.bin": big})
    key = cache.key(sub, **KW)
    (sub / "data.bin").write_bytes(big[:-1] + b"b")  # same size, same first MiB
    assert cache.key(sub, **KW) != key
    (sub / "data.bin").write_bytes(big)
    assert cache.key(sub, **KW) == key


def test_key_depends_on_the_examples_secret(cache, tmp_path):
    sub = _submission(tmp_path / "s")
    assert cache.key(sub, **KW, examples="aaaa") != cache.key(sub, **KW, examples="bbbb")
    assert cache.key(sub, **KW, examples="aaaa") == cache.key(sub, **KW, examples="aaaa")


def test_a_submission_too_deep_or_too_big_to_see_whole_is_not_keyed(cache, tmp_path, monkeypatch):
    deep = _submission(tmp_path / "deep")
    folder = deep
    for _ in range(40):
        folder = folder / "d"
    folder.mkdir(parents=True)
    assert cache.key(deep, **KW) is None
    big = _submission(tmp_path / "big", **{"data.bin": b"x" * 2000})
    monkeypatch.setattr("attn_practice.grader.sandbox.submission.MAX_HASH_BYTES", 1000)
    assert cache.key(big, **KW) is None


def test_grader_failures_are_not_cached(cache, tmp_path):
    key = cache.key(_submission(tmp_path / "s"), **KW)
    failure = Failure(kind="internal", summary="the grader could not start a sandbox")
    step = StepResult("step1", "Scores", Status.ERROR, 0.0, 1.0,
                      tests=(results.TestResult("loads", Status.ERROR, failure.summary, failure),))
    report = GradeReport("s", steps=(step,))
    assert report.grader_failed
    assert not cache.put(key, report)
    assert cache.get(key) is None


def test_corrupt_entries_are_removed(cache, tmp_path):
    key = cache.key(_submission(tmp_path / "s"), **KW)
    cache.put(key, _report())
    path = cache.path(key)
    for junk in ("{not json", json.dumps({"format": 1, "key": "0" * 64, "report": {}}),
                 json.dumps({"format": 1, "key": key, "report": {"steps": []}}), "[]", "\udcff"):
        path.write_text(junk, encoding="utf-8", errors="surrogateescape")
        assert cache.get(key) is None
        assert not path.exists()
        cache.put(key, _report())


def test_put_is_atomic(cache, tmp_path, monkeypatch):
    key = cache.key(_submission(tmp_path / "s"), **KW)

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(cache_mod.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cache.put(key, _report())
    monkeypatch.undo()
    assert cache.get(key) is None
    assert [p for p in cache.directory.rglob("*") if p.is_file() and p.name != ".key"] == []


def test_timeouts_and_grader_errors_are_not_cached(cache, tmp_path):
    key = cache.key(_submission(tmp_path / "s"), **KW)
    assert not cache.put(key, _report(status=Status.TIMEOUT))
    assert not cache.put(key, GradeReport("s", error="engine crashed"))
    assert cache.get(key) is None
    assert cache.put(key, _report(status=Status.PASSED))


def test_bad_keys_are_refused(cache):
    with pytest.raises(ValueError):
        cache.path("../../etc/passwd")


def test_clear(cache, tmp_path):
    key = cache.key(_submission(tmp_path / "s"), **KW)
    cache.put(key, _report())
    assert cache.clear() == 1
    assert cache.get(key) is None


def test_default_directory(monkeypatch, tmp_path):
    monkeypatch.setenv("ATTN_PRACTICE_CACHE", str(tmp_path / "c"))
    assert ResultsCache().directory == tmp_path / "c"
    monkeypatch.delenv("ATTN_PRACTICE_CACHE")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert ResultsCache().directory == tmp_path / ".cache" / "attn-practice" / "results"


def test_fingerprints(tmp_path):
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step1]\n")
    base = load_course(course).fingerprint
    assert base == load_course(course).fingerprint
    assert base != default_course().fingerprint
    course.write_text("steps: [step1, step2]\n")
    assert load_course(course).fingerprint != base
    course.write_text("steps: [step2]\n")
    assert load_course(course).fingerprint != base
    fp = grader_fingerprint()
    assert fp.startswith(__version__ + "+") and fp == grader_fingerprint()


def test_unreadable_file_does_not_crash(cache, tmp_path):
    if os.geteuid() == 0:
        pytest.skip("root reads every file")
    sub = _submission(tmp_path / "s")
    (sub / "secret.py").write_text("x")
    (sub / "secret.py").chmod(0)
    assert len(cache.key(sub, **KW)) == 64


# ------------------------------------------------------------ end to end: the cache cannot be fooled
def _grade_cached(sub: Path, cache_dir: Path) -> dict:
    course = sub.parent / "course-step1.yaml"
    course.write_text("steps: [step1]\n")
    result = CliRunner().invoke(cli, ["grade", str(sub), "--course", str(course), "--format", "json",
                                      "--cache-dir", str(cache_dir)], env={"ATTN_PRACTICE_SECRET": "cache"})
    assert "Traceback" not in result.output, result.output
    return json.loads(result.output)


SIGNED = ("import numpy as np\nfrom helper import SIGN\n\n\n"
          "def dot_scores(Q, K):\n    return SIGN * (Q @ np.swapaxes(K, -1, -2))\n")


def test_submissions_equal_in_their_first_mib_get_their_own_results(tmp_path):
    cache_dir = tmp_path / "cache"
    padding = "#" * (1 << 20) + "\n"
    scores = []
    for name, sign in (("right", "+1.0"), ("wrong", "-1.0")):  # same size, same first MiB
        sub = _submission(tmp_path / name, **{"step1_scores.py": SIGNED.encode(),
                                              "helper.py": f"{padding}SIGN = {sign}\n".encode()})
        scores.append(_grade_cached(sub, cache_dir)["score"])
    assert scores == [1.0, 0.0]
    assert len(list(cache_dir.rglob("*.json"))) == 2


def _stale_pycache(sub: Path, good: str) -> None:
    """A .pyc of `good` code stamped with the .py's own mtime and size: what Python would load."""
    import importlib._bootstrap_external as ext
    import importlib.util
    import sys

    src = sub / "step1_scores.py"
    st = src.stat()
    code = compile(good, str(src), "exec")
    pyc = Path(importlib.util.cache_from_source(str(src)))
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(ext._code_to_timestamp_pyc(code, int(st.st_mtime), st.st_size))
    assert sys.implementation.cache_tag in pyc.name


def test_a_pycache_difference_is_never_served_a_stale_result(tmp_path):
    cache_dir = tmp_path / "cache"
    wrong = b"import numpy as np\n\n\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2) + 1\n"
    good = "import numpy as np\n\n\ndef dot_scores(Q, K):\n    return Q @ np.swapaxes(K, -1, -2) + 0\n"
    sub = _submission(tmp_path / "s", **{"step1_scores.py": wrong})
    first = _grade_cached(sub, cache_dir)
    assert first["score"] == 0.0
    # A .pyc of right code that Python itself would load instead of the wrong source: the
    # copy that is graded (and hashed) never holds bytecode, so the key is the source's.
    _stale_pycache(sub, good)
    again = _grade_cached(sub, cache_dir)
    assert again["score"] == 0.0
    assert len(list(cache_dir.rglob("*.json"))) == 1  # what is graded is what is keyed
    shutil.rmtree(sub / "__pycache__")
    assert _grade_cached(sub, cache_dir)["score"] == 0.0
    assert len(list(cache_dir.rglob("*.json"))) == 1
