"""`attn-practice host` over HTTP, in process (Starlette's TestClient on the real app).

Every route with bad input: no session, another learner's ids, oversize and
invalid bodies, missing CSRF, a foreign Origin, wrong keys; and the paths a
learner and the instructor take: join, save versions, restore, resume on
another computer, check, the live class picture, the instructor's actions.
"""

from __future__ import annotations

import json
import re

import pytest
from test_host_support import hosted_class, implementation

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    with hosted_class(tmp_path_factory.mktemp("class")) as h:
        yield h


LEARNER_GETS = ["/api/summary", "/api/step/step1", "/api/step/step1/versions", "/api/queue",
                "/api/widget/heatmap", "/api/version/abc", "/api/events"]
LEARNER_POSTS = ["save", "check", "hint", "reset", "restore"]


def test_the_join_link_gives_a_resume_link_once_and_an_httponly_cookie(hosted):
    b = hosted.browser()
    code = hosted.keys.join_code
    b.join("Ann")
    assert "/resume/" in b.resume_link and len(b.resume_link.rsplit("/", 1)[1]) >= 40
    again = hosted.browser()
    page = again.client.get(f"/join/{code}")
    assert b.resume_link not in page.text
    r = again.client.post(f"/join/{code}", data={"csrf": "x", "display_name": "Eve"})
    assert r.status_code == 403  # the form's CSRF cookie does not match


