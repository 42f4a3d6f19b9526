"""One Hypothesis profile per (max_examples, shrink, secret), shared by engine and replay.

Its own module so that the engine and the example replay can both set it up
without importing each other. `check` derives its examples from each test
(the same public examples on every machine); `grade` seeds every test from
a secret (CONTRACT 4.3), so a table of the public examples is worth nothing.
"""

from __future__ import annotations

import hashlib
from typing import Any


def configure_hypothesis(max_examples: int, shrink: bool = True) -> None:
    from hypothesis import HealthCheck, Phase, Verbosity, settings

    _no_local_constants()

    name = f"attn-practice-{max_examples}{'' if shrink else '-noshrink'}"
    settings.register_profile(
        name,
        max_examples=max_examples,
        derandomize=True,  # same inputs every run, on every machine (unless seeded: see seed_test)
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        report_multiple_bugs=False,
        phases=(Phase.explicit, Phase.generate, Phase.shrink) if shrink else (Phase.explicit, Phase.generate),
        print_blob=False,
        verbosity=Verbosity.quiet,
    )
    settings.load_profile(name)


def _no_local_constants() -> None:
    """Draw no constants from the modules this process happens to have imported.

    Hypothesis mixes literals found in "local" modules (any imported module
    outside site-packages and the standard library) into about one draw in
    twenty. Which of ours are imported depends on the process's history (a
    diagnosis imported at a first failure, a page rendered in `serve`) and on
    the install (an editable checkout is local, a wheel is not), so the same
    secret drew other examples: a report depended on what ran before it.
    Private Hypothesis API, hence guarded. `tests/test_suites_contract_order.py` fails
    if it stops holding (in a checkout installed with `pip install -e`, as CI does, the
    diagnosis, imported at a grade's first failure, brings its literals along).
    """
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError:
        return
    if getattr(providers._get_local_constants, "_attn_practice", False):
        return
    empty = Constants()

    def local_constants() -> Any:
        return empty

    local_constants._attn_practice = True  # type: ignore[attr-defined]
    providers._get_local_constants = local_constants
    cache = getattr(providers, "CONSTANTS_CACHE", None)
    if cache is not None and hasattr(cache, "cache"):
        cache.cache.clear()  # pools already filled from local modules


def test_seed(secret: str, nodeid: str) -> int:
    """The seed `nodeid`'s examples are drawn from under `secret` (stable, secret-dependent)."""
    digest = hashlib.sha256(f"attn-practice-examples/1|{secret}|{nodeid}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


def seed_test(test: Any, secret: str | None, nodeid: str) -> None:
    """Ready a Hypothesis test to run now: seeded from `secret` (None: the public derandomised
    examples), under the profile loaded now.

    `@given` keeps the settings that were the default when the suite's module was
    imported, and a process imports it once: an engine with other settings (a `grade`
    without shrinking, then a `check` with it, in one `serve`, `host` or notebook
    process) would otherwise run the test under the first engine's settings, and a
    report would depend on what the process graded before. A test with a `@settings`
    of its own (an instructor's private suite) keeps those.
    """
    from hypothesis import settings

    target = getattr(test, "__func__", test)
    try:
        target._hypothesis_internal_use_seed = test_seed(secret, nodeid) if secret is not None else None
        if not getattr(target, "_hypothesis_internal_settings_applied", False):
            target._hypothesis_internal_use_settings = settings.default
    except AttributeError:
        pass
