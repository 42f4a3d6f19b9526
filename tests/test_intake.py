"""Intake without grading: zips unpacked safely, notebooks read as data, functions taken by name.

Fast: nothing here starts a sandbox. What a graded report says about each shape is in
test_intake_cli.py (through the installed console script).
"""

from __future__ import annotations

import ast
import os
import time
from pathlib import Path

import intake_helpers as H
import pytest

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.staff.intake import Intake
from attn_practice.grader.staff.intake.archive import ArchiveRefused, ArchiveUnreadable, unpack
from attn_practice.grader.staff.intake.extract import Chunk, extract, parse
from attn_practice.grader.staff.intake.names import step_for_name
from attn_practice.grader.staff.intake.notebook import NotebookError, parse_cells, python_text
from attn_practice.grader.staff.intake.recognise import SourceKind, recognise

# ------------------------------------------------------------ zips


@pytest.mark.parametrize(("make", "words"), [
    (H.slip_zip, "outside the folder"),
    (lambda p: H.slip_zip(p, "/tmp/attn_absolute_escape.py"), "absolute name"),
    (lambda p: H.slip_zip(p, "C:\\evil.py"), "absolute name"),
    (H.symlink_zip, "symbolic link"),
    (H.ratio_bomb, "zip bomb"),
    (H.total_bomb, "in all"),
    (H.many_members, "10006 members"),
    (H.declared_2gib, "declares 2.0 GiB"),
])
def test_hostile_zips_are_refused_whole_before_anything_is_written(tmp_path, make, words):
    archive = make(tmp_path / "hostile.zip")
    dest = tmp_path / "out" / "unpacked"
    (tmp_path / "out").mkdir()
    with pytest.raises(ArchiveRefused) as info:
        unpack(archive, dest)
    assert words in str(info.value)
    assert not dest.exists()  # refused before a single member was written
    assert not (tmp_path.parent / "escaped_by_zip.py").exists()
    assert not Path("/tmp/attn_absolute_escape.py").exists()


def test_a_broken_zip_is_unreadable_not_a_crash(tmp_path):
    bad = tmp_path / "a.zip"
    bad.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ArchiveUnreadable, match="not a readable zip"):
        unpack(bad, tmp_path / "x")


def test_an_over_size_member_is_left_out_with_a_note_and_the_rest_unpacked(tmp_path):
    archive = H.zip_of(tmp_path / "a.zip", {**H.solved_members(), "data/big.npy": os.urandom(9 << 20)})
    out = unpack(archive, tmp_path / "x")
    assert (tmp_path / "x" / "step1_scores.py").read_text() == H.REFERENCE
    assert not (tmp_path / "x" / "data" / "big.npy").exists()
    assert any("big.npy left out" in n for n in out.notes)


def test_macos_metadata_is_not_unpacked_and_member_times_are_kept(tmp_path):
    archive = H.zip_of(tmp_path / "a.zip", {**H.solved_members("work/"), "__MACOSX/work/._step1_scores.py": "x"})
    unpack(archive, tmp_path / "x")
    assert not (tmp_path / "x" / "__MACOSX").exists()
    stamp = (tmp_path / "x" / "work" / "step1_scores.py").stat().st_mtime
    assert time.localtime(stamp)[:3] == (2024, 5, 1)


# ------------------------------------------------------------ notebooks


def test_magics_shell_escapes_and_help_become_pass_and_other_cell_magics_are_dropped():
    text = python_text("!pip install numpy\n%timeit f(x)\nfiles = !ls\nnp.dot?\nfor i in range(2):\n    !echo $i\n")
    assert text is not None
    ast.parse(text)  # valid Python now
    assert "pip" not in text and "timeit" not in text and "ls" not in text and "echo" not in text
    assert text.splitlines()[5] == "    pass"  # indent kept: the loop still has a body
    assert python_text("%%bash\nrm -rf /\n") is None
    assert python_text("%%writefile step1_scores.py\nimport os\n") is None
    kept = python_text("%%time\nx = 1\n")
    assert kept is not None and "x = 1" in kept and "%%" not in kept


def test_broken_notebook_json_is_a_clear_error():
    with pytest.raises(NotebookError, match=r"broken notebook JSON \(line 1"):
        parse_cells(b'{"cells": [')
    with pytest.raises(NotebookError, match="no list of cells"):
        parse_cells(b'{"a": 1}')
    with pytest.raises(NotebookError, match="broken notebook JSON"):
        parse_cells(b"[" * 100_000)  # deep nesting: RecursionError inside json, caught


def test_nbformat_3_is_read():
    cells = parse_cells(b'{"worksheets": [{"cells": [{"cell_type": "code", "input": ["x = 1\\n"]}]}]}')
    assert [c.source.strip() for c in cells] == ["x = 1"]


