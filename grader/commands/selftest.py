"""The `selftest` command: parse, run `selftest.run_selftest`, render the table."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("selftest")
@click.option("--course", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="Also run this course's extra suites against the catalogue.")
@click.option("--step", "steps", multiple=True, help="Only these steps (repeatable).")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), help="Parallel workers (default: CPUs).")
@click.option("-v", "--verbose", is_flag=True, help="List every case, not only the problems.")
def selftest(course: Path | None, steps: tuple[str, ...], jobs: int | None, verbose: bool) -> None:
    """Check that the hidden suites catch every known mistake and accept every correct variant.

    For course staff (and our CI). Exits 1 if anything falls short.

    \b
    Examples:
      attn-practice selftest
      attn-practice selftest --course course.yaml --step step3
    """
    from rich.console import Console
    from rich.table import Table

    from attn_practice.grader.catalog import UnknownStep, resolve_step
    from attn_practice.grader.course import CourseError, load_course
    from attn_practice.grader.staff.selftest import run_selftest, selftest_ok

    try:
        course_obj = load_course(course) if course else None
        exercises = [resolve_step(s) for s in steps] or None
    except (CourseError, UnknownStep) as exc:
        raise click.UsageError(str(exc)) from None
    summaries = run_selftest(exercises, course_obj, jobs)
    console = Console(highlight=False)
    table = Table(title="attn-practice selftest", title_justify="left")
    for col in ("step", "reference", "mistakes caught", "diagnosed right", "pairs: both named",
                "correct variants accepted"):
        table.add_column(col, justify="right" if col != "step" else "left")
    for s in summaries:
        ref = s.of("reference")
        mistakes = s.of("mistake")
        variants = s.of("variant")
        table.add_row(
            s.step,
            _mark(all(r.ok for r in ref), "passes" if all(r.ok for r in ref) else "FAILS"),
            _ratio(sum(r.caught for r in mistakes), len(mistakes)),
            _ratio(sum(r.diagnosed for r in mistakes), len(mistakes)),
            _ratio(sum(r.ok for r in s.of("pair")), len(s.of("pair"))),
            _ratio(sum(r.ok for r in variants), len(variants)),
        )
    console.print(table)
    for s in summaries:
        for r in s.results:
            if verbose or not r.ok:
                want = (f" (want diagnosis {r.case.expected_id})" if r.case.kind == "mistake" else
                        f" (want diagnoses {', '.join(r.case.expected_ids)})" if r.case.kind == "pair"
                        else "")
                console.print(f"  {'ok ' if r.ok else 'BAD'} {s.step} {r.case.kind} {r.case.name}: "
                              f"{r.status}, diagnoses {r.diagnoses or '[]'}{want}")
    ok = selftest_ok(summaries)
    console.print("[bold green]selftest passed[/]" if ok else "[bold red]selftest found problems[/]")
    click.get_current_context().exit(0 if ok else 1)


def _ratio(n: int, total: int) -> str:
    style = "green" if n == total else "red"
    return f"[{style}]{n}/{total}[/]"


def _mark(ok: bool, text: str) -> str:
    return f"[{'green' if ok else 'red'}]{text}[/]"
