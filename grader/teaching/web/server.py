"""The HTTP side of `attn-practice serve`: standard library only, localhost only.

Threat model: the page can edit files and run checks, so anything else on the
machine that can reach 127.0.0.1 (another user's browser tab, a web page
doing DNS rebinding, a cross-site form) must not drive it. Hence:

- a random token per workspace (kept 0600 in the workspace, so an open tab
  reconnects after a restart), required on every request, else 403: the
  API takes it in the `X-Attn-Token` header (the page keeps it in its own
  origin's storage) or the query (the event stream); the page itself and
  its static files also take a cookie whose value is an HMAC of the token
  and our port, which opens nothing but the page's shell: other servers on
  127.0.0.1 receive it too (cookies ignore ports), and with it they get no
  data and cannot act. The token is in no HTML we send;
- idle connections time out, and cannot crowd out the page (`conns`);
- the `Host` header must be 127.0.0.1 or localhost (with our port), else 403;
- state-changing requests are POST only, with the token in the header (a
  cross-origin form cannot set it and we never answer CORS preflights), a
  JSON body, and an `Origin`, when sent, that is our own;
- no request names a path: steps are looked up by id, static files by a
  fixed table, so nothing outside the workspace can be reached;
- no learner code runs here (the bridge uses the sandboxed engine).
"""

from __future__ import annotations

import enum
import hmac
import json
import queue
import threading
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from attn_practice.grader.results import Status
from attn_practice.grader.teaching.web.bridge import MAX_FILE_BYTES, BadRequest, Bridge, Conflict
from attn_practice.grader.teaching.web.conns import REQUEST_TIMEOUT, GuardedConnections
from attn_practice.grader.teaching.web.keep import serve_identity
from attn_practice.grader.teaching.workspace import Workspace

