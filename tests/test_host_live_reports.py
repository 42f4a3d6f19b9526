"""What a learner saw stays (CONTRACT §7.1): the step API gives each step's last stored report
after a reload, a restart of the server and a resume on another computer, marked stale when the
code was saved again since; the header's status and the report agree; checking too often keeps
the last report and says when the next check can run.

Through the installed console script and real HTTP on loopback, as the page calls it.
"""

from __future__ import annotations

import re

import pytest
from test_host_support import HostProcess, implementation

pytestmark = pytest.mark.slow

WRONG = implementation("step2", "wrong_scale_by_dk")
RIGHT = implementation("step2", "correct_np_sqrt")


def _resume(h: HostProcess, link: str):
    """Another computer: a fresh client with no cookie, opening the personal resume link."""
    c = h.client()
    path = link.replace(h.base, "")
    r = c.get(path)
    if r.status_code == 200 and 'name="csrf"' in r.text:  # "Continue as ...?": the POST signs in
        csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
        r = c.post(path, data={"csrf": csrf})
    assert r.status_code == 303, r.text
    return c


def _saved_wrong(h: HostProcess, name: str):
    """A learner who joined and saved step 2 with the scale-by-dk mistake: (client, headers, link)."""
    c, token, link = h.join(name)
    headers = {"X-Attn-Token": token}
    assert c.post("/api/step/step2/save", json={"content": WRONG, "base": ""},
                  headers=headers).status_code == 200
    return c, headers, link


def test_reload_restart_and_resume_keep_the_last_report(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c, headers, link = _saved_wrong(h, "Ann")
        checked = c.post("/api/step/step2/check", json={}, headers=headers).json()
        assert checked["status"] == "failed" and "scale-by-dk" in checked["diagnoses"]
        assert checked["stale"] is False and checked["checked_at"] > 0

        page = c.get("/api/step/step2").json()  # a reload
        last = page["last_report"]
        assert last is not None, "a reload lost the report the learner saw"
        assert (last["status"], last["diagnoses"], last["stale"]) == ("failed", ["scale-by-dk"], False)
        assert last["version"] == page["version"] == checked["version"]
        assert last["html"] == checked["html"], "a reload shows less than the check showed"
        assert page["status"] == "failed" and page["stale"] is False  # the header says the same
        assert c.get("/api/step/step1").json()["last_report"] is None  # never checked: nothing
    finally:
        h.stop()

    again = HostProcess(tmp_path / "class")  # a restart of the server
    try:
        other = _resume(again, link.replace(h.base, again.base))  # ... and a resume elsewhere
        page = other.get("/api/step/step2").json()
        assert page["last_report"] is not None, "a restart or a resume lost the report"
        assert page["last_report"]["status"] == "failed" and page["last_report"]["stale"] is False
        assert page["last_report"]["html"] == last["html"]
        summary = {s["id"]: s for s in other.get("/api/summary").json()["steps"]}
        assert (summary["step2"]["status"], summary["step2"]["stale"]) == ("failed", False)
    finally:
        again.stop()


def test_a_report_of_older_code_comes_back_marked_stale(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c, headers, link = _saved_wrong(h, "Ben")
        assert c.post("/api/step/step2/check", json={}, headers=headers).json()["status"] == "failed"
        saved = c.post("/api/step/step2/save", json={"content": RIGHT, "base": None}, headers=headers)
        assert saved.status_code == 200

        page = _resume(h, link).get("/api/step/step2").json()
        assert page["version"] == saved.json()["version"]
        assert page["last_report"]["stale"] is True, "a report of older code was shown as current"
        assert page["last_report"]["version"] != page["version"]
        assert page["stale"] is True and page["status"] == "failed"  # header: "changed since (failed then)"
        summary = {s["id"]: s for s in c.get("/api/summary").json()["steps"]}
        assert summary["step2"]["stale"] is True

        done = c.post("/api/step/step2/check", json={}, headers=headers).json()
        assert done["status"] == "passed"
        page = c.get("/api/step/step2").json()
        assert (page["status"], page["stale"], page["last_report"]["stale"]) == ("passed", False, False)
        assert page["last_report"]["status"] == "passed"
    finally:
        h.stop()


def test_checking_too_often_keeps_the_report_and_says_when_to_check_again(tmp_path):
    h = HostProcess(tmp_path / "class")
    try:
        c, headers, _ = _saved_wrong(h, "Cam")
        answers = [c.post("/api/step/step2/check", json={}, headers=headers) for _ in range(6)]
        refused = [r for r in answers if r.status_code == 429]
        assert refused, "six checks in a row were all allowed: the limit is not exercised"
        body = refused[0].json()
        assert isinstance(body["retry_after"], int) and body["retry_after"] >= 1
        assert refused[0].headers["Retry-After"] == str(body["retry_after"])
        assert body["step"] == "step2" and "last report stays" in body["error"]
        page = c.get("/api/step/step2").json()
        assert page["last_report"]["status"] == "failed" and page["last_report"]["stale"] is False
    finally:
        h.stop()
