"""`attn-practice serve`: the lesson, the editor, the checks and the widgets in a browser.

`server` is the HTTP front (standard library only: token, Host and Origin
checks, routes, server-sent events); `bridge` is the one adapter onto the
teaching layer (workspace state, `run_check`, the worked example, explore's
computations); `html` turns lessons and check reports into escaped HTML.
Learner code runs only in the sandbox, as for `check`.
"""
