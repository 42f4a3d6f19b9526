"""Attack: a conftest.py that marks every test passed and deselects the rest."""

import os

import pytest

os.environ["ATTN_ATTACK_CONFTEST"] = "loaded"
open("/tmp/ATTN-ATTACK-conftest-loaded", "w").write("ATTN-ATTACK conftest loaded")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
    report.longrepr = None


def pytest_collection_modifyitems(session, config, items):
    items[:] = [i for i in items if "worked" in i.name]
