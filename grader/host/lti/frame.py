"""A launch inside the LMS's iframe: one click opens the class in a tab of its own.

A hosted class's pages refuse to be framed (`frame-ancestors 'none'`), and
inside a cross-site iframe the browser would not send the class's cookies
anyway (SameSite=Lax; third-party cookies are blocked by default). So when
the login arrives in an iframe (`Sec-Fetch-Dest: iframe`), the answer is a
small page, frameable by that platform only, with one button that posts the
same login to the class in a new tab: the whole launch then runs top-level,
first-party, exactly as a launch configured to open in a new window.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import HTMLResponse

from attn_practice.grader.host.lti.registry import Platform
from attn_practice.grader.teaching.web.render import esc

PASSED_ON = ("iss", "login_hint", "target_link_uri", "lti_message_hint", "client_id", "lti_deployment_id")


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def open_in_new_tab(platform: Platform, params: dict[str, str]) -> HTMLResponse:
    fields = "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(params[k])}">'
                     for k in PASSED_ON if params.get(k))
    ancestors = " ".join(sorted({_origin(platform.issuer), _origin(platform.auth_url)}))
    body = ("<!doctype html><meta charset=utf-8><title>attn-practice</title>"
            '<link rel="stylesheet" href="/static/style.css"><main class="host-page">'
            "<h1>attn-practice</h1><p>The practice opens in a tab of its own (your course page "
            "stays here).</p>"
            f'<form method="post" action="/lti/login" target="_blank">{fields}'
            '<button type="submit" id="lti-open">Open attn-practice in a new tab</button></form></main>')
    # form-action covers the login's redirect to the platform's auth URL too
    csp = (f"default-src 'self'; style-src 'self'; script-src 'none'; frame-ancestors {ancestors}; "
           f"form-action 'self' {_origin(platform.auth_url)}; base-uri 'none'")
    # frame-ancestors overrules the X-Frame-Options: DENY every page gets (CSP Level 2; Chromium,
    # Firefox, Safari): a browser without it keeps refusing the frame, the safe way round
    return HTMLResponse(body, headers={"Content-Security-Policy": csp})