# ------------------------------------------------------------ taking a function by name


def _extract(*cells: str, name: str) -> str | None:
    return extract(parse([Chunk(f"nb, cell {i}", c) for i, c in enumerate(cells, 1)]), name)


def test_a_function_comes_with_the_imports_and_helpers_it_uses_and_nothing_else():
    text = _extract(
        "import numpy as np\nimport matplotlib.pyplot as plt\n",
        "SCALE = 2.0\nQ = np.random.rand(3, 4)\nprint(Q)\n",
        "def helper(x):\n    return x * SCALE\n",
        "def scale_scores(scores, d_k):\n    Q = scores\n    return helper(Q) / np.sqrt(d_k) / SCALE\n",
        "scale_scores(Q, 4)\nraise SystemExit('never')\n",
        name="scale_scores")
    assert text is not None
    ns: dict = {}
    exec(compile(text, "gen", "exec"), ns)  # the generated module runs on its own
    assert ns["scale_scores"](4.0, 4) == 2.0
    assert "matplotlib" not in text and "random" not in text and "SystemExit" not in text
    assert "print" not in text


def test_the_last_definition_wins_and_later_constants_resolve_in_function_bodies():
    text = _extract("def softmax(x, axis=-1):\n    return 'old'\n",
                    "def softmax(x, axis=-1):\n    return K\n", "K = 'new'\n", name="softmax")
    ns: dict = {}
    exec(compile(text or "", "gen", "exec"), ns)
    assert ns["softmax"](0) == "new" and "'old'" not in (text or "")


def test_a_name_defined_only_by_import_is_not_taken_and_a_missing_name_gives_none():
    parsed = parse([Chunk("m", "from step3_softmax import softmax\n")])
    from attn_practice.grader.staff.intake.extract import defines
    assert not defines(parsed, "softmax")
    assert _extract("x = 1\n", name="softmax") is None


# ------------------------------------------------------------ names and the rule


@pytest.mark.parametrize(("name", "step"), [
    ("step1_scores.py", "step1"), ("step1.py", "step1"), ("Step2_Scale.py", "step2"),
    ("step3_softmax (1).py", "step3"), ("step4_weighted_sum - Copy.py", "step4"),
    ("STEP5_ATTENTION.PY", "step5"), ("step_6.py", "step6"), ("Step 7.py", "step7"),
    ("step8-multi-head.py", "step8"), ("notes.py", None), ("step1_scores.txt", None), ("steps.py", None),
])
def test_near_miss_names(name, step):
    found = step_for_name(name, load_catalog())
    assert (found.id if found else None) == step


def test_two_versions_in_one_folder_newest_then_shortest(tmp_path):
    (tmp_path / "step3_softmax.py").write_text(H.REFERENCE)
    (tmp_path / "step3_softmax (1).py").write_text(H.REFERENCE)
    os.utime(tmp_path / "step3_softmax.py", (1_000_000, 1_000_000))
    rec = recognise(tmp_path)
    assert rec.chosen["step3"].entry.name == "step3_softmax (1).py"
    assert any("2 candidate versions" in w and "newest modification time" in w for w in rec.warnings)
    os.utime(tmp_path / "step3_softmax (1).py", (1_000_000, 1_000_000))
    rec = recognise(tmp_path)
    assert rec.chosen["step3"].entry.name == "step3_softmax.py"  # same time: the shorter path


def test_an_exact_step_file_alone_is_silent_and_graded_in_place(tmp_path):
    H.solved(tmp_path / "s")
    with Intake() as intake:
        prepared = intake.prepare(tmp_path / "s")
    assert prepared is not None and prepared.path == tmp_path / "s" and prepared.warnings == []


def test_intake_leaves_nothing_behind(tmp_path):
    archive = H.zip_of(tmp_path / "a.zip", H.solved_members("attention-practice/"))
    with Intake() as intake:
        prepared = intake.prepare(archive)
        assert prepared is not None and (prepared.path / "step1_scores.py").is_file()
        where = intake.tmp
    assert not where.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.zip"]


def test_a_module_is_taken_apart_by_name_not_copied(tmp_path):
    rec = recognise(H.SHAPES / "shapes_single_module")
    src = rec.chosen["step3"]
    assert src.kind is SourceKind.MODULE and src.text is not None
    assert b"SystemExit" not in src.text and b"def softmax" in src.text


