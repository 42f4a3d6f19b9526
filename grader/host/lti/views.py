"""The tool's LTI endpoints (CONTRACT §8): `/lti/jwks`, `/lti/login`, `/lti/launch`.

`/lti/login` and `/lti/launch` are reached by cross-site requests (the
platform's pages redirect or post to them), so they are deliberately not
behind §7's same-origin check: the login only redirects to a registered
platform, and a launch signs anyone in only with a token that platform
signed for this tool, a nonce this tool issued (used once) and a state this
browser holds. A refused launch gets a page that says what was wrong and no
session.
"""

from __future__ import annotations

import time
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from attn_practice.grader.host.auth import RateLimiter, hash_secret, new_secret
from attn_practice.grader.host.lesson import EventKind
from attn_practice.grader.host.lti import ags, frame, registry, state
from attn_practice.grader.host.lti.platform_keys import KeyCache
from attn_practice.grader.host.lti.signin import (
    give_student_id,
    sign_in_instructor,
    sign_in_learner,
)
from attn_practice.grader.host.lti.validate import Launch, Refused, verify
from attn_practice.grader.host.session import ctx_of
from attn_practice.grader.host.web import client_address, read_form
from attn_practice.grader.teaching.web.render import esc

NONCE_SECONDS = 600
MAX_LAUNCH_BODY = 96 * 1024
PLATFORM_KEYS = KeyCache()
#: logins store a nonce each: bounded per address (a class behind one NAT still gets in)
LOGINS = RateLimiter(burst=300, per_second=5.0)

NONCE_WHY = {
    "unknown": "the launch's nonce was not issued by this tool (or has been cleared): launch again "
               "from the course page.",
    "used": "this launch was already used once (a replayed nonce): launch again from the course page.",
    "expired": "the login took too long (its nonce expired): launch again from the course page.",
    "state": "the launch's nonce belongs to another login than its state: launch again from the "
             "course page.",
}


def _page(title: str, body: str, status: int = 200, refresh: str = "") -> HTMLResponse:
    meta = f'<meta http-equiv="refresh" content="0;url={esc(refresh)}">' if refresh else ""
    return HTMLResponse(f"<!doctype html><meta charset=utf-8>{meta}<title>attn-practice: {esc(title)}</title>"
                        f'<link rel="stylesheet" href="/static/style.css"><main class="host-page">'
                        f"<h1>{esc(title)}</h1>{body}</main>", status_code=status)


def refused(message: str, status: int = 403) -> HTMLResponse:
    return _page("Launch refused", f'<p id="lti-refused">The launch from your course was refused: '
                 f"{esc(message)}</p><p>Nothing was signed in. If this keeps happening, show this page "
                 "to your instructor.</p>", status)


def base_url(request: Request) -> str:
    """The class's public URL as the LMS knows it (`host lti config --url`), else as asked."""
    configured = ctx_of(request).store.get_setting(registry.BASE_URL)
    return (configured or f"{request.url.scheme}://{request.headers.get('host', request.url.netloc)}").rstrip("/")


def jwks(request: Request) -> Response:
    return JSONResponse(registry.public_jwks(ctx_of(request).store),
                        headers={"Cache-Control": "public, max-age=300"})


async def login(request: Request) -> Response:
    """OIDC third-party-initiated login: to the platform's auth URL with a fresh state and nonce."""
    if request.method == "POST":
        params = await read_form(request)
    else:
        params = {k: v for k, v in request.query_params.items()}
    return await run_in_threadpool(_login, request, params)


