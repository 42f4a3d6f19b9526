"""HTTP plumbing every view shares: bounded bodies, one error shape, the serve page's headers.

A view raises `Problem(status, message)`; the app turns it into JSON for
`/api/...` paths and a small escaped HTML page elsewhere. Bodies are read
with a hard byte limit (counted while reading, whatever Content-Length
says), must be UTF-8, and are parsed as JSON objects or urlencoded forms.
The security headers and CSP are `serve`'s own (imported, not copied).
"""

from __future__ import annotations

import asyncio
import json
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs

from starlette.requests import ClientDisconnect, Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attn_practice.grader.teaching.web.render import esc
from attn_practice.grader.teaching.web.server import SECURITY_HEADERS

#: a step file is at most 1 MiB; JSON escaping may double it
MAX_SAVE_BODY = 2 * 1024 * 1024 + 4096
MAX_SMALL_BODY = 16 * 1024
#: seconds a request's body may take to arrive, once its handler reads it
BODY_SECONDS = 30.0


class Problem(Exception):
    """A request refused, with the message the person (or page) is shown."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers or {}


def wants_json(request: Request) -> bool:
    path = request.url.path
    return path.startswith(("/api/", "/teach/api/"))


def problem_response(request: Request, status: int, message: str,
                     headers: dict[str, str] | None = None) -> Response:
    if wants_json(request):
        return JSONResponse({"error": message}, status_code=status, headers=headers)
    phrase = HTTPStatus(status).phrase
    body = (f"<!doctype html><meta charset=utf-8><title>attn-practice: {status}</title>"
            f'<link rel="stylesheet" href="/static/style.css"><main class="host-page">'
            f"<h1>{status} {esc(phrase)}</h1><p>{esc(message)}</p></main>")
    return HTMLResponse(body, status_code=status, headers=headers)


async def read_body(request: Request, limit: int) -> bytes:
    """The body, at most `limit` bytes (else 413, without reading the rest)."""
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            if int(declared) > limit:
                raise Problem(413, f"the request is too large (limit {limit} bytes); nothing was saved.")
        except ValueError:
            raise Problem(400, "a bad Content-Length.") from None
    chunks, size = [], 0
    try:
        async with asyncio.timeout(BODY_SECONDS):  # a body sent a byte at a time holds nothing long
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise Problem(413, f"the request is too large (limit {limit} bytes); nothing was saved.")
                chunks.append(chunk)
    except TimeoutError:
        raise Problem(408, f"the request's body took longer than {BODY_SECONDS:g} s to arrive; "
                           "nothing was saved. Try again.", {"Connection": "close"}) from None
    except ClientDisconnect:
        raise Problem(400, "the connection closed before the request's body arrived; nothing was "
                           "saved.") from None
    return b"".join(chunks)


def _text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Problem(400, "the request is not valid UTF-8; nothing was saved.") from None


async def read_json(request: Request, limit: int = MAX_SMALL_BODY) -> dict[str, Any]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/json":
        raise Problem(415, "send JSON (Content-Type: application/json).")
    text = _text(await read_body(request, limit))
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        raise Problem(400, "the request is not valid JSON.") from None
    except RecursionError:
        raise Problem(400, "the request's JSON is nested too deeply.") from None
    if not isinstance(data, dict):
        raise Problem(400, "the request must be a JSON object.")
    _no_nul(data)
    return data


def _no_nul(data: Any) -> None:
    """Refuse what no database column takes, anywhere in a body's keys and strings: NUL
    characters and lone surrogates (not UTF-8). Walks iteratively: nesting is bounded by the parser."""
    todo = [data]
    while todo:
        item = todo.pop()
        if isinstance(item, dict):
            todo.extend(item.keys())
            todo.extend(item.values())
        elif isinstance(item, list):
            todo.extend(item)
        elif isinstance(item, str):
            if "\0" in item:
                raise Problem(400, "the request holds a NUL character (\\u0000), which no field "
                                   "takes; nothing was saved.")
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise Problem(400, "the text is not valid Unicode (a lone surrogate?); nothing was "
                                   "saved.") from None


async def read_form(request: Request, limit: int = MAX_SMALL_BODY) -> dict[str, str]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if ctype != "application/x-www-form-urlencoded":
        raise Problem(415, "send the form as the page does.")
    text = _text(await read_body(request, limit))
    try:
        fields = parse_qs(text, keep_blank_values=True, strict_parsing=False, max_num_fields=20,
                          errors="strict")
    except (ValueError, UnicodeDecodeError):
        raise Problem(400, "the form could not be read.") from None
    form = {k: v[0] for k, v in fields.items()}
    _no_nul(form)
    return form


def text_field(data: dict[str, Any], name: str, *, max_len: int, required: bool = True) -> str:
    value = data.get(name, "")
    if not isinstance(value, str):
        raise Problem(400, f"'{name}' must be text.")
    value = value.strip()
    if required and not value:
        raise Problem(400, f"'{name}' is needed.")
    if len(value) > max_len:
        raise Problem(400, f"'{name}' is too long (at most {max_len} characters).")
    if any(ord(c) < 32 or ord(c) == 127 or "\ud800" <= c <= "\udfff" or c in "\u2028\u2029\ufeff"
           for c in value):
        raise Problem(400, f"'{name}' holds characters that cannot be shown.")
    return value


class SecurityHeaders:
    """Adds serve's CSP and security headers to every response (and HSTS over TLS)."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        tls = scope.get("scheme") == "https"

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                have = {k.lower() for k, _ in headers}
                for k, v in SECURITY_HEADERS.items():
                    if k.lower().encode() not in have:
                        headers.append((k.lower().encode(), v.encode()))
                if tls:
                    headers.append((b"strict-transport-security", b"max-age=31536000"))
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


def client_address(request: Request) -> str:
    return request.client.host if request.client else "?"
