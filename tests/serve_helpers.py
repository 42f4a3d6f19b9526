"""`attn-practice serve` as the learner starts it: the console script in a subprocess.

`Served` reads the first stdout line (the CONTRACT §5 URL), then talks HTTP to
it with the standard library only; `stop()` sends Ctrl-C (SIGINT) and returns
the exit code and what the command printed.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

URL_LINE = re.compile(r"^Serving attn-practice at (http://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_\-]+))$")


class Served:
    def __init__(self, args: list[str], cwd: Path, env: dict[str, str] | None = None, *,
                 max_files: int | None = None):
        # the script beside this interpreter first (a venv not on PATH), then PATH
        beside = Path(sys.executable).with_name("attn-practice")
        exe = str(beside) if beside.exists() else shutil.which("attn-practice")
        assert exe, "the attn-practice console script is not installed (pip install -e .)"
        full_env = {**os.environ, "COLUMNS": "200", **(env or {})}
        full_env.pop("ATTN_PRACTICE_DEBUG", None)
        def limit() -> None:  # the server's own open-file limit (in the child only)
            import resource

            if max_files is not None:
                hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, hard))

        self.proc = subprocess.Popen([exe, "serve", *args], cwd=cwd, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=full_env,
                                     preexec_fn=limit if max_files is not None else None)
        assert self.proc.stdout is not None
        self.first_line = self.proc.stdout.readline().rstrip("\n")
        m = URL_LINE.match(self.first_line)
        if m is None:
            out, err = self.stop()
            raise AssertionError(f"unexpected first line {self.first_line!r}\nstdout: {out}\nstderr: {err}")
        self.url, self.port, self.token = m.group(1), int(m.group(2)), m.group(3)
        self.base = f"http://127.0.0.1:{self.port}"
        self.stopped: tuple[int, str, str] | None = None

    # -- HTTP -----------------------------------------------------------
    def request(self, method: str, path: str, body: bytes | str | dict[str, Any] | None = None, *,
                headers: dict[str, str] | None = None, token: bool | str = True,
                timeout: float = 120) -> tuple[int, dict[str, str], bytes]:
        """One request; `token=True` sends ours in the header, a string sends that, False none."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = {"Host": f"127.0.0.1:{self.port}"}
        if token is True:
            h["X-Attn-Token"] = self.token
        elif token:
            h["X-Attn-Token"] = str(token)
        if isinstance(body, dict):
            body = json.dumps(body)
            h["Content-Type"] = "application/json"
        if isinstance(body, str):
            body = body.encode("utf-8")
        h.update(headers or {})
        try:
            conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
            for k, v in h.items():
                conn.putheader(k, v)
            if body is not None and "Content-Length" not in h:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            res = conn.getresponse()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
        finally:
            conn.close()

    def get_json(self, path: str, **kw: Any) -> tuple[int, Any]:
        status, _, data = self.request("GET", path, **kw)
        return status, json.loads(data or b"{}")

    def post_json(self, path: str, body: dict[str, Any] | None = None, **kw: Any) -> tuple[int, Any]:
        status, _, data = self.request("POST", path, body if body is not None else {}, **kw)
        return status, json.loads(data or b"{}")

    # -- the end --------------------------------------------------------
    def stop(self, timeout: float = 30) -> tuple[str, str]:
        """Ctrl-C, as a learner would; returns (stdout, stderr) after the first line."""
        if self.stopped is None:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGINT)
            try:
                out, err = self.proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
            self.stopped = (self.proc.returncode, out, err)
        return self.stopped[1], self.stopped[2]

    @property
    def returncode(self) -> int | None:
        return self.stopped[0] if self.stopped else self.proc.returncode


def wait_until(condition: Any, timeout: float = 60.0, interval: float = 0.1) -> Any:
    """Poll `condition()` until truthy (no timing is asserted: the deadline only ends a hang)."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(interval)
