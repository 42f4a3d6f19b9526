"""The learner's side: workspace, `check`, the worked example, widgets, watch, notebooks.

Calls the engine and draws what it returns: `screens` only renders results it is
handed and never starts a sandbox. May import `engine/`, `reports/` and the shared
top-level modules; never `staff/`, `commands/` or the CLI.
"""
