"""Forwarded addresses and join floods (issue 35, class 7).

`X-Forwarded-For` is believed only from the proxies named with
`--forwarded-allow-ips` (default: none), so a local process cannot spread its
guesses over made-up addresses; with the option, a proxy's clients are told
apart. A flood of joins from one address is slowed, not refused, so classmates
behind the same address still get in; the course file's `max_learners`
bounds the class.
"""

from __future__ import annotations

import re
import subprocess
import threading

import pytest
from test_host_support import HostProcess, console_script, hosted_class

from attn_practice.grader.host.limits import Limits, Pacer

pytest.importorskip("httpx", reason="httpx is not installed (pip install 'attn-practice[test]')")
pytestmark = pytest.mark.slow


def _wrong_codes(proc: HostProcess, addresses: list[str]) -> list[int]:
    c = proc.client()
    return [c.get("/join/not-the-code", headers={"X-Forwarded-For": a}).status_code for a in addresses]


def test_forwarded_for_from_loopback_is_not_believed_by_default(tmp_path):
    proc = HostProcess(tmp_path / "class")
    try:
        fakes = [f"203.0.113.{i}" for i in range(1, 31)]
        codes = _wrong_codes(proc, fakes)
        assert set(codes) <= {404, 429} and codes.count(429) >= 15, codes  # one address: limited
    finally:
        proc.stop()


def test_forwarded_for_is_believed_from_a_named_proxy(tmp_path):
    proc = HostProcess(tmp_path / "class", "--forwarded-allow-ips", "127.0.0.1")
    try:
        codes = _wrong_codes(proc, [f"203.0.113.{i}" for i in range(1, 31)])
        assert codes == [404] * 30, codes  # thirty clients behind the proxy, one guess each
        same = _wrong_codes(proc, ["198.51.100.7"] * 30)
        assert same.count(429) >= 15, same  # one of them guessing thirty times is limited
    finally:
        proc.stop()


def test_a_bad_forwarded_allow_ips_is_refused_plainly(tmp_path):
    out = subprocess.run([console_script(), "host", str(tmp_path / "c"), "--port", "0",
                          "--forwarded-allow-ips", "10.0.0.0/8,not-an-ip"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "--forwarded-allow-ips" in out.stderr and "not-an-ip" in out.stderr
    assert "Traceback" not in out.stderr


def test_max_learners_in_the_course_file_bounds_the_class(tmp_path):
    course = tmp_path / "course.yaml"
    course.write_text("max_learners: 3\n")
    proc = HostProcess(tmp_path / "class", "--course", str(course))
    try:
        for name in ("A", "B", "C"):
            proc.join(name)
        c = proc.client()
        page = c.get(f"/join/{proc.join_code}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        r = c.post(f"/join/{proc.join_code}", data={"csrf": csrf, "display_name": "D"})
        assert r.status_code == 403 and "full" in r.text and "max_learners" in r.text
    finally:
        proc.stop()
    bad = tmp_path / "bad.yaml"
    bad.write_text("max_learners: 0\n")
    out = subprocess.run([console_script(), "host", str(tmp_path / "c2"), "--port", "0", "--course",
                          str(bad)], capture_output=True, text=True, timeout=120)
    assert out.returncode != 0 and "max_learners" in out.stderr


def test_a_join_flood_from_one_address_is_slowed_and_classmates_there_still_join(tmp_path):
    """In process, with a small burst: joins beyond it wait their turn instead of being refused."""
    limits = Limits(joins=Pacer(burst=5, per_second=10.0, max_wait=3.0))
    with hosted_class(tmp_path / "class", limits=limits) as hosted:
        statuses: list[int] = []
        lock = threading.Lock()

        def flood() -> None:
            b = hosted.browser()
            code = hosted.keys.join_code
            for i in range(8):
                page = b.client.get(f"/join/{code}")
                csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
                r = b.client.post(f"/join/{code}", data={"csrf": csrf, "display_name": f"Bot {i}"})
                with lock:
                    statuses.append(r.status_code)

        bots = [threading.Thread(target=flood) for _ in range(4)]
        for t in bots:
            t.start()
        honest = hosted.browser().join("Classmate behind the same NAT")  # asserts a 200
        for t in bots:
            t.join(timeout=120)
        assert honest.resume_link
        assert statuses.count(200) == 32, statuses  # slowed to the rate, none refused
        # a flood beyond what may wait is told when to come back (429 + Retry-After), at once
        many = [limits.joins.turn("testclient") for _ in range(100)]
        assert None in many and limits.joins.retry_after("testclient") >= 1
