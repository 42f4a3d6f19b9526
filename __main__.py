"""`python -m attn_practice` runs the same CLI as `attn-practice`.

`-m` puts the current directory first on sys.path; when grading from inside a
submission that would let its `numpy.py` shadow the real one in the grader
itself, so it is dropped before anything else is imported.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from attn_practice.cli import main  # noqa: E402

main()
