"""A hosted class launched from an LMS (CONTRACT §8), in real Chromium, against the real console script.

The LMS is `lti_platform.Platform` on loopback. Learners arrive signed in
(no join form), the same person from a second browser is the same learner,
an instructor lands on the instructor page with no key; each refused launch
of §8 gets a page that says what was wrong and no session; a check's score
reaches the platform's gradebook, and one queued while the platform answers
503 still arrives, once and in order, across a `kill -9` of the tool.
"""

from __future__ import annotations

import subprocess
from datetime import datetime
from pathlib import Path

import pytest
from browser import browser
from lti_platform import USERS, Platform, platform_fixture  # noqa: F401 - the `platform` fixture
from serve_helpers import wait_until
from test_host_support import HostProcess, console_script, implementation

pytestmark = pytest.mark.slow


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([console_script(), "host", "lti", *args], capture_output=True, text=True,
                          timeout=120)


def tool_for(platform: Platform, data: Path, port: int = 0) -> HostProcess:
    h = HostProcess(data, port=port)
    platform.tool_base = h.base
    done = cli("config", str(data), "--url", h.base)
    assert done.returncode == 0, done.stderr
    return h


def ready(b) -> bool:
    return b.execute_script("return document.body.dataset.ready") == "true"


def launch(b, platform: Platform, user: str, mode: str = "ok") -> None:
    b.get(platform.start_url(user, mode))


def launched_learner(b, platform: Platform, user: str) -> None:
    launch(b, platform, user)
    b.wait_for(ready, timeout=60, message=f"{user}'s lesson page never became ready after the launch")


def refused(b, platform: Platform, tool: str, user: str, mode: str, words: str) -> None:
    launch(b, platform, user, mode)
    b.wait_for(lambda d: d.find_elements("id", "lti-refused"), message=f"{mode}: no refusal page")
    text = b.find_element("id", "lti-refused").text
    assert words in text, (mode, text)
    b.get(f"{tool}/api/summary")  # and no session came of it
    assert "not signed in" in b.page_source, (mode, b.page_source[:300])


def grid_cell(d, name: str, step: str) -> str | None:
    return d.execute_script(
        "for (const tr of document.querySelectorAll('#grid tbody tr')) {"
        "  const th = tr.querySelector('th'); if (th && th.textContent.startsWith(arguments[0])) {"
        "    const td = tr.querySelector(`td[data-step=\"${arguments[1]}\"]`);"
        "    return td ? td.dataset.standing : null; } } return null;", name, step)


def set_editor(b, text: str) -> None:
    b.execute_script("const t = document.getElementById('code'); t.value = arguments[0];"
                     "t.dispatchEvent(new Event('input', {bubbles: true}));", text)


def check(b, base: str, code: str, word: str) -> None:
    b.get(f"{base}/step/step1")
    b.wait_for(ready, timeout=60)
    set_editor(b, code)
    b.find_element("id", "check").click()
    b.wait_for(lambda d: word in d.find_element("id", "report-body").text, timeout=180,
               message=f"no '{word}' report")


def test_learners_and_an_instructor_launch_and_every_bad_launch_is_refused(tmp_path, platform):
    data = tmp_path / "class"
    done = cli("register", str(data), *platform.register_args())
    assert done.returncode == 0, done.stderr
    h = tool_for(platform, data)
    try:
        with browser() as ann, browser() as ann_at_home:
            launched_learner(ann, platform, "ann")
            assert "Ann Lee" in ann.page_source  # the name from given_name + family_name, no join form
            assert "join" not in ann.current_url
            set_editor(ann, "# Ann's work from the lab\n")
            ann.find_element("id", "save").click()
            ann.wait_for(lambda d: d.find_element("id", "save-status").text.startswith("Saved"))
            # a fresh profile (another computer) launching the same LMS user is the same learner
            launched_learner(ann_at_home, platform, "ann")
            ann_at_home.get(f"{h.base}/step/step1")
            ann_at_home.wait_for(ready)
            assert "Ann's work from the lab" in ann_at_home.execute_script(
                "return document.getElementById('code').value")

        with browser() as teacher:
            launch(teacher, platform, "teacher")
            teacher.wait_for(lambda d: d.find_elements("id", "grid") and "/teach" in d.current_url,
                             timeout=60, message="the instructor did not land on the instructor page")
            assert "key=" not in teacher.current_url
            teacher.wait_for(lambda d: "Ann Lee" in d.find_element("id", "grid").text)
            # the roster (NRPS) brings the course's learners who never launched into the grid
            teacher.wait_for(lambda d: d.find_element("id", "lti-roster").is_displayed())
            teacher.find_element("id", "lti-roster").click()
            teacher.wait_for(lambda d: "4 learners, 3 new" in d.find_element("id", "lti-say").text,
                             message="the roster import did not say what it added")  # Ann was known
            teacher.wait_for(lambda d: grid_cell(d, "Cal Roster", "step1") == "not started", timeout=30,
                             message="the imported learner is not in the grid as not started")
            assert "Dr. Tess Teacher" not in teacher.find_element("id", "grid").text  # staff are no learners

        with browser() as eve:
            refused(eve, platform, h.base, "eve", "other_key", "signature does not verify")
            refused(eve, platform, h.base, "eve", "expired", "expired")
            refused(eve, platform, h.base, "eve", "wrong_aud", "audience")
            refused(eve, platform, h.base, "eve", "unknown_deployment", "deployment")
            refused(eve, platform, h.base, "eve", "replay_nonce", "already used once")

        # the state of a login started in one browser is refused in another
        with browser() as eve, browser() as mallory:
            launch(eve, platform, "eve", "hold")
            eve.wait_for(lambda d: d.find_elements("id", "go"))
            mallory.get(f"{platform.base}/post")
            mallory.wait_for(lambda d: d.find_elements("id", "lti-refused"), message="no refusal page")
            assert "does not belong to this browser" in mallory.find_element("id", "lti-refused").text
            mallory.get(f"{h.base}/api/summary")
            assert "not signed in" in mallory.page_source
            eve.find_element("id", "go").click()  # the very same launch, in the browser that began it
            eve.wait_for(ready, timeout=60, message="Eve's own launch did not sign her in")
    finally:
        h.stop()


