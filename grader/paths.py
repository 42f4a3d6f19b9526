"""Where things are: the installed package, its hidden suites, and the user's folders.

The one place that does arithmetic on `__file__`. Modules that need the package
root, the suites directory or the data and cache folders import them from here,
so moving a module never silently changes what it points at. Standard library
only: the sandbox fork server imports this module before it locks itself down.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the directory of the installed `attn_practice` package (this file's grandparent)
PACKAGE_ROOT: Path = Path(os.path.realpath(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
#: the hidden pytest + Hypothesis suites, one file per step
SUITES_DIR: Path = PACKAGE_ROOT / "grader" / "suites"
#: the suites' own pytest configuration (markers, no rootdir conftest)
SUITE_INI: Path = SUITES_DIR / "pytest.ini"
#: the exercises: lessons, stubs and the shared lesson data
EXERCISES_DIR: Path = PACKAGE_ROOT / "exercises"
