"""The few server-drawn HTML pages (landing, join, resume link, sign-in): every value escaped.

No script and no inline style (the CSP forbids both): plain forms that work
in any browser. The lesson page itself is serve's static page.
"""

from __future__ import annotations

from attn_practice.grader.teaching.web.render import esc


def _page(title: str, body: str) -> str:
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{esc(title)}</title><link rel=\"stylesheet\" href=\"/static/style.css\">"
            "<link rel=\"stylesheet\" href=\"/static/host.css\"></head><body>"
            f"<main class=\"host-page\" id=\"main\">{body}</main></body></html>")


def landing() -> str:
    return _page("attn-practice class", (
        "<h1>attn-practice: a hosted class</h1>"
        "<p>To take part, open the <strong>join link</strong> your instructor gave you. "
        "Already joined? Open your <strong>personal resume link</strong> (the one you bookmarked).</p>"))


def join_form(code: str, csrf: str, ask_student_id: bool, error: str = "", here: str | None = None) -> str:
    sid = ('<p><label for="student_id">Student id</label><br>'
           '<input id="student_id" name="student_id" maxlength="64" required autocomplete="off"></p>'
           if ask_student_id else "")
    err = f'<p class="error" role="alert">{esc(error)}</p>' if error else ""
    if here is not None:  # joining switches this browser to a new learner: never without saying so
        err += (f'<p class="notice" id="signed-in-as">This browser is signed in as <strong>{esc(here)}'
                f'</strong>. Joining makes a new learner here; to go on with that work instead, '
                f'<a href="/">continue as {esc(here)}</a>.</p>')
    return _page("Join the class", (
        "<h1>Join the class</h1>"
        "<p>Build attention one step at a time: real Python, hidden tests, no setup.</p>"
        f"{err}<form method=\"post\" action=\"/join/{esc(code)}\">"
        f"<input type=\"hidden\" name=\"csrf\" value=\"{esc(csrf)}\">"
        "<p><label for=\"display_name\">Your name, as the instructor will see it</label><br>"
        "<input id=\"display_name\" name=\"display_name\" maxlength=\"80\" required autofocus></p>"
        f"{sid}<p><button type=\"submit\">Join</button></p></form>"))


def joining_closed() -> str:
    return _page("Joining is closed", "<h1>Joining is closed</h1><p>Ask your instructor to reopen "
                 "it. Already joined? Open your personal resume link.</p>")


def resume_link(name: str, link: str) -> str:
    return _page("Your personal link", (
        f"<h1>Welcome, {esc(name)}</h1>"
        "<p><strong>Bookmark this link now.</strong> It is your personal way back to your work, "
        "from this computer or any other; it is shown only this once, and anyone who has it can "
        "open your work, so keep it to yourself.</p>"
        f'<p class="resume-link"><a id="resume-link" href="{esc(link)}">{esc(link)}</a></p>'
        '<p><a class="button" id="start" href="/">Start the lesson</a></p>'))


def teach_sign_in(csrf: str, has_password: bool, error: str = "") -> str:
    err = f'<p class="error" role="alert">{esc(error)}</p>' if error else ""
    if not has_password:
        return _page("Instructor", "<h1>Instructor</h1><p>Open the instructor link that "
                     "<code>attn-practice host</code> printed (it ends in <code>?key=...</code>), "
                     "or set a password with <code>attn-practice host set-password</code>.</p>" + err)
    return _page("Instructor sign-in", (
        f"<h1>Instructor sign-in</h1>{err}<form method=\"post\" action=\"/teach/login\">"
        f"<input type=\"hidden\" name=\"csrf\" value=\"{esc(csrf)}\">"
        "<p><label for=\"password\">Class password</label><br>"
        "<input id=\"password\" name=\"password\" type=\"password\" maxlength=\"200\" required autofocus>"
        "</p><p><button type=\"submit\">Sign in</button></p></form>"))


def resume_confirm(there: str, here: str | None, secret: str, csrf: str) -> str:
    """Opening a resume link asks first: a link opened by another site's page, or sent by another
    learner, must never sign this browser in (or switch it) by itself."""
    if here is None:
        why = (f"<p>This opens the work of <strong>{esc(there)}</strong> in this browser. Only "
               "continue if that is you; on a shared computer, sign out when you leave.</p>")
        stay = '<a href="/">Cancel</a>'
    else:
        why = (f"<p>This browser is signed in as <strong>{esc(here)}</strong>. The link you opened "
               f"belongs to <strong>{esc(there)}</strong>. Only continue if that is you.</p>")
        stay = f'<a href="/">Stay {esc(here)}</a>'
    return _page(f"Continue as {there}?", (
        f"<h1>Continue as {esc(there)}?</h1>{why}"
        f'<form method="post" action="/resume/{esc(secret)}">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<p><button type="submit" id="continue">Continue as {esc(there)}</button> {stay}</p></form>'))


def student_id_taken(student_id: str) -> str:
    """What a learner reads when the id they gave is held by another learner (never who holds it)."""
    return (f"The student id “{student_id}” is already taken by someone in this class, so you were "
            "not signed up. If it is yours, tell your instructor: their page shows this clash and "
            "they can give the id to you; then join again. If you mistyped it, correct it below.")


def signed_out() -> str:
    return _page("Signed out", (
        "<h1>You are signed out</h1><p>This browser no longer opens your work. To continue, here "
        "or on another computer, open your <strong>personal resume link</strong> (the one you "
        "bookmarked when you joined). Lost it? Your instructor can give you a new one.</p>"))


def teach_confirm(csrf: str, key: str) -> str:
    """The instructor link opened from another site's page: signing in is a click, not a visit."""
    return _page("Instructor sign-in", (
        "<h1>Open the instructor page?</h1><p>This link signs this browser in as the class's "
        "instructor. It was opened from another site: continue only if you opened it yourself.</p>"
        '<form method="post" action="/teach/login">'
        f'<input type="hidden" name="csrf" value="{esc(csrf)}">'
        f'<input type="hidden" name="key" value="{esc(key)}">'
        '<p><button type="submit" id="continue">Open the instructor page</button></p></form>'))


def teach_signed_out() -> str:
    return _page("Signed out", "<h1>Signed out</h1><p>This browser no longer opens the instructor "
                 "page. Open the instructor link or sign in with the class password at "
                 '<a href="/teach">/teach</a> to come back.</p>')
