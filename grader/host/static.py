"""Static files: serve's page, script and style (read from its package, never copied) and ours.

The lesson page is serve's `index.html` with the session's CSRF token where
serve puts its token (the page sends it in `X-Attn-Token` on every change)
and, before `</head>`, the host's small additions: `host.js` (version
history and restore, the check's place in the queue, reconnecting after a
restart) and `host.css`.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from attn_practice.grader.host.web import Problem
from attn_practice.grader.teaching.web.server import STATIC as SERVE_STATIC
from attn_practice.grader.teaching.web.server import static_file as serve_file

HOST_STATIC = {"host.js": "text/javascript; charset=utf-8", "host.css": "text/css; charset=utf-8",
               "teach.js": "text/javascript; charset=utf-8", "teach.html": "text/html; charset=utf-8",
               "account.js": "text/javascript; charset=utf-8"}
PUBLIC = {"app.js", "style.css", "host.js", "host.css", "teach.js", "account.js"}
INJECT = (b'<link rel="stylesheet" href="/static/host.css">\n'
          b'<script src="/static/host.js" defer></script>\n'
          b'<script src="/static/account.js" defer></script>\n</head>')


@cache
def host_file(name: str) -> bytes:
    return (resources.files("attn_practice.grader.host") / "static" / name).read_bytes()


def file_bytes(name: str) -> tuple[bytes, str]:
    if name in HOST_STATIC:
        return host_file(name), HOST_STATIC[name]
    return serve_file(name), SERVE_STATIC[name]


def lesson_page(csrf: str) -> bytes:
    page = serve_file("index.html").replace(b"{{TOKEN}}", csrf.encode())
    return page.replace(b"</head>", INJECT, 1)


def teach_page(csrf: str) -> bytes:
    return host_file("teach.html").replace(b"{{TOKEN}}", csrf.encode())


def static(request: Request) -> Response:
    name = request.path_params["name"]
    if name not in PUBLIC:
        raise Problem(404, "no such file.")
    body, ctype = file_bytes(name)
    return Response(body, media_type=ctype, headers={"Cache-Control": "no-cache"})
