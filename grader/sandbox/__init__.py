"""The trust boundary: learner code runs here, in forked, locked-down processes.

The trusted side: `launcher` starts a fork server and spawns one sandbox per
step, talking to it through `protocol` (JSON headers and raw number arrays,
nothing that executes); `learner` is what the suites call, `failures` turns
replies into a learner's messages, `printed` is what a report shows of its
printing, `prefetch` batches replayed calls, and `submission` is the one
walker over a submission's files (what a sandbox, the cache key and a remote
worker each take from it).

The learner side runs as its own interpreter: `zygote` (the fork server),
`jail` (what each child does to itself: namespaces, limits, uid), `landlock`,
`seccomp`, `cgroup`, and `server` (importing the learner's module and
answering calls). It may import only the standard library, NumPy, `protocol`
and `paths`: never pytest, Hypothesis, the engine or the reference. Nothing
above this package is imported from here.
"""
