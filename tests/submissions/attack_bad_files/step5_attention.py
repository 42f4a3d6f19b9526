"""Attack: import the answer from helper.py, a symlink to the grader's own reference."""

from helper import attention  # noqa: F401
