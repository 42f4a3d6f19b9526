"""CI hygiene (issue 19.6): what a batch shows, caches, writes and exits with.

Through the installed `attn-practice` script with stdout and stderr sent to
files, as a CI job runs it: progress lines without a terminal and a one-line
summary; a timeout cached once it overran by a wide margin, and graded again
with `--regrade-timeouts`; nothing written into the current directory or a
submission; an `--out` that cannot be written is a usage error (exit 2), and
`--out /dev/null` leaves /dev/null a device.
"""

from __future__ import annotations

import io
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from attn_practice.grader.results import GradeReport
from attn_practice.grader.staff.progress import Progress

SCRIPT = str(Path(sys.executable).with_name("attn-practice"))
RIGHT = "import numpy as np\n\n\ndef scale_scores(scores, d_k):\n    return scores / np.sqrt(d_k)\n"
WRONG = "def scale_scores(scores, d_k):\n    return scores / d_k\n"
LOOP = "def scale_scores(scores, d_k):\n    while True:\n        pass\n"


def _env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg-cache"), XDG_DATA_HOME=str(tmp_path / "xdg-data"),
               ATTN_PRACTICE_SECRET="ci-hygiene", NO_COLOR="1")
    env.pop("HYPOTHESIS_STORAGE_DIRECTORY", None)
    return env


def _class(root: Path, **subs: str) -> list[Path]:
    out = []
    for name, source in subs.items():
        (root / name).mkdir(parents=True)
        (root / name / "step2_scale.py").write_text(source)
        out.append(root / name)
    return out


def _grade_to_files(tmp_path: Path, *args: str, cwd: Path | None = None) -> tuple[int, str, str]:
    course = tmp_path / "course.yaml"
    course.write_text("steps: [step2]\nmax_examples: 5\n")
    out_path, err_path = tmp_path / "stdout.txt", tmp_path / "stderr.txt"
    with open(out_path, "w") as out, open(err_path, "w") as err:
        code = subprocess.run([SCRIPT, "grade", "--course", str(course), *args], stdout=out, stderr=err,
                              stdin=subprocess.DEVNULL, env=_env(tmp_path), cwd=cwd or tmp_path,
                              timeout=900).returncode
    return code, out_path.read_text(), err_path.read_text()


def _listing(root: Path) -> dict[str, tuple[int, int, float]]:
    return {str(p.relative_to(root)): (p.stat().st_mode, p.stat().st_size, p.stat().st_mtime)
            for p in sorted(root.rglob("*"))}


# ------------------------------------------------------------------ progress
def test_progress_logs_a_line_at_most_every_interval_and_a_summary():
    now = [0.0]
    stream = io.StringIO()
    passed, failed = GradeReport(submission="a"), GradeReport(submission="b", error="x")
    with Progress(30, enabled=True, stream=stream, interval=10.0, clock=lambda: now[0],
                  log=True) as progress:
        for i in range(29):
            now[0] = i * 1.0  # one report a second
            progress.advance(failed if i % 3 == 0 else passed)
        now[0] = 29.0
        progress.advance(passed)
    lines = stream.getvalue().splitlines()
    assert lines[:2] == ["grading: 11/30 done, 1.1/s, 4 failing", "grading: 21/30 done, 1.1/s, 7 failing"]
    assert lines[2].startswith("graded 30/30 in 29.0 s") and "10 not fully passing" in lines[2]
    assert len(lines) == 3


def test_a_batch_without_a_terminal_logs_progress_and_a_summary_to_stderr(tmp_path):
    subs = _class(tmp_path / "subs", a=RIGHT, b=WRONG, c=RIGHT)
    code, out, err = _grade_to_files(tmp_path, *map(str, subs), "--format", "csv", "--jobs", "2")
    assert code == 1
    assert out.count("\n") == 4  # header + 3 rows, nothing else on stdout
    summary = [ln for ln in err.splitlines() if ln.startswith("graded 3/3 in ")]
    assert summary and "1 not fully passing" in summary[0], err
    assert "\x1b[" not in err  # no terminal codes in a log


# ------------------------------------------------------------------ timeouts
@pytest.mark.slow
def test_a_timeout_far_over_its_limit_is_cached_and_regraded_on_request(tmp_path):
    [loop] = _class(tmp_path / "subs", loop=LOOP)
    cache = tmp_path / "cache"
    code, out, _ = _grade_to_files(tmp_path, str(loop), "--format", "json", "--cache-dir", str(cache))
    assert code == 1 and json.loads(out)["steps"][0]["status"] == "timeout"
    [entry] = cache.rglob("*.json")
    first = entry.stat().st_ino
    code, out2, _ = _grade_to_files(tmp_path, str(loop), "--format", "json", "--cache-dir", str(cache))
    assert code == 1 and json.loads(out2) == json.loads(out)  # served from the cache
    assert entry.stat().st_ino == first
    code, out3, _ = _grade_to_files(tmp_path, str(loop), "--format", "json", "--cache-dir", str(cache),
                                    "--regrade-timeouts")
    assert code == 1 and json.loads(out3)["steps"][0]["status"] == "timeout"
    assert entry.stat().st_ino != first  # graded again and stored anew


