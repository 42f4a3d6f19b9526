"""Course staff's side: batch and distributed grading, the results cache, selftest, CI set-ups.

Calls the engine over many submissions and hands reports to `reports/`. May import
`engine/`, `sandbox/` (the submission walker), `reports/` and the shared top-level
modules; never `teaching/`, `commands/` or the CLI.
"""
