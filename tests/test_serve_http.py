"""`attn-practice serve` over HTTP, started as a learner starts it (the console script).

Every endpoint, and every way in we refuse: no or wrong token, a foreign
Host (DNS rebinding), another Origin, a cross-site form (no header token),
CORS preflights, unknown steps, traversal in any part of the path, bodies
over the limit, invalid UTF-8, racing saves and racing checks.
"""

from __future__ import annotations

import json
import re
import socket
import threading
from pathlib import Path

import pytest
import yaml
from conftest import correct_solutions, run, write_step
from serve_helpers import URL_LINE, Served, wait_until

from attn_practice.grader.catalog import load_catalog

WRONG_STEP1 = """
import numpy as np


def dot_scores(Q, K):
    print("<script>alert('x')</script>")
    return np.asarray(Q) @ np.asarray(K).T
"""
RIGHT_STEP1 = """
import numpy as np


def dot_scores(Q, K):
    return np.asarray(Q) @ np.swapaxes(np.asarray(K), -1, -2)
"""
ENDPOINTS_GET = ["/", "/step/step1", "/static/app.js", "/static/style.css", "/api/summary",
                 "/api/step/step1", "/api/events", "/api/widget/heatmap", "/api/widget/example",
                 "/api/widget/scale?d_k=16"]
