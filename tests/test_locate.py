"""Submissions as handed in: step files one folder down, stray files, several in one folder."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from attn_practice.cli import cli
from attn_practice.grader.staff.locate import MAX_DEPTH, candidates

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = (ROOT / "reference" / "attention.py").read_text()
CORE = ["step1_scores", "step2_scale", "step3_softmax", "step4_weighted_sum", "step5_attention"]


def _solved(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for stem in CORE:
        (folder / f"{stem}.py").write_text(REFERENCE)
    return folder


def _grade(*args: str, env: dict[str, str] | None = None):
    res = CliRunner().invoke(cli, ["grade", *args, "--no-cache"], env=env)
    assert "Traceback" not in res.output, res.output
    return res


@pytest.mark.parametrize("inner", ["attention-practice", "src", "src/work"])
def test_step_files_one_folder_down_are_graded_and_said_so_in_every_format(tmp_path, inner):
    repo = tmp_path / "repo"
    _solved(repo / inner)
    (repo / "README.md").write_text("my repo\n")
    (repo / "docs").mkdir()
    where = str(repo / inner)

    res = _grade(str(repo), "--format", "json")
    assert res.exit_code == 0, res.output
    obj = json.loads(res.output)
    assert obj["submission"] == str(repo) and obj["graded_path"] == where
    assert obj["score"] == obj["max_score"] == 5.0

    rows = list(csv.DictReader(io.StringIO(_grade(str(repo), "--format", "csv").output)))
    assert rows[0]["graded_path"] == where and rows[0]["score"] == "5"

    root = ET.fromstring(_grade(str(repo), "--format", "junit").output)
    props = root.findall(".//property[@name='graded_path']")
    assert props and all(p.get("value") == where for p in props)

    gs = json.loads(_grade(str(repo), "--format", "gradescope").output)
    assert where in gs["output"] and gs["score"] == 5.0

    out = tmp_path / "gh_out"
    log = _grade(str(repo), "--format", "github", env={"GITHUB_OUTPUT": str(out)}).output
    assert f"graded the folder {where}" in log
    assert any(line.startswith("::notice ") and "graded a subfolder" in line
               for line in log.splitlines())
    obj = json.loads(base64.b64decode(out.read_text().split("=", 1)[1]))
    assert obj["max_score"] == 5.0 and all(t["filename"].startswith(where) for t in obj["tests"])

    rich = _grade(str(repo), "--format", "rich").output
    assert "graded the folder" in " ".join(rich.split())


def test_several_candidate_folders_grade_one_by_the_rule_with_a_warning_and_never_abort(tmp_path):
    # Two versions one level further down (at the top they would be a class: issue 36, test_handins_class).
    repo = tmp_path / "repo"
    _solved(repo / "work" / "a")
    _solved(repo / "work" / "b")
    for f in (repo / "work" / "a").iterdir():
        os.utime(f, (1_000_000, 1_000_000))  # b is newer
    top, repo = repo, repo / "work"
    other = _solved(tmp_path / "other")
    res = _grade(str(top), str(other), "--format", "json")
    assert res.exit_code == 0, res.output
    objs = json.loads(res.stdout)
    assert [o["score"] for o in objs] == [5.0, 5.0]  # the other submission is graded too
    assert objs[0]["graded_path"] == str(repo / "b")
    said = " ".join(objs[0]["warnings"])
    assert f"graded {repo / 'b'}" in said and f"not {repo / 'a'}" in said and "newest modification time" in said
    assert objs[1]["warnings"] == []


def test_grade_dot_on_a_parent_of_many_submissions_grades_each(tmp_path):
    for name in ("alice", "bob", "carol"):
        _solved(tmp_path / "subs" / name)
    cwd = os.getcwd()
    os.chdir(tmp_path / "subs")
    try:
        res = _grade(".", "--format", "csv")
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0
    said = " ".join(res.output.split())
    assert ". holds a class, not one submission: graded 3 submissions" in said  # issue 36
    rows = [r for r in csv.reader(io.StringIO(res.stdout)) if len(r) > 3 and r[0] != "submission"]
    assert [r[0] for r in rows] == ["./alice", "./bob", "./carol"]


def test_stray_files_in_a_batch_get_a_missing_row_saying_what_they_are(tmp_path):
    subs = tmp_path / "subs"
    _solved(subs / "alice")
    _solved(subs / "bob")
    (subs / "README.txt").write_text("grading notes\n")
    (subs / "grades.csv").write_text("x\n")
    res = CliRunner().invoke(cli, ["grade", *map(str, sorted(subs.iterdir())), "--format", "csv",
                                   "--no-cache"])
    assert res.exit_code == 1, res.output  # every argument is a submission (issue 36): two are missing
    rows = [r for r in csv.reader(io.StringIO(res.stdout)) if len(r) > 3 and r[0].startswith(str(subs))]
    assert [Path(r[0]).name for r in rows] == ["README.txt", "alice", "bob", "grades.csv"]
    assert [r[1] for r in rows] == ["0", "5", "5", "0"]
    assert "found: README.txt (text, not Python)" in res.output


def test_only_files_get_rows_too(tmp_path):
    (tmp_path / "a.txt").write_text("x = (")
    res = _grade(str(tmp_path / "a.txt"), "--format", "json")
    assert res.exit_code == 1
    report = json.loads(res.stdout)
    assert report["score"] == 0 and "found: a.txt (text, not Python)" in " ".join(report["warnings"])


@pytest.mark.parametrize("fmt", ["gradescope", "github"])
def test_single_submission_formats_refuse_several(tmp_path, fmt):
    a, b = _solved(tmp_path / "a"), _solved(tmp_path / "b")
    res = _grade(str(a), str(b), "--format", fmt)
    assert res.exit_code == 2
    assert "exactly one submission" in res.output and "2 were given" in res.output


def test_the_walk_is_bounded_in_depth(tmp_path):
    deep = tmp_path / "r"
    for i in range(MAX_DEPTH + 2):
        deep = deep / f"d{i}"
    _solved(deep)
    assert candidates(tmp_path / "r") == []
    # a very deep tree does not crash or stall the walk
    d = tmp_path / "deep"
    d.mkdir()
    path = str(d)
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(300):
            os.mkdir("x", dir_fd=fd)
            new = os.open("x", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
    finally:
        os.close(fd)
    assert candidates(d) == []
