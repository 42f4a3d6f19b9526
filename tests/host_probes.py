"""Helpers for the held-out style probes (tests/test_host_probes_*.py): no tests here.

A probe attacks the real console script (`attn-practice host` on loopback,
real HTTP through httpx) as a hostile learner or an outsider would. Each
learner is one httpx client (its own cookie jar, as one browser); the
server is stopped by its process id when the module ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
from test_host_support import HostProcess


@contextmanager
def running_host(data_dir: Path, *args: str) -> Iterator[HostProcess]:
    host = HostProcess(data_dir, *args)
    host.data_dir = data_dir  # type: ignore[attr-defined]
    try:
        yield host
    finally:
        host.stop()


class Learner:
    """One hostile or honest learner's browser: its cookies, its page's token, its resume link."""

    def __init__(self, host: HostProcess, name: str, student_id: str | None = None):
        self.client: httpx.Client = host.client()
        page = self.client.get(f"/join/{host.join_code}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        form = {"csrf": csrf, "display_name": name}
        if student_id is not None:
            form["student_id"] = student_id
        self.joined = self.client.post(f"/join/{host.join_code}", data=form)
        link = re.search(r'id="resume-link" href="([^"]+)"', self.joined.text)
        self.resume_link = link.group(1) if link else ""
        self.token = page_token(self.client.get("/").text) if link else ""

    def post(self, path: str, body: Any = None, **headers: str) -> httpx.Response:
        return self.client.post(path, content=json.dumps({} if body is None else body).encode(),
                                headers={"X-Attn-Token": self.token,
                                         "Content-Type": "application/json", **headers})

    def save(self, step: str, content: str, **body: Any) -> httpx.Response:
        return self.post(f"/api/step/{step}/save", {"content": content, "base": None, **body})


def page_token(html: str) -> str:
    return re.search(r'name="attnp-token" content="([^"]+)"', html).group(1)


def instructor(host: HostProcess) -> tuple[httpx.Client, str]:
    """A signed-in instructor browser and its page's token."""
    c = host.client()
    assert c.get(f"/teach?key={host.key}").status_code == 303
    return c, page_token(c.get("/teach").text)


def teach_post(client: httpx.Client, token: str, action: str, body: Any = None,
               **headers: str) -> httpx.Response:
    return client.post(f"/teach/api/{action}", content=json.dumps(body or {}).encode(),
                       headers={"X-Attn-Token": token, "Content-Type": "application/json", **headers})
