"""`attn-practice serve`: the lesson, the editor and the checks in a browser page.

Creates the workspace as `start` does when it is missing, serves it on
127.0.0.1 (CONTRACT §5) and prints the URL, with its token, as the first line
on stdout. Ctrl-C (or SIGTERM) stops it cleanly: open pages are told, the
sandboxes are closed.
"""

from __future__ import annotations

import errno
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

import click

from attn_practice.grader.commands.common import EXIT_PASSED, Problem, say, warn

OPEN_FILE_SECONDS = 60.0  # how long the browser has to read the file that opens the page

if TYPE_CHECKING:
    from attn_practice.grader.teaching.web.server import LessonServer
    from attn_practice.grader.teaching.workspace import Workspace


@click.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path))
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port on 127.0.0.1 (default 8765, or a free one when that is taken; 0: any free port).")
@click.option("--no-open", is_flag=True, help="Do not open a browser; just print the address.")
@click.option("--rotate-token", is_flag=True,
              help="Make a new token for this workspace: pages opened with the old link stop working.")
def serve(directory: Path | None, port: int | None, no_open: bool, rotate_token: bool) -> int:
    """Open the lesson in your browser: read, edit, check and explore, one page per step.

    Serves the workspace DIRECTORY (default: the one you are in, else
    ./attention-practice, created as `start` does). The page edits the same
    files as your own editor and the same progress as `check`. The link's
    token and the port are kept in the workspace, so a page left open
    reconnects by itself when you run serve again.

    \b
    Examples:
      attn-practice serve
      attn-practice serve ~/attention --port 9000 --no-open
    """
    from attn_practice.grader.sandbox.prestart import prestart

    prestart()  # the sandbox's zygote starts while the rest is imported
    _quiet_hypothesis()
    from attn_practice.grader.teaching.web.keep import remember_port, serve_identity
    from attn_practice.grader.teaching.web.server import DEFAULT_PORT, LessonServer
    from attn_practice.grader.teaching.workspace import (
        DEFAULT_DIR,
        NotInWorkspace,
        create_workspace,
        find_workspace,
    )

    ws: Workspace | None = None
    if directory is None:
        try:
            ws = find_workspace()
        except NotInWorkspace:
            directory = Path(DEFAULT_DIR)
    if ws is None:
        assert directory is not None
        try:
            result = create_workspace(directory)
        except (FileExistsError, NotADirectoryError, PermissionError) as exc:
            raise Problem(f"cannot create a workspace at {directory}: {exc}") from None
        warn(result.warnings)
        if result.created and not result.existed:
            say(f"Created your workspace in {result.workspace.root}")
        ws = result.workspace
    token, last_port = serve_identity(ws, rotate=rotate_token)
    if port is not None:
        tries = [port]
    else:  # the port this workspace had (an open tab keeps its address), the usual one, any
        tries = list(dict.fromkeys(p for p in (last_port, DEFAULT_PORT, 0) if p is not None))
    server = None
    for i, p in enumerate(tries):
        try:
            server = LessonServer(ws, p, token=token)
            break
        except OSError as exc:
            if port is not None or exc.errno != errno.EADDRINUSE or i == len(tries) - 1:
                raise Problem(f"cannot serve on 127.0.0.1:{p}: {exc.strerror or exc}. "
                              "Pick another port with --port N, or --port 0 for any free one.") from None
    assert server is not None
    if port != 0:
        remember_port(ws, token, server.port)
    def on_term(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    opener: Path | None = None
    old = signal.signal(signal.SIGTERM, on_term)
    try:  # from here on, Ctrl-C at any moment stops cleanly
        click.echo(f"Serving attn-practice at {server.url}")
        sys.stdout.flush()
        say(f"Workspace: {ws.root}   (Ctrl-C stops the server; your files stay as they are)")
        server.start_background()
        _warm(server)
        if not no_open:
            if _has_display():
                opener = _opening_file(server.url, ws)
                threading.Thread(target=_open_browser, args=(opener,), daemon=True).start()
            else:
                say("No graphical display here: open the link above in your browser.")
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, old)
        server.stop()
        if opener is not None:
            _remove(opener)
    say("Stopped serving. Your files and progress are saved.")
    return EXIT_PASSED


def _has_display() -> bool:
    """Never let webbrowser fall back to a text browser in this terminal."""
    return not sys.platform.startswith("linux") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _opening_file(url: str, ws: Workspace) -> Path | None:
    """A private file (0600) that sends the browser on to `url`; None when it cannot be written.

    The browser is given this file, never the URL: a command line is readable
    by every user of the machine (/proc/PID/cmdline), and the URL holds the token.
    """
    import html

    from attn_practice.grader.atomic import write_atomic
    from attn_practice.grader.teaching.web.keep import keep_dir

    try:
        page = keep_dir(ws) / f"open-{os.getpid()}.html"
        quoted = html.escape(url, quote=True)
        write_atomic(page, f'<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
                           f'<meta http-equiv="refresh" content="0;url={quoted}"><title>attn-practice</title>'
                           f'<p>Opening <a href="{quoted}">the lesson</a>…</p>', mode=0o600)
    except OSError:
        return None
    return page


def _open_browser(page: Path | None) -> None:
    """Open the page in the learner's browser; say so when none can be opened.

    The file is deleted once the browser has had time to read it (or when serve stops).
    """
    import time
    import webbrowser

    try:
        opened = page is not None and webbrowser.open(page.as_uri())
    except Exception:  # noqa: BLE001 - not opening a browser is not an error: the link is printed
        opened = False
    if not opened:
        say("Could not open a browser: open the link above yourself.")
    if page is not None:
        time.sleep(OPEN_FILE_SECONDS)
        _remove(page)


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _quiet_hypothesis() -> None:
    """Hypothesis's deprecation notes are for the grader's developers, not the learner's terminal."""
    import warnings

    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
        if category.__name__ == "HypothesisDeprecationWarning" or "hypothesis" in category.__module__:
            return
        shown(message, category, *args, **kwargs)  # type: ignore[arg-type]

    warnings.showwarning = show
    warnings.filterwarnings("ignore", module=r"hypothesis(\.|$)")


def _warm(server: LessonServer) -> None:
    """Start the engine in the background so the page's first Check is as quick as the next."""
    threading.Thread(target=server.bridge.warm, name="attnp-warm", daemon=True).start()
