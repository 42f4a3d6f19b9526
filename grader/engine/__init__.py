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
