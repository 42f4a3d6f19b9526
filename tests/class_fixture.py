"""A small class of real learner folders with known mistakes, for the class report.

`build_class(root)` writes the folders; `python tests/class_fixture.py`
grades them with the installed grader and rewrites the fixture JSON under
`tests/data/class/` (two files, as two sections of a course would hand in).
The hand counts in `test_class_report.py` were made from those files.

What each learner did (the files are the labelled implementations under
`tests/implementations/`, so each mistake is one a test already pins down):

| folder | step files |
|---|---|
| alice | all five core steps right |
| bob | step1 `K.T` (transpose-all-axes); step5 imports step1 |
| carol | step2 no-scale; step3 unstable softmax |
| dave | step3 unstable softmax; step4 weights transposed |
| erin | step1 negated (no id); step3 hardmax (no id) |
| frank | step1 negated (no id); no step5 file |
| grace | step2 a syntax error |
| `<b>heidi</b>` | step4 raises an error whose message holds `</script><script>` |
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
IMPL = HERE / "implementations"
DATA = HERE / "data" / "class"
sys.path.insert(0, str(HERE))

from conftest import CORE, solution_source  # noqa: E402

FILES = {"step1": "step1_scores.py", "step2": "step2_scale.py", "step3": "step3_softmax.py",
         "step4": "step4_weighted_sum.py", "step5": "step5_attention.py"}
SCRIPT_MESSAGE = "</script><script>alert('x')</script> & <b>bold</b>"
HEIDI = "<b>heidi</b>"

#: folder -> {step: implementation label, "MISSING", or source text}; other core steps correct.
CLASS: dict[str, dict[str, str]] = {
    "alice": {},
    "bob": {"step1": "wrong_transpose_all_axes"},
    "carol": {"step2": "wrong_no_scale", "step3": "wrong_softmax_unstable"},
    "dave": {"step3": "wrong_softmax_unstable", "step4": "wrong_weights_transposed"},
    "erin": {"step1": "wrong_other_negated", "step3": "wrong_other_hardmax"},
    "frank": {"step1": "wrong_other_negated", "step5": "MISSING"},
    "grace": {"step2": "def scale_scores(scores, d_k)\n    return scores\n"},
    HEIDI: {"step4": f"def weighted_sum(weights, V):\n    raise ValueError({SCRIPT_MESSAGE!r})\n"},
}
#: the two sections' files: which folders each holds
SECTIONS = {"section-a.json": ["alice", "bob", "carol", "dave"],
            "section-b.json": ["erin", "frank", "grace", HEIDI]}


def build_class(root: Path, names: list[str] | None = None) -> list[Path]:
    """Write the learner folders of `CLASS` (or just `names`) under `root`."""
    out = []
    for name in names or list(CLASS):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        plan = CLASS[name]
        for step in CORE:
            what = plan.get(step)
            path = folder / FILES[step]
            if what == "MISSING":
                continue
            if what is None:
                path.write_text(solution_source(step), encoding="utf-8")
            elif what.startswith(("wrong_", "correct_")):
                shutil.copyfile(IMPL / step / f"{what}.py", path)
            else:
                path.write_text(what, encoding="utf-8")
        out.append(folder)
    return out


def regenerate() -> None:
    """Grade the class with the installed grader and rewrite the fixture files."""
    import tempfile

    exe = Path(sys.executable).with_name("attn-practice")
    with tempfile.TemporaryDirectory() as tmp:
        build_class(Path(tmp))
        DATA.mkdir(parents=True, exist_ok=True)
        for file, names in SECTIONS.items():
            subprocess.run([str(exe), "grade", *names, "--format", "json", "--out",
                            str(DATA / file), "--no-cache"], cwd=tmp, check=False,
                           env={**os.environ, "ATTN_PRACTICE_SECRET": "class-fixture"})


if __name__ == "__main__":
    regenerate()
