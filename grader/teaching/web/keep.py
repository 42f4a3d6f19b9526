"""What the lesson page keeps in a workspace between runs of `serve`: its token, port, last reports.

All of it lives in `.attn-practice/` beside the state file (folder 0700,
files 0600: the token gives control of the page, and the reports show the
learner's code), written atomically. Losing any of it is harmless: a
missing or damaged token is replaced (the open tab is then told to use the
new link), a missing report is "not checked yet".

- the token and the port: an open tab reconnects by itself after `serve`
  restarts, because the new run answers on the same port with the same
  token (`--rotate-token` makes a new one: old links stop working);
- the last report of each step, with the version of the file it was
  computed on, so a reload shows it (marked stale when the file changed).

Functions take the `Workspace`, so `host` can keep the same things per
learner the same way.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from attn_practice.grader.atomic import write_atomic
from attn_practice.grader.teaching.workspace import Workspace

KEEP_DIR = ".attn-practice"
SERVE_FILE = "serve.json"
REPORTS_FILE = "reports.json"
TOKEN_RE = re.compile(r"^[A-Za-z0-9_\-]{24,128}$")
MAX_KEPT_BYTES = 8 * 1024 * 1024


def keep_dir(ws: Workspace) -> Path:
    """The folder, created 0700 (and made so, if it was not)."""
    folder = ws.root / KEEP_DIR
    folder.mkdir(mode=0o700, exist_ok=True)
    if folder.is_symlink() or not folder.is_dir():
        raise OSError(f"{folder} is not a folder")
    if folder.stat().st_mode & 0o077:
        os.chmod(folder, 0o700)
    ignore = folder / ".gitignore"
    if not ignore.exists():  # a workspace pushed to a class repository does not carry the token
        write_atomic(ignore, "# attn-practice serve's private files: never commit them\n*\n", mode=0o600)
    return folder


def _read(ws: Workspace, name: str) -> dict[str, Any]:
    path = ws.root / KEEP_DIR / name
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    try:
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_KEPT_BYTES + 1)
        data = json.loads(raw.decode("utf-8")) if len(raw) <= MAX_KEPT_BYTES else None
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(ws: Workspace, name: str, data: dict[str, Any]) -> None:
    write_atomic(keep_dir(ws) / name, json.dumps(data, ensure_ascii=False), mode=0o600)


# ------------------------------------------------------------------ token and port
def serve_identity(ws: Workspace, *, rotate: bool = False) -> tuple[str, int | None]:
    """(the workspace's token, the port it was last served on); a new token when asked or none.

    A token that cannot be kept (a read-only folder) is still returned: the
    page works, only a restart will not find it again.
    """
    data = _read(ws, SERVE_FILE)
    token = data.get("token")
    port = data.get("port")
    port = port if isinstance(port, int) and 0 < port < 65536 else None
    if rotate or not isinstance(token, str) or not TOKEN_RE.match(token):
        token = secrets.token_urlsafe(24)
        try:
            _write(ws, SERVE_FILE, {"token": token, "port": port})
        except OSError:
            pass
    return token, port


def remember_port(ws: Workspace, token: str, port: int) -> None:
    """The next run tries this port first (an open tab keeps its address)."""
    try:
        _write(ws, SERVE_FILE, {"token": token, "port": port})
    except OSError:
        pass


# ------------------------------------------------------------------ last reports
def save_report(ws: Workspace, step_id: str, result: dict[str, Any]) -> None:
    """Keep a check's result (it carries `version`, the file it was computed on)."""
    data = _read(ws, REPORTS_FILE)
    data[step_id] = {k: result[k] for k in ("step", "status", "passed", "diagnoses", "html",
                                              "version", "next") if k in result}
    try:
        _write(ws, REPORTS_FILE, data)
    except OSError:
        pass  # a reload will say "not checked yet": nothing else is lost


def last_report(ws: Workspace, step_id: str) -> dict[str, Any] | None:
    """The last kept result of a step, or None."""
    got = _read(ws, REPORTS_FILE).get(step_id)
    return got if isinstance(got, dict) and isinstance(got.get("html"), str) else None


def forget_report(ws: Workspace, step_id: str) -> None:
    """After a reset: the old report described a file that is gone."""
    data = _read(ws, REPORTS_FILE)
    if data.pop(step_id, None) is not None:
        try:
            _write(ws, REPORTS_FILE, data)
        except OSError:
            pass