def test_timeout_rule_is_stated_in_the_staff_guide():
    guide = (Path(__file__).resolve().parent.parent / "docs" / "staff.md").read_text(encoding="utf-8")
    assert "--regrade-timeouts" in guide and "three times" in guide


# ------------------------------------------------------------------ nothing written where it runs
def test_grade_writes_nothing_into_the_cwd_or_the_submissions(tmp_path):
    cwd = tmp_path / "ci-job"
    subs = _class(cwd, a=RIGHT, b=WRONG)
    (cwd / "notes.txt").write_text("the instructor's own file\n")
    before = _listing(cwd)
    cwd.chmod(0o555)
    try:
        code, out, err = _grade_to_files(tmp_path, *(s.name for s in subs), "--format", "csv",
                                         "--jobs", "2", cwd=cwd)
    finally:
        cwd.chmod(0o755)
    assert code == 1, err
    assert _listing(cwd) == before  # no .hypothesis/, no __pycache__, nothing touched
    assert not any((tmp_path / "xdg-cache").rglob(".hypothesis"))


# ------------------------------------------------------------------ --out
@pytest.mark.parametrize("where", ["missing-folder", "a-folder", "read-only-file"])
def test_an_out_that_cannot_be_written_is_a_usage_error(tmp_path, where):
    [sub] = _class(tmp_path / "subs", a=RIGHT)
    target = {"missing-folder": tmp_path / "no" / "such" / "grades.csv",
              "a-folder": tmp_path / "subs",
              "read-only-file": Path("/proc/version")}[where]
    code, out, err = _grade_to_files(tmp_path, str(sub), "--format", "csv", "--out", str(target))
    assert code == 2, err
    assert "rror:" in err and "Traceback" not in err and "internal" not in err


def test_out_to_a_device_a_fifo_or_a_link_writes_through_it_never_replacing_it(tmp_path):
    """`--out /dev/null` or `/dev/stdout` as root once replaced them for the whole machine.

    Checked on private look-alikes, so a regression cannot break the machine's
    own: a character device node like /dev/null (root only), a FIFO, and a
    link like /dev/stdout -> /proc/self/fd/1.
    """
    [sub] = _class(tmp_path / "subs", a=RIGHT)
    null = tmp_path / "null"
    try:
        os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, AttributeError):
        null = None
    if null is not None:
        code, out, err = _grade_to_files(tmp_path, str(sub), "--format", "csv", "--out", str(null))
        assert code == 0, err
        assert stat.S_ISCHR(os.lstat(null).st_mode)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    code, out, err = _grade_to_files(tmp_path, str(sub), "--format", "csv", "--out", str(fifo))
    assert code == 0, err
    assert reader.communicate(timeout=60)[0].startswith("submission,score,max_score")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    code, out, err = _grade_to_files(tmp_path, str(sub), "--format", "csv", "--out", str(link))
    assert code == 0, err
    assert out.startswith("submission,score,max_score")
    assert os.readlink(link) == "/proc/self/fd/1"


def test_the_report_schema_is_documented_for_users():
    root = Path(__file__).resolve().parent.parent
    doc = (root / "docs" / "report-schema.md").read_text(encoding="utf-8")
    for field in ("attn-practice.grade/1", "max_score", "warnings", "graded_path", "diagnoses",
                  "status", "counted", "bonus"):
        assert field in doc
    readme = (root / "README.md").read_text(encoding="utf-8")
    assert "docs/report-schema.md" in readme and "CONTRACT" not in readme


@pytest.mark.parametrize("how", ["one submission", "a class on two workers"])
def test_a_course_with_private_suites_in_the_cwd_is_left_untouched(tmp_path, how):
    """Also when the pool's workers start before the course is read (`pool.start_early`):
    they get the parent's no-bytecode and Hypothesis-folder settings with their first task."""
    cwd = tmp_path / "course-repo"
    (cwd / "private").mkdir(parents=True)
    (cwd / "private" / "test_mine.py").write_text(
        "import numpy as np\nimport pytest\n\n\n@pytest.mark.step('step2')\ndef test_mine(step):\n"
        "    \"\"\"Mine\"\"\"\n    step.check(np.ones((2, 2)), 4)\n")
    (cwd / "course.yaml").write_text("steps: [step2]\nmax_examples: 5\nextra_suites: [private/]\n")
    subs = _class(tmp_path / "subs", a=RIGHT) if how == "one submission" else \
        _class(tmp_path / "subs", a=RIGHT, b=RIGHT, c=RIGHT)
    before = _listing(cwd)
    res = subprocess.run([SCRIPT, "grade", *map(str, subs), "--course", "course.yaml", "--format", "csv",
                          "--jobs", "2"], capture_output=True, text=True, env=_env(tmp_path), cwd=cwd,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    assert len([ln for ln in res.stdout.splitlines()[1:] if ln.strip()]) == len(subs), res.stdout
    assert _listing(cwd) == before  # no __pycache__, no .hypothesis, no .pytest_cache
