"""Opening the check runner `--dask` names (default: the local pool)."""

from __future__ import annotations

from attn_practice.grader.engine.engine import RunOptions
from attn_practice.grader.host.checks.base import CheckRunner

__all__ = ["open_runner"]


def open_runner(dask_address: str | None, options: RunOptions, jobs: int | None = None) -> CheckRunner:
    """Both runners take (options, jobs); the Dask one also its scheduler's address."""
    if dask_address:
        from attn_practice.grader.host.checks.dask import DaskCheckRunner  # needs distributed

        return DaskCheckRunner(dask_address, options, jobs)
    from attn_practice.grader.host.checks.local import LocalCheckRunner

    return LocalCheckRunner(options, jobs)
