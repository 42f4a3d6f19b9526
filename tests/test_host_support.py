"""Helpers for the host tests (no tests here): a hosted class in process, learners joining it.

`hosted_class` builds the real app (SQLite store in a temp folder, the real
local check pool) and drives it through Starlette's TestClient; each
`Browser` is one client with its own cookie jar, as one browser would be.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from live_processes import alive
from starlette.testclient import TestClient

from attn_practice.grader.catalog import load_catalog
from attn_practice.grader.host import widgets_hosted
from attn_practice.grader.host.app import build_app
from attn_practice.grader.host.auth import ClassKeys, ensure_class_settings
from attn_practice.grader.host.checks.local import LocalCheckRunner
from attn_practice.grader.host.checks.work import host_options
from attn_practice.grader.host.context import HostContext, Limits
from attn_practice.grader.host.store.factory import open_store

IMPLEMENTATIONS = Path(__file__).parent / "implementations"
SUBMISSIONS = Path(__file__).parent / "submissions"
BASE = "http://testserver"


@dataclass
class Hosted:
    ctx: HostContext
    app: Any
    data_dir: Path

    @property
    def keys(self) -> ClassKeys:
        return self.ctx.keys(fresh=True)

    def browser(self) -> Browser:
        return Browser(TestClient(self.app, base_url=BASE, follow_redirects=False), self)


@contextmanager
def hosted_class(data_dir: Path, *, jobs: int = 1, limits: Limits | None = None,
                 widget_timeout: float = 120.0) -> Iterator[Hosted]:
    """The class in process. A widget may wait `widget_timeout` s for the workers (8 s in the
    product): beside other test files, the first widget after a learner's saves waits for
    their checks and a fresh worker's sandboxes, and the fallback is not what most tests test."""
    kept_timeout, widgets_hosted.WIDGET_TIMEOUT = widgets_hosted.WIDGET_TIMEOUT, widget_timeout
    try:
        with _hosted_class(data_dir, jobs=jobs, limits=limits) as hosted:
            yield hosted
    finally:
        widgets_hosted.WIDGET_TIMEOUT = kept_timeout


@contextmanager
def _hosted_class(data_dir: Path, *, jobs: int, limits: Limits | None) -> Iterator[Hosted]:
    store = open_store(None, data_dir)
    ensure_class_settings(store)
    runner = LocalCheckRunner(host_options(), jobs=jobs)
    ctx = HostContext(store, runner, load_catalog(), limits=limits)
    app = build_app(ctx)
    with TestClient(app, base_url=BASE):  # runs the lifespan (the live hub's poller)
        try:
            yield Hosted(ctx, app, data_dir)
        finally:
            ctx.queue.close()
    ctx.runner.close()
    ctx.store.close()


class Browser:
    """One learner's (or the instructor's) browser: a cookie jar, the page's CSRF token."""

    def __init__(self, client: TestClient, hosted: Hosted):
        self.client = client
        self.hosted = hosted
        self.token = ""
        self.resume_link = ""

    def join(self, name: str = "Ann", student_id: str | None = None) -> Browser:
        code = self.hosted.keys.join_code
        page = self.client.get(f"/join/{code}")
        assert page.status_code == 200, page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        form = {"csrf": csrf, "display_name": name}
        if student_id is not None:
            form["student_id"] = student_id
        r = self.client.post(f"/join/{code}", data=form)
        assert r.status_code == 200, r.text
        self.resume_link = re.search(r'id="resume-link" href="([^"]+)"', r.text).group(1)
        self.load_page()
        return self

    def resume(self, link: str) -> Any:
        return resume(self.client, link.replace(BASE, ""))

    def load_page(self) -> None:
        page = self.client.get("/")
        self.token = re.search(r'name="attnp-token" content="([^"]+)"', page.text).group(1)

    def post(self, path: str, body: dict[str, Any] | None = None, **kw: Any) -> Any:
        headers = {"X-Attn-Token": self.token, "Content-Type": "application/json",
                   **kw.pop("headers", {})}
        # json.dumps escapes non-ASCII, so a lone surrogate travels as the page's JSON would send it
        return self.client.post(path, content=json.dumps(body if body is not None else {}).encode(),
                                headers=headers, **kw)

    def save(self, step: str, content: Any, base: str | None = None, force: bool = False,
             **kw: Any) -> Any:
        return self.post(f"/api/step/{step}/save", {"content": content, "base": base, "force": force},
                         **kw)

    def check(self, step: str) -> Any:
        return self.post(f"/api/step/{step}/check")

    def teach(self) -> Browser:
        r = self.client.get(f"/teach?key={self.hosted.keys.instructor_key}")
        assert r.status_code == 303, r.text
        page = self.client.get("/teach")
        assert page.status_code == 200, page.text
        self.token = re.search(r'name="attnp-token" content="([^"]+)"', page.text).group(1)
        return self


