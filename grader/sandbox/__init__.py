"""The trust boundary: learner code runs here, in forked, locked-down processes.

The launcher (trusted side) starts a fork server, spawns one sandbox per step and
talks to it through `protocol` (JSON headers and raw number arrays, nothing that
executes). The server side (`server`, run as its own interpreter) may import only
the standard library, NumPy, `protocol` and `paths`: never pytest, Hypothesis,
the engine or the reference. Nothing above this package is imported from here.
"""
