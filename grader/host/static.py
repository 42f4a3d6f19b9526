"""Static files: serve's page, script and style (read from its package, never copied) and ours.

The lesson page is serve's `index.html` with the session's CSRF token where
serve puts its token (the page sends it in `X-Attn-Token` on every change)
and, before `</head>`, the host's small additions: `host.js` (version
history and restore, the check's place in the queue, reconnecting after a
restart) and `host.css`.
"""

from __future__ import annotations

import struct
import zlib
from functools import cache
from importlib import resources

from starlette.requests import Request
from starlette.responses import Response

from attn_practice.grader.host.web import Problem
from attn_practice.grader.teaching.web.server import STATIC as SERVE_STATIC
from attn_practice.grader.teaching.web.server import static_file as serve_file

HOST_STATIC = {"host.js": "text/javascript; charset=utf-8", "host.css": "text/css; charset=utf-8",
               "teach.js": "text/javascript; charset=utf-8", "teach.html": "text/html; charset=utf-8",
               "account.js": "text/javascript; charset=utf-8", "diff.js": "text/javascript; charset=utf-8",
               "teach_drill.js": "text/javascript; charset=utf-8"}
PUBLIC = {"app.js", "style.css", "host.js", "host.css", "teach.js", "account.js", "diff.js", "teach_drill.js"}
# `attnp-mode` tells serve's script it runs in a hosted class: its words then name the class
# server, never `attn-practice serve`, a terminal or a folder (CONTRACT §7.1).
INJECT = (b'<meta name="attnp-mode" content="hosted">\n'
          b'<link rel="icon" href="/favicon.ico" sizes="16x16">\n'
          b'<link rel="stylesheet" href="/static/host.css">\n'
          b'<script src="/static/diff.js" defer></script>\n'
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


@cache
def favicon_bytes() -> bytes:
    """A 16x16 icon (an ICO holding one PNG: a blue square with a light bar), drawn here so the
    package ships no binary file and no page logs a 404 for it."""
    size = 16
    rows = b"".join(b"\0" + b"".join(
        bytes((250, 250, 250, 255)) if 4 <= y <= 11 and 4 <= x <= 6 else bytes((43, 87, 151, 255))
        for x in range(size)) for y in range(size))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0))
           + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return struct.pack("<HHH", 0, 1, 1) + struct.pack("<BBBBHHII", size, size, 0, 0, 1, 32, len(png), 22) + png


def favicon(request: Request) -> Response:
    return Response(favicon_bytes(), media_type="image/x-icon",
                    headers={"Cache-Control": "public, max-age=86400"})
