"""Nothing lost: `start`, `reset`, the state file, hints, and finding the workspace."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml
from conftest import assert_clean, joined, load_catalog, run

from attn_practice.grader.teaching import workspace as wsmod
from attn_practice.grader.teaching.workspace import (
    STATE_FILE,
    Progress,
    State,
    Workspace,
    create_workspace,
    find_workspace,
    write_atomic,
)

STUB1 = load_catalog()[0].stub_source()


def state_of(ws: Path) -> dict:
    data = yaml.safe_load((ws / STATE_FILE).read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


# ---------------------------------------------------------------- start
def test_start_creates_every_file(tmp_path):
    res = run(["start"], tmp_path)
    assert_clean(res)
    assert res.exit_code == 0
    ws = tmp_path / "attention-practice"
    for ex in load_catalog():
        assert (ws / ex.file).read_text(encoding="utf-8") == ex.stub_source()
        assert f"+ {ex.file}" in res.stdout
    assert (ws / "README.md").read_text(encoding="utf-8").startswith("# Attention practice")
    assert set(state_of(ws)["steps"]) == {e.id for e in load_catalog()}
    assert "Created your workspace" in res.stdout
    assert "cd attention-practice" in res.stdout
    # files look like normal files to the learner, not 0600 temp files
    mode = stat.S_IMODE((ws / "step1_scores.py").stat().st_mode)
    assert mode & 0o644 == 0o644 or mode == 0o666 & ~_umask()


def _umask() -> int:
    m = os.umask(0o022)
    os.umask(m)
    return m


def test_start_twice_loses_nothing(workspace, tmp_path):
    edited = "import numpy as np\n\ndef dot_scores(Q, K):\n    return 'my work'\n"
    (workspace / "step1_scores.py").write_text(edited, encoding="utf-8")
    (workspace / "step2_scale.py").unlink()
    (workspace / "notes.txt").write_text("mine", encoding="utf-8")
    run(["hint", "step1"], workspace)
    res = run(["start", "ws"], tmp_path)
    assert_clean(res)
    assert res.exit_code == 0
    assert (workspace / "step1_scores.py").read_text(encoding="utf-8") == edited
    assert (workspace / "step2_scale.py").read_text(encoding="utf-8") == load_catalog()[1].stub_source()
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert state_of(workspace)["steps"]["step1"]["hints"] == 1  # progress kept too
    text = joined(res.stdout)
    assert "is already a workspace" in text
    assert "Added what was missing" in text and "+ step2_scale.py" in text
    assert "+ step1_scores.py" not in text


def test_start_again_with_nothing_missing(workspace, tmp_path):
    res = run(["start", "ws"], tmp_path)
    assert res.exit_code == 0
    assert "Nothing was missing; none of your files were touched." in joined(res.stdout)


def test_start_in_a_folder_with_files_already(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "step3_softmax.py").write_text("# my softmax\n", encoding="utf-8")
    (folder / "README.md").write_text("my readme\n", encoding="utf-8")
    res = run(["start", "mine"], tmp_path)
    assert_clean(res)
    assert res.exit_code == 0
    assert (folder / "step3_softmax.py").read_text(encoding="utf-8") == "# my softmax\n"
    assert (folder / "README.md").read_text(encoding="utf-8") == "my readme\n"
    text = joined(res.stdout)
    assert "Completed the workspace" in text
    assert "Kept your existing files as they were: step3_softmax.py, README.md" in text


def test_start_on_a_file_is_a_usage_error(tmp_path):
    (tmp_path / "taken").write_text("x", encoding="utf-8")
    res = run(["start", "taken"], tmp_path)
    assert_clean(res)
    assert res.exit_code == 2
    assert "cannot create a workspace at taken" in joined(res.stderr)
    assert (tmp_path / "taken").read_text(encoding="utf-8") == "x"


def test_start_here_with_dot(tmp_path):
    res = run(["start", "."], tmp_path)
    assert res.exit_code == 0
    assert (tmp_path / STATE_FILE).is_file()
    assert "cd ." not in res.stdout  # already there: no cd line


def test_start_repairs_a_corrupt_state_file(workspace, tmp_path):
    (workspace / STATE_FILE).write_text("steps: [unclosed\n", encoding="utf-8")
    res = run(["start", "ws"], tmp_path)
    assert_clean(res)
    assert res.exit_code == 0
    assert "could not be read" in joined(res.stderr)
    assert isinstance(state_of(workspace)["steps"], dict)


# ---------------------------------------------------------------- the state file
@pytest.mark.parametrize("content, reason", [
    ("steps: {step1: [unclosed\n", "not valid YAML"),
    ("- step1\n- step2\n", "not a mapping"),
    ("", "empty"),
    ("just a string\n", "not a mapping"),
])
def test_corrupt_state_file_is_rebuilt_with_a_warning(workspace, content, reason):
    (workspace / STATE_FILE).write_text(content, encoding="utf-8")
    res = run(["status"], workspace)
    assert_clean(res)
    assert res.exit_code == 0
    err = joined(res.stderr)
    assert "warning:" in err and "could not be read" in err and reason in err
    assert "rebuilt" in err and "step files are untouched" in err
    assert "step1" in res.stdout  # the command still did its job
    data = state_of(workspace)  # and the file is valid again
    assert set(data["steps"]) == {e.id for e in load_catalog()}
    # the broken file was kept, not thrown away
    backups = list((workspace / "backups").glob("attn-practice*.yaml"))
    assert len(backups) == 1 and backups[0].read_text(encoding="utf-8") == content
    # a second command has nothing to warn about
    again = run(["status"], workspace)
    assert "warning" not in again.stderr


def test_state_file_with_wrong_types_inside_is_repaired(workspace):
    (workspace / STATE_FILE).write_text(
        "steps:\n  step1: {status: passed, hints: 99, attempts: -3}\n  step2: [1, 2]\n"
        "  step42: {status: passed}\n  step3: {status: maybe, hints: true}\n", encoding="utf-8")
    res = run(["status"], workspace)
    assert_clean(res)
    assert res.exit_code == 0
    steps = Workspace(workspace).load_state().steps
    assert steps["step1"].status is Progress.PASSED
    assert steps["step1"].hints == 3  # capped at the number of hints
    assert steps["step1"].attempts == 0
    assert steps["step2"].status is Progress.NOT_STARTED
    assert steps["step3"].status is Progress.NOT_STARTED and steps["step3"].hints == 0
    assert "step42" not in steps


def test_deleted_state_file_is_rebuilt_with_a_warning(workspace):
    (workspace / STATE_FILE).unlink()
    res = run(["status"], workspace)
    assert_clean(res)
    assert res.exit_code == 0
    assert "attn-practice.yaml was missing" in joined(res.stderr)
    assert (workspace / STATE_FILE).is_file()
    assert "step1" in res.stdout


def test_deleted_state_file_from_a_subfolder(workspace):
    (workspace / STATE_FILE).unlink()
    sub = workspace / "scratch"
    sub.mkdir()
    res = run(["hint", "step2"], sub)
    assert_clean(res)
    assert res.exit_code == 0
    assert (workspace / STATE_FILE).is_file()
    assert not (sub / STATE_FILE).exists()
    assert state_of(workspace)["steps"]["step2"]["hints"] == 1


def test_state_is_written_atomically(workspace, monkeypatch):
    path = workspace / STATE_FILE
    before = path.read_text(encoding="utf-8")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(wsmod.os, "replace", broken_replace)
    with pytest.raises(OSError):
        Workspace(workspace).save_state(State(created="x"))
    assert path.read_text(encoding="utf-8") == before  # the old file is whole
    assert [p.name for p in workspace.iterdir() if p.name.endswith(".tmp")] == []  # no debris


def test_write_atomic_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    target = tmp_path / "f.py"
    target.write_text("old", encoding="utf-8")
    target.chmod(0o640)
    write_atomic(target, "new")
    assert target.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_update_state_rereads_before_writing(workspace):
    """A check that loaded the state earlier does not wipe a hint revealed meanwhile."""
    ws = Workspace(workspace)
    stale = ws.load_state()
    assert run(["hint", "step1"], workspace).exit_code == 0  # another terminal, meanwhile
    ws.update_state(lambda st: setattr(st.step("step2"), "status", Progress.FAILED))
    fresh = ws.load_state()
    assert fresh.step("step1").hints == 1
    assert fresh.step("step2").status is Progress.FAILED
    assert stale.step("step1").hints == 0


def test_unknown_top_level_keys_survive(workspace):
    path = workspace / STATE_FILE
    data = state_of(workspace)
    data["teacher_note"] = "keep me"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert run(["hint", "step1"], workspace).exit_code == 0
    assert state_of(workspace)["teacher_note"] == "keep me"


# ---------------------------------------------------------------- hints
def test_hints_are_counted_persist_and_are_capped(workspace):
    n = len(load_catalog()[2].hints)
    for i in range(1, n + 1):
        res = run(["hint", "3"], workspace)
        assert_clean(res)
        assert res.exit_code == 0
        assert f"hint {i} of {n} (new)" in res.stdout
        assert state_of(workspace)["steps"]["step3"]["hints"] == i
    # every earlier hint stays readable
    for i in range(1, n + 1):
        assert f"hint {i} of {n}" in res.stdout
    # asking again reveals nothing new, shows them all, and the count stays capped
    res = run(["hint", "step3_softmax"], workspace)
    assert res.exit_code == 0
    assert "(new)" not in res.stdout
    assert f"All {n} hints are revealed" in res.stdout
    assert all(f"hint {i} of {n}" in res.stdout for i in range(1, n + 1))
    assert state_of(workspace)["steps"]["step3"]["hints"] == n
    status = run(["status"], workspace)
    assert f"{n}/{n}" in status.stdout


def test_hint_text_comes_from_the_exercise(workspace):
    res = run(["hint", "step1"], workspace)
    first_words = " ".join(load_catalog()[0].hints[0].split()[:4])
    assert first_words.replace("`", "") in joined(res.stdout).replace("`", "")
    assert "more: run `attn-practice hint step1` again" in joined(res.stdout)


def test_hint_without_a_step_uses_the_current_one(workspace):
    res = run(["hint"], workspace)
    assert res.exit_code == 0
    assert "step1 ·" in res.stdout
    assert state_of(workspace)["steps"]["step1"]["hints"] == 1


# ---------------------------------------------------------------- reset
EDITED = "import numpy as np\n\ndef scale_scores(scores, d_k):\n    return scores  # my attempt\n"


def test_reset_confirmed_backs_up_then_restores(workspace):
    (workspace / "step2_scale.py").write_text(EDITED, encoding="utf-8")
    res = run(["reset", "step2"], workspace, input="y\n")
    assert_clean(res)
    assert res.exit_code == 0
    assert "Replace step2_scale.py with a fresh stub?" in res.stdout
    assert (workspace / "step2_scale.py").read_text(encoding="utf-8") == load_catalog()[1].stub_source()
    backups = list((workspace / "backups").glob("step2_scale-*.py"))
    assert len(backups) == 1
    assert backups[0].read_text(encoding="utf-8") == EDITED
    assert f"Your previous version is in backups/{backups[0].name}" in joined(res.stdout)


def test_reset_declined_changes_nothing(workspace):
    (workspace / "step2_scale.py").write_text(EDITED, encoding="utf-8")
    res = run(["reset", "2"], workspace, input="n\n")
    assert_clean(res)
    assert res.exit_code == 0
    assert "Nothing changed." in res.stdout
    assert (workspace / "step2_scale.py").read_text(encoding="utf-8") == EDITED
    assert not (workspace / "backups").exists()


def test_reset_without_an_answer_changes_nothing(workspace):
    (workspace / "step2_scale.py").write_text(EDITED, encoding="utf-8")
    res = run(["reset", "step2"], workspace, input="")
    assert_clean(res)
    assert res.exit_code == 2
    assert "--yes" in res.stderr
    assert (workspace / "step2_scale.py").read_text(encoding="utf-8") == EDITED


def test_reset_twice_keeps_both_backups(workspace):
    for text in ("# first\n", "# second\n"):
        (workspace / "step2_scale.py").write_text(text, encoding="utf-8")
        assert run(["reset", "step2_scale", "--yes"], workspace).exit_code == 0
    contents = sorted(p.read_text(encoding="utf-8") for p in (workspace / "backups").iterdir())
    assert contents == ["# first\n", "# second\n"]


def test_reset_a_missing_file_puts_the_stub_back(workspace):
    (workspace / "step1_scores.py").unlink()
    res = run(["reset", "step1", "--yes"], workspace)
    assert res.exit_code == 0
    assert (workspace / "step1_scores.py").read_text(encoding="utf-8") == STUB1
    assert not (workspace / "backups").exists()


def test_reset_keeps_hint_count_and_clears_status(workspace):
    ws = Workspace(workspace)
    ws.update_state(lambda st: setattr(st.step("step1"), "status", Progress.FAILED))
    run(["hint", "step1"], workspace)
    (workspace / "step1_scores.py").write_text("# mine\n", encoding="utf-8")
    assert run(["reset", "step1", "-y"], workspace).exit_code == 0
    st = ws.load_state().step("step1")
    assert st.status is Progress.NOT_STARTED and st.hints == 1


# ---------------------------------------------------------------- finding the workspace
def test_commands_work_from_a_subfolder(workspace):
    deep = workspace / "a" / "b"
    deep.mkdir(parents=True)
    res = run(["status"], deep)
    assert_clean(res)
    assert res.exit_code == 0
    # a path longer than the terminal is wrapped inside: compared without the white space
    assert f"Progressin{workspace.resolve()}" in "".join(res.stdout.split())
    assert run(["hint", "step4"], deep).exit_code == 0
    assert state_of(workspace)["steps"]["step4"]["hints"] == 1
    (workspace / "step4_weighted_sum.py").write_text("# mine\n", encoding="utf-8")
    assert run(["reset", "step4", "--yes"], deep).exit_code == 0
    assert (workspace / "backups").is_dir() and not (deep / "backups").exists()


def test_find_workspace_walks_up(workspace):
    deep = workspace / "x" / "y"
    deep.mkdir(parents=True)
    assert find_workspace(deep).root == workspace.resolve()


def test_a_folder_with_one_stray_step_file_is_not_a_workspace(tmp_path):
    (tmp_path / "step1_scores.py").write_text("# mine\n", encoding="utf-8")
    with pytest.raises(wsmod.NotInWorkspace):
        find_workspace(tmp_path)


def test_create_workspace_reports_what_it_did(tmp_path):
    r1 = create_workspace(tmp_path / "w")
    assert not r1.existed and STATE_FILE in r1.created
    r2 = create_workspace(tmp_path / "w")
    assert r2.existed and r2.created == [] and STATE_FILE in r2.kept
