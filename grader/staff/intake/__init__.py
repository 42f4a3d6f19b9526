"""Submissions as students hand them in (CONTRACT 4.5): folders, zips, notebooks, single modules.

`Intake` prepares each argument into a folder of step files to grade plus
the warnings that say what was chosen; `Prepared.finish` puts those
warnings (and "what was found" for a missing step) on the graded report.
Nothing here runs learner code: archives and notebooks are read as bytes
and parsed.
"""

from attn_practice.grader.staff.intake.prepare import (
    Intake,
    Prepared,
    no_submission,
    prepare_all,
    skipped_warning,
    warning_lines,
)

__all__ = ["Intake", "Prepared", "no_submission", "prepare_all", "skipped_warning", "warning_lines"]
