"""The engine: hidden suites run in this trusted process against sandboxed learners.

`engine` grades one submission (validate files, start sandboxes, run the suites,
collect a `GradeReport`); `plugin` is the pytest side (the `step` fixture,
outcomes turned into results); `replay` records and replays examples, `warm`
records them ahead of time, `hypothesis_setup` holds the one Hypothesis profile
and the seeding, `secret` the secret `grade` draws from; `diagnose/` names the
catalogued mistakes, alone or two together, behind a failing step; `shims`
builds the reference stand-ins for earlier steps; `speed` notes slow passing
code. It imports `sandbox/`, `suites/`, `reference/` and the shared top-level
modules; never `reports/`, `teaching/`, `staff/`, `commands/` or the CLI.
"""

import os as _os

# Hypothesis imports every installed package that registers a `hypothesis` entry point
# (trio does, ~0.15 s) the first time it is imported. Grading needs none of them, and a
# plugin could change how examples are drawn: off in the grader's process (and only there).
_os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")
