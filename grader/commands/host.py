"""`attn-practice host`: serve one class to many browsers (CONTRACT §7); export, backup, password.

`attn-practice host [DATA_DIR] [options]` serves; `host export`, `host backup`
and `host set-password` work on a class's data folder (while it runs, too).
The engine is `grader.host`; this module parses, calls it and prints.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from attn_practice.grader.commands.common import EXIT_PASSED, Problem, say
from attn_practice.grader.commands.host_class import open_class, unavailable, where_class
from attn_practice.grader.host import class_home

POSTGRES = ("postgresql://", "postgres://")

HOST_HELP = "Needs the host extra: pip install '.[host]' in the attn-practice checkout."


class HostGroup(click.Group):
    """`host [DATA_DIR] [options]` serves; a first word naming a subcommand runs that instead."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["serve", *args]
        elif not args:
            args = ["serve"]
        return super().parse_args(ctx, args)


@click.group(cls=HostGroup, context_settings={"help_option_names": ["-h", "--help"]})
def host() -> None:
    """Host a class: learners join with a link and work in their browsers, nothing to install.

    \b
      attn-practice host [DATA_DIR] [--course FILE] [--bind ADDR] [--port N] [--db URL] [--dask ADDRESS]
                         [--log FILE]
      attn-practice host export DATA_DIR --format json|csv
      attn-practice host backup DATA_DIR OUT
      attn-practice host set-password DATA_DIR
      attn-practice host rotate-key DATA_DIR

    DATA_DIR (default ./attn-class) keeps the class: learners, every saved
    version, every check. The first lines printed are the class's address,
    the instructor link (keep it private) and the join link for learners;
    then only warnings and a summary line a minute (--log FILE keeps a line
    per request and check). A class kept in PostgreSQL (--db) is noted in
    DATA_DIR without its password, so export, backup and set-password on
    DATA_DIR find it. Serving's options: `attn-practice host serve --help`.
    Guide: docs/hosting.md.

    \b
    Examples:
      attn-practice host ./my-class --course my-course/course.yaml   # course init my-course/ makes one
      attn-practice host export ./my-class --format json --out class.json
      attn-practice report class.json        # class.html: every mistake met in the session, too
    """