def _login(request: Request, params: dict[str, str]) -> Response:
    store = ctx_of(request).store
    iss, hint = params.get("iss", ""), params.get("login_hint", "")
    if not iss or not hint or not params.get("target_link_uri"):
        return refused("the login request lacks iss, login_hint or target_link_uri (start the launch "
                       "from the course page).", 400)
    found = registry.find(store, iss, params.get("client_id") or None)
    if not found:
        return refused(f"the platform {iss[:200]!r} is not registered with this class.", 400)
    if len(found) > 1:
        return refused("several registrations of this platform: its login must name its client_id.", 400)
    platform = found[0]
    if request.headers.get("sec-fetch-dest") == "iframe":
        return frame.open_in_new_tab(platform, params)
    wait = LOGINS.allow(client_address(request))
    if wait:
        return refused(f"too many logins from your address; try again in {wait:.0f} s.", 429)
    the_state, nonce = new_secret(), new_secret()
    store.add_lti_nonce(nonce, hash_secret(the_state), time.time() + NONCE_SECONDS)
    query = {"scope": "openid", "response_type": "id_token", "response_mode": "form_post",
             "prompt": "none", "client_id": platform.client_id,
             "redirect_uri": base_url(request) + "/lti/launch", "login_hint": hint,
             "state": the_state, "nonce": nonce}
    if params.get("lti_message_hint"):
        query["lti_message_hint"] = params["lti_message_hint"]
    sep = "&" if "?" in platform.auth_url else "?"
    response = RedirectResponse(platform.auth_url + sep + urlencode(query), status_code=302)
    state.remember(request, response, the_state)
    return response


async def launch(request: Request) -> Response:
    form = await read_form(request, MAX_LAUNCH_BODY)
    return await run_in_threadpool(_launch, request, form)


def _launch(request: Request, form: dict[str, str]) -> Response:
    ctx = ctx_of(request)
    token, the_state = form.get("id_token", ""), form.get("state", "")
    try:
        if form.get("error"):  # an OIDC error answer (e.g. login_required: not signed in to the LMS)
            raise Refused(f"the platform answered the login with an error: {form['error'][:100]}"
                          + (f" ({form['error_description'][:300]})" if form.get("error_description") else ""))
        if not token:
            raise Refused("the platform posted no id_token.")
        launched = verify(token, registry.platforms(ctx.store), PLATFORM_KEYS)
        if not state.matches(request, the_state):
            if ctx.store.lti_nonce_used(launched.nonce):
                raise Refused(NONCE_WHY["used"])
            raise Refused("the launch's state does not belong to this browser (the login started in "
                          "another browser, or its cookie was blocked or expired): launch again from "
                          "the course page, in this browser.")
        why = ctx.store.use_lti_nonce(launched.nonce, hash_secret(the_state))
        if why:
            raise Refused(NONCE_WHY[why])
    except Refused as exc:
        response = refused(str(exc))
        state.forget(request, response, the_state)
        return response
    response = _signed_in(request, launched)
    state.forget(request, response, the_state)
    return response


def _signed_in(request: Request, launched: Launch) -> Response:
    ctx = ctx_of(request)
    store, p = ctx.store, launched.platform
    if launched.context_id:
        store.save_lti_context(p.issuer, p.client_id, launched.context_id, launched.context_title,
                               launched.nrps_url if launched.nrps_url and registry.url_ok(launched.nrps_url)
                               else "")
    if launched.instructor:
        response = _page("Signed in", '<p>Signed in as the instructor. <a href="/teach">Open the '
                         "instructor page</a>.</p>", refresh="/teach")
        sign_in_instructor(request, response)
        return response
    learner, new = store.lti_learner_or_create(p.issuer, launched.sub, launched.name, "",
                                               hash_secret(new_secret()))
    if new:
        store.record_event(learner.id, EventKind.JOINED.value, {})
    if launched.student_id and not learner.student_id:
        give_student_id(store, learner, launched.student_id)
    ags.remember_link(store, learner.id, launched)
    ags.sync_learner(store, ctx.course, learner.id)
    response = _page("Signed in", f"<p>Signed in as {esc(learner.display_name)}. <a href=\"/\">Open "
                     "your lesson</a>.</p>", refresh="/")
    sign_in_learner(request, response, learner)
    return response