def resume(client: Any, path: str) -> Any:
    """Open a resume link as a learner does: the GET asks "Continue as ...?", the POST signs in."""
    asked = client.get(path)
    assert asked.status_code == 200 and "Continue as" in asked.text, asked.text
    csrf = re.search(r'name="csrf" value="([^"]+)"', asked.text).group(1)
    return client.post(path, data={"csrf": csrf})


def implementation(step: str, name: str) -> str:
    return (IMPLEMENTATIONS / step / f"{name}.py").read_text()


# ---------------------------------------------------------------- the console script in a subprocess
FIRST_LINES = (
    re.compile(r"^Hosting attn-practice class at (http://127\.0\.0\.1:(\d+)/)$"),
    re.compile(r"^Instructor: http://127\.0\.0\.1:(\d+)/teach\?key=([A-Za-z0-9_\-]{40,})$"),
    re.compile(r"^Join: http://127\.0\.0\.1:(\d+)/join/([A-Za-z0-9_\-]{16,})$"),
)


def console_script() -> str:
    import shutil
    import sys

    beside = Path(sys.executable).with_name("attn-practice")
    exe = str(beside) if beside.exists() else shutil.which("attn-practice")
    assert exe, "the attn-practice console script is not installed (pip install -e .)"
    return exe


class HostProcess:
    """`attn-practice host DATA_DIR --port 0 ...` started as an instructor would, read back."""

    def __init__(self, data_dir: Path, *args: str, port: int = 0):
        import os
        import subprocess

        env = {**os.environ, "COLUMNS": "200"}
        # stderr (one ops line per request) to a file: a pipe nobody reads would fill and stop the server
        self.err_path = Path(data_dir).parent / f"host-{Path(data_dir).name}-{time.monotonic_ns()}.err"
        self._err = open(self.err_path, "w")
        env.pop("ATTN_PRACTICE_DEBUG", None)
        self.proc = subprocess.Popen([console_script(), "host", str(data_dir), "--port", str(port),
                                      "--jobs", "1", *args],
                                     stdout=subprocess.PIPE, stderr=self._err, text=True, env=env,
                                     start_new_session=True)  # a group of its own, as in a terminal
        assert self.proc.stdout is not None
        self.lines = [self.proc.stdout.readline().rstrip("\n") for _ in range(3)]
        matches = [p.match(line) for p, line in zip(FIRST_LINES, self.lines, strict=True)]
        if not all(matches):
            out, err = self.stop()
            raise AssertionError(f"unexpected first lines {self.lines!r}\n{out}\n{err}")
        self.base = matches[0].group(1).rstrip("/")
        self.port = int(matches[0].group(2))
        self.key = matches[1].group(2)
        self.join_code = matches[2].group(2)

    def client(self) -> Any:
        import httpx

        return httpx.Client(base_url=self.base, follow_redirects=False, timeout=120)

    def join(self, name: str) -> tuple[Any, str, str]:
        """A learner joins: (their client, the page's CSRF token, their resume link)."""
        c = self.client()
        page = c.get(f"/join/{self.join_code}")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        r = c.post(f"/join/{self.join_code}", data={"csrf": csrf, "display_name": name})
        link = re.search(r'id="resume-link" href="([^"]+)"', r.text).group(1)
        token = re.search(r'name="attnp-token" content="([^"]+)"', c.get("/").text).group(1)
        return c, token, link

    def stop(self, sig: int | None = None) -> tuple[str, str]:
        """Stop it (SIGTERM by default) and return what it printed (stdout, stderr)."""
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(sig or signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=60)
        except Exception:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self._err.close()
        return out, self.err_path.read_text()

    def ctrl_c(self) -> tuple[str, str]:
        """Ctrl-C as a terminal sends it: SIGINT to every process of the group, workers too."""
        import os
        import signal
        import subprocess

        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a hang: the test says so, and nothing is left behind
            os.killpg(self.proc.pid, signal.SIGKILL)
        return self.stop()

    def group_alive(self, wait: float = 2.0) -> list[str]:
        """The command lines of the group's processes still running `wait` seconds on (zombies
        are the reaper's; one still exiting when the server has just stopped is given the time)."""
        from live_processes import in_group

        deadline = time.monotonic() + wait
        while (left := in_group(self.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return left

    def kill9(self) -> None:
        """SIGKILL, as `kill -9` does; its checking workers must go with it."""
        import os

        pid = self.proc.pid
        children = [int(p) for p in os.popen(f"pgrep -P {pid}").read().split()]
        self.proc.kill()
        self.proc.wait(timeout=60)
        deadline = time.monotonic() + 30
        while any(alive(c) for c in children):
            assert time.monotonic() < deadline, "the server's workers outlived it"
            time.sleep(0.2)
        self.proc.stdout.close()
        self._err.close()