def test_a_near_miss_function_name_is_graded_under_the_contract_name_with_a_warning(tmp_path):
    (tmp_path / "hw.py.txt").write_text("import numpy as np\n\n\ndef Soft_Max(x, axis=-1):\n    return x\n")
    rec = recognise(tmp_path)
    src = rec.chosen["step3"]
    assert src.taken == "Soft_Max" and src.text is not None
    ns: dict = {}
    exec(compile(src.text, "gen", "exec"), ns)
    assert ns["softmax"] is ns["Soft_Max"]
    assert any("no function named softmax; graded Soft_Max from hw.py.txt" in w for w in rec.warnings)
    assert not any("no function named dot_scores" in w for w in rec.warnings)


def test_a_zip_is_known_by_its_bytes_whatever_its_name(tmp_path):
    H.zip_of(tmp_path / "submission", H.solved_members())
    (tmp_path / "notes").write_text("not a zip")
    with Intake() as intake:
        prepared = intake.prepare(tmp_path / "submission")
        assert prepared is not None and (prepared.path / "step5_attention.py").is_file()
        notes = intake.prepare(tmp_path / "notes")  # a plain file is a submission too (issue 36): missing
        assert notes.nothing and "found: notes" in notes.missing


def test_a_zip_further_down_is_opened_and_named(tmp_path):
    (tmp_path / "handin").mkdir()
    H.zip_of(tmp_path / "handin" / "attention.zip", H.solved_members("work/"))
    (tmp_path / "README.md").write_text("my repo\n")
    with Intake() as intake:
        prepared = intake.prepare(tmp_path)
        assert prepared is not None and (prepared.path / "step3_softmax.py").is_file()
    assert "graded the work inside handin/attention.zip" in prepared.warnings
    assert "graded the folder work/ inside handin/attention.zip" in prepared.warnings


def test_an_unreadable_submission_is_reported_and_the_others_prepared(tmp_path):
    from attn_practice.grader.staff.intake import prepare_all

    locked = H.solved(tmp_path / "locked")
    good = H.solved(tmp_path / "good")
    with Intake() as intake:
        original = intake.prepare

        def flaky(arg: Path):
            if arg == locked:
                raise PermissionError(13, "Permission denied")
            return original(arg)

        intake.prepare = flaky  # type: ignore[method-assign]
        prepared, skipped = prepare_all(intake, [locked, good])
    assert skipped == [] and [p.label for p in prepared] == [str(locked), str(good)]
    assert prepared[0].nothing and "could not be read (PermissionError" in prepared[0].warnings[0]
    assert not prepared[1].nothing and prepared[1].warnings == []


def test_writefile_cells_are_read_as_the_files_they_write_never_run(tmp_path):
    H.notebook(["%%writefile utils.py\nimport numpy as np\n\n\ndef root(d):\n    return np.sqrt(d)\n",
                "%%writefile step2_scale.py\nfrom utils import root\n\n\ndef scale_scores(scores, d_k):\n"
                "    return scores / root(d_k)\n",
                "%%writefile ../escape.py\nprint('never')\n",
                "%%bash\necho never\n"], tmp_path / "hw.ipynb")
    rec = recognise(tmp_path)
    src = rec.chosen["step2"]
    assert src.kind is SourceKind.NAMED and src.text is not None and b"root(d_k)" in src.text
    assert set(rec.extra_files) == {"utils.py"}
    assert any("step2_scale.py as written by %%writefile in hw.ipynb" in w for w in rec.warnings)
    with Intake() as intake:
        prepared = intake.prepare(tmp_path)
        assert prepared is not None
        assert sorted(p.name for p in prepared.path.iterdir()) == ["step2_scale.py", "utils.py"]


def test_step_files_are_parsed_only_where_they_decide_between_sources(tmp_path, monkeypatch):
    """One file per step and no other code (most of a class): graded without parsing (issue 22's
    intake cost). Two files for one step: the one that defines the function wins, whichever is
    newer, so there the files are parsed."""
    from attn_practice.grader.staff.intake import recognise as rec_mod

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "step2_scale.py").write_text("def scale_scores(scores, d_k):\n    return scores\n")
    parsed: list[str] = []
    real_code = rec_mod._code
    monkeypatch.setattr(rec_mod, "_code", lambda entry, kind: parsed.append(entry.name) or real_code(entry, kind))
    assert recognise(plain).chosen["step2"].entry.name == "step2_scale.py"
    assert parsed == []

    two = tmp_path / "two"
    two.mkdir()
    (two / "step2-scale.py").write_text("def scale_scores(scores, d_k):\n    return scores / d_k ** 0.5\n")
    (two / "step2_scale.py").write_text("# moved to the other file\n")
    os.utime(two / "step2-scale.py", (1_000_000, 1_000_000))  # older: only `defines` can pick it
    chosen = recognise(two).chosen["step2"]
    assert chosen.entry.name == "step2-scale.py" and chosen.defines
    assert sorted(parsed) == ["step2-scale.py", "step2_scale.py"]
