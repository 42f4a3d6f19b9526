"""Login CSRF: no page on another site can sign a browser in, or switch who it is, in a class.

Real Chromium, a real class (the console script on loopback) and the
attacker's page served from another origin on loopback, both cross-site
(`localhost:PORT`) and same-site but cross-origin (`127.0.0.1:OTHER`). The
attacker is a learner of the class who holds their own resume link and
tries: a top-level navigation to it, a hidden frame and an image, an
auto-submitted POST with a guessed token, each on a fresh browser and on a
browser signed in as the victim. Afterwards the victim's browser is signed in
as nobody (or still as the victim), never as the attacker. The instructor
key link opened from another site asks before signing in too.
"""

from __future__ import annotations

import html
import http.server
import re
import threading
from collections.abc import Iterator

import pytest
from browser import browser
from test_host_support import HostProcess, resume

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytest.importorskip("starlette", reason="the host extra is not installed (pip install 'attn-practice[host]')")
pytestmark = pytest.mark.slow


class AttackerSite:
    """Serves one attacker page per path on its own loopback port (a thread, stopped in close)."""

    def __init__(self) -> None:
        self.pages: dict[str, str] = {}
        pages = self.pages

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
                body = pages.get(self.path, "no such page").encode()
                self.send_response(200 if self.path in pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def scene(tmp_path_factory) -> Iterator[tuple[HostProcess, AttackerSite, str]]:
    h = HostProcess(tmp_path_factory.mktemp("login-csrf") / "class")
    site = AttackerSite()
    try:
        _, _, link = h.join("Mallory")
        yield h, site, link
    finally:
        site.close()
        h.stop()


def attacks(link: str) -> dict[str, str]:
    """The attacker's pages: each tries to sign the visitor in with Mallory's resume link."""
    action = html.escape(link)
    return {
        "/navigate": f"<script>location.href = {link!r};</script>",
        "/frame": f'<iframe src="{action}" onload="document.title=\'done\'"></iframe>',
        "/image": f'<img src="{action}" onerror="document.title=\'done\'" onload="document.title=\'done\'">',
        "/post": (f'<form id="f" method="post" action="{action}"><input name="csrf" value="guessed">'
                  '</form><script>document.getElementById("f").submit();</script>'),
        "/post-blank": (f'<form id="f" method="post" action="{action}"></form>'
                        '<script>document.getElementById("f").submit();</script>'),
    }


def who(b, base: str) -> str | None:
    """The learner this browser is signed in as on the class (None: nobody)."""
    b.get(f"{base}/api/summary")
    text = b.find_element("tag name", "body").text
    m = re.search(r'"learner"\s*:\s*"([^"]+)"', text)
    return m.group(1) if m else None


def visit(b, url: str, base: str) -> None:
    b.get(url)
    # the attack is over once the browser left for the class, or the page's frame/image loaded
    b.wait_for(lambda d: d.current_url.startswith(base) or d.title == "done",
               message=f"the attacker page {url} never finished")


@pytest.mark.parametrize("origin", ["localhost", "127.0.0.1"])  # cross-site; same-site, cross-origin
def test_another_sites_page_cannot_sign_a_fresh_browser_in(scene, origin):
    h, site, link = scene
    site.pages.update(attacks(link))
    for path in attacks(link):
        with browser(1000, 800) as victim:
            visit(victim, f"http://{origin}:{site.port}{path}", h.base)
            if path == "/navigate":  # a top-level visit of the link shows the question, signs in no one
                assert "Continue as Mallory?" in victim.page_source
            assert who(victim, h.base) is None, f"{path} from {origin} signed the browser in"


def test_another_sites_page_cannot_switch_a_signed_in_browser(scene):
    h, site, link = scene
    site.pages.update(attacks(link))
    with browser(1000, 800) as victim:
        victim.get(f"{h.base}/join/{h.join_code}")
        victim.find_element("id", "display_name").send_keys("Victim")
        victim.find_element("css selector", "button[type=submit]").click()
        victim.wait_for(lambda d: d.find_elements("id", "resume-link"), message="no resume link")
        for path in attacks(link):
            visit(victim, f"http://localhost:{site.port}{path}", h.base)
            assert who(victim, h.base) == "Victim", f"{path} switched the signed-in browser"


def test_the_resume_question_signs_in_only_when_answered_on_its_own_page(scene):
    h, _, link = scene
    with browser(1000, 800) as b:
        b.get(link)
        assert "Continue as Mallory?" in b.page_source and who(b, h.base) is None
        b.get(link)
        b.find_element("id", "continue").click()
        b.wait_for(lambda d: d.current_url.rstrip("/") == h.base, message="no redirect to the lesson")
        assert "/resume/" not in b.current_url  # the secret left the address bar
        assert who(b, h.base) == "Mallory"


def test_the_instructor_link_from_another_site_asks_first(scene):
    h, _, _ = scene
    c = h.client()
    r = c.get(f"/teach?key={h.key}", headers={"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"})
    assert r.status_code == 200 and "Open the instructor page?" in r.text
    assert c.get("/teach/api/class").status_code == 403  # not signed in by the visit
    csrf = re.search(r'name="csrf" value="([^"]+)"', r.text).group(1)
    forged = c.post("/teach/login", data={"csrf": csrf, "key": h.key},
                    headers={"Sec-Fetch-Site": "cross-site", "Origin": "http://localhost:1"})
    assert forged.status_code == 403 and c.get("/teach/api/class").status_code == 403
    assert c.post("/teach/login", data={"csrf": csrf, "key": h.key}).status_code == 303
    assert c.get("/teach/api/class").status_code == 200


def test_a_resume_post_needs_the_pages_token_and_our_origin(scene):
    h, _, link = scene
    path = link.replace(h.base, "")
    c = h.client()
    asked = c.get(path)
    csrf = re.search(r'name="csrf" value="([^"]+)"', asked.text).group(1)
    assert c.post(path, data={"csrf": "guessed"}).status_code == 403
    assert c.post(path, data={"csrf": csrf}, headers={"Sec-Fetch-Site": "same-site"}).status_code == 403
    assert c.post(path, data={"csrf": csrf}, headers={"Origin": "http://127.0.0.1:1"}).status_code == 403
    assert c.get("/api/summary").status_code == 401
    assert resume(h.client(), path).status_code == 303  # the honest way still works


def test_the_join_link_in_a_signed_in_browser_says_whose_it_is(scene):
    h, _, _ = scene
    c, _, _ = h.join("Joined already")
    page = c.get(f"/join/{h.join_code}")
    assert page.status_code == 200 and "This browser is signed in as <strong>Joined already" in page.text
    assert 'id="signed-in-as"' not in h.client().get(f"/join/{h.join_code}").text
