"""axe-core, the accessibility engine, run inside a real page (no tests here).

    from axe import axe_violations    # tests/ is on sys.path
    bad = axe_violations(b)           # critical and serious violations, as short lines

The npm package is installed once per test session into a temp folder
(`npm install axe-core`); when npm or the registry is not there the test
skips and says why. `ATTN_PRACTICE_AXE` may name an `axe.min.js` already on
the machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

SERIOUS = ("critical", "serious")


@cache
def _axe_source() -> str | None:
    chosen = os.environ.get("ATTN_PRACTICE_AXE")
    if chosen and Path(chosen).is_file():
        return Path(chosen).read_text()
    npm = shutil.which("npm")
    if npm is None:
        return None
    where = Path(tempfile.mkdtemp(prefix="attnp-axe-"))
    try:
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "axe-core"], cwd=where,
                       capture_output=True, timeout=300, check=False)
        script = where / "node_modules" / "axe-core" / "axe.min.js"
        return script.read_text() if script.is_file() else None
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        shutil.rmtree(where, ignore_errors=True)


def axe_script() -> str:
    """axe.min.js's text, or a skip saying why it could not be had."""
    source = _axe_source()
    if source is None:
        pytest.skip("axe-core could not be had: `npm install axe-core` failed or npm is not installed "
                    "(set ATTN_PRACTICE_AXE to an axe.min.js to run these checks offline)")
    return source


def axe_results(b: Any) -> dict[str, Any]:
    """Run axe on the page as it is now (WCAG 2.x A and AA rules plus best practices)."""
    driver = getattr(b, "driver", b)
    driver.execute_script(axe_script())
    driver.set_script_timeout(120)
    return driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']})"
        "  .then((r) => done({violations: r.violations.map((v) => ({id: v.id, impact: v.impact,"
        "     help: v.help, nodes: v.nodes.slice(0, 5).map((n) => n.target.join(' ') + ' :: ' +"
        "     (n.failureSummary || '').split('\\n').slice(0, 3).join(' / '))}))}))"
        "  .catch((e) => done({error: String(e)}));")


def axe_violations(b: Any) -> list[str]:
    """The critical and serious violations on the page, one line each (empty: none)."""
    out = axe_results(b)
    assert "error" not in out, f"axe-core failed to run: {out.get('error')}"
    return [f"{v['impact']}: {v['id']} ({v['help']}): {'; '.join(v['nodes'])}"
            for v in out["violations"] if v["impact"] in SERIOUS]


__all__ = ["axe_results", "axe_script", "axe_violations"]
