"""The trust boundary: learner code runs here, in forked, locked-down processes.

The launcher (trusted side) starts a fork server, spawns one sandbox per step and
talks to it through `protocol` (JSON headers and raw number arrays, nothing that
executes). The learner side runs as its own interpreter: `zygote` (the fork
server), `jail` (what each child does to itself: namespaces, limits, uid),
`landlock`, `seccomp`, `cgroup`, and `server` (importing the learner's module
and answering calls). It may import only the standard library, NumPy,
`protocol` and `paths`: never pytest, Hypothesis, the engine or the reference.
Nothing above this package is imported from here.
"""