def _scores(platform: Platform) -> list[dict]:
    with platform.lock:
        return list(platform.scores)


def _assert_score_shape(record: dict, platform: Platform) -> None:
    assert record["path"] == "/lineitems/17/lineitem/scores" and record["query"] == "type_id=17"
    assert record["content_type"] == "application/vnd.ims.lis.v1.score+json"
    assert record["authorized"], "the score was posted without a token carrying the score scope"
    body = record["body"]
    assert body["userId"] == USERS["ann"]["sub"] and body["gradingProgress"] == "FullyGraded"
    assert body["scoreMaximum"] == 5 and body["activityProgress"] in ("InProgress", "Completed")
    stamp = datetime.fromisoformat(body["timestamp"])
    assert stamp.tzinfo is not None and "." in body["timestamp"]


def test_scores_reach_the_gradebook_once_and_in_order_across_a_503_and_a_kill_9(tmp_path, platform):
    data = tmp_path / "class"
    assert cli("register", str(data), *platform.register_args()).returncode == 0
    h = tool_for(platform, data)
    try:
        with browser() as ann:
            launched_learner(ann, platform, "ann")
            check(ann, h.base, implementation("step1", "correct_einsum"), "passed")
            assert wait_until(lambda: _scores(platform), timeout=60), "no score reached the platform"
            first = _scores(platform)[0]
            _assert_score_shape(first, platform)
            assert first["body"]["scoreGiven"] > 0

            # the platform goes down; the learner's score changes; the tool is killed and restarted
            with platform.lock:
                platform.refuse_scores = True
            check(ann, h.base, implementation("step1", "wrong_elementwise_product"), "failed")
            assert wait_until(lambda: platform.refused_scores, timeout=60), "the new score was never tried"
            with browser() as teacher:  # the instructor sees it waiting, with the platform's answer
                launch(teacher, platform, "teacher")
                teacher.wait_for(lambda d: "HTTP 503" in d.find_element("id", "lti-unsent").text,
                                 timeout=60, message="the failing score is not shown to the instructor")
                assert "Ann Lee" in teacher.find_element("id", "lti-unsent").text
            h.kill9()
            h = tool_for(platform, data, port=h.port)
            tried = len(platform.refused_scores)
            assert wait_until(lambda: len(platform.refused_scores) > tried, timeout=120), \
                "the restarted tool did not retry the queued score"
            with platform.lock:
                platform.refuse_scores = False
            assert wait_until(lambda: len(_scores(platform)) >= 2, timeout=180), "the queued score was lost"
            ann.wait_for(ready, timeout=60)  # the page carried on by itself
            check(ann, h.base, implementation("step1", "correct_einsum"), "passed")
            assert wait_until(lambda: len(_scores(platform)) >= 3, timeout=120)
            got = _scores(platform)
            assert [s["body"]["scoreGiven"] for s in got] == [first["body"]["scoreGiven"], 0,
                                                               first["body"]["scoreGiven"]], got
            stamps = [datetime.fromisoformat(s["body"]["timestamp"]) for s in got]
            assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)
            for s in got:
                _assert_score_shape(s, platform)
    finally:
        h.stop()


def test_the_state_cookie_survives_a_cross_site_form_post(tmp_path):
    """The platform on localhost, the tool on 127.0.0.1: two sites, so only the SameSite=None
    state cookie can come back with the launch's form post (the Lax twin stays behind)."""
    p = Platform(host="localhost")
    data = tmp_path / "class"
    h = None
    try:
        assert cli("register", str(data), *p.register_args()).returncode == 0
        h = tool_for(p, data)
        with browser() as ben:
            launched_learner(ben, p, "ben")
            assert ben.current_url.startswith(h.base)
            assert "Ben Okafor" in ben.page_source
    finally:
        if h is not None:
            h.stop()
        p.close()


def test_a_launch_inside_the_lms_iframe_opens_in_a_tab_of_its_own(tmp_path, platform):
    data = tmp_path / "class"
    assert cli("register", str(data), *platform.register_args()).returncode == 0
    h = tool_for(platform, data)
    try:
        with browser() as ann:
            ann.get(f"{platform.base}/frame?user=ann")
            ann.switch_to.frame(ann.find_element("id", "tool"))
            ann.wait_for(lambda d: d.find_elements("id", "lti-open"), timeout=60,
                         message="the framed launch showed no way on")
            course = ann.current_window_handle
            ann.find_element("id", "lti-open").click()
            ann.wait_for(lambda d: len(d.window_handles) == 2, message="no new tab opened")
            ann.switch_to.window(next(w for w in ann.window_handles if w != course))
            ann.wait_for(ready, timeout=60, message="the launch in the new tab did not sign Ann in")
            assert "Ann Lee" in ann.page_source
    finally:
        h.stop()
