"""What the grader's process loads at start: no Hypothesis plugins of other packages.

Hypothesis imports every package with a `hypothesis` entry point on its first
import (trio registers one: ~0.15 s, a third of `check`'s import floor). The
engine turns that off for its own process; the learner's sandbox never runs
Hypothesis at all.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys

import pytest


def test_the_engine_loads_no_hypothesis_plugin():
    plugins = [e for e in importlib.metadata.entry_points(group="hypothesis")]
    if not plugins:
        pytest.skip("no package here registers a Hypothesis plugin")
    roots = sorted({p.value.split(".")[0] for p in plugins})
    code = ("import sys, attn_practice.grader.engine.engine, hypothesis; "
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({roots!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
