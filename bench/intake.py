"""What reading submissions as handed in costs next to grading them (a ratio, not a time).

Prepares (unpacks, recognises, generates step files for) a class of N
submissions in the shapes students hand in: a zip of the folder, a notebook,
a single module, misnamed files, a plain folder. Prints the intake's time per
submission divided by the time `grade` takes for one plain submission on this
machine, so the figure travels between machines.

    python bench/intake.py [N]
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

import intake_helpers as H  # noqa: E402

from attn_practice.grader.staff.intake import Intake, prepare_all  # noqa: E402


def build(root: Path, n: int) -> list[Path]:
    out = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            out.append(H.zip_of(root / f"s{i}.zip", H.solved_members("attention-practice/")))
        elif kind == 1:
            shutil.copytree(H.SHAPES / "shapes_notebook", root / f"s{i}")
            out.append(root / f"s{i}")
        elif kind == 2:
            shutil.copytree(H.SHAPES / "shapes_single_module", root / f"s{i}")
            out.append(root / f"s{i}")
        elif kind == 3:
            shutil.copytree(H.SHAPES / "shapes_misnamed", root / f"s{i}")
            out.append(root / f"s{i}")
        else:
            out.append(H.solved(root / f"s{i}"))
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        args = build(root, n)
        t0 = time.perf_counter()
        with Intake() as intake:
            prepared, _ = prepare_all(intake, args)
        intake_each = (time.perf_counter() - t0) / n
        plain = H.solved(root / "plain")
        exe = Path(sys.executable).parent / "attn-practice"
        t0 = time.perf_counter()
        subprocess.run([str(exe), "grade", str(plain), "--format", "json", "--no-cache"],
                       capture_output=True, check=False)
        grade_one = time.perf_counter() - t0
    print(f"{n} submissions prepared; intake per submission / grading one plain submission = "
          f"{intake_each / grade_one:.4f}")


if __name__ == "__main__":
    main()
