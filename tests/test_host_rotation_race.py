"""A rotation that lands between an instructor sign-in's check and its session.

`host rotate-key` and `host set-password` run in another process: they write
the new secret, then end every instructor session. A sign-in with the old
secret, checked just before, could make its session just after that end and
so outlive the rotation (seen once in CI, under load, by the probe in
test_host_probes_access.py). Here the rotation is made to land exactly there,
every time: inside the store's `create_session`, before the session is written.
"""

from __future__ import annotations

import re

import pytest
from test_host_support import hosted_class

from attn_practice.grader.host.auth import rotate_instructor_key, set_instructor_password
from attn_practice.grader.host.store.base import SessionKind

pytestmark = pytest.mark.slow


@pytest.fixture
def hosted(tmp_path):
    with hosted_class(tmp_path / "class") as h:
        yield h


def _rotate_inside_create_session(monkeypatch, hosted, rotate) -> list[str]:
    """Run `rotate(store)` right before the next instructor session is written."""
    store = hosted.ctx.store
    create = store.create_session
    made: list[str] = []

    def racing(hashed, kind, *args, **kwargs):
        if kind is SessionKind.INSTRUCTOR and not made:
            rotate(store)
        made.append(hashed)
        return create(hashed, kind, *args, **kwargs)

    monkeypatch.setattr(store, "create_session", racing)
    return made


def _alive(hosted, response) -> bool:
    cookie = response.cookies.get("attnp_teach")
    if not cookie:
        return False
    probe = hosted.browser()
    probe.client.cookies.set("attnp_teach", cookie)
    return probe.client.get("/teach/api/class").status_code == 200


def test_the_key_link_opened_as_the_key_is_rotated_opens_nothing(hosted, monkeypatch):
    old = hosted.keys.instructor_key
    made = _rotate_inside_create_session(monkeypatch, hosted, rotate_instructor_key)
    r = hosted.browser().client.get(f"/teach?key={old}")
    assert made, "the sign-in never reached the store: the race was not exercised"
    assert r.status_code == 403, r.text
    assert "changed just now" in r.text
    assert not _alive(hosted, r)
    assert hosted.keys.instructor_key != old
    assert hosted.browser().teach().client.get("/teach/api/class").status_code == 200  # the new key opens


def test_the_password_typed_as_it_is_replaced_opens_nothing(hosted, monkeypatch):
    set_instructor_password(hosted.ctx.store, "the old password")
    made = _rotate_inside_create_session(
        monkeypatch, hosted, lambda store: set_instructor_password(store, "the new password"))
    browser = hosted.browser()
    page = browser.client.get("/teach")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = browser.client.post("/teach/login", data={"csrf": csrf, "password": "the old password"})
    assert made, "the sign-in never reached the store: the race was not exercised"
    assert r.status_code == 403, r.text
    assert not _alive(hosted, r)


def test_a_sign_in_with_no_rotation_around_it_still_opens(hosted):
    set_instructor_password(hosted.ctx.store, "a password")
    browser = hosted.browser()
    page = browser.client.get("/teach")
    csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
    r = browser.client.post("/teach/login", data={"csrf": csrf, "password": "a password"})
    assert r.status_code == 303, r.text
    assert _alive(hosted, r)
    r = hosted.browser().client.get(f"/teach?key={hosted.keys.instructor_key}")
    assert r.status_code == 303 and _alive(hosted, r)