DEFAULT_PORT = 8765
MAX_BODY_BYTES = 2 * MAX_FILE_BYTES + 4096  # JSON escaping may double a file's size
DRAIN_LIMIT = 16 * 1024 * 1024  # a bigger body is cut off unread
TOKEN_HEADER = "X-Attn-Token"
WATCH_INTERVAL = 0.3
KEEPALIVE = 15.0
STATIC = {"app.js": "text/javascript; charset=utf-8", "style.css": "text/css; charset=utf-8",
          "index.html": "text/html; charset=utf-8"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                               "script-src 'self'; connect-src 'self'; frame-ancestors 'none'; "
                               "base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Origin(str, enum.Enum):
    """Who asked for a check: the page (its Check button or a save) or a save on disk."""

    PAGE = "page"
    DISK = "disk"
    START = "start"  # re-checked when serve started: the file changed since its last check


class Event(str, enum.Enum):
    """What the server tells open pages (server-sent event names)."""

    FILE_CHANGED = "file-changed"
    CHECKING = "checking"
    CHECK = "check"


def static_file(name: str) -> bytes:
    return (resources.files("attn_practice.grader.teaching.web") / "static" / name).read_bytes()


class EventHub:
    """Server-sent events: each open page holds a queue; `publish` reaches all of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queues: list[queue.Queue[tuple[Event, Any] | None]] = []

    def subscribe(self) -> queue.Queue[tuple[Event, Any] | None]:
        q: queue.Queue[tuple[Event, Any] | None] = queue.Queue(maxsize=100)
        with self._lock:
            self._queues.append(q)
        return q

    def unsubscribe(self, q: queue.Queue[tuple[Event, Any] | None]) -> None:
        with self._lock:
            if q in self._queues:
                self._queues.remove(q)

    @property
    def listeners(self) -> int:
        with self._lock:
            return len(self._queues)

    def publish(self, event: Event, data: Any) -> None:
        with self._lock:
            for q in self._queues:
                try:
                    q.put_nowait((event, data))
                except queue.Full:  # a page that stopped reading misses events, nobody waits
                    pass

    def close(self) -> None:
        with self._lock:
            for q in self._queues:
                try:
                    q.put_nowait(None)
                except queue.Full:
                    pass


class LessonServer(GuardedConnections, ThreadingHTTPServer):
    """One workspace, one token, on 127.0.0.1."""

    daemon_threads = True
    # The port of a run that just stopped is free again at once (TIME_WAIT is no obstacle);
    # on Linux a port another socket listens on is still refused, so "taken" is still seen.
    allow_reuse_address = True

    def __init__(self, ws: Workspace, port: int = DEFAULT_PORT, *, token: str | None = None):
        super().__init__(("127.0.0.1", port), Handler)
        self.port = self.server_address[1]
        self.token = token or serve_identity(ws)[0]
        self.bridge = Bridge(ws)
        self.events = EventHub()
        self.stopping = threading.Event()
        self._auto: queue.Queue[str | None] = queue.Queue()
        self._workers = [threading.Thread(target=self._watch, name="attnp-watch", daemon=True),
                         threading.Thread(target=self._auto_checks, name="attnp-auto", daemon=True)]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    @property
    def allowed_hosts(self) -> set[str]:
        return {f"{h}{p}" for h in ("127.0.0.1", "localhost") for p in ("", f":{self.port}")}

    @property
    def allowed_origins(self) -> set[str]:
        return {f"http://{h}:{self.port}" for h in ("127.0.0.1", "localhost")}

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A request that broke the handler: one line on stderr, never a traceback in the terminal."""
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (BrokenPipeError, ConnectionResetError)):
            return  # the page went away mid-answer
        print(f"attn-practice serve: a request failed ({type(exc).__name__}: {exc}); the server "
              "goes on. This is a bug in attn-practice, not in your code.", file=sys.stderr)

    def start_background(self) -> None:
        """The watcher and the check worker; steps whose files changed while we were away first."""
        for sid in self.bridge.stale():
            self._auto.put(f"{Origin.START.value}:{sid}")
        for t in self._workers:
            t.start()

    def stop(self) -> None:
        """Stop watching, end the event streams, close sandboxes and the socket."""
        self.stopping.set()
        self._auto.put(None)
        self.events.close()
        self.server_close()
        self.bridge.close()

    # -------------------------------------------------------- the `watch` behaviour
    def _watch(self) -> None:
        """Poll the step files; a change not made by the page is announced and re-checked."""
        import os

        seen: dict[str, tuple[int, int] | None] = {}
        while not self.stopping.is_set():
            for ex in self.bridge.catalog:
                try:
                    st = os.stat(self.bridge.ws.file_for(ex))
                    sig: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
                except OSError:
                    sig = None
                if ex.id in seen and seen[ex.id] == sig:
                    continue
                seen[ex.id] = sig  # (a first look compares with the versions the bridge began with)
                version = self.bridge.file_version(ex)
                if version == self.bridge.known.get(ex.id):
                    continue  # the page's own save, or a touch that changed nothing
                self.bridge.known[ex.id] = version
                self.events.publish(Event.FILE_CHANGED, {"step": ex.id, "version": version})
                if self.events.listeners and version:
                    self._auto.put(ex.id)
            self.stopping.wait(WATCH_INTERVAL)

    def _auto_checks(self) -> None:
        while True:
            step_id = self._auto.get()
            if step_id is None or self.stopping.is_set():
                return
            pending = [step_id]
            while not self._auto.empty():  # several saves in a row: one check each step
                more = self._auto.get_nowait()
                if more is None:
                    return
                pending.append(more)
            todo: dict[str, Origin] = {}
            for item in pending:
                origin, _, sid = item.rpartition(":")
                todo.setdefault(sid, Origin(origin) if origin else Origin.DISK)
            for sid in sorted(todo, key=lambda x: self.bridge.step(x).number):
                self.run_check(sid, origin=todo[sid])

    def run_check(self, step_id: str, *, origin: Origin) -> dict[str, Any]:
        ex = self.bridge.step(step_id)
        self.events.publish(Event.CHECKING, {"step": ex.id, "origin": origin.value})
        try:
            result = self.bridge.check(ex)
        except Exception as exc:  # noqa: BLE001 - the grader failing is said as such, never a traceback
            result = {"step": ex.id, "status": Status.ERROR.value, "passed": False, "diagnoses": [],
                      "html": '<p class="error">The grader itself failed while checking '
                              f"{ex.file} ({type(exc).__name__}). This is not your fault: check "
                              "again, and report it if it persists.</p>"}
        result["origin"] = origin.value
        self.events.publish(Event.CHECK, result)
        return result


