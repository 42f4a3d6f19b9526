"""Two `host` processes on one PostgreSQL, driven by two real browsers (headless Chromium).

The learner's browser works on process A (join, write a wrong step 1, Check);
the instructor's browser watches process B: the grid and the misconception
table change there by themselves. Then the learner opens process B: the same
work, as a load balancer may send them to either.
"""

from __future__ import annotations

import textwrap

import pytest
from browser import browser
from pg_cluster import cluster_or_skip
from test_host_pg_processes import HostProcess

pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow

ELEMENTWISE = textwrap.dedent("""\
    import numpy as np

    def dot_scores(Q, K):
        return np.asarray(Q) * np.asarray(K)
""")


@pytest.fixture
def two_hosts(tmp_path):
    with cluster_or_skip() as pg:
        url = pg.create_database("browsers")
        a = HostProcess(tmp_path / "a", url)
        try:
            b = HostProcess(tmp_path / "b", url)
            try:
                yield a, b
            finally:
                b.stop()
        finally:
            a.stop()


def _ready(d) -> bool:
    return d.execute_script("return document.body.dataset.ready") == "true"


def test_learner_on_one_process_instructor_on_the_other(two_hosts):
    from selenium.webdriver.common.by import By

    a, b = two_hosts
    with browser(1280, 900) as teacher, browser(1280, 900) as learner:
        teacher.get(b.base + b.teach_path)
        teacher.wait_for(lambda d: d.find_elements(By.CSS_SELECTOR, "#grid"), message="no grid")

        learner.get(a.base + a.join_path)
        learner.find_element(By.ID, "display_name").send_keys("Ada Lovelace")
        learner.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        try:
            learner.wait_for(lambda d: d.find_elements(By.ID, "start"), timeout=10)
        except Exception:
            raise AssertionError(f"no resume page: {learner.driver.page_source[:800]}") from None
        learner.find_element(By.ID, "start").click()
        learner.wait_for(_ready, message="the learner's page never became ready")

        # The instructor on the other process sees the new learner without reloading.
        teacher.wait_for(lambda d: "Ada Lovelace" in d.find_element(By.ID, "grid").text,
                         message="the new learner never showed on the other process's grid")

        learner.execute_script("const t = document.getElementById('code'); t.value = arguments[0];"
                               "t.dispatchEvent(new Event('input', {bubbles: true}));", ELEMENTWISE)
        learner.find_element(By.ID, "check").click()
        learner.wait_for(lambda d: "elementwise-product" in d.find_element(By.ID, "report-body").text,
                         message="the check did not name the mistake")

        teacher.wait_for(lambda d: "elementwise-product" in d.find_element(By.ID, "misconceptions").text,
                         message="the misconception never reached the other process's page")
        assert "Ada Lovelace" in teacher.find_element(By.ID, "misconceptions").text

        # The same learner (same browser, same cookie) on the other process: the same work.
        learner.get(b.base + "/")
        learner.wait_for(_ready, message="the learner's page on process B never became ready")
        assert learner.find_element(By.ID, "code").get_attribute("value") == ELEMENTWISE
        assert not [e for e in learner.console_errors() if "favicon" not in e]
        assert not [e for e in teacher.console_errors() if "favicon" not in e]