def test_cookies_are_httponly_and_samesite(hosted):
    b = hosted.browser()
    code = hosted.keys.join_code
    page = b.client.get(f"/join/{code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = b.client.post(f"/join/{code}", data={"csrf": csrf, "display_name": "Cookie"})
    set_cookie = r.headers["set-cookie"].lower()
    assert "attnp_learner=" in set_cookie and "httponly" in set_cookie and "samesite=lax" in set_cookie
    assert r.headers["content-security-policy"].startswith("default-src 'self'")
    assert r.headers["x-frame-options"] == "DENY"


def test_no_session_is_refused_on_every_learner_route(hosted):
    anon = hosted.browser()
    for path in LEARNER_GETS:
        r = anon.client.get(path)
        assert r.status_code == 401, path
        assert "resume link" in r.json()["error"]
    for action in LEARNER_POSTS:
        r = anon.client.post(f"/api/step/step1/{action}", json={})
        assert r.status_code == 401, action
    assert "join link" in anon.client.get("/").text  # the landing page, not the lesson


def test_every_change_needs_the_csrf_token_and_our_origin(hosted):
    b = hosted.browser().join("Csrf")
    for action in LEARNER_POSTS:
        r = b.client.post(f"/api/step/step1/{action}", json={"content": "x = 1\n"})
        assert r.status_code == 403, action
        assert "token" in r.json()["error"]
    r = b.save("step1", "x = 1\n", headers={"Origin": "http://evil.example"})
    assert r.status_code == 403 and "origin" in r.json()["error"]
    r = b.save("step1", "x = 1\n", headers={"Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    assert b.client.get("/api/step/step1/versions").json()["versions"] == []  # nothing was saved


def test_every_save_is_a_version_and_an_earlier_one_can_be_restored(hosted):
    b = hosted.browser().join("Versions")
    v1 = b.save("step1", "# one\n", base="").json()["version"]
    v2 = b.save("step1", "# two\n", base=v1).json()["version"]
    history = b.client.get("/api/step/step1/versions").json()["versions"]
    assert [v["id"] for v in history] == [v2, v1]
    r = b.post("/api/step/step1/restore", {"version": v1})
    assert r.status_code == 200 and r.json()["content"] == "# one\n"
    page = b.client.get("/api/step/step1").json()
    assert page["content"] == "# one\n" and page["version"] == r.json()["version"]
    assert len(b.client.get("/api/step/step1/versions").json()["versions"]) == 3


def test_a_save_on_an_old_base_is_a_conflict_not_an_overwrite(hosted):
    b = hosted.browser().join("Conflict")
    v1 = b.save("step2", "# first\n", base="").json()["version"]
    b.save("step2", "# second\n", base=v1)
    r = b.save("step2", "# from the other tab\n", base=v1)
    assert r.status_code == 409 and r.json()["disk_content"] == "# second\n"
    assert b.save("step2", "# mine\n", base=v1, force=True).status_code == 200
    assert b.client.get("/api/step/step2").json()["content"] == "# mine\n"


def test_the_resume_link_on_another_computer_continues(hosted):
    a = hosted.browser().join("Traveller")
    a.save("step1", "# from the lab\n", base="")
    other = hosted.browser()
    r = other.resume(a.resume_link)
    assert r.status_code == 303 and r.headers["location"] == "/"
    other.load_page()
    assert other.client.get("/api/step/step1").json()["content"] == "# from the lab\n"
    assert other.client.get("/api/summary").json()["learner"] == "Traveller"


def test_a_learner_never_reaches_another_learners_work(hosted):
    a = hosted.browser().join("Alice")
    b = hosted.browser().join("Bob")
    va = a.save("step3", "# alice's secret\n", base="").json()["version"]
    assert b.client.get(f"/api/version/{va}").status_code == 404
    r = b.post("/api/step/step3/restore", {"version": va})
    assert r.status_code == 404
    assert b.client.get("/api/step/step3").json()["content"] != "# alice's secret\n"
    # instructor routes refuse a learner's session
    assert b.client.get("/teach/api/class").status_code == 403
    alice_id = hosted.ctx.store.learners()[0].id
    assert b.client.get(f"/teach/api/learner/{alice_id}").status_code == 403
    assert b.post("/teach/api/reissue", {"learner": alice_id}).status_code == 403
    # A's token is no use in B's session
    b_token, b.token = b.token, a.token
    assert b.save("step3", "# forged\n").status_code == 403
    b.token = b_token
    assert "Alice" not in json.dumps(b.client.get("/api/summary").json())


@pytest.mark.parametrize("payload,status", [
    ("x" * (1024 * 1024 + 1), 400),  # over the 1 MiB file limit
    ("\ud800", 400),  # a lone surrogate cannot be stored as UTF-8
    ("a\0b", 400),
    (12, 400),
])
def test_bad_file_contents_are_refused_and_nothing_is_saved(hosted, payload, status):
    b = hosted.browser().join("Bad")
    r = b.save("step4", payload)
    assert r.status_code == status, r.text
    assert b.client.get("/api/step/step4/versions").json()["versions"] == []


def test_oversize_invalid_utf8_and_not_json_bodies(hosted):
    b = hosted.browser().join("Bodies")
    h = {"X-Attn-Token": b.token, "Content-Type": "application/json"}
    huge = b"{" + b" " * (3 * 1024 * 1024) + b"}"
    assert b.client.post("/api/step/step1/save", content=huge, headers=h).status_code == 413
    assert b.client.post("/api/step/step1/hint", content=b" " * 5000, headers=h).status_code == 413
    r = b.client.post("/api/step/step1/save", content=b'{"content": "\xff\xfe"}', headers=h)
    assert r.status_code == 400 and "UTF-8" in r.json()["error"]
    assert b.client.post("/api/step/step1/save", content=b"{not json", headers=h).status_code == 400
    assert b.client.post("/api/step/step1/save", content=b"[1]", headers=h).status_code == 400
    r = b.client.post("/api/step/step1/save", content=b"{}", headers={"X-Attn-Token": b.token,
                                                                     "Content-Type": "text/plain"})
    assert r.status_code == 415
    code = hosted.keys.join_code
    r = b.client.post(f"/join/{code}", content=b"display_name=" + b"a" * 20000,
                      headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert r.status_code == 413


def test_unknown_steps_and_actions_are_404(hosted):
    b = hosted.browser().join("Lost")
    assert b.client.get("/api/step/../../etc/passwd").status_code == 404
    assert b.client.get("/api/step/step9").status_code == 404
    assert b.post("/api/step/step1/delete").status_code == 404
    assert b.client.get("/step/nope").status_code == 404
    assert b.client.get("/static/../server.py").status_code == 404
    assert b.client.get("/static/index.html").status_code == 404  # only through the session's page


def test_display_names_are_bounded_and_escaped(hosted):
    b = hosted.browser()
    code = hosted.keys.join_code
    page = b.client.get(f"/join/{code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = b.client.post(f"/join/{code}", data={"csrf": csrf, "display_name": "x" * 81})
    assert r.status_code == 400
    r = b.client.post(f"/join/{code}", data={"csrf": csrf, "display_name": "<script>alert(1)</script>"})
    assert r.status_code == 200 and "<script>alert" not in r.text and "&lt;script&gt;" in r.text
    r = b.client.post(f"/join/{code}", data={"csrf": csrf, "display_name": "a\x1bb"})
    assert r.status_code == 400


def test_wrong_join_codes_resume_links_and_keys_are_refused_then_rate_limited(tmp_path):
    with hosted_class(tmp_path / "class") as h:
        b = h.browser()
        statuses = [b.client.get(f"/join/wrong{i}").status_code for i in range(12)]
        assert statuses[0] == 404 and statuses[-1] == 429
    with hosted_class(tmp_path / "class2") as h:
        b = h.browser()
        statuses = [b.client.get(f"/resume/{'x' * 43}{i}").status_code for i in range(12)]
        assert statuses[0] == 404 and statuses[-1] == 429
    with hosted_class(tmp_path / "class3") as h:
        b = h.browser()
        statuses = [b.client.get(f"/teach?key=wrong{i}").status_code for i in range(12)]
        assert statuses[0] == 403 and statuses[-1] == 429
        assert b.client.get("/teach/api/class").status_code == 403
        assert b.client.get("/metrics").status_code == 403


def test_health_readiness_and_metrics(hosted):
    b = hosted.browser()
    assert b.client.get("/healthz").status_code == 200
    assert b.client.get("/readyz").json() == {"ready": True}
    r = b.client.get(f"/metrics?key={hosted.keys.instructor_key}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    for metric in ("attnp_check_queue_length", "attnp_check_latency_seconds_sum",
                   "attnp_active_learners"):
        assert f"\n{metric} " in "\n" + r.text


def test_instructor_actions_need_the_key_and_csrf_and_take_effect(hosted):
    t = hosted.browser().teach()
    learner = hosted.browser().join("Reissued")
    lid = next(lr.id for lr in hosted.ctx.store.learners() if lr.display_name == "Reissued")
    # CSRF: the instructor cookie alone is not enough
    assert t.client.post("/teach/api/rotate-join", json={}).status_code == 403
    old_code = hosted.keys.join_code
    assert t.post("/teach/api/rotate-join").status_code == 200
    assert hosted.browser().client.get(f"/join/{old_code}").status_code == 404
    assert t.post("/teach/api/joining", {"open": False}).status_code == 200
    assert hosted.browser().client.get(f"/join/{hosted.keys.join_code}").status_code == 403
    assert t.post("/teach/api/joining", {"open": "yes"}).status_code == 400
    assert t.post("/teach/api/joining", {"open": True}).status_code == 200
    new = t.post("/teach/api/reissue", {"learner": lid}).json()["resume_link"]
    assert learner.client.get("/api/summary").status_code == 401  # the old cookie stopped working
    assert hosted.browser().client.get(learner.resume_link.replace("http://testserver", "")).status_code == 404
    assert hosted.browser().resume(new).status_code == 303
    assert t.post("/teach/api/reissue", {"learner": "nobody"}).status_code == 404
    assert t.client.get("/teach/api/learner/nobody").status_code == 404
    assert t.client.get("/teach/export.xml").status_code == 404


def test_checks_feed_the_live_grid_misconceptions_and_drilldown(hosted):
    a = hosted.browser().join("Checker A")
    b = hosted.browser().join("Checker B")
    a.save("step1", implementation("step1", "correct_einsum"), base="")
    got = a.check("step1").json()
    assert got["status"] == "passed" and got["passed"] is True and "passed" in got["html"]
    b.save("step2", implementation("step2", "wrong_scale_by_dk"), base="")
    got = b.check("step2").json()
    assert got["status"] == "failed" and "scale-by-dk" in got["diagnoses"]
    assert b.client.get("/api/step/step2").json()["solution"] is None
    assert a.client.get("/api/step/step1").json()["solution"]["code"]
    t = hosted.browser().teach()
    picture = t.client.get("/teach/api/class").json()
    rows = {r["name"]: {c["step"]: c for c in r["steps"]} for r in picture["grid"]}
    assert rows["Checker A"]["step1"]["standing"] == "passed"
    assert rows["Checker A"]["step1"]["checks"] == 1
    assert rows["Checker B"]["step2"]["standing"] == "failed"
    mis = [m for m in picture["misconceptions"] if m["id"] == "scale-by-dk"]
    assert mis and mis[0]["count"] == 1 and mis[0]["learners"][0]["name"] == "Checker B"
    assert mis[0]["explanation"] and mis[0]["nudge"]
    b.save("step2", implementation("step2", "correct_np_sqrt"))
    rows = {r["name"]: {c["step"]: c for c in r["steps"]}
            for r in t.client.get("/teach/api/class").json()["grid"]}
    assert rows["Checker B"]["step2"]["standing"] == "stale"
    bid = next(r["learner"] for r in picture["grid"] if r["name"] == "Checker B")
    drill = t.client.get(f"/teach/api/learner/{bid}").json()
    step2 = next(s for s in drill["steps"] if s["step"] == "step2")
    assert "sqrt" in step2["code"] and step2["report"]["steps"][0]["status"] == "failed"
    assert len(step2["history"]) == 2


def test_a_same_site_subdomain_or_foreign_origin_cannot_post_a_form(hosted):
    b = hosted.browser()
    code = hosted.keys.join_code
    page = b.client.get(f"/join/{code}")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    form = {"csrf": csrf, "display_name": "Forged"}
    assert b.client.post(f"/join/{code}", data=form, headers={"Sec-Fetch-Site": "same-site"}).status_code == 403
    assert b.client.post(f"/join/{code}", data=form, headers={"Origin": "http://evil.example"}).status_code == 403
    # what a browser sends under our no-referrer policy: Origin null, same-origin fetch
    r = b.client.post(f"/join/{code}", data=form, headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 200


def test_the_widgets_answer_as_on_serve_and_refuse_bad_input(hosted):
    b = hosted.browser().join("Widgets")
    heat = b.client.get("/api/widget/heatmap").json()
    assert heat["tokens"] and heat["source"] == "reference" and "server_ms" in heat
    ex = b.client.get("/api/widget/example", params={"q": "1,0,1,0"}).json()
    assert len(ex["weights"]) == 3 and "server_ms" in ex
    assert b.client.get("/api/widget/scale", params={"d_k": "64"}).json()["d_k"] == 64
    assert b.client.get("/api/widget/scale", params={"d_k": "0"}).status_code == 400
    assert b.client.get("/api/widget/scale", params={"d_k": "x"}).status_code == 400
    assert b.client.get("/api/widget/example", params={"q": "1," * 3000}).status_code == 400
    assert b.client.get("/api/widget/nope").status_code == 404


def test_a_database_that_is_away_is_503_with_retry_after_and_not_ready(tmp_path):
    with hosted_class(tmp_path / "c") as h:
        b = h.browser().join("Patient")
        h.ctx.store.close()  # as if the database went away
        r = b.client.get("/api/summary")
        assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1
        assert "Nothing you saved" in r.json()["error"]
        r = b.client.get("/readyz")
        assert r.status_code == 503 and r.json()["unusable"] == ["database"]
        assert b.client.get("/healthz").status_code == 200


def test_the_solution_stays_shown_after_a_pass_even_when_a_later_check_fails(hosted):
    a = hosted.browser().join("Solved")
    a.save("step1", implementation("step1", "correct_einsum"), base="")
    assert a.check("step1").json()["passed"]
    a.save("step1", implementation("step1", "wrong_elementwise_product"))
    assert a.check("step1").json()["status"] == "failed"
    page = a.client.get("/api/step/step1").json()
    assert page["status"] == "failed" and page["solution"]["code"]


def test_one_learner_cannot_fill_the_class_disk(hosted):
    b = hosted.browser().join("Filler")
    quota, hosted.ctx.lesson.quota = hosted.ctx.lesson.quota, 50_000
    try:
        for _ in range(4):
            assert b.save("step5", "x" * 10_000).status_code == 200
        r = b.save("step5", "x" * 20_000)
        assert r.status_code == 400 and "limit" in r.json()["error"]
        assert len(b.client.get("/api/step/step5/versions").json()["versions"]) == 4
    finally:
        hosted.ctx.lesson.quota = quota


def test_anothers_resume_link_does_not_silently_switch_a_signed_in_browser(hosted):
    mallory = hosted.browser().join("Mallory")
    victim = hosted.browser().join("Victim")
    r = victim.client.get(mallory.resume_link.replace("http://testserver", ""))
    assert r.status_code == 200 and "Continue as Mallory" in r.text
    assert victim.client.get("/api/summary").json()["learner"] == "Victim"  # not switched
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    path = mallory.resume_link.replace("http://testserver", "")
    assert victim.client.post(path, data={"csrf": "forged"}).status_code == 403
    assert victim.client.post(path, data={"csrf": csrf}).status_code == 303
    assert victim.client.get("/api/summary").json()["learner"] == "Mallory"  # asked, then switched
