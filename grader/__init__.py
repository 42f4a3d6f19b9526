"""The grader: everything between a learner's step files and a report.

Layers, from the bottom: `sandbox/` runs learner code behind the trust boundary
and hands back plain data; `engine/` runs the hidden `suites/` against those
sandboxes in this process and turns outcomes into the report model
(`results.py`); `reports/` writes a report as text; `teaching/` (the learner's
commands, workspace, widgets) and `staff/` (batch grading, cache, CI set-ups)
call the engine; `commands/` holds the Click groups beyond `cli.py`'s core.
Top-level modules (`results`, `catalog`, `course`, `atomic`, `paths`) are shared
by every layer and import none of them.
"""