@host.command("serve")
@click.argument("data_dir", required=False, type=click.Path(path_type=Path))
@click.option("--course", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Course file: steps, points and limits (as for grade).")
@click.option("--bind", default="127.0.0.1", show_default=True,
              help="Address to listen on; anything but loopback belongs behind a TLS reverse proxy.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port (default 8770; 0: any free port).")
@click.option("--db", default=None, metavar="URL",
              help="postgresql://... for several server processes (default: SQLite in DATA_DIR).")
@click.option("--dask", "dask_address", default=None, metavar="ADDRESS",
              help="Run checks on this Dask scheduler's workers instead of this machine.")
@click.option("--jobs", type=click.IntRange(1, 256), default=None,
              help="Checks run at once on this machine (default: one more than the cores).")
@click.option("--ask-student-id/--no-student-id", default=None,
              help="Ask for a student id on joining (kept for the class once set).")
@click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--tls-key", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None)
@click.option("--forwarded-allow-ips", default=None, metavar="ADDRS",
              help="Reverse proxies (addresses or networks, comma-separated) whose X-Forwarded-For "
                   "is believed; default: none (docs/hosting-security.md).")
@click.option("--log", "log_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              metavar="FILE", help="Append one logfmt line per request and per check here (the "
              "terminal shows only warnings and a summary a minute).")
def serve(data_dir: Path | None, course: Path | None, bind: str, port: int | None, db: str | None,
          dask_address: str | None, jobs: int | None, ask_student_id: bool | None,
          tls_cert: Path | None, tls_key: Path | None, forwarded_allow_ips: str | None,
          log_file: Path | None) -> int:
    """Serve the class (the default when no subcommand is named)."""
    _need_extra()
    from attn_practice.grader.host.server import (
        DEFAULT_DIR,
        DEFAULT_PORT,
        HostConfig,
        HostedClass,
    )

    if (tls_cert is None) != (tls_key is None):
        raise Problem("--tls-cert and --tls-key go together.")
    if log_file is not None:
        _writable_log(log_file)
    folder = data_dir or Path(DEFAULT_DIR)
    place = class_home.where(folder, db, must_exist=False)
    config = HostConfig(data_dir=folder, course=course, bind=bind,
                        port=DEFAULT_PORT if port is None else port, db=place.url, dask=dask_address,
                        jobs=jobs, ask_student_id=ask_student_id, tls_cert=tls_cert, tls_key=tls_key,
                        forwarded_allow_ips=_proxies(forwarded_allow_ips), log_file=log_file)
    try:
        hosted = HostedClass(config)
    except unavailable(dask_address) as exc:  # the database or the Dask cluster: say which, plainly
        raise Problem(str(exc) + class_home.unreachable_hint(place)) from None
    except OSError as exc:
        raise Problem(f"cannot host on {bind}:{config.port}: {exc.strerror or exc}. Pick another "
                      "port with --port N (0: any free one).") from None
    class_home.record(config.data_dir, db)  # export, backup, a restart: the same database
    try:
        _announce(hosted, config)
        hosted.serve()
    except KeyboardInterrupt:
        pass  # Ctrl-C before the server took its signals over: a stop like any other
    finally:
        hosted.close()
    say("Stopped hosting. Every saved version is kept in the class's data folder.")
    return EXIT_PASSED


def _proxies(text: str | None) -> str | None:
    """--forwarded-allow-ips checked: addresses or networks, or '*' (any peer: only behind a proxy)."""
    if text is None:
        return None
    import ipaddress

    items = [t.strip() for t in text.split(",") if t.strip()]
    for item in items:
        if item == "*":
            continue
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise Problem(f"--forwarded-allow-ips: {item[:60]!r} is not an address or network "
                          "(e.g. 127.0.0.1 or 10.0.0.0/8).") from None
    return ",".join(items) or None


def _announce(hosted: Any, config: Any) -> None:
    """CONTRACT §7's three first lines, then the warnings and where the class is kept."""
    from attn_practice.grader.host.server import is_loopback

    links = hosted.links()
    click.echo(f"Hosting attn-practice class at {links.base}")
    click.echo(f"Instructor: {links.instructor}")
    click.echo(f"Join: {links.join}")
    sys.stdout.flush()
    if not is_loopback(config.bind) and config.tls_cert is None:
        say(f"warning: serving plain HTTP on {config.bind}: secrets and code cross the network unencrypted. "
            "Put it behind a TLS reverse proxy (docs/hosting.md) or pass --tls-cert/--tls-key.")
    where = f"PostgreSQL at {class_home.without_password(config.db)}, noted in " if config.db else ""
    say(f"Class data: {where}{config.data_dir.resolve()}   (Ctrl-C stops; nothing saved is lost)")
    say("From now on: warnings, and one summary line a minute while learners work"
        + (f"; every request and check in {config.log_file}." if config.log_file else
           " (--log FILE keeps a line per request and check)."))


@host.command("export")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write here instead of stdout.")
@click.option("--course", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="Score with this course (default: the one the class was hosted with).")
@click.option("--db", default=None, metavar="URL")
def export_cmd(data_dir: Path, fmt: str, out: Path | None, course: Path | None, db: str | None) -> int:
    """The class's latest reports as `grade --format json` (for `report`), or the grades as CSV."""
    from attn_practice.grader.course import load_course
    from attn_practice.grader.host import export

    try:
        given = load_course(course, check_suites=False) if course else None
    except unavailable(None) as exc:  # a course file it cannot use
        raise Problem(str(exc)) from None
    store = open_class(data_dir, db)
    try:
        path = None if given else _stored_course(store)
        text = export.export_text(store, given or (load_course(path, check_suites=False) if path else None),
                                  export.ExportFormat(fmt))
    except unavailable(None) as exc:  # a course file it cannot use, the database away
        raise Problem(str(exc)) from None
    finally:
        store.close()
    if out is None:
        click.echo(text, nl=False)
    else:
        from attn_practice.grader.atomic import write_atomic

        write_atomic(out, text.encode("utf-8"))
        say(f"Wrote {out}")
    return EXIT_PASSED


@host.command("backup")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--db", default=None, metavar="URL")
def backup_cmd(data_dir: Path, out: Path, db: str | None) -> int:
    """A consistent copy of the class's database, safe while the class runs."""
    from attn_practice.grader.host import export

    place = where_class(data_dir, db)
    if place.url and place.url.startswith(POSTGRES):
        url = class_home.without_password(place.url)
        raise Problem(f"the class in {data_dir} lives in PostgreSQL ({url}): back it up with "
                      f"pg_dump --format=custom --file {out} '{url}' (host backup copies a class "
                      "kept in SQLite).")
    store = open_class(data_dir, db)
    try:
        export.backup(store, out)
    except (FileExistsError, ValueError) as exc:
        raise Problem(str(exc)) from None
    finally:
        store.close()
    say(f"Backed up the class to {out}")
    return EXIT_PASSED


@host.command("set-password")
@click.argument("data_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--db", default=None, metavar="URL")
def set_password_cmd(data_dir: Path, db: str | None) -> int:
    """Set the instructor's password (an alternative to the instructor link's key)."""
    from attn_practice.grader.host.auth import MIN_PASSWORD
    from attn_practice.grader.host.server import set_password

    password = click.prompt("Instructor password", hide_input=True, confirmation_prompt=True,
                            err=True)
    if len(password) < MIN_PASSWORD:
        raise Problem(f"the password needs at least {MIN_PASSWORD} characters.")
    place = class_home.where(data_dir, db, must_exist=False)
    try:
        set_password(data_dir, place.url, password)
    except unavailable(None) as exc:
        raise Problem(str(exc) + class_home.unreachable_hint(place)) from None
    class_home.record(data_dir, db)
    where = f" (the class in PostgreSQL at {class_home.without_password(place.url)})" if place.url else ""
    say(f"Password set{where}: sign in at /teach.")
    return EXIT_PASSED


def _writable_log(path: Path) -> None:
    """Refuse an unusable --log FILE before anything is printed (not after the links)."""
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise Problem(f"--log {path}: cannot write there ({exc.strerror or exc}).") from None


def _stored_course(store: Any) -> Path | None:
    stored = store.get_setting("course_path")
    return Path(stored) if stored and Path(stored).exists() else None


def _need_extra() -> None:
    import importlib.util

    missing = [m for m in ("starlette", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise Problem(f"{' and '.join(missing)} missing. {HOST_HELP}")


# `host rotate-key` lives in its own module (sessions and keys); registered here.
from attn_practice.grader.commands.host_keys import rotate_key_cmd  # noqa: E402

host.add_command(rotate_key_cmd)

# `host lti ...` (LTI 1.3, CONTRACT §8) lives in its own module; registered here.
from attn_practice.grader.commands.lti import lti as lti_group  # noqa: E402

host.add_command(lti_group)
