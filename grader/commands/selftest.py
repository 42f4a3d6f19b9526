"""The `selftest` command: parse, run `selftest.run_selftest`, render the table.

Follows `common`'s convention: a course or step problem is a `Problem` (exit
2, no traceback); results go to `console()`; exit 1 when anything falls short.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from attn_practice.grader.commands.common import (
    EXIT_FAILED,
    EXIT_PASSED,
    Problem,
    console,
    exit_with,
)

if TYPE_CHECKING:
    from rich.text import Text

    from attn_practice.grader.staff.selftest import CaseResult


@click.command("selftest")
@click.option("--course", type=click.Path(path_type=Path, exists=True, dir_okay=False),
              help="Also run this course's private suites against the reference and the catalogue.")
@click.option("--step", "steps", multiple=True, help="Only these steps (repeatable).")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), help="Parallel workers (default: CPUs).")
@click.option("-v", "--verbose", is_flag=True, help="List every case, not only the problems.")
def selftest(course: Path | None, steps: tuple[str, ...], jobs: int | None, verbose: bool) -> None:
    """Check that the hidden suites catch every known mistake and accept every correct variant.

    For course staff (and our CI). With --course, the course's private tests
    must pass on the reference and on every correct variant; the table says
    which catalogued mistakes they catch. Exits 1 if anything falls short.

    \b
    Examples:
      attn-practice selftest
      attn-practice selftest --course course.yaml --step step3
    """
    from rich.table import Table
    from rich.text import Text

    from attn_practice.grader.catalog import UnknownStep, resolve_step
    from attn_practice.grader.course import CourseError, load_course
    from attn_practice.grader.staff.selftest import CaseKind, run_selftest, selftest_ok

    try:
        course_obj = load_course(course) if course else None
        exercises = [resolve_step(s) for s in steps] or None
    except (CourseError, UnknownStep) as exc:
        raise Problem(str(exc)) from None
    from attn_practice.grader.staff.cache import isolate_hypothesis
    from attn_practice.grader.staff.private_dir import PrivateDirError

    try:
        isolate_hypothesis()  # Hypothesis's files under the cache folder, never in the cwd
    except PrivateDirError as exc:
        raise Problem(str(exc)) from None
    summaries = run_selftest(exercises, course_obj, jobs)
    out = console()
    private = any(s.private for s in summaries)
    table = Table(title="attn-practice selftest", title_justify="left")
    columns = ["step", "reference", "mistakes caught", "diagnosed right", "pairs: both named",
               "correct variants accepted"]
    if private:
        columns.append("caught by private tests")
    for col in columns:
        table.add_column(col, justify="right" if col != "step" else "left")
    for s in summaries:
        ref = s.of(CaseKind.REFERENCE)
        mistakes = s.of(CaseKind.MISTAKE)
        variants = s.of(CaseKind.VARIANT)
        ref_ok = all(r.ok for r in ref) and not s.private_missing
        row = [
            Text(s.step),
            _mark(ref_ok, "passes" if ref_ok else "FAILS"),
            _ratio(sum(r.caught for r in mistakes), len(mistakes)),
            _ratio(sum(r.diagnosed for r in mistakes), len(mistakes)),
            _ratio(sum(r.ok for r in s.of(CaseKind.PAIR)), len(s.of(CaseKind.PAIR))),
            _ratio(sum(r.ok for r in variants), len(variants)),
        ]
        if private:
            row.append(Text(f"{sum(r.caught_by_private for r in mistakes)}/{len(mistakes)}"
                            if s.private else "-"))
        table.add_row(*row)
    out.print(table)
    for s in summaries:
        for name in s.private_missing:
            out.print(Text(f"  BAD {s.step} private test {name!r} did not run on the reference"))
        for r in s.results:
            if verbose or not r.ok:
                want = (f" (want diagnosis {r.case.expected_id})" if r.case.kind is CaseKind.MISTAKE else
                        f" (want diagnoses {', '.join(r.case.expected_ids)})" if r.case.kind is CaseKind.PAIR
                        else "")
                priv = (f"; private tests failing: {', '.join(r.private_failed)}"
                        if r.private_failed else "")
                out.print(Text(f"  {'ok ' if r.ok else 'BAD'} {s.step} {r.case.kind} {r.case.name}: "
                               f"{r.status}, diagnoses {r.diagnoses or '[]'}{want}{priv}"))
                if not r.ok:
                    out.print(Text(_why(r)))
        if private and s.private and verbose:
            caught = [r.case.name for r in s.of(CaseKind.MISTAKE) if r.caught_by_private]
            out.print(Text(f"  {s.step}: the private tests catch {len(caught)} catalogued "
                           f"mistake{'s' if len(caught) != 1 else ''}: {', '.join(caught) or 'none'}"))
    ok = selftest_ok(summaries)
    out.print(Text("selftest passed", style="bold green") if ok
              else Text("selftest found problems", style="bold red"))
    exit_with(EXIT_PASSED if ok else EXIT_FAILED)


#: Failing tests shown under a BAD case; the rest are counted.
MAX_SHOWN = 3


def _why(r: CaseResult) -> str:
    """Under a BAD case: what failed, on which input, and the call that reproduces it.

    A correct variant that fails is a grader bug to fix before students meet
    it, so its failures come with their details (the worst element and the
    tolerance); a mistake's show only what caught it.
    """
    from attn_practice.grader.staff.selftest import CaseKind

    must_pass = r.case.kind in (CaseKind.REFERENCE, CaseKind.VARIANT)
    lines = [f"      step error: {r.error}"] if r.error else []
    for t in r.not_passed[:MAX_SHOWN]:
        f = t.failure
        lines.append(f"      {t.status} {t.name}: {f.summary if f else t.message}")
        if f is not None and must_pass:
            lines += [f"        {line}" for line in f.details.splitlines()[:12]]
        if f is not None and f.repro:
            lines.append(f"        repro: {f.repro}")
    if len(r.not_passed) > MAX_SHOWN:
        lines.append(f"      ... and {len(r.not_passed) - MAX_SHOWN} more")
    return "\n".join(lines)


def _ratio(n: int, total: int) -> Text:
    from rich.text import Text

    return Text(f"{n}/{total}", style="green" if n == total else "red")


def _mark(ok: bool, text: str) -> Text:
    from rich.text import Text

    return Text(text, style="green" if ok else "red")