ENDPOINTS_POST = ["/api/step/step1/save", "/api/step/step1/check", "/api/step/step1/hint",
                  "/api/step/step1/reset"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    parent = tmp_path_factory.mktemp("serve")
    s = Served(["ws", "--port", "0", "--no-open"], parent)
    s.root = parent / "ws"
    yield s
    s.stop()


def page_of(s: Served, step: str) -> dict:
    status, data = s.get_json(f"/api/step/{step}")
    assert status == 200, data
    return data


# ------------------------------------------------------------------ start, stop, the URL line
def test_first_line_is_the_contract_url_and_the_workspace_is_made_as_start_makes_it(server, tmp_path):
    assert URL_LINE.match(server.first_line), server.first_line
    run(["start", "by_start"], tmp_path)
    made = sorted(p.name for p in (tmp_path / "by_start").iterdir())
    served = sorted(p.name for p in server.root.iterdir() if p.name not in ("backups", ".attn-practice"))
    assert served == made
    for ex in load_catalog():
        assert (server.root / ex.file).read_text() == (tmp_path / "by_start" / ex.file).read_text()


def test_ctrl_c_right_after_the_url_line_stops_cleanly(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    _, err = s.stop()  # at once: before or during the start-up that follows the line
    assert s.returncode == 0 and "Stopped serving" in err and "Traceback" not in err


def test_ctrl_c_stops_cleanly_and_frees_the_port(tmp_path):
    s = Served(["--port", "0", "--no-open"], tmp_path)  # no DIR: ./attention-practice, like start
    assert (tmp_path / "attention-practice" / "attn-practice.yaml").is_file()
    assert s.get_json("/api/summary")[0] == 200
    out, err = s.stop()
    assert s.returncode == 0, err
    assert "Stopped serving" in err and "Traceback" not in err
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", s.port)) != 0


def test_default_port_taken_picks_a_free_one_and_an_explicit_taken_port_is_a_clear_error(tmp_path):
    from attn_practice.grader.teaching.web.server import DEFAULT_PORT

    holder = socket.socket()
    try:
        holder.bind(("127.0.0.1", DEFAULT_PORT))
        holder.listen()
    except OSError:
        pass  # someone else holds it already: just as good
    try:
        s = Served(["ws", "--no-open"], tmp_path)
        try:
            assert s.port != DEFAULT_PORT
            assert s.get_json("/api/summary")[0] == 200
        finally:
            s.stop()
        res = run(["serve", "ws", "--port", str(DEFAULT_PORT), "--no-open"], tmp_path)
        assert res.exit_code == 2, res
        assert "--port" in res.stderr and "Traceback" not in res.output
    finally:
        holder.close()


# ------------------------------------------------------------------ the token, the Host, the Origin
@pytest.mark.parametrize("path", ENDPOINTS_GET)
def test_every_get_needs_the_token(server, path):
    assert server.request("GET", path, token=False)[0] == 403
    assert server.request("GET", path, token="not-the-token")[0] == 403
    sep = "&" if "?" in path else "?"
    assert server.request("GET", f"{path}{sep}token=wrong", token=False)[0] == 403


@pytest.mark.parametrize("path", ENDPOINTS_POST)
def test_every_post_needs_the_token_in_the_header(server, path):
    before = (server.root / "step1_scores.py").read_bytes()
    assert server.request("POST", path, {"content": "x", "base": None}, token=False)[0] == 403
    # the query or the cookie (what a cross-site form or a tab could carry) is not enough to change things
    assert server.request("POST", f"{path}?token={server.token}", {"content": "x"}, token=False)[0] == 403
    cookie = {"Cookie": f"attnp_token_{server.port}={server.token}"}
    assert server.request("POST", path, {"content": "x"}, token=False, headers=cookie)[0] == 403
    assert (server.root / "step1_scores.py").read_bytes() == before


def test_token_by_query_sets_a_strict_cookie_that_opens_the_page_shell_only(server):
    status, headers, body = server.request("GET", f"/?token={server.token}", token=False)
    assert status == 200 and b"<textarea" in body
    assert server.token.encode() not in body  # the page keeps the token itself; no HTML carries it
    cookie = headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    name_value = cookie.split(";")[0]
    assert server.token not in name_value  # other ports on 127.0.0.1 receive this cookie too
    jar = {"Cookie": name_value}
    for path in ("/", "/step/step3", "/static/app.js"):  # a reload of the page works with it ...
        assert server.request("GET", path, token=False, headers=jar)[0] == 200
    for path in ("/api/summary", "/api/step/step1", "/api/events", "/api/widget/heatmap"):
        assert server.request("GET", path, token=False, headers=jar)[0] == 403  # ... and opens no data
    assert server.request("POST", "/api/step/step1/check", {}, token=False, headers=jar)[0] == 403


@pytest.mark.parametrize("host", ["evil.example", "evil.example:80", "127.0.0.1.evil.example",
                                  "localhost.evil.example", "localhost:1", "", "[::1]"])
def test_a_foreign_host_is_refused_even_with_the_token(server, host):
    for path in ("/", "/api/summary", "/api/step/step1"):
        assert server.request("GET", path, headers={"Host": host})[0] == 403
    assert server.request("POST", "/api/step/step1/hint", {}, headers={"Host": host})[0] == 403


def test_localhost_and_the_port_are_accepted_as_host(server):
    for host in ("127.0.0.1", f"127.0.0.1:{server.port}", "localhost", f"localhost:{server.port}"):
        assert server.request("GET", "/api/summary", headers={"Host": host})[0] == 200


def test_another_origin_cannot_post_and_nothing_speaks_cors(server):
    status, headers, _ = server.request("POST", "/api/step/step2/hint", {},
                                        headers={"Origin": "http://evil.example"})
    assert status == 403
    status, headers, _ = server.request("OPTIONS", "/api/step/step2/save", token=False, headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "x-attn-token, content-type"})
    assert status in (403, 405)
    for path in ENDPOINTS_GET[:6]:
        _, headers, _ = server.request("GET", path, headers={"Origin": "http://evil.example"})
        assert not any(k.startswith("access-control-") for k in headers), (path, headers)
    state = yaml.safe_load((server.root / "attn-practice.yaml").read_text())
    assert state["steps"]["step2"]["hints"] == 0
    assert server.post_json("/api/step/step2/hint", headers={"Origin": server.base})[0] == 200


def test_state_changes_are_post_only(server):
    for action in ("save", "check", "hint", "reset"):
        assert server.request("GET", f"/api/step/step1/{action}")[0] == 404
        assert server.request("PUT", f"/api/step/step1/{action}", {})[0] == 405


def test_the_page_is_self_contained_with_a_strict_policy(server):
    status, headers, body = server.request("GET", "/")
    assert status == 200
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    for path in ("/", "/static/app.js", "/static/style.css"):
        text = server.request("GET", path)[2].decode()
        assert not re.search(r"https?://(?!127\.0\.0\.1|localhost)", text), path  # no CDN, no fonts
        assert "@import" not in text and "@font-face" not in text


# ------------------------------------------------------------------ unknown steps, traversal
@pytest.mark.parametrize("path", [
    "/api/step/step99", "/api/step/../attn-practice.yaml", "/api/step/..%2F..%2Fetc%2Fpasswd",
    "/api/step/step1_scores.py", "/api/step/%2e%2e", "/step/step99", "/step/..%2f..%2fetc%2fpasswd",
    "/static/../bridge.py", "/static/%2e%2e/server.py", "/static/..%2fbridge.py", "/static/index.html%00",
    "/static/bridge.py", "/api/widget/../../etc/passwd", "/api/widget/nope", "/etc/passwd",
    "//etc/passwd", "/api/step/step1%00", "/api/step/step1/../../../etc",
])
def test_unknown_steps_and_traversal_are_404(server, path):
    status, _, body = server.request("GET", path)
    assert status == 404, (path, body[:200])
    assert b"root:" not in body and b"import" not in body


@pytest.mark.parametrize("step", ["step99", "..", "..%2F..%2Ftmp%2Fx", "step1%2F..%2F..%2Fx", "%00"])
def test_posts_to_unknown_or_traversing_steps_write_nothing(server, step, tmp_path):
    before = sorted(p.name for p in server.root.parent.rglob("*"))
    for action in ("save", "check", "hint", "reset"):
        status, _ = server.post_json(f"/api/step/{step}/{action}", {"content": "x = 1\n", "base": None})
        assert status == 404
    assert sorted(p.name for p in server.root.parent.rglob("*")) == before


# ------------------------------------------------------------------ saving
def test_save_writes_atomically_and_returns_the_new_version(server):
    page = page_of(server, "step4")
    text = page["content"] + "\n# edited in the page\n"
    status, data = server.post_json("/api/step/step4/save", {"content": text, "base": page["version"]})
    assert status == 200
    assert (server.root / "step4_weighted_sum.py").read_text() == text
    assert page_of(server, "step4")["version"] == data["version"] != page["version"]
    assert not [p for p in server.root.iterdir() if p.name.endswith(".tmp")]


def test_a_file_over_1_mib_is_refused_and_nothing_changes(server):
    path = server.root / "step4_weighted_sum.py"
    before = path.read_bytes()
    page = page_of(server, "step4")
    big = "#" * (1024 * 1024 + 1)
    status, data = server.post_json("/api/step/step4/save", {"content": big, "base": page["version"]})
    assert status == 400 and "1 MiB" in data["error"]
    status, _, body = server.request("POST", "/api/step/step4/save", b"{" + b" " * (3 * 1024 * 1024) + b"}",
                                     headers={"Content-Type": "application/json"})
    assert status == 413 and b"1 MiB" in body
    assert path.read_bytes() == before


def test_invalid_utf8_and_bad_json_are_refused_and_nothing_changes(server):
    path = server.root / "step4_weighted_sum.py"
    before = path.read_bytes()
    base = page_of(server, "step4")["version"]
    bad = b'{"content": "x = \xff\xfe", "base": "' + base.encode() + b'"}'
    for body in (bad, b'{"content": "x = \\ud800", "base": "' + base.encode() + b'"}', b"{not json",
                 b'["a list"]', b'{"content": 42}'):
        status, _, data = server.request("POST", "/api/step/step4/save", body,
                                         headers={"Content-Type": "application/json"})
        assert status == 400, body
        assert json.loads(data)["error"]
    assert server.request("POST", "/api/step/step4/save", b"content=x",
                          headers={"Content-Type": "application/x-www-form-urlencoded"})[0] == 415
    assert path.read_bytes() == before


def test_a_file_changed_on_disk_is_never_overwritten_unseen(server):
    path = server.root / "step2_scale.py"
    page = page_of(server, "step2")
    theirs = page["content"] + "\n# saved from another editor\n"
    path.write_text(theirs)
    mine = page["content"] + "\n# typed in the page\n"
    status, data = server.post_json("/api/step/step2/save", {"content": mine, "base": page["version"]})
    assert status == 409
    assert data["disk_content"] == theirs and "changed on disk" in data["error"]
    assert path.read_text() == theirs
    # keep mine: the other version goes to backups/ first
    status, _ = server.post_json("/api/step/step2/save",
                                 {"content": mine, "base": page["version"], "force": True})
    assert status == 200 and path.read_text() == mine
    backups = [p.read_text() for p in (server.root / "backups").glob("step2_scale-*.py")]
    assert theirs in backups


def test_concurrent_saves_from_one_version_let_exactly_one_win(server):
    path = server.root / "step3_softmax.py"
    base = page_of(server, "step3")["version"]
    results: dict[int, int] = {}

    def save(i: int) -> None:
        results[i] = server.post_json("/api/step/step3/save",
                                      {"content": f"# version {i}\n", "base": base})[0]

    threads = [threading.Thread(target=save, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, code in results.items() if code == 200]
    assert len(winners) == 1 and sorted(results.values()) == [200] + [409] * 7
    assert path.read_text() == f"# version {winners[0]}\n"
    assert not [p for p in server.root.iterdir() if p.name.endswith(".tmp")]


# ------------------------------------------------------------------ hints, reset
def test_hints_use_the_same_state_file_as_the_cli(server):
    status, data = server.post_json("/api/step/step5/hint")
    assert status == 200 and data["new"] and len(data["hints"]) == 1
    state = yaml.safe_load((server.root / "attn-practice.yaml").read_text())
    assert state["steps"]["step5"]["hints"] == 1
    res = run(["hint", "step5"], server.root)  # the CLI continues where the page left off
    assert "hint 2 of" in res.stdout
    assert len(page_of(server, "step5")["hints"]) == 2


def test_reset_backs_up_then_restores_the_stub(server):
    path = server.root / "step6_masked.py"
    path.write_text("# my bonus work\n")
    status, data = server.post_json("/api/step/step6/reset")
    assert status == 200 and data["backup"].startswith("backups/")
    assert (server.root / data["backup"]).read_text() == "# my bonus work\n"
    assert path.read_text() == load_catalog()[5].stub_source() == data["content"]


# ------------------------------------------------------------------ checks and the report
@pytest.mark.slow
def test_check_reports_the_failure_and_the_named_mistake_escaped(server):
    write_step(server.root, "step1", WRONG_STEP1)
    status, r = server.post_json("/api/step/step1/check")
    assert status == 200, r
    assert r["status"] == "failed" and "transpose-all-axes" in r["diagnoses"]
    html = r["html"]
    assert "Known mistake" in html and "transpose-all-axes" in html
    assert "✗" in html and "failed" in html  # mark and word, never colour alone
    assert "Your code (most recent call last)" in html and "step1_scores.py" in html
    assert "Reproduce it" in html and "What now" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "worked example" in html


@pytest.mark.slow
def test_two_checks_at_once_both_answer_and_both_count(server):
    write_step(server.root, "step1", RIGHT_STEP1)
    before = yaml.safe_load((server.root / "attn-practice.yaml").read_text())["steps"]["step1"]["attempts"]
    results: list[tuple[int, dict]] = []
    threads = [threading.Thread(target=lambda: results.append(server.post_json("/api/step/step1/check")))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [code for code, _ in results] == [200, 200]
    assert all(r["passed"] and r["status"] == "passed" for _, r in results)
    after = yaml.safe_load((server.root / "attn-practice.yaml").read_text())["steps"]["step1"]
    assert after["attempts"] == before + 2 and after["status"] == "passed"
    page = page_of(server, "step1")
    assert page["solution"] and "def dot_scores" in page["solution"]["code"]


@pytest.mark.slow
def test_a_save_from_another_editor_is_announced_and_rechecked_over_sse(server):
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    conn.request("GET", "/api/events", headers={"X-Attn-Token": server.token})
    res = conn.getresponse()
    assert res.status == 200 and res.getheader("Content-Type").startswith("text/event-stream")
    assert res.fp.readline().startswith(b": connected")
    events: list[tuple[str, dict]] = []

    def read() -> None:
        event = ""
        try:
            for raw in res.fp:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    events.append((event, json.loads(line[6:])))
        except (OSError, ValueError):
            pass

    threading.Thread(target=read, daemon=True).start()
    # As an editor would save it; content this module's server has never seen (the server is
    # shared by the module: an earlier test may have left WRONG_STEP1 there, and a save that
    # changes nothing is rightly not announced, so the wait would never come true).
    write_step(server.root, "step1", WRONG_STEP1 + f"\n# saved elsewhere {threading.get_ident()}-{id(events)}\n")
    assert wait_until(lambda: any(e == "check" and d["step"] == "step1" and d["origin"] == "disk"
                                  for e, d in events), timeout=120), events
    kinds = [e for e, d in events if d.get("step") == "step1"]
    assert kinds.index("file-changed") < kinds.index("check")
    result = next(d for e, d in events if e == "check")
    assert result["status"] == "failed" and "transpose-all-axes" in result["diagnoses"]
    conn.close()


# ------------------------------------------------------------------ widgets
def test_heatmap_it_looks_most_at_animal(server):
    status, d = server.get_json("/api/widget/heatmap")
    assert status == 200 and d["label"]
    assert {s["number"] for s in d["stages"] if s["source"] == "yours"} == set(d["yours"])
    row = d["weights"][d["tokens"].index("it")]
    order = sorted(range(len(row)), key=row.__getitem__, reverse=True)
    assert d["tokens"][order[0]] == "animal" and d["tokens"][order[1]] == "street"
    assert all(abs(sum(r) - 1) < 1e-3 for r in d["weights"])


def test_worked_example_starts_at_the_lessons_numbers_and_follows_q(server):
    status, d = server.get_json("/api/widget/example?q=1,0,1,0")
    assert status == 200
    assert [round(x, 2) for x in d["output"]] == [5.68, 1.55]
    assert [round(x, 3) for x in d["weights"]] == [0.506, 0.186, 0.307]
    status, moved = server.get_json("/api/widget/example?q=0,2,0,2")
    assert moved["weights"][1] > 0.7 and moved["output"] != d["output"]
    status, custom = server.get_json("/api/widget/example?q=1,0&keys=1,0;0,1&values=1;2")
    assert status == 200 and len(custom["weights"]) == 2


@pytest.mark.parametrize("query", ["q=1,x,1,0", "q=1,0", "q=nan,0,0,0", "q=" + "1," * 3000 + "1",
                                   "values=1,2;3,4", "keys=1,0,1,0;0,1"])
def test_worked_example_bad_input_is_a_clear_400(server, query):
    status, d = server.get_json("/api/widget/example?" + query)
    assert status == 400 and d["error"]


def test_dk_slider_unscaled_scores_spread_and_saturate(server):
    lo = server.get_json("/api/widget/scale?d_k=4")[1]
    hi = server.get_json("/api/widget/scale?d_k=1024")[1]
    assert hi["spread_raw"] > 10 * lo["spread_raw"]
    assert 0.5 < hi["spread_scaled"] < 2 and 0.5 < lo["spread_scaled"] < 2
    assert hi["max_weight_raw"] > 0.9 > hi["max_weight_scaled"]
    for bad in ("0", "5000", "abc", "-4", "1e3"):
        status, d = server.get_json(f"/api/widget/scale?d_k={bad}")
        assert status == 400 and "d_k" in d["error"]


@pytest.mark.slow
def test_widgets_use_the_learners_own_functions_once_steps_1_to_5_pass(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    try:
        ws = tmp_path / "ws"
        correct_solutions(ws)
        assert run(["check", "--all"], ws).exit_code in (0, 1)
        state = yaml.safe_load((ws / "attn-practice.yaml").read_text())
        assert all(state["steps"][f"step{i}"]["status"] == "passed" for i in range(1, 6))
        d = s.get_json("/api/widget/example?q=1,0,1,0")[1]
        assert d["source"] == "yours" and "your code" in d["label"]
        assert [round(x, 2) for x in d["output"]] == [5.68, 1.55]
        h = s.get_json("/api/widget/heatmap")[1]
        assert h["source"] == "yours"
        # The numbers really are the learner's: a step 1 that doubles its scores shows up at once.
        doubled = (ws / "step1_scores.py").read_text().replace(
            "return Q @ np.swapaxes(K, -1, -2)", "return 2 * (Q @ np.swapaxes(K, -1, -2))")
        assert doubled != (ws / "step1_scores.py").read_text()
        (ws / "step1_scores.py").write_text(doubled)
        d2 = s.get_json("/api/widget/example?q=1,0,1,0")[1]
        assert d2["source"] == "yours" and d2["scores"] == [4.0, 0.0, 2.0]
    finally:
        s.stop()


def test_summary_lists_every_step_with_its_state(server):
    status, d = server.get_json("/api/summary")
    assert status == 200
    assert [s["id"] for s in d["steps"]] == [e.id for e in load_catalog()]
    assert Path(d["workspace"]) == server.root.resolve()


def test_serve_is_a_listed_command_with_help(tmp_path):
    res = run(["--help"], tmp_path)
    assert "serve" in res.stdout
    res = run(["serve", "--help"], tmp_path)
    assert res.exit_code == 0 and "--no-open" in res.stdout and "--port" in res.stdout


def test_serve_on_a_file_is_a_clear_error(tmp_path):
    (tmp_path / "afile").write_text("x")
    res = run(["serve", "afile", "--no-open"], tmp_path)
    assert res.exit_code == 2 and "cannot create a workspace" in res.stderr
    assert "Traceback" not in res.output


@pytest.mark.slow
def test_ctrl_c_during_a_check_still_stops_cleanly(tmp_path):
    s = Served(["ws", "--port", "0", "--no-open"], tmp_path)
    write_step(tmp_path / "ws", "step1", RIGHT_STEP1)
    def check() -> None:
        try:
            s.request("POST", "/api/step/step1/check", {})
        except OSError:
            pass  # the server went away mid-check: that is the point

    threading.Thread(target=check, daemon=True).start()
    assert wait_until(lambda: s.get_json("/api/summary")[1]["checking"] == "step1", timeout=60,
                      interval=0.02)
    out, err = s.stop()
    assert s.returncode == 0, err
    assert "Stopped serving" in err and "Traceback" not in err and "internal error" not in err


def test_a_step_file_linking_out_of_the_workspace_is_neither_read_nor_written(server, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the page\n")
    path = server.root / "step7_self_attention.py"
    path.unlink()
    path.symlink_to(secret)
    page = page_of(server, "step7")
    assert page["content"] is None and "outside the workspace" in page["file_problem"]
    assert "not for the page" not in json.dumps(page)
    status, data = server.post_json("/api/step/step7/save", {"content": "x = 1\n", "base": page["version"],
                                                             "force": True})
    assert status == 400 and "outside the workspace" in data["error"]
    assert secret.read_text() == "not for the page\n"
    status, data = server.post_json("/api/step/step7/reset")
    assert status == 200 and data["link"] == str(secret)
    assert not path.is_symlink() and path.read_text() == load_catalog()[6].stub_source()
    assert secret.read_text() == "not for the page\n"
    assert not any("not for the page" in p.read_text() for p in (server.root / "backups").glob("*"))


def test_a_file_the_page_cannot_show_is_backed_up_before_any_save(server):
    path = server.root / "step8_multi_head.py"
    path.write_bytes(b"# caf\xe9 in latin-1\n")
    page = page_of(server, "step8")
    assert page["content"] is None and "not UTF-8" in page["file_problem"]
    status, _ = server.post_json("/api/step/step8/save", {"content": "# new\n", "base": page["version"]})
    assert status == 200 and path.read_text() == "# new\n"
    assert b"# caf\xe9 in latin-1\n" in [p.read_bytes() for p in (server.root / "backups").glob("step8*")]


def test_without_no_open_the_browser_is_given_a_private_file_never_the_token(tmp_path):
    """A command line is readable by every user (/proc/PID/cmdline): the token must not be on it."""
    opened = tmp_path / "opened.txt"
    fake = tmp_path / "fake-browser"
    fake.write_text(f"#!/bin/sh\necho \"$@\" > {opened}.tmp\nstat -c %a \"${{1#file://}}\" >> {opened}.tmp\n"
                    f"cat \"${{1#file://}}\" >> {opened}.tmp\nmv {opened}.tmp {opened}\n")
    fake.chmod(0o755)
    s = Served(["ws", "--port", "0"], tmp_path, env={"BROWSER": f"{fake} %s", "DISPLAY": ":99"})
    try:
        assert wait_until(opened.exists, timeout=30)
        arg, mode, html = opened.read_text().split("\n", 2)
        assert s.token not in arg and arg.startswith("file://")
        assert mode == "600"  # only the learner can read the file that holds the link
        assert s.url in html.replace("&amp;", "&")  # and it sends the browser on to the page
    finally:
        s.stop()
    keep = tmp_path / "ws" / ".attn-practice"
    assert not list(keep.glob("open-*.html"))  # gone once serve stops
    assert (keep / ".gitignore").read_text().strip().endswith("*")  # never pushed with the workspace


def test_with_no_display_no_text_browser_takes_the_terminal(tmp_path):
    s = Served(["ws", "--port", "0"], tmp_path, env={"DISPLAY": "", "WAYLAND_DISPLAY": "",
                                                     "BROWSER": "false"})
    assert s.get_json("/api/summary")[0] == 200  # serving, so everything before it was said
    _, err = s.stop()
    assert "open the link above in your browser" in err