class Handler(BaseHTTPRequestHandler):
    server: LessonServer
    server_version = "attn-practice"
    sys_version = ""
    timeout = REQUEST_TIMEOUT  # per read: a connection that sends nothing is closed

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok:
            self.server.mark_active(self.connection)  # a whole request: no longer evictable
        return ok

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's name
        pass  # the terminal shows the URL line, not a request log

    # ---------------------------------------------------------------- plumbing
    def _send(self, code: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in {**SECURITY_HEADERS, **(headers or {})}.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, data: Any, headers: dict[str, str] | None = None) -> None:
        self._send(code, json.dumps(data, ensure_ascii=False).encode("utf-8"),
                   "application/json; charset=utf-8", headers)

    def _error(self, code: int, message: str) -> None:
        if self._wants_json():
            self._json(code, {"error": message})
        else:
            from attn_practice.grader.teaching.web.render import esc

            body = (f"<!doctype html><meta charset=utf-8><title>attn-practice: {code}</title>"
                    f"<h1>{code} {esc(HTTPStatus(code).phrase)}</h1><p>{esc(message)}</p>")
            self._send(code, body.encode("utf-8"), "text/html; charset=utf-8")

    def _wants_json(self) -> bool:
        return urlsplit(self.path).path.startswith("/api/")

    def _token_ok(self, query: dict[str, list[str]], *, shell: bool) -> bool:
        """The token in the header or the query; for the page's shell, the page cookie too."""
        want = self.server.token.encode()
        candidates = [self.headers.get(TOKEN_HEADER, ""), *query.get("token", [])[:1]]
        if any(hmac.compare_digest(c.encode("utf-8", "replace"), want) for c in candidates if c):
            return True
        if not shell:
            return False
        cookie = SimpleCookie()
        try:
            cookie.load(self.headers.get("Cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed cookie is just no cookie
            pass
        got = cookie[self._cookie_name].value if self._cookie_name in cookie else ""
        return bool(got) and hmac.compare_digest(got.encode("utf-8", "replace"),
                                                 self._cookie_value.encode())

    @property
    def _cookie_name(self) -> str:
        return f"attnp_page_{self.server.port}"  # cookies ignore ports: one per server

    @property
    def _cookie_value(self) -> str:
        """Bound to this port and good for the page's shell only: never the token itself."""
        return hmac.new(self.server.token.encode(), f"page:{self.server.port}".encode(),
                        "sha256").hexdigest()

    def _is_shell(self, path: str) -> bool:
        parts = [p for p in path.split("/") if p]
        return self.command == "GET" and (
            not parts or (len(parts) == 2 and parts[0] in ("step", "static")) or parts == ["favicon.ico"])

    def _guard(self) -> tuple[str, dict[str, list[str]]] | None:
        """Host, token (and for POST: header token, Origin); the path and query when all pass."""
        host = (self.headers.get("Host") or "").strip().lower()
        if host not in self.server.allowed_hosts:
            self._error(403, "this server answers only to 127.0.0.1 and localhost.")
            return None
        split = urlsplit(self.path)
        query = parse_qs(split.query, keep_blank_values=True)
        if not self._token_ok(query, shell=self._is_shell(split.path)):
            self._error(403, "missing or wrong token: the server was restarted with a new token, "
                             "or serves another workspace. Open the link that `attn-practice serve` "
                             "printed (it ends in ?token=...).")
            return None
        if self.command == "POST":
            header = self.headers.get(TOKEN_HEADER, "")
            if not hmac.compare_digest(header.encode("utf-8", "replace"), self.server.token.encode()):
                self._error(403, f"changes need the token in the {TOKEN_HEADER} header.")
                return None
            origin = self.headers.get("Origin")
            if origin is not None and origin.lower() not in self.server.allowed_origins:
                self._error(403, "requests from another origin are refused.")
                return None
        path = unquote(split.path)
        if "\0" in path or ".." in path.split("/") or "\\" in path:
            self._error(404, "no such page.")
            return None
        return path, query

    def _body(self) -> dict[str, Any] | None:
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._error(411, "a POST needs a Content-Length.")
            return None
        if length < 0 or length > MAX_BODY_BYTES:
            self.close_connection = True
            left = length if 0 < length <= DRAIN_LIMIT else 0
            while left > 0:  # read what was sent, so the sender gets our answer, not a broken pipe
                chunk = self.rfile.read(min(left, 1 << 16))
                if not chunk:
                    break
                left -= len(chunk)
            self._error(413, "the request is too large: a step file may be at most 1 MiB.")
            return None
        ctype = self.headers.get("Content-Type", "").split(";")[0].strip().lower()
        if ctype != "application/json":
            self._error(415, "send JSON (Content-Type: application/json).")
            return None
        raw = self.rfile.read(length)
        try:
            data = json.loads(raw.decode("utf-8")) if raw.strip() else {}
        except UnicodeDecodeError:
            self._error(400, "the request is not valid UTF-8; nothing was saved.")
            return None
        except ValueError:
            self._error(400, "the request is not valid JSON.")
            return None
        if not isinstance(data, dict):
            self._error(400, "the request must be a JSON object.")
            return None
        return data

    # ---------------------------------------------------------------- methods
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        guarded = self._guard()
        if guarded is None:
            return
        path, query = guarded
        parts = [p for p in path.split("/") if p]
        try:
            self._get(parts, query)
        except LookupError as exc:
            self._error(404, str(exc))
        except BadRequest as exc:
            self._error(400, str(exc))
        except OSError as exc:
            self._error(500, f"could not read in the workspace: {exc.strerror or exc}")

    def _get(self, parts: list[str], query: dict[str, list[str]]) -> None:
        b = self.server.bridge
        if not parts or (len(parts) == 2 and parts[0] == "step"):
            if parts:
                b.step(parts[1])
            page = static_file("index.html").replace(b"{{TOKEN}}", b"")  # the page keeps it itself
            cookie = f"{self._cookie_name}={self._cookie_value}; Path=/; HttpOnly; SameSite=Strict"
            self._send(200, page, STATIC["index.html"], {"Set-Cookie": cookie})
        elif len(parts) == 2 and parts[0] == "static" and parts[1] in STATIC:
            self._send(200, static_file(parts[1]), STATIC[parts[1]])
        elif parts == ["favicon.ico"]:
            self._send(204, b"", "image/x-icon")
        elif parts == ["api", "summary"]:
            self._json(200, b.summary())
        elif len(parts) == 3 and parts[:2] == ["api", "step"]:
            self._json(200, b.page(b.step(parts[2])))
        elif parts == ["api", "events"]:
            self._events()
        elif len(parts) == 3 and parts[:2] == ["api", "widget"]:
            one = {k: v[0] for k, v in query.items()}
            if parts[2] == "heatmap":
                self._json(200, b.heatmap())
            elif parts[2] == "example":
                self._json(200, b.example(one.get("q"), one.get("keys"), one.get("values")))
            elif parts[2] == "scale":
                self._json(200, b.scale(one.get("d_k")))
            else:
                raise LookupError(f"no widget {parts[2][:40]!r}")
        else:
            raise LookupError("no such page.")

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        guarded = self._guard()
        if guarded is None:
            return
        path, _ = guarded
        parts = [p for p in path.split("/") if p]
        if not (len(parts) == 4 and parts[:2] == ["api", "step"]):
            self._error(404, "no such action.")
            return
        body = self._body()
        if body is None:
            return
        b = self.server.bridge
        try:
            ex = b.step(parts[2])
            action = parts[3]
            if action == "save":
                got = b.save(ex, body.get("content"), body.get("base"), force=body.get("force") is True)
                if isinstance(got, Conflict):
                    self._json(409, {"error": f"{ex.file} changed on disk since the page loaded it.",
                                     "disk_content": got.disk_text, "disk_version": got.disk_version})
                else:
                    self._json(200, {"version": got})
                    # other open pages of this step reload (the saving page knows this version)
                    self.server.events.publish(Event.FILE_CHANGED, {"step": ex.id, "version": got})
            elif action == "check":
                self._json(200, self.server.run_check(ex.id, origin=Origin.PAGE))
            elif action == "hint":
                self._json(200, b.hint(ex))
            elif action == "reset":
                done = b.reset(ex)
                text, version, problem = b.read_text(ex)
                self._json(200, {**done, "content": text, "version": version})
            else:
                raise LookupError(f"no action {action[:40]!r}")
        except LookupError as exc:
            self._error(404, str(exc))
        except BadRequest as exc:
            self._error(400, str(exc))
        except OSError as exc:
            self._error(500, f"could not write in the workspace: {exc.strerror or exc}")

    def _refuse(self) -> None:
        self._error(405, "only GET and POST are served (and no cross-origin requests).")

    do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # noqa: N815

    def _events(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.end_headers()
        hub = self.server.events
        q = hub.subscribe()
        try:
            self.wfile.write(b": connected\nretry: 1000\n\n")
            self.wfile.flush()
            while not self.server.stopping.is_set():
                try:
                    item = q.get(timeout=KEEPALIVE)
                except queue.Empty:
                    self.wfile.write(b": keep-alive\n\n")
                    self.wfile.flush()
                    continue
                if item is None:
                    return
                event, data = item
                payload = json.dumps(data, ensure_ascii=False)
                self.wfile.write(f"event: {Event(event).value}\ndata: {payload}\n\n".encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass
        finally:
            hub.unsubscribe(q)
            self.close_connection = True
